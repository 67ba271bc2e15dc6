package org.ptorun;

/** The one mapping from a native status code to the exception class a caller sees. */
final class NativeErrors {

    private NativeErrors() {
    }

    /**
     * The exception for a failed native call.
     *
     * @param operation what was attempted, e.g. "launch"
     * @param code the negative native code
     * @param nativeMessage {@code simpler_last_error()} read right after the call
     * @param run the run concerned, or null
     */
    static PtoRunException fromNative(String operation, int code, String nativeMessage, NativeRun run) {
        String description = operation + " failed: " + PtoError.nameOf(code) + " (" + code + ")"
                + (nativeMessage == null || nativeMessage.isEmpty() ? "" : ": " + nativeMessage);
        PtoError error = PtoError.lookup(code).orElse(PtoError.FAILED);
        switch (error) {
            case WRONG_PHASE:
            case BAD_STORAGE:
                return new StaleRunException(description, code, nativeMessage, run);
            case BUSY:
                return new ChipBusyException(description, code, nativeMessage, run);
            case OUT_OF_MEMORY:
                return new DeviceOutOfMemoryException(description, code, nativeMessage, run);
            case KERNEL_FAULT:
                return new KernelFaultException(description, code, nativeMessage, run);
            case TIMEOUT:
                return new RunTimeoutException(description, code, nativeMessage, run);
            case POISONED:
                return new ChipPoisonedException(description, code, nativeMessage, run);
            case BAD_CALLABLE:
                return new BadCallableException(description, code, nativeMessage, run);
            default:
                return new PtoRunException(description, code, nativeMessage, run);
        }
    }
}

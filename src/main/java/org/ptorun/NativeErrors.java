package org.ptorun;

import java.util.List;
import java.util.Set;

/**
 * The one mapping from a native status code to the exception class a caller sees, and
 * the one format of its message (docs/java.md, Errors):
 * {@code <what> failed: <CODE_NAME> (<code>): <native message> <run identity>}.
 */
final class NativeErrors {

    /** Codes that are the run's own outcome on the device, not a refusal of the call. */
    private static final Set<PtoError> RUN_OUTCOMES =
            Set.of(PtoError.KERNEL_FAULT, PtoError.TIMEOUT, PtoError.ORCHESTRATION, PtoError.RANKS_DISAGREE);

    /** The calls that report an accepted run's outcome without having failed themselves. */
    private static final Set<String> REPORTING_PHASES = Set.of("launch", "poll", "await", "finalize");

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
        return fromNative(operation, code, nativeMessage, run, List.of());
    }

    /**
     * The same, for a chip whose process may be gone: a {@link ChipCrashedException} then
     * quotes {@code lastNativeLogLines}, the chip's last native log lines.
     */
    static PtoRunException fromNative(String operation, int code, String nativeMessage, NativeRun run,
                                      List<String> lastNativeLogLines) {
        PtoError error = PtoError.lookup(code).orElse(PtoError.FAILED);
        String what = nativeMessage == null ? "" : nativeMessage;
        if (run != null) {
            // the identity is appended once, by PtoRunException
            what = withoutNativeLead(what, run);
        }
        // a fault after the run was accepted is the run's, whichever call reported it
        String subject = RUN_OUTCOMES.contains(error) && REPORTING_PHASES.contains(operation)
                ? "run failed (reported by " + operation + ")"
                : operation + " failed";
        String description = subject + ": " + PtoError.nameOf(code) + " (" + code + ")"
                + (what.isEmpty() ? "" : ": " + what);
        if (error == PtoError.CHIP_CRASHED) {
            return new ChipCrashedException(description, code, nativeMessage, run, lastNativeLogLines);
        }
        return exception(error, description, code, nativeMessage, run);
    }

    /**
     * The library leads a run's message with {@code "<C function> <identity>: "}, the
     * identity formatted from the same definition as {@link NativeRun#identity()}: that
     * exact lead is dropped. A message whose lead names the run otherwise is left whole, so
     * a disagreement shows instead of being hidden.
     */
    static String withoutNativeLead(String message, NativeRun run) {
        String tail = " " + run.identity() + ": ";
        int at = message.indexOf(tail);
        return at > 0 && message.indexOf(' ') == at ? message.substring(at + tail.length()) : message;
    }

    private static PtoRunException exception(PtoError error, String description, int code, String nativeMessage,
                                              NativeRun run) {
        return switch (error) {
            case UNSUPPORTED -> new UnsupportedVariantException(description, code, nativeMessage, run);
            case INVALID_ARGUMENT -> new InvalidNativeArgumentException(description, code, nativeMessage, run);
            case BAD_STORAGE -> new BadStorageException(description, code, nativeMessage, run);
            case WRONG_PHASE -> new StaleRunException(description, code, nativeMessage, run);
            case BUSY -> new ChipBusyException(description, code, nativeMessage, run);
            case NOT_REGISTERED -> new NotRegisteredException(description, code, nativeMessage, run);
            case OUT_OF_MEMORY -> new DeviceOutOfMemoryException(description, code, nativeMessage, run);
            case DEVICE -> new DeviceErrorException(description, code, nativeMessage, run);
            case KERNEL_FAULT -> new KernelFaultException(description, code, nativeMessage, run);
            case TIMEOUT -> new RunTimeoutException(description, code, nativeMessage, run);
            case BAD_CALLABLE -> new BadCallableException(description, code, nativeMessage, run);
            case CAPACITY -> new CapacityExceededException(description, code, nativeMessage, run);
            case ORCHESTRATION -> new OrchestrationException(description, code, nativeMessage, run);
            case POISONED -> new ChipPoisonedException(description, code, nativeMessage, run);
            case RANKS_DISAGREE -> new CollectiveMismatchException(description, code, nativeMessage, run);
            case OVERLAP_NOT_NOW -> new OverlapNotNowException(description, code, nativeMessage, run);
            case CHIP_CRASHED -> new ChipCrashedException(description, code, nativeMessage, run);
            case OK, FAILED -> new PtoRunException(description, code, nativeMessage, run);
        };
    }
}

package org.ptorun;

/**
 * {@code PTO_ERR_INVALID_ARGUMENT}: the library refused an argument (NULL, out of range, misaligned, bad size) that the Java side could not check first.
 */
public final class InvalidNativeArgumentException extends PtoRunException {

    private static final long serialVersionUID = 1L;

    public InvalidNativeArgumentException(String description, int code, String nativeMessage, NativeRun run) {
        super(description, code, nativeMessage, run);
    }
}

package org.ptorun;

/**
 * A malformed callable or program, or arguments that disagree with the callable's signature (PTO_ERR_BAD_CALLABLE).
 */
public final class BadCallableException extends PtoRunException {

    private static final long serialVersionUID = 1L;

    public BadCallableException(String description, int code, String nativeMessage, NativeRun run) {
        super(description, code, nativeMessage, run);
    }
}

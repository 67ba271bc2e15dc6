package org.ptorun;

/**
 * The run exceeded CallConfig timeout_ms (PTO_ERR_TIMEOUT).
 */
public final class RunTimeoutException extends PtoRunException {

    private static final long serialVersionUID = 1L;

    public RunTimeoutException(String description, int code, String nativeMessage, NativeRun run) {
        super(description, code, nativeMessage, run);
    }
}

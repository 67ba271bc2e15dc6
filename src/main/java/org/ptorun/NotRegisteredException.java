package org.ptorun;

/**
 * {@code PTO_ERR_NOT_REGISTERED}: no callable is registered under the id.
 */
public final class NotRegisteredException extends PtoRunException {

    private static final long serialVersionUID = 1L;

    public NotRegisteredException(String description, int code, String nativeMessage, NativeRun run) {
        super(description, code, nativeMessage, run);
    }
}

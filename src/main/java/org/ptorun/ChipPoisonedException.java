package org.ptorun;

/**
 * The device context refuses work after an unrecovered device error (PTO_ERR_POISONED) until it is closed and reopened.
 */
public final class ChipPoisonedException extends PtoRunException {

    private static final long serialVersionUID = 1L;

    public ChipPoisonedException(String description, int code, String nativeMessage, NativeRun run) {
        super(description, code, nativeMessage, run);
    }
}

package org.ptorun;

/**
 * {@code PTO_RUNTIME_ERR_UNSUPPORTED}: this variant of the library cannot do what was asked (e.g. host mapping on a5 onboard).
 */
public final class UnsupportedVariantException extends PtoRunException {

    private static final long serialVersionUID = 1L;

    public UnsupportedVariantException(String description, int code, String nativeMessage, NativeRun run) {
        super(description, code, nativeMessage, run);
    }
}

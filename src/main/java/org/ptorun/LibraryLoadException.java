package org.ptorun;

/**
 * A host-runtime library could not be found, loaded, or admitted: a missing file or
 * symbol, a library that names another variant, or a refused pipeline contract. The
 * message names the file, the resource path and the switches that help.
 */
public final class LibraryLoadException extends PtoRunException {

    private static final long serialVersionUID = 1L;

    /** A refusal made in Java (missing file, symbol or image; refused contract): {@code PTO_ERR_FAILED}. */
    public LibraryLoadException(String message) {
        super(message, PtoError.FAILED.code(), "", null, null);
    }

    /** Carries the native code and message of {@code cause} when it is a {@link PtoRunException}. */
    public LibraryLoadException(String message, Throwable cause) {
        super(message, cause instanceof PtoRunException p ? p.code() : PtoError.FAILED.code(),
                cause instanceof PtoRunException p ? p.nativeMessage() : "", null, cause);
    }
}

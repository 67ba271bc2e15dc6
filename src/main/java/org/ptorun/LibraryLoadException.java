package org.ptorun;

/**
 * A host-runtime library could not be found, loaded, or admitted: a missing file or
 * symbol, a library that names another variant, or a refused pipeline contract. The
 * message names the file, the resource path and the switches that help.
 */
public class LibraryLoadException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    public LibraryLoadException(String message) {
        super(message);
    }

    public LibraryLoadException(String message, Throwable cause) {
        super(message, cause);
    }
}

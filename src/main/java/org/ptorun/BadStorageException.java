package org.ptorun;

/**
 * {@code PTO_ERR_BAD_STORAGE}: the run storage holds no run of this device context (already finalized, never prepared, or another context's). A {@link StaleRunException}: the token no longer names a live run.
 */
public final class BadStorageException extends StaleRunException {

    private static final long serialVersionUID = 1L;

    public BadStorageException(String description, int code, String nativeMessage, NativeRun run) {
        super(description, code, nativeMessage, run);
    }
}

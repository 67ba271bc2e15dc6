package org.ptorun;

/**
 * {@code PTO_ERR_CAPACITY}: a fixed capacity of the library cannot hold the request (a ring smaller than one task, more than 256 tensors).
 */
public final class CapacityExceededException extends PtoRunException {

    private static final long serialVersionUID = 1L;

    public CapacityExceededException(String description, int code, String nativeMessage, NativeRun run) {
        super(description, code, nativeMessage, run);
    }
}

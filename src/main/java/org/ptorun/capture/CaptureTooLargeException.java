package org.ptorun.capture;

/**
 * A capture refused because its tensors' bytes exceed the size bound
 * ({@link RunCapture#DEFAULT_MAX_BYTES} unless configured): when it is taken, written or
 * read. The message gives the bytes and the bound.
 */
public final class CaptureTooLargeException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    private final long bytes;
    private final long limit;

    public CaptureTooLargeException(String what, long bytes, long limit) {
        super(what + ": " + bytes + " bytes of tensor data exceed the capture bound of " + limit + " bytes");
        this.bytes = bytes;
        this.limit = limit;
    }

    /** The tensor bytes the capture would hold. */
    public long bytes() {
        return bytes;
    }

    /** The bound it exceeds. */
    public long limit() {
        return limit;
    }
}

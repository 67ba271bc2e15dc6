package org.ptorun;

/**
 * The lease's generation is older than the newest generation its slot has seen: the lease was superseded.
 */
public final class LeaseRejectedException extends PtoRunException {

    private static final long serialVersionUID = 1L;

    public LeaseRejectedException(String description, int code, String nativeMessage, NativeRun run) {
        super(description, code, nativeMessage, run);
    }
}

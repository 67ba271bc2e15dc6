package org.ptorun;

/**
 * A kernel returned non-zero (PTO_ERR_KERNEL_FAULT); the native message names the task and its func_id.
 */
public final class KernelFaultException extends PtoRunException {

    private static final long serialVersionUID = 1L;

    public KernelFaultException(String description, int code, String nativeMessage, NativeRun run) {
        super(description, code, nativeMessage, run);
    }
}

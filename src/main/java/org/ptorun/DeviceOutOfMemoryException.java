package org.ptorun;

/**
 * Device memory is exhausted (PTO_ERR_OUT_OF_MEMORY).
 */
public final class DeviceOutOfMemoryException extends PtoRunException {

    private static final long serialVersionUID = 1L;

    public DeviceOutOfMemoryException(String description, int code, String nativeMessage, NativeRun run) {
        super(description, code, nativeMessage, run);
    }
}

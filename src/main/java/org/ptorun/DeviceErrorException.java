package org.ptorun;

/**
 * {@code PTO_ERR_DEVICE}: the driver or the device failed. On onboard the device context is poisoned until it is closed (abi.md); see {@link ChipWorker#isHealthy()}.
 */
public final class DeviceErrorException extends PtoRunException {

    private static final long serialVersionUID = 1L;

    public DeviceErrorException(String description, int code, String nativeMessage, NativeRun run) {
        super(description, code, nativeMessage, run);
    }
}

package org.ptorun;

/**
 * {@code PTO_ERR_DEVICE}: the driver or the device failed, transient failures (a failed copy, a refused launch)
 * included. On onboard every one has poisoned the device context until it is closed: the chip reads unhealthy
 * as this is thrown ({@link ChipWorker#isHealthy()}); close it and open a new one. On sim the chip stays usable.
 */
public final class DeviceErrorException extends PtoRunException {

    private static final long serialVersionUID = 1L;

    public DeviceErrorException(String description, int code, String nativeMessage, NativeRun run) {
        super(description, code, nativeMessage, run);
    }
}

package org.ptorun;

/**
 * The run exceeded CallConfig timeout_ms (PTO_ERR_TIMEOUT). On onboard the device may still be executing it, so
 * the device context is poisoned until it is closed, as for every {@link DeviceErrorException}; see
 * {@link ChipWorker#isHealthy()}. On sim the chip stays usable.
 */
public final class RunTimeoutException extends PtoRunException {

    private static final long serialVersionUID = 1L;

    public RunTimeoutException(String description, int code, String nativeMessage, NativeRun run) {
        super(description, code, nativeMessage, run);
    }
}

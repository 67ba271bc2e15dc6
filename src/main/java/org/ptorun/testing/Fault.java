package org.ptorun.testing;

/**
 * A fault the emulated device driver can inject ({@code PtoEmuFault} of
 * include/ptorun/pto_emudrv.h). Each is armed on its own and fires once, at the
 * {@code afterNCalls + 1}-th driver call that can suffer it (process-wide, any device);
 * a call refused for a bad argument or handle does not count. What a Java caller then
 * sees is in docs/testing.md: every fault but {@link #ALLOC} is a device error
 * ({@code PTO_ERR_DEVICE} or {@code PTO_ERR_TIMEOUT}) that poisons the chip until it is
 * closed and reopened.
 */
public enum Fault {
    /** {@code mem_alloc} fails with OUT_OF_MEMORY, nothing allocated. */
    ALLOC(1),
    /** A host-to-device copy fails: synchronous copies return an error, a queued one puts its stream in error. */
    H2D(2),
    /** A device-to-host copy fails, likewise. */
    D2H(3),
    /**
     * {@code launch} is refused, nothing is queued, the stream stays healthy; the runner
     * still poisons its chip (a refused launch is a device failure).
     */
    LAUNCH(4),
    /** {@code launch} executes, then its stream is in error. */
    STREAM(5),
    /** A launch of the AICPU entry never runs, until a synchronize on its stream times out. */
    HANG(6),
    /** The device is lost: that call and every later one on the device fail until it is reset. */
    DEVICE_LOST(7),
    /**
     * A peer is lost: the next comm call or launch on a device that takes part in a
     * communication group loses that device and marks its ranks lost, so their peers'
     * barriers and collectives fail naming them (docs/communication.md, Fault model).
     */
    PEER_LOST(8);

    private final int code;

    Fault(int code) {
        this.code = code;
    }

    /** The {@code PtoEmuFault} value. */
    public int code() {
        return code;
    }
}

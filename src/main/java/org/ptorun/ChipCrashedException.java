package org.ptorun;

/**
 * {@code PTO_ERR_CHIP_CRASHED}: the process the chip runs in (its chip host,
 * docs/isolation.md) is gone, killed by a signal, aborted or exited. The call in flight
 * and every later call of that chip fail with it; the message names the signal (or the
 * exit status) and the process id, e.g. {@code chip host pid 4711 was killed by signal 11
 * (Segmentation fault)}. No library call returns it yet: only the chip host transport does.
 */
public final class ChipCrashedException extends PtoRunException {

    private static final long serialVersionUID = 1L;

    public ChipCrashedException(String description, int code, String nativeMessage, NativeRun run) {
        super(description, code, nativeMessage, run);
    }
}

package org.ptorun.testing;

import java.util.Objects;
import org.ptorun.ChipIsolation;
import org.ptorun.ChipWorker;
import org.ptorun.internal.ChipHost;

/**
 * Crashes a chip's process on demand, to test a service against chips that die
 * (docs/isolation.md, docs/testing.md): the chip must be open in
 * {@link ChipIsolation#PROCESS}. The chip's call in flight and every later call then fail
 * with {@link org.ptorun.ChipCrashedException}; the JVM and the other chips go on.
 *
 * <pre>{@code
 * try (ChipWorker chip = ChipWorker.open(runtime, 0, ChipIsolation.PROCESS)) {
 *     ChipCrashes.kill(chip, ChipCrashes.SIGKILL);
 *     assertThatThrownBy(() -> chip.run(1, args, CallConfig.DEFAULT))
 *             .isInstanceOf(ChipCrashedException.class);
 * }
 * }</pre>
 *
 * Thread-safe; signals only the chip's own process (through its pidfd where the kernel has
 * one), never another that reused its pid.
 */
public final class ChipCrashes {

    /** A kill nothing can catch. */
    public static final int SIGKILL = 9;
    /** What a bad pointer raises. */
    public static final int SIGSEGV = 11;
    /** What {@code abort()} raises. */
    public static final int SIGABRT = 6;

    private ChipCrashes() {
    }

    /**
     * Sends {@code signal} to the chip's process.
     *
     * @return false when the process is gone already
     * @throws IllegalArgumentException when the chip runs in the JVM
     */
    public static boolean kill(ChipWorker chip, int signal) {
        Objects.requireNonNull(chip, "chip");
        long pid = chip.processId().orElseThrow(() -> new IllegalArgumentException(
                "chip " + chip.variant() + " device " + chip.deviceId() + " runs in the JVM: only a chip opened with"
                        + " ChipIsolation.PROCESS has a process to crash"));
        return ChipHost.running(pid).map(h -> h.kill(signal)).orElse(false);
    }
}

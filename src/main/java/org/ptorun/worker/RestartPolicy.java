package org.ptorun.worker;

import java.time.Duration;
import java.util.Objects;

/**
 * How a {@link Worker} restarts a chip in {@link org.ptorun.ChipIsolation#PROCESS process
 * isolation} that turned unhealthy — its process crashed, was killed, or its library
 * poisoned it (docs/isolation.md, Restarts). The chip's lane closes the chip, waits the
 * backoff, opens a fresh chip host on the same device and registers every callable the
 * Worker registered on it again; the runs queued for the chip stay queued and run on the
 * restarted chip, the runs it held fail ({@link org.ptorun.ChipCrashedException}). A chip
 * restarted {@code maxRestarts} times within {@code window} stays down: it takes no more
 * runs (they fail with {@link org.ptorun.ChipPoisonedException}) and {@link ChipHealth}
 * says why. Chips in process are never restarted.
 *
 * @param maxRestarts restarts allowed within {@code window} (0: never restart)
 * @param window the sliding window the restarts are counted in
 * @param backoff the wait before the first restart in the window; each further one waits
 *        twice the one before, at most {@link #MAX_BACKOFF}
 */
public record RestartPolicy(int maxRestarts, Duration window, Duration backoff) {

    /** The longest wait before a restart. */
    public static final Duration MAX_BACKOFF = Duration.ofSeconds(5);

    /** 3 restarts per minute, the first after 50 ms. */
    public static final RestartPolicy DEFAULT = new RestartPolicy(3, Duration.ofMinutes(1), Duration.ofMillis(50));

    /** No restarts: a chip that turns unhealthy stays down. */
    public static final RestartPolicy NEVER = new RestartPolicy(0, Duration.ofMinutes(1), Duration.ZERO);

    public RestartPolicy {
        Objects.requireNonNull(window, "window");
        Objects.requireNonNull(backoff, "backoff");
        if (maxRestarts < 0) {
            throw new IllegalArgumentException("maxRestarts " + maxRestarts + " must be >= 0");
        }
        if (window.isNegative() || window.isZero()) {
            throw new IllegalArgumentException("window " + window + " must be positive");
        }
        if (backoff.isNegative() || backoff.compareTo(MAX_BACKOFF) > 0) {
            throw new IllegalArgumentException("backoff " + backoff + " is outside [0, " + MAX_BACKOFF + "]");
        }
    }

    /** The wait before the {@code n}th restart within the window (n from 0). */
    Duration backoffBefore(int n) {
        Duration d = backoff;
        for (int i = 0; i < n && d.compareTo(MAX_BACKOFF) < 0; i++) {
            d = d.multipliedBy(2);
        }
        return d.compareTo(MAX_BACKOFF) > 0 ? MAX_BACKOFF : d;
    }
}

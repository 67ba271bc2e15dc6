package org.ptorun.internal;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * Bounds calls into chip hosts (docs/isolation.md, Hangs): one daemon thread,
 * {@code ptorun-chip-watchdog}, runs a bound's action when its call is still in flight
 * at its deadline. Safe from any thread.
 *
 * <p>Why not a {@code ScheduledThreadPoolExecutor}: a bound is taken around every
 * prepare, wait and finalize, and scheduling a task at the head of an empty queue wakes
 * the executor's thread each time — a thread hand-off per call, ~30 µs on two loaded
 * cores (docs/performance.md, P15). Here taking and ending a bound touch a concurrent set
 * only. The thread sleeps toward {@code min(earliest deadline, now + 1 s)} and is woken
 * only by a bound due before that; a bound that ended is simply gone when it next looks.
 * With no bound for a whole second it ends; the next bound starts a new one.
 */
final class HangWatchdog {

    private static final long IDLE_NANOS = TimeUnit.SECONDS.toNanos(1);

    private static final Object LOCK = new Object();
    private static final Set<Bound> ACTIVE = ConcurrentHashMap.newKeySet();
    /** The thread, or null when none runs. Guarded by LOCK. */
    private static Thread thread;
    /** The nanoTime the thread wakes at by itself; meaningful while it runs. Guarded by LOCK. */
    private static long wakeAt;
    /** Bounds taken since the thread last looked: it ends only after a second without any. */
    private static volatile boolean taken;

    private HangWatchdog() {
    }

    /** Identity, not value: two bounds due at once with one action are still two. */
    private static final class Bound {
        final long deadline;
        final Runnable onExpiry;

        Bound(long deadline, Runnable onExpiry) {
            this.deadline = deadline;
            this.onExpiry = onExpiry;
        }
    }

    /**
     * Runs {@code onExpiry} on the watchdog thread after {@code boundMs}, unless the
     * returned handle is run first (then never).
     */
    static Runnable bound(long boundMs, Runnable onExpiry) {
        // clamped so that the deadline never wraps: nanoTime arithmetic compares differences
        long nanos = Math.min(TimeUnit.MILLISECONDS.toNanos(Math.max(0, boundMs)), Long.MAX_VALUE / 4);
        Bound b = new Bound(System.nanoTime() + nanos, onExpiry);
        ACTIVE.add(b);
        taken = true;
        synchronized (LOCK) {
            if (thread == null) {
                wakeAt = b.deadline;
                thread = new Thread(HangWatchdog::watch, "ptorun-chip-watchdog");
                thread.setDaemon(true);
                thread.start();
            } else if (b.deadline - wakeAt < 0) {
                wakeAt = b.deadline;
                LOCK.notifyAll();
            }
        }
        return () -> ACTIVE.remove(b);
    }

    /** An action that throws must not end the watchdog: the next bounds still need it. */
    private static void expire(Bound b) {
        try {
            b.onExpiry.run();
        } catch (RuntimeException e) {
            Thread t = Thread.currentThread();
            t.getUncaughtExceptionHandler().uncaughtException(t, e);
        }
    }

    private static void watch() {
        for (;;) {
            long now = System.nanoTime();
            synchronized (LOCK) {
                wakeAt = now + IDLE_NANOS; // a bound taken from here on lowers it if it is due sooner
                taken = false;
            }
            long next = now + IDLE_NANOS;
            for (Bound b : ACTIVE) {
                if (b.deadline - now <= 0) {
                    if (ACTIVE.remove(b)) { // not ended meanwhile: its call is still in flight
                        expire(b);
                    }
                } else if (b.deadline - next < 0) {
                    next = b.deadline;
                }
            }
            synchronized (LOCK) {
                if (next - wakeAt < 0) {
                    wakeAt = next;
                }
                long wait;
                while ((wait = wakeAt - System.nanoTime()) > 0) {
                    try {
                        TimeUnit.NANOSECONDS.timedWait(LOCK, wait);
                    } catch (InterruptedException e) {
                        // a daemon no one interrupts; it finishes its round
                    }
                }
                if (ACTIVE.isEmpty() && !taken) {
                    thread = null;
                    return;
                }
            }
        }
    }
}

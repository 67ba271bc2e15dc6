package org.ptorun.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * The hang watchdog's bounds taken and ended from many threads at once: a bound ended
 * before its deadline never fires, one never ended fires exactly once and not before its
 * deadline, and one ended around its deadline fires at most once.
 */
class HangWatchdogTest {

    private static final int THREADS = 8;
    private static final int BOUNDS_PER_THREAD = 400;

    /** One bound's record: when it was due, when (if) its handle ended it, how often it fired and when. */
    private static final class Probe {
        final long boundMs;
        final boolean ended;
        long deadline;
        long endedBefore = Long.MAX_VALUE; // nanoTime taken right after the handle returned
        final AtomicInteger fired = new AtomicInteger();
        final AtomicLong firedAt = new AtomicLong();

        Probe(long boundMs, boolean ended) {
            this.boundMs = boundMs;
            this.ended = ended;
        }
    }

    @Test
    void boundsTakenAndEndedConcurrentlyFireExactlyWhenTheyShould() throws Exception {
        List<Probe> all = new ArrayList<>();
        List<List<Probe>> perThread = new ArrayList<>();
        SplittableRandom random = new SplittableRandom(20261207);
        int neverEnded = 0;
        for (int t = 0; t < THREADS; t++) {
            List<Probe> mine = new ArrayList<>();
            for (int i = 0; i < BOUNDS_PER_THREAD; i++) {
                // mostly long bounds ended at once (the calls of a healthy chip), some short ones left to fire
                boolean ended = random.nextInt(10) != 0;
                long boundMs = ended ? (random.nextBoolean() ? 1 + random.nextInt(5) : 1_000 + random.nextInt(20_000))
                        : 1 + random.nextInt(300);
                Probe p = new Probe(boundMs, ended);
                mine.add(p);
                neverEnded += ended ? 0 : 1;
            }
            perThread.add(mine);
            all.addAll(mine);
        }
        CountDownLatch allFired = new CountDownLatch(neverEnded);
        CountDownLatch start = new CountDownLatch(1);
        List<Thread> threads = new ArrayList<>();
        for (List<Probe> mine : perThread) {
            Thread th = new Thread(() -> {
                try {
                    start.await();
                } catch (InterruptedException e) {
                    throw new AssertionError(e);
                }
                for (Probe p : mine) {
                    p.deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(p.boundMs);
                    Runnable handle = HangWatchdog.bound(p.boundMs, () -> {
                        p.firedAt.set(System.nanoTime());
                        if (p.fired.incrementAndGet() == 1 && !p.ended) {
                            allFired.countDown();
                        }
                    });
                    if (p.ended) {
                        handle.run();
                        p.endedBefore = System.nanoTime();
                    }
                }
            });
            th.start();
            threads.add(th);
        }
        start.countDown();
        for (Thread th : threads) {
            th.join();
        }
        assertThat(allFired.await(60, TimeUnit.SECONDS)).as("every bound never ended fires").isTrue();
        // a last bound due at once: once it fired, the watchdog has looked at every earlier one
        CountDownLatch lastLook = new CountDownLatch(1);
        HangWatchdog.bound(0, lastLook::countDown);
        assertThat(lastLook.await(60, TimeUnit.SECONDS)).isTrue();

        for (Probe p : all) {
            assertThat(p.fired.get()).as("fired at most once").isLessThanOrEqualTo(1);
            if (p.fired.get() == 1) {
                assertThat(p.firedAt.get() - p.deadline).as("never before its deadline").isGreaterThanOrEqualTo(0);
            }
            if (!p.ended) {
                assertThat(p.fired.get()).as("a bound never ended fires").isEqualTo(1);
            } else if (p.endedBefore - p.deadline < 0) {
                assertThat(p.fired.get()).as("a bound ended before its deadline never fires").isZero();
            }
        }
    }

    @Test
    void aBoundDueSoonerThanTheWatchdogsNextLookWakesIt() throws Exception {
        // the thread sleeps toward a far deadline; a bound due long before it must not wait for that
        Runnable far = HangWatchdog.bound(30_000, () -> { });
        try {
            CountDownLatch fired = new CountDownLatch(1);
            long start = System.nanoTime();
            HangWatchdog.bound(50, fired::countDown);
            assertThat(fired.await(20, TimeUnit.SECONDS)).isTrue();
            assertThat(System.nanoTime() - start).isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(50));
        } finally {
            far.run();
        }
    }

    @Test
    void aBoundTooFarToRepresentNeverFires() throws Exception {
        AtomicInteger fired = new AtomicInteger();
        Runnable far = HangWatchdog.bound(Long.MAX_VALUE, fired::incrementAndGet);
        try {
            CountDownLatch looked = new CountDownLatch(1);
            HangWatchdog.bound(0, looked::countDown); // fires on the watchdog's next look, which sees both
            assertThat(looked.await(20, TimeUnit.SECONDS)).isTrue();
            assertThat(fired.get()).as("a deadline past nanoTime's range is not in the past").isZero();
        } finally {
            far.run();
        }
    }

    @Test
    void twoBoundsWithOneActionAndAnActionThatThrowsAreEachStillKept() throws Exception {
        CountDownLatch fired = new CountDownLatch(2);
        Runnable action = fired::countDown;
        HangWatchdog.bound(0, () -> {
            throw new IllegalStateException("an action that throws (expected in this test)");
        });
        HangWatchdog.bound(1, action);
        HangWatchdog.bound(1, action); // the same action, possibly the same deadline: a bound of its own
        assertThat(fired.await(20, TimeUnit.SECONDS)).as("both fire, after one that threw").isTrue();
    }
}

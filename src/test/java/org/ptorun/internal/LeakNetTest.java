package org.ptorun.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.BrokenBarrierException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.ptorun.testlog.LogCapture;
import org.slf4j.event.Level;

/**
 * The leak net: one release per resource, a warning only for one the net releases, and
 * its thread — started on demand, ended once nothing is registered or when interrupted,
 * started again by the next registration. Each test has a net of its own (its own queue
 * and thread), so the shared net of the other tests' resources never interferes.
 * "Collected" is {@link LeakNet.Handle#enqueueAsCollected()}: what the collector does to an
 * unreachable owner's reference, at a moment the test chooses; one test uses the real
 * collector.
 */
class LeakNetTest {

    private static final String NAME = "test-leak-net";

    /** A resource whose release counts and remembers whether the net's thread ran it. */
    private static final class Resource {
        final String what;
        final AtomicInteger releases = new AtomicInteger();
        final AtomicReference<String> releasedOn = new AtomicReference<>();
        final CountDownLatch released = new CountDownLatch(1);

        Resource(String what) {
            this.what = what;
        }

        Runnable release() {
            return () -> {
                releases.incrementAndGet();
                releasedOn.set(Thread.currentThread().getName());
                released.countDown();
            };
        }

        boolean byNet() {
            return NAME.equals(releasedOn.get());
        }
    }

    private static List<String> leakWarnings(LogCapture logs, String what) {
        return logs.messages(Level.WARN).stream().filter(m -> m.startsWith("leak: " + what + " was never closed"))
                .toList();
    }

    private static void awaitReleased(Resource r) throws InterruptedException {
        assertThat(r.released.await(60, TimeUnit.SECONDS)).as("%s released", r.what).isTrue();
    }

    /** Joins the net's thread (if any) and returns whether one still runs. */
    private static boolean threadEnds(LeakNet net) throws InterruptedException {
        Thread t = net.thread();
        if (t != null) {
            t.join(TimeUnit.SECONDS.toMillis(60));
            assertThat(t.isAlive()).as("the net's thread ended").isFalse();
        }
        return net.thread() == null;
    }

    @Test
    void closeReleasesOnceWithoutAWordAndTheNetReleasesAnUnclosedOneWithAWarningNamingIt() throws Exception {
        LeakNet net = new LeakNet(NAME);
        Resource closed = new Resource("closed resource");
        Resource leaked = new Resource("leaked resource");
        try (LogCapture logs = LogCapture.open()) {
            Object owner1 = new Object();
            Object owner2 = new Object();
            LeakNet.Handle h1 = net.watch(owner1, closed.what, closed.release());
            LeakNet.Handle h2 = net.watch(owner2, leaked.what, leaked.release());
            h1.close();
            h1.close();
            assertThat(closed.releases).hasValue(1);
            assertThat(closed.releasedOn.get()).isEqualTo(Thread.currentThread().getName());

            h2.enqueueAsCollected();
            awaitReleased(leaked);
            h2.close(); // the net released it already: nothing more
            assertThat(leaked.releases).hasValue(1);
            assertThat(leaked.byNet()).isTrue();
            assertThat(leakWarnings(logs, leaked.what)).hasSize(1);
            assertThat(leakWarnings(logs, leaked.what).get(0)).contains("-Dptorun.leakDetection=paranoid");
            assertThat(leakWarnings(logs, closed.what)).isEmpty();
        }
    }

    @Test
    void theThreadStartsWithTheFirstRegistrationEndsWhenNothingIsRegisteredAndStartsAgain() throws Exception {
        LeakNet net = new LeakNet(NAME);
        assertThat(net.thread()).isNull();
        Resource a = new Resource("a");
        LeakNet.Handle ha = net.watch(new Object(), a.what, a.release());
        Thread first = net.thread();
        assertThat(first).isNotNull();
        assertThat(first.isDaemon()).isTrue();
        assertThat(first.getName()).isEqualTo(NAME);

        ha.close(); // the last one: the thread ends
        first.join(TimeUnit.SECONDS.toMillis(60));
        assertThat(first.isAlive()).isFalse();
        assertThat(net.thread()).isNull();
        assertThat(net.watched()).isZero();

        Resource b = new Resource("b");
        try (LogCapture logs = LogCapture.open()) {
            LeakNet.Handle hb = net.watch(new Object(), b.what, b.release());
            Thread second = net.thread();
            assertThat(second).isNotNull().isNotSameAs(first);
            hb.enqueueAsCollected(); // the new thread serves the net
            awaitReleased(b);
            assertThat(b.byNet()).isTrue();
            assertThat(leakWarnings(logs, b.what)).hasSize(1);
            second.join(TimeUnit.SECONDS.toMillis(60)); // it released the last one: it ends
            assertThat(second.isAlive()).isFalse();
            assertThat(net.thread()).isNull();
        }
    }

    @Test
    void anInterruptedThreadEndsAndTheNextRegistrationServesWhatWasCollectedMeanwhile() throws Exception {
        LeakNet net = new LeakNet(NAME);
        Resource held = new Resource("held");
        LeakNet.Handle h = net.watch(new Object(), held.what, held.release());
        Thread t = net.thread();
        t.interrupt(); // what mvn exec:java does to each thread a program leaves
        t.join(TimeUnit.SECONDS.toMillis(60));
        assertThat(t.isAlive()).as("the interrupted thread ended").isFalse();
        assertThat(net.thread()).isNull();
        assertThat(net.watched()).as("still registered").isEqualTo(1);

        try (LogCapture logs = LogCapture.open()) {
            h.enqueueAsCollected(); // collected while no thread runs: it waits in the queue
            Resource next = new Resource("next");
            LeakNet.Handle hn = net.watch(new Object(), next.what, next.release());
            awaitReleased(held);
            assertThat(held.byNet()).isTrue();
            assertThat(leakWarnings(logs, held.what)).hasSize(1);
            hn.close();
            assertThat(threadEnds(net)).isTrue();
            assertThat(next.byNet()).isFalse();
        }
    }

    @Test
    void anOwnerTheCollectorFindsUnreachableIsReleasedWithAWarning() throws Exception {
        LeakNet net = new LeakNet(NAME);
        Resource r = new Resource("garbage");
        try (LogCapture logs = LogCapture.open()) {
            register(net, r); // the owner is unreachable once this returns
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (!r.released.await(20, TimeUnit.MILLISECONDS)) { // an event, the collector nudged meanwhile
                assertThat(System.nanoTime() - deadline).as("collected within 60 s").isNegative();
                System.gc();
            }
            assertThat(r.byNet()).isTrue();
            assertThat(leakWarnings(logs, r.what)).hasSize(1);
            assertThat(threadEnds(net)).isTrue();
        }
    }

    private static void register(LeakNet net, Resource r) {
        net.watch(new Object(), r.what, r.release());
    }

    /**
     * Rounds of a few resources registered, closed and "collected" from three threads at
     * once — a resource may be closed and collected at the same moment — while the net's
     * thread ends whenever the count drops to zero and restarts at the next registration
     * (rounds overlap with that: a round starts without waiting for the last one's thread
     * to end, except now and then). Every outcome is checked: each resource released
     * exactly once; closed-only ones on the closing thread without a warning,
     * collected-only ones by the net with a warning, raced ones by whichever came first,
     * with a warning exactly when the net won; at the end nothing is registered and the
     * thread ended. {@code -Dptorun.leakNetSeed} replays a seed.
     */
    @Test
    void randomizedRacesOfRegisterCloseAndCollectionAgainstTheThreadEnding() throws Exception {
        long seed = Long.getLong("ptorun.leakNetSeed", System.nanoTime());
        SplittableRandom random = new SplittableRandom(seed);
        LeakNet net = new LeakNet(NAME);
        int rounds = 3_000;
        int racers = 3;
        List<Resource> all = new ArrayList<>();
        List<Integer> fates = new ArrayList<>();
        // one round's work, written by this thread between the barriers
        List<Resource> resources = new ArrayList<>();
        int[][] fate = new int[1][];
        CountDownLatch[][] ready = new CountDownLatch[1][];
        LeakNet.Handle[][] handles = new LeakNet.Handle[1][];
        CyclicBarrier start = new CyclicBarrier(racers + 1);
        CyclicBarrier end = new CyclicBarrier(racers + 1);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<Thread> threads = new ArrayList<>();
        for (int k = 0; k < racers; k++) {
            int racer = k;
            Thread t = new Thread(() -> {
                try {
                    for (int round = 0; round < rounds; round++) {
                        start.await();
                        int n = fate[0].length;
                        for (int i = 0; i < n; i++) {
                            if (racer == 0) { // registers them one by one, closes its own
                                Resource r = resources.get(i);
                                handles[0][i] = net.watch(new Object(), r.what, r.release());
                                ready[0][i].countDown();
                                if (fate[0][i] == 0) {
                                    handles[0][i].close();
                                }
                            } else { // as soon as each is registered: collect, or close a raced one
                                ready[0][i].await();
                                if (racer == 1 && fate[0][i] != 0) {
                                    handles[0][i].enqueueAsCollected();
                                } else if (racer == 2 && fate[0][i] == 2) {
                                    handles[0][i].close();
                                }
                            }
                        }
                        end.await();
                    }
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                    start.reset();
                    end.reset();
                }
            }, "racer-" + racer);
            t.setDaemon(true);
            threads.add(t);
            t.start();
        }
        try (LogCapture logs = LogCapture.open()) {
            for (int round = 0; round < rounds; round++) {
                int n = 1 + random.nextInt(4);
                resources.clear();
                fate[0] = new int[n]; // 0 close, 1 collect, 2 both at once
                ready[0] = new CountDownLatch[n];
                handles[0] = new LeakNet.Handle[n];
                for (int i = 0; i < n; i++) {
                    fate[0][i] = random.nextInt(3);
                    ready[0][i] = new CountDownLatch(1);
                    resources.add(new Resource("r" + round + "." + i));
                }
                try {
                    start.await(60, TimeUnit.SECONDS); // publishes the round's work to the racers
                    end.await(60, TimeUnit.SECONDS);
                } catch (BrokenBarrierException e) {
                    throw new AssertionError("seed " + seed + ": a racer failed", failure.get());
                }
                assertThat(failure.get()).as("seed %d", seed).isNull();
                for (Resource r : resources) {
                    assertThat(r.released.await(60, TimeUnit.SECONDS)).as("seed %d: %s released", seed, r.what)
                            .isTrue();
                    all.add(r);
                }
                for (int f : fate[0]) {
                    fates.add(f);
                }
                if (random.nextInt(8) == 0) {
                    assertThat(threadEnds(net)).as("seed %d, round %d: the thread ended with nothing registered",
                            seed, round).isTrue();
                }
            }
            for (Thread t : threads) {
                t.join(TimeUnit.SECONDS.toMillis(60));
            }
            assertThat(threadEnds(net)).isTrue();
            assertThat(net.watched()).isZero();
            java.util.Map<String, Long> warned = logs.messages(Level.WARN).stream()
                    .filter(m -> m.startsWith("leak: r"))
                    .collect(java.util.stream.Collectors.groupingBy(
                            m -> m.substring("leak: ".length(), m.indexOf(" was never closed")),
                            java.util.stream.Collectors.counting()));
            long byNet = 0;
            for (int i = 0; i < all.size(); i++) {
                Resource r = all.get(i);
                assertThat(r.releases).as("seed %d: %s released once", seed, r.what).hasValue(1);
                switch (fates.get(i)) {
                    case 0 -> assertThat(r.byNet()).as("seed %d: %s closed: released on the closer", seed, r.what)
                            .isFalse();
                    case 1 -> assertThat(r.byNet()).as("seed %d: %s collected: released by the net", seed, r.what)
                            .isTrue();
                    default -> { } // raced: either
                }
                assertThat(warned.getOrDefault(r.what, 0L))
                        .as("seed %d: %s: a warning exactly when the net released it", seed, r.what)
                        .isEqualTo(r.byNet() ? 1 : 0);
                byNet += r.byNet() ? 1 : 0;
            }
            assertThat(warned.values().stream().mapToLong(Long::longValue).sum()).isEqualTo(byNet);
            assertThat(fates).as("every fate was drawn").contains(0, 1, 2);
        }
    }
}

package org.ptorun;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.ptorun.WorkerE2ETest.Job;
import org.ptorun.worker.ChipSelection;
import org.ptorun.worker.DrainReport;
import org.ptorun.worker.RunTicket;
import org.ptorun.worker.Worker;

/**
 * The Worker's queues and lanes under a randomized race: several threads enqueue (blocking,
 * timed and non-blocking) over two chips with a small queue, while other threads call
 * poll() and drain() at random moments (caller-driven) or drain() only (background). Every
 * run's output is checked against the reference, every run is reported by exactly one
 * drain, and the dispatch ids are exactly 1..N. The seed is in every message.
 */
class WorkerRaceE2ETest {

    private static final int N = WorkerE2ETest.N;
    private static final int ENQUEUERS = 4;
    private static final int RUNS_EACH = 400;

    static List<Variant> variants() {
        return List.of(Variant.parse("a2a3/sim/hbg"), Variant.parse("a2a3/sim/trb"),
                Variant.parse("a5/onboard/hbg"), Variant.parse("a5/onboard/trb"));
    }

    @ParameterizedTest
    @MethodSource("variants")
    void callerDrivenEnqueuersPollersAndDrainersAgreeOnEveryRun(Variant variant) throws Exception {
        race(variant, false, System.nanoTime());
    }

    @ParameterizedTest
    @MethodSource("variants")
    void backgroundEnqueuersAndDrainersAgreeOnEveryRun(Variant variant) throws Exception {
        race(variant, true, System.nanoTime());
    }

    private static void race(Variant variant, boolean background, long seed) throws Exception {
        Random random = new Random(seed);
        String what = variant + " background=" + background + " seed=" + seed;
        int capacity = 1 + random.nextInt(6);
        ChipSelection selection = random.nextBoolean() ? ChipSelection.ROUND_ROBIN : ChipSelection.LEAST_OUTSTANDING;
        ConcurrentLinkedQueue<Job> jobs = new ConcurrentLinkedQueue<>();
        ConcurrentLinkedQueue<DrainReport> reports = new ConcurrentLinkedQueue<>();
        try (Worker w = Worker.builder().variant(variant).devices(0, 1).queueCapacity(capacity).background(background)
                .chipSelection(selection).build()) {
            w.register(WorkerE2ETest.CHAIN, ChipWorkerE2ETest.vectorChain(N)).get(60, TimeUnit.SECONDS);
            List<TestThreads.Started> enqueuers = new ArrayList<>();
            for (int p = 0; p < ENQUEUERS; p++) {
                long mySeed = random.nextLong();
                int producer = p;
                enqueuers.add(TestThreads.start("enqueuer-" + p,
                        () -> enqueueAll(w, background, producer, new Random(mySeed), jobs)));
            }
            AtomicBoolean enqueuing = new AtomicBoolean(true);
            List<TestThreads.Started> drivers = new ArrayList<>();
            for (int d = 0; d < 2; d++) {
                long mySeed = random.nextLong();
                drivers.add(TestThreads.start("driver-" + d, () -> {
                    Random r = new Random(mySeed);
                    while (enqueuing.get()) {
                        if (!background && r.nextInt(4) != 0) {
                            w.poll();
                        } else {
                            reports.add(w.drain());
                        }
                        Thread.yield();
                    }
                }));
            }
            for (TestThreads.Started e : enqueuers) {
                e.join();
            }
            enqueuing.set(false);
            for (TestThreads.Started d : drivers) {
                d.join();
            }
            reports.add(w.drain());
            int total = ENQUEUERS * RUNS_EACH;
            assertThat(jobs).as(what).hasSize(total);
            assertThat(reports.stream().mapToLong(DrainReport::failed).sum()).as("%s: failures %s", what,
                    reports.stream().flatMap(r -> r.failures().stream()).toList()).isZero();
            assertThat(reports.stream().mapToLong(DrainReport::succeeded).sum())
                    .as("%s: each run reported by exactly one drain", what).isEqualTo(total);
            for (Job job : jobs) {
                RunTicket t = job.ticket();
                assertThat(t.isDone()).as("%s: %s done", what, t).isTrue();
                assertThat(t.result().join().dispatchId()).isEqualTo(t.dispatchId());
                assertThat(t.isAccepted()).as("%s: %s accepted", what, t).isTrue();
                job.assertGolden();
            }
            assertThat(jobs.stream().mapToLong(j -> j.ticket().dispatchId()).sorted().toArray())
                    .as("%s: dispatch ids 1..%d", what, total)
                    .containsExactly(java.util.stream.LongStream.rangeClosed(1, total).toArray());
            assertThat(w.health()).as(what).allMatch(h -> h.healthy() && h.outstanding() == 0);
            assertThat(w.health().stream().mapToLong(h -> h.succeeded()).sum()).as(what).isEqualTo(total);
        }
    }

    /** One producer's runs: blocking, timed or non-blocking enqueues (caller-driven: polling when full). */
    private static void enqueueAll(Worker w, boolean background, int producer, Random r,
            ConcurrentLinkedQueue<Job> jobs) throws Exception {
        for (int i = 0; i < RUNS_EACH; i++) {
            long seed = producer * 1_000_000L + i;
            float[] a = SimE2E.random(N, seed);
            float[] b = SimE2E.random(N, seed + 1_000_003);
            float[] f = SimE2E.filled(N);
            TaskArgs args = ChipWorkerE2ETest.chainArgs(a, b, f);
            RunTicket t = null;
            while (t == null) {
                int how = r.nextInt(3);
                if (how == 0 && background) {
                    t = w.enqueue(WorkerE2ETest.CHAIN, args, CallConfig.DEFAULT);
                } else {
                    Optional<RunTicket> admitted = how == 1
                            ? w.enqueue(WorkerE2ETest.CHAIN, args, CallConfig.DEFAULT, r.nextInt(200),
                                    TimeUnit.MICROSECONDS)
                            : w.tryEnqueue(WorkerE2ETest.CHAIN, args, CallConfig.DEFAULT);
                    if (admitted.isPresent()) {
                        t = admitted.get();
                    } else if (!background) {
                        w.poll(); // nobody else may be driving: make room
                    }
                }
            }
            jobs.add(new Job(t, a, b, f));
        }
    }
}

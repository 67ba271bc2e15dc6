package org.ptorun;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.ptorun.SimE2E.assertBitExact;
import static org.ptorun.SimE2E.filled;
import static org.ptorun.SimE2E.random;
import static org.ptorun.callable.Direction.IN;
import static org.ptorun.callable.Direction.OUT;
import static org.ptorun.callable.Direction.SCALAR;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.ptorun.callable.ChipCallable;
import org.ptorun.callable.CoreType;
import org.ptorun.callable.Kernel;
import org.ptorun.internal.ProcessEnvironment;
import org.ptorun.testlog.LogCapture;
import org.slf4j.event.Level;
import org.ptorun.testing.DriverStats;
import org.ptorun.testing.EmulatedFaults;
import org.ptorun.testing.Fault;
import org.ptorun.worker.ChipHealth;
import org.ptorun.worker.ChipSelection;
import org.ptorun.worker.DrainReport;
import org.ptorun.worker.RestartPolicy;
import org.ptorun.worker.RunResult;
import org.ptorun.worker.RunTicket;
import org.ptorun.worker.RunTimings;
import org.ptorun.worker.ShutdownPolicy;
import org.ptorun.worker.Worker;

/**
 * The Worker end to end: many runs from many threads over two chips with golden outputs,
 * dispatch order per chip, launch acceptance, pipelining, back-pressure, failure isolation,
 * close mid-flight and registration behind runs in flight. No timing threshold: overlap is
 * asserted from the order of recorded phase boundaries.
 */
class WorkerE2ETest {

    static final int CHAIN = 1;
    private static final int HEAVY = 2;
    private static final int FAULT = 3;
    static final int PACED = 4;
    static final int N = 64;
    /** The emulated driver the onboard libraries load (one instance for all of them). */
    static final EmulatedFaults FAULTS =
            EmulatedFaults.of(HostRuntime.load(Variant.parse("a2a3/onboard/hbg")));

    private Worker worker;

    static List<Variant> allVariants() {
        return SimE2E.allVariants();
    }

    static List<Variant> onboard() {
        return Variant.all().stream().filter(v -> v.platform() == Variant.Platform.ONBOARD).toList();
    }

    static List<Variant> hbg() {
        return Variant.all().stream().filter(v -> v.runtime() == Variant.RuntimeKind.HBG).toList();
    }

    @AfterEach
    void tearDown() {
        FAULTS.disarm();
        if (worker != null) {
            worker.close();
        }
    }

    /** One run of the chain with its inputs and output. */
    record Job(RunTicket ticket, float[] a, float[] b, float[] f) {
        void assertGolden() {
            assertBitExact(f, ChipWorkerE2ETest.reference(a, b));
        }
    }

    static Job enqueueChain(Worker w, long seed) throws InterruptedException {
        float[] a = random(N, seed);
        float[] b = random(N, seed + 1_000_003);
        float[] f = filled(N);
        return new Job(w.enqueue(CHAIN, ChipWorkerE2ETest.chainArgs(a, b, f), CallConfig.DEFAULT), a, b, f);
    }

    private static RunResult resultOf(RunTicket t) {
        return t.result().join();
    }

    // ---- many runs, many threads, two chips -----------------------------------------------------

    private static final int RUNS = 10_000;

    @ParameterizedTest
    @MethodSource("allVariants")
    void runsFromEightThreadsAcrossTwoChipsAllCompleteGoldenInDispatchOrderPerChip(Variant variant)
            throws Exception {
        worker = Worker.builder().variant(variant).devices(0, 1).queueCapacity(64).background(true).build();
        worker.register(CHAIN, ChipWorkerE2ETest.vectorChain(N)).get(60, TimeUnit.SECONDS);
        int total = RUNS;
        int threads = 8;
        ConcurrentLinkedQueue<Job> jobs = new ConcurrentLinkedQueue<>();
        AtomicReference<Throwable> error = new AtomicReference<>();
        List<Thread> producers = new ArrayList<>();
        for (int p = 0; p < threads; p++) {
            int producer = p;
            Thread t = new Thread(() -> {
                try {
                    for (int i = producer; i < total; i += threads) {
                        jobs.add(enqueueChain(worker, i));
                    }
                } catch (Throwable e) {
                    error.set(e);
                }
            });
            producers.add(t);
            t.start();
        }
        for (Thread t : producers) {
            t.join();
        }
        assertThat(error.get()).isNull();
        DrainReport report = worker.drain();
        assertThat(report.failed()).as("failures: %s", report.failures()).isZero();
        assertThat(report.succeeded()).isEqualTo(total);
        assertThat(jobs).hasSize(total);
        for (Job job : jobs) {
            assertThat(job.ticket().isDone()).isTrue();
            job.assertGolden();
            assertThat(job.ticket().isAccepted()).as("accepted %s", job.ticket()).isTrue();
        }
        assertThat(jobs.stream().map(j -> j.ticket().dispatchId()).distinct().count()).isEqualTo(total);
        Map<Integer, List<RunResult>> perChip = jobs.stream().map(j -> resultOf(j.ticket()))
                .collect(Collectors.groupingBy(RunResult::deviceId));
        assertThat(perChip.keySet()).containsExactlyInAnyOrder(0, 1);
        for (List<RunResult> results : perChip.values()) {
            results.sort(Comparator.comparingLong(RunResult::launchOrdinal));
            for (int i = 1; i < results.size(); i++) {
                assertThat(results.get(i).launchOrdinal()).isEqualTo(results.get(i - 1).launchOrdinal() + 1);
                assertThat(results.get(i).dispatchId()).as("launch order = dispatch order")
                        .isGreaterThan(results.get(i - 1).dispatchId());
            }
        }
        assertThat(worker.health()).extracting(ChipHealth::healthy).containsOnly(true);
        assertThat(worker.health()).extracting(ChipHealth::outstanding).containsOnly(0L);
    }

    @ParameterizedTest
    @MethodSource("allVariants")
    void callerDrivenPollAdvancesRunsWithoutBlockingAndDrainFinishesThem(Variant variant) throws Exception {
        worker = Worker.builder().variant(variant).devices(0, 1).queueCapacity(16).build();
        assertThat(worker.register(CHAIN, ChipWorkerE2ETest.vectorChain(N))).as("idle: registered at once").isDone();
        assertThat(worker.poll()).as("nothing to do").isZero();
        List<Job> jobs = new ArrayList<>();
        for (int i = 0; i < 16; i++) {
            jobs.add(enqueueChain(worker, i));
        }
        assertThat(jobs).noneMatch(j -> j.ticket().isDone());
        assertThat(worker.poll()).as("the first runs were prepared and launched").isPositive();
        DrainReport report = worker.drain();
        assertThat(report.succeeded()).isEqualTo(16);
        for (Job job : jobs) {
            job.assertGolden();
            assertThat(job.ticket().isAccepted()).isTrue();
        }
        assertThat(worker.drain().succeeded()).as("each run is reported by one drain").isZero();
    }

    // ---- acceptance -------------------------------------------------------------------------------

    /**
     * The WARN of a poisoned device 0 that stays down: in process it is never restarted; in
     * process isolation (the tests build their Worker with {@link RestartPolicy#NEVER}) the
     * policy's refusal is named.
     */
    private static String poisonedAndDown() {
        if (ChipIsolation.configuredDefault() == ChipIsolation.IN_PROCESS) {
            return "device 0 is poisoned: its queued runs fail with ChipPoisonedException";
        }
        return "device 0 is down (its library poisoned it; not restarted: 0 restart(s) within PT1M already ("
                + RestartPolicy.NEVER + ")): its queued runs fail with ChipPoisonedException";
    }

    /**
     * A refused launch is a device error: it fails its run before the marker (the word is
     * never set) and poisons the chip, so the run queued behind it fails fast.
     */
    @ParameterizedTest
    @MethodSource("onboard")
    void aRunRefusedAtLaunchFailsWithADeviceErrorItsWordIsNeverSetAndTheChipIsPoisoned(Variant variant)
            throws Exception {
        // NEVER: a poisoned chip stays down in process isolation too (in process it always does)
        worker = Worker.builder().variant(variant).restartPolicy(RestartPolicy.NEVER).build();
        worker.register(CHAIN, ChipWorkerE2ETest.vectorChain(N));
        Job first = enqueueChain(worker, 1);
        worker.drain();
        first.assertGolden();
        assertThat(first.ticket().isAccepted()).isTrue();

        Job refused = enqueueChain(worker, 2);
        Job queued = enqueueChain(worker, 3);
        FAULTS.inject(Fault.LAUNCH, 0);
        DrainReport report;
        try (LogCapture logs = LogCapture.open()) {
            report = worker.drain();
            assertThat(logs.messages(Level.WARN))
                    .containsExactly(poisonedAndDown());
        }
        assertThat(report.failed()).isEqualTo(2);
        assertThat(refused.ticket().isAccepted()).as("failed before the marker").isFalse();
        assertThatThrownBy(() -> refused.ticket().result().join()).isInstanceOf(CompletionException.class)
                .cause().isInstanceOf(DeviceErrorException.class).hasMessageContaining("run_id=2");
        assertThat(refused.f()).containsOnly(SimE2E.SENTINEL);
        assertThatThrownBy(() -> queued.ticket().result().join()).isInstanceOf(CompletionException.class)
                .cause().isInstanceOf(ChipPoisonedException.class)
                .hasMessageContaining("dispatch_id=" + queued.ticket().dispatchId());
        assertThat(queued.ticket().isAccepted()).isFalse();
        assertThat(queued.f()).containsOnly(SimE2E.SENTINEL);
        assertThat(worker.health().get(0).healthy()).isFalse();
    }

    @ParameterizedTest
    @MethodSource("simVariantsForEnqueueFault")
    void aSimRunFailingBeforeTheMarkerIsNeverAccepted(Variant variant) throws Exception {
        ProcessEnvironment.set("PTORUN_SIM_FAIL_ENQUEUE_AFTER", "1");
        try {
            worker = Worker.builder().variant(variant).build();
        } finally {
            ProcessEnvironment.unset("PTORUN_SIM_FAIL_ENQUEUE_AFTER");
        }
        worker.register(CHAIN, ChipWorkerE2ETest.vectorChain(N));
        Job ok = enqueueChain(worker, 1);
        Job failing = enqueueChain(worker, 2);
        Job again = enqueueChain(worker, 3);
        DrainReport report = worker.drain();
        assertThat(report.succeeded()).isEqualTo(2);
        assertThat(report.failed()).isEqualTo(1);
        assertThat(report.failures().get(0).ticket()).isSameAs(failing.ticket());
        ok.assertGolden();
        again.assertGolden();
        assertThat(ok.ticket().isAccepted()).isTrue();
        assertThat(again.ticket().isAccepted()).isTrue();
        assertThat(failing.ticket().isAccepted()).isFalse();
        assertThat(failing.f()).containsOnly(SimE2E.SENTINEL);
    }

    static List<Variant> simVariantsForEnqueueFault() {
        return SimE2E.simVariants();
    }

    // ---- pipelining ------------------------------------------------------------------------------

    @ParameterizedTest
    @MethodSource("hbg")
    void onHbgTheSuccessorIsPreparedWhileThePredecessorExecutes(Variant variant) throws Exception {
        worker = Worker.builder().variant(variant).build();
        assertThat(worker.pipelineDepth()).isEqualTo(2);
        int big = 1 << 20;
        worker.register(HEAVY, ChipWorkerE2ETest.heavy(big, 64));
        worker.register(CHAIN, ChipWorkerE2ETest.vectorChain(N));
        float[] x = random(big, 1);
        float[] y = random(big, 2);
        RunTicket predecessor = worker.enqueue(HEAVY, TaskArgs.of(Tensor.of(x), Tensor.of(y),
                Tensor.of(filled(big))), CallConfig.DEFAULT);
        Job successor = enqueueChain(worker, 3);
        worker.poll(); // prepares and launches the predecessor, then stages the successor behind it
        assertThat(successor.ticket().isAccepted()).as("staged, not launched").isFalse();
        worker.drain();
        RunTimings p = resultOf(predecessor).timings();
        RunTimings s = resultOf(successor.ticket()).timings();
        assertThat(s.prepareStart()).as("successor prepare starts after the predecessor launched")
                .isGreaterThanOrEqualTo(p.launchEnd());
        assertThat(s.prepareEnd()).as("and ends before the predecessor finished on the device")
                .isLessThanOrEqualTo(p.executionEnd());
        assertThat(s.launchStart()).as("launched only after the predecessor's finalize")
                .isGreaterThanOrEqualTo(p.finalizeEnd());
        successor.assertGolden();
    }

    /**
     * A run with a known pace: the orchestration (hbg: in prepare, on the host) sleeps
     * {@code prepareMicros}, its one task sleeps {@code executeMicros} and copies x to z.
     * Sleeping rather than computing keeps the pace independent of the machine's load,
     * so comparing two configurations measured in the same run is meaningful.
     */
    static ChipCallable paced() {
        return ChipCallable.builder()
                .signature(IN, OUT, SCALAR, SCALAR)
                .child(1, CoreType.AIV, Kernel.fromLibrary(SimE2E.kernelLibrary(), "paced_copy"))
                .orchestrationLibrary(SimE2E.orchestrationLibrary(), "paced_copy")
                .build();
    }

    record PacedJob(RunTicket ticket, float[] x, float[] z) {
        void assertGolden() {
            assertBitExact(z, x);
        }
    }

    static PacedJob enqueuePaced(Worker w, long seed, long prepareMicros, long executeMicros)
            throws InterruptedException {
        float[] x = random(N, seed);
        float[] z = filled(N);
        TaskArgs args = TaskArgs.of(Tensor.of(x), Tensor.of(z)).scalar(prepareMicros).scalar(executeMicros);
        return new PacedJob(w.enqueue(PACED, args, CallConfig.DEFAULT), x, z);
    }

    /**
     * The phases of {@code runs} paced runs through a fresh caller-driven Worker of that
     * depth: all are enqueued first, then one drain drives them, so what overlaps is
     * decided by the lane's state machine alone, not by timing.
     */
    private static List<RunTimings> pacedBatch(Variant v, int depth, int runs, long prepareMicros, long executeMicros)
            throws Exception {
        try (Worker w = Worker.builder().variant(v).pipelineDepth(depth).build()) {
            w.register(PACED, paced()).get(60, TimeUnit.SECONDS);
            List<PacedJob> jobs = new ArrayList<>();
            for (int i = 0; i < runs; i++) {
                jobs.add(enqueuePaced(w, i, prepareMicros, executeMicros));
            }
            DrainReport report = w.drain();
            assertThat(report.failed()).as("failures: %s", report.failures()).isZero();
            jobs.forEach(PacedJob::assertGolden);
            return jobs.stream().map(j -> resultOf(j.ticket()).timings()).toList();
        }
    }

    /**
     * Pipelining, structurally, for a callable with a heavy prepare (1 ms, slept) and a
     * longer execution (20 ms, slept: the driver stages the successor when it next looks
     * at the lane, and a loaded machine may keep it off a core for a millisecond, after
     * which it would rightly finalize the ended run first): at depth 2 every successor is
     * prepared after its predecessor launched and before the predecessor's finalize
     * began, and launched after that finalize ended; at depth 1 no prepare begins before the previous run's finalize
     * ended. (The throughput this buys is measured by the benchmark suite, P3.)
     */
    @ParameterizedTest
    @MethodSource("hbg")
    void atDepthTwoEverySuccessorIsPreparedBeforeItsPredecessorIsFinalizedAndAtDepthOneNone(Variant variant)
            throws Exception {
        int runs = 6;
        List<RunTimings> two = pacedBatch(variant, 2, runs, 1_000, 20_000);
        for (int i = 1; i < runs; i++) {
            RunTimings p = two.get(i - 1);
            RunTimings s = two.get(i);
            assertThat(s.prepareStart()).as("run %d staged after its predecessor launched", i)
                    .isGreaterThanOrEqualTo(p.launchEnd());
            assertThat(s.prepareEnd()).as("run %d prepared before its predecessor's finalize began", i)
                    .isLessThanOrEqualTo(p.finalizeStart());
            assertThat(s.launchStart()).as("run %d launched after its predecessor's finalize", i)
                    .isGreaterThanOrEqualTo(p.finalizeEnd());
        }
        List<RunTimings> one = pacedBatch(variant, 1, runs, 1_000, 1_000);
        for (int i = 1; i < runs; i++) {
            assertThat(one.get(i).prepareStart()).as("depth 1: run %d prepared after the previous finalize", i)
                    .isGreaterThanOrEqualTo(one.get(i - 1).finalizeEnd());
        }
    }

    /**
     * A run enqueued while its chip's driver is parked waiting on the executing run (the
     * dispatcher in background mode, a drain() in caller-driven mode) wakes the driver,
     * which stages it during that execution — not after it. The events: the running run
     * is accepted (it crossed its launch marker), then the driver thread parks.
     */
    @ParameterizedTest
    @MethodSource("hbg")
    void aRunEnqueuedWhileTheChipWaitsOnItsExecutingRunIsStagedDuringThatExecution(Variant variant)
            throws Exception {
        for (boolean background : new boolean[] {true, false}) {
            try (Worker w = Worker.builder().variant(variant).background(background).build()) {
                w.register(PACED, paced()).get(60, TimeUnit.SECONDS);
                PacedJob running = enqueuePaced(w, 1, 0, 300_000);
                Thread driver;
                if (background) {
                    driver = TestThreads.dispatcherOf(0);
                } else {
                    driver = new Thread(w::drain, "drainer");
                    driver.start();
                }
                while (!running.ticket().isAccepted()) {
                    Thread.onSpinWait(); // an event: the launch marker
                }
                TestThreads.awaitParked(driver); // the driver waits on the device (or its events) now
                PacedJob next = enqueuePaced(w, 2, 0, 0);
                if (!background) {
                    driver.join();
                }
                w.drain();
                RunTimings p = resultOf(running.ticket()).timings();
                RunTimings s = resultOf(next.ticket()).timings();
                assertThat(s.prepareStart()).as("background=%s: staged after the predecessor launched", background)
                        .isGreaterThanOrEqualTo(p.launchEnd());
                assertThat(s.prepareEnd()).as("background=%s: staged while the predecessor executed", background)
                        .isLessThan(p.executionEnd());
                assertThat(s.launchStart()).as("background=%s: launched after the predecessor's finalize", background)
                        .isGreaterThanOrEqualTo(p.finalizeEnd());
                running.assertGolden();
                next.assertGolden();
            }
        }
    }

    // ---- continuations ---------------------------------------------------------------------------

    /**
     * User code never runs on a thread that drives a chip: continuations attached before
     * completion — the future's own non-async methods, {@code allOf} over it, another
     * future's combinator — run on the callback executor, in background and caller-driven
     * mode alike; attached after completion they run on the attaching thread. Cancelling
     * the future does not touch the run.
     */
    @Test
    void continuationsNeverRunOnTheThreadDrivingTheChip() throws Exception {
        java.util.concurrent.ExecutorService callbacks = java.util.concurrent.Executors.newSingleThreadExecutor(
                r -> new Thread(r, "test-callbacks"));
        try {
            for (boolean background : new boolean[] {true, false}) {
                try (Worker w = Worker.builder().variant(Variant.parse("a2a3/sim/hbg")).background(background)
                        .callbackExecutor(callbacks).build()) {
                    CountDownLatch fiveRan = new CountDownLatch(5);
                    ConcurrentLinkedQueue<String> ran = new ConcurrentLinkedQueue<>() {
                        @Override
                        public boolean add(String entry) {
                            boolean added = super.add(entry);
                            fiveRan.countDown();
                            return added;
                        }
                    };
                    java.util.concurrent.CompletableFuture<Void> registered = w.register(PACED, paced());
                    AtomicReference<String> registeredOn = new AtomicReference<>();
                    // before completion: the callback thread; after (always so in caller-driven mode,
                    // where register() applies it itself): this thread — never a dispatcher
                    registered.thenRun(() -> registeredOn.set(Thread.currentThread().getName()));
                    registered.get(60, TimeUnit.SECONDS);
                    PacedJob job = enqueuePaced(w, 1, 0, 200_000);
                    PacedJob cancelledByUser = enqueuePaced(w, 2, 0, 0);
                    java.util.concurrent.CompletableFuture<RunResult> f = job.ticket().result();
                    f.thenApply(r -> ran.add("thenApply " + Thread.currentThread().getName()));
                    f.whenComplete((r, e) -> ran.add("whenComplete " + Thread.currentThread().getName()));
                    f.exceptionally(e -> null).thenRun(() -> ran.add("derived " + Thread.currentThread().getName()));
                    java.util.concurrent.CompletableFuture.allOf(f)
                            .thenRun(() -> ran.add("allOf " + Thread.currentThread().getName()));
                    new java.util.concurrent.CompletableFuture<Integer>().completeAsync(() -> 1, callbacks)
                            .thenCombine(f, (a, b) -> ran.add("combined " + Thread.currentThread().getName()));
                    // all five attached while the run executes (its 200 ms make that near certain): the
                    // callback thread; a run that beat a stalled test thread to it would rightly run
                    // late ones on this thread — never on a thread driving the chip either way
                    boolean attachedWhileRunning = !f.isDone();
                    String self = " " + Thread.currentThread().getName();
                    assertThat(cancelledByUser.ticket().result().cancel(true)).isTrue();
                    assertThat(w.drain().succeeded()).as("background=%s", background).isEqualTo(2);
                    // the event: all five continuations ran (on the callback thread)
                    assertThat(fiveRan.await(60, TimeUnit.SECONDS)).as("five continuations ran").isTrue();
                    assertThat(registeredOn.get()).isIn("test-callbacks", Thread.currentThread().getName());
                    assertThat(ran).as("background=%s", background).hasSize(5)
                            .allMatch(entry -> entry.endsWith(" test-callbacks")
                                    || (!attachedWhileRunning && entry.endsWith(self)),
                                    "ran on the callback executor (or, attached after completion, here)");
                    f.thenRun(() -> ran.add("late " + Thread.currentThread().getName()));
                    assertThat(ran).contains("late " + Thread.currentThread().getName());
                    job.assertGolden();
                    cancelledByUser.assertGolden();
                    assertThat(cancelledByUser.ticket().isDone()).isTrue();
                    assertThat(cancelledByUser.ticket().isAccepted()).as("the run went on").isTrue();
                }
            }
        } finally {
            callbacks.shutdownNow();
        }
    }

    // ---- back-pressure -------------------------------------------------------------------------------

    @Test
    void aFullQueueBlocksEnqueueEmptiesTryEnqueueAndAnInterruptAdmitsNothing() throws Exception {
        worker = Worker.builder().variant(Variant.parse("a2a3/sim/hbg")).queueCapacity(2).build();
        worker.register(CHAIN, ChipWorkerE2ETest.vectorChain(N));
        enqueueChain(worker, 1);
        enqueueChain(worker, 2);
        TaskArgs args = ChipWorkerE2ETest.chainArgs(random(N, 3), random(N, 4), filled(N));
        assertThat(worker.tryEnqueue(CHAIN, args, CallConfig.DEFAULT)).isEmpty();
        assertThat(worker.enqueue(CHAIN, args, CallConfig.DEFAULT, 1, TimeUnit.MILLISECONDS)).isEmpty();

        AtomicReference<Throwable> thrown = new AtomicReference<>();
        Thread blocked = new Thread(() -> {
            try {
                worker.enqueue(CHAIN, args, CallConfig.DEFAULT);
            } catch (Throwable e) {
                thrown.set(e);
            }
        });
        blocked.start();
        TestThreads.awaitParked(blocked);
        blocked.interrupt();
        blocked.join();
        assertThat(thrown.get()).isInstanceOf(InterruptedException.class);

        AtomicReference<RunTicket> admitted = new AtomicReference<>();
        CountDownLatch done = new CountDownLatch(1);
        Thread waiter = new Thread(() -> {
            try {
                admitted.set(worker.enqueue(CHAIN, args, CallConfig.DEFAULT));
            } catch (Throwable e) {
                thrown.set(e);
            } finally {
                done.countDown();
            }
        });
        waiter.start();
        TestThreads.awaitParked(waiter);
        assertThat(admitted.get()).as("still blocked while the queue is full").isNull();
        worker.poll(); // the chip takes a run: room for one
        assertThat(done.await(60, TimeUnit.SECONDS)).isTrue();
        assertThat(admitted.get().dispatchId()).as("the interrupted enqueue consumed nothing").isEqualTo(3);
        DrainReport report = worker.drain();
        assertThat(report.succeeded()).isEqualTo(3);
        assertThat(report.failed()).isZero();
    }

    // ---- failure isolation ---------------------------------------------------------------------------

    @ParameterizedTest
    @MethodSource("allVariants")
    void aKernelFaultFailsOnlyItsOwnFuture(Variant variant) throws Exception {
        worker = Worker.builder().variant(variant).background(true).build();
        worker.register(CHAIN, ChipWorkerE2ETest.vectorChain(N)).get(60, TimeUnit.SECONDS);
        worker.register(FAULT, ChipWorkerE2ETest.faultyVadd(N)).get(60, TimeUnit.SECONDS);
        Job before = enqueueChain(worker, 1);
        RunTicket faulty = worker.enqueue(FAULT, TaskArgs.of(Tensor.of(random(N, 1)), Tensor.of(random(N, 2)),
                Tensor.of(filled(N))), CallConfig.DEFAULT);
        Job after = enqueueChain(worker, 3);
        DrainReport report = worker.drain();
        assertThat(report.failed()).isEqualTo(1);
        assertThat(report.failures().get(0).cause()).isInstanceOf(KernelFaultException.class);
        assertThatThrownBy(() -> faulty.result().get()).isInstanceOf(ExecutionException.class)
                .cause().isInstanceOf(KernelFaultException.class);
        before.assertGolden();
        after.assertGolden();
        assertThat(worker.health().get(0).healthy()).isTrue();
    }

    @ParameterizedTest
    @MethodSource("onboard")
    void aLostDeviceOnOneChipPoisonsThatChipOnlyAndFailsItsQueuedRunsFast(Variant variant) throws Exception {
        // NEVER: a poisoned chip stays down in process isolation too (in process it always does)
        worker = Worker.builder().variant(variant).devices(0, 1).restartPolicy(RestartPolicy.NEVER).build();
        worker.register(CHAIN, ChipWorkerE2ETest.vectorChain(N));
        FAULTS.inject(Fault.DEVICE_LOST, 0);
        List<Job> jobs = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            jobs.add(enqueueChain(worker, i)); // alternate: chip 0, chip 1, chip 0, chip 1
        }
        assertThat(jobs).extracting(j -> j.ticket().deviceId()).containsExactly(0, 1, 0, 1);
        DrainReport report;
        try (LogCapture logs = LogCapture.open()) {
            report = worker.drain(); // chip 0 is driven first: its prepare meets the lost device
            assertThat(logs.messages(Level.WARN))
                    .containsExactly(poisonedAndDown());
        }
        assertThat(report.failed()).isEqualTo(2);
        assertThat(report.succeeded()).isEqualTo(2);
        assertThatThrownBy(() -> jobs.get(2).ticket().result().join()).cause()
                .isInstanceOf(ChipPoisonedException.class).hasMessageContaining("dispatch_id=3");
        assertThat(jobs.get(0).ticket().result()).isCompletedExceptionally();
        jobs.get(1).assertGolden();
        jobs.get(3).assertGolden();
        List<ChipHealth> health = worker.health();
        assertThat(health.get(0).healthy()).isFalse();
        assertThat(health.get(1).healthy()).isTrue();
        List<Job> later = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            later.add(enqueueChain(worker, 10 + i));
        }
        assertThat(later).extracting(j -> j.ticket().deviceId()).containsOnly(1);
        assertThat(worker.drain().succeeded()).isEqualTo(6);
        later.forEach(Job::assertGolden);
    }

    /**
     * Device memory: each chip's committed bytes once its last run was finalized (reported
     * by {@code health()} after close) equal those of the idle chip before the runs — on
     * every library. The baseline is taken after a warm-up that used both pipeline slots
     * of each chip: the arenas of each bank and trb's retained per-slot buffer are the
     * chip's, kept (grown when needed) for its lifetime (docs/device.md).
     * Onboard, the emulated driver's accounting after close equals that before the Worker
     * was built (memory, allocations, streams, images, threads).
     */
    @ParameterizedTest
    @MethodSource("allVariants")
    void closeMidFlightCompletesEveryFutureAndReturnsDeviceMemoryToItsBaseline(Variant variant) throws Exception {
        for (ShutdownPolicy policy : ShutdownPolicy.values()) {
            DriverStats baseline = FAULTS.stats();
            Worker w = Worker.builder().variant(variant).devices(0, 1).background(true).queueCapacity(64)
                    .shutdownPolicy(policy).chipSelection(ChipSelection.ROUND_ROBIN).build();
            w.register(CHAIN, ChipWorkerE2ETest.vectorChain(N)).get(60, TimeUnit.SECONDS);
            w.register(PACED, paced()).get(60, TimeUnit.SECONDS);
            // warm-up: on each chip a 200 ms run with chain runs behind it, so that (hbg) a
            // successor is staged in the second slot and both arena banks have been used (200 ms:
            // long enough that the chain runs queue behind it even on a loaded machine)
            List<PacedJob> slow = List.of(enqueuePaced(w, 98, 0, 200_000), enqueuePaced(w, 99, 0, 200_000));
            List<Job> warmUp = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                warmUp.add(enqueueChain(w, 100 + i));
            }
            assertThat(w.drain().succeeded()).isEqualTo(6);
            slow.forEach(PacedJob::assertGolden);
            warmUp.forEach(Job::assertGolden);
            List<Long> idle = w.health().stream().map(ChipHealth::committedDeviceMemory).toList();
            assertThat(idle).allMatch(bytes -> bytes > 0, "a registered chip holds device memory");
            List<Job> jobs = new ArrayList<>();
            for (int i = 0; i < 60; i++) {
                jobs.add(enqueueChain(w, i));
            }
            w.close();
            w.close(); // idempotent
            assertThat(w.health().stream().map(ChipHealth::committedDeviceMemory).toList())
                    .as("committed device memory once every run was finalized (%s)", policy).isEqualTo(idle);
            assertThat(w.committedDeviceMemory()).isEqualTo(idle.get(0) + idle.get(1));
            if (variant.platform() == Variant.Platform.ONBOARD) {
                assertThat(FAULTS.stats()).as("driver accounting after close (%s)", policy).isEqualTo(baseline);
            }
            int cancelled = 0;
            for (Job job : jobs) {
                assertThat(job.ticket().isDone()).as("%s done after close (%s)", job.ticket(), policy).isTrue();
                if (job.ticket().result().isCancelled()) {
                    cancelled++;
                    assertThat(job.f()).containsOnly(SimE2E.SENTINEL);
                } else {
                    job.assertGolden();
                }
            }
            if (policy == ShutdownPolicy.DRAIN) {
                assertThat(cancelled).isZero();
            }
            assertThatThrownBy(() -> w.enqueue(CHAIN, new TaskArgs(), CallConfig.DEFAULT))
                    .isInstanceOf(IllegalStateException.class);
            assertThat(w.poll()).as("poll after close").isZero();
            DrainReport afterClose = w.drain(); // reports what close finalized or cancelled
            assertThat(afterClose.succeeded() + afterClose.failed()).as("drain after close")
                    .isEqualTo(60);
            assertThat(w.drain().succeeded()).as("a second drain after close").isZero();
        }
    }

    /** Caller-driven, close keeps the lanes' drives for good: poll and drain after it answer at once. */
    @Test
    void callerDrivenPollAndDrainAfterCloseAnswerAtOnce() throws Exception {
        Worker w = Worker.builder().variant(Variant.parse("a2a3/sim/hbg")).devices(0, 1).build();
        w.register(CHAIN, ChipWorkerE2ETest.vectorChain(N)).get(60, TimeUnit.SECONDS);
        Job job = enqueueChain(w, 1);
        w.close();
        job.assertGolden();
        assertThat(w.poll()).isZero();
        assertThat(w.drain().succeeded()).as("the run close finalized").isEqualTo(1);
        assertThat(w.drain().succeeded()).isZero();
    }

    // ---- registration --------------------------------------------------------------------------------

    @ParameterizedTest
    @MethodSource("allVariants")
    void registeringWhileRunsAreInFlightDoesNotDisturbThem(Variant variant) throws Exception {
        worker = Worker.builder().variant(variant).build();
        worker.register(CHAIN, ChipWorkerE2ETest.vectorChain(N));
        List<Job> jobs = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            jobs.add(enqueueChain(worker, i));
        }
        worker.poll();
        var registration = worker.register(HEAVY, ChipWorkerE2ETest.heavy(N, 2));
        Job behind = enqueueChain(worker, 9);
        worker.drain();
        assertThat(registration).isCompleted();
        jobs.forEach(Job::assertGolden);
        behind.assertGolden();
        float[] x = random(N, 1);
        float[] y = random(N, 2);
        float[] z = filled(N);
        RunTicket t = worker.enqueue(HEAVY, TaskArgs.of(Tensor.of(x), Tensor.of(y), Tensor.of(z)), CallConfig.DEFAULT);
        worker.drain();
        assertThat(t.result()).isCompleted();
        for (int i = 0; i < N; i++) {
            assertThat(z[i]).isEqualTo(x[i] + y[i]);
        }
    }
}

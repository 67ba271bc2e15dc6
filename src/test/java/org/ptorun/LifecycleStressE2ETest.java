package org.ptorun;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.ptorun.SimE2E.SENTINEL;
import static org.ptorun.SimE2E.assertBitExact;
import static org.ptorun.SimE2E.filled;
import static org.ptorun.SimE2E.random;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.ptorun.testing.DriverStats;
import org.ptorun.testing.EmulatedFaults;
import org.ptorun.worker.ChipHealth;
import org.ptorun.worker.ChipSelection;
import org.ptorun.worker.RunResult;
import org.ptorun.worker.ShutdownPolicy;
import org.ptorun.worker.Worker;

/**
 * The lifecycle under stress (docs/hardening.md), on every library:
 *
 * <ul>
 *   <li><b>ChipWorker</b>: 4 threads drive 8 000 runs of the vector chain; every phase of
 *       every run (prepare, launch, poll, await, finalize) is handed through a queue to a
 *       randomly chosen thread, leases come from a {@link PipelineSlotPool} (on hbg a
 *       successor is staged while its predecessor runs), and refused calls are thrown in
 *       at random — stale tokens, a token of another ChipWorker, a superseded lease, a
 *       lease outside the contract, an occupied slot, a staged successor launched too
 *       early, calls in the wrong phase. Each must raise exactly its documented exception
 *       and disturb nothing: every launched run's output is golden, every abandoned run's
 *       output untouched.</li>
 *   <li><b>Worker</b>: over 2 chips, several enqueuing threads, background and
 *       caller-driven, with a {@code close()} in the middle on some iterations: every
 *       future completes (golden or cancelled) and nothing hangs.</li>
 * </ul>
 *
 * Afterwards committed device memory is back to its baseline and the native threads
 * (named {@code ptorun-exec}, {@code ptorun-simdev}, {@code ptorun-emudrv}, counted from
 * {@code /proc/self/task/*}{@code /comm}) are exactly the ones there were before the
 * stress — the same thread ids, none per run — and none of them is left after close.
 *
 * <p>Every random decision comes from a seed fixed per library; a failure names it, and
 * {@code -Dptorun.stressSeed=<seed>} sets it (docs/hardening.md). The seed fixes what is
 * done and by which thread; the interleaving is the scheduler's. No timing is asserted;
 * overlaps that the refusals rely on are made certain by the order of events, not by
 * how long anything takes.
 */
class LifecycleStressE2ETest {

    /** The tests' figures: INFO, off unless -Dorg.slf4j.simpleLogger.log.org.ptorun.tests=info. */
    private static final org.slf4j.Logger FIGURES = org.slf4j.LoggerFactory.getLogger("org.ptorun.tests");

    private static final int CHAIN = WorkerE2ETest.CHAIN;
    private static final int N = WorkerE2ETest.N;
    private static final int THREADS = 4;
    private static final int RUNS_PER_THREAD = 2000;
    /**
     * Onboard a run costs about four times a sim run (~0.8 ms on two cores: each launch
     * wakes the emulated driver's participation threads), so half the runs keep a library
     * at a few seconds.
     */
    private static final int ONBOARD_RUNS_PER_THREAD = 1000;
    private static final int INPUT_SETS = 16;
    private static final long WAIT_SECONDS = 120;
    /**
     * Two blocks: the chain's five tasks need no more, and each block is a thread the
     * (emulated) device wakes per launch — the lifecycle, not the device, is under test.
     */
    private static final CallConfig STRESS_CONFIG = CallConfig.builder().blockDim(2).build();
    /** The emulated driver the onboard libraries load (one instance for all of them). */
    private static final EmulatedFaults FAULTS =
            EmulatedFaults.of(HostRuntime.load(Variant.parse("a2a3/onboard/hbg")));

    /**
     * {@code -Dptorun.soakMinutes=N}: each test (one library, one flavour) repeats rounds
     * of its normal size for N minutes and samples resident memory, device memory and
     * threads (docs/hardening.md, Soak). 0 or unset: one round, the normal test.
     */
    private static final double SOAK_MINUTES = soakMinutes();

    private static double soakMinutes() {
        String value = System.getProperty("ptorun.soakMinutes", "");
        double minutes = value.isBlank() ? 0 : Double.parseDouble(value.strip());
        if (minutes < 0 || Double.isNaN(minutes)) {
            throw new IllegalArgumentException("ptorun.soakMinutes must be >= 0, got " + value);
        }
        return minutes;
    }

    /** Every library, or those of {@code -Dptorun.stressVariants=a2a3/sim/hbg,a5/onboard/trb}. */
    static List<Variant> allVariants() {
        String only = System.getProperty("ptorun.stressVariants", "");
        if (only.isBlank()) {
            return SimE2E.allVariants();
        }
        return java.util.Arrays.stream(only.split(",")).map(String::strip).map(Variant::parse).toList();
    }

    /** Fixed per library unless {@code -Dptorun.stressSeed} says otherwise. */
    static long seedOf(Variant variant) {
        String forced = System.getProperty("ptorun.stressSeed");
        if (forced != null && !forced.isBlank()) {
            return Long.parseLong(forced.strip());
        }
        return 0x5EED_0000L + Variant.all().indexOf(variant);
    }

    private interface Body {
        void run() throws Exception;
    }

    /** Runs the stress; a failure carries the seed that reproduces its decisions. */
    private static void withSeed(String flavour, Variant variant, long seed, Body body) throws Exception {
        try {
            body.run();
        } catch (Throwable t) {
            throw new AssertionError(flavour + " stress on " + variant + " failed with seed " + seed
                    + " (to rerun it: -Dptorun.stressSeed=" + seed + ")", t);
        }
    }

    // ==== the ChipWorker flavour ===================================================================

    @ParameterizedTest
    @MethodSource("allVariants")
    void chipWorkerRunsHopBetweenThreadsWithRefusedCallsThrownIn(Variant variant) throws Exception {
        long seed = seedOf(variant);
        withSeed("ChipWorker", variant, seed, () -> chipWorkerStress(variant, seed));
    }

    private static void chipWorkerStress(Variant variant, long seed) throws Exception {
        HostRuntime runtime = HostRuntime.load(variant);
        DriverStats driverBefore = FAULTS.stats();
        NativeThreads before = NativeThreads.now();
        ChipWorker chip = ChipWorker.open(runtime, 0);
        ChipWorker other = null;
        ChipStress stress = null;
        try {
            other = ChipWorker.open(runtime, 1);
            NativeThreads opened = NativeThreads.now().minus(before);
            PipelineSlotPool pool = new PipelineSlotPool(runtime.contract());
            assertThat(pool.depth()).isEqualTo(chip.pipelineDepth());
            if (variant.runtime() == Variant.RuntimeKind.HBG) {
                assertThat(chip.supportsOverlap()).as("hbg stages a successor while a run executes").isTrue();
            }
            chip.registerCallable(CHAIN, ChipWorkerE2ETest.vectorChain(N));
            other.registerCallable(CHAIN, ChipWorkerE2ETest.vectorChain(N));

            // Warm-up: a run in every slot of both chips, leases from the pool (generation 1
            // each), so every bank's arena and every retained buffer exists before the baseline.
            List<PipelineSlotLease> warmLeases = new ArrayList<>();
            for (int slot = 0; slot < pool.depth(); slot++) {
                warmLeases.add(pool.tryAcquire().orElseThrow());
            }
            for (PipelineSlotLease lease : warmLeases) {
                chip.run(CHAIN, ChipWorkerE2ETest.chainArgs(random(N, 1), random(N, 2), filled(N)),
                        STRESS_CONFIG, lease, 0, 0, null);
                other.run(CHAIN, ChipWorkerE2ETest.chainArgs(random(N, 1), random(N, 2), filled(N)),
                        STRESS_CONFIG, lease, 0, 0, null);
                assertThat(pool.release(lease)).isTrue();
            }
            long chipMemory = chip.committedDeviceMemory();
            long otherMemory = other.committedDeviceMemory();
            NativeThreads warm = NativeThreads.now().minus(before);
            assertThat(warm.ids(NativeThreads.EXECUTOR)).as("executor threads start with the context").isNotEmpty()
                    .isEqualTo(opened.ids(NativeThreads.EXECUTOR));
            assertThat(warm.ids(NativeThreads.SIM_DEVICE)).as("sim device threads start with the context")
                    .isEqualTo(opened.ids(NativeThreads.SIM_DEVICE));
            assertThat(warm.ids(NativeThreads.SIM_DEVICE).isEmpty())
                    .isEqualTo(variant.platform() == Variant.Platform.ONBOARD);
            assertThat(warm.ids(NativeThreads.EMULATED_DRIVER).isEmpty())
                    .as("the emulated driver's threads, onboard only")
                    .isEqualTo(variant.platform() == Variant.Platform.SIM);

            // the foreign token: a run prepared on the other chip, live during the whole stress
            float[] fa = random(N, 77);
            float[] fb = random(N, 78);
            float[] ff = filled(N);
            NativeRun foreign = other.prepare(CHAIN, ChipWorkerE2ETest.chainArgs(fa, fb, ff), STRESS_CONFIG,
                    PipelineSlotLease.of(0, 1), 1_000_000, 1_000_000, null);

            int runsPerThread = variant.platform() == Variant.Platform.SIM ? RUNS_PER_THREAD : ONBOARD_RUNS_PER_THREAD;
            Soak soak = Soak.start("chipworker", variant, seed);
            long runs = 0;
            for (int round = 0; round == 0 || soak.goOn(); round++) {
                long roundSeed = Soak.roundSeed(seed, round);
                if (stress != null) {
                    stress.closeWords(); // the previous round finalized every run: its words are free
                }
                long start = System.nanoTime();
                stress = new ChipStress(chip, other, foreign, pool, roundSeed, THREADS * runsPerThread);
                try {
                    stress.runToCompletion();
                    long elapsed = System.nanoTime() - start;
                    assertThat(chip.isHealthy()).isTrue();
                    assertThat(other.isHealthy()).isTrue();
                    assertThat(chip.committedDeviceMemory()).as("committed device memory after the stress")
                            .isEqualTo(chipMemory);
                    NativeThreads after = NativeThreads.now().minus(before);
                    after.assertSameAs(warm, 2, "after the stress");
                    stress.assertEveryRefusalWasExercised(chip.supportsOverlap());
                    runs += stress.total;
                    if (!soak.on()) {
                        FIGURES.info(String.format(java.util.Locale.ROOT, "ptorun: %s ChipWorker stress, seed %d: %d runs from %d threads in %.2f s"
                                        + " (%d staged behind a running predecessor, %d abandoned,"
                                        + " %d steps on a thread other than the previous step's);"
                                        + " refusals %s; native threads %s",
                                variant, seed, stress.total, THREADS, elapsed / 1e9, stress.staged.get(),
                                stress.abandoned.get(), stress.threadChanges.get(), stress.refusalCounts(),
                                warm.counts()));
                    }
                } catch (Throwable t) {
                    throw soak.failedRound(round, roundSeed, t);
                }
                soak.sample(runs, chip.committedDeviceMemory() + other.committedDeviceMemory(),
                        NativeThreads.now().minus(before));
            }

            // nothing was disturbed: the foreign run still launches and is golden
            other.launch(foreign);
            other.finalizeRun(foreign);
            assertBitExact(ff, ChipWorkerE2ETest.reference(fa, fb));
            assertThat(other.committedDeviceMemory()).as("the other chip's committed device memory")
                    .isEqualTo(otherMemory);

            NativeRun finalizedToken = stress.lastToken;
            chip.close();
            other.close();
            for (Op op : Op.values()) {
                assertThatThrownBy(() -> op.call(chip, finalizedToken))
                        .as("%s after close", op).isExactlyInstanceOf(IllegalStateException.class);
            }
            assertThatThrownBy(() -> chip.prepare(CHAIN, ChipWorkerE2ETest.chainArgs(fa, fb, filled(N)),
                    CallConfig.DEFAULT, PipelineSlotLease.of(0, 1), 1, 1, null))
                    .isExactlyInstanceOf(IllegalStateException.class);
            assertThat(NativeThreads.now().minus(before).total())
                    .as("native threads of the chips left after close (ptorun threads before: %s)", before).isZero();
            if (variant.platform() == Variant.Platform.ONBOARD) {
                assertThat(FAULTS.stats()).as("emulated driver accounting after close").isEqualTo(driverBefore);
            }
            soak.finish(runs, driverMemory(variant), NativeThreads.now().minus(before));
        } finally {
            if (stress != null) {
                stress.stopThreads();
            }
            chip.close();
            if (other != null) {
                other.close();
            }
            if (stress != null) {
                stress.closeWords();
            }
        }
    }

    /** A phase call on a token. */
    private enum Op {
        LAUNCH, POLL, AWAIT, FINALIZE;

        void call(ChipWorker chip, NativeRun run) {
            switch (this) {
                case LAUNCH -> chip.launch(run);
                case POLL -> chip.poll(run);
                case AWAIT -> chip.await(run);
                case FINALIZE -> chip.finalizeRun(run);
                default -> throw new AssertionError(this);
            }
        }

        /** What a stale token is told (docs/java.md, the per-slot phase table). */
        String staleRefusal() {
            return this == FINALIZE ? "stale or already finalized" : "stale or used in the wrong phase";
        }
    }

    /** The steps of one run, each executed by the thread its plan names. */
    private enum Step { PREPARE, LAUNCH, POLL, AWAIT, POLL_DONE, FINALIZE }

    /** Where a run is, as the coordinator sees it (a step is counted from its dispatch). */
    private enum Stage { PREPARING, PREPARED, LAUNCHING, RUNNING, FINALIZING }

    /** The refused calls thrown in, each with the exception it must raise. */
    private enum Refusal {
        /** prepare with a lease of a slot past the depth: IllegalArgumentException. */
        LEASE_OUTSIDE_CONTRACT,
        /** prepare with a superseded lease of a free slot: LeaseRejectedException. */
        STALE_LEASE_GENERATION,
        /** prepare with the lease of a slot holding a prepared run: ChipBusyException. */
        SLOT_OCCUPIED,
        /** poll and await of a prepared, not launched run: StaleRunException. */
        WRONG_PHASE_BEFORE_LAUNCH,
        /** launch of a launched run: StaleRunException. */
        SECOND_LAUNCH,
        /** launch of the staged successor before its predecessor's finalize: ChipBusyException. */
        EARLY_SUCCESSOR_LAUNCH,
        /** finalize right after finalize: StaleRunException. */
        DOUBLE_FINALIZE,
        /** a finalized token used later from another thread: StaleRunException. */
        STALE_TOKEN,
        /** the other chip's live token on this chip: StaleRunException. */
        FOREIGN_TOKEN,
        /** this chip's token on the other chip: StaleRunException. */
        TOKEN_ON_ANOTHER_CHIP
    }

    /** A refused call sent to some thread on its own: the token and what to call with it. */
    private record Probe(int thread, Op op) {
    }

    /** Everything decided about a run when it is created, from the seed. */
    private record Plan(List<Step> steps, int[] threads, int input, boolean outsideLease, boolean staleLease,
                        boolean occupiedSlot, boolean wrongPhaseBeforeLaunch, boolean secondLaunch,
                        boolean earlySuccessorLaunch, boolean doubleFinalize, Probe staleProbe, Probe foreignProbe,
                        Probe crossProbe) {

        static final double ABANDON = 0.03;
        static final double POLL = 0.5;
        static final double AWAIT = 0.6;
        static final double POLL_AFTER_AWAIT = 0.5;
        static final double REFUSAL = 0.03;
        static final double PROBE = 0.05;

        static Plan draw(SplittableRandom rnd) {
            List<Step> steps = new ArrayList<>();
            steps.add(Step.PREPARE);
            boolean abandon = rnd.nextDouble() < ABANDON;
            if (!abandon) {
                steps.add(Step.LAUNCH);
                if (rnd.nextDouble() < POLL) {
                    steps.add(Step.POLL);
                }
                if (rnd.nextDouble() < AWAIT) {
                    steps.add(Step.AWAIT);
                    if (rnd.nextDouble() < POLL_AFTER_AWAIT) {
                        steps.add(Step.POLL_DONE);
                    }
                }
            }
            steps.add(Step.FINALIZE);
            int[] threads = new int[steps.size()];
            for (int i = 0; i < threads.length; i++) {
                threads[i] = rnd.nextInt(THREADS);
            }
            return new Plan(List.copyOf(steps), threads, rnd.nextInt(INPUT_SETS), chance(rnd), chance(rnd),
                    chance(rnd), chance(rnd), chance(rnd), chance(rnd), chance(rnd), probe(rnd), probe(rnd),
                    probe(rnd));
        }

        private static boolean chance(SplittableRandom rnd) {
            return rnd.nextDouble() < REFUSAL;
        }

        private static Probe probe(SplittableRandom rnd) {
            boolean send = rnd.nextDouble() < PROBE;
            Probe p = new Probe(rnd.nextInt(THREADS), Op.values()[rnd.nextInt(Op.values().length)]);
            return send ? p : null;
        }

        boolean launches() {
            return steps.contains(Step.LAUNCH);
        }
    }

    /** One run of the stress. Its fields are touched by one thread at a time, handed on with its step. */
    private static final class StressRun {
        final int ordinal;
        final Plan plan;
        final float[] output = filled(N);
        TaskArgs args;
        PipelineSlotLease lease;
        NativeRun token;
        AcceptanceWord word;
        boolean launched;
        /** Guarded by the coordinator: where the run is, its next step, and whether that step waits. */
        Stage stage = Stage.PREPARING;
        int cursor;
        boolean parked;
        /** Set with the FINALIZE dispatch: the successor prepared behind this run, idle until it is finalized. */
        StressRun stagedSuccessor;

        StressRun(int ordinal, Plan plan) {
            this.ordinal = ordinal;
            this.plan = plan;
        }

        Step next() {
            return plan.steps().get(cursor);
        }

        @Override
        public String toString() {
            return "run " + ordinal + " " + stage + (cursor < plan.steps().size() ? " next " + next() : " done")
                    + (parked ? " (parked)" : "") + " " + token;
        }
    }

    /**
     * The coordinator: hands each run's next step to the thread its plan names and holds a
     * step back (parks it, no thread waits) while the chip would refuse it — a successor
     * is prepared only while its predecessor is launched and not being finalized, launched
     * only once the predecessor is finalized; a finalize waits while a successor is being
     * prepared. So every refusal the test expects is certain, and every other call must
     * succeed.
     */
    private static final class ChipStress {
        private static final Runnable STOP = () -> { };

        final ChipWorker chip;
        final ChipWorker other;
        final NativeRun foreign;
        final PipelineSlotPool pool;
        final boolean concurrent;
        final int total;
        final float[][] inputA = new float[INPUT_SETS][];
        final float[][] inputB = new float[INPUT_SETS][];
        final float[][] golden = new float[INPUT_SETS][];
        final AcceptanceWord[] words;
        final List<LinkedBlockingQueue<Runnable>> inboxes = new ArrayList<>();
        final List<Thread> threads = new ArrayList<>();
        final AtomicLongArray refusals = new AtomicLongArray(Refusal.values().length);
        final AtomicInteger abandoned = new AtomicInteger();
        /** Runs prepared while their predecessor was launched: staged successors. */
        final AtomicInteger staged = new AtomicInteger();
        final AtomicInteger threadChanges = new AtomicInteger();
        final AtomicLongArray stepsPerThread = new AtomicLongArray(THREADS * Step.values().length);
        final CountDownLatch done = new CountDownLatch(1);
        volatile NativeRun lastToken;

        // guarded by this
        private final SplittableRandom plans;
        private final ArrayDeque<StressRun> inFlight = new ArrayDeque<>();
        private int started;
        private int finished;
        private int pendingProbes;
        private Throwable failure;

        ChipStress(ChipWorker chip, ChipWorker other, NativeRun foreign, PipelineSlotPool pool, long seed, int total) {
            this.chip = chip;
            this.other = other;
            this.foreign = foreign;
            this.pool = pool;
            this.concurrent = chip.supportsOverlap();
            this.total = total;
            this.plans = new SplittableRandom(seed);
            for (int i = 0; i < INPUT_SETS; i++) {
                inputA[i] = random(N, seed * 31 + 2L * i);
                inputB[i] = random(N, seed * 31 + 2L * i + 1);
                golden[i] = ChipWorkerE2ETest.reference(inputA[i], inputB[i]);
            }
            words = new AcceptanceWord[pool.depth()];
            for (int i = 0; i < words.length; i++) {
                words[i] = AcceptanceWord.allocate(100 + i);
            }
            for (int i = 0; i < THREADS; i++) {
                inboxes.add(new LinkedBlockingQueue<>());
            }
        }

        void runToCompletion() throws Exception {
            for (int i = 0; i < THREADS; i++) {
                int index = i;
                Thread t = new Thread(() -> work(index), "stress-" + i);
                threads.add(t);
                t.start();
            }
            synchronized (this) {
                pump();
            }
            boolean completed = done.await(WAIT_SECONDS, TimeUnit.SECONDS);
            stopThreads();
            synchronized (this) {
                if (failure != null) {
                    throw new AssertionError("stress failed (" + state() + ")", failure);
                }
                assertThat(completed).as("every run and probe completed within %d s (%s)", WAIT_SECONDS, state())
                        .isTrue();
                assertThat(finished).isEqualTo(total);
            }
            for (int t = 0; t < THREADS; t++) {
                for (Step s : List.of(Step.PREPARE, Step.LAUNCH, Step.FINALIZE)) {
                    assertThat(stepsPerThread.get(t * Step.values().length + s.ordinal()))
                            .as("%s steps on thread %d", s, t).isPositive();
                }
            }
        }

        /** After the chip's close (which finalizes any run a failure left behind): the words are free. */
        void closeWords() {
            for (AcceptanceWord w : words) {
                w.close();
            }
        }

        void stopThreads() throws InterruptedException {
            for (LinkedBlockingQueue<Runnable> inbox : inboxes) {
                inbox.add(STOP);
            }
            for (Thread t : threads) {
                t.join(TimeUnit.SECONDS.toMillis(WAIT_SECONDS));
                assertThat(t.isAlive()).as("%s stopped", t.getName()).isFalse();
            }
            threads.clear();
        }

        private void work(int index) {
            LinkedBlockingQueue<Runnable> inbox = inboxes.get(index);
            try {
                for (Runnable task = inbox.take(); task != STOP; task = inbox.take()) {
                    task.run();
                }
            } catch (InterruptedException e) {
                fail(e);
            }
        }

        // ---- coordination (under this) -------------------------------------------------------

        private void pump() {
            for (StressRun r : inFlight) {
                if (r.parked && enabled(r)) {
                    r.parked = false;
                    dispatch(r);
                }
            }
            if (canStart()) {
                if (!inFlight.isEmpty()) {
                    staged.incrementAndGet();
                }
                StressRun r = new StressRun(started++, Plan.draw(plans.split()));
                inFlight.addLast(r);
                dispatch(r);
            }
        }

        private boolean canStart() {
            if (failure != null || started == total) {
                return false;
            }
            if (inFlight.isEmpty()) {
                return true;
            }
            // a successor only behind a launched predecessor that is not being finalized
            return concurrent && inFlight.size() == 1 && inFlight.peekFirst().stage == Stage.RUNNING;
        }

        private boolean enabled(StressRun r) {
            return switch (r.next()) {
                case LAUNCH -> inFlight.size() == 1; // the predecessor is finalized
                case FINALIZE -> inFlight.stream().noneMatch(o -> o.stage == Stage.PREPARING);
                default -> true;
            };
        }

        private void dispatch(StressRun r) {
            Step step = r.next();
            int thread = r.plan.threads()[r.cursor];
            if (step == Step.LAUNCH) {
                r.stage = Stage.LAUNCHING;
            } else if (step == Step.FINALIZE) {
                r.stage = Stage.FINALIZING;
                r.stagedSuccessor = inFlight.stream()
                        .filter(o -> o != r && o.stage == Stage.PREPARED && o.parked && o.next() == Step.LAUNCH)
                        .findFirst().orElse(null);
            }
            if (r.cursor > 0 && r.plan.threads()[r.cursor - 1] != thread) {
                threadChanges.incrementAndGet();
            }
            inboxes.get(thread).add(() -> execute(r, step, thread));
        }

        private synchronized void stepDone(StressRun r, Step step) {
            switch (step) {
                case PREPARE -> {
                    r.stage = Stage.PREPARED;
                    send(r.plan.foreignProbe(), r.token, Refusal.FOREIGN_TOKEN);
                    send(r.plan.crossProbe(), r.token, Refusal.TOKEN_ON_ANOTHER_CHIP);
                }
                case LAUNCH -> r.stage = Stage.RUNNING;
                case FINALIZE -> {
                    inFlight.remove(r);
                    finished++;
                    send(r.plan.staleProbe(), r.token, Refusal.STALE_TOKEN);
                }
                default -> { }
            }
            r.cursor++;
            if (r.cursor < r.plan.steps().size()) {
                if (enabled(r)) {
                    dispatch(r);
                } else {
                    r.parked = true;
                }
            }
            pump();
            checkDone();
        }

        private void send(Probe probe, NativeRun token, Refusal kind) {
            if (probe == null || failure != null) {
                return;
            }
            pendingProbes++;
            inboxes.get(probe.thread()).add(() -> {
                try {
                    ChipWorker target = kind == Refusal.TOKEN_ON_ANOTHER_CHIP ? other : chip;
                    NativeRun used = kind == Refusal.FOREIGN_TOKEN ? foreign : token;
                    refusedAsStale(target, probe.op(), used, kind);
                } catch (Throwable t) {
                    fail(new AssertionError(kind + " probe " + probe.op() + " of " + token, t));
                }
                probeDone();
            });
        }

        private synchronized void probeDone() {
            pendingProbes--;
            checkDone();
        }

        private void checkDone() {
            if (finished == total && pendingProbes == 0) {
                done.countDown();
            }
        }

        private synchronized void fail(Throwable t) {
            if (failure == null) {
                failure = t;
            } else if (failure != t) {
                failure.addSuppressed(t);
            }
            done.countDown();
        }

        private synchronized String state() {
            return "started " + started + ", finished " + finished + ", probes pending " + pendingProbes
                    + ", in flight " + inFlight;
        }

        // ---- the steps (on the plan's thread, no lock held) ---------------------------------------

        private void execute(StressRun r, Step step, int thread) {
            try {
                stepsPerThread.incrementAndGet(thread * Step.values().length + step.ordinal());
                switch (step) {
                    case PREPARE -> prepare(r);
                    case LAUNCH -> launch(r);
                    case POLL -> chip.poll(r.token);
                    case AWAIT -> chip.await(r.token);
                    case POLL_DONE -> assertThat(chip.poll(r.token)).as("poll after await").isTrue();
                    case FINALIZE -> finalizeRun(r);
                    default -> throw new AssertionError(step);
                }
            } catch (Throwable t) {
                fail(new AssertionError(step + " of " + r + " on thread " + thread, t));
                return;
            }
            stepDone(r, step);
        }

        private void prepare(StressRun r) {
            r.lease = pool.tryAcquire().orElseThrow(() -> new AssertionError("no free pipeline slot"));
            r.word = words[r.lease.slotId()];
            r.word.reset(); // the slot's previous run is finalized
            int input = r.plan.input();
            r.args = ChipWorkerE2ETest.chainArgs(inputA[input], inputB[input], r.output);
            long id = r.ordinal + 1L;
            if (r.plan.outsideLease()) {
                PipelineSlotLease outside = PipelineSlotLease.of(pool.depth(), r.lease.generation());
                assertThatThrownBy(() -> chip.prepare(CHAIN, r.args, STRESS_CONFIG, outside, id, id, r.word))
                        .isExactlyInstanceOf(IllegalArgumentException.class)
                        .hasMessageContaining("lease is outside the runtime PipelineContract");
                refused(Refusal.LEASE_OUTSIDE_CONTRACT);
            }
            if (r.plan.staleLease() && r.lease.generation() >= 3) {
                // the slot saw generation g-1 (the run before in this slot): g-2 is superseded
                PipelineSlotLease stale = PipelineSlotLease.of(r.lease.slotId(), r.lease.generation() - 2);
                assertThat(pool.owns(stale)).isFalse();
                assertThat(pool.release(stale)).as("a superseded lease releases nothing").isFalse();
                assertThatThrownBy(() -> chip.prepare(CHAIN, r.args, STRESS_CONFIG, stale, id, id, r.word))
                        .isExactlyInstanceOf(LeaseRejectedException.class)
                        .hasMessageContaining("lease generation is stale");
                assertThat(r.word.isCaptured()).as("a refused prepare captures no word").isFalse();
                refused(Refusal.STALE_LEASE_GENERATION);
            }
            r.token = chip.prepare(CHAIN, r.args, STRESS_CONFIG, r.lease, id, id, r.word);
            assertThat(r.word.value()).as("the word after prepare").isZero();
            lastToken = r.token;
        }

        private void launch(StressRun r) {
            if (r.plan.wrongPhaseBeforeLaunch()) {
                refusedAsStale(chip, Op.POLL, r.token, null);
                refusedAsStale(chip, Op.AWAIT, r.token, null);
                refused(Refusal.WRONG_PHASE_BEFORE_LAUNCH);
            }
            if (r.plan.occupiedSlot()) {
                long id = r.ordinal + 1L;
                TaskArgs spare = ChipWorkerE2ETest.chainArgs(inputA[0], inputB[0], filled(N));
                assertThatThrownBy(() -> chip.prepare(CHAIN, spare, STRESS_CONFIG, r.lease, id, id, null))
                        .isExactlyInstanceOf(ChipBusyException.class)
                        .hasMessageContaining("slot already owns an unfinished native run");
                refused(Refusal.SLOT_OCCUPIED);
            }
            chip.launch(r.token);
            r.launched = true;
            assertThat(r.word.value()).as("launch returned: the word is set").isEqualTo(r.word.acceptedValue());
            if (r.plan.secondLaunch()) {
                refusedAsStale(chip, Op.LAUNCH, r.token, Refusal.SECOND_LAUNCH);
            }
        }

        private void finalizeRun(StressRun r) {
            StressRun successor = r.stagedSuccessor;
            if (successor != null && r.plan.earlySuccessorLaunch()) {
                // the successor is prepared and idle (its launch waits for this finalize): this
                // run holds the chip, so its launch is refused before it starts and it stays prepared
                assertThatThrownBy(() -> chip.launch(successor.token))
                        .isExactlyInstanceOf(ChipBusyException.class)
                        .hasMessageContaining(successor.token.identity());
                assertThat(successor.word.value()).as("a refused launch never writes the word").isZero();
                refusedAsStale(chip, Op.POLL, successor.token, null);
                refused(Refusal.EARLY_SUCCESSOR_LAUNCH);
            }
            chip.finalizeRun(r.token);
            int input = r.plan.input();
            if (r.launched) {
                assertBitExact(r.output, golden[input]);
            } else {
                assertThat(r.output).as("a run finalized without launch writes nothing").containsOnly(SENTINEL);
                assertThat(r.word.value()).isZero();
                abandoned.incrementAndGet();
            }
            assertThat(r.word.isCaptured()).isFalse();
            if (r.plan.doubleFinalize()) {
                refusedAsStale(chip, Op.FINALIZE, r.token, Refusal.DOUBLE_FINALIZE);
            }
            r.args = null;
            assertThat(pool.release(r.lease)).isTrue(); // last: the slot's next run may start now
        }

        private void refusedAsStale(ChipWorker target, Op op, NativeRun token, Refusal kind) {
            assertThatThrownBy(() -> op.call(target, token))
                    .as("%s of %s", op, token)
                    .isExactlyInstanceOf(StaleRunException.class)
                    .hasMessageContaining(op.staleRefusal())
                    .hasMessageContaining(token.identity());
            if (kind != null) {
                refused(kind);
            }
        }

        private void refused(Refusal kind) {
            refusals.incrementAndGet(kind.ordinal());
        }

        Map<Refusal, Long> refusalCounts() {
            Map<Refusal, Long> counts = new EnumMap<>(Refusal.class);
            for (Refusal r : Refusal.values()) {
                counts.put(r, refusals.get(r.ordinal()));
            }
            return counts;
        }

        void assertEveryRefusalWasExercised(boolean staging) {
            if (staging) {
                assertThat(staged.get()).as("successors staged while their predecessor ran").isPositive();
            } else {
                assertThat(staged.get()).as("no staging without a concurrent prepare").isZero();
            }
            for (Refusal r : Refusal.values()) {
                if (r == Refusal.EARLY_SUCCESSOR_LAUNCH && !staging) {
                    assertThat(refusals.get(r.ordinal())).as("%s without staging", r).isZero();
                } else {
                    assertThat(refusals.get(r.ordinal())).as("%s exercised", r).isPositive();
                }
            }
        }
    }

    // ==== the Worker flavour =======================================================================

    private static final int WORKER_ITERATIONS = 4;
    private static final int DRAIN_EVERY = 8;

    /** background × close mid-way: every combination once per library, in an order from the seed. */
    private record Shape(boolean background, boolean closeMidway) {
    }

    @ParameterizedTest
    @MethodSource("allVariants")
    void workerFuturesAllCompleteWithCloseInTheMiddle(Variant variant) throws Exception {
        long seed = seedOf(variant);
        withSeed("Worker", variant, seed, () -> workerStress(variant, seed));
    }

    private static void workerStress(Variant variant, long seed) throws Exception {
        SplittableRandom rnd = new SplittableRandom(~seed);
        List<Shape> shapes = new ArrayList<>(List.of(new Shape(true, true), new Shape(true, false),
                new Shape(false, true), new Shape(false, false)));
        Collections.shuffle(shapes, new java.util.Random(rnd.nextLong()));
        StringBuilder summary = new StringBuilder();
        long start = System.nanoTime();
        NativeThreads before = NativeThreads.now();
        Soak soak = Soak.start("worker", variant, seed);
        long iterations = 0;
        for (int iteration = 0; iteration < WORKER_ITERATIONS || soak.goOn(); iteration++) {
            String what = workerIteration(variant, shapes.get(iteration % shapes.size()), rnd.split());
            iterations++;
            if (!soak.on()) {
                summary.append(what).append(iteration + 1 < WORKER_ITERATIONS ? "; " : "");
            }
            // between iterations every Worker is closed: what stays committed is the driver's (0 on sim)
            soak.sample(iterations, driverMemory(variant), NativeThreads.now().minus(before));
        }
        if (!soak.on()) {
            FIGURES.info(String.format(java.util.Locale.ROOT, "ptorun: %s Worker stress, seed %d, %.2f s: %s", variant, seed,
                    (System.nanoTime() - start) / 1e9, summary));
        }
        soak.finish(iterations, driverMemory(variant), NativeThreads.now().minus(before));
    }

    private static long driverMemory(Variant variant) {
        return variant.platform() == Variant.Platform.ONBOARD ? FAULTS.stats().memoryCommitted() : 0;
    }

    private static String workerIteration(Variant variant, Shape shape, SplittableRandom rnd) throws Exception {
        ShutdownPolicy policy = ShutdownPolicy.values()[rnd.nextInt(ShutdownPolicy.values().length)];
        ChipSelection selection = ChipSelection.values()[rnd.nextInt(ChipSelection.values().length)];
        int enqueuers = 2 + rnd.nextInt(3);
        int perEnqueuer = 60 + rnd.nextInt(60);
        int total = enqueuers * perEnqueuer;
        // caller-driven: each enqueuer drains every DRAIN_EVERY runs, so this capacity never blocks
        int capacity = shape.background() ? 4 + rnd.nextInt(29) : enqueuers * DRAIN_EVERY;
        int closeAfter = total / 10 + rnd.nextInt(total * 8 / 10);
        String what = (shape.background() ? "background" : "caller-driven") + " " + policy + " " + selection + " "
                + enqueuers + "x" + perEnqueuer + " capacity " + capacity
                + (shape.closeMidway() ? " close after " + closeAfter : "");

        DriverStats driverBefore = FAULTS.stats();
        NativeThreads before = NativeThreads.now();
        Worker worker = Worker.builder().variant(variant).devices(0, 1).background(shape.background())
                .queueCapacity(capacity).shutdownPolicy(policy).chipSelection(selection).build();
        List<Thread> threads = new ArrayList<>();
        try {
            worker.register(CHAIN, ChipWorkerE2ETest.vectorChain(N)).get(WAIT_SECONDS, TimeUnit.SECONDS);
            worker.register(WorkerE2ETest.PACED, WorkerE2ETest.paced()).get(WAIT_SECONDS, TimeUnit.SECONDS);
            NativeThreads opened = NativeThreads.now().minus(before);
            List<Long> idle = warmUp(variant, worker);
            NativeThreads warm = NativeThreads.now().minus(before);
            assertThat(warm.ids(NativeThreads.EXECUTOR)).as("%s: executor threads start with the chips", what)
                    .isNotEmpty().isEqualTo(opened.ids(NativeThreads.EXECUTOR));
            assertThat(warm.ids(NativeThreads.SIM_DEVICE)).isEqualTo(opened.ids(NativeThreads.SIM_DEVICE));

            ConcurrentLinkedQueue<WorkerE2ETest.Job> jobs = new ConcurrentLinkedQueue<>();
            CountDownLatch admitted = new CountDownLatch(closeAfter);
            AtomicBoolean closeIssued = new AtomicBoolean();
            AtomicInteger refusedAfterClose = new AtomicInteger();
            AtomicReference<Throwable> error = new AtomicReference<>();
            for (int e = 0; e < enqueuers; e++) {
                long seedBase = rnd.nextLong();
                Thread t = new Thread(() -> {
                    try {
                        for (int i = 0; i < perEnqueuer; i++) {
                            try {
                                jobs.add(WorkerE2ETest.enqueueChain(worker, seedBase + i));
                            } catch (IllegalStateException closed) {
                                assertThat(closeIssued.get()).as("refused only once close() began").isTrue();
                                refusedAfterClose.incrementAndGet();
                                return;
                            }
                            admitted.countDown();
                            if (!shape.background() && (i + 1) % DRAIN_EVERY == 0) {
                                worker.drain();
                            }
                        }
                    } catch (Throwable t2) {
                        error.compareAndSet(null, t2);
                    }
                }, "enqueuer-" + e);
                threads.add(t);
            }
            if (shape.closeMidway()) {
                threads.add(new Thread(() -> {
                    try {
                        if (!admitted.await(WAIT_SECONDS, TimeUnit.SECONDS)) {
                            throw new AssertionError("the enqueuers never admitted " + closeAfter + " runs");
                        }
                        closeIssued.set(true);
                        worker.close();
                    } catch (Throwable t2) {
                        error.compareAndSet(null, t2);
                    }
                }, "closer"));
            }
            threads.forEach(Thread::start);
            for (Thread t : threads) {
                t.join(TimeUnit.SECONDS.toMillis(WAIT_SECONDS));
                assertThat(t.isAlive()).as("%s: %s finished (no enqueue, drain or close hangs)", what, t.getName())
                        .isFalse();
            }
            if (error.get() != null) {
                throw new AssertionError(what, error.get());
            }
            if (!shape.closeMidway()) {
                worker.drain();
                assertThat(worker.health()).extracting(ChipHealth::outstanding).as(what).containsOnly(0L);
                assertThat(worker.health().stream().map(ChipHealth::committedDeviceMemory).toList())
                        .as("%s: committed device memory after the runs", what).isEqualTo(idle);
                NativeThreads.now().minus(before).assertSameAs(warm, 2, what + ": after the runs");
            }
            worker.close();

            int cancelled = 0;
            for (WorkerE2ETest.Job job : jobs) {
                assertThat(job.ticket().isDone()).as("%s: %s complete after close", what, job.ticket()).isTrue();
                if (job.ticket().result().isCancelled()) {
                    cancelled++;
                    assertThat(job.f()).containsOnly(SENTINEL);
                } else {
                    RunResult result = job.ticket().result().join();
                    assertThat(result.dispatchId()).isEqualTo(job.ticket().dispatchId());
                    job.assertGolden();
                    assertThat(job.ticket().isAccepted()).isTrue();
                }
            }
            if (policy == ShutdownPolicy.DRAIN || !shape.closeMidway()) {
                assertThat(cancelled).as("%s: nothing cancelled", what).isZero();
            }
            assertThat(worker.health().stream().map(ChipHealth::committedDeviceMemory).toList())
                    .as("%s: committed device memory once the last run was finalized", what).isEqualTo(idle);
            assertThat(NativeThreads.now().minus(before).total())
                    .as("%s: native threads of the chips left after close", what).isZero();
            if (variant.platform() == Variant.Platform.ONBOARD) {
                assertThat(FAULTS.stats()).as("%s: emulated driver accounting after close", what)
                        .isEqualTo(driverBefore);
            }
            return what + ": " + jobs.size() + " admitted, " + cancelled + " cancelled, " + refusedAfterClose.get()
                    + " enqueues refused after close";
        } finally {
            worker.close();
            for (Thread t : threads) {
                t.join(TimeUnit.SECONDS.toMillis(WAIT_SECONDS));
            }
        }
    }

    /**
     * Runs until each chip has run the chain in every slot it uses (both where the chip
     * overlaps — hbg, and a2a3 trb, whose runs here all have one ring sizing — as a run
     * enqueued while a 20 ms paced run executes is staged in the other slot; slot 0 on a5
     * trb): arenas and retained buffers belong to the chip and its slots, so the baseline
     * is the idle chip once every slot was used. Returns that baseline per chip.
     */
    private static List<Long> warmUp(Variant variant, Worker worker) throws Exception {
        boolean overlaps = variant.runtime() == Variant.RuntimeKind.HBG || variant.arch() == Variant.Arch.A2A3;
        Set<Integer> slotsUsed = overlaps ? Set.of(0, 1) : Set.of(0);
        Map<Integer, Set<Integer>> seen = new TreeMap<>();
        for (int round = 0; round < 10; round++) {
            List<WorkerE2ETest.PacedJob> slow = new ArrayList<>();
            List<WorkerE2ETest.Job> chains = new ArrayList<>();
            for (int i = 0; i < 2; i++) {
                slow.add(WorkerE2ETest.enqueuePaced(worker, 90 + i, 0, 20_000));
            }
            for (int i = 0; i < 4; i++) {
                chains.add(WorkerE2ETest.enqueueChain(worker, 100 + i));
            }
            worker.drain();
            slow.forEach(WorkerE2ETest.PacedJob::assertGolden);
            for (WorkerE2ETest.Job job : chains) {
                job.assertGolden();
                RunResult r = job.ticket().result().join();
                seen.computeIfAbsent(r.deviceId(), d -> new TreeSet<>()).add(r.run().slot());
            }
            if (seen.keySet().equals(Set.of(0, 1)) && seen.values().stream().allMatch(slotsUsed::equals)) {
                return worker.health().stream().map(ChipHealth::committedDeviceMemory).toList();
            }
        }
        throw new AssertionError("the warm-up never ran the chain in slots " + slotsUsed + " of both chips: " + seen);
    }

    // ==== soak ====================================================================================

    /**
     * The soak mode's clock and report. Off ({@code ptorun.soakMinutes} unset or 0): one
     * round, nothing sampled or written. On: rounds go on until the minutes are over; after
     * each round a sample is taken — resident memory (VmRSS after {@code malloc_trim}),
     * device memory committed (the chips', or the driver's between Worker iterations),
     * process threads and ptorun's native threads (beyond those before the test) — written
     * to {@code target/soak/stress-<flavour>-<variant>.csv} and, every 1/20 of the soak
     * (at least every 5 s), printed. The assertions are the normal test's, after every
     * round; resident memory is reported, not asserted (the heap and the JIT grow it).
     */
    private static final class Soak {
        private static final long ROUND_SEED_STEP = 0x9E37_79B9_7F4A_7C15L;

        private final String flavour;
        private final Variant variant;
        private final long seed;
        private final boolean on;
        private final long startNanos;
        private final long deadlineNanos;
        private final long intervalNanos;
        private final List<String> rows = new ArrayList<>();
        private final List<long[]> rss = new ArrayList<>();
        private long nextPrint;
        private long rounds;
        private long firstRss = -1;
        private long firstCommitted;
        private long firstProcessThreads;
        private final Path file;

        private Soak(String flavour, Variant variant, long seed) {
            this.flavour = flavour;
            this.variant = variant;
            this.seed = seed;
            this.on = SOAK_MINUTES > 0;
            this.startNanos = System.nanoTime();
            long soakNanos = (long) (SOAK_MINUTES * 60e9);
            this.deadlineNanos = startNanos + soakNanos;
            this.intervalNanos = Math.max(5_000_000_000L, soakNanos / 20);
            this.nextPrint = startNanos;
            this.file = Path.of(System.getProperty("ptorun.soakDir", "target/soak"),
                    "stress-" + flavour + "-" + variant.toString().replace('/', '_') + ".csv");
        }

        static Soak start(String flavour, Variant variant, long seed) {
            Soak soak = new Soak(flavour, variant, seed);
            if (soak.on) {
                System.out.printf(java.util.Locale.ROOT, "ptorun soak: %s %s stress for %.1f min, seed %d, report %s%n",
                        variant, flavour, SOAK_MINUTES, seed, soak.file);
            }
            return soak;
        }

        /** Round 0 is the normal test's seed; a later round's seed reruns it alone with -Dptorun.stressSeed. */
        static long roundSeed(long seed, int round) {
            return seed + round * ROUND_SEED_STEP;
        }

        boolean on() {
            return on;
        }

        /** Another round? Only in soak mode, until the minutes are over. */
        boolean goOn() {
            return on && System.nanoTime() < deadlineNanos;
        }

        AssertionError failedRound(int round, long roundSeed, Throwable t) {
            if (!on) {
                return t instanceof AssertionError a ? a : new AssertionError(t);
            }
            return new AssertionError("soak round " + round + " failed with seed " + roundSeed
                    + " (to rerun that round alone: -Dptorun.stressSeed=" + roundSeed + ")", t);
        }

        /** After a round: {@code done} runs (or Worker iterations) so far. */
        void sample(long done, long committed, NativeThreads threads) {
            if (!on) {
                return;
            }
            rounds++;
            long now = System.nanoTime();
            long rssKiB = org.ptorun.internal.ProcessStatus.residentKiB();
            long processThreads = org.ptorun.internal.ProcessStatus.threads();
            if (firstRss < 0) {
                firstRss = rssKiB;
                firstCommitted = committed;
                firstProcessThreads = processThreads;
            }
            double seconds = (now - startNanos) / 1e9;
            rss.add(new long[] {now, rssKiB});
            Map<String, Integer> counts = threads.counts();
            rows.add(String.format(java.util.Locale.ROOT, "%.1f,%d,%d,%d,%d,%d,%d,%d", seconds, rounds, done, rssKiB,
                    committed, processThreads, counts.get(NativeThreads.EXECUTOR), counts.get(NativeThreads.SIM_DEVICE))
                    + "," + counts.get(NativeThreads.EMULATED_DRIVER));
            if (now >= nextPrint) {
                nextPrint = now + intervalNanos;
                System.out.printf(java.util.Locale.ROOT, "ptorun soak: %s %s %6.1f s: %d rounds, %d %s; VmRSS %d kB"
                                + " (%+d kB since the first round); device memory committed %d (%+d); threads %d"
                                + " (%+d), ptorun native %s%n",
                        variant, flavour, seconds, rounds, done, unit(), rssKiB, rssKiB - firstRss, committed,
                        committed - firstCommitted, processThreads, processThreads - firstProcessThreads, counts);
            }
        }

        /** After close (the normal assertions passed): the summary line and the report file. */
        void finish(long done, long committed, NativeThreads threadsLeft) {
            if (!on) {
                return;
            }
            long rssKiB = org.ptorun.internal.ProcessStatus.residentKiB();
            long processThreads = org.ptorun.internal.ProcessStatus.threads();
            long halfway = rss.isEmpty() ? rssKiB : rss.get(rss.size() / 2)[1];
            long last = rss.isEmpty() ? rssKiB : rss.get(rss.size() - 1)[1];
            long maxRss = rss.stream().mapToLong(r -> r[1]).max().orElse(rssKiB);
            System.out.printf(java.util.Locale.ROOT, "ptorun soak: %s %s done, seed %d: %.1f s, %d rounds, %d %s;"
                            + " VmRSS first round %d kB, last %d kB (%+d, %+d over the second half, max %d);"
                            + " after close: VmRSS %d kB, device memory committed %d, threads %d (%+d vs the"
                            + " first round), ptorun native threads left %d%n",
                    variant, flavour, seed, (System.nanoTime() - startNanos) / 1e9, rounds, done, unit(), firstRss,
                    last, last - firstRss, last - halfway, maxRss, rssKiB, committed, processThreads,
                    processThreads - firstProcessThreads, threadsLeft.total());
            try {
                Files.createDirectories(file.getParent());
                List<String> lines = new ArrayList<>();
                lines.add("seconds,rounds," + unit() + ",vmrss_kib,device_committed_bytes,process_threads,"
                        + NativeThreads.EXECUTOR + "," + NativeThreads.SIM_DEVICE + "," + NativeThreads.EMULATED_DRIVER);
                lines.addAll(rows);
                Files.write(file, lines);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }

        private String unit() {
            return flavour.equals("worker") ? "iterations" : "runs";
        }
    }

    // ==== native threads ===========================================================================

    /**
     * ptorun's native threads in this process by name — executor ({@code ptorun-exec}), sim
     * device ({@code ptorun-simdev}) and emulated driver ({@code ptorun-emudrv}) threads,
     * named with pthread_setname_np — as their thread ids from /proc/self/task/<tid>/comm.
     */
    record NativeThreads(Map<String, Set<Long>> byName) {

        static final String EXECUTOR = "ptorun-exec";
        static final String SIM_DEVICE = "ptorun-simdev";
        static final String EMULATED_DRIVER = "ptorun-emudrv";
        static final List<String> NAMES = List.of(EXECUTOR, SIM_DEVICE, EMULATED_DRIVER);
        /**
         * The emulated driver's threads per device at most (emudrv.h): 64 participation
         * threads (EMU_MAX_PARTICIPATION_THREADS, all started by the device's first launch)
         * and 64 stream engines (EMU_MAX_ENGINES, started when more streams have work than
         * engines are idle; in practice two or three).
         */
        static final int EMULATED_DRIVER_PER_DEVICE = 64 + 64;

        static NativeThreads now() {
            Map<String, Set<Long>> byName = new TreeMap<>();
            NAMES.forEach(n -> byName.put(n, new TreeSet<>()));
            // this JVM's, and in process isolation its chip hosts' (a chip's threads live there)
            List<Path> taskDirs = new java.util.ArrayList<>(List.of(Path.of("/proc/self/task")));
            for (long pid : ProcessIsolationE2ETest.chipHosts()) {
                taskDirs.add(Path.of("/proc/" + pid + "/task"));
            }
            for (Path taskDir : taskDirs) {
                addThreads(taskDir, byName);
            }
            return new NativeThreads(byName);
        }

        private static void addThreads(Path taskDir, Map<String, Set<Long>> byName) {
            try (DirectoryStream<Path> tasks = Files.newDirectoryStream(taskDir)) {
                for (Path task : tasks) {
                    String name;
                    try {
                        name = Files.readString(task.resolve("comm")).strip();
                    } catch (NoSuchFileException exited) {
                        continue;
                    } catch (IOException e) {
                        // a thread that exits between the listing and the read: its comm is
                        // gone (above) or, while it is being reaped, reads fail with ESRCH
                        // (the soak met it after a few hundred Worker iterations)
                        if ("No such process".equals(e.getMessage()) || !Files.exists(task)) {
                            continue;
                        }
                        throw e;
                    }
                    Set<Long> ids = byName.get(name);
                    if (ids != null) {
                        ids.add(Long.parseLong(task.getFileName().toString()));
                    }
                }
            } catch (NoSuchFileException gone) {
                // a chip host that exited since it was listed has no threads
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }

        Set<Long> ids(String name) {
            return byName.get(name);
        }

        /**
         * These threads, taken after a stress, against {@code baseline}, taken after the
         * warm-up: the executor and sim device threads are exactly the same threads (they
         * start with the context and live as long as it). The emulated driver starts its
         * threads on demand — participation threads at a device's first launch, a stream
         * engine whenever more streams have work than engines are idle — and keeps them
         * until the device closes, so the stress may have needed an engine the warm-up did
         * not: every thread of the baseline is still there (none ended or was replaced)
         * and the count stays within the driver's caps per device.
         */
        void assertSameAs(NativeThreads baseline, int devices, String when) {
            assertThat(ids(EXECUTOR)).as("%s: executor threads (baseline %s)", when, baseline)
                    .isEqualTo(baseline.ids(EXECUTOR));
            assertThat(ids(SIM_DEVICE)).as("%s: sim device threads (baseline %s)", when, baseline)
                    .isEqualTo(baseline.ids(SIM_DEVICE));
            assertThat(ids(EMULATED_DRIVER)).as("%s: emulated driver threads (baseline %s)", when, baseline)
                    .containsAll(baseline.ids(EMULATED_DRIVER))
                    .hasSizeLessThanOrEqualTo(devices * EMULATED_DRIVER_PER_DEVICE);
        }


        /** The threads here that {@code earlier} did not have. */
        NativeThreads minus(NativeThreads earlier) {
            Map<String, Set<Long>> out = new TreeMap<>();
            byName.forEach((name, ids) -> {
                Set<Long> fresh = new TreeSet<>(ids);
                fresh.removeAll(earlier.ids(name));
                out.put(name, fresh);
            });
            return new NativeThreads(out);
        }

        int total() {
            return byName.values().stream().mapToInt(Set::size).sum();
        }

        Map<String, Integer> counts() {
            return byName.entrySet().stream().collect(Collectors.toMap(Map.Entry::getKey, e -> e.getValue().size(),
                    (x, y) -> x, TreeMap::new));
        }

        @Override
        public String toString() {
            return counts().toString();
        }
    }
}

package org.ptorun;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.ptorun.LifecycleStressE2ETest.NativeThreads;
import org.ptorun.callable.ChipCallable;
import org.ptorun.callable.Direction;
import org.ptorun.testing.DriverStats;
import org.ptorun.testing.EmulatedFaults;
import org.ptorun.worker.CollectiveStep;
import org.ptorun.worker.RunTicket;
import org.ptorun.worker.Worker;

/**
 * The close-race matrix (docs/reliability.md, Lifetimes), on all eight libraries: for each
 * resource whose memory a call can touch — a device buffer, a communication group with its
 * windows, the chip — and each operation that uses it, a closer thread closes (frees) a
 * fresh resource while the test thread performs the operation, the two started together
 * with a random offset either way. Every outcome must be whole (the copy moved the right
 * bytes, the run computed the right result) or a precise refusal (closed, or the close
 * refused naming the run that holds the resource), never a crash or a wrong byte; after
 * each pair the device memory, the ptorun native threads, /dev/shm and, onboard, the
 * emulated driver's counters are back at their baseline.
 *
 * <p>Races per pair and library: {@code -Dptorun.closeRaces=N} (the soak knob; .ci/run
 * runs 10 000); the build runs the counts of {@link #racesOf}.
 */
class CloseRaceMatrixE2ETest {

    private static final int COPY = 3;
    private static final int ALLREDUCE = 4;
    private static final int N = 64;
    private static final long BYTES = 4L * N;
    private static final float[] DATA = SimE2E.random(N, 2024);

    enum Resource { BUFFER, GROUP, CHIP }

    enum Op { COPY_TO, COPY_FROM, PREPARE, LAUNCH, RUN, ENQUEUE, COLLECTIVE }

    /** The operations that use each resource. */
    private static final Map<Resource, List<Op>> PAIRS = new EnumMap<>(Map.of(
            Resource.BUFFER, List.of(Op.COPY_TO, Op.COPY_FROM, Op.PREPARE, Op.LAUNCH, Op.RUN, Op.ENQUEUE),
            Resource.GROUP, List.of(Op.COPY_TO, Op.COPY_FROM, Op.PREPARE, Op.LAUNCH, Op.RUN, Op.ENQUEUE,
                    Op.COLLECTIVE),
            Resource.CHIP, List.of(Op.COPY_TO, Op.COPY_FROM, Op.PREPARE, Op.LAUNCH, Op.RUN)));

    /**
     * The build's races per pair and library: 10 000 for a buffer (about 0.1 ms a race),
     * 2 000 for a group (0.3 ms: each race opens one), 300 for a chip (1–2 ms: each race
     * opens one). CI runs 10 000 of every pair with the soak knob (.ci/run).
     */
    static int racesOf(Resource resource) {
        Integer soak = Integer.getInteger("ptorun.closeRaces");
        if (soak != null) {
            return soak;
        }
        return switch (resource) {
            case BUFFER -> 10_000;
            case GROUP -> 2_000;
            case CHIP -> 300;
        };
    }

    static Stream<Arguments> cases() {
        List<Arguments> cases = new ArrayList<>();
        for (Variant v : SimE2E.allVariants()) {
            for (Resource r : Resource.values()) {
                cases.add(Arguments.of(v, r));
            }
        }
        return cases.stream();
    }

    private static ChipCallable copy() {
        return CommCollectivesE2ETest.single("vcopy", List.of(Direction.IN, Direction.OUT), 0,
                new long[] {BYTES, BYTES});
    }

    private static ChipCallable allreduce() {
        return CommCollectivesE2ETest.single("allreduce_sum", List.of(Direction.INOUT), 1, new long[] {BYTES});
    }

    /** What one race ended as. */
    enum Outcome { WHOLE, REFUSED }

    @ParameterizedTest
    @MethodSource("cases")
    void closeRacesEveryOperationThatUsesTheResource(Variant variant, Resource resource, @TempDir Path dir)
            throws Exception {
        HostRuntime runtime = HostRuntime.load(variant);
        EmulatedFaults driver = variant.platform() == Variant.Platform.ONBOARD ? EmulatedFaults.of(runtime) : null;
        DriverStats driverBefore = driver == null ? null : driver.stats();
        NativeThreads threadsBefore = NativeThreads.now();
        ExecutorService closer = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "close-racer");
            t.setDaemon(true);
            return t;
        });
        try (Harness h = new Harness(runtime, dir)) {
            for (Op op : PAIRS.get(resource)) {
                SplittableRandom random = new SplittableRandom(Long.getLong("ptorun.closeRaceSeed", 11) ^ op.ordinal());
                if (op == Op.COLLECTIVE) {
                    // the allreduce program's first whole run records its graph, the callable's
                    // until it is unregistered (docs/recorded-graphs.md): part of the baseline
                    for (int i = 0; i < 50 && h.race(resource, op, random, closer) != Outcome.WHOLE; i++) {
                        // a close that came first refused the run: nothing was recorded yet
                    }
                }
                long baseline = h.committed();
                Map<Outcome, Integer> seen = new EnumMap<>(Outcome.class);
                for (int i = 0; i < racesOf(resource); i++) {
                    Outcome o = h.race(resource, op, random, closer);
                    seen.merge(o, 1, Integer::sum);
                }
                assertThat(h.committed()).as(resource + " × " + op + ": device memory back at its baseline")
                        .isEqualTo(baseline);
                assertThat(CommMultiProcessE2ETest.leftInDevShm()).as(resource + " × " + op + ": /dev/shm").isEmpty();
                assertThat(seen).as(resource + " × " + op + " outcomes").isNotEmpty();
            }
        } finally {
            closer.shutdownNow();
            closer.awaitTermination(60, TimeUnit.SECONDS);
        }
        assertThat(NativeThreads.now().minus(threadsBefore).total()).as("ptorun native threads left").isZero();
        if (driver != null) {
            assertThat(driver.stats()).as("the emulated driver's counters").isEqualTo(driverBefore);
        }
    }

    /** A long-lived chip and Worker the races use; fresh resources are made per race. */
    private static final class Harness implements AutoCloseable {
        final HostRuntime runtime;
        final Path dir;
        final ChipWorker chip;
        final Worker worker;
        /** A one-rank group over the Worker's chip: how the test reaches that chip's memory. */
        final CommGroup workerGroup;
        final ChipWorker workerChip;
        final PipelineSlotLease lease = PipelineSlotLease.of(0, 1);
        final DeviceBuffer source;
        final DeviceBuffer workerSource;
        int groups;

        Harness(HostRuntime runtime, Path dir) throws Exception {
            this.runtime = runtime;
            this.dir = dir;
            this.chip = ChipWorker.open(runtime, 0);
            chip.registerCallable(COPY, copy());
            this.source = chip.malloc(BYTES);
            chip.copyTo(source, DATA);
            this.worker = Worker.builder().runtime(runtime).devices(1).queueCapacity(8).build();
            worker.register(COPY, copy()).get(60, TimeUnit.SECONDS);
            worker.register(ALLREDUCE, allreduce()).get(60, TimeUnit.SECONDS);
            this.workerGroup = worker.openCommGroup(dir.resolve("worker-rootinfo"), Duration.ofSeconds(30));
            this.workerChip = workerGroup.rank(0).chip();
            this.workerSource = workerChip.malloc(BYTES);
            workerChip.copyTo(workerSource, DATA);
            warmUp();
        }

        /** Runs on every bank first, so the arenas (and recorded graphs) they commit once are part of the baseline. */
        private void warmUp() throws Exception {
            DeviceBuffer to = chip.malloc(BYTES);
            DeviceBuffer workerTo = workerChip.malloc(BYTES);
            for (int i = 0; i < 2 * PipelineContract.MAX_DEPTH; i++) {
                NativeRun run = prepareCopy(chip, source, to);
                chip.launch(run);
                chip.finalizeRun(run);
                chip.run(COPY, copyArgs(source, to), CallConfig.DEFAULT);
                worker.enqueue(COPY, copyArgs(workerSource, workerTo), CallConfig.DEFAULT);
            }
            assertThat(worker.drain().allSucceeded()).isTrue();
            to.close();
            workerTo.close();
            // and one collective: its callable's first run records its graph (hbg), which stays
            // committed with the callable (docs/recorded-graphs.md)
            CommGroup group = worker.openCommGroup(dir.resolve("rootinfo-warm-up"), Duration.ofSeconds(30));
            group.allocWindows(4096);
            DeviceBuffer slice = group.rank(0).windowSlice(BYTES, BYTES);
            workerChip.copyTo(slice, DATA);
            long comm = group.rank(0).deviceContext();
            CollectiveStep step = worker.enqueueCollective(group, ALLREDUCE,
                    r -> new TaskArgs().tensor(Tensor.of(slice, DType.F32)).scalar(comm), CallConfig.DEFAULT);
            assertThat(worker.drain().allSucceeded()).isTrue();
            step.result(0).get(60, TimeUnit.SECONDS);
            group.close();
        }

        long committed() {
            return chip.committedDeviceMemory() + worker.committedDeviceMemory();
        }

        /** One race of closing a fresh {@code resource} against {@code op}. */
        Outcome race(Resource resource, Op op, SplittableRandom random, ExecutorService closer) throws Exception {
            return switch (resource) {
                case BUFFER -> raceBuffer(op, random, closer);
                case GROUP -> raceGroup(op, random, closer);
                case CHIP -> raceChip(op, random, closer);
            };
        }

        // ---- a device buffer freed --------------------------------------------------------------

        private Outcome raceBuffer(Op op, SplittableRandom random, ExecutorService closer) throws Exception {
            boolean onWorker = op == Op.ENQUEUE;
            ChipWorker c = onWorker ? workerChip : chip;
            DeviceBuffer buffer = c.malloc(BYTES);
            c.copyTo(buffer, DATA);
            NativeRun prepared = op == Op.LAUNCH ? prepareCopy(chip, source, buffer) : null;
            Closing closing = closeAsync(closer, random, buffer::close);
            Outcome outcome = operate(op, c, onWorker ? workerSource : source, buffer, prepared, random);
            Throwable closeFailure = closing.await();
            if (closeFailure != null) {
                // refused: a run held the buffer, and the refusal says so
                assertThat(closeFailure).isInstanceOf(IllegalStateException.class)
                        .hasMessageContaining("not yet finalized").hasMessageContaining("run_id=");
                assertThat(outcome).as("the close was refused because the run held the buffer").isEqualTo(Outcome.WHOLE);
                buffer.close();
            }
            assertThat(buffer.isClosed()).isTrue();
            return outcome;
        }

        // ---- a communication group closed ---------------------------------------------------------

        private Outcome raceGroup(Op op, SplittableRandom random, ExecutorService closer) throws Exception {
            boolean onWorker = op == Op.ENQUEUE || op == Op.COLLECTIVE;
            ChipWorker c = onWorker ? workerChip : chip;
            CommGroup group = onWorker
                    ? worker.openCommGroup(dir.resolve("rootinfo-" + groups++), Duration.ofSeconds(30))
                    : CommGroup.open(List.of(c), dir.resolve("rootinfo-" + groups++), Duration.ofSeconds(30));
            group.allocWindows(4096);
            DeviceBuffer slice = group.rank(0).windowSlice(BYTES, BYTES);
            c.copyTo(slice, DATA);
            long comm = group.rank(0).deviceContext();
            NativeRun prepared = op == Op.LAUNCH ? prepareCopy(chip, source, slice) : null;
            Closing closing = closeAsync(closer, random, group::close);
            Outcome outcome = op == Op.COLLECTIVE
                    ? collective(group, slice, comm, random)
                    : operate(op, c, onWorker ? workerSource : source, slice, prepared, random);
            Throwable closeFailure = closing.await();
            if (closeFailure != null) {
                assertThat(closeFailure).isInstanceOf(CommException.class).hasMessageContaining("run_id=")
                        .hasMessageContaining("not yet finalized");
                assertThat(((CommException) closeFailure).code()).isEqualTo(PtoError.BUSY.code());
                assertThat(outcome).isEqualTo(Outcome.WHOLE);
                if (op != Op.COPY_TO) { // the window still holds what was copied in (or the run wrote)
                    float[] out = new float[N];
                    c.copyFrom(slice, out);
                    SimE2E.assertBitExact(out, DATA);
                }
                group.close();
            }
            assertThat(group.isClosed()).isTrue();
            assertThat(slice.isClosed()).isTrue();
            return outcome;
        }

        /**
         * A one-rank allreduce over the window (the sum of one rank is its own data: the window
         * keeps its bytes, checked by the caller while the group is open).
         */
        private Outcome collective(CommGroup group, DeviceBuffer slice, long comm, SplittableRandom random)
                throws Exception {
            jitter(random);
            CollectiveStep step;
            try {
                step = worker.enqueueCollective(group, ALLREDUCE,
                        r -> new TaskArgs().tensor(Tensor.of(slice, DType.F32)).scalar(comm), CallConfig.DEFAULT);
            } catch (IllegalStateException e) {
                assertThat(e).hasMessageContaining(group.toString());
                return Outcome.REFUSED;
            }
            worker.drain();
            step.result(0).get(60, TimeUnit.SECONDS);
            return Outcome.WHOLE;
        }

        // ---- the chip closed ------------------------------------------------------------------------

        private Outcome raceChip(Op op, SplittableRandom random, ExecutorService closer) throws Exception {
            ChipWorker c = ChipWorker.open(runtime, 2);
            DeviceBuffer from = null;
            DeviceBuffer to = null;
            try {
                c.registerCallable(COPY, copy());
                from = c.malloc(BYTES);
                to = c.malloc(BYTES);
                c.copyTo(from, DATA);
                c.copyTo(to, DATA);
                NativeRun prepared = op == Op.LAUNCH ? prepareCopy(c, from, to) : null;
                Closing closing = closeAsync(closer, random, c::close);
                Outcome outcome = operate(op, c, from, to, prepared, random);
                assertThat(closing.await()).as("a chip's close is never refused").isNull();
                assertThat(c.isClosed()).isTrue();
                return outcome;
            } finally {
                c.close();
                // the chip released their memory: closing them now only says so (no leak-net warning)
                for (DeviceBuffer b : new DeviceBuffer[] {from, to}) {
                    if (b != null) {
                        b.close();
                    }
                }
            }
        }

        // ---- the operations -------------------------------------------------------------------------

        /**
         * Performs {@code op} on {@code target} (reading from {@code from} on {@code c}); WHOLE
         * when it completed and its bytes are right, REFUSED when it was refused precisely.
         */
        private Outcome operate(Op op, ChipWorker c, DeviceBuffer from, DeviceBuffer target, NativeRun prepared,
                                SplittableRandom random) throws Exception {
            jitter(random);
            try {
                switch (op) {
                    case COPY_TO -> c.copyTo(target, DATA);
                    case COPY_FROM -> {
                        float[] out = new float[N];
                        c.copyFrom(target, out);
                        SimE2E.assertBitExact(out, DATA);
                    }
                    case PREPARE -> {
                        NativeRun run = prepareCopy(c, from, target);
                        c.launch(run);
                        c.finalizeRun(run);
                    }
                    case LAUNCH -> {
                        c.launch(prepared);
                        c.finalizeRun(prepared);
                    }
                    case RUN -> c.run(COPY, copyArgs(from, target), CallConfig.DEFAULT);
                    case ENQUEUE -> {
                        RunTicket t = worker.enqueue(COPY, copyArgs(from, target), CallConfig.DEFAULT);
                        worker.drain();
                        t.result().get(60, TimeUnit.SECONDS);
                    }
                    default -> fail("not a plain operation: " + op);
                }
                return Outcome.WHOLE;
            } catch (RuntimeException e) {
                if (prepared != null && !c.isClosed()) {
                    c.finalizeRun(prepared); // a refused launch still owns its slot
                }
                assertPreciseRefusal(op, e);
                return Outcome.REFUSED;
            }
        }

        private NativeRun prepareCopy(ChipWorker c, DeviceBuffer from, DeviceBuffer to) {
            return c.prepare(COPY, copyArgs(from, to), CallConfig.DEFAULT, lease, 7, 7, null);
        }

        private static TaskArgs copyArgs(DeviceBuffer from, DeviceBuffer to) {
            return TaskArgs.of(Tensor.of(from, DType.F32), Tensor.of(to, DType.F32));
        }

        @Override
        public void close() {
            try {
                source.close();
                workerSource.close();
                workerGroup.close();
            } finally {
                try {
                    worker.close();
                } finally {
                    chip.close();
                }
            }
        }
    }

    /**
     * A refusal is precise when it says the resource (or the chip) is closed: Java's check
     * before the call, or the library's when the close finished between that check and the call.
     */
    static void assertPreciseRefusal(Op op, Throwable e) {
        String message = String.valueOf(e.getMessage());
        boolean closed = e instanceof IllegalStateException && message.contains("closed");
        boolean goneNatively = e instanceof InvalidNativeArgumentException
                && message.contains("not inside one live allocation");
        if (!closed && !goneNatively) {
            throw new AssertionError(op + ": not a precise refusal: " + e, e);
        }
    }

    /** The closer's side of one race. */
    private record Closing(CompletableFuture<Throwable> result) {
        Throwable await() throws Exception {
            return result.get(60, TimeUnit.SECONDS);
        }
    }

    private static Closing closeAsync(ExecutorService closer, SplittableRandom random, Runnable close) {
        int spins = random.nextInt(0, 2_000);
        return new Closing(CompletableFuture.supplyAsync(() -> {
            spin(spins);
            try {
                close.run();
                return null;
            } catch (RuntimeException e) {
                return e;
            }
        }, closer));
    }

    /** A random offset of the test thread's side: a few microseconds of work, no waiting. */
    private static void jitter(SplittableRandom random) {
        spin(random.nextInt(0, 2_000));
    }

    private static volatile int sink;

    private static void spin(int n) {
        int x = sink;
        for (int i = 0; i < n; i++) {
            x = x * 31 + i;
        }
        sink = x;
    }
}

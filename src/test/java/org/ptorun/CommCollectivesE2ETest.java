package org.ptorun;

import static org.assertj.core.api.Assertions.assertThat;
import static org.ptorun.SimE2E.assertBitExact;
import static org.ptorun.SimE2E.random;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Stream;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.ptorun.callable.ChipCallable;
import org.ptorun.callable.CoreType;
import org.ptorun.callable.Direction;
import org.ptorun.callable.Kernel;
import org.ptorun.callable.Param;
import org.ptorun.callable.Program;

/**
 * Golden collectives of issue [10/10] on all eight libraries: 2, 3 and 4 ranks (chips of one
 * process in one group), element counts that are not multiples of the rank count, every
 * element of every rank checked against a plain-Java reference that sums in rank order
 * (docs/kernels.md, Collectives), so results are bit-exact.
 */
class CommCollectivesE2ETest {

    private static final Duration TIMEOUT = Duration.ofSeconds(20);
    private static final int ALLREDUCE = 1;
    private static final int ALLGATHER = 2;
    private static final int REDUCE_SCATTER = 3;
    private static final int BROADCAST = 4;
    private static final int KERNEL = 0;

    static List<Variant> variants() {
        return SimE2E.allVariants();
    }

    static Stream<Arguments> variantsAndRanks() {
        return SimE2E.allVariants().stream().flatMap(v -> Stream.of(2, 3, 4).map(n -> Arguments.of(v, n)));
    }

    /** One submit of {@code kernel} over the run's args: tensors 0..tensors-1 flat, then scalars 0..scalars-1. */
    static ChipCallable single(String kernel, List<Direction> tensors, int scalars, long[] tensorBytes) {
        List<Direction> signature = new ArrayList<>(tensors);
        List<Param> params = new ArrayList<>();
        for (int i = 0; i < tensors.size(); i++) {
            params.add(Param.tensor(i, tensors.get(i), 0, tensorBytes[i]));
        }
        for (int s = 0; s < scalars; s++) {
            signature.add(Direction.SCALAR);
            params.add(Param.scalarArg(s));
        }
        Program program = Program.builder().submit(KERNEL, params.toArray(Param[]::new)).build();
        return ChipCallable.builder().signature(signature.toArray(Direction[]::new))
                .child(KERNEL, CoreType.AIV, Kernel.builtin(kernel)).program(program).build();
    }

    /** Runs {@code call(rank)} on one thread per rank at once and waits for all. */
    static <T> List<T> onEveryRank(int n, RankCall<T> call) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(n);
        try {
            List<Future<T>> futures = new ArrayList<>();
            for (int r = 0; r < n; r++) {
                int rank = r;
                futures.add(pool.submit((Callable<T>) () -> call.apply(rank)));
            }
            List<T> out = new ArrayList<>();
            for (Future<T> f : futures) {
                out.add(f.get());
            }
            return out;
        } finally {
            pool.shutdownNow();
        }
    }

    interface RankCall<T> {
        T apply(int rank) throws Exception;
    }

    static List<ChipWorker> openChips(Variant variant, int n) {
        HostRuntime runtime = HostRuntime.load(variant);
        List<ChipWorker> chips = new ArrayList<>();
        for (int d = 0; d < n; d++) {
            chips.add(ChipWorker.open(runtime, d));
        }
        return chips;
    }

    static void closeAll(CommGroup group, List<ChipWorker> chips) {
        if (group != null) {
            group.close();
        }
        chips.forEach(ChipWorker::close);
    }

    /** Runs the ALLREDUCE callable over {@code x} in the domain {@code ctx}; x's {@code count} floats after. */
    static float[] allreduce(CommRank rank, DeviceBuffer x, long ctx, int count) {
        rank.chip().run(ALLREDUCE, new TaskArgs().tensor(Tensor.of(x, DType.F32)).scalar(ctx), CallConfig.DEFAULT);
        float[] out = new float[count];
        rank.chip().copyFrom(x, out);
        return out;
    }

    /** chunk r of n elements over nranks: [floor(r·n/nranks), floor((r+1)·n/nranks)). */
    static int chunkStart(int r, int n, int nranks) {
        return (int) ((long) r * n / nranks);
    }

    @ParameterizedTest(name = "{0} on {1} ranks")
    @MethodSource("variantsAndRanks")
    void everyCollectiveGivesEveryRankTheJavaReference(Variant variant, int n, @TempDir Path dir) throws Exception {
        int count = 1003; // no multiple of 2, 3 or 4
        long bytes = 4L * count;
        List<ChipWorker> chips = openChips(variant, n);
        CommGroup group = null;
        try {
            group = CommGroup.open(chips, dir.resolve("rootinfo"), TIMEOUT);
            group.allocWindows(bytes * (n + 1));
            assertThat(group.ranks()).hasSize(n);
            for (ChipWorker chip : chips) {
                chip.registerCallable(ALLREDUCE, single("allreduce_sum", List.of(Direction.INOUT), 1, new long[] {bytes}));
                chip.registerCallable(ALLGATHER, single("allgather", List.of(Direction.IN, Direction.OUT), 1,
                        new long[] {bytes, bytes * n}));
                chip.registerCallable(BROADCAST, single("broadcast", List.of(Direction.INOUT), 2, new long[] {bytes}));
            }
            float[][] inputs = new float[n][];
            for (int r = 0; r < n; r++) {
                inputs[r] = random(count, 100 + r);
            }
            CommGroup g = group;

            // allreduce_sum: every rank's window holds the sum, in rank order
            float[] sum = inputs[0].clone();
            for (int r = 1; r < n; r++) {
                for (int i = 0; i < count; i++) {
                    sum[i] = sum[i] + inputs[r][i];
                }
            }
            List<float[]> reduced = onEveryRank(n, r -> {
                CommRank rank = g.rank(r);
                DeviceBuffer x = rank.windowSlice(0, bytes);
                rank.chip().copyTo(x, inputs[r]);
                return allreduce(rank, x, rank.deviceContext(), count);
            });
            for (float[] out : reduced) {
                assertBitExact(out, sum);
            }

            // allgather: y = x_0 | x_1 | ... in this rank's own device memory
            float[] gathered = new float[count * n];
            for (int r = 0; r < n; r++) {
                System.arraycopy(inputs[r], 0, gathered, r * count, count);
            }
            List<float[]> all = onEveryRank(n, r -> {
                CommRank rank = g.rank(r);
                DeviceBuffer x = rank.windowSlice(0, bytes);
                rank.chip().copyTo(x, inputs[r]);
                try (DeviceBuffer y = rank.chip().malloc(bytes * n)) {
                    rank.chip().run(ALLGATHER, new TaskArgs().tensor(Tensor.of(x, DType.F32))
                            .tensor(Tensor.of(y, DType.F32)).scalar(rank.deviceContext()), CallConfig.DEFAULT);
                    float[] out = new float[count * n];
                    rank.chip().copyFrom(y, out);
                    return out;
                }
            });
            for (float[] out : all) {
                assertBitExact(out, gathered);
            }

            // reduce_scatter: rank r gets chunk r of the sum
            List<float[]> scattered = onEveryRank(n, r -> {
                CommRank rank = g.rank(r);
                int start = chunkStart(r, count, n);
                int len = chunkStart(r + 1, count, n) - start;
                rank.chip().registerCallable(REDUCE_SCATTER, single("reduce_scatter",
                        List.of(Direction.IN, Direction.OUT), 1, new long[] {bytes, 4L * len}));
                DeviceBuffer x = rank.windowSlice(0, bytes);
                rank.chip().copyTo(x, inputs[r]);
                DeviceBuffer y = rank.windowSlice(bytes, 4L * len);
                rank.chip().run(REDUCE_SCATTER, new TaskArgs().tensor(Tensor.of(x, DType.F32))
                        .tensor(Tensor.of(y, DType.F32)).scalar(rank.deviceContext()), CallConfig.DEFAULT);
                float[] out = new float[len];
                rank.chip().copyFrom(y, out);
                return out;
            });
            for (int r = 0; r < n; r++) {
                int start = chunkStart(r, count, n);
                float[] expected = java.util.Arrays.copyOfRange(sum, start, chunkStart(r + 1, count, n));
                assertBitExact(scattered.get(r), expected);
            }

            // broadcast from the last rank
            int root = n - 1;
            List<float[]> broadcast = onEveryRank(n, r -> {
                CommRank rank = g.rank(r);
                DeviceBuffer x = rank.windowSlice(0, bytes);
                rank.chip().copyTo(x, inputs[r]);
                rank.chip().run(BROADCAST, new TaskArgs().tensor(Tensor.of(x, DType.F32)).scalar(rank.deviceContext())
                        .scalar(root), CallConfig.DEFAULT);
                float[] out = new float[count];
                rank.chip().copyFrom(x, out);
                return out;
            });
            for (float[] out : broadcast) {
                assertBitExact(out, inputs[root]);
            }
        } finally {
            closeAll(group, chips);
        }
    }

    /**
     * A derived context over ranks {1, 2} of three, slicing the group's windows from 8 KiB:
     * its allreduce_sum leaves x_1 + x_2 in both members' slices and touches neither rank 0's
     * window nor the members' bytes before the slice.
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("variants")
    void aDerivedContextReducesOverItsMembersInItsSliceOnly(Variant variant, @TempDir Path dir) throws Exception {
        int count = 1003;
        long bytes = 4L * count;
        long offset = 8192;
        int[] members = {1, 2};
        List<ChipWorker> chips = openChips(variant, 3);
        CommGroup group = null;
        try {
            group = CommGroup.open(chips, dir.resolve("rootinfo"), TIMEOUT);
            group.allocWindows(offset + bytes);
            CommGroup g = group;
            float[][] inputs = {random(count, 7), random(count, 8), random(count, 9)};
            float[] marker = random(2048, 10);
            float[] sum = inputs[1].clone();
            for (int i = 0; i < count; i++) {
                sum[i] = sum[i] + inputs[2][i];
            }
            for (int r = 0; r < 3; r++) {
                chips.get(r).registerCallable(ALLREDUCE, single("allreduce_sum", List.of(Direction.INOUT), 1,
                        new long[] {bytes}));
                g.rank(r).chip().copyTo(g.rank(r).windowSlice(0, offset), marker);
                g.rank(r).chip().copyTo(g.rank(r).windowSlice(offset, bytes), inputs[r]);
            }
            List<float[]> reduced = onEveryRank(2, i -> {
                CommRank rank = g.rank(members[i]);
                long ctx = rank.derive(members, offset, bytes);
                return allreduce(rank, rank.windowSlice(offset, bytes), ctx, count);
            });
            for (float[] out : reduced) {
                assertBitExact(out, sum);
            }
            for (int r = 0; r < 3; r++) {
                float[] before = new float[2048];
                g.rank(r).chip().copyFrom(g.rank(r).windowSlice(0, offset), before);
                assertBitExact(before, marker);
            }
            float[] untouched = new float[count];
            g.rank(0).chip().copyFrom(g.rank(0).windowSlice(offset, bytes), untouched);
            assertBitExact(untouched, inputs[0]);
        } finally {
            closeAll(group, chips);
        }
    }

    /**
     * A task names a peer's window like any tensor: rank 0 writes x into rank 1's window
     * (vcopy), a second task reads that range back (vadds +1) into rank 0's own window; the
     * dependency between them is the one on the peer window's bytes, so the second task
     * sees the first's result. Rank 1 then finds x in its window.
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("variants")
    void aTaskWritesAPeersWindowAndTheNextTaskReadsItInOrder(Variant variant, @TempDir Path dir) throws Exception {
        int count = 777;
        long bytes = 4L * count;
        List<ChipWorker> chips = openChips(variant, 2);
        CommGroup group = null;
        try {
            group = CommGroup.open(chips, dir.resolve("rootinfo"), TIMEOUT);
            group.allocWindows(bytes);
            Program program = Program.builder()
                    .submit(0, Param.tensor(0, Direction.IN, 0, bytes), Param.tensor(1, Direction.OUT, 0, bytes))
                    .submit(1, Param.tensor(1, Direction.IN, 0, bytes), Param.tensor(2, Direction.OUT, 0, bytes),
                            Param.scalarF32(1f))
                    .build();
            ChipCallable callable = ChipCallable.builder()
                    .signature(Direction.IN, Direction.INOUT, Direction.OUT)
                    .child(0, CoreType.AIV, Kernel.vcopy()).child(1, CoreType.AIV, Kernel.vadds())
                    .program(program).build();
            CommRank zero = group.rank(0);
            zero.chip().registerCallable(ALLREDUCE, callable);
            float[] x = random(count, 5);
            float[] y = new float[count];
            zero.chip().run(ALLREDUCE, TaskArgs.of(Tensor.of(x), zero.peerTensor(1, 0, DType.F32, count),
                    Tensor.of(zero.window(), DType.F32)), CallConfig.DEFAULT);
            zero.chip().copyFrom(zero.window(), y);
            float[] expected = new float[count];
            for (int i = 0; i < count; i++) {
                expected[i] = x[i] + 1f;
            }
            assertBitExact(y, expected);
            group.barrier();
            float[] inOne = new float[count];
            group.rank(1).chip().copyFrom(group.rank(1).window(), inOne);
            assertBitExact(inOne, x);
        } finally {
            closeAll(group, chips);
        }
    }
}

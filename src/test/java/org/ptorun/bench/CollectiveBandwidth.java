package org.ptorun.bench;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.atomic.AtomicReference;
import org.ptorun.CallConfig;
import org.ptorun.ChipWorker;
import org.ptorun.CommGroup;
import org.ptorun.CommRank;
import org.ptorun.DType;
import org.ptorun.HostRuntime;
import org.ptorun.TaskArgs;
import org.ptorun.Tensor;
import org.ptorun.Variant;
import org.ptorun.callable.ChipCallable;
import org.ptorun.callable.CoreType;
import org.ptorun.callable.Direction;
import org.ptorun.callable.Kernel;
import org.ptorun.callable.Param;
import org.ptorun.callable.Program;
import org.ptorun.internal.OffHeapBlock;

/**
 * P11: {@code allreduce_sum} of {@value #MIB} MiB over {@value #RANKS} ranks on sim against
 * one {@code memcpy} of the same bytes, in one JVM (the suite starts it as a child:
 * {@code <variant>}). The four chips of one group each run a callable whose only task is
 * the collective over their whole window, released together by a barrier of threads; an
 * allreduce's time is from the release to the last rank's return. The memcpy copies
 * between two pre-faulted native blocks of the same size. After {@value #WARMUP} warm-up
 * rounds of each, {@value #ROUNDS} are timed, alternating; the line printed holds the
 * medians in ns: {@code allreduce=… memcpy=…}. P11 = memcpy / allreduce (bandwidth of the
 * allreduce over that of the copy, both moving the same {@value #MIB} MiB vector).
 */
public final class CollectiveBandwidth {

    static final int MIB = 64;
    static final int RANKS = 4;
    static final int WARMUP = 2;
    static final int ROUNDS = 7;
    private static final long BYTES = (long) MIB << 20;
    private static final int ID = 11;

    private CollectiveBandwidth() {
    }

    public static void main(String[] args) throws Exception {
        Variant variant = Variant.parse(args[0]);
        HostRuntime runtime = HostRuntime.load(variant);
        List<ChipWorker> chips = new ArrayList<>();
        for (int d = 0; d < RANKS; d++) {
            chips.add(ChipWorker.open(runtime, d));
        }
        Path dir = Files.createTempDirectory("ptorun-p11");
        ChipCallable allreduce = ChipCallable.builder().signature(Direction.INOUT, Direction.SCALAR)
                .child(0, CoreType.AIV, Kernel.builtin("allreduce_sum"))
                .program(Program.builder().submit(0, Param.tensor(0, Direction.INOUT, 0, BYTES), Param.scalarArg(0))
                        .build()).build();
        try (CommGroup group = CommGroup.open(chips, dir.resolve("rootinfo"), Duration.ofSeconds(60));
             OffHeapBlock src = OffHeapBlock.allocate(BYTES, 4096);
             OffHeapBlock dst = OffHeapBlock.allocate(BYTES, 4096)) {
            group.allocWindows(BYTES);
            float[] ones = new float[(int) (BYTES / 4)];
            Arrays.fill(ones, 1f);
            for (CommRank rank : group.ranks()) {
                rank.chip().registerCallable(ID, allreduce);
                rank.chip().copyTo(rank.window(), ones);
            }
            NativeBench.pto_bench_memcpy(dst.address(), src.address(), BYTES); // fault both blocks in
            long[] reduce = new long[ROUNDS];
            long[] copy = new long[ROUNDS];
            for (int round = -WARMUP; round < ROUNDS; round++) {
                long r = allreduce(group);
                long t0 = System.nanoTime();
                NativeBench.pto_bench_memcpy(dst.address(), src.address(), BYTES);
                long c = System.nanoTime() - t0;
                if (round >= 0) {
                    reduce[round] = r;
                    copy[round] = c;
                }
            }
            Arrays.sort(reduce);
            Arrays.sort(copy);
            System.out.println("allreduce=" + reduce[ROUNDS / 2] + " memcpy=" + copy[ROUNDS / 2]);
        } finally {
            chips.forEach(ChipWorker::close);
            Files.deleteIfExists(dir.resolve("rootinfo"));
            Files.delete(dir);
        }
    }

    /** One allreduce on every rank at once; ns from the release to the last return. */
    private static long allreduce(CommGroup group) throws Exception {
        CyclicBarrier start = new CyclicBarrier(RANKS + 1);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<Thread> threads = new ArrayList<>();
        for (CommRank rank : group.ranks()) {
            Thread t = new Thread(() -> {
                try {
                    TaskArgs args = new TaskArgs().tensor(Tensor.of(rank.window(), DType.F32))
                            .scalar(rank.deviceContext());
                    start.await();
                    rank.chip().run(ID, args, CallConfig.DEFAULT);
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                }
            });
            t.start();
            threads.add(t);
        }
        start.await();
        long t0 = System.nanoTime();
        for (Thread t : threads) {
            t.join();
        }
        long elapsed = System.nanoTime() - t0;
        if (failure.get() != null) {
            throw new IllegalStateException("allreduce failed", failure.get());
        }
        return elapsed;
    }
}

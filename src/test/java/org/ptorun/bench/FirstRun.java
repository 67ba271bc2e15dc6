package org.ptorun.bench;

import java.util.Locale;
import org.ptorun.CallConfig;
import org.ptorun.ChipWorker;
import org.ptorun.HostRuntime;
import org.ptorun.NativeRun;
import org.ptorun.PipelineSlotLease;
import org.ptorun.TaskArgs;
import org.ptorun.Tensor;
import org.ptorun.Variant;
import org.ptorun.cli.Demo;
import org.ptorun.internal.NativeMemory;

/**
 * P10: what the first run costs in a fresh JVM. The suite starts this {@code main} in a
 * child JVM of its own per sample ({@code trivial <variant>} or {@code demo <variant>})
 * and takes the median over the children; one line of {@code key=value} pairs (µs) is
 * the result.
 *
 * <ul>
 *   <li>{@code trivial}: {@code ChipWorker.open} (the library already loaded, as an
 *       application would load it once) up to the first finalized trivial run, split into
 *       open, register, prepare, launch + await, finalize;</li>
 *   <li>{@code demo}: the README demo's first two prepares — the vector chain over seven
 *       1 Mi-float arrays, two of them read — on the two slots, and {@code copy}, a native
 *       memcpy of the bytes those prepares stage (2 × 4 MiB) into fresh memory, made
 *       afterwards in the same JVM: P10's allowance for the data copy.</li>
 * </ul>
 */
public final class FirstRun {

    static final int DEMO_ELEMENTS = 1 << 20;

    private FirstRun() {
    }

    public static void main(String[] args) {
        Variant variant = Variant.parse(args[1]);
        String line = switch (args[0]) {
            case "trivial" -> trivial(variant);
            case "demo" -> demo(variant);
            default -> throw new IllegalArgumentException("trivial|demo, not " + args[0]);
        };
        System.out.println(line);
    }

    private static String trivial(Variant variant) {
        long loading = System.nanoTime();
        HostRuntime runtime = HostRuntime.load(variant);
        long t0 = System.nanoTime();
        try (ChipWorker chip = ChipWorker.open(runtime, 0)) {
            long opened = System.nanoTime();
            chip.registerCallable(TrivialRun.CALLABLE_ID, TrivialRun.CALLABLE);
            long registered = System.nanoTime();
            NativeRun run = chip.prepare(TrivialRun.CALLABLE_ID, new TaskArgs(), CallConfig.DEFAULT,
                    PipelineSlotLease.of(0, 1), 1, 1, null);
            long prepared = System.nanoTime();
            chip.launch(run);
            if (!chip.poll(run)) {
                chip.await(run);
            }
            long completed = System.nanoTime();
            chip.finalizeRun(run);
            long finalized = System.nanoTime();
            return String.format(Locale.ROOT, "total=%d load=%d open=%d register=%d prepare=%d run=%d finalize=%d",
                    us(finalized - t0), us(t0 - loading), us(opened - t0), us(registered - opened), us(prepared - registered),
                    us(completed - prepared), us(finalized - completed));
        }
    }

    private static String demo(Variant variant) {
        HostRuntime runtime = HostRuntime.load(variant);
        int n = DEMO_ELEMENTS;
        try (ChipWorker chip = ChipWorker.open(runtime, 0)) {
            chip.registerCallable(0, Demo.vectorChain(n));
            int depth = chip.supportsOverlap() ? 2 : 1;
            long[] prepares = new long[3];
            for (int i = 0; i < 3; i++) {
                TaskArgs args = TaskArgs.of(Tensor.of(ramp(n, i)), Tensor.of(ramp(n, 7 * i + 3)),
                        Tensor.of(new float[n]), Tensor.of(new float[n]), Tensor.of(new float[n]),
                        Tensor.of(new float[n]), Tensor.of(new float[n]));
                long t0 = System.nanoTime();
                NativeRun run = chip.prepare(0, args, CallConfig.DEFAULT, PipelineSlotLease.of(i % depth, 1), i + 1,
                        i + 1, null);
                prepares[i] = System.nanoTime() - t0;
                chip.launch(run);
                if (!chip.poll(run)) {
                    chip.await(run);
                }
                chip.finalizeRun(run);
            }
            long copy = freshCopy(2L * 4 * n);
            return String.format(Locale.ROOT, "prepare1=%d prepare2=%d prepare3=%d copy=%d", us(prepares[0]),
                    us(prepares[1]), us(prepares[2]), us(copy));
        }
    }

    /** A native memcpy of {@code bytes} into memory never touched before (its pages fault in, as staging's do). */
    private static long freshCopy(long bytes) {
        long src = NativeMemory.malloc(bytes);
        long dst = NativeMemory.malloc(bytes);
        try {
            NativeMemory.zero(src, bytes);
            long t0 = System.nanoTime();
            NativeBench.pto_bench_memcpy(dst, src, bytes);
            return System.nanoTime() - t0;
        } finally {
            NativeMemory.free(dst);
            NativeMemory.free(src);
        }
    }

    private static float[] ramp(int n, int seed) {
        float[] x = new float[n];
        for (int i = 0; i < n; i++) {
            x[i] = (i % 1000) * 0.25f + seed;
        }
        return x;
    }

    private static long us(long nanos) {
        return nanos / 1000;
    }
}

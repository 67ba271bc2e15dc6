package org.ptorun.bench;

import static org.ptorun.callable.Direction.IN;
import static org.ptorun.callable.Direction.INOUT;

import java.nio.file.Path;
import java.util.Arrays;
import java.util.Random;
import org.ptorun.CallConfig;
import org.ptorun.ChipWorker;
import org.ptorun.HostRuntime;
import org.ptorun.RunReport;
import org.ptorun.TaskArgs;
import org.ptorun.Tensor;
import org.ptorun.Variant;
import org.ptorun.callable.ChipCallable;
import org.ptorun.callable.CoreType;
import org.ptorun.callable.Kernel;

/**
 * P14: the orchestration time of a decode-shaped run — {@value #LAYERS} layers, each
 * {@value #TILES} column tiles of vfill, gemm_tile and softmax_rows then {@value #TILES}
 * tile_adds into the hidden state, over that layer's own weights — built task by task
 * ({@code decode_inline} of the test orchestration library) against the same layer recorded
 * once and submitted per layer ({@code decode_subgraph}: {@code PtoOrchApi.subgraph_submit}),
 * in one JVM (the suite starts it as a child: {@code <variant>}). An orchestration library's
 * graph is never recorded whole, so every run builds it: the figure is each run's
 * {@link RunReport#orchestrationNanos()} (hbg: the host's CPU time in prepare; trb: the device
 * orchestrator's). {@value #ROUNDS} rounds run both callables with the same data and check
 * the outputs bit-identical; the line printed holds the medians in ns:
 * {@code inline=… subgraph=…}. P14 = inline / subgraph.
 */
public final class DecodeSubgraphPrepare {

    static final int LAYERS = 43;
    static final int D = 128;
    static final int TILES = D / 16;
    static final int ROWS = 16;
    static final int ROUNDS = 21;

    private DecodeSubgraphPrepare() {
    }

    static ChipCallable decode(Path library, String entry) {
        return ChipCallable.builder()
                .signature(INOUT, IN)
                .child(2, CoreType.AIC, Kernel.gemmTile())
                .child(3, Kernel.softmaxRows())
                .child(4, Kernel.tileAdd())
                .child(5, Kernel.vfill())
                .orchestrationLibrary(library, entry)
                .build();
    }

    public static void main(String[] args) {
        Variant variant = Variant.parse(args[0]);
        Path library = Path.of(System.getProperty("ptorun.nativeTestDir"), "libptorun_test_orch.so");
        Random random = new Random(14);
        float[] h0 = new float[ROWS * D];
        float[] w = new float[LAYERS * D * D];
        for (int i = 0; i < h0.length; i++) {
            h0[i] = random.nextFloat() - 0.5f;
        }
        for (int i = 0; i < w.length; i++) {
            w[i] = (random.nextFloat() - 0.5f) * 0.05f;
        }
        long[] inline = new long[ROUNDS];
        long[] subgraph = new long[ROUNDS];
        try (ChipWorker chip = ChipWorker.open(HostRuntime.load(variant), 0)) {
            chip.registerCallable(1, decode(library, "decode_inline"));
            chip.registerCallable(2, decode(library, "decode_subgraph"));
            for (int r = 0; r < ROUNDS; r++) {
                float[] a = h0.clone();
                float[] b = h0.clone();
                inline[r] = chip.run(1, TaskArgs.of(Tensor.of(a), Tensor.of(w)), CallConfig.DEFAULT)
                        .orchestrationNanos();
                subgraph[r] = chip.run(2, TaskArgs.of(Tensor.of(b), Tensor.of(w)), CallConfig.DEFAULT)
                        .orchestrationNanos();
                if (!Arrays.equals(a, b)) {
                    throw new AssertionError("round " + r + ": the sub-graph run's h differs from the inline run's");
                }
            }
        }
        System.out.println("inline=" + median(inline) + " subgraph=" + median(subgraph));
        System.out.println("tasks per run: " + LAYERS * 4 * TILES + " (inline), " + LAYERS * (4 * TILES + 2)
                + " (sub-graph: an entry and an exit per layer); outputs bit-identical in " + ROUNDS + " rounds");
    }

    private static long median(long[] samples) {
        long[] s = samples.clone();
        Arrays.sort(s);
        return s[s.length / 2];
    }
}

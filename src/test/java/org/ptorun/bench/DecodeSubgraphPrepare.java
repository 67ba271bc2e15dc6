package org.ptorun.bench;

import java.nio.file.Path;
import java.util.Arrays;
import java.util.Random;
import org.ptorun.CallConfig;
import org.ptorun.ChipWorker;
import org.ptorun.GraphSource;
import org.ptorun.HostRuntime;
import org.ptorun.TaskArgs;
import org.ptorun.Tensor;
import org.ptorun.Variant;
import org.ptorun.callable.ChipCallable;

/**
 * P14: the orchestration time of a decode-shaped run — {@value #LAYERS} layers, each
 * {@value #TILES} column tiles of vfill, gemm_tile and softmax_rows then {@value #TILES}
 * tile_adds into the hidden state, over that layer's own weights — built task by task
 * ({@code decode_inline} of the test orchestration library) against the same layer recorded
 * once and submitted per layer ({@code decode_subgraph}: {@code PtoOrchApi.subgraph_submit}),
 * in one JVM (the suite starts it as a child: {@code <variant>}). An orchestration library's
 * graph is never recorded whole, so every run builds it: the figure is each run's
 * {@link org.ptorun.RunReport#orchestrationNanos()} (hbg: the host's CPU time in prepare; trb: the device
 * orchestrator's). {@value #ROUNDS} rounds run both callables with the same data and check
 * the outputs bit-identical; the line printed holds the medians in ns:
 * {@code inline=… subgraph=…}. P14 = inline / subgraph.
 *
 * <p>The same decode as a {@link Program} ({@link DecodePrograms#program}): every layer's tasks in a loop
 * over layers, or the layer as a sub-graph invoked once per layer. A program's graph is
 * recorded whole at its first run (docs/recorded-graphs.md), so its figure is the first
 * run's orchestration after each of {@value #ROUNDS} fresh registrations:
 * {@code programInline=… programSubgraph=…} (and the graph sources of a second run).
 */
public final class DecodeSubgraphPrepare {

    static final int LAYERS = 43;
    static final int D = DecodePrograms.D;
    static final int TILES = DecodePrograms.TILES;
    static final int ROWS = 16;
    static final int ROUNDS = 21;

    private DecodeSubgraphPrepare() {
    }

    static ChipCallable decode(Path library, String entry) {
        return DecodePrograms.children().orchestrationLibrary(library, entry).build();
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
        long[] programInline = new long[ROUNDS];
        long[] programSubgraph = new long[ROUNDS];
        GraphSource[] second = new GraphSource[2];
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
                for (int k = 0; k < 2; k++) { // a fresh registration: the first run builds the program's graph
                    chip.registerCallable(3 + k, DecodePrograms.children().program(DecodePrograms.program(LAYERS, ROWS, k == 1)).build());
                    float[] c = h0.clone();
                    long ns = chip.run(3 + k, TaskArgs.of(Tensor.of(c), Tensor.of(w)), CallConfig.DEFAULT)
                            .orchestrationNanos();
                    (k == 0 ? programInline : programSubgraph)[r] = ns;
                    if (!Arrays.equals(a, c)) {
                        throw new AssertionError("round " + r + ": the program's h differs from the library's");
                    }
                    second[k] = chip.run(3 + k, TaskArgs.of(Tensor.of(h0.clone()), Tensor.of(w)), CallConfig.DEFAULT)
                            .graphSource();
                    chip.unregisterCallable(3 + k);
                }
            }
        }
        System.out.println("inline=" + median(inline) + " subgraph=" + median(subgraph));
        System.out.println("programInline=" + median(programInline) + " programSubgraph=" + median(programSubgraph));
        System.out.println("programs' second runs: inline " + second[0] + ", sub-graph " + second[1]);
        System.out.println("tasks per run: " + LAYERS * 4 * TILES + " (inline), " + LAYERS * (4 * TILES + 2)
                + " (sub-graph: an entry and an exit per layer); outputs bit-identical in " + ROUNDS + " rounds");
    }

    private static long median(long[] samples) {
        long[] s = samples.clone();
        Arrays.sort(s);
        return s[s.length / 2];
    }
}

package org.ptorun.bench;

import static org.ptorun.callable.Direction.IN;
import static org.ptorun.callable.Direction.INOUT;

import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.ptorun.CallConfig;
import org.ptorun.ChipWorker;
import org.ptorun.HostRuntime;
import org.ptorun.RunReport;
import org.ptorun.TaskArgs;
import org.ptorun.Tensor;
import org.ptorun.Variant;
import org.ptorun.GraphSource;
import org.ptorun.callable.Affine;
import org.ptorun.callable.ChipCallable;
import org.ptorun.callable.CoreType;
import org.ptorun.callable.Direction;
import org.ptorun.callable.Kernel;
import org.ptorun.callable.Param;
import org.ptorun.callable.Program;

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
 *
 * <p>The same decode as a {@link Program} ({@link #program}): every layer's tasks in a loop
 * over layers, or the layer as a sub-graph invoked once per layer. A program's graph is
 * recorded whole at its first run (docs/recorded-graphs.md), so its figure is the first
 * run's orchestration after each of {@value #ROUNDS} fresh registrations:
 * {@code programInline=… programSubgraph=…} (and the graph sources of a second run).
 */
public final class DecodeSubgraphPrepare {

    static final int LAYERS = 43;
    static final int D = 128;
    static final int TILES = D / 16;
    static final int ROWS = 16;
    static final int ROUNDS = 21;

    static final int GEMM = 2;
    static final int SOFTMAX = 3;
    static final int TILE_ADD = 4;
    static final int VFILL = 5;

    private DecodeSubgraphPrepare() {
    }

    /** The children every decode callable binds (as libptorun_test_orch.so's decode_* expect). */
    static ChipCallable.Builder children() {
        return ChipCallable.builder()
                .signature(Direction.INOUT, Direction.IN)
                .child(GEMM, CoreType.AIC, Kernel.gemmTile())
                .child(SOFTMAX, Kernel.softmaxRows())
                .child(TILE_ADD, Kernel.tileAdd())
                .child(VFILL, Kernel.vfill());
    }

    /**
     * One decode layer on {@code b}: argument 0 is h [{@code rows} x D], argument 1 holds the
     * layer's weights at {@code weights} (tile-major, as decode_layer in test_orch.c), local 0
     * its own y. The same tasks in the same order as the library's decode_layer.
     */
    static void layer(Program.Builder b, int rows, Affine weights) {
        long tile = 4L * rows * 16;
        long wtile = 4L * D * 16;
        long hBytes = 4L * rows * D;
        b.allocTensor(0, hBytes);
        b.loop(TILES, (p, t) -> p
                .submit(VFILL, Param.local(0, Direction.OUT, t.times(tile), Affine.of(tile)), Param.scalar(0))
                .submit(GEMM, Param.tensor(0, Direction.IN, 0, hBytes),
                        Param.tensor(1, Direction.IN, weights.plus(t.times(wtile)), Affine.of(wtile)),
                        Param.local(0, Direction.INOUT, t.times(tile), Affine.of(tile)), Param.scalar(rows),
                        Param.scalar(D), Param.scalar(16))
                .submit(SOFTMAX, Param.local(0, Direction.IN, t.times(tile), Affine.of(tile)),
                        Param.local(0, Direction.OUT, t.times(tile), Affine.of(tile)), Param.scalar(16)));
        b.loop(TILES, (p, t) -> p.submit(TILE_ADD, Param.local(0, Direction.IN, t.times(tile), Affine.of(tile)),
                Param.tensor(0, Direction.INOUT, t.times(tile), Affine.of(tile))));
    }

    /**
     * A {@code layers}-layer decode over h [{@code rows} x D] and w [layers x D x D]: each
     * layer in a scope of its own, its tasks submitted one by one, or ({@code recorded}) the
     * layer as sub-graph 0 (boundary: h INOUT, the layer's weights IN) invoked per layer.
     */
    static Program program(int layers, int rows, boolean recorded) {
        long layerBytes = 4L * D * D;
        Program.Builder p = Program.builder();
        if (!recorded) {
            return p.loop(layers, (q, l) -> q.scope(s -> layer(s, rows, l.times(layerBytes)))).build();
        }
        Program.Subgraph sg = p.subgraph(0, List.of(Direction.INOUT, Direction.IN), body -> layer(body, rows,
                Affine.of(0)));
        return p.loop(layers, (q, l) -> q.scope(s -> s.invoke(sg, Param.tensor(0, Direction.INOUT, 0, 4L * rows * D),
                Param.tensor(1, Direction.IN, l.times(layerBytes), Affine.of(layerBytes))))).build();
    }

    static ChipCallable decode(Path library, String entry) {
        return children().orchestrationLibrary(library, entry).build();
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
                    chip.registerCallable(3 + k, children().program(program(LAYERS, ROWS, k == 1)).build());
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

package org.ptorun;

import static org.assertj.core.api.Assertions.assertThat;
import static org.ptorun.SimE2E.random;
import static org.ptorun.callable.Direction.IN;
import static org.ptorun.callable.Direction.INOUT;
import static org.ptorun.callable.Direction.OUT;
import static org.ptorun.callable.Direction.SCALAR;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.ptorun.callable.Affine;
import org.ptorun.callable.ChipCallable;
import org.ptorun.callable.Kernel;
import org.ptorun.callable.Param;
import org.ptorun.callable.Program;

/**
 * Recorded graphs (docs/recorded-graphs.md): a program's first
 * run of an argument geometry records its graph (hbg: at prepare on the host; trb: in the
 * device-side orchestration) and every later run of the same geometry replays it, binding
 * the new arguments' addresses and scalar values; results and dependency graphs are those
 * of the program built afresh, on all eight variants.
 */
class GraphRecordingE2ETest {

    private static final int ID = 9;
    private static final int FILL = 0;
    private static final int ADD = 1;
    private static final int TILE = 64;

    static List<Variant> variants() {
        return SimE2E.allVariants();
    }

    /**
     * Per tile t, in a scope of its own: a local {@code l = c} (scalar argument 0), {@code l
     * += x[t]}, {@code y[t] += l}. Tiles read x and write y: with x and y apart every tile
     * is independent, with y = x each tile reads what it then writes.
     */
    static ChipCallable scaledAdd(int tiles) {
        long bytes = 4L * TILE;
        Program program = Program.builder()
                .loop(tiles, (p, t) -> p
                        .scope(q -> q
                                .allocTensor(0, bytes)
                                .submit(FILL, Param.local(0, OUT, 0, bytes), Param.scalarArg(0))
                                .submit(ADD, Param.tensor(0, IN, t.times(bytes), Affine.of(bytes)),
                                        Param.local(0, INOUT, 0, bytes))
                                .submit(ADD, Param.local(0, IN, 0, bytes),
                                        Param.tensor(1, INOUT, t.times(bytes), Affine.of(bytes)))))
                .build();
        return ChipCallable.builder()
                .signature(IN, OUT, SCALAR)
                .child(FILL, Kernel.vfill())
                .child(ADD, Kernel.tileAdd())
                .program(program)
                .build();
    }

    /** y[i] + (c + x[i]) in the kernels' f32 order, over the first tiles * TILE elements. */
    static float[] reference(float[] x, float[] y, float c, int tiles) {
        float[] out = y.clone();
        for (int i = 0; i < tiles * TILE; i++) {
            out[i] = y[i] + (c + x[i]);
        }
        return out;
    }

    /** One run of host arrays: y is OUT (staged zeroed), so y's start is zeros. */
    private static RunReport runHost(ChipWorker chip, float[] x, float[] y, float c) {
        return chip.run(ID, TaskArgs.of(Tensor.of(x), Tensor.of(y)).scalarF32(c), CallConfig.DEFAULT);
    }

    /** A run over {@code n} random floats (seed) and scalar c, its result checked; its graph source. */
    private static GraphSource runChecked(ChipWorker chip, int tiles, int n, long seed, float c) {
        float[] x = random(n, seed);
        float[] y = new float[n];
        GraphSource source = runHost(chip, x, y, c).graphSource();
        assertThat(y).as("the run of seed %d (%s)", seed, source).containsExactly(reference(x, new float[n], c, tiles));
        return source;
    }

    @ParameterizedTest
    @MethodSource("variants")
    void laterRunsReplayTheRecordingWithTheirOwnDataAndScalars(Variant variant) {
        int tiles = 8;
        try (ChipWorker chip = ChipWorker.open(HostRuntime.load(variant), 0)) {
            chip.registerCallable(ID, scaledAdd(tiles));
            GraphSource[] sources = new GraphSource[5];
            for (int k = 0; k < sources.length; k++) {
                sources[k] = runChecked(chip, tiles, tiles * TILE, 10 + k, 0.5f + k);
            }
            assertThat(sources).containsExactly(GraphSource.RECORDED,
                    GraphSource.REPLAYED, GraphSource.REPLAYED,
                    GraphSource.REPLAYED, GraphSource.REPLAYED);
        }
    }

    @ParameterizedTest
    @MethodSource("variants")
    void anotherGeometryOrAnotherRegistrationRecordsAfresh(Variant variant) {
        int tiles = 4;
        try (ChipWorker chip = ChipWorker.open(HostRuntime.load(variant), 0)) {
            chip.registerCallable(ID, scaledAdd(tiles));
            int[] sizes = { tiles * TILE, tiles * TILE, 3 * tiles * TILE, 3 * tiles * TILE, tiles * TILE };
            GraphSource[] want = { GraphSource.RECORDED, GraphSource.REPLAYED, GraphSource.RECORDED,
                    GraphSource.REPLAYED, GraphSource.RECORDED };
            for (int k = 0; k < sizes.length; k++) {
                assertThat(runChecked(chip, tiles, sizes[k], 20 + k, 2f)).as("run %d over %d floats", k, sizes[k])
                        .isEqualTo(want[k]);
            }
            // the same bytes registered again under the id: nothing of the old recording is kept
            chip.unregisterCallable(ID);
            chip.registerCallable(ID, scaledAdd(tiles));
            float[] x = random(tiles * TILE, 30);
            float[] y = new float[tiles * TILE];
            assertThat(runHost(chip, x, y, 3f).graphSource()).isEqualTo(GraphSource.RECORDED);
            assertThat(y).containsExactly(reference(x, new float[y.length], 3f, tiles));
            // another program under the id: its own graph, never the old one's
            chip.unregisterCallable(ID);
            chip.registerCallable(ID, scaledAdd(2));
            y = new float[tiles * TILE];
            assertThat(runHost(chip, x, y, 3f).graphSource()).isEqualTo(GraphSource.RECORDED);
            assertThat(y).containsExactly(reference(x, new float[y.length], 3f, 2));
        }
    }

    @ParameterizedTest
    @MethodSource("variants")
    void aRecordingIsCommittedWithItsCallableAndFreedWithIt(Variant variant) {
        int tiles = 16;
        ChipCallable callable = scaledAdd(tiles);
        try (ChipWorker chip = ChipWorker.open(HostRuntime.load(variant), 0)) {
            chip.registerCallable(ID, callable);
            assertThat(runChecked(chip, tiles, tiles * TILE, 70, 1f)).isEqualTo(GraphSource.RECORDED);
            long recorded = chip.committedDeviceMemory();
            assertThat(runChecked(chip, tiles, tiles * TILE, 71, 2f)).isEqualTo(GraphSource.REPLAYED);
            assertThat(chip.committedDeviceMemory()).as("a replay commits nothing more").isEqualTo(recorded);
            chip.unregisterCallable(ID);
            long freed = recorded - chip.committedDeviceMemory();
            // the arenas stay committed for the next run; the callable's upload goes, and its recording with it
            assertThat(freed).as("the upload and the recorded graph (%d tasks)", 3 * tiles)
                    .isGreaterThan(callable.size() + 3L * tiles * 40);
        }
    }

    @ParameterizedTest
    @MethodSource("variants")
    void aliasingDeviceBuffersAreAGeometryOfTheirOwn(Variant variant) {
        int tiles = 4;
        int n = tiles * TILE;
        try (ChipWorker chip = ChipWorker.open(HostRuntime.load(variant), 0)) {
            chip.registerCallable(ID, scaledAdd(tiles));
            DeviceBuffer a = chip.malloc(4L * n);
            DeviceBuffer b = chip.malloc(4L * n);
            // apart: y = b, x = a
            float[] x = random(n, 40);
            float[] y0 = random(n, 41);
            chip.copyTo(a, x);
            chip.copyTo(b, y0);
            TaskArgs apart = TaskArgs.of(Tensor.of(a, DType.F32), Tensor.of(b, DType.F32)).scalarF32(1.5f);
            assertThat(chip.run(ID, apart, CallConfig.DEFAULT).graphSource())
                    .isEqualTo(GraphSource.RECORDED);
            float[] got = new float[n];
            chip.copyFrom(b, got);
            assertThat(got).containsExactly(reference(x, y0, 1.5f, tiles));

            // aliased: x = y = a, so each tile's last task reads what the tile's second read
            for (int k = 0; k < 3; k++) {
                float[] start = random(n, 50 + k);
                chip.copyTo(a, start);
                TaskArgs aliased = TaskArgs.of(Tensor.of(a, DType.F32), Tensor.of(a, DType.F32)).scalarF32(-1f);
                assertThat(chip.run(ID, aliased, CallConfig.DEFAULT).graphSource()).as("aliased run %d", k)
                        .isEqualTo(k == 0 ? GraphSource.RECORDED : GraphSource.REPLAYED);
                chip.copyFrom(a, got);
                assertThat(got).containsExactly(reference(start, start, -1f, tiles));
            }

            // apart again, with the buffers swapped: a geometry of distinct buffers again
            chip.copyTo(b, x);
            chip.copyTo(a, y0);
            TaskArgs swapped = TaskArgs.of(Tensor.of(b, DType.F32), Tensor.of(a, DType.F32)).scalarF32(1.5f);
            assertThat(chip.run(ID, swapped, CallConfig.DEFAULT).graphSource())
                    .isEqualTo(GraphSource.RECORDED);
            chip.copyFrom(a, got);
            assertThat(got).containsExactly(reference(x, y0, 1.5f, tiles));
            chip.free(a);
            chip.free(b);
        }
    }

    @ParameterizedTest
    @MethodSource("variants")
    void aReplayUnderOtherRingSizingsGivesTheSameResults(Variant variant) {
        int tiles = 6;
        try (ChipWorker chip = ChipWorker.open(HostRuntime.load(variant), 0)) {
            chip.registerCallable(ID, scaledAdd(tiles));
            // the smallest rings: trb's ring heaps and slots fall elsewhere than when recorded
            CallConfig tiny = CallConfig.builder().ringTaskWindow(4).ringHeap(1024).ringDepPool(4).build();
            CallConfig[] configs = { CallConfig.DEFAULT, tiny, CallConfig.DEFAULT };
            GraphSource[] want = { GraphSource.RECORDED, GraphSource.REPLAYED, GraphSource.REPLAYED };
            for (int k = 0; k < configs.length; k++) {
                float[] x = random(tiles * TILE, 70 + k);
                float[] y = new float[tiles * TILE];
                RunReport report = chip.run(ID, TaskArgs.of(Tensor.of(x), Tensor.of(y)).scalarF32(k), configs[k]);
                assertThat(report.graphSource()).as("run %d", k).isEqualTo(want[k]);
                assertThat(y).containsExactly(reference(x, new float[y.length], k, tiles));
                // an orchestration ran: the program interpreted, or (trb) the recording walked on the device
                if (want[k] == GraphSource.RECORDED || variant.runtime() == Variant.RuntimeKind.TRB) {
                    assertThat(report.orchestrationNanos()).as("run %d", k).isPositive();
                } else {
                    assertThat(report.orchestrationNanos()).as("hbg prepare bound a recording: run %d", k).isZero();
                }
            }
        }
    }

    /**
     * Strided views replayed: column tiles of an 11 x 37 matrix copied through strided views
     * (trb's walk relocates the kept kernel views as well as the arguments), new data every
     * run, every element right.
     */
    @ParameterizedTest
    @MethodSource("variants")
    void aReplayRelocatesStridedViews(Variant variant) {
        int n = 11 * 37;
        try (ChipWorker chip = ChipWorker.open(HostRuntime.load(variant), 0)) {
            chip.registerCallable(ID, TensorSizesE2ETest.strided());
            for (int k = 0; k < 3; k++) {
                float[] x = random(n, 80 + k);
                float[] y = new float[n];
                RunReport report = chip.run(ID, TaskArgs.of(Tensor.of(x), Tensor.of(y)), CallConfig.DEFAULT);
                assertThat(report.graphSource()).as("run %d", k)
                        .isEqualTo(k == 0 ? GraphSource.RECORDED : GraphSource.REPLAYED);
                assertThat(y).as("run %d", k).containsExactly(x);
            }
        }
    }

    static List<Variant> simTrbVariants() {
        return SimE2E.simTrbVariants();
    }

    /**
     * trb replays in the device-side orchestration: a 4 096-task chain, recorded then
     * replayed, is right every time and reports its device orchestration time (the
     * orchestrator's CPU time, the work block's figure; the rings hold every task so that the
     * orchestrator never waits for the kernels) — the figure P13 compares.
     */
    @ParameterizedTest
    @MethodSource("simTrbVariants")
    void onTrbALongChainReplaysRightAndReportsItsDeviceOrchestrationTime(Variant variant) {
        int tasks = 4096;
        long bytes = 4L * TILE;
        ChipCallable chain = ChipCallable.builder().signature(IN, INOUT).child(ADD, Kernel.tileAdd())
                .program(Program.builder()
                        .loop(tasks, (p, i) -> p.submit(ADD, Param.tensor(0, IN, 0, bytes), Param.tensor(1, INOUT, 0,
                                bytes)))
                        .build())
                .build();
        CallConfig roomy = CallConfig.builder().ringTaskWindow(0, 2L * tasks).ringDepPool(0, 2L * tasks).build();
        try (ChipWorker chip = ChipWorker.open(HostRuntime.load(variant), 0)) {
            chip.registerCallable(ID, chain);
            long[] nanos = new long[4];
            for (int k = 0; k < nanos.length; k++) {
                float[] x = random(TILE, 90 + k);
                float[] z = new float[TILE];
                RunReport report = chip.run(ID, TaskArgs.of(Tensor.of(x), Tensor.of(z)), roomy);
                assertThat(report.graphSource()).isEqualTo(k == 0 ? GraphSource.RECORDED : GraphSource.REPLAYED);
                float[] want = new float[TILE];
                for (int t = 0; t < tasks; t++) {
                    for (int i = 0; i < TILE; i++) {
                        want[i] = want[i] + x[i];
                    }
                }
                assertThat(z).containsExactly(want);
                nanos[k] = TrbFigures.lastOrchestrationNanos(chip, variant, 0);
                assertThat(nanos[k]).isPositive();
            }
            // how the times compare is P13's to measure (docs/performance.md), never a test's
        }
    }

    @ParameterizedTest
    @MethodSource("variants")
    void aReplayedRunWritesTheDependencyGraphOfTheBuiltOne(Variant variant, @TempDir Path dir) throws IOException {
        int tiles = 3;
        try (ChipWorker chip = ChipWorker.open(HostRuntime.load(variant), 0)) {
            chip.registerCallable(ID, scaledAdd(tiles));
            CallConfig config = CallConfig.builder().enableDepGraph(true).outputPrefix(dir).build();
            byte[][] graphs = new byte[2][];
            GraphSource[] sources = new GraphSource[2];
            for (int k = 0; k < 2; k++) {
                float[] x = random(tiles * TILE, 60 + k);
                float[] y = new float[tiles * TILE];
                RunReport report = chip.run(ID, TaskArgs.of(Tensor.of(x), Tensor.of(y)).scalarF32(1f), config);
                sources[k] = report.graphSource();
                assertThat(report.outputFiles()).hasSize(1);
                graphs[k] = Files.readAllBytes(report.outputFiles().get(0));
                assertThat(y).containsExactly(reference(x, new float[y.length], 1f, tiles));
            }
            assertThat(sources).containsExactly(GraphSource.RECORDED,
                    GraphSource.REPLAYED);
            assertThat(new String(graphs[1], java.nio.charset.StandardCharsets.US_ASCII))
                    .isEqualTo(new String(graphs[0], java.nio.charset.StandardCharsets.US_ASCII))
                    .contains("t0 -> t1;", "t1 -> t2;", "t3 -> t4;", "t4 -> t5;");
        }
    }
}

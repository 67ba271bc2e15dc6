package org.ptorun;

import static org.assertj.core.api.Assertions.assertThat;
import static org.ptorun.SimE2E.assertBitExact;
import static org.ptorun.SimE2E.random;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.ptorun.bench.DecodePrograms;
import org.ptorun.callable.Affine;
import org.ptorun.callable.ChipCallable;
import org.ptorun.callable.Direction;
import org.ptorun.callable.Kernel;
import org.ptorun.callable.Param;
import org.ptorun.callable.Program;

/**
 * Sub-graphs submitted by an orchestration library ({@code PtoOrchApi.subgraph_submit}), on
 * all eight libraries through the packaged contract: libptorun_test_orch.so's decode-shaped
 * orchestrations, every layer submitted task by task ({@code decode_inline}) or as one
 * recorded layer submitted per layer ({@code decode_subgraph}), give the same bytes, run
 * after run with other data; the dependency graph shows one entry and one exit per layer.
 * And sub-graphs in {@link Program}s: the same decode with its layer a sub-graph invoked in
 * a loop and a scope gives the bytes of the program submitting every task and of the
 * library; hbg records such a program whole and replays it (identical bytes and graph file),
 * trb builds it every run; a re-registration with another body computes the new body.
 */
class SubgraphE2ETest {

    static final int D = 128;
    static final int ROWS = 16;

    static List<Variant> variants() {
        return SimE2E.allVariants();
    }

    /** h (INOUT) [ROWS x D], w (IN) [layers x D x D]; children as decode_* expect them. */
    static ChipCallable decode(String entry) {
        return DecodePrograms.children().orchestrationLibrary(SimE2E.orchestrationLibrary(), entry).build();
    }

    private static float[] run(ChipWorker chip, int id, float[] h0, float[] w, CallConfig config) {
        float[] h = h0.clone();
        RunReport report = chip.run(id, TaskArgs.of(Tensor.of(h), Tensor.of(w)), config);
        assertThat(report.orchestrationNanos()).as("the orchestration's CPU time").isPositive();
        return h;
    }

    @ParameterizedTest
    @MethodSource("variants")
    void aRecordedLayerSubmittedPerLayerGivesTheBytesOfEveryTaskSubmitted(Variant variant) {
        int layers = 5;
        try (ChipWorker chip = ChipWorker.open(HostRuntime.load(variant), 0)) {
            chip.registerCallable(1, decode("decode_inline"));
            chip.registerCallable(2, decode("decode_subgraph"));
            for (int k = 0; k < 3; k++) {
                float[] h0 = random(ROWS * D, 10 + k);
                float[] w = random(layers * D * D, 20 + k);
                for (int i = 0; i < w.length; i++) {
                    w[i] *= 0.05f; // keeps the softmax inputs tame
                }
                float[] inline = run(chip, 1, h0, w, CallConfig.DEFAULT);
                float[] recorded = run(chip, 2, h0, w, CallConfig.DEFAULT);
                assertThat(inline).as("the layers changed h").isNotEqualTo(h0);
                assertBitExact(recorded, inline);
            }
        }
    }

    @ParameterizedTest
    @MethodSource("variants")
    void theDependencyGraphHasOneEntryAndOneExitPerLayer(Variant variant, @TempDir Path dir) throws IOException {
        int layers = 3;
        int tiles = D / 16;
        try (ChipWorker chip = ChipWorker.open(HostRuntime.load(variant), 0)) {
            chip.registerCallable(2, decode("decode_subgraph"));
            CallConfig config = CallConfig.builder().enableDepGraph(true).outputPrefix(dir.toString()).build();
            float[] h = random(ROWS * D, 1);
            RunReport report = chip.run(2, TaskArgs.of(Tensor.of(h), Tensor.of(random(layers * D * D, 2))), config);
            String graph = Files.readString(report.outputFiles().get(0));
            int perLayer = 2 + 4 * tiles;
            assertThat(graph.lines().filter(l -> l.contains("subgraph\"")).count()).isEqualTo(2L * layers);
            for (int l = 0; l < layers; l++) {
                int entry = l * perLayer;
                int exit = entry + perLayer - 1;
                assertThat(graph).contains("  t" + entry + " [label=\"" + entry + " subgraph\"];",
                        "  t" + exit + " [label=\"" + exit + " subgraph\"];");
                if (l > 0) { // the layers chain through h: each entry waits for the exit before it
                    assertThat(graph).contains("  t" + (entry - 1) + " -> t" + entry + ";");
                }
            }
        }
    }

    // ---- Programs -------------------------------------------------------------------------------

    @ParameterizedTest
    @MethodSource("variants")
    void aProgramsLayerInvokedPerLayerGivesTheBytesOfEveryTaskAndReplaysWholeOnHbg(Variant variant,
            @TempDir Path dir) throws IOException {
        int layers = 4;
        boolean hbg = variant.runtime() == Variant.RuntimeKind.HBG;
        try (ChipWorker chip = ChipWorker.open(HostRuntime.load(variant), 0)) {
            chip.registerCallable(1, decode("decode_inline"));
            chip.registerCallable(3, DecodePrograms.children().program(DecodePrograms.program(layers, ROWS, false)).build());
            chip.registerCallable(4, DecodePrograms.children().program(DecodePrograms.program(layers, ROWS, true)).build());
            String[] graphs = new String[2];
            for (int k = 0; k < 2; k++) {
                float[] h0 = random(ROWS * D, 30 + k);
                float[] w = random(layers * D * D, 40 + k);
                for (int i = 0; i < w.length; i++) {
                    w[i] *= 0.05f;
                }
                float[] library = run(chip, 1, h0, w, CallConfig.DEFAULT);
                float[] inline = h0.clone();
                chip.run(3, TaskArgs.of(Tensor.of(inline), Tensor.of(w)), CallConfig.DEFAULT);
                float[] recorded = h0.clone();
                Path runDir = Files.createDirectories(dir.resolve("run" + k));
                RunReport report = chip.run(4, TaskArgs.of(Tensor.of(recorded), Tensor.of(w)),
                        CallConfig.builder().enableDepGraph(true).outputPrefix(runDir.toString()).build());
                assertBitExact(inline, library);
                assertBitExact(recorded, inline);
                graphs[k] = Files.readString(report.outputFiles().get(0));
                GraphSource want = !hbg ? GraphSource.BUILT : k == 0 ? GraphSource.RECORDED : GraphSource.REPLAYED;
                assertThat(report.graphSource()).as("run %d", k).isEqualTo(want);
            }
            assertThat(graphs[1]).as("the replayed run's dependency graph").isEqualTo(graphs[0]);
            assertThat(graphs[0].lines().filter(l -> l.contains("subgraph\"")).count()).isEqualTo(2L * layers);
        }
    }

    /** y[0, 64) = (x[64 i, +64) * s) accumulated: sub-graph 0 (IN a, INOUT c, SCALAR f) invoked per tile of x. */
    private static ChipCallable scaledSum(boolean twice, int tiles) {
        Program.Builder p = Program.builder();
        Program.Subgraph sg = p.subgraph(0, List.of(Direction.IN, Direction.INOUT, Direction.SCALAR), body -> {
            body.allocTensor(0, 64);
            body.submit(1, Param.tensor(0, Direction.IN, 0, 64), Param.local(0, Direction.OUT, 0, 64),
                    Param.scalarArg(0));
            if (twice) {
                body.submit(2, Param.local(0, Direction.IN, 0, 64), Param.tensor(1, Direction.INOUT, 0, 64));
            }
            body.submit(2, Param.local(0, Direction.IN, 0, 64), Param.tensor(1, Direction.INOUT, 0, 64));
        });
        p.loop(tiles, (q, i) -> q.scope(s -> s.invoke(sg, Param.tensor(0, Direction.IN, i.times(64), Affine.of(64)),
                Param.tensor(1, Direction.INOUT, 0, 64), Param.scalarArg(0))));
        return ChipCallable.builder()
                .signature(Direction.IN, Direction.INOUT, Direction.SCALAR)
                .child(1, Kernel.vmuls())
                .child(2, Kernel.tileAdd())
                .program(p.build())
                .build();
    }

    private static float[] scaledSumReference(float[] x, float s, int tiles, int adds) {
        float[] y = new float[16];
        for (int t = 0; t < tiles; t++) {
            for (int a = 0; a < adds; a++) {
                for (int i = 0; i < 16; i++) {
                    y[i] = y[i] + x[16 * t + i] * s;
                }
            }
        }
        return y;
    }

    @ParameterizedTest
    @MethodSource("variants")
    void aReRegistrationWithAnotherBodyComputesTheNewBodyWithOtherScalarsEachRun(Variant variant) {
        int tiles = 6;
        try (ChipWorker chip = ChipWorker.open(HostRuntime.load(variant), 0)) {
            for (int round = 0; round < 2; round++) {
                chip.registerCallable(5, scaledSum(round == 1, tiles));
                for (int k = 0; k < 3; k++) {
                    float s = 0.5f + k + round;
                    float[] x = random(16 * tiles, 50 + k);
                    float[] y = new float[16];
                    chip.run(5, TaskArgs.of(Tensor.of(x), Tensor.of(y)).scalarF32(s), CallConfig.DEFAULT);
                    assertBitExact(y, scaledSumReference(x, s, tiles, round + 1));
                }
                chip.unregisterCallable(5);
            }
        }
    }
}

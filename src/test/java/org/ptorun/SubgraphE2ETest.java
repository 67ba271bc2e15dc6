package org.ptorun;

import static org.assertj.core.api.Assertions.assertThat;
import static org.ptorun.SimE2E.assertBitExact;
import static org.ptorun.SimE2E.random;
import static org.ptorun.callable.Direction.IN;
import static org.ptorun.callable.Direction.INOUT;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.ptorun.callable.ChipCallable;
import org.ptorun.callable.CoreType;
import org.ptorun.callable.Kernel;

/**
 * Sub-graphs submitted by an orchestration library ({@code PtoOrchApi.subgraph_submit}), on
 * all eight libraries through the packaged contract: libptorun_test_orch.so's decode-shaped
 * orchestrations, every layer submitted task by task ({@code decode_inline}) or as one
 * recorded layer submitted per layer ({@code decode_subgraph}), give the same bytes, run
 * after run with other data; the dependency graph shows one entry and one exit per layer.
 */
class SubgraphE2ETest {

    static final int D = 128;
    static final int ROWS = 16;

    static List<Variant> variants() {
        return SimE2E.allVariants();
    }

    /** h (INOUT) [ROWS x D], w (IN) [layers x D x D]; children as decode_* expect them. */
    static ChipCallable decode(String entry) {
        return ChipCallable.builder()
                .signature(INOUT, IN)
                .child(2, CoreType.AIC, Kernel.gemmTile())
                .child(3, Kernel.softmaxRows())
                .child(4, Kernel.tileAdd())
                .child(5, Kernel.vfill())
                .orchestrationLibrary(SimE2E.orchestrationLibrary(), entry)
                .build();
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
}

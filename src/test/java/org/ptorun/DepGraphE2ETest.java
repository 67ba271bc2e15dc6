package org.ptorun;

import static org.assertj.core.api.Assertions.assertThat;
import static org.ptorun.SimE2E.filled;
import static org.ptorun.SimE2E.random;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.ptorun.callable.ChipCallable;

/**
 * hbg builds the dependency graph on the host, trb infers it on the device with its
 * tensor map; for the same callable both export the same graph
 * ({@code CallConfig.enableDepGraph}): {@code <output_prefix>/dep_graph_<run_id>_<run_epoch>.dot},
 * byte for byte.
 */
class DepGraphE2ETest {

    private static final int ID = 4;

    static List<Variant.Arch> arches() {
        return SimE2E.arches();
    }

    static List<Variant> variants() {
        return SimE2E.allVariants();
    }

    /** Runs once with the dependency graph on and returns the file the run wrote. */
    private static byte[] depGraph(Variant variant, ChipCallable callable, TaskArgs args, Path dir) throws IOException {
        Path prefix = Files.createDirectories(dir.resolve(variant.libraryName()));
        CallConfig config = CallConfig.builder().enableDepGraph(true).outputPrefix(prefix).build();
        try (ChipWorker chip = ChipWorker.open(HostRuntime.load(variant), 0)) {
            chip.registerCallable(ID, callable);
            NativeRun run = chip.prepare(ID, args, config, PipelineSlotLease.of(0, 1), 42, 7, null);
            chip.launch(run);
            RunReport report = chip.finalizeRun(run);
            Path file = prefix.resolve("dep_graph_42_" + run.runEpoch() + ".dot");
            assertThat(report.outputFiles()).as("the file the run wrote, returned").containsExactly(file);
            assertThat(file).as("the graph file of run_id 42, run_epoch %d", run.runEpoch()).isRegularFile();
            try (var listing = Files.list(prefix)) {
                assertThat(listing.toList()).as("one file per run").containsExactly(file);
            }
            return Files.readAllBytes(file);
        }
    }

    @ParameterizedTest
    @MethodSource("variants")
    void theVectorChainGraphIsExactlyItsFiveTasksAndSixEdges(Variant variant, @TempDir Path dir) throws IOException {
        int n = 64;
        byte[] graph = depGraph(variant, ChipWorkerE2ETest.vectorChain(n),
                RuntimeGoldenE2ETest.chainArgs(random(n, 1), random(n, 2), filled(n)), dir);
        // s = a+b (t0); p = s+1 (t1), q = s+2 (t2) read s; r = p*q (t3); f = r+s (t4)
        assertThat(new String(graph, java.nio.charset.StandardCharsets.US_ASCII)).isEqualTo(""
                + "digraph ptorun_run {\n"
                + "  t0 [label=\"0 f0\"];\n"
                + "  t1 [label=\"1 f1\"];\n"
                + "  t2 [label=\"2 f1\"];\n"
                + "  t3 [label=\"3 f2\"];\n"
                + "  t4 [label=\"4 f0\"];\n"
                + "  t0 -> t1;\n"
                + "  t0 -> t2;\n"
                + "  t1 -> t3;\n"
                + "  t2 -> t3;\n"
                + "  t0 -> t4;\n"
                + "  t3 -> t4;\n"
                + "}\n");
    }

    @ParameterizedTest
    @MethodSource("arches")
    void hbgAndTrbWriteByteIdenticalGraphsForLoopsLocalsAndScopes(Variant.Arch arch, @TempDir Path dir)
            throws IOException {
        int rows = 4;
        int segments = 3;
        int seg = 8;
        ChipCallable nested = Programs.nested(rows, segments, seg);
        float[] x = random(rows * segments * seg, 3);
        byte[] hbg = depGraph(SimE2E.sim(arch, Variant.RuntimeKind.HBG), nested,
                TaskArgs.of(Tensor.of(x), Tensor.of(new float[x.length]), Tensor.of(new float[rows])), dir);
        byte[] trb = depGraph(SimE2E.sim(arch, Variant.RuntimeKind.TRB), nested,
                TaskArgs.of(Tensor.of(x), Tensor.of(new float[x.length]), Tensor.of(new float[rows])), dir);
        String text = new String(hbg, java.nio.charset.StandardCharsets.US_ASCII);
        assertThat(text).startsWith("digraph ptorun_run {\n").endsWith("}\n")
                .contains("  t" + (nested.program().orElseThrow().taskCount() - 1) + " [label=");
        assertThat(trb).as("trb's graph, byte for byte").isEqualTo(hbg);
    }

    @ParameterizedTest
    @MethodSource("arches")
    void hbgAndTrbWriteByteIdenticalGraphsForTheTiledGemm(Variant.Arch arch, @TempDir Path dir) throws IOException {
        int batch = 2;
        int m = 4;
        int k = 12;
        int n = 4;
        ChipCallable gemm = Programs.tiledGemm(batch, m, k, n, 3);
        byte[] hbg = depGraph(SimE2E.sim(arch, Variant.RuntimeKind.HBG), gemm,
                TaskArgs.of(Tensor.of(random(batch * m * k, 1)), Tensor.of(random(batch * k * n, 2)),
                        Tensor.of(new float[batch * m * n])), dir);
        byte[] trb = depGraph(SimE2E.sim(arch, Variant.RuntimeKind.TRB), gemm,
                TaskArgs.of(Tensor.of(random(batch * m * k, 1)), Tensor.of(random(batch * k * n, 2)),
                        Tensor.of(new float[batch * m * n])), dir);
        assertThat(trb).as("trb's graph, byte for byte").isEqualTo(hbg);
        assertThat(new String(hbg, java.nio.charset.StandardCharsets.US_ASCII)).contains("  t0 -> t3;\n");
    }
}

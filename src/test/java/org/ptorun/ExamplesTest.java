package org.ptorun;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.ptorun.examples.PipelinedBatch;
import org.ptorun.examples.DataParallelGemm;
import org.ptorun.examples.TiledMatmul;
import org.ptorun.examples.UserKernel;
import org.ptorun.examples.VectorService;

/**
 * The examples of docs/getting-started.md (examples/), run on all eight libraries so they
 * stay true: the Worker service, a user kernel library compiled with the documented
 * command against the headers the jar ships, and the pipelined batch.
 */
class ExamplesTest {

    private static Path kernelLibrary;

    static List<Variant> variants() {
        return Variant.all();
    }

    /** The build line of docs/getting-started.md, against the headers as the jar carries them. */
    @BeforeAll
    static void buildTheUserKernel() throws IOException, InterruptedException {
        Path headers = Path.of("target/classes/META-INF/ptorun/include").toAbsolutePath();
        assertThat(headers.resolve("ptorun/pto_kernel.h")).as("the headers the jar ships").isRegularFile();
        Path out = Files.createDirectories(Path.of("target/examples")).toAbsolutePath();
        kernelLibrary = out.resolve("libscale_add.so");
        Process cc = new ProcessBuilder("cc", "-std=c11", "-O2", "-fPIC", "-shared", "-Wl,--no-undefined",
                "-I", headers.toString(), "-o", kernelLibrary.toString(),
                Path.of("examples/kernel/scale_add.c").toAbsolutePath().toString())
                .redirectErrorStream(true).start();
        String output = new String(cc.getInputStream().readAllBytes());
        assertThat(cc.waitFor(120, TimeUnit.SECONDS)).isTrue();
        assertThat(cc.exitValue()).as("cc: %s", output).isZero();
    }

    @ParameterizedTest
    @MethodSource("variants")
    void theWorkerServiceServesEveryRequestExactly(Variant variant) throws Exception {
        try (VectorService service = new VectorService(variant, 1024)) {
            assertThat(service.serve(40)).isEqualTo(40);
        }
    }

    @ParameterizedTest
    @MethodSource("variants")
    void theFirstProjectRunsAndChecksItsResults(Variant variant) throws Exception {
        com.example.FirstRun.runOn(variant); // throws on a wrong result
    }

    @ParameterizedTest
    @MethodSource("variants")
    void theUserKernelComputesScaleAdd(Variant variant) {
        float[] x = {1, 2, 3, 4};
        float[] y = {10, 20, 30, 40};
        UserKernel.scaleAdd(variant, kernelLibrary, 3f, x, y);
        assertThat(y).containsExactly(13f, 26f, 39f, 52f);
    }

    @ParameterizedTest
    @MethodSource("variants")
    void thePipelinedBatchOverlapsWhereTheLibraryCan(Variant variant) {
        int runs = 20;
        int overlapped = PipelinedBatch.run(variant, runs);
        if (variant.runtime() == Variant.RuntimeKind.HBG || variant.arch() == Variant.Arch.A2A3) {
            // trb a2a3 too: every run has the default ring sizing, so each fits its predecessor's image
            assertThat(overlapped).as("every run after the first prepared while its predecessor was unfinalized")
                    .isEqualTo(runs - 1);
        } else {
            assertThat(overlapped).as("a5 trb has one pipeline slot: it cannot prepare while a run executes").isZero();
        }
    }

    /** TiledMatmul against a sequential Java reference (the kernel's order: acc = C; acc += a·b over k). */
    @ParameterizedTest
    @MethodSource("variants")
    void theTiledMatmulCoversAnySizeWithShortLastTiles(Variant variant) {
        int m = 11;
        int n = 37;
        int k = 10;
        float[] a = new float[m * k];
        float[] b = new float[k * n];
        float[] c = new float[m * n];
        java.util.Random random = new java.util.Random(7);
        for (int x = 0; x < a.length; x++) {
            a[x] = random.nextFloat() - 0.5f;
        }
        for (int x = 0; x < b.length; x++) {
            b[x] = random.nextFloat() - 0.5f;
        }
        for (int x = 0; x < c.length; x++) {
            c[x] = random.nextFloat();
        }
        float[] expected = c.clone();
        for (int i = 0; i < m; i++) {
            for (int j = 0; j < n; j++) {
                float acc = expected[i * n + j];
                for (int l = 0; l < k; l++) {
                    acc = acc + a[i * k + l] * b[l * n + j];
                }
                expected[i * n + j] = acc;
            }
        }
        TiledMatmul.run(variant, m, n, k, 4, a, b, c);
        assertThat(c).containsExactly(expected);
    }

    /** DataParallelGemm: every chip holds the whole product, summed over the chips in rank order. */
    @ParameterizedTest
    @MethodSource("variants")
    void theDataParallelGemmLeavesTheProductOnEveryChip(Variant variant) throws Exception {
        int chips = 3;
        int m = 7;
        int n = 6;
        int kr = 4;
        java.util.Random random = new java.util.Random(11);
        float[][] a = new float[chips][m * kr];
        float[][] b = new float[chips][kr * n];
        for (int r = 0; r < chips; r++) {
            for (int x = 0; x < a[r].length; x++) {
                a[r][x] = random.nextFloat() - 0.5f;
            }
            for (int x = 0; x < b[r].length; x++) {
                b[r][x] = random.nextFloat() - 0.5f;
            }
        }
        float[] expected = new float[m * n];
        for (int r = 0; r < chips; r++) {
            for (int i = 0; i < m; i++) {
                for (int j = 0; j < n; j++) {
                    float acc = 0f;
                    for (int l = 0; l < kr; l++) {
                        acc = acc + a[r][i * kr + l] * b[r][l * n + j];
                    }
                    expected[i * n + j] = r == 0 ? acc : expected[i * n + j] + acc;
                }
            }
        }
        float[][] c = DataParallelGemm.run(variant, chips, m, kr, n, a, b);
        for (float[] rank : c) {
            assertThat(rank).containsExactly(expected);
        }
    }
}

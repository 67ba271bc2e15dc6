package org.ptorun.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.PrintWriter;
import java.io.StringWriter;
import org.junit.jupiter.api.Test;
import org.ptorun.Variant;
import org.ptorun.internal.NativeApi;

/** The ptorun command in this JVM (picocli's execute): exit codes, output, JSON that parses. */
class MainTest {

    private static final ObjectMapper JSON = new ObjectMapper();

    record Outcome(int exitCode, String out, String err) {
    }

    static Outcome run(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int rc = Main.execute(args, new PrintWriter(out, true), new PrintWriter(err, true));
        return new Outcome(rc, out.toString(), err.toString());
    }

    @Test
    void helpExitsZeroAndNamesEveryCommandAndTheExitCodes() {
        Outcome o = run("--help");
        assertThat(o.exitCode()).isZero();
        assertThat(o.out()).contains("demo", "inspect", "bench", "Exit codes:", "2   usage");
        assertThat(run("help", "inspect").exitCode()).isZero();
        assertThat(run("--version").out()).startsWith("ptorun ");
    }

    @Test
    void usageErrorsExitTwo() {
        assertThat(run().exitCode()).as("no command").isEqualTo(2);
        assertThat(run("frobnicate").exitCode()).isEqualTo(2);
        assertThat(run("demo", "--no-such-option").exitCode()).isEqualTo(2);
        Outcome badVariant = run("demo", "--variant", "a2a3/sim/xyz");
        assertThat(badVariant.exitCode()).isEqualTo(2);
        assertThat(badVariant.err()).contains("--variant", "a2a3/sim/xyz");
        assertThat(run("bench", "--runs", "5").exitCode()).isEqualTo(2);
        assertThat(run("demo", "--runs", "0").exitCode()).isEqualTo(2);
        assertThat(run("inspect", "--all", "--variant", "a5/sim/trb").exitCode()).as("exclusive").isEqualTo(2);
    }

    @Test
    void demoRunsAndChecksEveryResult() {
        Outcome o = run("demo", "--runs", "2");
        assertThat(o.exitCode()).as(o.err()).isZero();
        assertThat(o.out()).contains("run 2: finalized").contains("elements equal the Java reference")
                .doesNotContain("WRONG");
    }

    @Test
    void demoWritesTheLastRunsTraceToTheGivenFile(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir)
            throws Exception {
        java.nio.file.Path file = dir.resolve("out/demo-trace.json");
        Outcome o = run("demo", "--runs", "3", "--trace", file.toString());
        assertThat(o.exitCode()).as(o.err()).isZero();
        assertThat(o.out()).contains("run 3's trace: " + file).doesNotContain("WRONG");
        JsonNode doc = JSON.readTree(file.toFile());
        assertThat(doc.at("/metadata/run_id").asLong()).isEqualTo(3);
        long slices = 0;
        for (JsonNode e : doc.get("traceEvents")) {
            if (e.get("ph").asText().equals("X") && e.get("tid").asInt() > 0) {
                slices++;
            }
        }
        assertThat(slices).as("the chain's five tasks").isEqualTo(5);
        try (var listing = java.nio.file.Files.list(file.getParent())) {
            assertThat(listing.toList()).as("no temporary directory left").containsExactly(file);
        }
    }

    @Test
    void inspectAllAsJsonReportsEveryLibrarySound() throws Exception {
        Outcome o = run("inspect", "--all", "--json");
        assertThat(o.exitCode()).as(o.err()).isZero();
        JsonNode doc = JSON.readTree(o.out());
        assertThat(doc.get("ok").asBoolean()).isTrue();
        assertThat(doc.get("libraries")).hasSize(8);
        for (JsonNode lib : doc.get("libraries")) {
            Variant v = Variant.parse(lib.get("variant").asText());
            assertThat(lib.get("loaded").asBoolean()).isTrue();
            assertThat(lib.at("/library/fileName").asText()).isEqualTo(v.libraryFileName());
            assertThat(lib.at("/symbols/exactlyTheContract").asBoolean()).isTrue();
            assertThat(lib.at("/symbols/exported")).hasSize(NativeApi.SYMBOLS.size());
            for (String setter : NativeApi.FORBIDDEN_SYMBOLS) {
                assertThat(lib.at("/removedSetters/" + setter).asText()).isEqualTo("absent");
            }
            int depth = lib.at("/pipelineContract/pipelineDepth").asInt();
            assertThat(depth).isBetween(1, 2);
            assertThat(lib.at("/pipelineContract/bankOfSlot")).hasSize(depth);
            assertThat(lib.at("/runStorage/size").asLong()).isGreaterThanOrEqualTo(8);
            assertThat(Long.bitCount(lib.at("/runStorage/alignment").asLong())).isEqualTo(1);
            assertThat(lib.at("/deviceImages/aicpu/present").asBoolean()).isTrue();
            assertThat(lib.at("/deviceImages/aicore/bytes").asLong()).isPositive();
            assertThat(lib.at("/driver/kind").asText())
                    .isEqualTo(v.platform() == Variant.Platform.SIM ? "none" : "bundled");
        }
    }

    @Test
    void inspectAsTextNamesTheLibraryAndTheContract() {
        Outcome o = run("inspect", "--variant", "a5/sim/trb");
        assertThat(o.exitCode()).as(o.err()).isZero();
        assertThat(o.out()).contains("a5/sim/trb", "libptorun_a5_sim_trb.so", "exactly the contract",
                "depth=1", "run storage", "aicore image");
    }

    @Test
    void benchAsJsonParses() throws Exception {
        Outcome o = run("bench", "--runs", "200", "--json");
        assertThat(o.exitCode()).as(o.err()).isZero();
        JsonNode doc = JSON.readTree(o.out());
        assertThat(doc.get("variant").asText()).isEqualTo("a2a3/sim/hbg");
        assertThat(doc.get("runs").asInt()).isEqualTo(200);
        double p50 = doc.at("/cycleMicros/p50").asDouble();
        assertThat(p50).isPositive().isLessThanOrEqualTo(doc.at("/cycleMicros/p99").asDouble());
        assertThat(doc.get("cycleOverFloor").asDouble()).isPositive();
    }

    @Test
    void aFailureExitsOneWithAMessage() throws Exception {
        // an exception out of a command is exit 1 and one line naming it
        StringWriter err = new StringWriter();
        picocli.CommandLine cmd = Main.commandLine();
        cmd.setErr(new PrintWriter(err, true));
        cmd.setOut(new PrintWriter(new StringWriter(), true));
        int rc = cmd.getExecutionExceptionHandler().handleExecutionException(
                new IllegalStateException("run 3 produced wrong results"), cmd, null);
        assertThat(rc).isEqualTo(1);
        assertThat(err.toString()).contains("ptorun ptorun: IllegalStateException: run 3 produced wrong results");
    }
}

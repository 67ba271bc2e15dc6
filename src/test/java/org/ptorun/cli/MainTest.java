package org.ptorun.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

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
    void demoRunsChecksEveryResultAndEndsWithOneVerdict() {
        Outcome o = run("demo", "--runs", "2");
        assertThat(o.exitCode()).as(o.err()).isZero();
        assertThat(o.out()).contains("ptorun demo on a2a3/sim/hbg: 2 runs of f = (a+b+1)*(a+b+2)+(a+b)",
                        "prepares run N+1", "run 2: prepared", "while run 1 executed", "launch confirmed",
                        "run 2: done, all 1,048,576 elements of f equal plain Java")
                .doesNotContain("FAILED", "depth=", "GM_HEAP", "accepted=");
        java.util.List<String> lines = o.out().lines().toList();
        assertThat(lines.get(lines.size() - 1))
                .isEqualTo("ok: 2 runs on a2a3/sim/hbg, every result equal to plain Java");
        assertThat(lines).filteredOn(l -> l.startsWith("ok:") || l.startsWith("FAILED:")).hasSize(1);
    }

    @Test
    void demoSaysWhenALibraryRunsOneRunAtATime() {
        Outcome o = run("demo", "--variant", "a5/sim/trb", "--runs", "2");
        assertThat(o.exitCode()).as(o.err()).isZero();
        assertThat(o.out()).contains("one run at a time").doesNotContain("while run 1 executed")
                .endsWith("ok: 2 runs on a5/sim/trb, every result equal to plain Java" + System.lineSeparator());
    }

    @Test
    void demoWritesTheLastRunsTraceToTheGivenFile(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir)
            throws Exception {
        java.nio.file.Path file = dir.resolve("out/demo-trace.json");
        Outcome o = run("demo", "--runs", "3", "--trace", file.toString());
        assertThat(o.exitCode()).as(o.err()).isZero();
        assertThat(o.out()).contains("run 3's trace: " + file, "the last run records a trace")
                .contains("ok: 3 runs on a2a3/sim/hbg").doesNotContain("FAILED");
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
            assertThat(lib.at("/library/origin").asText()).as("tests load from target/classes")
                    .isEqualTo("directory");
            assertThat(lib.at("/symbols/exactlyTheContract").asBoolean()).isTrue();
            assertThat(lib.at("/symbols/contractSize").asInt()).isEqualTo(NativeApi.SYMBOLS.size());
            java.util.List<String> exported = new java.util.ArrayList<>();
            lib.at("/symbols/exported").forEach(n -> exported.add(n.asText()));
            // exactly the contract: a symbol outside it (such as a removed setter) would be "unexpected"
            assertThat(exported).containsExactlyInAnyOrderElementsOf(NativeApi.SYMBOLS);
            assertThat(lib.at("/symbols/missing")).isEmpty();
            assertThat(lib.at("/symbols/unexpected")).isEmpty();
            assertThat(lib.has("removedSetters")).as("no project history in the output").isFalse();
            int depth = lib.at("/pipelineContract/pipelineDepth").asInt();
            assertThat(depth).isBetween(1, 2);
            assertThat(lib.at("/pipelineContract/bankOfSlot")).hasSize(depth);
            // hbg, and trb where it has a second slot (a2a3): every depth-2 library overlaps
            boolean concurrent = depth == 2;
            assertThat(concurrent).isEqualTo(v.runtime() == Variant.RuntimeKind.HBG || v.arch() == Variant.Arch.A2A3);
            assertThat(lib.at("/pipelineContract/overlap").asBoolean()).isEqualTo(concurrent);
            assertThat(lib.at("/pipelineContract/runsInFlight").asInt()).isEqualTo(concurrent ? 2 : 1);
            assertThat(lib.at("/runStorage/size").asLong()).isGreaterThanOrEqualTo(8);
            assertThat(Long.bitCount(lib.at("/runStorage/alignment").asLong())).isEqualTo(1);
            assertThat(lib.at("/deviceImages/aicpu/present").asBoolean()).isTrue();
            assertThat(lib.at("/deviceImages/aicore/bytes").asLong()).isPositive();
            assertThat(lib.at("/driver/kind").asText())
                    .isEqualTo(v.platform() == Variant.Platform.SIM ? "none" : "bundled");
        }
    }

    @Test
    void inspectAsTextSaysWhatAUserNeedsInWords() {
        Outcome o = run("inspect", "--variant", "a5/sim/trb", "--variant", "a2a3/sim/hbg", "-v", "a2a3/onboard/trb");
        assertThat(o.exitCode()).as(o.err()).isZero();
        assertThat(o.out()).contains("a5/sim/trb", "libptorun_a5_sim_trb.so from the directory",
                "contract      ok, " + NativeApi.SYMBOLS.size() + " functions",
                "in flight     1 run: the library's pipeline has depth 1",
                "in flight     2 runs at most: the next run is prepared while one executes",
                "run storage", "aicore image", "driver        none: the sim platform",
                "driver        the emulated driver bundled with ptorun")
                .doesNotContain("setter", "depth=", "GM_HEAP", "bank(", "does not prepare a run while another executes");
        assertThat(o.out().split("in flight     2 runs at most", -1)).as("a2a3/sim/hbg and a2a3/onboard/trb overlap")
                .hasSize(3);
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
        assertThat(doc.get("wakeRoundTripMicrosP50").asDouble()).isPositive();
        assertThat(doc.get("cycleOverWakeRoundTrip").asDouble()).isPositive();
        assertThat(doc.has("cycleOverFloor")).isFalse();
    }

    @Test
    void benchAsTextCallsTheRoundTripAYardstickNotAFloor() {
        Outcome o = run("bench", "--runs", "100");
        assertThat(o.exitCode()).as(o.err()).isZero();
        assertThat(o.out()).contains("p50", "voluntary context switches per run",
                "for scale, a park/unpark round trip between two Java threads", "cycle / round trip = ")
                .doesNotContain("floor");
    }

    @Test
    void runsOutOfRangeIsAUsageErrorFoundWhileParsing() {
        assertThatThrownBy(() -> Main.commandLine().parseArgs("bench", "--runs", "99"))
                .isInstanceOf(picocli.CommandLine.ParameterException.class).hasMessageContaining(">= 100");
        assertThatThrownBy(() -> Main.commandLine().parseArgs("demo", "-n", "0"))
                .isInstanceOf(picocli.CommandLine.ParameterException.class).hasMessageContaining(">= 1");
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

    // ---- replay ------------------------------------------------------------------------------------

    private static final int REPLAY_N = 256;

    private static org.ptorun.TaskArgs replayArgs() {
        float[][] x = new float[7][REPLAY_N];
        for (int i = 0; i < REPLAY_N; i++) {
            x[0][i] = i * 0.25f;
            x[1][i] = 3 - i * 0.5f;
        }
        org.ptorun.TaskArgs args = new org.ptorun.TaskArgs();
        for (float[] t : x) {
            args.tensor(org.ptorun.Tensor.of(t));
        }
        return args;
    }

    /** A run of the demo's chain captured with its outputs on a2a3/sim/hbg. */
    private static org.ptorun.capture.RunCapture capturedChain() {
        org.ptorun.TaskArgs args = replayArgs();
        org.ptorun.callable.ChipCallable chain = Demo.vectorChain(REPLAY_N);
        org.ptorun.capture.RunCapture c = org.ptorun.capture.RunCapture.of(Variant.DEFAULT, 4, chain, args,
                org.ptorun.CallConfig.DEFAULT);
        try (org.ptorun.ChipWorker chip = org.ptorun.ChipWorker.open(org.ptorun.HostRuntime.load(Variant.DEFAULT), 0)) {
            chip.registerCallable(4, chain);
            return c.withOutcome(args, chip.run(4, args, org.ptorun.CallConfig.DEFAULT));
        }
    }

    /** A kernel fault captured on a2a3/sim/hbg: vadd over a 32-byte view. */
    private static org.ptorun.capture.RunCapture capturedFault() {
        org.ptorun.callable.ChipCallable faulty = org.ptorun.callable.ChipCallable.builder()
                .signature(org.ptorun.callable.Direction.IN, org.ptorun.callable.Direction.IN,
                        org.ptorun.callable.Direction.OUT)
                .child(7, org.ptorun.callable.Kernel.vadd())
                .program(org.ptorun.callable.Program.builder()
                        .submit(7, org.ptorun.callable.Param.tensor(0, org.ptorun.callable.Direction.IN, 0, 32),
                                org.ptorun.callable.Param.tensor(1, org.ptorun.callable.Direction.IN, 0, 4L * REPLAY_N),
                                org.ptorun.callable.Param.tensor(2, org.ptorun.callable.Direction.OUT, 0,
                                        4L * REPLAY_N))
                        .build())
                .build();
        org.ptorun.TaskArgs args = org.ptorun.TaskArgs.of(org.ptorun.Tensor.of(new float[REPLAY_N]),
                org.ptorun.Tensor.of(new float[REPLAY_N]), org.ptorun.Tensor.of(new float[REPLAY_N]));
        org.ptorun.capture.RunCapture c = org.ptorun.capture.RunCapture.of(Variant.DEFAULT, 9, faulty, args,
                org.ptorun.CallConfig.DEFAULT);
        try (org.ptorun.ChipWorker chip = org.ptorun.ChipWorker.open(org.ptorun.HostRuntime.load(Variant.DEFAULT), 0)) {
            chip.registerCallable(9, faulty);
            chip.run(9, args, org.ptorun.CallConfig.DEFAULT);
            throw new AssertionError("the faulty callable ran");
        } catch (org.ptorun.KernelFaultException e) {
            return c.withFailure(e);
        }
    }

    private static String lastLine(String out) {
        java.util.List<String> lines = out.lines().toList();
        return lines.get(lines.size() - 1);
    }

    @Test
    void replayOfARunThatFinishedComparesItsOutputs(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) {
        org.ptorun.capture.RunCapture c = capturedChain();
        java.nio.file.Path file = c.write(dir.resolve("ok.ptocap"));
        Outcome o = run("replay", file.toString());
        assertThat(o.exitCode()).as(o.out() + o.err()).isZero();
        assertThat(o.out()).contains("callable 4", "captured on a2a3/sim/hbg", "7 tensors", "finished with outputs",
                "replaying on a2a3/sim/hbg");
        assertThat(lastLine(o.out())).isEqualTo("outputs equal to the capture");

        Outcome other = run("replay", file.toString(), "--variant", "a5/onboard/trb");
        assertThat(other.exitCode()).as(other.out()).isZero();
        assertThat(lastLine(other.out())).isEqualTo("outputs equal to the capture");

        Outcome against = run("replay", file.toString(), "--against", "a2a3/sim/trb");
        assertThat(against.exitCode()).as(against.out()).isZero();
        assertThat(lastLine(against.out())).isEqualTo("outputs equal to a2a3/sim/hbg");

        // one output bit flipped: element 5 of tensor 2 (f)
        org.ptorun.capture.RunCapture.CapturedTensor f = c.tensors().get(2);
        byte[] wrong = f.output().clone();
        wrong[4 * 5 + 3] ^= 0x40;
        java.util.List<org.ptorun.capture.RunCapture.CapturedTensor> tensors = new java.util.ArrayList<>(c.tensors());
        tensors.set(2, new org.ptorun.capture.RunCapture.CapturedTensor(f.direction(), f.dtype(), f.shape(),
                f.strides(), f.startOffset(), f.byteSize(), f.input(), wrong));
        java.nio.file.Path tampered = new org.ptorun.capture.RunCapture(c.formatVersion(), c.variant(),
                c.callableId(), c.callable(), c.config(), c.scalars(), tensors, c.failure(), c.identity())
                .write(dir.resolve("tampered.ptocap"));
        Outcome differ = run("replay", tampered.toString());
        assertThat(differ.exitCode()).isEqualTo(Main.FAILURE);
        float got = java.nio.ByteBuffer.wrap(f.output()).order(java.nio.ByteOrder.LITTLE_ENDIAN).getFloat(4 * 5);
        assertThat(lastLine(differ.out())).startsWith("outputs differ: tensor 2 element 5: expected ")
                .endsWith(" got " + got + String.format(" (0x%08x)", Float.floatToRawIntBits(got)));
    }

    @Test
    void replayOfAFailedRunReproducesItsFailure(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) {
        org.ptorun.capture.RunCapture c = capturedFault();
        java.nio.file.Path file = c.write(dir.resolve(c.fileName()));
        Outcome o = run("replay", file.toString());
        assertThat(o.exitCode()).as(o.out() + o.err()).isZero();
        assertThat(o.out()).contains("failed with KernelFaultException (code ", "captured run: run_id=");
        assertThat(lastLine(o.out())).startsWith("reproduced: KernelFaultException ");

        // a capture that says the chain failed: its replay succeeds
        java.nio.file.Path claimed = capturedChain().withFailure(new IllegalStateException("said to fail"))
                .write(dir.resolve("claimed.ptocap"));
        Outcome not = run("replay", claimed.toString());
        assertThat(not.exitCode()).isEqualTo(Main.FAILURE);
        assertThat(lastLine(not.out())).startsWith("not reproduced: the run succeeded");
    }

    @Test
    void replayWritesTheReplaysTrace(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
        java.nio.file.Path file = capturedChain().write(dir.resolve("ok.ptocap"));
        java.nio.file.Path trace = dir.resolve("out/replay-trace.json");
        Outcome o = run("replay", file.toString(), "--trace", trace.toString());
        assertThat(o.exitCode()).as(o.out() + o.err()).isZero();
        assertThat(o.out()).contains("the replay's trace: " + trace);
        assertThat(JSON.readTree(trace.toFile()).get("traceEvents").size()).isPositive();
        assertThat(lastLine(o.out())).isEqualTo("outputs equal to the capture");
    }

    @Test
    void replayOfABrokenFileFailsAndOfNoFileIsAUsageError(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir)
            throws Exception {
        java.nio.file.Path file = dir.resolve("broken.ptocap");
        java.nio.file.Files.write(file, new byte[] {'P', 'T', 'O', 'C', 'A', 'P', '\r', '\n', 1, 0});
        Outcome o = run("replay", file.toString());
        assertThat(o.exitCode()).isEqualTo(Main.FAILURE);
        assertThat(o.err()).contains("ptorun replay: CaptureFormatException: " + file + " is truncated");
        assertThat(run("replay").exitCode()).isEqualTo(Main.USAGE);
        assertThat(run("replay", file.toString(), "--variant", "a2a3/sim/xyz").exitCode()).isEqualTo(Main.USAGE);
    }
}

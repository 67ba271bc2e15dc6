package org.ptorun;

import static org.assertj.core.api.Assertions.assertThat;
import static org.ptorun.SimE2E.filled;
import static org.ptorun.SimE2E.random;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.ptorun.callable.ChipCallable;

/**
 * {@code CallConfig.enableTrace}: finalize of a successful run writes
 * {@code <output_prefix>/trace_<run_id>_<run_epoch>.json}, a Chrome / Perfetto trace with one
 * slice per task on its logical core's track and the run's host phases on the host track.
 */
class TraceE2ETest {

    private static final int ID = 5;
    /** ts and dur are printed with ns precision; allow for a rounding step either way. */
    private static final double EPS_US = 0.002;

    static List<Variant> variants() {
        return SimE2E.allVariants();
    }

    private record Run(NativeRun run, JsonNode json) {
    }

    private static Run traced(Variant variant, ChipCallable callable, TaskArgs args, Path dir) throws IOException {
        Path prefix = Files.createDirectories(dir.resolve(variant.libraryName()));
        CallConfig config = CallConfig.builder().enableTrace(true).outputPrefix(prefix).build();
        try (ChipWorker chip = ChipWorker.open(HostRuntime.load(variant), 0)) {
            chip.registerCallable(ID, callable);
            NativeRun run = chip.prepare(ID, args, config, PipelineSlotLease.of(0, 3), 42, 7, null);
            chip.launch(run);
            chip.await(run);
            RunReport report = chip.finalizeRun(run);
            Path file = prefix.resolve("trace_42_" + run.runEpoch() + ".json");
            assertThat(report.outputFiles()).as("the file the run wrote, returned").containsExactly(file);
            assertThat(file).as("the trace of run_id 42, run_epoch %d", run.runEpoch()).isRegularFile();
            try (var listing = Files.list(prefix)) {
                assertThat(listing.toList()).as("one file per run, no temporary left").containsExactly(file);
            }
            return new Run(run, new ObjectMapper().readTree(file.toFile()));
        }
    }

    @ParameterizedTest
    @MethodSource("variants")
    void theVectorChainIsFiveSlicesInsideTheHostsLaunchToFinalize(Variant variant, @TempDir Path dir)
            throws IOException {
        int n = 64;
        Run r = traced(variant, ChipWorkerE2ETest.vectorChain(n),
                RuntimeGoldenE2ETest.chainArgs(random(n, 1), random(n, 2), filled(n)), dir);
        JsonNode events = r.json().get("traceEvents");
        assertThat(events.isArray()).isTrue();

        Map<String, JsonNode> host = new HashMap<>();
        List<JsonNode> tasks = new ArrayList<>();
        Map<Integer, String> threadNames = new HashMap<>();
        for (JsonNode e : events) {
            String ph = e.get("ph").asText();
            if (ph.equals("M") && e.get("name").asText().equals("thread_name")) {
                threadNames.put(e.get("tid").asInt(), e.get("args").get("name").asText());
            } else if (ph.equals("X")) {
                assertThat(e.get("ts").isNumber()).as("ts is a number").isTrue();
                assertThat(e.get("dur").isNumber()).as("dur is a number").isTrue();
                assertThat(e.get("pid").asInt()).isEqualTo(1);
                if (e.get("tid").asInt() == 0) {
                    host.put(e.get("name").asText(), e);
                } else {
                    tasks.add(e);
                }
            }
        }
        assertThat(host).containsOnlyKeys("prepare", "launch", "wait", "finalize", "collect");
        assertThat(threadNames.get(0)).isEqualTo("host");

        // s = a+b (t0, vadd); p, q (t1, t2, vadds); r = p*q (t3, vmul); f = r+s (t4, vadd)
        assertThat(tasks).hasSize(5);
        String[] kernels = { "vadd", "vadds", "vadds", "vmul", "vadd" };
        int[] funcIds = { 0, 1, 1, 2, 0 };
        double launchStart = host.get("launch").get("ts").asDouble();
        JsonNode fin = host.get("finalize");
        double finalizeEnd = fin.get("ts").asDouble() + fin.get("dur").asDouble();
        JsonNode collect = host.get("collect");
        assertThat(collect.get("ts").asDouble()).as("collect (the copy-back and the files) lies inside finalize")
                .isGreaterThanOrEqualTo(fin.get("ts").asDouble() - EPS_US);
        assertThat(collect.get("ts").asDouble() + collect.get("dur").asDouble()).isLessThanOrEqualTo(finalizeEnd + EPS_US);
        assertThat(host.get("prepare").get("ts").asDouble()).isLessThanOrEqualTo(launchStart);
        Set<Long> ids = new TreeSet<>();
        double[] end = new double[5];
        for (JsonNode t : tasks) {
            JsonNode args = t.get("args");
            int id = args.get("task_id").asInt();
            ids.add((long) id);
            int core = args.get("core").asInt();
            assertThat(t.get("name").asText()).as("task %d's name", id).isEqualTo(kernels[id]);
            assertThat(args.get("func_id").asInt()).isEqualTo(funcIds[id]);
            assertThat(t.get("tid").asInt()).as("task %d's track is its core's", id).isEqualTo(core + 1);
            assertThat(threadNames.get(core + 1)).startsWith("core " + core + " (");
            double ts = t.get("ts").asDouble();
            double dur = t.get("dur").asDouble();
            assertThat(dur).isGreaterThanOrEqualTo(0);
            assertThat(ts).as("task %d starts after launch started", id).isGreaterThanOrEqualTo(launchStart - EPS_US);
            assertThat(ts + dur).as("task %d ends before finalize ended", id).isLessThanOrEqualTo(finalizeEnd + EPS_US);
            assertThat(ts + dur).as("task %d ends before the copy-back", id)
                    .isLessThanOrEqualTo(collect.get("ts").asDouble() + EPS_US);
            end[id] = ts + dur;
            if (id == 3) {
                // r = p * q cannot start before both of its producers ended
                assertThat(ts).isGreaterThanOrEqualTo(Math.max(end[1], end[2]) - EPS_US);
            }
        }
        assertThat(ids).containsExactly(0L, 1L, 2L, 3L, 4L);

        JsonNode meta = r.json().get("metadata");
        NativeRun run = r.run();
        assertThat(meta.get("run_id").asLong()).isEqualTo(42);
        assertThat(meta.get("dispatch_id").asLong()).isEqualTo(7);
        assertThat(meta.get("generation").asLong()).isEqualTo(run.generation()).isEqualTo(3);
        assertThat(meta.get("run_epoch").asLong()).isEqualTo(run.runEpoch());
        assertThat(meta.get("variant").asText()).isEqualTo(variant.toString());
        assertThat(meta.get("task_count").asInt()).isEqualTo(5);
    }

    @ParameterizedTest
    @MethodSource("variants")
    void aProgramLargerThanTheTraceIsRefusedAtPrepare(Variant variant, @TempDir Path dir) {
        // one row of 70000 one-float segments: 1 + 70000 + 70000 + 1 tasks, over the trace's 65536
        ChipCallable large = Programs.nested(1, 70_000, 1);
        CallConfig config = CallConfig.builder().enableTrace(true).outputPrefix(dir).build();
        try (ChipWorker chip = ChipWorker.open(HostRuntime.load(variant), 0)) {
            chip.registerCallable(ID, large);
            org.assertj.core.api.Assertions.assertThatThrownBy(() -> chip.prepare(ID,
                    TaskArgs.of(Tensor.of(new float[70_000]), Tensor.of(new float[70_000]), Tensor.of(new float[1])),
                    config, PipelineSlotLease.of(0, 1), 1, 1, null))
                    .hasMessageContaining("the trace (CallConfig.enable_trace) records at most 65536 tasks");
        }
    }
}

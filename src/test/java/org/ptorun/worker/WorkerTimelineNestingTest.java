package org.ptorun.worker;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.ptorun.CallConfig;
import org.ptorun.NativeRun;
import org.ptorun.TaskArgs;

/**
 * {@link WorkerTimeline}'s nesting of device tasks, without a chip, on task layouts the
 * simulators do not make: two tasks of one run overlapping on one core, and two runs whose
 * tasks overlap on one core. Every task must still lie inside a slice of its own run on its
 * row, and every row's slices must nest or be disjoint.
 */
class WorkerTimelineNestingTest {

    /** One task line of a run's own trace file, as the library writes it (µs from clock_base_ns). */
    private static String task(String name, int id, int core, String ts, String dur) {
        return "{\"name\":\"" + name + "\",\"cat\":\"task\",\"ph\":\"X\",\"pid\":1,\"tid\":" + (1 + core) + ",\"ts\":"
                + ts + ",\"dur\":" + dur + ",\"args\":{\"task_id\":" + id + ",\"func_id\":0,\"core\":" + core + "}},";
    }

    private static void finish(WorkerTimeline timeline, Path dir, long id, long clockBase, String... tasks)
            throws Exception {
        Path trace = dir.resolve("trace_" + id + "_" + id + ".json");
        Files.writeString(trace, "{\"traceEvents\":[\n" + String.join("\n", tasks) + "\n{}],\"metadata\":{"
                + "\"clock\":\"CLOCK_MONOTONIC\",\"clock_base_ns\":" + clockBase + "}}\n");
        RunTicket t = new RunTicket(id, id, 0, 0, 7, new TaskArgs(), CallConfig.DEFAULT, clockBase, Runnable::run);
        long s = clockBase;
        RunTimings timings = new RunTimings(s, s + 1, s + 2, s + 3, s + 4, s + 5, s + 6, s + 7);
        timeline.runFinished(t, new RunResult(new NativeRun(0, 1, id, id, id), 0, id, timings, 0, List.of(trace)),
                null);
    }

    record X(long tid, String name, long start, long end, JsonNode args) {
    }

    @Test
    void everyTaskLiesInsideASliceOfItsRunEvenWhereTasksOverlap(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("t.json");
        WorkerTimeline timeline = new WorkerTimeline(file, 10);
        // run 1: on core 0, task 1 overlaps task 0 (a second parent), task 2 follows both; core 1 has one task
        finish(timeline, dir, 1, 1_000_000,
                task("a", 0, 0, "0.000", "10.000"),
                task("b", 1, 0, "5.000", "10.000"),
                task("c", 2, 0, "20.000", "1.000"),
                task("d", 3, 1, "2.000", "3.000"));
        // run 2: its task on core 0 starts inside run 1's span there (another row)
        finish(timeline, dir, 2, 1_008_000, task("e", 0, 0, "0.000", "4.000"));
        timeline.writeOnce();

        JsonNode root = new ObjectMapper().readTree(file.toFile());
        assertThat(root.get("metadata").get("unreadDeviceTraces").asInt()).isZero();
        Map<Long, String> tracks = new HashMap<>();
        List<X> slices = new ArrayList<>();
        for (JsonNode e : root.get("traceEvents")) {
            if (e.get("ph").asText().equals("M") && e.get("name").asText().equals("thread_name")) {
                tracks.put(e.get("tid").asLong(), e.get("args").get("name").asText());
            } else if (e.get("ph").asText().equals("X")) {
                long start = Math.round(e.get("ts").asDouble() * 1000);
                slices.add(new X(e.get("tid").asLong(), e.get("name").asText(), start,
                        start + Math.round(e.get("dur").asDouble() * 1000), e.get("args")));
            }
        }
        List<X> tasks = slices.stream().filter(x -> x.args.has("taskId")).toList();
        assertThat(tasks).extracting(X::name).containsExactlyInAnyOrder("a", "b", "c", "d", "e");
        for (X task : tasks) {
            long run = task.args.get("dispatchId").asLong();
            List<X> parents = slices.stream().filter(p -> p.tid == task.tid && p.name.startsWith("run " + run + " ")
                    && p.start <= task.start && task.end <= p.end).toList();
            assertThat(parents).as("the slice of run %d holding task %s", run, task.name).hasSize(1);
            assertThat(tracks.get(task.tid)).startsWith("chip 0 core " + task.args.get("core").asInt());
        }
        // run 1 on core 0: a parent for a and c, another for b (which overlaps a)
        List<X> run1core0 = slices.stream().filter(p -> p.name.startsWith("run 1 ")
                && p.args.get("core").asInt() == 0).toList();
        assertThat(run1core0).extracting(p -> p.args.get("tasks").asInt()).containsExactlyInAnyOrder(2, 1);
        assertThat(run1core0).extracting(X::tid).doesNotHaveDuplicates();
        // on every row: disjoint or nested, only a run's slice holding others
        Map<Long, List<X>> byTid = new HashMap<>();
        for (X x : slices) {
            byTid.computeIfAbsent(x.tid, k -> new ArrayList<>()).add(x);
        }
        for (List<X> row : byTid.values()) {
            for (X a : row) {
                for (X b : row) {
                    if (a != b && a.start < b.end && b.start < a.end) {
                        boolean bInA = a.start <= b.start && b.end <= a.end;
                        boolean aInB = b.start <= a.start && a.end <= b.end;
                        assertThat(bInA || aInB).as("%s and %s on %s", a, b, tracks.get(a.tid)).isTrue();
                        // the same bounds (a run's one task): the run's slice is the outer one
                        boolean aOuter = bInA && (!aInB || a.args.has("tasks"));
                        X outer = aOuter ? a : b;
                        X inner = aOuter ? b : a;
                        assertThat(outer.name).startsWith("run " + inner.args.get("dispatchId").asLong() + " ");
                    }
                }
            }
        }
    }
}

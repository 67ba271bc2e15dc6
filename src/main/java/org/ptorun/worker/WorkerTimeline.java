package org.ptorun.worker;

import java.io.IOException;
import java.io.Writer;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.ptorun.NativeRun;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A timeline of a whole {@link Worker}, written as one Chrome Trace Event file (JSON,
 * loadable in <a href="https://ui.perfetto.dev">ui.perfetto.dev</a>) when the Worker
 * closes: enabled with {@link Worker.Builder#trace(Path)}; docs/operations.md, "Timeline",
 * describes how to read it.
 *
 * <p>It is a {@link RunObserver}: it keeps what each finished run's {@link RunTimings}
 * say, in memory, for at most {@link #MAX_RUNS} runs (later ones are dropped and counted;
 * the file's {@code metadata} says how many), and writes nothing until the Worker's
 * {@code close()} finished every run. Process 1 ({@code Worker <variant>}) has these
 * thread tracks:
 * <ul>
 * <li>{@code admission queue}: a {@code queued} slice per run, from its enqueue until its
 *     prepare began (or until it was cancelled);
 * <li>{@code chip <deviceId>}: the host's {@code prepare}, {@code launch} and
 *     {@code finalize} slices of the chip's runs;
 * <li>{@code chip <deviceId> device}: an {@code execution} slice per run, from its launch's
 *     return until it ended on the device ({@link RunTimings#executionEnd()}): apart from
 *     the host track because a successor's prepare overlaps it;
 * <li>{@code chip <deviceId> core <c>}: a slice {@code run <runId> (epoch e, slot s)} per
 *     run traced with {@code CallConfig.enableTrace} that had tasks on core {@code c},
 *     spanning them, with the device's task slices nested in it, read from the run's own
 *     trace file when the timeline is written (not nested in its execution: several cores'
 *     tasks overlap, and a task may start before the launch returned);
 * <li>{@code collectives}: a {@code collective step} slice per {@link Worker#enqueueCollective}
 *     step, from its first rank's enqueue to its last rank's finalize, taken from the
 *     step's rank 0 run (so a step told to observers after close() is in the file too).
 * </ul>
 * Slices on a thread track must nest or be disjoint in the Trace Event format, and queued
 * runs (and concurrent steps) overlap without nesting: such a track gets further rows,
 * {@code admission queue #2}, {@code #3}, ..., each slice on the first row free at its
 * start. Every slice's {@code args} name the run (runId, dispatchId, runEpoch, slot,
 * callableId, deviceId, outcome); a flow arrow (id = the dispatch id) leads from a run's
 * enqueue to its finalize. A run that failed has the phases it reached (the Worker's own
 * stamps) and an instant event {@code failed: <exception>} when the failure was observed.
 *
 * <p>Timestamps are microseconds from the Worker's build ({@code metadata.clockBaseNanos},
 * a {@link System#nanoTime()} reading; {@code metadata.wallClockBase} is the wall-clock time
 * of that moment).
 */
public final class WorkerTimeline implements RunObserver {

    /** The most runs a timeline keeps; later runs are dropped (and counted in the metadata). */
    public static final int MAX_RUNS = 100_000;

    private static final Logger LOG = LoggerFactory.getLogger(WorkerTimeline.class);
    private static final int PID = 1;

    /** One finished run: the timings its ticket carried when it was observed, 0 for a phase it did not reach. */
    private record Run(long runId, long dispatchId, int deviceId, int callableId, NativeRun identity,
                       long enqueued, long prepareStart, long prepareEnd, long launchStart, long launchEnd,
                       long executionEnd, long finalizeStart, long finalizeEnd, String outcome, String failure,
                       long observed, Path deviceTrace) {
    }

    /** A collective step: its ranks' dispatch ids, in rank order. */
    private record Step(List<Long> dispatchIds) {
    }

    /**
     * A slice to place on a row of {@code track}; {@code more} adds to the run's args (null:
     * nothing); {@code children} go on the same row, inside it (a run's tasks on a core).
     */
    private record Slice(String track, String name, long start, long end, Run run, String more,
                         List<Slice> children) {
        Slice(String track, String name, long start, long end, Run run) {
            this(track, name, start, end, run, null, List.of());
        }
    }

    /** One task line of a run's own trace: {@code "name":"k", ... "tid":t,"ts":x,"dur":y,"args":{...}}. */
    private static final Pattern TASK = Pattern.compile("\\{\"name\":\"((?:[^\"\\\\]|\\\\.)*)\",\"cat\":\"task\""
            + ",\"ph\":\"X\",\"pid\":\\d+,\"tid\":\\d+,\"ts\":(-?[0-9.]+),\"dur\":([0-9.]+),\"args\":\\{\"task_id\":(\\d+)"
            + ",\"func_id\":(\\d+),\"core\":(\\d+)\\}");
    private static final Pattern CLOCK_BASE = Pattern.compile("\"clock_base_ns\":(\\d+)");

    /** The run's own trace (CallConfig.enableTrace), if it wrote one. */
    private static Path deviceTraceOf(RunResult result) {
        for (Path p : result.outputFiles()) {
            String name = p.getFileName().toString();
            if (name.startsWith("trace_") && name.endsWith(".json")) {
                return p;
            }
        }
        return null;
    }

    private final Path file;
    private final int maxRuns;
    private final Object lock = new Object();
    private final List<Run> runs = new ArrayList<>(); // guarded by lock
    private final List<Step> steps = new ArrayList<>(); // guarded by lock
    private long droppedRuns; // guarded by lock
    private long droppedSteps; // guarded by lock
    private boolean written; // guarded by lock
    private volatile Worker worker;
    private volatile long base;
    private volatile Instant wallBase;

    WorkerTimeline(Path file, int maxRuns) {
        this.file = Objects.requireNonNull(file, "file");
        this.maxRuns = maxRuns;
    }

    /** The file it writes. */
    public Path file() {
        return file;
    }

    @Override
    public void workerBuilt(Worker w) {
        this.wallBase = Instant.now();
        this.base = System.nanoTime();
        this.worker = w;
    }

    @Override
    public void runFinished(RunTicket t, RunResult result, Throwable failure) {
        long observed = System.nanoTime();
        Run run;
        if (result != null) {
            RunTimings s = result.timings();
            run = new Run(t.runId(), t.dispatchId(), t.deviceId(), t.callableId(), result.run(), s.enqueued(),
                    s.prepareStart(), s.prepareEnd(), s.launchStart(), s.launchEnd(), s.executionEnd(),
                    s.finalizeStart(), s.finalizeEnd(), "succeeded", null, observed, deviceTraceOf(result));
        } else {
            // the stamps of the phases it reached: this is the thread that finished it (its chip's
            // driver, which wrote them; or close's, for a run never taken by a driver: none)
            String outcome = failure instanceof RunCancelledException ? "cancelled" : "failed";
            run = new Run(t.runId(), t.dispatchId(), t.deviceId(), t.callableId(), t.run, t.enqueuedAt,
                    t.prepareStart, t.prepareEnd, t.launchStart, t.launchEnd, 0, t.finalizeStart, t.finalizeEnd,
                    outcome, String.valueOf(failure), observed, null);
        }
        // a collective step's ranks carry its dispatch ids from admission: the step is taken
        // with its rank 0's run, observed (like every run) before close() writes the file
        long[] step = t.stepDispatchIds;
        Step s = null;
        if (step != null && step[0] == t.dispatchId()) {
            List<Long> ids = new ArrayList<>(step.length);
            for (long id : step) {
                ids.add(id);
            }
            s = new Step(ids);
        }
        synchronized (lock) {
            if (runs.size() < maxRuns && !written) {
                runs.add(run);
            } else {
                droppedRuns++;
            }
            if (s != null) {
                if (steps.size() < maxRuns && !written) {
                    steps.add(s);
                } else {
                    droppedSteps++;
                }
            }
        }
    }

    /**
     * Not used: a step is told on the callback executor, possibly after close() wrote the
     * file; the timeline takes each step from its rank 0's run instead ({@link #runFinished}),
     * which close() waits for.
     */
    @Override
    public void collectiveStepFinished(CollectiveStep step, Duration latency, Throwable failure) {
    }

    /**
     * Writes the file once (the Worker's close calls it after every run finished); a
     * failure to write is logged, never thrown: the Worker is closed by then, and its
     * runs' results do not depend on the file.
     */
    void writeOnce() {
        List<Run> rs;
        List<Step> ss;
        long dropped;
        long droppedS;
        synchronized (lock) {
            if (written) {
                return;
            }
            written = true;
            rs = new ArrayList<>(runs);
            ss = new ArrayList<>(steps);
            dropped = droppedRuns;
            droppedS = droppedSteps;
        }
        try {
            Path dir = file.toAbsolutePath().getParent();
            if (dir != null) {
                Files.createDirectories(dir);
            }
            Path tmp = Files.createTempFile(dir, file.getFileName().toString(), ".tmp");
            try {
                try (Writer out = Files.newBufferedWriter(tmp, StandardCharsets.UTF_8)) {
                    new Render(out).render(rs, ss, dropped, droppedS);
                }
                Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            } finally {
                Files.deleteIfExists(tmp);
            }
            if (dropped > 0) {
                LOG.warn("Worker timeline {}: {} runs beyond the bound of {} were dropped", file, dropped, maxRuns);
            }
        } catch (IOException | RuntimeException e) {
            LOG.warn("could not write the Worker timeline {}", file, e);
        }
    }

    /** The Trace Event JSON of one timeline. */
    private final class Render {
        private final Writer out;
        private boolean first = true;
        private int nextTid = 1;
        private long deviceTraceErrors;
        /** Rows of a logical track: their tids and where each row's last slice ends. */
        private final Map<String, List<long[]>> rows = new LinkedHashMap<>();
        /** Each logical track's place in the process: its rows sort together. */
        private final Map<String, Integer> order = new HashMap<>();

        Render(Writer out) {
            this.out = out;
        }

        void render(List<Run> rs, List<Step> ss, long dropped, long droppedS) throws IOException {
            Worker w = worker;
            out.write("{\"traceEvents\":[\n");
            event("{\"ph\":\"M\",\"pid\":" + PID + ",\"tid\":0,\"name\":\"process_name\",\"args\":{\"name\":"
                    + str("Worker " + (w == null ? "?" : w.variant())) + "}}");
            // the tracks in a fixed order: queue, then each chip's host and device tracks
            row("admission queue", Long.MIN_VALUE);
            if (w != null) {
                for (int id : w.deviceIds()) {
                    row("chip " + id, Long.MIN_VALUE);
                    row("chip " + id + " device", Long.MIN_VALUE);
                }
            }
            if (!ss.isEmpty()) {
                row("collectives", Long.MIN_VALUE);
            }
            rs.sort(Comparator.comparingLong(Run::enqueued).thenComparingLong(Run::dispatchId));
            List<Slice> slices = new ArrayList<>();
            for (Run r : rs) {
                long end = r.prepareStart != 0 ? r.prepareStart : r.observed;
                slices.add(new Slice("admission queue", "queued", r.enqueued, end, r));
                String chip = "chip " + r.deviceId;
                if (r.prepareStart != 0 && r.prepareEnd != 0) {
                    slices.add(new Slice(chip, "prepare", r.prepareStart, r.prepareEnd, r));
                }
                if (r.launchStart != 0 && r.launchEnd != 0) {
                    slices.add(new Slice(chip, "launch", r.launchStart, r.launchEnd, r));
                }
                if (r.executionEnd != 0 && r.launchEnd != 0) {
                    // a run so short it ended while launch returned: an empty slice at the launch's end
                    slices.add(new Slice(chip + " device", "execution", r.launchEnd,
                            Math.max(r.launchEnd, r.executionEnd), r));
                }
                if (r.finalizeStart != 0 && r.finalizeEnd != 0) {
                    slices.add(new Slice(chip, "finalize", r.finalizeStart, r.finalizeEnd, r));
                }
            }
            for (Run r : rs) {
                if (r.deviceTrace != null) {
                    deviceTasks(r, slices);
                }
            }
            // in start order, so the first-free-row rule keeps every row's slices disjoint
            slices.sort(Comparator.comparingLong(Slice::start));
            for (Slice s : slices) {
                int tid = place(s.track, s.start, s.end);
                slice(tid, s);
                for (Slice child : s.children) {
                    slice(tid, child); // inside its parent, disjoint from its siblings: nested
                }
                boolean flows = s.run.finalizeEnd != 0;
                if (flows && s.name.equals("queued")) {
                    flow("s", tid, s.start, s.run.dispatchId);
                } else if (flows && s.name.equals("finalize")) {
                    flow("f", tid, s.start, s.run.dispatchId);
                }
            }
            for (Run r : rs) {
                if (r.failure != null) {
                    int tid = tidOf("chip " + r.deviceId);
                    event("{\"ph\":\"i\",\"s\":\"t\",\"pid\":" + PID + ",\"tid\":" + tid + ",\"ts\":" + ts(r.observed)
                            + ",\"name\":" + str(r.outcome + ": " + r.failure) + ",\"args\":" + args(r) + "}");
                }
            }
            steps(rs, ss);
            out.write("\n],\"displayTimeUnit\":\"ns\",\"metadata\":{");
            out.write("\"ptorun.variant\":" + str(w == null ? "?" : String.valueOf(w.variant())));
            out.write(",\"clockBaseNanos\":" + base);
            out.write(",\"wallClockBase\":" + str(String.valueOf(wallBase)));
            out.write(",\"timeUnit\":\"ts and dur are microseconds since clockBaseNanos (System.nanoTime)\"");
            out.write(",\"maxRuns\":" + maxRuns);
            out.write(",\"runs\":" + rs.size());
            out.write(",\"droppedRuns\":" + dropped);
            out.write(",\"collectiveSteps\":" + ss.size());
            out.write(",\"droppedCollectiveSteps\":" + droppedS);
            out.write(",\"unreadDeviceTraces\":" + deviceTraceErrors);
            out.write("}}\n");
        }

        private void steps(List<Run> rs, List<Step> ss) throws IOException {
            Map<Long, Run> byDispatch = new HashMap<>();
            for (Run r : rs) {
                byDispatch.put(r.dispatchId, r);
            }
            record Span(long start, long end, Step step, String outcome) {
            }
            List<Span> spans = new ArrayList<>();
            for (Step s : ss) {
                long start = Long.MAX_VALUE;
                long end = Long.MIN_VALUE;
                String outcome = "succeeded";
                for (long id : s.dispatchIds) {
                    Run r = byDispatch.get(id);
                    if (r != null) { // null: a rank dropped by the bound
                        start = Math.min(start, r.enqueued);
                        end = Math.max(end, r.finalizeEnd != 0 ? r.finalizeEnd : r.observed);
                        if (!r.outcome.equals("succeeded")) {
                            outcome = "failed"; // as the step's futures: one rank failed, the step did
                        }
                    }
                }
                if (start != Long.MAX_VALUE) {
                    spans.add(new Span(start, end, s, outcome));
                }
            }
            spans.sort(Comparator.comparingLong(Span::start));
            for (Span sp : spans) {
                int tid = place("collectives", sp.start, sp.end);
                event("{\"ph\":\"X\",\"pid\":" + PID + ",\"tid\":" + tid + ",\"ts\":" + ts(sp.start) + ",\"dur\":"
                        + dur(sp.start, sp.end) + ",\"name\":\"collective step\",\"args\":{\"dispatchIds\":"
                        + sp.step.dispatchIds + ",\"outcome\":" + str(sp.outcome) + "}}");
            }
        }

        /** A new row of {@code track}, named for it: the first "track", the next "track #2", ... */
        private long[] row(String track, long end) throws IOException {
            List<long[]> list = rows.computeIfAbsent(track, k -> new ArrayList<>());
            long[] row = {nextTid++, end};
            String name = list.isEmpty() ? track : track + " #" + (list.size() + 1);
            // a track's rows side by side, in the order the tracks were first made
            long sortIndex = (long) order.computeIfAbsent(track, k -> order.size()) * 100_000 + list.size();
            list.add(row);
            event("{\"ph\":\"M\",\"pid\":" + PID + ",\"tid\":" + row[0] + ",\"name\":\"thread_name\",\"args\":{\"name\":"
                    + str(name) + "}}");
            event("{\"ph\":\"M\",\"pid\":" + PID + ",\"tid\":" + row[0]
                    + ",\"name\":\"thread_sort_index\",\"args\":{\"sort_index\":" + sortIndex + "}}");
            return row;
        }

        private int tidOf(String track) throws IOException {
            List<long[]> list = rows.get(track);
            return (int) (list == null ? row(track, Long.MIN_VALUE) : list.get(0))[0];
        }

        /** The tid of the first row of {@code track} free at {@code start}; a new row when none is. */
        private int place(String track, long start, long end) throws IOException {
            List<long[]> list = rows.get(track);
            if (list != null) {
                for (long[] row : list) {
                    if (row[1] <= start) {
                        row[1] = end;
                        return (int) row[0];
                    }
                }
            }
            return (int) row(track, end)[0];
        }

        private void slice(int tid, Slice s) throws IOException {
            String a = args(s.run);
            if (s.more != null) {
                a = a.substring(0, a.length() - 1) + "," + s.more + "}";
            }
            event("{\"ph\":\"X\",\"pid\":" + PID + ",\"tid\":" + tid + ",\"ts\":" + ts(s.start) + ",\"dur\":"
                    + dur(s.start, s.end) + ",\"name\":" + str(s.name) + ",\"args\":" + a + "}");
        }

        /**
         * The device's task slices of a run traced with CallConfig.enableTrace, from its own
         * trace file (one event a line, as the library writes it), shifted onto this
         * timeline's clock (both are CLOCK_MONOTONIC), nested in the run's slices on the
         * chip's per-core tracks (see {@link #nest}). A file that cannot be read costs its
         * tasks only (counted in the metadata).
         */
        private void deviceTasks(Run r, List<Slice> slices) {
            try {
                List<String> lines = Files.readAllLines(r.deviceTrace, StandardCharsets.UTF_8);
                long clockBase = -1;
                for (String line : lines) {
                    Matcher m = CLOCK_BASE.matcher(line);
                    if (m.find()) {
                        clockBase = Long.parseLong(m.group(1));
                    }
                }
                if (clockBase < 0) {
                    throw new IOException("no clock_base_ns");
                }
                Map<Integer, List<Slice>> byCore = new TreeMap<>();
                for (String line : lines) {
                    Matcher m = TASK.matcher(line);
                    if (m.find()) {
                        long start = clockBase + new BigDecimal(m.group(2)).movePointRight(3).longValueExact();
                        long end = start + new BigDecimal(m.group(3)).movePointRight(3).longValueExact();
                        String name = m.group(1).replace("\\\"", "\"").replace("\\\\", "\\");
                        int core = Integer.parseInt(m.group(6));
                        byCore.computeIfAbsent(core, k -> new ArrayList<>()).add(new Slice("chip " + r.deviceId
                                + " core " + core, name, start, end, r, "\"taskId\":" + m.group(4) + ",\"funcId\":"
                                + m.group(5) + ",\"core\":" + core, List.of()));
                    }
                }
                for (Map.Entry<Integer, List<Slice>> e : byCore.entrySet()) {
                    nest(r, e.getKey(), e.getValue(), slices);
                }
            } catch (IOException | RuntimeException e) {
                deviceTraceErrors++;
                LOG.debug("could not read the trace {} of run {} into the Worker timeline", r.deviceTrace, r.runId, e);
            }
        }

        /**
         * A run's tasks on one core, nested: each task inside a parent slice {@code run <runId>}
         * spanning its tasks, on the core's track. The tasks of a row must be disjoint to nest
         * in one parent: tasks that overlap an earlier one (a core running two at once) go to
         * another parent of the run (first free in start order), each parent on a row of its own
         * if it overlaps another run's. So every task lies inside a parent of its own run.
         */
        private void nest(Run r, int core, List<Slice> tasks, List<Slice> slices) {
            tasks.sort(Comparator.comparingLong(Slice::start).thenComparingLong(Slice::end));
            List<List<Slice>> groups = new ArrayList<>();
            for (Slice task : tasks) {
                List<Slice> into = null;
                for (List<Slice> g : groups) {
                    if (g.get(g.size() - 1).end <= task.start) {
                        into = g;
                        break;
                    }
                }
                if (into == null) {
                    into = new ArrayList<>();
                    groups.add(into);
                }
                into.add(task);
            }
            String name = "run " + r.runId + (r.identity == null ? ""
                    : " (epoch " + r.identity.runEpoch() + ", slot " + r.identity.slot() + ")");
            for (List<Slice> g : groups) {
                long start = g.get(0).start;
                long end = Long.MIN_VALUE;
                for (Slice task : g) {
                    end = Math.max(end, task.end);
                }
                slices.add(new Slice(g.get(0).track, name, start, end, r, "\"core\":" + core + ",\"tasks\":"
                        + g.size(), List.copyOf(g)));
            }
        }

        private void flow(String ph, int tid, long at, long id) throws IOException {
            event("{\"ph\":\"" + ph + "\"," + ("f".equals(ph) ? "\"bp\":\"e\"," : "") + "\"pid\":" + PID + ",\"tid\":"
                    + tid + ",\"ts\":" + ts(at) + ",\"id\":" + id + ",\"cat\":\"run\",\"name\":\"run\"}");
        }

        private String args(Run r) {
            StringBuilder b = new StringBuilder("{\"runId\":").append(r.runId).append(",\"dispatchId\":")
                    .append(r.dispatchId);
            if (r.identity != null) {
                b.append(",\"runEpoch\":").append(r.identity.runEpoch()).append(",\"slot\":")
                        .append(r.identity.slot());
            }
            b.append(",\"callableId\":").append(r.callableId).append(",\"deviceId\":").append(r.deviceId)
                    .append(",\"outcome\":").append(str(r.outcome));
            if (r.failure != null) {
                b.append(",\"failure\":").append(str(r.failure));
            }
            return b.append('}').toString();
        }

        private void event(String json) throws IOException {
            if (!first) {
                out.write(",\n");
            }
            first = false;
            out.write(json);
        }
    }

    /** Microseconds since the base, exactly (three decimals). */
    private String ts(long nanos) {
        return BigDecimal.valueOf(nanos - base, 3).toPlainString();
    }

    private static String dur(long start, long end) {
        return BigDecimal.valueOf(Math.max(0, end - start), 3).toPlainString();
    }

    private static String str(String s) {
        StringBuilder b = new StringBuilder(s.length() + 2).append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> b.append("\\\"");
                case '\\' -> b.append("\\\\");
                case '\n' -> b.append("\\n");
                case '\r' -> b.append("\\r");
                case '\t' -> b.append("\\t");
                default -> {
                    if (c < 0x20) {
                        b.append(String.format("\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
                }
            }
        }
        return b.append('"').toString();
    }
}

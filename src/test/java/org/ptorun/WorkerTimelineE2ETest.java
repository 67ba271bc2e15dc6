package org.ptorun;

import static org.assertj.core.api.Assertions.assertThat;
import static org.ptorun.WorkerE2ETest.CHAIN;
import static org.ptorun.WorkerE2ETest.N;
import static org.ptorun.WorkerE2ETest.enqueueChain;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.math.BigDecimal;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.api.io.TempDir;
import org.ptorun.RunFiguresE2ETest.Gate;
import org.ptorun.RunFiguresE2ETest.Gated;
import org.ptorun.worker.RunObserver;
import org.ptorun.worker.RunResult;
import org.ptorun.worker.RunTicket;
import org.ptorun.worker.Worker;
import org.ptorun.worker.WorkerTimeline;

/**
 * {@link Worker.Builder#trace}: the file a Worker writes at close, read back as Trace Event
 * JSON and checked from the file alone — each run's slices in phase order on their tracks,
 * its flow arrow, the tracks' names — and, with a run held on the device by a gate, that
 * its successor's prepare lay inside its execution on a chip that pipelines (hbg; a2a3
 * trb for a successor of the same ring sizing) and after its finalize where it cannot
 * (a5 trb's single slot; on a2a3 trb a successor whose ring sizing differs, "not now").
 * Only ordering facts made by causality.
 */
class WorkerTimelineE2ETest {

    private static final int K = 6;

    static List<Variant> allVariants() {
        return SimE2E.allVariants();
    }

    static List<Variant> overlapping() {
        return List.of(Variant.parse("a2a3/sim/hbg"), Variant.parse("a5/onboard/hbg"));
    }

    static List<Variant> trb() {
        return SimE2E.allTrbVariants();
    }

    /** Chips that prepare a gated run's successor of the same config during its execution. */
    static List<Variant> pipelining() {
        List<Variant> v = new ArrayList<>(overlapping());
        v.addAll(trb().stream().filter(t -> t.arch() == Variant.Arch.A2A3).toList());
        return v;
    }

    /** A ring sizing other than the default: on a2a3 trb it does not fit the default's image. */
    static final CallConfig OTHER_SIZING = CallConfig.builder().ringTaskWindow(0, 64).build();

    /** One X slice read back: its track's name, its bounds in nanoseconds, its args. */
    record Slice(String name, long tid, String track, long start, long end, JsonNode args) {
        long dispatchId() {
            return args.get("dispatchId").asLong();
        }
    }

    /** A timeline file read back. */
    record Timeline(JsonNode root, Map<Long, String> tracks, List<Slice> slices, List<JsonNode> flows) {

        static Timeline read(Path file) throws Exception {
            JsonNode root = new ObjectMapper().enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS)
                    .readTree(file.toFile());
            Map<Long, String> tracks = new TreeMap<>();
            for (JsonNode e : root.get("traceEvents")) {
                if (e.get("ph").asText().equals("M") && e.get("name").asText().equals("thread_name")) {
                    tracks.put(e.get("tid").asLong(), e.get("args").get("name").asText());
                }
            }
            List<Slice> slices = new ArrayList<>();
            List<JsonNode> flows = new ArrayList<>();
            for (JsonNode e : root.get("traceEvents")) {
                String ph = e.get("ph").asText();
                if (ph.equals("X")) {
                    long start = nanos(e.get("ts"));
                    long tid = e.get("tid").asLong();
                    assertThat(tracks).as("every slice's track is named").containsKey(tid);
                    slices.add(new Slice(e.get("name").asText(), tid, tracks.get(tid), start,
                            start + nanos(e.get("dur")), e.get("args")));
                } else if (ph.equals("s") || ph.equals("f")) {
                    flows.add(e);
                }
            }
            return new Timeline(root, tracks, slices, flows);
        }

        /** The one slice {@code name} of run {@code dispatchId}. */
        Slice slice(long dispatchId, String name) {
            List<Slice> found = slices.stream()
                    .filter(s -> s.name.equals(name) && s.args.has("dispatchId") && s.dispatchId() == dispatchId)
                    .toList();
            assertThat(found).as("run %d's %s slices", dispatchId, name).hasSize(1);
            return found.get(0);
        }

        /**
         * On every track, two slices are disjoint or one lies inside the other (the Trace Event
         * format's rule); only a run's slice on a core track has slices inside it (its tasks).
         */
        void assertTracksWellFormed() {
            Map<Long, List<Slice>> byTid = new HashMap<>();
            for (Slice s : slices) {
                byTid.computeIfAbsent(s.tid, k -> new ArrayList<>()).add(s);
            }
            for (List<Slice> track : byTid.values()) {
                List<Slice> sorted = new ArrayList<>(track);
                // outer before inner: by start, then the longer first
                sorted.sort((a, b) -> a.start != b.start ? Long.compare(a.start, b.start) : Long.compare(b.end, a.end));
                java.util.ArrayDeque<Slice> open = new java.util.ArrayDeque<>();
                for (Slice s : sorted) {
                    while (!open.isEmpty() && open.peek().end <= s.start) {
                        open.pop();
                    }
                    if (!open.isEmpty()) {
                        Slice outer = open.peek();
                        assertThat(s.end).as("%s overlaps %s on %s without nesting", s, outer, s.track)
                                .isLessThanOrEqualTo(outer.end);
                        assertThat(outer.name).as("%s nests %s on %s", outer, s, s.track).startsWith("run ");
                        assertThat(s.track).contains(" core ");
                    }
                    open.push(s);
                }
            }
            // the rows of a track are listed together ("admission queue", "#2", ... side by side)
            TreeMap<Long, String> bySortIndex = new TreeMap<>();
            for (JsonNode e : root.get("traceEvents")) {
                if (e.get("ph").asText().equals("M") && e.get("name").asText().equals("thread_sort_index")) {
                    bySortIndex.put(e.get("args").get("sort_index").asLong(),
                            tracks.get(e.get("tid").asLong()).replaceFirst(" #\\d+$", ""));
                }
            }
            assertThat(bySortIndex).as("a sort index per track").hasSameSizeAs(tracks);
            List<String> seen = new ArrayList<>();
            for (String track : bySortIndex.values()) {
                if (seen.isEmpty() || !seen.get(seen.size() - 1).equals(track)) {
                    assertThat(seen).as("the rows of %s in the order %s", track, bySortIndex).doesNotContain(track);
                    seen.add(track);
                }
            }
        }

        /** The task slices (a device's tasks, with a taskId) of run {@code dispatchId}. */
        List<Slice> tasks(long dispatchId) {
            return slices.stream().filter(s -> s.args.has("taskId") && s.dispatchId() == dispatchId).toList();
        }
    }

    /** A trace timestamp (microseconds, three decimals) in nanoseconds. */
    static long nanos(JsonNode microseconds) {
        return new BigDecimal(microseconds.asText()).movePointRight(3).longValueExact();
    }

    @ParameterizedTest
    @MethodSource("allVariants")
    void everyRunHasItsSlicesInPhaseOrderWithAFlowFromEnqueueToFinalize(Variant variant, @TempDir Path dir)
            throws Exception {
        Path file = dir.resolve("timeline.json");
        List<RunTicket> observed = new ArrayList<>();
        RunObserver other = new RunObserver() { // a second observer: both are told
            @Override
            public synchronized void runFinished(RunTicket ticket, RunResult result, Throwable failure) {
                observed.add(ticket);
            }
        };
        List<WorkerE2ETest.Job> jobs = new ArrayList<>();
        Worker w = Worker.builder().variant(variant).devices(0, 1).background(true).runObserver(other).trace(file)
                .build();
        try {
            w.register(CHAIN, ChipWorkerE2ETest.vectorChain(N)).get(60, TimeUnit.SECONDS);
            for (int i = 0; i < K; i++) {
                jobs.add(enqueueChain(w, 100 + i));
            }
            for (WorkerE2ETest.Job job : jobs) {
                job.ticket().result().get(60, TimeUnit.SECONDS);
                job.assertGolden();
            }
        } finally {
            w.close();
        }
        synchronized (other) {
            assertThat(observed).as("the other observer was told too").hasSize(K);
        }

        Timeline t = Timeline.read(file);
        JsonNode meta = t.root.get("metadata");
        assertThat(meta.get("runs").asInt()).isEqualTo(K);
        assertThat(meta.get("droppedRuns").asInt()).isZero();
        assertThat(meta.get("maxRuns").asInt()).isEqualTo(WorkerTimeline.MAX_RUNS);
        assertThat(t.root.get("displayTimeUnit").asText()).isEqualTo("ns");
        JsonNode process = t.root.get("traceEvents").get(0);
        assertThat(process.get("name").asText()).isEqualTo("process_name");
        assertThat(process.get("args").get("name").asText()).isEqualTo("Worker " + variant);
        assertThat(t.tracks.values()).contains("admission queue", "chip 0", "chip 0 device", "chip 1",
                "chip 1 device");
        t.assertTracksWellFormed();

        for (WorkerE2ETest.Job job : jobs) {
            RunTicket ticket = job.ticket();
            long id = ticket.dispatchId();
            String chip = "chip " + ticket.deviceId();
            Slice queued = t.slice(id, "queued");
            Slice prepare = t.slice(id, "prepare");
            Slice launch = t.slice(id, "launch");
            Slice execution = t.slice(id, "execution");
            Slice finalize = t.slice(id, "finalize");
            assertThat(queued.track).startsWith("admission queue");
            assertThat(List.of(prepare.track, launch.track, finalize.track))
                    .allSatisfy(track -> assertThat(track).isEqualTo(chip));
            assertThat(execution.track).isEqualTo(chip + " device");
            RunResult r = ticket.result().join();
            for (Slice s : List.of(queued, prepare, launch, execution, finalize)) {
                assertThat(s.args.get("runId").asLong()).isEqualTo(r.runId());
                assertThat(s.args.get("runEpoch").asLong()).isEqualTo(r.run().runEpoch());
                assertThat(s.args.get("slot").asInt()).isEqualTo(r.run().slot());
                assertThat(s.args.get("callableId").asInt()).isEqualTo(CHAIN);
                assertThat(s.args.get("outcome").asText()).isEqualTo("succeeded");
            }
            assertThat(queued.end).as("queued until its prepare began").isEqualTo(prepare.start);
            assertThat(prepare.end).isLessThanOrEqualTo(launch.start);
            assertThat(execution.start).as("execution from launch's return").isEqualTo(launch.end);
            assertThat(launch.end).isLessThanOrEqualTo(finalize.start);
            assertThat(execution.end).as("the device ended before finalize returned")
                    .isLessThanOrEqualTo(finalize.end);

            List<JsonNode> flow = t.flows.stream().filter(f -> f.get("id").asLong() == id).toList();
            assertThat(flow).extracting(f -> f.get("ph").asText()).containsExactlyInAnyOrder("s", "f");
            for (JsonNode f : flow) {
                Slice at = f.get("ph").asText().equals("s") ? queued : finalize;
                assertThat(f.get("tid").asLong()).isEqualTo(at.tid);
                assertThat(nanos(f.get("ts"))).isEqualTo(at.start);
            }
        }
        assertThat(t.flows).hasSize(2 * K);
    }

    /**
     * Runs traced with CallConfig.enableTrace: the device's task slices of each, read from
     * its own trace file, are on the chip's core tracks, as many as that file has, each
     * between the run's launch call and its end on the device, and each nested in a slice of
     * its own run on the same track ({@code run <runId> (epoch e, slot s)}), which spans
     * exactly the tasks inside it and counts them.
     */
    @ParameterizedTest
    @MethodSource("overlapping")
    void tracedRunsBringTheirDeviceTasks(Variant variant, @TempDir Path dir) throws Exception {
        Path file = dir.resolve("timeline.json");
        CallConfig traced = CallConfig.builder().enableTrace(true).outputPrefix(dir).build();
        List<RunTicket> tickets = new ArrayList<>();
        Worker w = Worker.builder().variant(variant).background(true).trace(file).build();
        try {
            w.register(CHAIN, ChipWorkerE2ETest.vectorChain(N)).get(60, TimeUnit.SECONDS);
            for (int i = 0; i < 3; i++) {
                tickets.add(w.enqueue(CHAIN, ChipWorkerE2ETest.chainArgs(SimE2E.random(N, i), SimE2E.random(N, 7 + i),
                        SimE2E.filled(N)), traced));
            }
            for (RunTicket t : tickets) {
                t.result().get(60, TimeUnit.SECONDS);
            }
        } finally {
            w.close();
        }
        Timeline t = Timeline.read(file);
        t.assertTracksWellFormed();
        assertThat(t.root.get("metadata").get("unreadDeviceTraces").asInt()).isZero();
        for (RunTicket ticket : tickets) {
            RunResult r = ticket.result().join();
            Path own = r.outputFiles().get(0);
            int tasks = 0;
            for (JsonNode e : new ObjectMapper().readTree(own.toFile()).get("traceEvents")) {
                if (e.has("cat") && e.get("cat").asText().equals("task")) {
                    tasks++;
                }
            }
            assertThat(tasks).isPositive();
            long launchStart = t.slice(r.dispatchId(), "launch").start;
            long executionEnd = t.slice(r.dispatchId(), "execution").end;
            List<Slice> mine = t.tasks(r.dispatchId());
            assertThat(mine).hasSize(tasks);
            String runName = "run " + r.runId() + " (epoch " + r.run().runEpoch() + ", slot " + r.run().slot() + ")";
            List<Slice> parents = t.slices.stream().filter(s -> s.name.equals(runName)).toList();
            assertThat(parents).isNotEmpty().allSatisfy(p -> {
                assertThat(p.dispatchId()).isEqualTo(r.dispatchId());
                assertThat(p.args.get("runEpoch").asLong()).isEqualTo(r.run().runEpoch());
                assertThat(p.track).matches("chip 0 core " + p.args.get("core").asInt() + "( #\\d+)?");
            });
            Map<Slice, List<Slice>> inside = new HashMap<>();
            for (Slice task : mine) {
                assertThat(task.track).matches("chip 0 core " + task.args.get("core").asInt() + "( #\\d+)?");
                assertThat(task.start).as("a task starts after its launch call began").isGreaterThanOrEqualTo(launchStart);
                assertThat(task.end).as("and ends no later than the run on the device").isLessThanOrEqualTo(executionEnd);
                List<Slice> around = parents.stream().filter(p -> p.tid == task.tid && p.start <= task.start
                        && task.end <= p.end).toList();
                assertThat(around).as("%s lies within a slice of its run on its track", task).hasSize(1);
                inside.computeIfAbsent(around.get(0), k -> new ArrayList<>()).add(task);
            }
            assertThat(inside.keySet()).as("every slice of the run on a core holds tasks").containsExactlyInAnyOrderElementsOf(parents);
            inside.forEach((p, in) -> {
                assertThat(p.args.get("tasks").asInt()).isEqualTo(in.size());
                assertThat(p.start).as("%s begins with its first task", p).isEqualTo(in.stream().mapToLong(Slice::start).min().getAsLong());
                assertThat(p.end).as("%s ends with its last task", p).isEqualTo(in.stream().mapToLong(Slice::end).max().getAsLong());
            });
        }
    }

    /**
     * Collective steps on two chips: one slice each on the collectives track, from the
     * earliest rank's enqueue to the last rank's finalize, naming the ranks' dispatch ids.
     */
    @ParameterizedTest
    @MethodSource("overlapping")
    void collectiveStepsSpanTheirRanks(Variant variant, @TempDir Path dir) throws Exception {
        Path file = dir.resolve("timeline.json");
        int steps = 2;
        java.util.concurrent.CountDownLatch told = new java.util.concurrent.CountDownLatch(steps);
        RunObserver stepsTold = new RunObserver() { // told after the timeline (it comes first)
            @Override
            public void collectiveStepFinished(org.ptorun.worker.CollectiveStep step, java.time.Duration latency,
                                               Throwable failure) {
                told.countDown();
            }
        };
        List<org.ptorun.worker.CollectiveStep> done = new ArrayList<>();
        Worker w = Worker.builder().variant(variant).devices(0, 1).background(true).runObserver(stepsTold)
                .trace(file).build();
        try {
            w.register(5, CommCollectivesE2ETest.single("allreduce_sum", List.of(org.ptorun.callable.Direction.INOUT),
                    1, new long[] {4L * 64})).get(60, TimeUnit.SECONDS);
            CommGroup group = w.openCommGroup(dir.resolve("rootinfo"), java.time.Duration.ofSeconds(20));
            try {
                group.allocWindows(4L * 64);
                for (int i = 0; i < steps; i++) {
                    org.ptorun.worker.CollectiveStep step = w.enqueueCollective(group, 5, rank -> new TaskArgs()
                            .tensor(Tensor.of(rank.window(), DType.F32)).scalar(rank.deviceContext()),
                            CallConfig.DEFAULT);
                    step.results().forEach(java.util.concurrent.CompletableFuture::join);
                    done.add(step);
                }
                w.drain();
                assertThat(told.await(60, TimeUnit.SECONDS)).as("every step told").isTrue();
            } finally {
                group.close();
            }
        } finally {
            w.close();
        }
        Timeline t = Timeline.read(file);
        t.assertTracksWellFormed();
        List<Slice> slices = t.slices.stream().filter(s -> s.name.equals("collective step")).toList();
        assertThat(slices).hasSize(steps).allSatisfy(s -> assertThat(s.track).startsWith("collectives"));
        for (org.ptorun.worker.CollectiveStep step : done) {
            List<Long> ids = List.of(step.ticket(0).dispatchId(), step.ticket(1).dispatchId());
            Slice s = slices.stream().filter(x -> {
                List<Long> named = new ArrayList<>();
                x.args.get("dispatchIds").forEach(n -> named.add(n.asLong()));
                return named.equals(ids);
            }).findFirst().orElseThrow();
            long firstEnqueue = Math.min(t.slice(ids.get(0), "queued").start, t.slice(ids.get(1), "queued").start);
            long lastFinalize = Math.max(t.slice(ids.get(0), "finalize").end, t.slice(ids.get(1), "finalize").end);
            assertThat(s.start).isEqualTo(firstEnqueue);
            assertThat(s.end).isEqualTo(lastFinalize);
        }
    }

    /**
     * A step told after close(): the callback executor holds every task it is given until
     * the test runs them, so the step's ranks finish (drain) but the step is told to the
     * observers only after close() returned. The file still has the step — it is taken
     * from its ranks' runs, which close() waits for — and close() did not wait for the
     * held callbacks (it would never return: nothing runs them before it does).
     */
    @ParameterizedTest
    @MethodSource("overlapping")
    void aCollectiveStepToldAfterCloseIsInTheFile(Variant variant, @TempDir Path dir) throws Exception {
        Path file = dir.resolve("timeline.json");
        java.util.Queue<Runnable> held = new java.util.concurrent.ConcurrentLinkedQueue<>();
        java.util.concurrent.CountDownLatch told = new java.util.concurrent.CountDownLatch(1);
        RunObserver stepsTold = new RunObserver() {
            @Override
            public void collectiveStepFinished(org.ptorun.worker.CollectiveStep step, java.time.Duration latency,
                                               Throwable failure) {
                told.countDown();
            }
        };
        org.ptorun.worker.CollectiveStep step;
        Worker w = Worker.builder().variant(variant).devices(0, 1).background(true).callbackExecutor(held::add)
                .runObserver(stepsTold).trace(file).build();
        try (Gate gate = new Gate()) {
            try {
                registerStepAndGate(w);
                CommGroup group = w.openCommGroup(dir.resolve("rootinfo"), java.time.Duration.ofSeconds(20));
                try {
                    group.allocWindows(4L * 64);
                    step = stepBehindGate(w, group, gate);
                    w.drain(); // both ranks finished and were observed; their futures' completions are held
                    assertThat(step.ticket(0).isDone()).isTrue();
                    assertThat(step.ticket(1).isDone()).isTrue();
                } finally {
                    group.close();
                }
            } finally {
                gate.open();
                w.close();
            }
        }
        assertThat(told.getCount()).as("the step was not told before close() returned").isOne();
        assertThat(held).as("its completions are still held").isNotEmpty();
        Timeline t = Timeline.read(file);
        t.assertTracksWellFormed();
        assertThat(t.root.get("metadata").get("collectiveSteps").asInt()).isOne();
        List<Long> ids = List.of(step.ticket(0).dispatchId(), step.ticket(1).dispatchId());
        Slice s = t.slices.stream().filter(x -> x.name.equals("collective step")).collect(
                java.util.stream.Collectors.collectingAndThen(java.util.stream.Collectors.toList(), l -> {
                    assertThat(l).hasSize(1);
                    return l.get(0);
                }));
        List<Long> named = new ArrayList<>();
        s.args.get("dispatchIds").forEach(n -> named.add(n.asLong()));
        assertThat(named).isEqualTo(ids);
        assertThat(s.args.get("outcome").asText()).isEqualTo("succeeded");
        assertThat(s.end).isEqualTo(Math.max(t.slice(ids.get(0), "finalize").end, t.slice(ids.get(1), "finalize").end));

        for (Runnable r = held.poll(); r != null; r = held.poll()) {
            r.run(); // now the step completes, and is told, on this thread
        }
        assertThat(told.getCount()).as("told once its completions ran").isZero();
        assertThat(step.results()).allSatisfy(f -> assertThat(f).isCompleted());
    }

    /**
     * close() on the callback executor's only thread, busy there before the step's ranks
     * complete: their completions, and so the step's telling, queue behind it. close() must
     * not wait for them (it would never return) and the file must have the step all the same;
     * the step is told once close() released the thread.
     */
    @ParameterizedTest
    @MethodSource("overlapping")
    void closeOnTheCallbackThreadNeitherWaitsForTheStepNorLosesIt(Variant variant, @TempDir Path dir)
            throws Exception {
        Path file = dir.resolve("timeline.json");
        java.util.concurrent.ExecutorService callbacks = java.util.concurrent.Executors.newSingleThreadExecutor();
        java.util.concurrent.CountDownLatch told = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.CountDownLatch enqueued = new java.util.concurrent.CountDownLatch(1);
        RunObserver stepsTold = new RunObserver() {
            @Override
            public void collectiveStepFinished(org.ptorun.worker.CollectiveStep step, java.time.Duration latency,
                                               Throwable failure) {
                told.countDown();
            }
        };
        try (Gate gate = new Gate()) {
            Worker w = Worker.builder().variant(variant).devices(0, 1).background(true).callbackExecutor(callbacks)
                    .runObserver(stepsTold).trace(file).build();
            org.ptorun.worker.CollectiveStep step;
            java.util.concurrent.Future<Long> closing;
            try {
                registerStepAndGate(w);
                CommGroup group = w.openCommGroup(dir.resolve("rootinfo"), java.time.Duration.ofSeconds(20));
                try {
                    group.allocWindows(4L * 64);
                    closing = callbacks.submit(() -> { // holds the callback thread from before the step
                        assertThat(enqueued.await(60, TimeUnit.SECONDS)).isTrue();
                        w.drain();
                        group.close();
                        w.close();
                        return told.getCount();
                    });
                    step = stepBehindGate(w, group, gate);
                    enqueued.countDown();
                    assertThat(closing.get(60, TimeUnit.SECONDS)).as("close() returned before the step was told")
                            .isOne();
                } finally {
                    enqueued.countDown();
                    group.close();
                }
            } finally {
                gate.open();
                w.close();
            }
            assertThat(told.await(60, TimeUnit.SECONDS)).as("told once close() released the thread").isTrue();
            Timeline t = Timeline.read(file);
            t.assertTracksWellFormed();
            List<Slice> steps = t.slices.stream().filter(x -> x.name.equals("collective step")).toList();
            assertThat(steps).hasSize(1);
            List<Long> named = new ArrayList<>();
            steps.get(0).args.get("dispatchIds").forEach(n -> named.add(n.asLong()));
            assertThat(named).containsExactly(step.ticket(0).dispatchId(), step.ticket(1).dispatchId());
        } finally {
            callbacks.shutdown();
        }
    }

    /** Registers the all-reduce step's callable (5) and the gated one. */
    private static void registerStepAndGate(Worker w) throws Exception {
        w.register(5, CommCollectivesE2ETest.single("allreduce_sum", List.of(org.ptorun.callable.Direction.INOUT),
                1, new long[] {4L * 64})).get(60, TimeUnit.SECONDS);
        w.register(RunFiguresE2ETest.GATED, RunFiguresE2ETest.gated()).get(60, TimeUnit.SECONDS);
    }

    /**
     * An all-reduce step, one rank of which (the one on the chip a gated run took) is held
     * behind that run until the step was made: so no rank completes before the step's
     * futures depend on it, and the held rank's completion, which completes the step, goes
     * through the callback executor (had every rank completed first, the step would be told
     * on the enqueuing thread). Opens the gate before it returns.
     */
    private static org.ptorun.worker.CollectiveStep stepBehindGate(Worker w, CommGroup group, Gate gate)
            throws InterruptedException {
        RunFiguresE2ETest.enqueueGated(w, gate, CallConfig.DEFAULT, 1);
        org.ptorun.worker.CollectiveStep step = w.enqueueCollective(group, 5, rank -> new TaskArgs()
                .tensor(Tensor.of(rank.window(), DType.F32)).scalar(rank.deviceContext()), CallConfig.DEFAULT);
        gate.open();
        return step;
    }

    /**
     * A run whose kernel fails (the gated kernel refuses a null gate) has the host phases it
     * reached, no execution, and a failed instant; runs cancelled by close while queued have
     * only their queued slice and a cancelled instant. None has a flow arrow (no finalize
     * ended for the cancelled; the failed one has one, to its finalize).
     */
    @org.junit.jupiter.api.Test
    void failedAndCancelledRunsShowThePhasesTheyReached(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("timeline.json");
        RunTicket failed;
        List<RunTicket> cancelled = new ArrayList<>();
        Worker w = Worker.builder().variant(Variant.DEFAULT).trace(file)
                .shutdownPolicy(org.ptorun.worker.ShutdownPolicy.CANCEL_QUEUED).build();
        try {
            w.register(RunFiguresE2ETest.GATED, RunFiguresE2ETest.gated()).get(60, TimeUnit.SECONDS);
            failed = w.enqueue(RunFiguresE2ETest.GATED,
                    TaskArgs.of(Tensor.of(SimE2E.random(64, 1)), Tensor.of(SimE2E.filled(64))).scalar(0),
                    CallConfig.DEFAULT);
            w.drain();
            assertThat(failed.result()).isCompletedExceptionally();
            for (int i = 0; i < 3; i++) { // caller-driven: nothing takes them before close
                cancelled.add(enqueueChainOrGated(w, i));
            }
        } finally {
            w.close();
        }
        Timeline t = Timeline.read(file);
        t.assertTracksWellFormed();
        long id = failed.dispatchId();
        for (String phase : List.of("queued", "prepare", "launch", "finalize")) {
            assertThat(t.slice(id, phase).args.get("outcome").asText()).isEqualTo("failed");
        }
        assertThat(t.slices).noneMatch(s -> s.name.equals("execution") && s.dispatchId() == id);
        assertThat(instants(t, id)).singleElement().asString().startsWith("failed: org.ptorun.KernelFaultException");
        for (RunTicket c : cancelled) {
            assertThat(c.result()).isCompletedExceptionally();
            Slice queued = t.slice(c.dispatchId(), "queued");
            assertThat(queued.args.get("outcome").asText()).isEqualTo("cancelled");
            assertThat(t.slices).filteredOn(s -> s.dispatchId() == c.dispatchId()).containsExactly(queued);
            assertThat(instants(t, c.dispatchId())).singleElement().asString()
                    .startsWith("cancelled: org.ptorun.worker.RunCancelledException");
            assertThat(t.flows).noneMatch(f -> f.get("id").asLong() == c.dispatchId());
        }
        assertThat(t.root.get("metadata").get("runs").asInt()).isEqualTo(4);
    }

    private static RunTicket enqueueChainOrGated(Worker w, int seed) throws InterruptedException {
        return w.enqueue(RunFiguresE2ETest.GATED,
                TaskArgs.of(Tensor.of(SimE2E.random(64, seed)), Tensor.of(SimE2E.filled(64))).scalar(0),
                CallConfig.DEFAULT);
    }

    private static List<String> instants(Timeline t, long dispatchId) {
        List<String> names = new ArrayList<>();
        for (JsonNode e : t.root.get("traceEvents")) {
            if (e.get("ph").asText().equals("i") && e.get("args").get("dispatchId").asLong() == dispatchId) {
                names.add(e.get("name").asText());
            }
        }
        return names;
    }

    /**
     * Run A is held on the device by a gate; B is enqueued behind it. Once the dispatcher has
     * done all it can before A ends (on hbg: prepared B, the pipeline's successor, and waits
     * for the device), the gate opens. The file
     * alone must show B's prepare inside A's execution — which fails if the Worker stops
     * pipelining (e.g. with pipelineDepth(1)).
     */
    @ParameterizedTest
    @MethodSource("pipelining")
    void onAChipThatPipelinesTheSuccessorsPrepareLiesInsideTheRunsExecution(Variant variant, @TempDir Path dir)
            throws Exception {
        Pair p = gatedPair(variant, dir, CallConfig.DEFAULT);
        Timeline t = p.timeline;
        Slice aExecution = t.slice(p.a, "execution");
        Slice bPrepare = t.slice(p.b, "prepare");
        assertThat(bPrepare.start).as("B's prepare began after A's launch returned").isGreaterThanOrEqualTo(aExecution.start);
        assertThat(bPrepare.end).as("B's prepare ended before A ended on the device").isLessThanOrEqualTo(aExecution.end);
        assertThat(bPrepare.end).as("and before A's finalize ended").isLessThanOrEqualTo(t.slice(p.a, "finalize").end);
    }

    /**
     * The same sequence where the chip cannot overlap the pair: B's prepare begins after A's
     * finalize ended. On trb B has another ring sizing than A, so a2a3 trb, which overlaps a
     * fitting pair (above), answers "not now" to B during A's execution; a5 trb has one slot.
     * Caller-driven, so that the Worker has certainly tried B while A executes: the poll
     * that launched A goes on to B before it returns.
     */
    @ParameterizedTest
    @MethodSource("trb")
    void onAChipThatCannotOverlapThePairTheSuccessorsPrepareFollowsTheRunsFinalize(Variant variant,
            @TempDir Path dir) throws Exception {
        Pair p = callerDrivenGatedPair(variant, dir, OTHER_SIZING);
        Timeline t = p.timeline;
        assertThat(t.slice(p.b, "prepare").start).as("B's prepare began after A's finalize ended")
                .isGreaterThanOrEqualTo(t.slice(p.a, "finalize").end);
        assertThat(t.slice(p.b, "prepare").start).isGreaterThanOrEqualTo(t.slice(p.a, "execution").end);
    }

    /** The file read back, and the dispatch ids of A and B. */
    record Pair(Timeline timeline, long a, long b) {
    }

    /**
     * Caller-driven: registers the gated callable, enqueues gated A and B (B with
     * {@code configB}), polls until nothing moves — A is launched and held by its gate, and
     * B was staged or, where the chip cannot take it beside A, left queued — then opens A's
     * gate, drains and closes; returns the file read back.
     */
    private static Pair callerDrivenGatedPair(Variant variant, Path dir, CallConfig configB) throws Exception {
        return gatedPair(variant, dir, configB, false, (w, a, b) -> {
            settle(w);
            assertThat(a.ticket().isAccepted()).as("A was launched").isTrue();
            assertThat(a.ticket().isDone()).as("A is held by its gate").isFalse();
        });
    }

    /** Caller-driven: every move possible without blocking, until none is left. */
    private static void settle(Worker w) {
        while (w.poll() > 0) {
            // each call advanced something: look again
        }
    }

    /**
     * Registers the gated callable, enqueues gated A and B (B with {@code configB}), waits until the dispatcher
     * settled while A executes, opens A's gate, closes;
     * returns the file read back.
     */
    private static Pair gatedPair(Variant variant, Path dir, CallConfig configB) throws Exception {
        return gatedPair(variant, dir, configB, true,
                (w, a, b) -> awaitDoneAllItCanBeforeAEnds(TestThreads.dispatcherOf(0), b.ticket()));
    }

    /** What a pair's test does while A is held by its gate and B was enqueued. */
    private interface WhileAHeld {
        void run(Worker w, Gated a, Gated b) throws Exception;
    }

    /**
     * A Worker (background or caller-driven) with a timeline: registers the gated callable,
     * enqueues gated A and B (B with {@code configB}, its gate open), runs {@code whileAHeld},
     * opens A's gate, drains and closes; returns the file read back.
     */
    private static Pair gatedPair(Variant variant, Path dir, CallConfig configB, boolean background,
                                  WhileAHeld whileAHeld) throws Exception {
        Path file = dir.resolve("timeline.json");
        long idA;
        long idB;
        try (Gate gateA = new Gate(); Gate gateB = new Gate()) {
            gateB.open(); // B runs through
            Worker w = Worker.builder().variant(variant).background(background).trace(file).build();
            try {
                java.util.concurrent.CompletableFuture<Void> registered =
                        w.register(RunFiguresE2ETest.GATED, RunFiguresE2ETest.gated());
                if (!background) {
                    settle(w);
                }
                registered.get(60, TimeUnit.SECONDS);
                Gated a = RunFiguresE2ETest.enqueueGated(w, gateA, CallConfig.DEFAULT, 1);
                Gated b = RunFiguresE2ETest.enqueueGated(w, gateB, configB, 2);
                whileAHeld.run(w, a, b);
                gateA.open();
                w.drain();
                a.result();
                b.result();
                idA = a.ticket().dispatchId();
                idB = b.ticket().dispatchId();
            } finally {
                gateA.open();
                w.close();
            }
        }
        Timeline t = Timeline.read(file);
        t.assertTracksWellFormed();
        return new Pair(t, idA, idB);
    }

    /**
     * Waits until the dispatcher, with A held on the device, has done all it can before A
     * ends: it is inside A's finalize (waiting for the device: it took no successor), or,
     * having captured B's acceptance word at the start of B's prepare, it is back waiting
     * for an event — so that prepare returned (it staged B as the pipeline's successor).
     * Yields meanwhile; fails after 25 s, before the gated kernel gives up (30 s).
     */
    private static void awaitDoneAllItCanBeforeAEnds(Thread dispatcher, RunTicket b) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(25);
        while (true) {
            boolean prepared = b.acceptanceWord().isPresent();
            for (StackTraceElement frame : dispatcher.getStackTrace()) {
                if (frame.getClassName().equals(ChipWorker.class.getName())
                        && frame.getMethodName().equals("finalizeBegun")) {
                    return;
                }
                if (prepared && frame.getClassName().equals("org.ptorun.worker.AdmissionQueue")
                        && frame.getMethodName().equals("awaitEvent")) {
                    return;
                }
            }
            assertThat(System.nanoTime() - deadline).as("the dispatcher settled while A executes").isNegative();
            Thread.yield();
        }
    }
}

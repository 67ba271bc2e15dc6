package org.ptorun;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;
import static org.ptorun.SimE2E.filled;
import static org.ptorun.SimE2E.random;
import static org.ptorun.WorkerE2ETest.CHAIN;
import static org.ptorun.WorkerE2ETest.N;
import static org.ptorun.WorkerE2ETest.enqueueChain;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.ptorun.callable.Direction;
import org.ptorun.examples.MetricsService;
import org.ptorun.metrics.WorkerMetrics;
import org.ptorun.testing.EmulatedFaults;
import org.ptorun.testing.Fault;
import org.ptorun.testlog.LogCapture;
import org.ptorun.worker.CollectiveStep;
import org.ptorun.worker.DrainReport;
import org.ptorun.worker.RunCancelledException;
import org.ptorun.worker.RunObserver;
import org.ptorun.worker.RunResult;
import org.ptorun.worker.RunTicket;
import org.ptorun.worker.ShutdownPolicy;
import org.ptorun.worker.Worker;
import org.slf4j.event.Level;

/**
 * {@link WorkerMetrics} after known workloads on every library: exact counts per outcome
 * and exception, one timer sample per successful run, and gauges that agree with
 * {@link Worker#health()}; then the same meters in Prometheus' text format.
 */
class WorkerMetricsE2ETest {

    private static final int FAULT = 3;
    private static final int STEP = 5;
    private static final int SUCCEEDING = 5;
    private static final int FAULTING = 2;
    private static final int CANCELLED = 3;
    private static final List<String> TIMERS =
            List.of("ptorun.run.queue.wait", "ptorun.run.prepare", "ptorun.run.execution", "ptorun.run.finalize");

    /** The emulated driver the onboard libraries load (one instance for all of them). */
    private static final EmulatedFaults FAULTS = WorkerE2ETest.FAULTS;

    private Worker worker;

    @AfterEach
    void tearDown() {
        FAULTS.disarm();
        if (worker != null) {
            worker.close();
        }
    }

    /** Caller-driven, so runs enqueued and not drained stay queued until close cancels them. */
    private Worker build(Variant variant, WorkerMetrics metrics, MeterRegistry registry) {
        worker = Worker.builder().variant(variant).shutdownPolicy(ShutdownPolicy.CANCEL_QUEUED)
                .runObserver(metrics).build();
        metrics.bindTo(registry);
        return worker;
    }

    /** {@link #SUCCEEDING} chains and {@link #FAULTING} kernel faults, interleaved, drained. */
    private void runKnownWorkload(Worker w) throws Exception {
        w.register(CHAIN, ChipWorkerE2ETest.vectorChain(N)).get(60, TimeUnit.SECONDS);
        w.register(FAULT, ChipWorkerE2ETest.faultyVadd(N)).get(60, TimeUnit.SECONDS);
        for (int i = 0; i < SUCCEEDING; i++) {
            enqueueChain(w, i);
            if (i < FAULTING) {
                w.enqueue(FAULT, TaskArgs.of(Tensor.of(random(N, 1)), Tensor.of(random(N, 2)), Tensor.of(filled(N))),
                        CallConfig.DEFAULT);
            }
        }
        DrainReport report = w.drain();
        assertThat(report.succeeded()).isEqualTo(SUCCEEDING);
        assertThat(report.failed()).isEqualTo(FAULTING);
    }

    @ParameterizedTest
    @MethodSource("org.ptorun.WorkerE2ETest#allVariants")
    void countsTimesAndGaugesAKnownWorkload(Variant variant) throws Exception {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        Worker w = build(variant, new WorkerMetrics(), registry);
        runKnownWorkload(w);
        Tags chip = Tags.of("variant", variant.toString(), "chip", "0");

        assertThat(runs(registry, chip.and("callable", "1", "outcome", "success", "exception", "none")))
                .isEqualTo(SUCCEEDING);
        assertThat(runs(registry, chip.and("callable", "3", "outcome", "failure",
                "exception", KernelFaultException.class.getSimpleName()))).isEqualTo(FAULTING);
        assertThat(registry.find("ptorun.runs").counters()).as("no other outcome").hasSize(2);
        for (String name : TIMERS) {
            Timer timer = registry.get(name).tags(chip.and("callable", "1")).timer();
            assertThat(timer.count()).as(name).isEqualTo(SUCCEEDING);
            assertThat(timer.totalTime(TimeUnit.NANOSECONDS)).as(name).isPositive();
            assertThat(registry.find(name).timers()).as("only successful runs' phases are timed").hasSize(1);
        }
        Timer succeeded = latency(registry, chip.and("callable", "1", "outcome", "success", "exception", "none"));
        Timer faulted = latency(registry, chip.and("callable", "3", "outcome", "failure",
                "exception", KernelFaultException.class.getSimpleName()));
        assertThat(succeeded.count()).isEqualTo(SUCCEEDING);
        assertThat(faulted.count()).as("a failed run is timed too").isEqualTo(FAULTING);
        assertThat(faulted.totalTime(TimeUnit.NANOSECONDS)).isPositive();
        // a run's queue wait, prepare and finalize follow one another, and its execution ends
        // before its finalize returns: each chain lies inside its latency
        double queueWait = totalNanos(registry, "ptorun.run.queue.wait", chip);
        double prepare = totalNanos(registry, "ptorun.run.prepare", chip);
        assertThat(succeeded.totalTime(TimeUnit.NANOSECONDS))
                .isGreaterThanOrEqualTo(queueWait + prepare + totalNanos(registry, "ptorun.run.finalize", chip))
                .isGreaterThanOrEqualTo(queueWait + prepare + totalNanos(registry, "ptorun.run.execution", chip));

        assertThat(gauge(registry, "ptorun.worker.queue.depth", Tags.of("variant", variant.toString())))
                .isZero();
        assertThat(gauge(registry, "ptorun.runs.in.flight", chip)).isZero();
        assertThat(gauge(registry, "ptorun.chip.healthy", chip)).isEqualTo(1);
        long committed = w.health().get(0).committedDeviceMemory();
        assertThat(committed).isPositive();
        assertThat(gauge(registry, "ptorun.chip.device.memory.committed", chip)).isEqualTo(committed);

        // queued, never taken (nothing drives a caller-driven Worker): close cancels them
        for (int i = 0; i < CANCELLED; i++) {
            enqueueChain(w, 100 + i);
        }
        assertThat(gauge(registry, "ptorun.worker.queue.depth", Tags.of("variant", variant.toString())))
                .isEqualTo(CANCELLED);
        assertThat(gauge(registry, "ptorun.runs.in.flight", chip)).isEqualTo(CANCELLED);
        w.close();
        assertThat(runs(registry, chip.and("callable", "1", "outcome", "cancelled",
                "exception", "RunCancelledException"))).isEqualTo(CANCELLED);
        assertThat(registry.get("ptorun.run.execution").timer().count()).isEqualTo(SUCCEEDING);
        assertThat(latency(registry, chip.and("callable", "1", "outcome", "cancelled",
                "exception", "RunCancelledException")).count()).isEqualTo(CANCELLED);
        assertThat(registry.find("ptorun.run.latency").timers()).as("one per outcome and exception").hasSize(3);
        assertThat(gauge(registry, "ptorun.worker.queue.depth", Tags.empty())).isZero();
        assertThat(gauge(registry, "ptorun.runs.in.flight", chip)).isZero();
        assertThat(gauge(registry, "ptorun.chip.healthy", chip)).as("a closed chip takes no runs").isZero();
    }

    @Test
    void prometheusTextShowsTheRunsByOutcomeAndTheTimersAsHistograms() throws Exception {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        WorkerMetrics metrics = new WorkerMetrics(Tags.of("service", "demo"), true);
        runKnownWorkload(build(Variant.DEFAULT, metrics, registry));

        String text = registry.scrape();
        assertThat(text)
                .containsPattern("ptorun_runs_total\\{[^}]*outcome=\"success\"[^}]*} " + SUCCEEDING + "(\\.0)?\n")
                .containsPattern("ptorun_runs_total\\{[^}]*exception=\"KernelFaultException\"[^}]*outcome=\"failure\""
                        + "[^}]*} " + FAULTING + "(\\.0)?\n")
                .containsPattern("ptorun_run_execution_seconds_bucket\\{[^}]*le=\"\\+Inf\"[^}]*} " + SUCCEEDING)
                .containsPattern("ptorun_run_queue_wait_seconds_count\\{[^}]*} " + SUCCEEDING + "\n")
                .containsPattern("ptorun_run_latency_seconds_count\\{[^}]*exception=\"KernelFaultException\"[^}]*"
                        + "outcome=\"failure\"[^}]*} " + FAULTING + "\n")
                .containsPattern("ptorun_run_latency_seconds_bucket\\{[^}]*outcome=\"success\"[^}]*le=\"\\+Inf\"[^}]*} "
                        + SUCCEEDING + "\n")
                .containsPattern("ptorun_chip_healthy\\{chip=\"0\",service=\"demo\",variant=\"a2a3/sim/hbg\"} 1")
                .contains("ptorun_chip_device_memory_committed_bytes{")
                .contains("ptorun_worker_queue_depth{service=\"demo\",variant=\"a2a3/sim/hbg\"} 0");
    }

    @ParameterizedTest
    @MethodSource("org.ptorun.WorkerE2ETest#allVariants")
    void everyRunIsTimedFromItsEnqueueUntilItFinishedWhateverItsOutcome(Variant variant, @TempDir Path dir)
            throws Exception {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        WorkerMetrics metrics = new WorkerMetrics();
        // told after the metrics: each run's own latency, by the tags its timer has, and by run
        Map<Tags, List<Long>> latencies = new HashMap<>();
        Map<Long, Long> failedRuns = new HashMap<>();
        List<long[]> stamps = new ArrayList<>(); // latency, finished - enqueued, a success's timings.total()
        RunObserver afterMetrics = new RunObserver() {
            @Override
            public synchronized void runFinished(RunTicket ticket, RunResult result, Throwable failure) {
                // an observer's exception is logged, not thrown: keep what to assert for later
                long nanos = ticket.latency().orElseThrow().toNanos();
                stamps.add(new long[] {nanos, ticket.finishedNanos() - ticket.enqueuedNanos(),
                        result == null ? 0 : result.timings().total().toNanos()});
                String outcome = result != null ? "success"
                        : failure instanceof RunCancelledException ? "cancelled" : "failure";
                String exception = failure == null ? "none" : failure.getClass().getSimpleName();
                latencies.computeIfAbsent(Tags.of("callable", String.valueOf(ticket.callableId()), "outcome",
                        outcome, "exception", exception), k -> new ArrayList<>()).add(nanos);
                if (outcome.equals("failure")) {
                    failedRuns.put(ticket.dispatchId(), nanos);
                }
            }
        };
        Path file = dir.resolve("timeline.json");
        worker = Worker.builder().variant(variant).shutdownPolicy(ShutdownPolicy.CANCEL_QUEUED).runObserver(metrics)
                .runObserver(afterMetrics).trace(file).build();
        metrics.bindTo(registry);
        runKnownWorkload(worker);
        for (int i = 0; i < CANCELLED; i++) {
            enqueueChain(worker, 100 + i); // queued, never taken: close cancels them
        }
        worker.close();

        Map<Tags, List<Long>> seen;
        synchronized (afterMetrics) {
            seen = new HashMap<>(latencies);
        }
        assertThat(seen.keySet()).as("succeeded, faulted, cancelled").hasSize(3);
        synchronized (afterMetrics) {
            assertThat(stamps).hasSize(SUCCEEDING + FAULTING + CANCELLED).allSatisfy(x -> {
                assertThat(x[0]).as("latency is finishedNanos - enqueuedNanos").isEqualTo(x[1]).isPositive();
                assertThat(x[0]).as("a successful run's latency covers its timings").isGreaterThanOrEqualTo(x[2]);
            });
        }
        assertThat(seen.values().stream().mapToInt(List::size).sum()).isEqualTo(SUCCEEDING + FAULTING + CANCELLED);
        assertThat(registry.find("ptorun.run.latency").timers()).hasSameSizeAs(seen.keySet());
        for (Map.Entry<Tags, List<Long>> e : seen.entrySet()) {
            Tags tags = e.getKey().and("chip", "0", "variant", variant.toString());
            Timer timer = latency(registry, tags);
            assertThat(timer.count()).as("%s timed once per run", tags).isEqualTo(e.getValue().size())
                    .isEqualTo((long) runs(registry, tags));
            assertThat(timer.totalTime(TimeUnit.NANOSECONDS)).as("%s: the runs' own latencies", tags)
                    .isCloseTo(e.getValue().stream().mapToLong(Long::longValue).sum(), within(1.0));
        }

        // the timeline has each failed run's phases, from the same clock: all lie within its latency
        WorkerTimelineE2ETest.Timeline timeline = WorkerTimelineE2ETest.Timeline.read(file);
        assertThat(failedRuns).hasSize(FAULTING);
        double phases = 0;
        for (Map.Entry<Long, Long> run : failedRuns.entrySet()) {
            List<WorkerTimelineE2ETest.Slice> slices = timeline.slices().stream()
                    .filter(x -> x.args().has("dispatchId") && x.dispatchId() == run.getKey()).toList();
            assertThat(slices).extracting(WorkerTimelineE2ETest.Slice::name)
                    .as("the phases the faulting run went through").contains("queued", "prepare", "finalize");
            long enqueued = timeline.slice(run.getKey(), "queued").start();
            long reached = slices.stream().mapToLong(WorkerTimelineE2ETest.Slice::end).max().orElseThrow();
            long spent = slices.stream().mapToLong(x -> x.end() - x.start()).sum();
            assertThat(run.getValue()).as("run %d's latency", run.getKey())
                    .isGreaterThanOrEqualTo(reached - enqueued).isGreaterThanOrEqualTo(spent);
            phases += spent;
        }
        assertThat(latency(registry, Tags.of("outcome", "failure")).totalTime(TimeUnit.NANOSECONDS))
                .isGreaterThanOrEqualTo(phases);
    }

    @ParameterizedTest
    @MethodSource("org.ptorun.WorkerE2ETest#onboard")
    void aTimedOutRunIsTimedForAtLeastItsTimeout(Variant variant) throws Exception {
        int timeoutMs = 200;
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        Worker w = build(variant, new WorkerMetrics(), registry);
        w.register(CHAIN, ChipWorkerE2ETest.vectorChain(N)).get(60, TimeUnit.SECONDS);
        FAULTS.inject(Fault.HANG, 0); // its launch never runs: the run ends at its timeout
        w.enqueue(CHAIN, ChipWorkerE2ETest.chainArgs(random(N, 1), random(N, 2), filled(N)),
                CallConfig.builder().timeoutMs(timeoutMs).build());
        enqueueChain(w, 3); // behind it: it meets the chip poisoned by the timeout
        try (LogCapture logs = LogCapture.open()) {
            assertThat(w.drain().failed()).isEqualTo(2);
        }
        Tags chip = Tags.of("variant", variant.toString(), "chip", "0", "callable", String.valueOf(CHAIN),
                "outcome", "failure");
        Timer timedOut = latency(registry, chip.and("exception", RunTimeoutException.class.getSimpleName()));
        assertThat(timedOut.count()).isEqualTo(1);
        assertThat(timedOut.totalTime(TimeUnit.MILLISECONDS)).isGreaterThanOrEqualTo(timeoutMs);
        assertThat(latency(registry, chip.and("exception", ChipPoisonedException.class.getSimpleName())).count())
                .isEqualTo(1);
        assertThat(registry.find("ptorun.run.execution").timer()).as("no run succeeded").isNull();
    }

    @ParameterizedTest
    @MethodSource("org.ptorun.WorkerE2ETest#allVariants")
    void collectiveStepsAreTimedOncePerStep(Variant variant, @TempDir Path dir) throws Exception {
        int count = 64;
        int steps = 3;
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        WorkerMetrics metrics = new WorkerMetrics();
        // told after the metrics (observers are told in order): when it counted every step, so did they
        CountDownLatch stepsSeen = new CountDownLatch(steps);
        RunObserver afterMetrics = new RunObserver() {
            @Override
            public void collectiveStepFinished(CollectiveStep step, Duration latency, Throwable failure) {
                stepsSeen.countDown();
            }
        };
        worker = Worker.builder().variant(variant).devices(0, 1).background(true).runObserver(metrics)
                .runObserver(afterMetrics).build();
        metrics.bindTo(registry);
        worker.register(STEP, CommCollectivesE2ETest.single("allreduce_sum", List.of(Direction.INOUT), 1,
                new long[] {4L * count})).get(60, TimeUnit.SECONDS);
        CommGroup group = worker.openCommGroup(dir.resolve("rootinfo"), Duration.ofSeconds(20));
        try {
            group.allocWindows(4L * count);
            for (int i = 0; i < steps; i++) {
                CollectiveStep step = worker.enqueueCollective(group, STEP, rank -> new TaskArgs()
                        .tensor(Tensor.of(rank.window(), DType.F32)).scalar(rank.deviceContext()), CallConfig.DEFAULT);
                step.results().forEach(CompletableFuture::join);
            }
            worker.drain();
        } finally {
            group.close();
        }
        // told on whichever thread completed a step's last future: it may trail the futures
        Tags tags = Tags.of("variant", variant.toString(), "callable", String.valueOf(STEP), "ranks", "2",
                "outcome", "success");
        assertThat(stepsSeen.await(60, TimeUnit.SECONDS)).as("every step reported to the observers").isTrue();
        Timer timer = registry.get("ptorun.collective.step").tags(tags).timer();
        assertThat(timer.count()).isEqualTo(steps);
        assertThat(timer.totalTime(TimeUnit.NANOSECONDS)).isPositive();
        assertThat(runs(registry, Tags.of("chip", "1", "callable", String.valueOf(STEP), "outcome", "success")))
                .as("each rank's run is counted as a run").isEqualTo(steps);
    }

    @ParameterizedTest
    @MethodSource("org.ptorun.WorkerE2ETest#onboard")
    void aPoisonedChipReadsUnhealthyAndItsRunsAreCountedByException(Variant variant) throws Exception {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        WorkerMetrics metrics = new WorkerMetrics();
        worker = Worker.builder().variant(variant).devices(0, 1).runObserver(metrics).build();
        metrics.bindTo(registry);
        worker.register(CHAIN, ChipWorkerE2ETest.vectorChain(N)).get(60, TimeUnit.SECONDS);
        FAULTS.inject(Fault.DEVICE_LOST, 0);
        for (int i = 0; i < 4; i++) {
            enqueueChain(worker, i); // alternate: chip 0, chip 1, chip 0, chip 1
        }
        try (LogCapture logs = LogCapture.open()) {
            DrainReport report = worker.drain(); // chip 0's first prepare meets the lost device
            assertThat(report.failed()).isEqualTo(2);
        }
        Tags chip0 = Tags.of("chip", "0", "variant", variant.toString());
        Tags chip1 = Tags.of("chip", "1", "variant", variant.toString());
        assertThat(gauge(registry, "ptorun.chip.healthy", chip0)).isZero();
        assertThat(gauge(registry, "ptorun.chip.healthy", chip1)).isEqualTo(1);
        assertThat(runs(registry, chip0.and("outcome", "failure", "exception", "ChipPoisonedException")))
                .as("the run queued behind the one that met the lost device fails fast").isEqualTo(1);
        assertThat(registry.find("ptorun.runs").tags(chip0.and("outcome", "failure")).counters())
                .as("one counter per exception").hasSize(2)
                .allSatisfy(c -> assertThat(c.count()).isEqualTo(1));
        assertThat(runs(registry, chip1.and("outcome", "success"))).isEqualTo(2);
        assertThat(registry.find("ptorun.run.execution").tags(chip0).timer()).as("a failed run's phases are not timed")
                .isNull();
        assertThat(registry.find("ptorun.run.latency").tags(chip0.and("outcome", "failure")).timers())
                .as("its latency is, per exception").hasSize(2).allSatisfy(t -> assertThat(t.count()).isEqualTo(1));
    }

    @Test
    void theExampleServiceScrapesItsRuns() throws Exception {
        try (MetricsService service = new MetricsService(Variant.DEFAULT, 256)) {
            assertThat(service.serve(7).succeeded()).isEqualTo(7);
            assertThat(service.scrape())
                    .containsPattern("ptorun_runs_total\\{[^}]*outcome=\"success\"[^}]*service=\"vector\"[^}]*} 7(\\.0)?\n")
                    .contains("ptorun_run_finalize_seconds_bucket{")
                    .containsPattern("ptorun_run_latency_seconds_count\\{[^}]*outcome=\"success\"[^}]*"
                            + "service=\"vector\"[^}]*} 7\n");
        }
    }

    @Test
    void anObserverThatThrowsIsLoggedOnceAndBreaksNoRun() throws Exception {
        AtomicInteger calls = new AtomicInteger();
        RunObserver broken = new RunObserver() {
            @Override
            public void runFinished(RunTicket ticket, RunResult result, Throwable failure) {
                calls.incrementAndGet();
                throw new IllegalStateException("broken observer");
            }
        };
        worker = Worker.builder().variant(Variant.DEFAULT).runObserver(broken).build();
        try (LogCapture logs = LogCapture.open()) {
            runKnownWorkload(worker);
            assertThat(calls).hasValue(SUCCEEDING + FAULTING);
            assertThat(logs.messages(Level.WARN)).filteredOn(m -> m.contains("run observer")).hasSize(1);
        }
        assertThat(worker.health().get(0).healthy()).isTrue();
    }

    @Test
    void boundBeforeTheWorkerIsBuiltTheGaugesAppearWithIt() throws Exception {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        WorkerMetrics metrics = new WorkerMetrics(Tags.of("worker", "w1"), false);
        metrics.bindTo(registry);
        assertThat(registry.getMeters()).as("nothing to read before the Worker exists").isEmpty();
        worker = Worker.builder().variant(Variant.DEFAULT).devices(0, 1).runObserver(metrics).build();
        assertThat(registry.find("ptorun.chip.healthy").tag("worker", "w1").gauges()).hasSize(2);
        runKnownWorkload(worker);
        assertThat(registry.get("ptorun.runs").tags("outcome", "success").counters().stream()
                .mapToDouble(Counter::count).sum()).isEqualTo(SUCCEEDING);
        Timer prepare = registry.get("ptorun.run.prepare").tags("chip", "0").timer();
        assertThat(prepare.takeSnapshot().histogramCounts()).as("no histogram when turned off").isEmpty();
    }

    @Test
    void oneWorkerMetricsServesOneWorker() {
        WorkerMetrics metrics = new WorkerMetrics();
        worker = Worker.builder().variant(Variant.DEFAULT).runObserver(metrics).build();
        assertThatThrownBy(() -> Worker.builder().variant(Variant.DEFAULT).runObserver(metrics).build())
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("one Worker");
        metrics.bindTo(new SimpleMeterRegistry());
        assertThatThrownBy(() -> metrics.bindTo(new SimpleMeterRegistry()))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("CompositeMeterRegistry");
    }

    private static Timer latency(MeterRegistry registry, Tags tags) {
        return registry.get("ptorun.run.latency").tags(tags).timer();
    }

    private static double totalNanos(MeterRegistry registry, String timer, Tags tags) {
        return registry.get(timer).tags(tags).timer().totalTime(TimeUnit.NANOSECONDS);
    }

    private static double runs(MeterRegistry registry, Tags tags) {
        Counter c = registry.get("ptorun.runs").tags(tags).counter();
        return c.count();
    }

    private static double gauge(MeterRegistry registry, String name, Tags tags) {
        return registry.get(name).tags(tags).gauge().value();
    }
}

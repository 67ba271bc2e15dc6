package org.ptorun.metrics;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.binder.BaseUnits;
import io.micrometer.core.instrument.binder.MeterBinder;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CancellationException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.ToDoubleFunction;
import org.ptorun.worker.ChipHealth;
import org.ptorun.worker.CollectiveStep;
import org.ptorun.worker.RunObserver;
import org.ptorun.worker.RunResult;
import org.ptorun.worker.RunTicket;
import org.ptorun.worker.RunTimings;
import org.ptorun.worker.Worker;

/**
 * The metrics of one {@link Worker}, through Micrometer: a {@link RunObserver} that the
 * Worker is built with, and a {@link MeterBinder} that registers its meters:
 *
 * <pre>{@code
 * WorkerMetrics metrics = new WorkerMetrics();
 * Worker worker = Worker.builder().variant(variant).runObserver(metrics).build();
 * metrics.bindTo(registry);
 * }</pre>
 *
 * <p>Bind it before the first enqueue: a run that finishes while no registry is bound is
 * not counted (the gauges read the Worker whenever they are read). One instance serves one
 * Worker and one registry (to publish to several, bind a {@code CompositeMeterRegistry}).
 *
 * <p>The meters (docs/operations.md), each tagged {@code variant} and with the tags given to
 * the constructor:
 * <ul>
 * <li>{@code ptorun.worker.queue.depth} — gauge: runs admitted and not yet taken by a chip
 * ({@link Worker#queuedRuns()});
 * <li>per chip (tag {@code chip}, the device id): {@code ptorun.runs.in.flight} — runs
 * assigned and not yet finalized; {@code ptorun.chip.healthy} — 1, or 0 once poisoned or
 * closed; {@code ptorun.chip.device.memory.committed} — bytes committed on the device
 * ({@link ChipHealth});
 * <li>{@code ptorun.run.queue.wait}, {@code ptorun.run.prepare},
 * {@code ptorun.run.execution}, {@code ptorun.run.finalize} — timers of each successful
 * run's phases ({@link RunTimings}), tags {@code chip}, {@code callable} (the id it was
 * registered under); a failed run's phases are not recorded here (they are partial, and
 * its execution's end is unknown): its time is in {@code ptorun.run.latency};
 * <li>{@code ptorun.runs} — counter of finished runs, tags {@code chip}, {@code callable},
 * {@code outcome} ({@code success}, {@code failure}, {@code cancelled}) and
 * {@code exception} (the simple class name of what the run failed with, {@code none} on
 * success);
 * <li>{@code ptorun.run.latency} — timer of every finished run, whatever its outcome, from
 * its enqueue until the Worker finished it ({@link RunTicket#latency()}, the Worker's
 * {@link System#nanoTime()} clock), the same tags as {@code ptorun.runs}: its count per tag
 * set equals that counter's;
 * <li>{@code ptorun.collective.step} — timer of each collective step
 * ({@link Worker#enqueueCollective}) from its enqueue until every rank's run finished, tags
 * {@code callable}, {@code ranks}, {@code outcome} ({@code success} or {@code failure}).
 * </ul>
 */
public final class WorkerMetrics implements MeterBinder, RunObserver {

    private final Tags commonTags;
    private final boolean percentileHistogram;
    private final double[] percentiles;

    private volatile Worker worker;
    private volatile MeterRegistry registry;
    private volatile Tags workerTags;

    private final Map<RunKey, RunMeters> runMeters = new ConcurrentHashMap<>();
    private final Map<OutcomeKey, OutcomeMeters> outcomeMeters = new ConcurrentHashMap<>();
    private final Map<StepKey, Timer> stepTimers = new ConcurrentHashMap<>();

    /** Timers publish a percentile histogram; no extra tags. */
    public WorkerMetrics() {
        this(Tags.empty(), true);
    }

    /**
     * @param tags added to every meter (e.g. the service's or this Worker's name, to tell
     *        several Workers apart)
     * @param percentileHistogram whether the timers publish a percentile histogram (for
     *        server-side percentiles, e.g. Prometheus' {@code histogram_quantile})
     * @param percentiles client-side percentiles each timer also publishes, e.g.
     *        {@code 0.5, 0.99}; none by default
     */
    public WorkerMetrics(Iterable<Tag> tags, boolean percentileHistogram, double... percentiles) {
        this.commonTags = Tags.of(Objects.requireNonNull(tags, "tags"));
        this.percentileHistogram = percentileHistogram;
        this.percentiles = percentiles.clone();
        for (double p : this.percentiles) {
            if (!(p >= 0 && p <= 1)) {
                throw new IllegalArgumentException("percentile " + p + " is outside [0, 1]");
            }
        }
    }

    /**
     * Called by {@link Worker.Builder#build()}.
     *
     * @throws IllegalStateException when already serving another Worker
     */
    @Override
    public synchronized void workerBuilt(Worker built) {
        Objects.requireNonNull(built, "worker");
        if (worker != null && worker != built) {
            throw new IllegalStateException("WorkerMetrics serves one Worker: create one per Worker");
        }
        workerTags = commonTags.and("variant", built.variant().toString());
        worker = built;
        if (registry != null) {
            registerGauges(registry, built);
        }
    }

    /**
     * Registers the gauges now if the Worker is built (else when it is) and counts the runs
     * that finish from now on.
     *
     * @throws IllegalStateException when already bound to another registry
     */
    @Override
    public synchronized void bindTo(MeterRegistry meterRegistry) {
        Objects.requireNonNull(meterRegistry, "registry");
        if (registry != null) {
            if (registry == meterRegistry) {
                return;
            }
            throw new IllegalStateException("WorkerMetrics binds to one registry: bind a CompositeMeterRegistry");
        }
        Worker w = worker;
        if (w != null) {
            registerGauges(meterRegistry, w);
        }
        registry = meterRegistry; // volatile: published after the gauges, runs are counted from here
    }

    private void registerGauges(MeterRegistry r, Worker w) {
        Gauge.builder("ptorun.worker.queue.depth", w, Worker::queuedRuns)
                .description("Runs admitted and not yet taken by their chip")
                .tags(workerTags)
                .register(r);
        List<Integer> ids = w.deviceIds();
        for (int i = 0; i < ids.size(); i++) {
            int index = i;
            Tags chip = workerTags.and("chip", String.valueOf(ids.get(i)));
            chipGauge(r, w, "ptorun.runs.in.flight", "Runs assigned to the chip and not yet finalized", null,
                    chip, index, ChipHealth::outstanding);
            chipGauge(r, w, "ptorun.chip.healthy", "1 while the chip takes runs, 0 once poisoned or closed", null,
                    chip, index, h -> h.healthy() ? 1 : 0);
            chipGauge(r, w, "ptorun.chip.device.memory.committed", "Device memory committed on the chip",
                    BaseUnits.BYTES, chip, index, ChipHealth::committedDeviceMemory);
        }
    }

    private static void chipGauge(MeterRegistry r, Worker w, String name, String description, String unit, Tags tags,
                                  int index, ToDoubleFunction<ChipHealth> value) {
        // health() reads every chip: fine at a scrape's rate, and it stays right after close()
        Gauge.builder(name, w, x -> value.applyAsDouble(x.health().get(index)))
                .description(description)
                .baseUnit(unit)
                .tags(tags)
                .register(r);
    }

    @Override
    public void runFinished(RunTicket ticket, RunResult result, Throwable failure) {
        MeterRegistry r = registry;
        if (r == null) {
            return;
        }
        int chip = ticket.deviceId();
        int callable = ticket.callableId();
        Timer latency;
        if (result != null) {
            RunMeters m = runMeters.computeIfAbsent(new RunKey(chip, callable), k -> newRunMeters(r, k));
            RunTimings t = result.timings();
            m.queueWait.record(t.queueWait());
            m.prepare.record(t.prepare());
            m.execution.record(t.execution());
            m.finalizing.record(t.finalizeDuration());
            m.succeeded.increment();
            latency = m.latency;
        } else {
            String outcome = failure instanceof CancellationException ? "cancelled" : "failure";
            String exception = failure == null ? "unknown" : failure.getClass().getSimpleName();
            OutcomeMeters m = outcomeMeters.computeIfAbsent(new OutcomeKey(chip, callable, outcome, exception),
                    k -> new OutcomeMeters(runsCounter(r, k.chip, k.callable, k.outcome, k.exception),
                            latencyTimer(r, k.chip, k.callable, k.outcome, k.exception)));
            m.runs.increment();
            latency = m.latency;
        }
        long finished = ticket.finishedNanos(); // the Worker's clock, stamped before it told us
        if (finished != 0) {
            latency.record(finished - ticket.enqueuedNanos(), TimeUnit.NANOSECONDS);
        }
    }

    @Override
    public void collectiveStepFinished(CollectiveStep step, Duration latency, Throwable failure) {
        MeterRegistry r = registry;
        if (r == null) {
            return;
        }
        StepKey key = new StepKey(step.ticket(step.ranks().get(0)).callableId(), step.size(), failure == null ? "success" : "failure");
        stepTimers.computeIfAbsent(key, k -> timer(r, "ptorun.collective.step",
                "From a collective step's enqueue until every rank's run finished",
                workerTags.and("callable", String.valueOf(k.callable), "ranks", String.valueOf(k.ranks),
                        "outcome", k.outcome))).record(latency);
    }

    private RunMeters newRunMeters(MeterRegistry r, RunKey k) {
        Tags tags = runTags(k.chip, k.callable);
        return new RunMeters(
                timer(r, "ptorun.run.queue.wait", "From enqueue until its chip began to prepare the run", tags),
                timer(r, "ptorun.run.prepare", "Preparing the run on its chip", tags),
                timer(r, "ptorun.run.execution", "From the launch call until the run ended on the device", tags),
                timer(r, "ptorun.run.finalize", "Finalizing the run: copy-back, release, and any wait for its end",
                        tags),
                runsCounter(r, k.chip, k.callable, "success", "none"),
                latencyTimer(r, k.chip, k.callable, "success", "none"));
    }

    private Timer latencyTimer(MeterRegistry r, int chip, int callable, String outcome, String exception) {
        return timer(r, "ptorun.run.latency", "From enqueue until the Worker finished the run, whatever its outcome",
                runTags(chip, callable).and("outcome", outcome, "exception", exception));
    }

    private Timer timer(MeterRegistry r, String name, String description, Tags tags) {
        return Timer.builder(name)
                .description(description)
                .tags(tags)
                .publishPercentileHistogram(percentileHistogram)
                .publishPercentiles(percentiles)
                .register(r);
    }

    private Counter runsCounter(MeterRegistry r, int chip, int callable, String outcome, String exception) {
        return Counter.builder("ptorun.runs")
                .description("Runs finished, by outcome and exception")
                .tags(runTags(chip, callable).and("outcome", outcome, "exception", exception))
                .register(r);
    }

    private Tags runTags(int chip, int callable) {
        return workerTags.and("chip", String.valueOf(chip), "callable", String.valueOf(callable));
    }

    private record RunKey(int chip, int callable) {
    }

    private record StepKey(int callable, int ranks, String outcome) {
    }

    private record OutcomeKey(int chip, int callable, String outcome, String exception) {
    }

    private record RunMeters(Timer queueWait, Timer prepare, Timer execution, Timer finalizing, Counter succeeded,
                             Timer latency) {
    }

    /** The meters of the runs that failed or were cancelled with one exception. */
    private record OutcomeMeters(Counter runs, Timer latency) {
    }
}

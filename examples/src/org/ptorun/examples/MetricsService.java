package org.ptorun.examples;

import io.micrometer.core.instrument.Tags;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.util.concurrent.TimeUnit;
import org.ptorun.CallConfig;
import org.ptorun.TaskArgs;
import org.ptorun.Tensor;
import org.ptorun.Variant;
import org.ptorun.metrics.WorkerMetrics;
import org.ptorun.worker.DrainReport;
import org.ptorun.worker.Worker;

/**
 * A Worker service that exports its metrics in Prometheus' text format (docs/operations.md):
 * {@link VectorService}'s callable, a batch of requests, then the scrape a Prometheus server
 * would read from the service's {@code /metrics}: every meter of {@link WorkerMetrics}, e.g.
 * {@code ptorun_runs_total}, the phase timers {@code ptorun_run_execution_seconds_*} and the
 * latency of every run, failed ones too, {@code ptorun_run_latency_seconds_*} (tagged
 * {@code outcome} and {@code exception}). Needs {@code micrometer-core} and
 * {@code micrometer-registry-prometheus} beside the ptorun jar.
 *
 * <pre>java -cp ptorun.jar:jna.jar:slf4j-api.jar:micrometer-*.jar:... org.ptorun.examples.MetricsService [variant] [requests]</pre>
 */
public final class MetricsService implements AutoCloseable {

    private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    private final Worker worker;
    private final int n;

    public MetricsService(Variant variant, int n) {
        this.n = n;
        // the two lines that give a Worker its metrics: observe its runs, bind its meters
        WorkerMetrics metrics = new WorkerMetrics(Tags.of("service", "vector"), true);
        this.worker = Worker.builder().variant(variant).background(true).runObserver(metrics).build();
        metrics.bindTo(registry);
        try {
            worker.register(VectorService.ADD_TIMES_TWO, VectorService.callable(n)).get(60, TimeUnit.SECONDS);
        } catch (Exception e) {
            worker.close();
            throw new IllegalStateException("cannot register the callable", e);
        }
    }

    /** Enqueues {@code requests} runs and waits for all of them. */
    public DrainReport serve(int requests) throws InterruptedException {
        for (int r = 0; r < requests; r++) {
            TaskArgs args = TaskArgs.of(Tensor.of(new float[n]), Tensor.of(new float[n]), Tensor.of(new float[n]));
            worker.enqueue(VectorService.ADD_TIMES_TWO, args, CallConfig.DEFAULT);
        }
        return worker.drain();
    }

    /** What a Prometheus server scraping this service reads (text format 0.0.4). */
    public String scrape() {
        return registry.scrape();
    }

    @Override
    public void close() {
        worker.close();
        registry.close();
    }

    public static void main(String[] argv) throws InterruptedException {
        Variant variant = argv.length > 0 ? Variant.parse(argv[0]) : Variant.DEFAULT;
        int requests = argv.length > 1 ? Integer.parseInt(argv[1]) : 100;
        try (MetricsService service = new MetricsService(variant, 1024)) {
            service.serve(requests);
            System.out.print(service.scrape());
        }
    }
}

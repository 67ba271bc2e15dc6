package org.ptorun.bench;

import java.util.Arrays;
import java.util.Locale;
import org.ptorun.CallConfig;
import org.ptorun.ChipWorker;
import org.ptorun.HostRuntime;
import org.ptorun.NativeRun;
import org.ptorun.PipelineSlotLease;
import org.ptorun.TaskArgs;
import org.ptorun.Variant;
import org.ptorun.worker.RunResult;
import org.ptorun.worker.RunTimings;
import org.ptorun.worker.Worker;

/**
 * Where P9's time goes (docs/performance.md): blocks of 64 trivial runs through a
 * background {@link Worker} (device 0), each followed by 64 through a bare
 * {@link ChipWorker} loop (device 1), as {@code WorkerThroughputBench} times them; each
 * Worker run split by its {@link RunTimings} — admission, the dispatcher picking it up,
 * prepare, launch, the rest of the execution, finalize, the caller seeing the result —
 * and each bare launch timed, so the two launches' distributions can be compared.
 * A {@code main}: {@code WorkerBreakdown <variant> <runs per round>}, four rounds.
 */
public final class WorkerBreakdown {

    private static final int BLOCK = 64;

    private WorkerBreakdown() {
    }

    public static void main(String[] a) throws Exception {
        HostRuntime runtime = HostRuntime.load(Variant.parse(a[0]));
        int n = Integer.parseInt(a[1]) / BLOCK * BLOCK;
        TaskArgs args = new TaskArgs();
        PipelineSlotLease lease = PipelineSlotLease.of(0, 1);
        try (Worker worker = Worker.builder().runtime(runtime).devices(0).background(true).build();
             ChipWorker bare = ChipWorker.open(runtime, 1)) {
            worker.register(TrivialRun.CALLABLE_ID, TrivialRun.CALLABLE).join();
            bare.registerCallable(TrivialRun.CALLABLE_ID, TrivialRun.CALLABLE);
            for (int round = 0; round < 4; round++) {
                long[][] w = new long[7][n]; // admission, pick-up, prepare, launch, execution, finalize, result seen
                long[] bareLaunch = new long[n];
                long workerNanos = 0;
                long bareNanos = 0;
                for (int block = 0; block < n; block += BLOCK) {
                    long t0 = System.nanoTime();
                    for (int i = block; i < block + BLOCK; i++) {
                        long s = System.nanoTime();
                        RunResult r = worker.enqueue(TrivialRun.CALLABLE_ID, args, CallConfig.DEFAULT).result().join();
                        long e = System.nanoTime();
                        RunTimings t = r.timings();
                        long[] at = {s, t.enqueued(), t.prepareStart(), t.prepareEnd(), t.launchEnd(),
                            t.executionEnd(), t.finalizeEnd(), e};
                        for (int k = 0; k < 7; k++) {
                            w[k][i] = at[k + 1] - at[k];
                        }
                    }
                    long t1 = System.nanoTime();
                    for (int i = block; i < block + BLOCK; i++) {
                        NativeRun run = bare.prepare(TrivialRun.CALLABLE_ID, args, CallConfig.DEFAULT, lease, i + 1,
                                i + 1, null);
                        long l0 = System.nanoTime();
                        bare.launch(run);
                        bareLaunch[i] = System.nanoTime() - l0;
                        if (!bare.poll(run)) {
                            bare.await(run);
                        }
                        bare.finalizeRun(run);
                    }
                    workerNanos += t1 - t0;
                    bareNanos += System.nanoTime() - t1;
                }
                StringBuilder line = new StringBuilder(String.format(Locale.ROOT,
                        "%s round %d: Worker %.2f us/run, bare loop %.2f us/run, runs/s ratio %.3f |"
                        + " Worker, mean (p50) in us:", a[0], round, workerNanos / 1e3 / n, bareNanos / 1e3 / n,
                        (double) bareNanos / workerNanos));
                String[] names = {"admit", "pick-up", "prepare", "launch", "execution", "finalize", "seen"};
                for (int k = 0; k < 7; k++) {
                    line.append(String.format(Locale.ROOT, " %s %.2f (p50 %.2f)", names[k], mean(w[k]),
                            quantile(w[k], 0.5)));
                }
                line.append(String.format(Locale.ROOT, " | launch p50/p90 (us): Worker %.2f/%.2f, bare %.2f/%.2f",
                        quantile(w[3], 0.5), quantile(w[3], 0.9), quantile(bareLaunch, 0.5),
                        quantile(bareLaunch, 0.9)));
                System.out.println(line);
            }
        }
    }

    private static double mean(long[] nanos) {
        double sum = 0;
        for (long v : nanos) {
            sum += v;
        }
        return sum / nanos.length / 1e3;
    }

    private static double quantile(long[] nanos, double q) {
        long[] s = nanos.clone();
        Arrays.sort(s);
        return s[(int) Math.min(s.length - 1, q * s.length)] / 1e3;
    }
}

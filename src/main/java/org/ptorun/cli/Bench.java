package org.ptorun.cli;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.stream.Stream;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.ptorun.CallConfig;
import org.ptorun.ChipWorker;
import org.ptorun.HostRuntime;
import org.ptorun.NativeRun;
import org.ptorun.PipelineSlotLease;
import org.ptorun.TaskArgs;
import org.ptorun.Variant;
import org.ptorun.callable.ChipCallable;
import org.ptorun.callable.Kernel;
import org.ptorun.callable.Program;
import org.ptorun.worker.Worker;

/**
 * A quick look at the cost of one trivial run (a single {@code noop} task): the full
 * cycle prepare → launch → poll/await → finalize through {@link ChipWorker}, as
 * percentiles over many runs after a warm-up, with a Java park/unpark round trip for scale.
 * The benchmark suite proper (P1–P8, JMH, {@code mvn -q -Pbench verify}) lives in the
 * test sources, org.ptorun.bench; docs/performance.md has the figures.
 */
final class Bench {

    private static final int NOOP = 0;

    private Bench() {
    }

    /** The figures of one bench. */
    record Result(Variant variant, int runs, double p50, double p90, double p99, double switchesPerRun,
                  double wakeRoundTripP50, double meanNanos) {

        /** The cycle's p50 over a park/unpark round trip's: for scale, not a floor (a run may beat it). */
        double cycleOverWakeRoundTrip() {
            return p50 / wakeRoundTripP50;
        }

        ObjectNode toJson() {
            ObjectNode o = Json.object();
            o.put("variant", variant.toString());
            o.put("runs", runs);
            o.put("task", "noop");
            ObjectNode cycle = o.putObject("cycleMicros");
            cycle.put("p50", p50);
            cycle.put("p90", p90);
            cycle.put("p99", p99);
            o.put("voluntaryContextSwitchesPerRun", switchesPerRun);
            o.put("wakeRoundTripMicrosP50", wakeRoundTripP50);
            o.put("cycleOverWakeRoundTrip", cycleOverWakeRoundTrip());
            return o;
        }
    }

    static int run(Variant variant, int runs, boolean json, PrintWriter out, PrintWriter err) {
        Result r = measure(variant, runs, new Progress(err, "bench " + variant));
        if (json) {
            Json.print(out, r.toJson());
            return 0;
        }
        out.printf(Locale.ROOT, "%s trivial run (1 noop task), full ChipWorker cycle over %d runs: "
                        + "p50 %.1f us, p90 %.1f us, p99 %.1f us%n", variant, runs, r.p50(), r.p90(), r.p99());
        out.printf(Locale.ROOT, "voluntary context switches per run, all threads of the process: %.2f "
                + "(each is a thread that parked; a hand-off costs one)%n", r.switchesPerRun());
        out.printf(Locale.ROOT, "for scale, a park/unpark round trip between two Java threads (two cross-thread "
                + "hand-offs): p50 %.1f us; cycle / round trip = %.2f (below 1 when a run hands off less: "
                + "see the switches above)%n", r.wakeRoundTripP50(), r.cycleOverWakeRoundTrip());
        out.flush();
        return 0;
    }

    static Result measure(Variant variant, int runs, Progress progress) {
        if (runs < 100) {
            throw new IllegalArgumentException("bench needs at least 100 runs, got " + runs);
        }
        ChipCallable noop = noop();
        try (ChipWorker chip = ChipWorker.open(HostRuntime.load(variant), 0)) {
            chip.registerCallable(NOOP, noop);
            TaskArgs args = new TaskArgs();
            PipelineSlotLease lease = PipelineSlotLease.of(0, 1);
            long[] cycle = new long[runs];
            int warmup = Math.max(1000, runs / 5);
            long switchesBefore = 0;
            java.util.Map<String, Long> threadsBefore = java.util.Map.of();
            for (int i = -warmup; i < runs; i++) {
                if (i == 0) {
                    threadsBefore = switchesPerThread();
                    switchesBefore = voluntaryContextSwitches();
                }
                long t0 = System.nanoTime();
                NativeRun run = chip.prepare(NOOP, args, CallConfig.DEFAULT, lease, i, i, null);
                chip.launch(run);
                if (!chip.poll(run)) {
                    chip.await(run);
                }
                chip.finalizeRun(run);
                long t1 = System.nanoTime();
                if (i >= 0) {
                    cycle[i] = t1 - t0;
                }
                if ((i & 1023) == 0) {
                    progress.update(i + warmup, runs + warmup, "runs (warm-up included)");
                }
            }
            double switchesPerRun = (voluntaryContextSwitches() - switchesBefore) / (double) runs;
            if (Boolean.getBoolean("ptorun.bench.perThread")) {
                perThread(threadsBefore, runs, new PrintWriter(System.err, true));
            }
            double mean = Arrays.stream(cycle).average().orElse(0);
            Arrays.sort(cycle);
            long[] roundTrips = wakeRoundTrips(runs);
            return new Result(variant, runs, micros(cycle, 0.50), micros(cycle, 0.90), micros(cycle, 0.99),
                    switchesPerRun, micros(roundTrips, 0.50), mean);
        }
    }

    /** The figures of one {@code bench --worker}: the same trivial runs through both paths. */
    record WorkerResult(Variant variant, int runs, double workerRunsPerSecond, double workerSwitchesPerRun,
                        double chipRunsPerSecond, double chipSwitchesPerRun) {

        /** P9: Worker runs/s over bare ChipWorker loop runs/s (target >= 0.8). */
        double ratio() {
            return workerRunsPerSecond / chipRunsPerSecond;
        }

        ObjectNode toJson() {
            ObjectNode o = Json.object();
            o.put("variant", variant.toString());
            o.put("runs", runs);
            o.put("task", "noop");
            ObjectNode w = o.putObject("backgroundWorker");
            w.put("runsPerSecond", workerRunsPerSecond);
            w.put("voluntaryContextSwitchesPerRun", workerSwitchesPerRun);
            ObjectNode c = o.putObject("chipWorkerLoop");
            c.put("runsPerSecond", chipRunsPerSecond);
            c.put("voluntaryContextSwitchesPerRun", chipSwitchesPerRun);
            o.put("workerOverChipWorker", ratio());
            return o;
        }
    }

    /**
     * {@code bench --worker}: one trivial run at a time (enqueue, then wait on its future)
     * through a background-mode {@link Worker} over one chip, against the bare ChipWorker
     * loop in the same JVM (P9 is the ratio of their runs per second). Each side runs its
     * warm-up first; the two are measured in turn, ChipWorker loop first.
     */
    static int runWorker(Variant variant, int runs, boolean json, PrintWriter out, PrintWriter err) {
        if (runs < 100) {
            throw new IllegalArgumentException("bench needs at least 100 runs, got " + runs);
        }
        Progress progress = new Progress(err, "bench --worker " + variant);
        Result chip = measure(variant, runs, progress);
        double chipRunsPerSecond = 1e9 / chip.meanNanos();
        int warmup = Math.max(1000, runs / 5);
        double workerRunsPerSecond;
        double workerSwitches;
        try (Worker worker = Worker.builder().variant(variant).background(true).build()) {
            worker.register(NOOP, noop()).join();
            TaskArgs args = new TaskArgs();
            long switchesBefore = 0;
            java.util.Map<String, Long> threadsBefore = java.util.Map.of();
            long t0 = 0;
            for (int i = -warmup; i < runs; i++) {
                if (i == 0) {
                    threadsBefore = switchesPerThread();
                    switchesBefore = voluntaryContextSwitches();
                    t0 = System.nanoTime();
                }
                try {
                    worker.enqueue(NOOP, args, CallConfig.DEFAULT).result().get();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException("interrupted", e);
                } catch (ExecutionException e) {
                    throw new IllegalStateException("a trivial run failed", e.getCause());
                }
                if ((i & 1023) == 0) {
                    progress.update(i + warmup, runs + warmup, "Worker runs (warm-up included)");
                }
            }
            long elapsed = System.nanoTime() - t0;
            workerSwitches = (voluntaryContextSwitches() - switchesBefore) / (double) runs;
            if (Boolean.getBoolean("ptorun.bench.perThread")) {
                perThread(threadsBefore, runs, err);
            }
            workerRunsPerSecond = runs * 1e9 / elapsed;
        }
        WorkerResult r = new WorkerResult(variant, runs, workerRunsPerSecond, workerSwitches, chipRunsPerSecond,
                chip.switchesPerRun());
        if (json) {
            Json.print(out, r.toJson());
            return 0;
        }
        out.printf(Locale.ROOT, "%s trivial runs (1 noop task), one at a time, %d runs each:%n", variant, runs);
        out.printf(Locale.ROOT, "  background Worker (enqueue -> future.get): %.0f runs/s, %.2f voluntary context "
                + "switches per run (all threads)%n", r.workerRunsPerSecond(), r.workerSwitchesPerRun());
        out.printf(Locale.ROOT, "  bare ChipWorker loop:                     %.0f runs/s, %.2f voluntary context "
                + "switches per run (all threads)%n", r.chipRunsPerSecond(), r.chipSwitchesPerRun());
        out.printf(Locale.ROOT, "  P9 Worker / ChipWorker loop = %.2f (target >= 0.8)%n", r.ratio());
        out.flush();
        return 0;
    }

    private static ChipCallable noop() {
        return ChipCallable.builder()
                .child(0, Kernel.noop())
                .program(Program.builder().submit(0).build())
                .build();
    }

    /**
     * A yardstick, not a floor: wake a parked thread, which wakes this one back (park/unpark,
     * no spinning; two cross-thread hand-offs). A run's cycle can beat it when it hands off
     * less (on the sim one wake of the executor; the waiting thread's bounded spin usually
     * catches the end). Sorted nanoseconds.
     */
    private static long[] wakeRoundTrips(int rounds) {
        AtomicInteger turn = new AtomicInteger(); // odd: the echo thread's turn
        Thread main = Thread.currentThread();
        Thread echo = new Thread(() -> {
            for (int expect = 1; ; expect += 2) {
                while (turn.get() < expect) {
                    LockSupport.park();
                }
                if (turn.get() < 0) {
                    return;
                }
                turn.incrementAndGet();
                LockSupport.unpark(main);
            }
        }, "ptorun-bench-echo");
        echo.setDaemon(true);
        echo.start();
        long[] rtt = new long[rounds];
        for (int i = -rounds / 5; i < rounds; i++) {
            long t0 = System.nanoTime();
            int mine = turn.incrementAndGet();
            LockSupport.unpark(echo);
            while (turn.get() == mine) {
                LockSupport.park();
            }
            if (i >= 0) {
                rtt[i] = System.nanoTime() - t0;
            }
        }
        turn.set(Integer.MIN_VALUE);
        LockSupport.unpark(echo);
        Arrays.sort(rtt);
        return rtt;
    }

    /**
     * P7: the process CPU time an open, idle ChipWorker costs over two seconds. The
     * benchmark suite (org.ptorun.bench.BenchSuite, test code) runs this command and
     * reads its lines: keep their shape "variant idle ChipWorker: N ms CPU in M ms ...".
     */
    static int idle(List<Variant> variants, PrintWriter out, PrintWriter err) {
        com.sun.management.OperatingSystemMXBean os =
                ManagementFactory.getPlatformMXBean(com.sun.management.OperatingSystemMXBean.class);
        Progress progress = new Progress(err, "idle");
        int done = 0;
        for (Variant v : variants) {
            if (done++ > 0) {
                progress.say(v + " (" + done + "/" + variants.size() + ")");
            }
            try (ChipWorker chip = ChipWorker.open(HostRuntime.load(v), 0)) {
                sleep(300);
                long t0 = os.getProcessCpuTime();
                sleep(2000);
                long cpu = os.getProcessCpuTime() - t0;
                out.printf(Locale.ROOT, "%-18s idle ChipWorker: %.1f ms CPU in 2000 ms (%.2f %%, whole JVM)%n", v,
                        cpu / 1e6, cpu / 2e7);
                out.flush();
            }
        }
        return 0;
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }

    /**
     * The sum of every thread's voluntary context switches (/proc/self/task/{tid}/status): a
     * load-independent count of the parks, hence of the hand-offs a cycle costs.
     */
    private static long voluntaryContextSwitches() {
        long total = 0;
        try (Stream<Path> tasks =
                Files.list(Path.of("/proc/self/task"))) {
            for (Path task : (Iterable<Path>) tasks::iterator) {
                total += switchesOf(task.resolve("status"));
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read /proc/self/task", e);
        }
        return total;
    }

    /** Per thread (tid and name): its voluntary switches so far. */
    private static java.util.Map<String, Long> switchesPerThread() {
        java.util.Map<String, Long> out = new java.util.TreeMap<>();
        try (Stream<Path> tasks = Files.list(Path.of("/proc/self/task"))) {
            for (Path task : (Iterable<Path>) tasks::iterator) {
                String name;
                try {
                    name = Files.readString(task.resolve("comm")).trim();
                } catch (IOException e) {
                    continue;
                }
                out.put(task.getFileName() + " " + name, switchesOf(task.resolve("status")));
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read /proc/self/task", e);
        }
        return out;
    }

    /** -Dptorun.bench.perThread=true: which threads parked, per run (diagnosis). */
    private static void perThread(java.util.Map<String, Long> before, int runs, PrintWriter err) {
        java.util.Map<String, Long> after = switchesPerThread();
        after.forEach((thread, n) -> {
            double perRun = (n - before.getOrDefault(thread, 0L)) / (double) runs;
            if (perRun >= 0.01) {
                err.printf(Locale.ROOT, "  %-30s %.2f voluntary switches per run%n", thread, perRun);
            }
        });
        err.flush();
    }

    private static long switchesOf(Path status) {
        try {
            for (String line : Files.readAllLines(status)) {
                if (line.startsWith("voluntary_ctxt_switches:")) {
                    return Long.parseLong(line.substring(line.indexOf(':') + 1).trim());
                }
            }
            return 0;
        } catch (NoSuchFileException e) {
            return 0; // the thread ended meanwhile
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + status, e);
        }
    }

    private static double micros(long[] sorted, double q) {
        return sorted[(int) Math.min(sorted.length - 1, Math.floor(q * sorted.length))] / 1e3;
    }
}

package org.ptorun.cli;

import static org.ptorun.callable.Direction.IN;
import static org.ptorun.callable.Direction.OUT;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Locale;
import org.ptorun.AcceptanceWord;
import org.ptorun.CallConfig;
import org.ptorun.ChipWorker;
import org.ptorun.HostRuntime;
import org.ptorun.NativeRun;
import org.ptorun.PipelineSlotLease;
import org.ptorun.RunReport;
import org.ptorun.TaskArgs;
import org.ptorun.Tensor;
import org.ptorun.Variant;
import org.ptorun.callable.ChipCallable;
import org.ptorun.callable.Kernel;
import org.ptorun.callable.Param;
import org.ptorun.callable.Program;

/**
 * The demo: the vector chain f = (a+b+1)*(a+b+2)+(a+b) as five dependent tasks on one
 * chip, several runs with the next run prepared while the current one executes (on a
 * library that supports it), each result checked against plain Java. With a trace file,
 * the last run has {@code CallConfig.enableTrace} on (so it is not prepared while its
 * predecessor executes: a diagnostic run never overlaps another) and its trace is moved
 * to that file. The output ends with one verdict line, "ok: ..." or "FAILED: ...".
 */
public final class Demo {

    private static final int N = 1 << 20;
    private static final int CHAIN = 0;

    private Demo() {
    }

    /**
     * {@code runs} runs of the chain on {@code variant}, ending with one verdict line: "ok: ..."
     * and 0, or "FAILED: ..." and {@link Main#FAILURE} (a library that does not load, a run
     * that fails, a result that differs from plain Java).
     */
    static int run(Variant variant, int runs, Path trace, PrintWriter out, PrintWriter err) throws IOException {
        Path traceDir = null;
        if (trace != null) {
            Path parent = trace.toAbsolutePath().getParent();
            traceDir = Files.createTempDirectory(Files.createDirectories(parent), ".ptorun-trace-");
        }
        try {
            run(variant, runs, trace, traceDir, out);
            out.printf(Locale.ROOT, "ok: %d run%s on %s, every result equal to plain Java%n", runs,
                    runs == 1 ? "" : "s", variant);
            return 0;
        } catch (RuntimeException e) {
            out.printf(Locale.ROOT, "FAILED: the demo on %s: %s%n", variant,
                    e instanceof WrongResult ? e.getMessage() : Main.describe(e));
            if (Boolean.getBoolean("ptorun.stacktrace")) {
                e.printStackTrace(err);
            }
            return Main.FAILURE;
        } finally {
            out.flush();
            if (traceDir != null) {
                try (var left = Files.list(traceDir)) {
                    for (Path p : left.toList()) {
                        Files.deleteIfExists(p);
                    }
                }
                Files.deleteIfExists(traceDir);
            }
        }
    }

    /** A run whose result differs from plain Java. */
    private static final class WrongResult extends RuntimeException {
        WrongResult(String message) {
            super(message);
        }
    }

    private static void run(Variant variant, int runs, Path trace, Path traceDir, PrintWriter out) throws IOException {
        out.printf(Locale.ROOT, "ptorun demo on %s: %d run%s of f = (a+b+1)*(a+b+2)+(a+b) over %,d floats%n",
                variant, runs, runs == 1 ? "" : "s", N);
        out.printf(Locale.ROOT, "  each run: new a and b, five dependent tasks on the chip, f checked against "
                + "plain Java%n");
        out.printf(Locale.ROOT, "  the tasks: s = a+b, p = s+1, q = s+2, r = p*q, f = r+s%n");
        HostRuntime runtime = HostRuntime.load(variant);
        // the chip closes first: it finalizes a run a failure left behind, which frees its word
        try (AcceptanceWord accepted0 = AcceptanceWord.allocate();
             AcceptanceWord accepted1 = AcceptanceWord.allocate();
             ChipWorker chip = ChipWorker.open(runtime, 0)) {
            chip.registerCallable(CHAIN, vectorChain(N));
            long baseline = chip.committedDeviceMemory();
            boolean pipelined = chip.supportsOverlap();
            out.printf(Locale.ROOT, "  %s%n", variant.platform() == Variant.Platform.SIM
                    ? "the sim platform: the chip is emulated in this process"
                    : "the onboard platform: the chip is driven through its device driver");
            out.printf(Locale.ROOT, "  %s%s%n", pipelined
                    ? "this library prepares run N+1 (copies its inputs in) while run N executes"
                    : "one run at a time: this library does not prepare a run while another executes",
                    traceDir != null && pipelined && runs > 1
                            ? "; the last run records a trace, so it starts after the one before it ended" : "");
            out.printf(Locale.ROOT, "  \"launch confirmed\": the library set the run's acceptance word, which it "
                    + "does only when it really launches the kernels%n");

            // two runs live at most (the one executing, the one prepared): index i % 2
            float[][] as = new float[2][];
            float[][] bs = new float[2][];
            float[][] fs = new float[2][];
            NativeRun[] live = new NativeRun[2];
            AcceptanceWord[] words = {accepted0, accepted1};
            long start = System.nanoTime();
            NativeRun traced = null;
            Path written = null; // the trace file the traced run's report names
            for (int i = 0; i < runs; i++) {
                int k = i % 2;
                int p = 1 - k;
                boolean tracing = traceDir != null && i == runs - 1;
                CallConfig config = tracing
                        ? CallConfig.builder().enableTrace(true).outputPrefix(traceDir).build()
                        : CallConfig.DEFAULT;
                if (tracing && live[p] != null) {
                    // a traced run overlaps no other
                    written = traceOf(finish(chip, live[p], as[p], bs[p], fs[p], out), written);
                    live[p] = null;
                }
                as[k] = ramp(N, i);
                bs[k] = ramp(N, 7 * i + 3);
                fs[k] = new float[N];
                int slot = pipelined ? k : 0;
                words[slot].reset(); // its previous run was finalized
                boolean overlapped = live[p] != null;
                long t0 = System.nanoTime();
                live[k] = chip.prepare(CHAIN, args(as[k], bs[k], fs[k]), config,
                        PipelineSlotLease.of(slot, 1), i + 1, i + 1, words[slot]);
                if (tracing) {
                    traced = live[k];
                }
                long prepared = System.nanoTime();
                if (live[p] != null) {
                    written = traceOf(finish(chip, live[p], as[p], bs[p], fs[p], out), written);
                    live[p] = null;
                }
                chip.launch(live[k]);
                if (!words[slot].isAccepted()) {
                    throw new IllegalStateException("run " + (i + 1) + " launched but its acceptance word was not set");
                }
                out.printf(Locale.ROOT, "run %d: prepared in %.1f ms%s, launched, launch confirmed%n", i + 1,
                        (prepared - t0) / 1e6, overlapped ? " while run " + i + " executed" : "");
                if (!pipelined) {
                    written = traceOf(finish(chip, live[k], as[k], bs[k], fs[k], out), written);
                    live[k] = null;
                }
            }
            int last = (runs - 1) % 2;
            if (live[last] != null) {
                written = traceOf(finish(chip, live[last], as[last], bs[last], fs[last], out), written);
            }
            double seconds = (System.nanoTime() - start) / 1e9;
            out.printf(Locale.ROOT, "%d run%s in %.3f s; device memory the chip keeps for later runs: %.1f MiB "
                            + "(%.1f MiB before the first run)%n", runs, runs == 1 ? "" : "s", seconds,
                    chip.committedDeviceMemory() / 1048576.0, baseline / 1048576.0);
            if (traced != null) {
                Files.move(written, trace, StandardCopyOption.REPLACE_EXISTING);
                out.printf(Locale.ROOT, "run %d's trace: %s (open it in ui.perfetto.dev or chrome://tracing)%n",
                        traced.runId(), trace);
            }
        }
    }

    /** The file a finished run's report names (only the traced run writes one), else {@code known}. */
    private static Path traceOf(RunReport finished, Path known) {
        return finished.outputFiles().isEmpty() ? known : finished.outputFiles().get(0);
    }

    private static RunReport finish(ChipWorker chip, NativeRun run, float[] a, float[] b, float[] f,
                                    PrintWriter out) {
        while (!chip.poll(run)) {
            chip.await(run); // poll never blocks; await parks until the run ended
        }
        RunReport report = chip.finalizeRun(run);
        int wrong = 0;
        int first = -1;
        for (int i = 0; i < a.length; i++) {
            float s = a[i] + b[i];
            if (Float.floatToRawIntBits(f[i]) != Float.floatToRawIntBits((s + 1f) * (s + 2f) + s)) {
                if (wrong++ == 0) {
                    first = i;
                }
            }
        }
        if (wrong == 0) {
            out.printf(Locale.ROOT, "run %d: done, all %,d elements of f equal plain Java (f[1] = %.1f)%n",
                    run.runId(), a.length, f[1]);
            return report;
        }
        float s = a[first] + b[first];
        String what = String.format(Locale.ROOT, "run %d: %,d of %,d elements of f differ from plain Java "
                        + "(first f[%d] = %s, plain Java %s)", run.runId(), wrong, a.length, first, f[first],
                (s + 1f) * (s + 2f) + s);
        out.println(what);
        throw new WrongResult(what);
    }

    /** The demo's callable over {@code n} floats (public: the benchmark suite's P10 measures exactly this one). */
    public static ChipCallable vectorChain(int n) {
        long bytes = 4L * n;
        return ChipCallable.builder()
                .signature(IN, IN, OUT, OUT, OUT, OUT, OUT)
                .child(0, Kernel.vadd())
                .child(1, Kernel.vadds())
                .child(2, Kernel.vmul())
                .program(Program.builder()
                        .submit(0, Param.tensor(0, IN, 0, bytes), Param.tensor(1, IN, 0, bytes),
                                Param.tensor(3, OUT, 0, bytes))                                   // s = a + b
                        .submit(1, Param.tensor(3, IN, 0, bytes), Param.tensor(4, OUT, 0, bytes),
                                Param.scalarF32(1f))                                              // p = s + 1
                        .submit(1, Param.tensor(3, IN, 0, bytes), Param.tensor(5, OUT, 0, bytes),
                                Param.scalarF32(2f))                                              // q = s + 2
                        .submit(2, Param.tensor(4, IN, 0, bytes), Param.tensor(5, IN, 0, bytes),
                                Param.tensor(6, OUT, 0, bytes))                                   // r = p * q
                        .submit(0, Param.tensor(6, IN, 0, bytes), Param.tensor(3, IN, 0, bytes),
                                Param.tensor(2, OUT, 0, bytes))                                   // f = r + s
                        .build())
                .build();
    }

    private static TaskArgs args(float[] a, float[] b, float[] f) {
        int n = a.length;
        return TaskArgs.of(Tensor.of(a), Tensor.of(b), Tensor.of(f), Tensor.of(new float[n]),
                Tensor.of(new float[n]), Tensor.of(new float[n]), Tensor.of(new float[n]));
    }

    private static float[] ramp(int n, int seed) {
        float[] x = new float[n];
        for (int i = 0; i < n; i++) {
            x[i] = (i % 1000) * 0.25f + seed;
        }
        return x;
    }
}

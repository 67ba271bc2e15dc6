package org.ptorun.bench;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import org.ptorun.ChipWorker;
import org.ptorun.HostRuntime;
import org.ptorun.Variant;

/**
 * P6, a soak rather than a JMH benchmark: {@code runs} trivial runs (one {@code noop}
 * task) through one {@link ChipWorker}, after a warm-up of {@code runs / 10} runs and at
 * least {@value #WARMUP_SECONDS} s — the JIT compilers keep working (and allocating
 * arena chunks, hundreds of KiB, which Native Memory Tracking shows) for seconds after
 * the first 100 000 runs.
 * <ul>
 *   <li>resident memory: {@code VmRSS} of /proc/self/status after the warm-up, then
 *       every 1/20 of the runs; reports the final and the largest growth, and the
 *       growth over the second half of the runs (a leak grows there too, a warm-up
 *       step does not);</li>
 *   <li>committed device memory: read after every finalize and compared with the value
 *       after the first one (arenas are committed by the first run and kept); reports
 *       how many reads differed.</li>
 * </ul>
 * Run it in a JVM whose heap cannot grow ({@code -Xms = -Xmx}, {@code -XX:+AlwaysPreTouch}),
 * so resident-memory growth means native memory (BenchSuite does). Prints one line
 * {@code P6 key=value ...} that BenchSuite reads.
 *
 * <pre>java ... org.ptorun.bench.TrivialRunSoak [runs] [variant]</pre>
 */
public final class TrivialRunSoak {

    private static final int SAMPLES = 20;
    private static final long WARMUP_SECONDS = 15;

    private TrivialRunSoak() {
    }

    public static void main(String[] args) {
        long runs = args.length > 0 ? Long.parseLong(args[0]) : 1_000_000L;
        Variant variant = args.length > 1 ? Variant.parse(args[1]) : Variant.DEFAULT;
        if (runs < SAMPLES) {
            throw new IllegalArgumentException("the soak needs at least " + SAMPLES + " runs, got " + runs);
        }
        try (ChipWorker chip = ChipWorker.open(HostRuntime.load(variant), 0)) {
            TrivialRun run = new TrivialRun(chip);
            run.cycle();
            long committedBaseline = chip.committedDeviceMemory();
            long committedDeviations = 0;
            long committedWorst = committedBaseline;
            long warmupEnd = System.nanoTime() + WARMUP_SECONDS * 1_000_000_000L;
            long warmup = 1;
            for (; warmup < runs / 10 || System.nanoTime() < warmupEnd; warmup++) {
                run.cycle();
                long committed = chip.committedDeviceMemory();
                if (committed != committedBaseline) {
                    committedDeviations++;
                    committedWorst = Math.max(committedWorst, committed);
                }
            }
            System.gc();
            long rssBaseline = residentKiB();
            long rssMaxGrowth = 0;
            long rssHalf = rssBaseline;
            long t0 = System.nanoTime();
            long perSample = runs / SAMPLES;
            for (int s = 0; s < SAMPLES; s++) {
                for (long i = 0; i < perSample; i++) {
                    run.cycle();
                    long committed = chip.committedDeviceMemory();
                    if (committed != committedBaseline) {
                        committedDeviations++;
                        committedWorst = Math.max(committedWorst, committed);
                    }
                }
                long rss = residentKiB();
                rssMaxGrowth = Math.max(rssMaxGrowth, rss - rssBaseline);
                if (s == SAMPLES / 2 - 1) {
                    rssHalf = rss;
                }
            }
            double seconds = (System.nanoTime() - t0) / 1e9;
            long rssEnd = residentKiB();
            System.out.printf(Locale.ROOT, "P6 variant=%s runs=%d warmup=%d seconds=%.1f rssBaselineKiB=%d"
                            + " rssGrowthKiB=%d rssMaxGrowthKiB=%d rssSecondHalfGrowthKiB=%d committedBaseline=%d"
                            + " committedDeviations=%d committedWorst=%d%n", variant, perSample * SAMPLES, warmup,
                    seconds, rssBaseline, rssEnd - rssBaseline, rssMaxGrowth, rssEnd - rssHalf, committedBaseline,
                    committedDeviations, committedWorst);
        }
    }

    /** VmRSS of this process, KiB. */
    static long residentKiB() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (line.startsWith("VmRSS:")) {
                    return Long.parseLong(line.substring(6).trim().split("\\s+")[0]);
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        throw new IllegalStateException("no VmRSS in /proc/self/status");
    }
}

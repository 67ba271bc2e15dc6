package org.ptorun.bench;

import com.sun.jna.Native;
import com.sun.jna.NativeLibrary;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.lang.management.ManagementFactory;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.management.JMException;
import javax.management.ObjectName;
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
 *   <li>resident memory: {@code VmRSS} of /proc/self/status (after {@code malloc_trim},
 *       see {@link #residentKiB()}) after the warm-up, then
 *       every 1/20 of the runs; reports the final and the largest growth, and the
 *       growth over the second half of the runs (a leak grows there too, a warm-up
 *       step does not);</li>
 *   <li>committed device memory: read after every finalize and compared with the value
 *       after the first one (arenas are committed by the first run and kept); reports
 *       how many reads differed.</li>
 * </ul>
 * Run it in a JVM whose heap cannot grow ({@code -Xms = -Xmx}, {@code -XX:+AlwaysPreTouch}),
 * so resident-memory growth means native memory, and with
 * {@code -XX:NativeMemoryTracking=summary} (BenchSuite does both): then the JVM's own
 * committed memory (JIT arenas, code, threads…) is read at the same moments, so a
 * growth can be split into the JVM's and everything else's — the libraries' mallocs
 * among it. Prints a line per sample and one result line {@code P6 variant=... key=value ...}
 * that BenchSuite reads.
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
            jvmCommittedKiB(); // starts the platform MBean server (classes, threads) before any baseline
            memoryLine();
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
            long rssBaseline = residentKiB();
            long jvmBaseline = jvmCommittedKiB();
            System.out.printf(Locale.ROOT, "P6 after the warm-up: %s%n", memoryLine());
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
                System.out.printf(Locale.ROOT, "P6 sample %d runs: %sJVM committed %d kB%n", (s + 1) * perSample,
                        memoryLine(), jvmCommittedKiB());
                rssMaxGrowth = Math.max(rssMaxGrowth, rss - rssBaseline);
                if (s == SAMPLES / 2 - 1) {
                    rssHalf = rss;
                }
            }
            double seconds = (System.nanoTime() - t0) / 1e9;
            long rssEnd = residentKiB();
            long jvmGrowth = jvmBaseline < 0 ? 0 : jvmCommittedKiB() - jvmBaseline;
            System.out.printf(Locale.ROOT, "P6 variant=%s runs=%d warmup=%d seconds=%.1f rssBaselineKiB=%d"
                            + " rssGrowthKiB=%d rssMaxGrowthKiB=%d rssSecondHalfGrowthKiB=%d jvmGrowthKiB=%s"
                            + " committedBaseline=%d committedDeviations=%d committedWorst=%d%n", variant,
                    perSample * SAMPLES, warmup, seconds, rssBaseline, rssEnd - rssBaseline, rssMaxGrowth,
                    rssEnd - rssHalf, jvmBaseline < 0 ? "unknown" : Long.toString(jvmGrowth), committedBaseline,
                    committedDeviations, committedWorst);
        }
    }

    private static final Pattern NMT_TOTAL = Pattern.compile("Total: reserved=\\d+KB, committed=(\\d+)KB");

    /**
     * The JVM's own committed memory by Native Memory Tracking (the diagnostic command
     * {@code VM.native_memory summary}), KiB; -1 when the JVM runs without it.
     */
    static long jvmCommittedKiB() {
        try {
            Object text = ManagementFactory.getPlatformMBeanServer().invoke(
                    new ObjectName("com.sun.management:type=DiagnosticCommand"), "vmNativeMemory",
                    new Object[] {new String[] {"summary"}}, new String[] {String[].class.getName()});
            Matcher m = NMT_TOTAL.matcher(String.valueOf(text));
            return m.find() ? Long.parseLong(m.group(1)) : -1;
        } catch (JMException e) {
            return -1;
        }
    }

    /** VmRSS and its parts (anonymous, file-backed), KiB, of /proc/self/status, after malloc_trim. */
    private static String memoryLine() {
        LibC.malloc_trim(0);
        try {
            StringBuilder sb = new StringBuilder();
            for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (line.startsWith("VmRSS:") || line.startsWith("RssAnon:") || line.startsWith("RssFile:")) {
                    sb.append(line.replaceAll("\\s+", " ")).append("; ");
                }
            }
            return sb.toString();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** glibc's {@code malloc_trim}, bound by JNA direct mapping. */
    private static final class LibC {
        static {
            Native.register(LibC.class, NativeLibrary.getInstance("c"));
        }

        static native int malloc_trim(long pad);
    }

    /**
     * VmRSS of this process, KiB, after {@code malloc_trim(0)}: glibc keeps memory freed
     * in its arenas resident (the JIT compilers' arenas freed after a compilation, for
     * one), which would read as a growth that never goes away; trimmed, resident memory
     * follows what is allocated.
     */
    static long residentKiB() {
        LibC.malloc_trim(0);
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

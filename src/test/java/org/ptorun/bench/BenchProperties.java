package org.ptorun.bench;

import java.io.IOException;
import java.io.Writer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Locale;
import java.util.Properties;

/**
 * The figures a benchmark times itself (in one fork, interleaved) and hands to the suite:
 * a properties file in {@code ptorun.benchDir}, also printed.
 */
final class BenchProperties {

    private BenchProperties() {
    }

    /** The {@code percentile} of the first {@code count} samples (nanoseconds), in microseconds, formatted. */
    static String micros(long[] nanos, int count, double percentile) {
        return String.format(Locale.ROOT, "%.3f", percentileNanos(nanos, count, percentile) / 1e3);
    }

    static long percentileNanos(long[] nanos, int count, double percentile) {
        long[] sorted = Arrays.copyOf(nanos, count);
        Arrays.sort(sorted);
        int index = (int) Math.min(count - 1, Math.floor(percentile / 100 * count));
        return sorted[index];
    }

    /** The mean of the first {@code count} samples, in microseconds, formatted. */
    static String meanMicros(long[] nanos, int count) {
        long sum = 0;
        for (int i = 0; i < count; i++) {
            sum += nanos[i];
        }
        return String.format(Locale.ROOT, "%.3f", sum / 1e3 / count);
    }

    static void write(String file, String comment, Properties p) throws IOException {
        System.out.println(file + ": " + p);
        String dir = System.getProperty("ptorun.benchDir");
        if (dir != null) {
            try (Writer out = Files.newBufferedWriter(Path.of(dir, file))) {
                p.store(out, comment);
            }
        }
    }
}

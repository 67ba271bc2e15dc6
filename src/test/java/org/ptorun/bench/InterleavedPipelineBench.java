package org.ptorun.bench;

import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import org.ptorun.ChipWorker;
import org.ptorun.DeviceBuffer;
import org.ptorun.TaskArgs;
import org.ptorun.Variant;

/**
 * P3 on trb: runs per second at depth 2 vs depth 1 on {@link PipelinedOrchestrationBench}'s
 * trb workload and loops ({@link PipelinedOrchestrationBench.Pipeline}), both depths in one
 * JVM (the suite starts it as a child: {@code <variant>}). This machine's speed drifts by
 * 30–50 % from minute to minute, so a ratio of two JMH forks minutes apart measures the
 * drift; here both depths share each round instead. Round k makes {@value #RUNS} runs at
 * depth 1 and {@value #RUNS} at depth 2, depth 1 first on even rounds and depth 2 first on
 * odd ones (so that neither always runs after the other); its ratio is depth 2's runs/s
 * over depth 1's. After {@value #WARMUP_ROUNDS} rounds discarded, {@value #ROUNDS} rounds
 * are measured; the depth-1 batches also time each run's two halves (prepare, launch to
 * complete), as the JMH bench does. The line the suite reads is {@link Result#line()}:
 * the median of the per-round ratios (P3) and its quartiles, the medians of each depth's
 * runs/s and the mean halves.
 */
public final class InterleavedPipelineBench {

    static final int WARMUP_ROUNDS = 10;
    static final int ROUNDS = 30;
    static final int RUNS = PipelinedOrchestrationBench.BATCH;

    private static final String PREFIX = "P3 interleaved";

    private InterleavedPipelineBench() {
    }

    /**
     * The figures of {@code rounds} measured rounds of {@code runs} runs per depth: the
     * per-round ratios' median and quartiles, each depth's median runs/s, and depth 1's
     * mean prepare and launch to complete.
     */
    record Result(String variant, int rounds, int runs, double ratio, double ratioP25, double ratioP75,
                  double depth1RunsPerSecond, double depth2RunsPerSecond, double prepareMs, double executionMs) {

        /** One line, {@code P3 interleaved variant=… rounds=… runs=… ratio=… …}. */
        String line() {
            return String.format(Locale.ROOT, "%s variant=%s rounds=%d runs=%d ratio=%.4f ratioP25=%.4f"
                            + " ratioP75=%.4f depth1=%.2f depth2=%.2f prepareMs=%.4f executionMs=%.4f", PREFIX,
                    variant, rounds, runs, ratio, ratioP25, ratioP75, depth1RunsPerSecond, depth2RunsPerSecond,
                    prepareMs, executionMs);
        }

        /** The result in a child's output ({@link #line()}); empty when there is none. */
        static Optional<Result> parse(List<String> lines) {
            for (String line : lines) {
                if (!line.startsWith(PREFIX + " ")) {
                    continue;
                }
                Map<String, String> m = new HashMap<>();
                for (String kv : line.substring(PREFIX.length()).trim().split(" ")) {
                    int eq = kv.indexOf('=');
                    m.put(kv.substring(0, eq), kv.substring(eq + 1));
                }
                return Optional.of(new Result(m.get("variant"), Integer.parseInt(m.get("rounds")),
                        Integer.parseInt(m.get("runs")), number(m, "ratio"), number(m, "ratioP25"),
                        number(m, "ratioP75"), number(m, "depth1"), number(m, "depth2"), number(m, "prepareMs"),
                        number(m, "executionMs")));
            }
            return Optional.empty();
        }

        private static double number(Map<String, String> m, String key) {
            String value = m.get(key);
            if (value == null) {
                throw new IllegalArgumentException("no " + key + " in the P3 line");
            }
            return Double.parseDouble(value);
        }
    }

    public static void main(String[] args) {
        Result result = measure(Variant.parse(args[0]), WARMUP_ROUNDS, ROUNDS, RUNS, true);
        System.out.println(result.line());
    }

    /** {@code warmupRounds} rounds discarded, then {@code rounds} measured; {@code print}: each round's figures too. */
    static Result measure(Variant variant, int warmupRounds, int rounds, int runs, boolean print) {
        double[] depth1 = new double[rounds];
        double[] depth2 = new double[rounds];
        double[] ratios = new double[rounds];
        DeviceBuffer[] buffers = new DeviceBuffer[2];
        PipelinedOrchestrationBench.Pipeline pipeline;
        try (ChipWorker chip = PipelinedOrchestrationBench.open(variant, 2)) {
            TaskArgs[] args = PipelinedOrchestrationBench.registerTrb(chip, buffers);
            pipeline = new PipelinedOrchestrationBench.Pipeline(chip, args);
            for (int k = -warmupRounds; k < rounds; k++) {
                boolean measured = k >= 0;
                long nanos1;
                long nanos2;
                if ((k & 1) == 0) {
                    nanos1 = depth1Batch(pipeline, runs, measured);
                    nanos2 = depth2Batch(pipeline, runs);
                } else {
                    nanos2 = depth2Batch(pipeline, runs);
                    nanos1 = depth1Batch(pipeline, runs, measured);
                }
                if (!measured) {
                    continue;
                }
                depth1[k] = runs * 1e9 / nanos1;
                depth2[k] = runs * 1e9 / nanos2;
                ratios[k] = depth2[k] / depth1[k];
                if (print) {
                    System.out.printf(Locale.ROOT, "round %2d (depth %d first): depth 1 %7.1f runs/s, depth 2 %7.1f"
                            + " runs/s, ratio %.3f%n", k, (k & 1) == 0 ? 1 : 2, depth1[k], depth2[k], ratios[k]);
                }
            }
            for (DeviceBuffer b : buffers) {
                b.close();
            }
        }
        return new Result(variant.toString(), rounds, runs, percentile(ratios, 50), percentile(ratios, 25),
                percentile(ratios, 75), percentile(depth1, 50), percentile(depth2, 50), pipeline.prepareMs(),
                pipeline.executionMs());
    }

    private static long depth1Batch(PipelinedOrchestrationBench.Pipeline pipeline, int runs, boolean timed) {
        long t0 = System.nanoTime();
        pipeline.depth1(runs, timed);
        return System.nanoTime() - t0;
    }

    private static long depth2Batch(PipelinedOrchestrationBench.Pipeline pipeline, int runs) {
        long t0 = System.nanoTime();
        pipeline.depth2(runs);
        return System.nanoTime() - t0;
    }

    /** The {@code p}th percentile, interpolated between the two nearest samples (the median of an even count is their mean). */
    static double percentile(double[] samples, double p) {
        double[] s = samples.clone();
        Arrays.sort(s);
        double position = p / 100 * (s.length - 1);
        int below = (int) Math.floor(position);
        int above = Math.min(s.length - 1, below + 1);
        return s[below] + (position - below) * (s[above] - s[below]);
    }
}

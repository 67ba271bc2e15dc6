package org.ptorun.bench;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.Reader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.results.format.ResultFormatType;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.RunnerException;
import org.openjdk.jmh.runner.options.ChainedOptionsBuilder;
import org.openjdk.jmh.runner.options.OptionsBuilder;

/**
 * The benchmark suite (docs/performance.md) in one command ({@code mvn -q -Pbench
 * verify}): the JMH benchmarks of this package (P1–P5, P9, P12), the P6 soak, the P7 idle
 * check ({@code ptorun idle}), P10's fresh JVMs ({@link FirstRun}) and P3 on trb (both depths
 * interleaved, {@link InterleavedPipelineBench}) in JVMs of their own, then one table of every figure
 * against its target, printed and written to {@code target/bench/report.md} (JMH's
 * raw results: {@code target/bench/jmh-result.json}). Each figure is a ratio of two
 * measurements made in this run, because the machines are noisy; the suite reports,
 * it does not assert. Arguments select parts ({@code P1 … P16}; P8 is derived from
 * P1's measurements; P15, a chip in a chip host process vs in the JVM, runs
 * {@link ProcessIsolationBench} in a child JVM per variant; P16, allreduce across hosts vs raw
 * TCP, makes network namespaces as hosts and needs root); none runs everything.
 */
public final class BenchSuite {

    private static final String PACKAGE = BenchSuite.class.getPackageName() + ".";
    private static final List<String> PARTS = List.of("P1", "P2", "P3", "P4", "P5", "P6", "P7", "P8", "P9", "P10",
            "P11", "P12", "P13", "P14", "P15", "P16");
    private static final long SOAK_RUNS = Long.getLong("bench.soakRuns", 1_000_000L);
    /** Child JVMs per P10 measurement; the figure is their median. */
    private static final int FRESH_JVMS = Integer.getInteger("bench.freshJvms", 7);
    private static final double IDLE_TARGET_PERCENT = 2.0;
    private static final Pattern IDLE_LINE =
            Pattern.compile("^(\\S+)\\s+idle ChipWorker: ([0-9.]+) ms CPU in ([0-9]+) ms.*");

    private final Set<String> parts;
    private final Path dir;
    private final List<Row> rows = new ArrayList<>();
    private final Map<String, RunResult> jmh = new HashMap<>();
    /** P3 on trb, from {@link InterleavedPipelineBench}'s child JVM; empty when not measured. */
    private Optional<InterleavedPipelineBench.Result> p3Interleaved = Optional.empty();

    /** One line of the report. */
    record Row(String id, String what, String measured, String figure, String target, String met) {
    }

    private BenchSuite(Set<String> parts, Path dir) {
        this.parts = parts;
        this.dir = dir;
    }

    public static void main(String[] args) throws Exception {
        Set<String> parts = new LinkedHashSet<>();
        for (String arg : args) {
            for (String part : arg.trim().split("[\\s,]+")) {
                if (part.isEmpty()) {
                    continue;
                }
                String p = part.toUpperCase(Locale.ROOT);
                if (!PARTS.contains(p)) {
                    throw new IllegalArgumentException("unknown part " + part + "; parts are " + PARTS);
                }
                parts.add(p);
            }
        }
        if (parts.isEmpty()) {
            parts.addAll(PARTS);
        }
        Path dir = Path.of(System.getProperty("ptorun.benchDir", "target/bench"));
        Files.createDirectories(dir);
        new BenchSuite(parts, dir).run();
    }

    private void run() throws RunnerException, IOException, InterruptedException {
        String started = now();
        String loadBefore = loadAverage();
        long t0 = System.nanoTime();
        runJmh();
        if (parts.contains("P3")) {
            interleavedPipeline();
        }
        if (parts.contains("P6")) {
            soak();
        }
        if (parts.contains("P7")) {
            idle();
        }
        if (parts.contains("P10")) {
            firstRuns();
        }
        if (parts.contains("P11")) {
            collectives();
        }
        if (parts.contains("P13")) {
            recordedGraphs();
        }
        if (parts.contains("P14")) {
            decodeSubgraphs();
        }
        if (parts.contains("P15")) {
            processIsolation();
        }
        if (parts.contains("P16")) {
            acrossHosts();
        }
        report();
        String header = String.format(Locale.ROOT, "ptorun benchmark suite, %s; %d CPUs; load average %s before, %s"
                        + " after; %.0f s", started, Runtime.getRuntime().availableProcessors(), loadBefore,
                loadAverage(), (System.nanoTime() - t0) / 1e9);
        String table = table(header);
        System.out.println();
        System.out.print(table);
        Files.writeString(dir.resolve("report.md"), table, StandardCharsets.UTF_8);
        System.out.println("(written to " + dir.resolve("report.md") + ")");
    }

    // ---- JMH: P1-P5 -------------------------------------------------------------------------

    private void runJmh() throws RunnerException, IOException {
        List<String> includes = new ArrayList<>();
        if (parts.contains("P1") || parts.contains("P2") || parts.contains("P8")) {
            includes.add(TrivialRunBench.class.getName());
        }
        if (parts.contains("P3")) {
            includes.add(PipelinedOrchestrationBench.class.getName());
        }
        if (parts.contains("P4")) {
            includes.add(ManyTasksBench.class.getName());
        }
        if (parts.contains("P5")) {
            includes.add(VaddBandwidthBench.class.getName());
        }
        if (parts.contains("P9")) {
            includes.add(WorkerThroughputBench.class.getName());
        }
        if (parts.contains("P12")) {
            includes.add(ArrayStagingBench.class.getName());
        }
        if (includes.isEmpty()) {
            return;
        }
        // figures the benchmarks write themselves: never report a previous run's
        for (String file : List.of("trivial-a2a3_sim_hbg.properties", "trivial-a2a3_sim_trb.properties",
                PipelinedOrchestrationBench.splitFile("a2a3/sim/hbg"),
                "p9-a2a3_sim_hbg.properties", "p9-a2a3_sim_trb.properties",
                "p12.properties")) {
            Files.deleteIfExists(dir.resolve(file));
        }
        ChainedOptionsBuilder options = new OptionsBuilder()
                .jvmArgs(childJvmArgs().toArray(String[]::new))
                .shouldFailOnError(true)
                .resultFormat(ResultFormatType.JSON)
                .result(dir.resolve("jmh-result.json").toString());
        for (String include : includes) {
            options.include("^" + Pattern.quote(include) + "\\.");
        }
        Collection<RunResult> results = new Runner(options.build()).run();
        for (RunResult r : results) {
            String method = r.getParams().getBenchmark().substring(PACKAGE.length());
            String key = method;
            for (String p : r.getParams().getParamsKeys()) {
                key += "|" + p + "=" + r.getParams().getParam(p);
            }
            jmh.put(key, r);
        }
    }

    /** The result of {@code Class.method} with those parameters ({@code "variant=a2a3/sim/hbg"}, ...). */
    private Optional<RunResult> result(String method, String... params) {
        String key = method;
        for (String p : params) {
            key += "|" + p;
        }
        return Optional.ofNullable(jmh.get(key));
    }

    private Optional<Double> p50(String method, String... params) {
        return result(method, params).map(r -> r.getPrimaryResult().getStatistics().getPercentile(50));
    }

    private Optional<Double> score(String method, String... params) {
        return result(method, params).map(r -> r.getPrimaryResult().getScore());
    }

    // ---- P6, P7: JVMs of their own ------------------------------------------------------------

    private void soak() throws IOException, InterruptedException {
        for (String variant : List.of("a2a3/sim/hbg", "a2a3/sim/trb")) {
            List<String> command = javaCommand(List.of("-Xms256m", "-Xmx256m", "-XX:+AlwaysPreTouch",
                            "-XX:NativeMemoryTracking=summary"),
                    TrivialRunSoak.class.getName(), Long.toString(SOAK_RUNS), variant);
            Map<String, String> p6 = new HashMap<>();
            for (String line : runChild("P6 soak on " + variant, command)) {
                if (line.startsWith("P6 variant=")) {
                    for (String kv : line.substring(3).trim().split(" ")) {
                        int eq = kv.indexOf('=');
                        p6.put(kv.substring(0, eq), kv.substring(eq + 1));
                    }
                }
            }
            if (p6.isEmpty()) {
                rows.add(new Row("P6", variant + ": " + SOAK_RUNS + " trivial runs", "no result (see above)", "-",
                        "RSS < 1 MiB; committed = baseline", "not measured"));
                continue;
            }
            long growth = Long.parseLong(p6.get("rssGrowthKiB"));
            long maxGrowth = Long.parseLong(p6.get("rssMaxGrowthKiB"));
            long deviations = Long.parseLong(p6.get("committedDeviations"));
            String jvm = p6.get("jvmGrowthKiB");
            String split = "unknown".equals(jvm) ? "" : String.format(Locale.ROOT,
                    " = JVM (NMT) %+d + the rest %+d", Long.parseLong(jvm), growth - Long.parseLong(jvm));
            rows.add(new Row("P6", variant + ": " + p6.get("runs") + " trivial runs after " + p6.get("warmup")
                    + " warm-up (" + p6.get("seconds") + " s)",
                    String.format(Locale.ROOT, "RSS %+d KiB at the end%s (largest on the way %+d, over the second"
                                    + " half %+d) over %d KiB; committed device memory %s B, %d finalizes off it",
                            growth, split, maxGrowth, Long.parseLong(p6.get("rssSecondHalfGrowthKiB")),
                            Long.parseLong(p6.get("rssBaselineKiB")), p6.get("committedBaseline"), deviations),
                    String.format(Locale.ROOT, "%+d KiB, %d", growth, deviations),
                    "< 1024 KiB; 0", met(growth < 1024 && deviations == 0)));
        }
    }

    private void idle() throws IOException, InterruptedException {
        List<String> command = javaCommand(List.of(), "org.ptorun.cli.Main", "idle");
        for (String line : runChild("P7: ptorun idle", command)) {
            Matcher m = IDLE_LINE.matcher(line);
            if (m.matches()) {
                double cpuMs = Double.parseDouble(m.group(2));
                double windowMs = Double.parseDouble(m.group(3));
                double percent = 100 * cpuMs / windowMs;
                rows.add(new Row("P7", m.group(1) + ": idle ChipWorker, whole JVM",
                        String.format(Locale.ROOT, "%.1f ms CPU in %.0f ms", cpuMs, windowMs),
                        String.format(Locale.ROOT, "%.2f %%", percent),
                        String.format(Locale.ROOT, "~0 %% (< %.0f %%)", IDLE_TARGET_PERCENT),
                        met(percent < IDLE_TARGET_PERCENT)));
            }
        }
    }

    /**
     * P10: {@value #FRESH_JVMS} child JVMs per measurement ({@link FirstRun}), each its own
     * fresh JVM; the figures are the medians of each key over the children.
     */
    private void firstRuns() throws IOException, InterruptedException {
        for (String variant : List.of("a2a3/sim/hbg", "a2a3/sim/trb")) {
            Map<String, Long> m = medianOfChildren("trivial", variant);
            if (m.isEmpty()) {
                rows.add(new Row("P10", variant + ": fresh JVM, open to the first finalized trivial run",
                        "no result", "-", "<= 50 ms", "not measured"));
                continue;
            }
            double total = m.get("total") / 1e3;
            rows.add(new Row("P10", variant + ": fresh JVM, ChipWorker.open to the first finalized trivial run, median"
                            + " of " + FRESH_JVMS + " JVMs",
                    String.format(Locale.ROOT, "open %.1f + register %.1f + prepare %.1f + launch..complete %.1f +"
                                    + " finalize %.1f ms (HostRuntime.load before it: %.1f ms)",
                            m.get("open") / 1e3, m.get("register") / 1e3, m.get("prepare") / 1e3,
                            m.get("run") / 1e3, m.get("finalize") / 1e3, m.get("load") / 1e3),
                    String.format(Locale.ROOT, "%.1f ms", total), "<= 50 ms", met(total <= 50)));
        }
        Map<String, Long> demo = medianOfChildren("demo", "a2a3/sim/hbg");
        if (demo.isEmpty()) {
            rows.add(new Row("P10", "a2a3/sim/hbg: the README demo's first prepare", "no result", "-",
                    "<= 20 ms + the data copy", "not measured"));
            return;
        }
        double first = demo.get("prepare1") / 1e3;
        double copy = demo.get("copy") / 1e3;
        rows.add(new Row("P10", "a2a3/sim/hbg: fresh JVM, the README demo's first prepare (7 x 4 MiB arrays, 2 read),"
                        + " median of " + FRESH_JVMS + " JVMs",
                String.format(Locale.ROOT, "first %.1f ms, second (other slot) %.1f ms, third (warm) %.1f ms;"
                        + " memcpy of the 8 MiB read into fresh memory %.1f ms", first, demo.get("prepare2") / 1e3,
                        demo.get("prepare3") / 1e3, copy),
                String.format(Locale.ROOT, "%.1f ms = 20 ms + %.1f ms", first, first - 20),
                String.format(Locale.ROOT, "<= 20 ms + %.1f ms", copy), met(first <= 20 + copy)));
    }

    /** P11: {@link CollectiveBandwidth} in a child JVM per sim runtime. */
    private void collectives() throws IOException, InterruptedException {
        for (String variant : List.of("a2a3/sim/hbg", "a2a3/sim/trb")) {
            List<String> command = javaCommand(List.of(), CollectiveBandwidth.class.getName(), variant);
            Map<String, Long> m = keyValues(runChild("P11 on " + variant, command), "^allreduce=[0-9]+ memcpy=[0-9]+$");
            // Collective bandwidth is reported the way collective libraries report it (NCCL's
            // "bus bandwidth"): the vector's bytes over the time, times 2(n-1)/n, the share of
            // the vector each rank must move in and out with any algorithm; so it compares with
            // a copy's bandwidth. docs/performance.md, P11.
            int n = CollectiveBandwidth.RANKS;
            double busFactor = 2.0 * (n - 1) / n;
            String what = variant + ": allreduce_sum of " + CollectiveBandwidth.MIB + " MiB over " + n
                    + " ranks, bus bandwidth (x " + busFactor + ") vs one memcpy of the same bytes, median of "
                    + CollectiveBandwidth.ROUNDS;
            rows.add(ratioRow("P11", what,
                    Optional.ofNullable(m.get("memcpy")).map(c -> c * busFactor),
                    Optional.ofNullable(m.get("allreduce")).map(Long::doubleValue),
                    "memcpy x 2(n-1)/n = %.0f ns / allreduce %.0f ns"
                            + Optional.ofNullable(m.get("memcpy")).flatMap(c -> Optional.ofNullable(m.get("allreduce"))
                                    .map(a -> String.format(Locale.ROOT, " (algorithm bandwidth %.2f x)",
                                            (double) c / a))).orElse(""),
                    0.5, false));
        }
    }

    /** The {@code key=value ...} pairs of a child's lines matching {@code line}. */
    private static Map<String, Long> keyValues(List<String> lines, String line) {
        Map<String, Long> m = new HashMap<>();
        for (String l : lines) {
            if (l.matches(line)) {
                for (String kv : l.split(" ")) {
                    m.put(kv.substring(0, kv.indexOf('=')), Long.parseLong(kv.substring(kv.indexOf('=') + 1)));
                }
            }
        }
        return m;
    }

    /**
     * P3 on trb (docs/performance.md): both depths in alternating rounds of one child JVM
     * ({@link InterleavedPipelineBench}), because the machine's drift between two JMH forks
     * minutes apart is larger than the ratio.
     */
    private void interleavedPipeline() throws IOException, InterruptedException {
        String variant = "a2a3/sim/trb";
        List<String> command = javaCommand(List.of(), InterleavedPipelineBench.class.getName(), variant);
        p3Interleaved = InterleavedPipelineBench.Result.parse(runChild("P3 interleaved on " + variant, command));
    }

    /** P13 (docs/performance.md): the child JVM's medians of first and replayed prepares (trb: device orchestrations). */
    private void recordedGraphs() throws IOException, InterruptedException {
        for (String variant : List.of("a2a3/sim/hbg", "a2a3/onboard/hbg", "a2a3/sim/trb")) {
            List<String> command = javaCommand(List.of(), RecordedGraphPrepare.class.getName(), variant);
            Map<String, Long> m = keyValues(runChild("P13 on " + variant, command), "^first=[0-9]+ replay=[0-9]+$");
            boolean trb = variant.endsWith("/trb");
            String what = variant + (trb ? ": device orchestration time (orchestrator CPU time) of a " : ": prepare of a ")
                    + RecordedGraphPrepare.TASKS + "-task program, later runs (recorded graph replayed) vs its first"
                    + " run (built and recorded), medians";
            rows.add(ratioRow("P13", what, Optional.ofNullable(m.get("replay")).map(Long::doubleValue),
                    Optional.ofNullable(m.get("first")).map(Long::doubleValue), "replay %.0f ns / first %.0f ns",
                    0.05, true));
        }
    }

    /** P14 (docs/performance.md): the child JVM's medians of a decode run's orchestration time, task by task vs one recorded layer. */
    private void decodeSubgraphs() throws IOException, InterruptedException {
        for (String variant : List.of("a2a3/sim/hbg", "a2a3/onboard/hbg", "a2a3/sim/trb")) {
            List<String> command = javaCommand(List.of(), DecodeSubgraphPrepare.class.getName(), variant);
            List<String> lines = runChild("P14 on " + variant, command);
            String where = variant + (variant.endsWith("/trb") ? ": device" : ": host") + " orchestration time of a "
                    + DecodeSubgraphPrepare.LAYERS + "-layer decode, every task submitted vs one layer recorded and"
                    + " submitted per layer (sub-graph), medians, outputs bit-identical; ";
            Map<String, Long> m = keyValues(lines, "^inline=[0-9]+ subgraph=[0-9]+$");
            Map<String, Long> program = keyValues(lines, "^programInline=[0-9]+ programSubgraph=[0-9]+$");
            rows.add(ratioRow("P14", where + "Program (its first run after registration)",
                    Optional.ofNullable(program.get("programInline")).map(Long::doubleValue),
                    Optional.ofNullable(program.get("programSubgraph")).map(Long::doubleValue),
                    "inline %.0f ns / sub-graph %.0f ns", 5.0, false));
            rows.add(ratioRow("P14", where + "orchestration library (subgraph_submit)",
                    Optional.ofNullable(m.get("inline")).map(Long::doubleValue),
                    Optional.ofNullable(m.get("subgraph")).map(Long::doubleValue), "inline %.0f ns / sub-graph %.0f ns",
                    5.0, false));
        }
    }

    /**
     * P15 (docs/performance.md): a chip in a chip host process vs in the JVM, one child JVM
     * per variant ({@link ProcessIsolationBench}), every figure the median of per-round ratios
     * with the modes' order alternating; on onboard hbg the trivial cycle only.
     */
    private void processIsolation() throws IOException, InterruptedException {
        String sim = "a2a3/sim/hbg";
        List<String> lines = runChild("P15 on " + sim,
                javaCommand(List.of(), ProcessIsolationBench.class.getName(), sim));
        rows.addAll(p15Rows(sim, lines));
        String onboard = "a2a3/onboard/hbg";
        lines = runChild("P15 on " + onboard,
                javaCommand(List.of(), ProcessIsolationBench.class.getName(), onboard, "trivial"));
        rows.addAll(p15Rows(onboard, lines));
    }

    /**
     * P16 (docs/performance.md): allreduce_sum of 64 MiB over 2 hosts × 2 ranks (network
     * namespaces, {@link org.ptorun.hosts.NetnsHosts}), bus bandwidth against the raw TCP
     * bandwidth between the two namespaces measured in the same run; and 2 hosts × 1 rank for
     * comparison. A failed measurement is a "no result" row, not the end of the suite.
     */
    private void acrossHosts() {
        String variant = "a2a3/sim/hbg";
        for (int ranksPerHost : new int[] {2, 1}) {
            System.out.println("# P16 on " + variant + ", 2 hosts x " + ranksPerHost);
            List<String> tcp = List.of();
            List<String> child = List.of();
            try {
                org.ptorun.hosts.AllreduceBenchScenario.Measurement m = org.ptorun.hosts.AllreduceBenchScenario
                        .measure(variant, 2, ranksPerHost, dir.resolve("p16-" + ranksPerHost));
                tcp = m.tcpLines();
                child = m.childLines();
            } catch (Exception e) {
                System.out.println("P16 2 hosts x " + ranksPerHost + " failed: " + e);
            }
            rows.add(p16Row(variant, 2, ranksPerHost, tcp, child));
        }
    }

    /** A P16 row of the raw TCP probe's and the bench children's lines. */
    static Row p16Row(String variant, int hosts, int ranksPerHost, List<String> tcpLines, List<String> childLines) {
        String what = String.format(Locale.ROOT, "%s: allreduce_sum of %d MiB over %d hosts x %d rank%s (network"
                        + " namespaces), bus bandwidth (x 2(n-1)/n) vs raw TCP between the hosts in the same run (one"
                        + " connection, %d MiB, median of %d before and %d after the allreduce), median of %d runs after"
                        + " %d warm-up (each run: the slowest process)", variant,
                4L * org.ptorun.hosts.AllreduceBenchScenario.FLOATS >> 20, hosts, ranksPerHost,
                ranksPerHost == 1 ? "" : "s", org.ptorun.hosts.AllreduceBenchScenario.TCP_BYTES >> 20,
                org.ptorun.hosts.AllreduceBenchScenario.TCP_TRANSFERS,
                org.ptorun.hosts.AllreduceBenchScenario.TCP_TRANSFERS, org.ptorun.hosts.AllreduceBenchScenario.RUNS,
                org.ptorun.hosts.AllreduceBenchScenario.WARMUP);
        // the bound is 2 hosts x 2 ranks'; 2 hosts x 1 rank is shown beside it for comparison
        boolean bounded = hosts == 2 && ranksPerHost == 2;
        String target = bounded ? ">= 0.5 x" : "- (comparison)";
        Optional<org.ptorun.hosts.AllreduceBenchScenario.Figures> f =
                org.ptorun.hosts.AllreduceBenchScenario.figures(tcpLines, childLines);
        if (f.isEmpty()) {
            return new Row("P16", what, "no result (see above)", "-", target, "not measured");
        }
        org.ptorun.hosts.AllreduceBenchScenario.Figures r = f.get();
        StringBuilder runs = new StringBuilder();
        for (double sec : r.runSeconds()) {
            runs.append(runs.length() == 0 ? "" : ", ").append(String.format(Locale.ROOT, "%.3f", sec));
        }
        StringBuilder transfers = new StringBuilder();
        for (double bps : r.tcpBytesPerSecond()) {
            transfers.append(transfers.length() == 0 ? "" : ", ")
                    .append(String.format(Locale.ROOT, "%.0f", bps / (1 << 20)));
        }
        double ratio = r.ratio();
        String local = r.localMedianSeconds().map(l -> String.format(Locale.ROOT, "; the same allreduce over one"
                + " host's %d ranks alone (shared memory, no proxy) %.3f s", ranksPerHost, l)).orElse("");
        StringBuilder both = new StringBuilder();
        for (double bps : r.bothWaysBytesPerSecond()) {
            both.append(both.length() == 0 ? "; raw TCP both ways at once: " : " and ")
                    .append(String.format(Locale.ROOT, "%.0f", bps / (1 << 20)));
        }
        local += both.length() == 0 ? "" : both + " MiB/s";
        return new Row("P16", what, String.format(Locale.ROOT, "bus %.0f MiB/s (%.3f s per allreduce; runs %s s) /"
                                + " raw TCP %.0f MiB/s (transfers %s MiB/s)%s", r.busBytesPerSecond() / (1 << 20),
                        r.medianSeconds(), runs, r.rawTcpBytesPerSecond() / (1 << 20), transfers, local),
                String.format(Locale.ROOT, "%.2f x", ratio), target, bounded ? met(ratio >= 0.5) : "comparison");
    }

    /** P15's rows of a {@link ProcessIsolationBench} child's output: the parts it printed. */
    static List<Row> p15Rows(String variant, List<String> lines) {
        List<Row> out = new ArrayList<>();
        Map<String, Double> trivial = ProcessIsolationBench.parse(lines, "trivial");
        Map<String, Double> vadd = ProcessIsolationBench.parse(lines, "vadd");
        Map<String, Double> worker = ProcessIsolationBench.parse(lines, "worker");
        Map<String, Double> handoffs = ProcessIsolationBench.parse(lines, "handoffs");
        String modes = ", process vs in process, interleaved rounds in one JVM (order alternating), median of the"
                + " per-round ratios";
        out.add(medianRatioRow(variant + ": trivial run, full cycle (prepare, launch, poll/await, finalize), p50 of "
                        + ProcessIsolationBench.TRIVIAL_RUNS + " per round" + modes, trivial,
                "process %.1f us / in process %.1f us", "processUs", "inUs", 2.0, true));
        if (variant.endsWith("sim/hbg")) {
            out.add(medianRatioRow(variant + ": vadd of " + (ProcessIsolationBench.VADD_FLOATS >> 20) + " Mi floats"
                            + " (64 MiB per tensor) from Java arrays in " + ProcessIsolationBench.VADD_TASKS
                            + " tasks, throughput" + modes, vadd,
                    "process %.0f MiB/s / in process %.0f MiB/s" + (vadd.isEmpty() ? "" : String.format(Locale.ROOT,
                            " (per run: process %.1f ms = prepare %.1f + finalize %.1f + the rest; in process %.1f ms"
                                    + " = prepare %.1f + finalize %.1f + the rest)", vadd.get("processMs"),
                            vadd.get("processPrepareMs"), vadd.get("processFinalizeMs"), vadd.get("inMs"),
                            vadd.get("inPrepareMs"), vadd.get("inFinalizeMs")).replace("%", "%%")),
                    "processMiBs", "inMiBs", 0.7, false));
            out.add(medianRatioRow(variant + ": trivial runs/s one at a time through a background Worker, blocks of "
                            + ProcessIsolationBench.BLOCK + modes, worker,
                    "process %.0f runs/s / in process %.0f runs/s", "processRunsPerS", "inRunsPerS", 0.5, false));
            out.add(handoffRow(variant, handoffs));
        }
        return out;
    }

    /** A P15 figure: the child's median of per-round ratios, with both modes' medians. */
    private static Row medianRatioRow(String what, Map<String, Double> m, String measuredFormat, String numerator,
                                      String denominator, double bound, boolean atMost) {
        String target = (atMost ? "<= " : ">= ") + bound + " x";
        if (!m.containsKey("ratio") || !m.containsKey(numerator) || !m.containsKey(denominator)) {
            return new Row("P15", what, "no result (see above)", "-", target, "not measured");
        }
        double ratio = m.get("ratio");
        return new Row("P15", what, String.format(Locale.ROOT, measuredFormat + ", medians of the rounds; per-round"
                        + " ratios p25 %.2f, p75 %.2f", m.get(numerator), m.get(denominator), m.get("ratioP25"),
                m.get("ratioP75")), String.format(Locale.ROOT, "%.2f x", ratio), target,
                met(atMost ? ratio <= bound : ratio >= bound));
    }

    /** P15's count of a trivial run's hand-offs in process mode: no bound, the numbers. */
    private static Row handoffRow(String variant, Map<String, Double> m) {
        String what = variant + ": hand-offs of one trivial run through ChipWorker in process mode (proxied calls"
                + " counted by a counting NativeApi; sleeps = voluntary context switches) and one request's round"
                + " trip (committedDeviceMemory in a loop)";
        if (!m.containsKey("callsPerRun")) {
            return new Row("P15", what, "no result (see above)", "-", "(counted)", "-");
        }
        StringBuilder calls = new StringBuilder();
        new java.util.TreeMap<>(m).forEach((k, v) -> {
            if (k.startsWith("calls.")) {
                calls.append(calls.length() == 0 ? "" : ", ").append(k.substring(6))
                        .append(String.format(Locale.ROOT, " %.2f", v));
            }
        });
        StringBuilder times = new StringBuilder();
        new java.util.TreeMap<>(m).forEach((k, v) -> {
            if (k.startsWith("us.")) {
                String call = k.substring(3);
                times.append(times.length() == 0 ? "" : ", ").append(call).append(String.format(Locale.ROOT,
                        " %.1f / %.1f us", v, m.getOrDefault("inUs." + call, Double.NaN)));
            }
        });
        return new Row("P15", what, String.format(Locale.ROOT, "%.2f proxied calls per run (%s); per call, process /"
                                + " in process: %s; sleeps per run: caller %.2f, chip host %.2f; cycle %.1f us counted"
                                + " (in process %.1f us); round trip mean %.0f ns, p50 %.0f ns (right after a run %.0f"
                                + " ns) vs %.0f ns in process,"
                                + " with %.2f / %.2f involuntary switches (yields) per round trip, caller / chip host",
                        m.get("callsPerRun"), calls, times, m.get("parentSleepsPerRun"),
                        m.get("childSleepsPerRun"), m.get("countedCycleUs"),
                        m.getOrDefault("inCountedCycleUs", Double.NaN), m.get("pingProcessNs"),
                        m.getOrDefault("pingProcessP50Ns", Double.NaN),
                        m.getOrDefault("pingAfterRunP50Ns", Double.NaN), m.get("pingInNs"),
                        m.getOrDefault("pingParentPreemptionsPerPing", Double.NaN),
                        m.getOrDefault("pingChildPreemptionsPerPing", Double.NaN)),
                String.format(Locale.ROOT, "%.2f calls, %.0f ns", m.get("callsPerRun"), m.get("pingProcessNs")),
                "(counted)", "-");
    }

    private Map<String, Long> medianOfChildren(String mode, String variant) throws IOException, InterruptedException {
        Map<String, List<Long>> samples = new HashMap<>();
        for (int i = 0; i < FRESH_JVMS; i++) {
            List<String> command = javaCommand(List.of(), FirstRun.class.getName(), mode, variant);
            for (String line : runChild("P10 " + mode + " on " + variant + ", JVM " + (i + 1), command)) {
                if (line.matches("^[a-z0-9]+=-?[0-9]+( [a-z0-9]+=-?[0-9]+)*$")) {
                    for (String kv : line.split(" ")) {
                        int eq = kv.indexOf('=');
                        samples.computeIfAbsent(kv.substring(0, eq), k -> new ArrayList<>())
                                .add(Long.parseLong(kv.substring(eq + 1)));
                    }
                }
            }
        }
        Map<String, Long> medians = new HashMap<>();
        samples.forEach((k, v) -> {
            v.sort(null);
            medians.put(k, v.get(v.size() / 2));
        });
        return medians;
    }

    private static List<String> childJvmArgs() {
        List<String> args = new ArrayList<>();
        args.add("--enable-native-access=ALL-UNNAMED");
        for (String p : List.of("ptorun.nativeTestDir", "ptorun.libDir", "ptorun.benchDir")) {
            String value = System.getProperty(p);
            if (value != null) {
                args.add("-D" + p + "=" + value);
            }
        }
        return args;
    }

    private static List<String> javaCommand(List<String> jvmOptions, String mainClass, String... args) {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.addAll(jvmOptions);
        command.addAll(childJvmArgs());
        command.add("-cp");
        command.add(System.getProperty("java.class.path"));
        command.add(mainClass);
        command.addAll(List.of(args));
        return command;
    }

    /** Runs a child JVM, echoing its output; returns its lines. */
    private static List<String> runChild(String label, List<String> command) throws IOException, InterruptedException {
        System.out.println("# " + label);
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        List<String> lines = new ArrayList<>();
        try (BufferedReader in = new BufferedReader(
                new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
            for (String line; (line = in.readLine()) != null; ) {
                System.out.println(line);
                lines.add(line);
            }
        }
        int rc = process.waitFor();
        if (rc != 0) {
            throw new IllegalStateException(String.join(" ", command) + " exited with " + rc);
        }
        return lines;
    }

    // ---- the report -------------------------------------------------------------------------------

    private void report() {
        List<Row> measured = new ArrayList<>(rows);
        rows.clear();
        List<String> trivialVariants = List.of("a2a3/sim/hbg", "a2a3/sim/trb");
        Optional<Double> forkFloor = p50("TrivialRunBench.condvarRoundTrip");
        for (String v : trivialVariants) {
            Properties interleaved = properties("trivial-" + v.replace('/', '_') + ".properties");
            Optional<Double> java = micros(interleaved, "chipWorker.p50");
            Optional<Double> c = micros(interleaved, "c.p50");
            Optional<Double> floor = micros(interleaved, "floor.p50");
            Optional<Double> forkJava = p50("TrivialRunBench.chipWorkerCycle", "variant=" + v);
            Optional<Double> forkC = p50("TrivialRunBench.cDrivenCycle", "variant=" + v);
            if (parts.contains("P1")) {
                rows.add(ratioRow("P1", v + ": trivial run, full cycle, p50, interleaved", java, c,
                        "ChipWorker %.1f us / C %.1f us" + separateForks(forkJava, forkC), 1.10, true));
            }
            if (parts.contains("P2")) {
                rows.add(ratioRow("P2", v + ": the same cycle vs one condvar round trip, p50, interleaved", java,
                        floor, "ChipWorker %.1f us / floor %.1f us" + separateForks(forkJava, forkFloor),
                        v.endsWith("hbg") ? 2.0 : 3.0, true));
            }
        }
        if (parts.contains("P3")) {
            String variant = "a2a3/sim/hbg";
            Properties split = properties(PipelinedOrchestrationBench.splitFile(variant));
            String overlap = split.isEmpty() ? "" : String.format(Locale.ROOT,
                    " (depth 1: prepare %s ms, launch to complete %s ms)", split.getProperty("prepareMs"),
                    split.getProperty("executionMs"));
            String v = "variant=" + variant;
            rows.add(ratioRow("P3", variant + ": runs/s, host orchestration of a chain of "
                            + PipelinedOrchestrationBench.TASKS + " tasks, ChipWorker depth 2 vs 1",
                    score("PipelinedOrchestrationBench.runs", "depth=2", v),
                    score("PipelinedOrchestrationBench.runs", "depth=1", v),
                    "%.1f runs/s / %.1f runs/s" + overlap, 1.5, false));
            rows.add(p3InterleavedRow("a2a3/sim/trb", p3Interleaved));
        }
        if (parts.contains("P4")) {
            for (String v : trivialVariants) {
                Optional<Double> tasks = score("ManyTasksBench.noopTasks", "variant=" + v);
                rows.add(new Row("P4", v + ": " + ManyTasksBench.TASKS + " noop tasks in one run",
                        tasks.map(t -> String.format(Locale.ROOT, "%.0f tasks/s", t)).orElse("no result"),
                        tasks.map(t -> String.format(Locale.ROOT, "%.2f M tasks/s", t / 1e6)).orElse("-"),
                        ">= 1 M tasks/s", tasks.map(t -> met(t >= 1e6)).orElse("not measured")));
            }
        }
        if (parts.contains("P5")) {
            Optional<Double> memcpy = score("VaddBandwidthBench.memcpy");
            for (String v : trivialVariants) {
                Optional<Double> vadd = score("VaddBandwidthBench.vadd", "variant=" + v);
                Optional<Double> ratio = memcpy.flatMap(m -> vadd.map(a -> m / a));
                double mib = VaddBandwidthBench.BYTES / 1048576.0;
                rows.add(new Row("P5", v + ": vadd over 64 MiB in " + VaddBandwidthBench.TASKS
                                + " tasks vs memcpy of 64 MiB",
                        vadd.flatMap(a -> memcpy.map(m -> String.format(Locale.ROOT,
                                "vadd %.1f ms (%.2f GiB/s) / memcpy %.1f ms (%.2f GiB/s)", a, mib / a, m, mib / m)))
                                .orElse("no result"),
                        ratio.map(r -> String.format(Locale.ROOT, "%.2f x", r)).orElse("-"),
                        ">= 0.5 x", ratio.map(r -> met(r >= 0.5)).orElse("not measured")));
            }
        }
        if (parts.contains("P9")) {
            for (String v : trivialVariants) {
                Properties p9 = properties("p9-" + v.replace('/', '_') + ".properties");
                Optional<Double> worker = micros(p9, "worker.meanUs").map(us -> 1e6 / us);
                Optional<Double> bare = micros(p9, "chipWorker.meanUs").map(us -> 1e6 / us);
                rows.add(ratioRow("P9", v + ": trivial runs/s one at a time, background Worker (enqueue -> future)"
                                + " vs a bare ChipWorker loop, blocks of " + WorkerThroughputBench.BLOCK + " runs interleaved",
                        worker, bare, "Worker %.0f runs/s / ChipWorker %.0f runs/s" + String.format(Locale.ROOT,
                                " (p50 of the blocks %s / %s us per run)", p9.getProperty("worker.p50Us"),
                                p9.getProperty("chipWorker.p50Us")), 0.8, false));
            }
        }
        if (parts.contains("P12")) {
            Properties p12 = properties("p12.properties");
            Optional<Double> in = micros(p12, "prepareArrays.p50Us")
                    .flatMap(a -> micros(p12, "prepareDirect.p50Us").map(d -> a - d));
            Optional<Double> back = micros(p12, "finalizeArrays.p50Us")
                    .flatMap(a -> micros(p12, "finalizeDirect.p50Us").map(d -> a - d));
            Optional<Double> copyIn = micros(p12, "memcpyIn.p50Us");
            Optional<Double> copyBack = micros(p12, "memcpyBack.p50Us");
            String what = "a2a3/sim/hbg: vadd of " + (ArrayStagingBench.FLOATS >> 20) + " Mi floats, Java arrays vs"
                    + " direct buffers: ";
            rows.add(ratioRow("P12", what + "staging in (a, b: 8 MiB) vs memcpy", in, copyIn,
                    "prepare +%.0f us / memcpy %.0f us", 1.5, true));
            rows.add(ratioRow("P12", what + "copying back (c: 4 MiB) vs memcpy", back, copyBack,
                    "finalize +%.0f us / memcpy %.0f us", 1.5, true));
            rows.add(ratioRow("P12", what + "both directions vs memcpy", in.flatMap(i -> back.map(b -> i + b)),
                    copyIn.flatMap(i -> copyBack.map(b -> i + b)), "%.0f us / %.0f us", 1.5, true));
        }
        rows.addAll(measured);
        if (parts.contains("P8")) {
            // The original simulator, measured outside the project (docs/performance.md, P8):
            // ~48 ms per trivial run on trb, 60-360 ms on hbg; compare with the best case.
            Map<String, Double> original = Map.of("a2a3/sim/hbg", 60_000.0, "a2a3/sim/trb", 48_000.0);
            for (String v : trivialVariants) {
                Optional<Double> java = micros(properties("trivial-" + v.replace('/', '_') + ".properties"),
                        "chipWorker.p50");
                double ref = original.get(v);
                rows.add(new Row("P8", v + ": trivial runs/s vs the original simulator (" + (long) (ref / 1000)
                                + " ms per run, its best case)",
                        java.map(j -> String.format(Locale.ROOT, "%.0f runs/s (p50 %.1f us)", 1e6 / j, j))
                                .orElse("no result"),
                        java.map(j -> String.format(Locale.ROOT, "%.0f x", ref / j)).orElse("-"), ">= 1000 x",
                        java.map(j -> met(ref / j >= 1000)).orElse("not measured")));
            }
        }
    }

    /** P3's trb row: the median of the per-round ratios (not a ratio of the medians), and both halves. */
    static Row p3InterleavedRow(String variant, Optional<InterleavedPipelineBench.Result> result) {
        String what = variant + ": runs/s, prepare staging " + PipelinedOrchestrationBench.TRB_FLOATS
                + " floats, execution a chain of " + PipelinedOrchestrationBench.TRB_PASSES + " gemm_tile "
                + PipelinedOrchestrationBench.TRB_N + "^3, ChipWorker depth 2 vs 1, interleaved rounds in one JVM"
                + result.map(r -> " (" + r.rounds() + " rounds of " + r.runs() + " runs per depth, order"
                        + " alternating), median of the per-round ratios").orElse("");
        String target = ">= 1.5 x";
        if (result.isEmpty()) {
            return new Row("P3", what, "no result (see above)", "-", target, "not measured");
        }
        InterleavedPipelineBench.Result r = result.get();
        return new Row("P3", what, String.format(Locale.ROOT, "%.1f runs/s / %.1f runs/s, medians of the rounds;"
                                + " per-round ratios p25 %.2f, p75 %.2f (depth 1: prepare %.3f ms, launch to complete"
                                + " %.3f ms)", r.depth2RunsPerSecond(), r.depth1RunsPerSecond(), r.ratioP25(),
                        r.ratioP75(), r.prepareMs(), r.executionMs()),
                String.format(Locale.ROOT, "%.2f x", r.ratio()), target, met(r.ratio() >= 1.5));
    }

    /** A properties file a benchmark wrote into the suite's directory; empty when there is none. */
    private Properties properties(String file) {
        Properties p = new Properties();
        Path path = dir.resolve(file);
        if (Files.isRegularFile(path)) {
            try (Reader in = Files.newBufferedReader(path)) {
                p.load(in);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
        return p;
    }

    private static Optional<Double> micros(Properties p, String key) {
        return Optional.ofNullable(p.getProperty(key)).map(Double::parseDouble);
    }

    /** The same two figures from JMH's separate forks, for comparison (a literal for String.format). */
    private static String separateForks(Optional<Double> a, Optional<Double> b) {
        if (a.isEmpty() || b.isEmpty()) {
            return "";
        }
        return String.format(Locale.ROOT, " (separate forks: %.1f / %.1f us)", a.get(), b.get()).replace("%", "%%");
    }

    /** numerator / denominator against a bound (at most when {@code atMost}, else at least). */
    private static Row ratioRow(String id, String what, Optional<Double> numerator, Optional<Double> denominator,
                                String measuredFormat, double bound, boolean atMost) {
        String target = (atMost ? "<= " : ">= ") + bound + " x";
        if (numerator.isEmpty() || denominator.isEmpty()) {
            return new Row(id, what, "no result", "-", target, "not measured");
        }
        double n = numerator.get();
        double d = denominator.get();
        double ratio = n / d;
        return new Row(id, what, String.format(Locale.ROOT, measuredFormat, n, d),
                String.format(Locale.ROOT, "%.2f x", ratio), target, met(atMost ? ratio <= bound : ratio >= bound));
    }

    private static String met(boolean met) {
        return met ? "met" : "NOT met";
    }

    private String table(String header) {
        StringBuilder sb = new StringBuilder();
        sb.append(header).append("\n\n");
        sb.append("| id | what | measured | figure | target | |\n");
        sb.append("|---|---|---|---|---|---|\n");
        for (Row r : rows) {
            sb.append("| ").append(String.join(" | ", r.id(), r.what(), r.measured(), r.figure(), r.target(), r.met()))
                    .append(" |\n");
        }
        return sb.toString();
    }

    private static String now() {
        return ZonedDateTime.now().format(DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm z", Locale.ROOT));
    }

    private static String loadAverage() {
        try {
            String[] f = Files.readString(Path.of("/proc/loadavg")).trim().split("\\s+");
            return f[0] + " " + f[1] + " " + f[2];
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}

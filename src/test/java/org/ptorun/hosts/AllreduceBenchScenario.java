package org.ptorun.hosts;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.ptorun.CallConfig;
import org.ptorun.ChipWorker;
import org.ptorun.CommGroup;
import org.ptorun.CommRank;
import org.ptorun.DType;
import org.ptorun.DeviceBuffer;
import org.ptorun.HostRuntime;
import org.ptorun.TaskArgs;
import org.ptorun.Tensor;
import org.ptorun.Variant;
import org.ptorun.callable.Direction;

/**
 * P16 (docs/performance.md): allreduce_sum of {@value #FLOATS} floats (64 MiB) over a group
 * that spans hosts, against the raw TCP bandwidth between the hosts measured in the same run.
 *
 * <p>The child side is scenario {@code bench} of {@link HostRanksMain}: after
 * {@value #WARMUP} warm-up runs, {@value #RUNS} timed runs, each started right after a group
 * barrier (so every process starts together) and timed in each process from the barrier's
 * return until every local rank's run finished; one line per run,
 * {@code bench run=<i> ranks=<first>..<last> size=<n> bytes=<b> seconds=<s>}. The data are all
 * 1.0, so after k runs every element must be exactly n^k: checked at the end (first and last
 * element of each rank). Then, with several ranks per host, the same over a group of this
 * host's ranks alone (a root-info file: shared memory, no proxy), lines {@code local run=...}:
 * the host's part of the time, for a breakdown.
 *
 * <p>The parent side ({@link #measure}) makes the hosts ({@link NetnsHosts}), measures raw TCP
 * between host 0 and host 1 with {@link HostProbeMain}'s {@code tcp-sink} / {@code tcp-source}
 * (one connection per transfer of {@value #TCP_BYTES} bytes; then one each way at once, for
 * comparison), runs the children, measures raw TCP again (the reference swings with where
 * the scheduler puts sender and receiver: transfers on both sides of the allreduce meet the
 * conditions it met) and returns their lines.
 */
public final class AllreduceBenchScenario {

    /** 16 Mi floats: 64 MiB. */
    public static final int FLOATS = 16 << 20;
    public static final int WARMUP = 2;
    public static final int RUNS = 5;
    /** Bytes of one raw TCP transfer. */
    public static final long TCP_BYTES = 256L << 20;
    /** Raw TCP transfers before the allreduce runs and as many after; the figure is the median of all. */
    public static final int TCP_TRANSFERS = 4;
    private static final int ALLREDUCE = 1;
    private static final long CHILD_SECONDS = 600;
    private static final Pattern RUN_LINE = Pattern.compile(
            "^(bench|local) run=(\\d+) ranks=(\\d+)\\.\\.(\\d+) size=(\\d+) bytes=(\\d+) seconds=([0-9.eE+-]+)$");
    private static final Pattern TCP_LINE = Pattern.compile("^(both-ways )?sent bytes=(\\d+) ns=(\\d+)$");

    private AllreduceBenchScenario() {
    }

    // ---- the child: scenario "bench" ----------------------------------------------------------

    /** Runs the scenario on ranks {@code first .. first + local - 1}; the number of failed checks. */
    static int run(Variant variant, String rootInfo, int first, int local, int size, int[] hostOf) {
        HostRuntime runtime = HostRuntime.load(variant);
        List<ChipWorker> chips = new ArrayList<>();
        CommGroup group = null;
        try {
            for (int i = 0; i < local; i++) {
                chips.add(ChipWorker.open(runtime, first + i));
            }
            group = HostRanksMain.join(variant, chips, rootInfo, first, size);
            int failed = bench(group, first, local, "bench");
            group.barrier(); // nobody leaves while a peer still reads its window
            group.close();
            group = null;
            if (local >= 2) {
                // the host's part alone: the same allreduce over this host's ranks only (shared memory, no proxy)
                Path dir = Files.createTempDirectory("p16-local");
                dir.toFile().deleteOnExit(); // empty once the ranks met
                group = CommGroup.open(chips, dir.resolve("rootinfo"), HostRanksMain.TIMEOUT);
                failed += bench(group, first, local, "local");
            }
            return failed;
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        } finally {
            try {
                if (group != null) {
                    group.close();
                }
            } finally {
                chips.forEach(ChipWorker::close);
            }
        }
    }

    /** Warm-up and timed runs on {@code group}; lines {@code <label> run=...}. */
    private static int bench(CommGroup group, int first, int local, String label) {
        long bytes = 4L * FLOATS;
        int size = group.size();
        group.allocWindows(bytes);
        float[] ones = new float[FLOATS];
        Arrays.fill(ones, 1f);
        for (CommRank rank : group.ranks()) {
            if (label.equals("bench")) {
                rank.chip().registerCallable(ALLREDUCE, HostRanksMain.single("allreduce_sum", List.of(Direction.INOUT), 1,
                        bytes));
            }
            rank.chip().copyTo(rank.windowSlice(0, bytes), ones);
        }
        ones = null;
        for (int i = 0; i < WARMUP + RUNS; i++) {
            group.barrier();
            long t0 = System.nanoTime();
            group.onEveryRank(rank -> {
                DeviceBuffer x = rank.windowSlice(0, bytes);
                rank.chip().run(ALLREDUCE, new TaskArgs().tensor(Tensor.of(x, DType.F32)).scalar(rank.deviceContext()),
                        CallConfig.DEFAULT);
                return null;
            });
            double seconds = (System.nanoTime() - t0) / 1e9;
            if (i >= WARMUP) {
                System.out.printf(Locale.ROOT, "%s run=%d ranks=%d..%d size=%d bytes=%d seconds=%.6f%n", label,
                        i - WARMUP, first, first + local - 1, size, bytes, seconds);
            } else {
                System.out.printf(Locale.ROOT, "%s warm-up %d: %.6f s%n", label, i, seconds);
            }
        }
        // every element is 1 · size^(runs): exact in binary32 for these sizes
        float expected = (float) Math.pow(size, WARMUP + RUNS);
        int failed = 0;
        for (CommRank rank : group.ranks()) {
            float[] firstLast = new float[2];
            float[] one = new float[1];
            rank.chip().copyFrom(rank.windowSlice(0, 4), one);
            firstLast[0] = one[0];
            rank.chip().copyFrom(rank.windowSlice(bytes - 4, 4), one);
            firstLast[1] = one[0];
            if (firstLast[0] == expected && firstLast[1] == expected) {
                System.out.printf("PASS %s: rank %d holds %s after %d allreduces%n", label, rank.rank(), expected,
                        WARMUP + RUNS);
            } else {
                System.out.printf("FAIL %s: rank %d holds %s, %s, not %s%n", label, rank.rank(), firstLast[0],
                        firstLast[1], expected);
                failed++;
            }
        }
        return failed;
    }

    // ---- the parent: hosts, raw TCP, children -------------------------------------------------

    /** What one measurement saw: every child's lines, and the raw TCP transfers' lines. */
    public record Measurement(int hosts, int ranksPerHost, List<String> tcpLines, List<String> childLines) {
    }

    /**
     * Makes {@code hosts} hosts, measures raw TCP from host 0 to host 1, then runs the bench
     * children ({@code ranksPerHost} ranks each) on {@code variant}; echoes every line to
     * standard output.
     *
     * @throws IllegalStateException when a child fails (its output is in the message)
     */
    public static Measurement measure(String variant, int hosts, int ranksPerHost, Path dir) throws Exception {
        Files.createDirectories(dir);
        try (NetnsHosts net = new NetnsHosts(hosts)) {
            List<String> tcp = new ArrayList<>(rawTcp(net, dir, true));
            int size = hosts * ranksPerHost;
            StringBuilder hostOf = new StringBuilder();
            for (int r = 0; r < size; r++) {
                hostOf.append(r == 0 ? "" : ",").append(r / ranksPerHost);
            }
            String rootInfo = CommGroup.newRootInfo(new InetSocketAddress(InetAddress.getByName(net.address(0)),
                    freePort()));
            List<Process> children = new ArrayList<>();
            for (int h = 0; h < hosts; h++) {
                List<String> args = List.of(variant, rootInfo, Integer.toString(h * ranksPerHost),
                        Integer.toString(ranksPerHost), Integer.toString(size), hostOf.toString(), "bench");
                children.add(net.start(h, NetnsHosts.javaCommand(HostRanksMain.class, args), dir,
                        dir.resolve("bench-host" + h + ".out"), dir.resolve("bench-host" + h + ".err")));
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(CHILD_SECONDS);
            List<String> lines = new ArrayList<>();
            StringBuilder failures = new StringBuilder();
            for (int h = 0; h < hosts; h++) {
                Process child = children.get(h);
                boolean ended = child.waitFor(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
                List<String> out = Files.readAllLines(dir.resolve("bench-host" + h + ".out"), StandardCharsets.UTF_8);
                for (String line : out) {
                    System.out.println("host " + h + ": " + line);
                }
                lines.addAll(out);
                if (!ended || child.exitValue() != 0) {
                    failures.append("host ").append(h).append(ended ? " exited " + child.exitValue()
                                    : " still running after " + CHILD_SECONDS + " s").append(": ")
                            .append(Files.readString(dir.resolve("bench-host" + h + ".err"), StandardCharsets.UTF_8)
                                    .strip()).append('\n');
                }
            }
            if (failures.length() > 0) {
                throw new IllegalStateException("bench children failed:\n" + failures);
            }
            tcp.addAll(rawTcp(net, dir, false));
            return new Measurement(hosts, ranksPerHost, tcp, lines);
        }
    }

    /**
     * {@value #TCP_TRANSFERS} transfers of {@value #TCP_BYTES} bytes from host 0 to host 1 (the
     * source's lines {@code sent ...}), then, with {@code bothWays}, one each way at once, host 0
     * to host 1 and host 1 to host 0 (lines {@code both-ways sent ...}): what an exchange
     * between the two leaders does.
     */
    private static List<String> rawTcp(NetnsHosts net, Path dir, boolean bothWays) throws Exception {
        Process sink1 = net.start(1, NetnsHosts.javaCommand(HostProbeMain.class, List.of("tcp-sink", net.address(1))));
        Process sink0 = net.start(0, NetnsHosts.javaCommand(HostProbeMain.class, List.of("tcp-sink", net.address(0))));
        try (BufferedReader out1 = reader(sink1); OutputStream in1 = sink1.getOutputStream();
             BufferedReader out0 = reader(sink0); OutputStream in0 = sink0.getOutputStream()) {
            String port1 = port(sink1, out1.readLine());
            String port0 = port(sink0, out0.readLine());
            List<String> lines = new ArrayList<>(transfers(List.of(source(net, dir, 0, 1, port1, TCP_TRANSFERS,
                    "tcp-source"))).get(0));
            lines.forEach(l -> System.out.println("raw tcp host 0 -> host 1: " + l));
            List<List<String>> both = !bothWays ? List.of() : transfers(List.of(source(net, dir, 0, 1, port1, 1,
                    "tcp-both-0"), source(net, dir, 1, 0, port0, 1, "tcp-both-1")));
            for (int h = 0; h < both.size(); h++) {
                for (String l : both.get(h)) {
                    System.out.println("raw tcp both ways at once, from host " + h + ": " + l);
                    lines.add("both-ways " + l);
                }
            }
            in1.close(); // the sinks end
            in0.close();
            sink1.waitFor(30, TimeUnit.SECONDS);
            sink0.waitFor(30, TimeUnit.SECONDS);
            return lines;
        }
    }

    private record Source(Process process, Path out, Path err) {
    }

    private static Source source(NetnsHosts net, Path dir, int from, int to, String port, int transfers,
                                 String name) {
        Path out = dir.resolve(name + ".out");
        Path err = dir.resolve(name + ".err");
        return new Source(net.start(from, NetnsHosts.javaCommand(HostProbeMain.class, List.of("tcp-source",
                net.address(to), port, Long.toString(TCP_BYTES), Integer.toString(transfers))), out, err), out, err);
    }

    /** Waits for every source; their lines. */
    private static List<List<String>> transfers(List<Source> sources) throws Exception {
        List<List<String>> lines = new ArrayList<>();
        for (Source s : sources) {
            if (!s.process().waitFor(CHILD_SECONDS, TimeUnit.SECONDS) || s.process().exitValue() != 0) {
                throw new IllegalStateException("tcp-source failed: " + Files.readString(s.err(),
                        StandardCharsets.UTF_8));
            }
            lines.add(Files.readAllLines(s.out(), StandardCharsets.UTF_8));
        }
        return lines;
    }

    private static BufferedReader reader(Process p) {
        return new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
    }

    private static String port(Process sink, String ready) throws IOException {
        if (ready == null || !ready.startsWith("listening ")) {
            throw new IllegalStateException("tcp-sink did not start: " + ready + " "
                    + new String(sink.getErrorStream().readAllBytes(), StandardCharsets.UTF_8));
        }
        return ready.substring("listening ".length()).strip();
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    // ---- the figures ------------------------------------------------------------------------------

    /**
     * The figures of a measurement: {@code busBw} (bytes/s, 2(n−1)/n · bytes over the median
     * over the runs of the slowest process's time), {@code rawTcp} (bytes/s, median transfer),
     * their ratio, the run times (the slowest process's, per run) and the transfer rates; with
     * several ranks per host, {@code localMedianSeconds}: the same allreduce over one host's
     * ranks alone (lines {@code local run=...}), the host's part of the time.
     */
    public record Figures(int size, long bytes, List<Double> runSeconds, List<Double> tcpBytesPerSecond,
                          double medianSeconds, double busBytesPerSecond, double rawTcpBytesPerSecond,
                          Optional<Double> localMedianSeconds, List<Double> bothWaysBytesPerSecond) {
        public double ratio() {
            return busBytesPerSecond / rawTcpBytesPerSecond;
        }
    }

    /** The figures of the children's and the probe's lines; empty when a run or a transfer is missing. */
    public static Optional<Figures> figures(List<String> tcpLines, List<String> childLines) {
        List<Double> tcp = new ArrayList<>();
        List<Double> bothWays = new ArrayList<>();
        for (String line : tcpLines) {
            Matcher m = TCP_LINE.matcher(line.strip());
            if (m.matches()) {
                double bps = Long.parseLong(m.group(2)) / (Long.parseLong(m.group(3)) / 1e9);
                (m.group(1) == null ? tcp : bothWays).add(bps);
            }
        }
        double[] slowest = new double[RUNS];
        boolean[] seen = new boolean[RUNS];
        double[] localSlowest = new double[RUNS];
        boolean[] localSeen = new boolean[RUNS];
        int size = -1;
        long bytes = -1;
        for (String line : childLines) {
            Matcher m = RUN_LINE.matcher(line.strip());
            if (!m.matches()) {
                continue;
            }
            int run = Integer.parseInt(m.group(2));
            if (run >= RUNS) {
                continue;
            }
            double seconds = Double.parseDouble(m.group(7));
            if (m.group(1).equals("local")) {
                localSlowest[run] = Math.max(localSlowest[run], seconds);
                localSeen[run] = true;
                continue;
            }
            size = Integer.parseInt(m.group(5));
            bytes = Long.parseLong(m.group(6));
            slowest[run] = Math.max(slowest[run], seconds);
            seen[run] = true;
        }
        List<Double> local = new ArrayList<>();
        for (int i = 0; i < RUNS; i++) {
            if (localSeen[i]) {
                local.add(localSlowest[i]);
            }
        }
        for (boolean s : seen) {
            if (!s) {
                return Optional.empty();
            }
        }
        if (tcp.isEmpty() || size < 2) {
            return Optional.empty();
        }
        List<Double> runs = new ArrayList<>();
        for (double s : slowest) {
            runs.add(s);
        }
        double median = median(runs);
        double bus = 2.0 * (size - 1) / size * bytes / median;
        return Optional.of(new Figures(size, bytes, runs, tcp, median, bus, median(tcp),
                local.size() == RUNS ? Optional.of(median(local)) : Optional.empty(), bothWays));
    }

    static double median(List<Double> values) {
        List<Double> sorted = new ArrayList<>(values);
        sorted.sort(null);
        int n = sorted.size();
        return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
    }
}

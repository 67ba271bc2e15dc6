package org.ptorun.hosts;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.ptorun.CommGroup;
import org.ptorun.Variant;

/**
 * Faults of a group that spans hosts, on all eight libraries, with the hosts and child JVMs
 * of {@link AcrossHostsE2ETest} ({@link NetnsHosts}, one {@link HostFaultsMain} per host) and
 * a group timeout of {@value #TIMEOUT_MS} ms: a host killed, a partition, a rank that never
 * arrives, and hosts that disagree on a collective's element count. Every surviving rank
 * must fail with the precise exception, naming the lost or disagreeing rank(s), within
 * {@value #BOUND_MS} ms (3 × the timeout; the natives' host step waits up to 2 × timeout
 * + 1 s) of the go that follows the fault, and leave no "ptorun*" entry in its /dev/shm and
 * no listening TCP socket in its host. The test synchronizes on the children's lines only
 * (JOINED, READY, RESULT, DONE; it writes "go"), never on sleeps. Root only.
 */
class AcrossHostsFaultsE2ETest {

    static final long TIMEOUT_MS = 5_000;
    static final long BOUND_MS = 3 * TIMEOUT_MS;
    /** Bounds every wait for a child's line: a JVM start, the natives' load and the calls of a case. */
    private static final long LINE_SECONDS = 90;
    private static final Pattern RESULT = Pattern.compile("RESULT (\\d+) (OK|FAIL) (\\d+) (\\S+) ?(.*)");
    private static final Pattern JOIN_FAIL = Pattern.compile("JOIN FAIL (-?\\d+) (\\d+) (\\S+) (.*)");

    static List<Variant> variants() {
        return Variant.all();
    }

    /**
     * Two hosts of two ranks each (ranks 0, 1 and 2, 3), joined, windows allocated and
     * READY: host 0's ranks will allreduce {@code count0} floats, host 1's {@code count1},
     * then {@code after} (HostFaultsMain).
     */
    private static Child[] twoHostsReady(NetnsHosts hosts, Variant variant, int count0, int count1, String after)
            throws Exception {
        String rootInfo = rootInfo(hosts);
        Child h0 = Child.start(hosts, 0, variant, rootInfo, 0, 2, 4, "0,0,1,1", count0, after);
        Child h1 = Child.start(hosts, 1, variant, rootInfo, 2, 2, 4, "0,0,1,1", count1, after);
        h0.await("READY", h1);
        h1.await("READY", h0);
        return new Child[] {h0, h1};
    }

    /** (a) Host 1's JVM is killed after the windows are allocated; host 0's allreduce fails naming rank 2 or 3. */
    @ParameterizedTest(name = "{0}")
    @MethodSource("variants")
    void aKilledHostFailsTheOthersNamingItsRanks(Variant variant) throws Exception {
        String prefix;
        try (NetnsHosts hosts = new NetnsHosts(2)) {
            prefix = hosts.prefix();
            Child[] both = twoHostsReady(hosts, variant, 1000, 1000, "none");
            Child h0 = both[0];
            Child h1 = both[1];
            h1.kill();
            h0.send("go");
            for (int r = 0; r < 2; r++) {
                Result result = h0.result(r, h1);
                String log = logs(h0, h1);
                assertThat(result.failed()).as(log).isTrue();
                assertThat(result.type()).as(log).isEqualTo("KernelFaultException");
                assertThat(result.nativeMessage()).as(log).containsPattern("\\brank [23]\\b");
                assertThat(result.ms()).as(log).isLessThan(BOUND_MS);
            }
            h0.assertCleanEnd(h1);
            System.out.println("(a) " + variant + ":\n" + logs(h0, h1));
        }
        assertNoNamespaceLeft(prefix);
    }

    /**
     * (b) Host 1's link is cut after the windows are allocated: every rank on both sides fails
     * within the bound, each naming a rank of the other side.
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("variants")
    void aPartitionFailsEveryRankOnBothSides(Variant variant) throws Exception {
        String prefix;
        try (NetnsHosts hosts = new NetnsHosts(2)) {
            prefix = hosts.prefix();
            Child[] both = twoHostsReady(hosts, variant, 1000, 1000, "none");
            Child h0 = both[0];
            Child h1 = both[1];
            hosts.cutLink(1);
            h0.send("go");
            h1.send("go");
            for (Child h : List.of(h0, h1)) {
                Child other = h == h0 ? h1 : h0;
                for (int r = h.firstRank; r < h.firstRank + 2; r++) {
                    Result result = h.result(r, other);
                    String log = logs(h0, h1);
                    assertThat(result.failed()).as(log).isTrue();
                    assertThat(result.type()).as(log).isEqualTo("KernelFaultException");
                    assertThat(result.nativeMessage()).as(log).containsPattern(h == h0 ? "\\brank [23]\\b"
                            : "\\brank [01]\\b");
                    assertThat(result.ms()).as(log).isLessThan(BOUND_MS);
                }
            }
            h0.assertCleanEnd(h1);
            h1.assertCleanEnd(h0);
            System.out.println("(b) " + variant + ":\n" + logs(h0, h1));
        }
        assertNoNamespaceLeft(prefix);
    }

    /**
     * (c) 3 hosts × 1 rank, host 2 never started: ranks 0 and 1 fail to join with a
     * CommException, PTO_ERR_TIMEOUT, whose message names rank 2 (so that failedRank() is 2,
     * as on one host: "rank 2 did not arrive within ... ms"), within the bound, leaving
     * nothing. Rank 0 serves the store: it keeps it until rank 1 failed on its own deadline,
     * so rank 1 too names the rank that never came, not the store.
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("variants")
    void aRankThatNeverArrivesFailsTheJoinNamingIt(Variant variant) throws Exception {
        String prefix;
        try (NetnsHosts hosts = new NetnsHosts(3)) {
            prefix = hosts.prefix();
            String rootInfo = rootInfo(hosts);
            Child h0 = Child.start(hosts, 0, variant, rootInfo, 0, 1, 3, "0,1,2", 0, "none");
            Child h1 = Child.start(hosts, 1, variant, rootInfo, 1, 1, 3, "0,1,2", 0, "none");
            List<String> joins = List.of(h0.await("JOIN", h1), h1.await("JOIN", h0));
            // nothing left, whatever the messages say
            h0.assertCleanEnd(h1);
            h1.assertCleanEnd(h0);
            String log = logs(h0, h1);
            System.out.println("(c) " + variant + ":\n" + log);
            for (int r = 0; r < 2; r++) {
                Matcher m = JOIN_FAIL.matcher(joins.get(r));
                assertThat(m.matches()).as(log).isTrue();
                assertThat(Integer.parseInt(m.group(1))).as(log).isEqualTo(r);
                assertThat(Long.parseLong(m.group(2))).as(log).isLessThan(BOUND_MS);
                assertThat(m.group(3)).as(log).isEqualTo("CommException");
                Result failure = new Result(r, true, Long.parseLong(m.group(2)), m.group(3), m.group(4));
                assertThat(failure.message()).as(log).contains("PTO_ERR_TIMEOUT");
                assertThat(failure.nativeMessage()).as(log).containsPattern("\\brank 2\\b");
                assertThat(failure.facts()).as(log).isEqualTo("failedRank=2");
            }
        }
        assertNoNamespaceLeft(prefix);
    }

    /**
     * (d) Host 1's ranks allreduce 1001 floats, host 0's 1000: all four fail with a
     * CollectiveMismatchException with the same native text naming ranks 2 and 3 (a tie goes
     * to the lowest rank's value); then an agreeing allreduce of 65 537 floats on the same
     * group is bit-exact on every rank, and a barrier passes.
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("variants")
    void hostsThatDisagreeFailTogetherAndTheGroupStaysUsable(Variant variant) throws Exception {
        String prefix;
        try (NetnsHosts hosts = new NetnsHosts(2)) {
            prefix = hosts.prefix();
            Child[] both = twoHostsReady(hosts, variant, 1000, 1001, "65537");
            Child h0 = both[0];
            Child h1 = both[1];
            h0.send("go");
            h1.send("go");
            List<String> natives = new ArrayList<>();
            for (Child h : List.of(h0, h1)) {
                Child other = h == h0 ? h1 : h0;
                for (int r = h.firstRank; r < h.firstRank + 2; r++) {
                    Result result = h.result(r, other);
                    String log = logs(h0, h1);
                    assertThat(result.failed()).as(log).isTrue();
                    assertThat(result.type()).as(log).isEqualTo("CollectiveMismatchException");
                    assertThat(result.facts()).as(log).isEqualTo("ranks=[2, 3]");
                    assertThat(result.ms()).as(log).isLessThan(BOUND_MS);
                    // the run's own identity leads the native text: the rest is the same on every rank
                    natives.add(result.nativeMessage().replaceFirst("^simpler_wait_run \\([^)]*\\): ", ""));
                }
            }
            String log = logs(h0, h1);
            assertThat(natives).as(log).allMatch(n -> n.equals(natives.get(0)));
            assertThat(natives.get(0)).as(log).startsWith("allreduce_sum: the ranks disagree on the element count: "
                    + "rank 2 has 1001, rank 3 has 1001, the others 1000 (rank 0 1000, rank 1 1000, rank 2 1001, "
                    + "rank 3 1001)");
            for (Child h : List.of(h0, h1)) {
                Child other = h == h0 ? h1 : h0;
                for (int r = h.firstRank; r < h.firstRank + 2; r++) {
                    Result again = h.result(r, other);
                    assertThat(again.failed()).as(logs(h0, h1)).isFalse();
                    assertThat(again.type()).as(logs(h0, h1)).isEqualTo("bit-exact");
                }
                h.await("BARRIER ok", other);
            }
            h0.assertCleanEnd(h1);
            h1.assertCleanEnd(h0);
            System.out.println("(d) " + variant + ":\n" + logs(h0, h1));
        }
        assertNoNamespaceLeft(prefix);
    }

    // ---- helpers ---------------------------------------------------------------------------------

    private static String logs(Child... children) {
        StringBuilder out = new StringBuilder();
        for (Child c : children) {
            out.append(c.log());
        }
        return out.toString();
    }

    private static void assertNoNamespaceLeft(String prefix) {
        assertThat(NetnsHosts.namespaces()).as("namespaces left by this test").noneMatch(n -> n.startsWith(prefix));
    }

    private static String rootInfo(NetnsHosts hosts) throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return CommGroup.newRootInfo(new InetSocketAddress(InetAddress.getByName(hosts.address(0)),
                    s.getLocalPort()));
        }
    }

    /**
     * A RESULT (or JOIN FAIL) line: OK with "bit-exact"/"mismatch:" as type, or FAIL with the
     * exception's simple name and {@code <message> | facts: <...> | native: <native message>}.
     */
    record Result(int rank, boolean failed, long ms, String type, String message) {
        String nativeMessage() {
            int at = message.lastIndexOf(" | native: ");
            return at < 0 ? "" : message.substring(at + " | native: ".length());
        }

        String facts() {
            int at = message.lastIndexOf(" | facts: ");
            int end = message.lastIndexOf(" | native: ");
            return at < 0 || end < at ? "" : message.substring(at + " | facts: ".length(), end);
        }
    }

    /** A host's {@link HostFaultsMain} with its standard output read line by line on a thread. */
    static final class Child {
        final Process process;
        final int host;
        final int firstRank;
        private final BlockingQueue<String> lines = new LinkedBlockingQueue<>();
        private final StringBuffer out = new StringBuffer();
        private final StringBuffer err = new StringBuffer();
        private final Thread[] readers = new Thread[2];
        private final List<Result> pending = new ArrayList<>();

        private Child(Process process, int host, int firstRank) {
            this.process = process;
            this.host = host;
            this.firstRank = firstRank;
            readers[0] = reader(process.getInputStream(), out, lines);
            readers[1] = reader(process.getErrorStream(), err, null);
        }

        static Child start(NetnsHosts hosts, int host, Variant variant, String rootInfo, int firstRank, int local,
                           int size, String hostOf, int count, String then) {
            List<String> args = List.of(variant.toString(), rootInfo, Integer.toString(firstRank),
                    Integer.toString(local), Integer.toString(size), hostOf, Long.toString(TIMEOUT_MS),
                    Integer.toString(count), then);
            return new Child(hosts.start(host, NetnsHosts.javaCommand(HostFaultsMain.class, args)), host, firstRank);
        }

        private static Thread reader(InputStream in, StringBuffer all, BlockingQueue<String> queue) {
            Thread t = new Thread(() -> {
                try (BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
                    String line;
                    while ((line = r.readLine()) != null) {
                        all.append(line).append('\n');
                        if (queue != null) {
                            queue.add(line);
                        }
                    }
                } catch (IOException e) {
                    all.append("[read failed: ").append(e).append("]\n");
                }
                if (queue != null) {
                    queue.add("EOF");
                }
            }, "host-output");
            t.setDaemon(true);
            t.start();
            return t;
        }

        /** The next line that starts with {@code prefix} (others are skipped: they stay in the log). */
        String await(String prefix, Child... others) throws InterruptedException {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(LINE_SECONDS);
            while (true) {
                String line = lines.poll(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
                if (line == null || line.equals("EOF")) {
                    if (line != null) {
                        lines.add(line); // the next wait ends at once too
                    }
                    throw new AssertionError("host " + host + ": no line '" + prefix + "...' "
                            + (line == null ? "within " + LINE_SECONDS + " s" : "before its output ended")
                            + "\n" + log() + logs(others));
                }
                if (line.startsWith(prefix)) {
                    return line;
                }
            }
        }

        /** Rank {@code rank}'s next RESULT line (the local ranks' lines come in any order). */
        Result result(int rank, Child... others) throws InterruptedException {
            for (int i = 0; i < pending.size(); i++) {
                if (pending.get(i).rank() == rank) {
                    return pending.remove(i);
                }
            }
            while (true) {
                String line = await("RESULT", others);
                Matcher m = RESULT.matcher(line);
                assertThat(m.matches()).as("%s\n%s", line, log()).isTrue();
                Result r = new Result(Integer.parseInt(m.group(1)), m.group(2).equals("FAIL"),
                        Long.parseLong(m.group(3)), m.group(4), m.group(5));
                if (r.rank() == rank) {
                    return r;
                }
                pending.add(r);
            }
        }

        void send(String line) throws IOException {
            OutputStream in = process.getOutputStream();
            in.write((line + "\n").getBytes(StandardCharsets.UTF_8));
            in.flush();
        }

        /** Kills the process and every descendant (SIGKILL) and waits until they are gone. */
        void kill() throws InterruptedException {
            List<ProcessHandle> tree = process.descendants().toList();
            tree.forEach(ProcessHandle::destroyForcibly);
            process.destroyForcibly();
            assertThat(process.waitFor(LINE_SECONDS, TimeUnit.SECONDS)).as("host %d killed", host).isTrue();
            for (ProcessHandle p : tree) {
                p.onExit().orTimeout(LINE_SECONDS, TimeUnit.SECONDS).join();
            }
        }

        /** The group and chips closed without an error, nothing left, and the process ended with status 0. */
        void assertCleanEnd(Child... others) throws InterruptedException {
            assertThat(await("CLOSED", others)).as(log() + logs(others)).isEqualTo("CLOSED ok");
            assertThat(await("LEFT", others)).as(log() + logs(others)).isEqualTo("LEFT shm=[] listen=[]");
            await("DONE", others);
            assertThat(process.waitFor(LINE_SECONDS, TimeUnit.SECONDS)).as(log() + logs(others)).isTrue();
            readers[1].join(TimeUnit.SECONDS.toMillis(LINE_SECONDS));
            assertThat(process.exitValue()).as(log() + logs(others)).isZero();
        }

        String log() {
            return "--- host " + host + " (ranks from " + firstRank + ") stdout:\n" + out + "--- stderr:\n" + err;
        }
    }
}

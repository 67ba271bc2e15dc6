package org.ptorun.hosts;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.StringJoiner;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.ptorun.CommGroup;
import org.ptorun.Variant;

/**
 * A group that spans hosts, on all eight libraries: each host a network namespace with a
 * private /dev/shm per process ({@link NetnsHosts}), one child JVM per host holding that
 * host's ranks ({@link HostRanksMain}), all meeting through a root-info string that names a
 * store at rank 0's host ({@link CommGroup#newRootInfo}). Every rank runs the four
 * collectives over 1 000 003 and 4 194 304 floats and checks every element bit for bit
 * against the cross-host summation order. Layouts: 2 hosts × 2 ranks, 3 hosts × 1 rank. And a
 * data-parallel GEMM step through a Worker's collective steps ({@link GemmStepScenario}), 2 hosts × 2 ranks.
 * Root only (it fails, never skips, elsewhere); no namespace of its own is left behind.
 */
class AcrossHostsE2ETest {

    /** Bounds the wait for the children: each call of theirs is bounded by HostRanksMain.TIMEOUT (60 s). */
    private static final long CHILDREN_SECONDS = 300;
    private static final int SHOWN_CHARS = 20_000;

    /** {@code hosts} hosts of {@code ranksPerHost} ranks each: host h holds ranks h·k .. h·k + k − 1. */
    record Layout(int hosts, int ranksPerHost) {
        int size() {
            return hosts * ranksPerHost;
        }

        /** The host of every rank, "0,0,1,1". */
        String hostOfEachRank() {
            return IntStream.range(0, size()).mapToObj(r -> Integer.toString(r / ranksPerHost))
                    .collect(Collectors.joining(","));
        }

        @Override
        public String toString() {
            return hosts + " hosts × " + ranksPerHost + (ranksPerHost == 1 ? " rank" : " ranks");
        }
    }

    static Stream<Arguments> variantsAndLayouts() {
        return Variant.all().stream().flatMap(v -> Stream.of(new Layout(2, 2), new Layout(3, 1))
                .map(layout -> Arguments.of(v, layout)));
    }

    @ParameterizedTest(name = "{0}: {1}")
    @MethodSource("variantsAndLayouts")
    void everyCollectiveAcrossHostsIsBitExact(Variant variant, Layout layout, @TempDir Path dir) throws Exception {
        runScenario(variant, layout, "collectives", dir);
    }

    static Stream<Variant> variants() {
        return Variant.all().stream();
    }

    /**
     * A data-parallel GEMM step through a Worker's collective steps ({@link GemmStepScenario}):
     * each rank computes G_r = X_r^T · D_r of its shard into its window and allreduce_sums it in
     * one callable; every rank holds the sum bit for bit in the cross-host order, three steps.
     */
    @ParameterizedTest(name = "{0}: 2 hosts × 2 ranks")
    @MethodSource("variants")
    void aGemmStepThroughTheWorkersCollectiveStepsAcrossHostsIsBitExact(Variant variant, @TempDir Path dir)
            throws Exception {
        runScenario(variant, new Layout(2, 2), "gemm", dir);
    }

    private static void runScenario(Variant variant, Layout layout, String scenario, Path dir) throws Exception {
        String prefix;
        try (NetnsHosts hosts = new NetnsHosts(layout.hosts())) {
            prefix = hosts.prefix();
            String rootInfo = CommGroup.newRootInfo(
                    new InetSocketAddress(InetAddress.getByName(hosts.address(0)), freePort()));
            List<Process> children = new ArrayList<>();
            for (int h = 0; h < layout.hosts(); h++) {
                List<String> args = List.of(variant.toString(), rootInfo,
                        Integer.toString(h * layout.ranksPerHost()), Integer.toString(layout.ranksPerHost()),
                        Integer.toString(layout.size()), layout.hostOfEachRank(), scenario);
                children.add(hosts.start(h, NetnsHosts.javaCommand(HostRanksMain.class, args), dir,
                        dir.resolve("host" + h + ".out"), dir.resolve("host" + h + ".err")));
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(CHILDREN_SECONDS);
            List<String> outcomes = new ArrayList<>();
            boolean allPassed = true;
            for (Process child : children) {
                boolean ended = child.waitFor(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
                outcomes.add(ended ? "exit " + child.exitValue() : "still running after " + CHILDREN_SECONDS + " s");
                allPassed &= ended && child.exitValue() == 0;
            }
            String report = report(layout, rootInfo, outcomes, dir);
            System.out.println(report);
            assertThat(allPassed).as(report).isTrue();
        }
        assertThat(NetnsHosts.namespaces()).as("namespaces left by this test")
                .noneMatch(name -> name.startsWith(prefix));
    }

    /** Every host's outcome, standard output and standard error. */
    private static String report(Layout layout, String rootInfo, List<String> outcomes, Path dir) throws IOException {
        StringJoiner out = new StringJoiner("\n");
        out.add("root info " + rootInfo + ", " + layout + ":");
        for (int h = 0; h < outcomes.size(); h++) {
            int first = h * layout.ranksPerHost();
            out.add("--- host " + h + " (ranks " + first + ".." + (first + layout.ranksPerHost() - 1) + "): "
                    + outcomes.get(h));
            out.add(shown(dir.resolve("host" + h + ".out")));
            out.add("--- host " + h + " stderr:");
            out.add(shown(dir.resolve("host" + h + ".err")));
        }
        return out.toString();
    }

    private static String shown(Path file) throws IOException {
        String text = Files.readString(file, StandardCharsets.UTF_8).strip();
        return text.length() <= SHOWN_CHARS ? text
                : text.substring(0, SHOWN_CHARS) + "\n[... " + (text.length() - SHOWN_CHARS) + " more characters]";
    }

    /**
     * A port for the store: one the kernel hands out as free here. The store listens in rank
     * 0's host, a fresh network namespace where no port is taken yet, so any would do; this
     * one differs between runs.
     */
    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }
}

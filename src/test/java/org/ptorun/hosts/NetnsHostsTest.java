package org.ptorun.hosts;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The harness of {@link AcrossHostsE2ETest} on its own, with no native library: two hosts
 * reach each other over the bridge, each process's /dev/shm is its own, a cut link
 * partitions, and close() leaves no process and no namespace behind. Root only: it fails
 * (never skips) elsewhere, as the end-to-end test would.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class NetnsHostsTest {

    private static final long CHILD_SECONDS = 60;

    @TempDir
    Path dir;

    /** A probe ({@link HostProbeMain}) in {@code host} with pipes, and the first line it printed. */
    private static Started startPiped(NetnsHosts hosts, int host, String... args) throws Exception {
        Process p = hosts.start(host, NetnsHosts.javaCommand(HostProbeMain.class, List.of(args)));
        BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
        String first = out.readLine(); // blocks until the probe is ready, or null once it ended
        if (first == null) {
            p.waitFor(CHILD_SECONDS, TimeUnit.SECONDS);
            throw new AssertionError("probe " + List.of(args) + " in host " + host + " ended without a line: "
                    + new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8));
        }
        return new Started(p, first);
    }

    private record Started(Process process, String firstLine) {
        int port() {
            assertThat(firstLine).startsWith("listening ");
            return Integer.parseInt(firstLine.substring("listening ".length()));
        }
    }

    /** Runs a probe in {@code host} to its end; its exit status, output and errors. */
    private Ran run(NetnsHosts hosts, int host, String... args) throws Exception {
        String name = "probe-" + host + "-" + System.nanoTime();
        Path out = dir.resolve(name + ".out");
        Path err = dir.resolve(name + ".err");
        Process p = hosts.start(host, NetnsHosts.javaCommand(HostProbeMain.class, List.of(args)), out, err);
        assertThat(p.waitFor(CHILD_SECONDS, TimeUnit.SECONDS)).as("probe %s ended", List.of(args)).isTrue();
        return new Ran(p.exitValue(), Files.readString(out), Files.readString(err));
    }

    private record Ran(int status, String out, String err) {
    }

    @Test
    void aProcessInOneHostReachesAListenerInAnotherOverTheBridge() throws Exception {
        try (NetnsHosts hosts = new NetnsHosts(2)) {
            assertThat(hosts.address(0)).matches("10\\.79\\.\\d+\\.1");
            assertThat(hosts.address(1)).matches("10\\.79\\.\\d+\\.2");
            Started listener = startPiped(hosts, 0, "listen", hosts.address(0));
            Ran ping = run(hosts, 1, "connect", hosts.address(0), Integer.toString(listener.port()), "10000");
            assertThat(ping.status()).as(ping.err()).isZero();
            assertThat(ping.out()).contains("pong ping " + hosts.address(0));
            // host 0 does not have host 1's address: the listener is not on host 1
            Ran wrong = run(hosts, 1, "connect", hosts.address(1), Integer.toString(listener.port()), "10000");
            assertThat(wrong.status()).as(wrong.out()).isEqualTo(2);
            assertThat(wrong.err()).contains("Connection refused");
            listener.process().getOutputStream().close();
            assertThat(listener.process().waitFor(CHILD_SECONDS, TimeUnit.SECONDS)).isTrue();
            assertThat(listener.process().exitValue()).isZero();
        }
    }

    @Test
    void everyProcessHasAPrivateDevShm() throws Exception {
        String name = "ptoh-probe-" + ProcessHandle.current().pid() + "-" + System.nanoTime();
        try (NetnsHosts hosts = new NetnsHosts(2)) {
            Started holder = startPiped(hosts, 0, "shm-hold", name);
            assertThat(holder.firstLine()).isEqualTo("created /dev/shm/" + name);
            assertThat(Path.of("/dev/shm", name)).as("the root namespace's /dev/shm").doesNotExist();
            Ran otherHost = run(hosts, 1, "shm-absent", name);
            assertThat(otherHost.status()).as(otherHost.err()).isZero();
            Ran sameHost = run(hosts, 0, "shm-absent", name);
            assertThat(sameHost.status()).as(sameHost.err()).isZero();
            holder.process().getOutputStream().close();
            assertThat(holder.process().waitFor(CHILD_SECONDS, TimeUnit.SECONDS)).isTrue();
            assertThat(holder.process().exitValue()).as("the holder still saw its file").isZero();
        }
    }

    @Test
    void aCutLinkPartitionsTheHostAndARestoredOneJoinsItAgain() throws Exception {
        try (NetnsHosts hosts = new NetnsHosts(2)) {
            Started listener = startPiped(hosts, 0, "listen", hosts.address(0));
            String port = Integer.toString(listener.port());
            assertThat(run(hosts, 1, "connect", hosts.address(0), port, "10000").status()).isZero();
            hosts.cutLink(1);
            Ran cut = run(hosts, 1, "connect", hosts.address(0), port, "2000");
            assertThat(cut.status()).as(cut.out()).isEqualTo(2);
            assertThat(cut.err()).containsIgnoringCase("timed out");
            hosts.restoreLink(1);
            Ran again = run(hosts, 1, "connect", hosts.address(0), port, "10000");
            assertThat(again.status()).as(again.err()).isZero();
        }
    }

    @Test
    void closeEndsEveryProcessAndRemovesEveryNamespaceAndIsIdempotent() throws Exception {
        NetnsHosts hosts = new NetnsHosts(3);
        List<Process> processes = new ArrayList<>();
        try {
            assertThat(NetnsHosts.namespaces()).contains(hosts.prefix() + "br", hosts.namespace(0),
                    hosts.namespace(1), hosts.namespace(2));
            for (int h = 0; h < 3; h++) {
                processes.add(startPiped(hosts, h, "listen", hosts.address(h)).process()); // runs until its input ends
            }
        } finally {
            hosts.close();
        }
        for (Process p : processes) {
            assertThat(p.isAlive()).isFalse();
        }
        assertThat(NetnsHosts.namespaces()).noneMatch(n -> n.startsWith(hosts.prefix()));
        hosts.close();
    }

    @Test
    void aConstructionThatFailsHalfWayRemovesWhatItMadeAndSaysWhy() {
        int next = NetnsHosts.nextInstance();
        String taken = NetnsHosts.name(next, "h1"); // the namespace of the next instance's second host
        List<String> before = NetnsHosts.namespaces();
        assertThat(before).doesNotContain(taken);
        try {
            runIp("netns", "add", taken);
            assertThatThrownBy(() -> new NetnsHosts(2))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("ip netns add " + taken + " failed");
            assertThat(NetnsHosts.namespaces()).as("the half-made instance's namespaces, but the one taken before")
                    .filteredOn(n -> n.startsWith(NetnsHosts.name(next, ""))).containsExactly(taken);
        } finally {
            runIp("netns", "del", taken);
        }
    }

    private static void runIp(String... args) {
        try {
            List<String> argv = new ArrayList<>(List.of("ip"));
            argv.addAll(List.of(args));
            Process p = new ProcessBuilder(argv).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
            assertThat(p.exitValue()).as(String.join(" ", argv) + ": " + out).isZero();
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    @Test
    void twoInstancesHaveTheirOwnNamesAndAddresses() {
        try (NetnsHosts a = new NetnsHosts(1); NetnsHosts b = new NetnsHosts(1)) {
            assertThat(a.prefix()).isNotEqualTo(b.prefix());
            assertThat(a.address(0)).isNotEqualTo(b.address(0));
        }
    }

    @Test
    void theChildJvmCommandForwardsTheLibrariesProperties() {
        List<String> command = NetnsHosts.javaCommand(HostProbeMain.class, List.of("a", "b"));
        assertThat(command.get(0)).isEqualTo(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        assertThat(command).containsSequence("-cp", System.getProperty("java.class.path"));
        assertThat(command.subList(command.size() - 3, command.size()))
                .containsExactly(HostProbeMain.class.getName(), "a", "b");
        String libDir = System.getProperty("ptorun.libDir");
        assertThat(libDir).as("ptorun.libDir (set by the pom's surefire configuration)").isNotNull();
        assertThat(command).contains("-Dptorun.libDir=" + libDir);
    }
}

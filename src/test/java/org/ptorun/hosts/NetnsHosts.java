package org.ptorun.hosts;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * {@code H} "hosts" on this machine for tests of groups that span hosts: each host is a Linux
 * network namespace with a veth ({@code eth0}, address {@code 10.79.<instance>.<host+1>/24})
 * whose peer is a port of a bridge living in one more namespace of its own, so the root
 * namespace's interfaces and routes are never touched. Every process {@link #start started}
 * in a host also gets a private {@code /dev/shm} (a tmpfs in a mount namespace of its own),
 * so no shared-memory path exists between hosts (nor between two processes of one host).
 *
 * <p>Namespaces are named {@code ptoh-<pid>-<instance>-h<host>} and {@code ...-br}: unique
 * per instance in this JVM and across JVMs. {@link #close()} destroys every process started
 * (with its descendants) and deletes every namespace made; it is safe after a partial
 * construction, and the constructor calls it itself when it fails.
 *
 * <p>Root only: when not root, or when {@code ip} fails, the constructor throws saying why,
 * so a test using it fails rather than skips. Same recipe as src/test/c/gloo/run_netns_test.sh.
 */
public final class NetnsHosts implements AutoCloseable {

    private static final AtomicInteger INSTANCES = new AtomicInteger();
    private static final long IP_TIMEOUT_SECONDS = 30;
    /** How long close() waits for a destroyed process (it was sent SIGKILL) to be gone. */
    private static final long KILL_WAIT_SECONDS = 30;

    private final String prefix;
    private final int instance;
    private final int hosts;
    private final String bridge;
    private final List<String> made = new ArrayList<>();
    private final List<Process> started = new ArrayList<>();
    private boolean closed;

    /**
     * Makes {@code hosts} hosts (1..250) on a bridge.
     *
     * @throws IllegalStateException when not root or when a namespace, link or address cannot be made
     *         (everything made so far is removed first)
     */
    public NetnsHosts(int hosts) {
        if (hosts < 1 || hosts > 250) {
            throw new IllegalArgumentException("hosts " + hosts + " is not 1..250");
        }
        this.hosts = hosts;
        this.instance = INSTANCES.getAndIncrement();
        this.prefix = name(instance, "");
        this.bridge = prefix + "br";
        try {
            requireRoot();
            make();
        } catch (RuntimeException | Error e) {
            try {
                close();
            } catch (RuntimeException suppressed) {
                e.addSuppressed(suppressed);
            }
            throw e;
        }
    }

    private void make() {
        addNamespace(bridge);
        ip("-n", bridge, "link", "add", "br0", "type", "bridge");
        ip("-n", bridge, "link", "set", "br0", "up");
        ip("-n", bridge, "link", "set", "lo", "up");
        for (int h = 0; h < hosts; h++) {
            String ns = namespace(h);
            addNamespace(ns);
            ip("-n", ns, "link", "add", "eth0", "type", "veth", "peer", "name", port(h), "netns", bridge);
            ip("-n", bridge, "link", "set", port(h), "master", "br0", "up");
            ip("-n", ns, "addr", "add", address(h) + "/24", "dev", "eth0");
            ip("-n", ns, "link", "set", "eth0", "up");
            ip("-n", ns, "link", "set", "lo", "up");
        }
    }

    private void addNamespace(String name) {
        ip("netns", "add", name);
        synchronized (this) {
            made.add(name);
        }
    }

    /** The instance number the next NetnsHosts of this JVM gets (a test makes one fail on purpose). */
    static int nextInstance() {
        return INSTANCES.get();
    }

    /** The name namespace {@code ns} ("h0", "br") of instance {@code instance} gets. */
    static String name(int instance, String ns) {
        return "ptoh-" + ProcessHandle.current().pid() + "-" + instance + "-" + ns;
    }

    /** The number of hosts. */
    public int hosts() {
        return hosts;
    }

    /** What the names of this instance's namespaces start with: {@code ptoh-<pid>-<instance>-}. */
    public String prefix() {
        return prefix;
    }

    /** The network namespace of {@code host}. */
    public String namespace(int host) {
        checkHost(host);
        return prefix + "h" + host;
    }

    /** The IPv4 address of {@code host}'s interface: {@code 10.79.<instance>.<host+1>}. */
    public String address(int host) {
        checkHost(host);
        return "10.79." + (instance % 256) + "." + (host + 1);
    }

    /** The bridge's port (in the bridge's namespace) that {@code host}'s veth ends in. */
    private String port(int host) {
        return "p" + host;
    }

    /**
     * Runs {@code command} in {@code host}: in its network namespace, with a private
     * {@code /dev/shm}, its standard output and error to the files given (standard input empty).
     */
    public Process start(int host, List<String> command, Path stdout, Path stderr) {
        return start(host, command, pb -> pb.redirectInput(ProcessBuilder.Redirect.from(nullFile()))
                .redirectOutput(stdout.toFile()).redirectError(stderr.toFile()));
    }

    /**
     * {@link #start(int, List, Path, Path)} in the working directory {@code directory} (the file
     * system is the same in every host: only the network and /dev/shm are the host's own).
     */
    public Process start(int host, List<String> command, Path directory, Path stdout, Path stderr) {
        return start(host, command, pb -> pb.directory(directory.toFile())
                .redirectInput(ProcessBuilder.Redirect.from(nullFile()))
                .redirectOutput(stdout.toFile()).redirectError(stderr.toFile()));
    }

    /**
     * {@link #start(int, List, Path, Path)} with the process's standard input, output and error
     * as pipes of the returned {@link Process}: a test reads a line the process prints when it
     * is ready instead of waiting for a while, and ends it by closing its input.
     */
    public Process start(int host, List<String> command) {
        return start(host, command, pb -> pb);
    }

    private Process start(int host, List<String> command, java.util.function.UnaryOperator<ProcessBuilder> io) {
        checkHost(host);
        if (command.isEmpty()) {
            throw new IllegalArgumentException("an empty command");
        }
        List<String> argv = new ArrayList<>(List.of("ip", "netns", "exec", namespace(host), "unshare", "-m",
                "sh", "-c", "mount -t tmpfs tmpfs /dev/shm && exec \"$0\" \"$@\""));
        argv.addAll(command);
        synchronized (this) {
            if (closed) {
                throw new IllegalStateException(this + " is closed");
            }
            try {
                Process p = io.apply(new ProcessBuilder(argv)).start();
                started.add(p);
                return p;
            } catch (IOException e) {
                throw new IllegalStateException("cannot start " + argv + ": " + e.getMessage(), e);
            }
        }
    }

    /** Sets the bridge's end of {@code host}'s link down: the host is cut off from every other (a partition). */
    public void cutLink(int host) {
        checkHost(host);
        ip("-n", bridge, "link", "set", port(host), "down");
    }

    /**
     * Sets {@code host}'s link up again after {@link #cutLink}, and forgets the neighbours every
     * host failed to reach meanwhile (else their connects fail "no route to host" for a while).
     */
    public void restoreLink(int host) {
        checkHost(host);
        ip("-n", bridge, "link", "set", port(host), "up");
        for (int h = 0; h < hosts; h++) {
            ip("-n", namespace(h), "neigh", "flush", "dev", "eth0");
        }
    }

    /**
     * Destroys every process started (descendants first, then the process; SIGKILL) and waits
     * for them, then deletes every namespace made (their links go with them). Idempotent.
     *
     * @throws IllegalStateException when a process would not end or a namespace could not be
     *         deleted (after trying all of them)
     */
    @Override
    public void close() {
        List<Process> processes;
        List<String> namespaces;
        synchronized (this) {
            closed = true;
            processes = new ArrayList<>(started);
            namespaces = new ArrayList<>(made);
            started.clear();
            made.clear();
        }
        List<String> failures = new ArrayList<>();
        for (Process p : processes) {
            p.descendants().forEach(ProcessHandle::destroyForcibly);
            p.destroyForcibly();
        }
        for (Process p : processes) {
            try {
                if (!p.waitFor(KILL_WAIT_SECONDS, TimeUnit.SECONDS)) {
                    failures.add("process " + p.pid() + " did not end within " + KILL_WAIT_SECONDS + " s of SIGKILL");
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                failures.add("interrupted while waiting for process " + p.pid());
            }
        }
        // the hosts before the bridge: deleting a host's namespace removes its veth pair
        for (int i = namespaces.size() - 1; i >= 0; i--) {
            try {
                ip("netns", "del", namespaces.get(i));
            } catch (RuntimeException e) {
                failures.add(e.getMessage());
            }
        }
        if (!failures.isEmpty()) {
            throw new IllegalStateException(this + " was not cleaned up: " + String.join("; ", failures));
        }
    }

    @Override
    public String toString() {
        return "NetnsHosts[" + prefix + "*, " + hosts + " hosts]";
    }

    private void checkHost(int host) {
        if (host < 0 || host >= hosts) {
            throw new IllegalArgumentException("host " + host + " is not a host of 0.." + (hosts - 1));
        }
    }

    // ---- helpers ---------------------------------------------------------------------------------

    /** The names of the network namespaces of this machine ({@code ip netns list}, names only). */
    public static List<String> namespaces() {
        String out = ip("netns", "list");
        List<String> names = new ArrayList<>();
        for (String line : out.split("\n")) {
            String name = line.strip();
            if (!name.isEmpty()) {
                int space = name.indexOf(' ');
                names.add(space < 0 ? name : name.substring(0, space)); // "name (id: 3)"
            }
        }
        return names;
    }

    /**
     * A command that runs {@code mainClass} in a child JVM like this one: the java of
     * {@code java.home}, this class path, the system properties the tests hand the libraries
     * (every {@code ptorun.*} and {@code jna.*} one: ptorun.libDir, ptorun.nativeTestDir,
     * ptorun.isolation, ptorun.driver, ...), then {@code args}.
     */
    public static List<String> javaCommand(Class<?> mainClass, List<String> args) {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.add("-cp");
        command.add(System.getProperty("java.class.path"));
        for (Map.Entry<String, String> p : forwardedProperties().entrySet()) {
            command.add("-D" + p.getKey() + "=" + p.getValue());
        }
        command.add(mainClass.getName());
        command.addAll(args);
        return command;
    }

    static Map<String, String> forwardedProperties() {
        Map<String, String> out = new TreeMap<>();
        for (String name : System.getProperties().stringPropertyNames()) {
            if (name.startsWith("ptorun.") || name.startsWith("jna.")) {
                out.put(name, System.getProperty(name));
            }
        }
        return out;
    }

    private static void requireRoot() {
        String uid = null;
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/status"), StandardCharsets.UTF_8)) {
                if (line.startsWith("Uid:")) {
                    uid = line.substring(4).strip().split("\\s+")[1]; // real, effective, ...
                }
            }
        } catch (IOException e) {
            throw new IllegalStateException("NetnsHosts cannot tell whether it runs as root (/proc/self/status: "
                    + e.getMessage() + ")", e);
        }
        if (!"0".equals(uid)) {
            throw new IllegalStateException("NetnsHosts must run as root to make network namespaces (effective uid "
                    + uid + ")");
        }
    }

    /** Runs {@code ip args...} and returns its output. @throws IllegalStateException when it fails */
    private static String ip(String... args) {
        List<String> argv = new ArrayList<>(List.of("ip"));
        argv.addAll(Arrays.asList(args));
        Process p;
        try {
            p = new ProcessBuilder(argv).redirectErrorStream(true)
                    .redirectInput(ProcessBuilder.Redirect.from(nullFile())).start();
        } catch (IOException e) {
            throw new IllegalStateException("cannot run " + String.join(" ", argv) + " (is iproute2 installed?): "
                    + e.getMessage(), e);
        }
        try (InputStream in = p.getInputStream()) {
            String out = new String(in.readAllBytes(), StandardCharsets.UTF_8); // ends when ip does
            if (!p.waitFor(IP_TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new IllegalStateException(String.join(" ", argv) + " did not end within "
                        + IP_TIMEOUT_SECONDS + " s");
            }
            if (p.exitValue() != 0) {
                throw new IllegalStateException(String.join(" ", argv) + " failed (exit " + p.exitValue() + "): "
                        + out.strip());
            }
            return out;
        } catch (IOException e) {
            throw new IllegalStateException("cannot read the output of " + String.join(" ", argv), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            p.destroyForcibly();
            throw new IllegalStateException("interrupted while running " + String.join(" ", argv), e);
        }
    }

    private static java.io.File nullFile() {
        return new java.io.File("/dev/null");
    }
}

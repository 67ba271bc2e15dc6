package org.ptorun.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.ptorun.CommGroup;
import org.ptorun.hosts.NetnsHosts;

/**
 * The packaged jar as a user gets it (run by Failsafe in {@code integration-test}, after
 * {@code package}): each test starts a child JVM whose class path is the built jar, JNA
 * and SLF4J only — not {@code target/classes} — in a fresh working folder, running
 * {@code src/it/jar-smoke/JarSmoke.java} as a single source file (docs/java.md, Loading).
 */
class PackagedJarIT {

    private static final List<String> VARIANTS = List.of(
            "a2a3/sim/hbg", "a2a3/sim/trb", "a2a3/onboard/hbg", "a2a3/onboard/trb",
            "a5/sim/hbg", "a5/sim/trb", "a5/onboard/hbg", "a5/onboard/trb");

    @TempDir
    Path work;

    @Test
    void allEightLibrariesRunFromTheJar() throws Exception {
        Path tmp = Files.createDirectory(work.resolve("tmp"));
        JarChild.Outcome o = run(List.of("--enable-native-access=ALL-UNNAMED", "-Djava.io.tmpdir=" + tmp), Map.of(), "all");
        assertThat(o.exitCode()).as(o.output()).isZero();
        for (String v : VARIANTS) {
            String line = o.output().lines().filter(l -> l.startsWith("OK " + v + " ")).findFirst().orElse("");
            assertThat(line).as("%s in:%n%s", v, o.output())
                    .contains(tmp.resolve("ptorun-").toString())
                    .contains("/libptorun_" + v.replace('/', '_') + ".so");
            if (v.contains("onboard")) {
                assertThat(line).as("the bundled driver, extracted beside the runner")
                        .matches(".* from (\\S+)/libptorun_\\S+\\.so driver \\1/libptorun_emudrv\\.so in IN_PROCESS");
            }
        }
        try (Stream<Path> left = Files.list(tmp)) {
            assertThat(left).as("the private folder is deleted at exit").isEmpty();
        }
    }

    /**
     * The same in process isolation: every chip in a chip host process, the executable and
     * the proxy library extracted from the jar beside the variant libraries; nothing of them
     * is left once the JVM exits.
     */
    @Test
    void allEightLibrariesRunFromTheJarInChipProcesses() throws Exception {
        Path tmp = Files.createDirectory(work.resolve("tmp"));
        JarChild.Outcome o = run(List.of("--enable-native-access=ALL-UNNAMED", "-Djava.io.tmpdir=" + tmp,
                "-Dptorun.isolation=process"), Map.of(), "all");
        assertThat(o.exitCode()).as(o.output()).isZero();
        for (String v : VARIANTS) {
            assertThat(o.output()).as("%s in:%n%s", v, o.output()).containsPattern("OK " + v + " from "
                    + java.util.regex.Pattern.quote(tmp.resolve("ptorun-").toString()) + ".* in PROCESS");
        }
        try (Stream<Path> left = Files.list(tmp)) {
            assertThat(left).as("the private folder is deleted at exit").isEmpty();
        }
        try (Stream<ProcessHandle> all = ProcessHandle.allProcesses()) {
            assertThat(all.filter(p -> p.info().command().orElse("").startsWith(tmp.toString())))
                    .as("no chip host outlives its JVM").isEmpty();
        }
    }

    /**
     * A group across two hosts from the jar: each host a network namespace whose JVM has a
     * private /dev/shm, two ranks each, on all eight libraries (the multi-host plugin is
     * extracted from the jar beside the libraries); every rank checks the allreduce.
     */
    @Test
    void aGroupAcrossHostsRunsFromTheJar() throws Exception {
        try (NetnsHosts hosts = new NetnsHosts(2)) {
            List<String> rootInfos = new ArrayList<>();
            for (int v = 0; v < VARIANTS.size(); v++) {
                rootInfos.add(CommGroup.newRootInfo(new InetSocketAddress(InetAddress.getByName(hosts.address(0)),
                        40000 + v))); // a fresh namespace: every port is free
            }
            List<Process> children = new ArrayList<>();
            List<Path> outputs = new ArrayList<>();
            for (int h = 0; h < 2; h++) {
                List<String> args = new ArrayList<>(List.of("hosts", Integer.toString(2 * h), "2", "4"));
                args.addAll(rootInfos);
                JarChild.Launch launch = JarChild.prepare(work, true, List.of("--enable-native-access=ALL-UNNAMED",
                        "-Djava.io.tmpdir=" + Files.createDirectories(work.resolve("tmp" + h))), args.toArray(String[]::new));
                Path out = work.resolve("host" + h + ".out");
                outputs.add(out);
                children.add(hosts.start(h, launch.command(), launch.dir(), out, work.resolve("host" + h + ".err")));
            }
            for (int h = 0; h < 2; h++) {
                assertThat(children.get(h).waitFor(300, TimeUnit.SECONDS)).as("host %d ends", h).isTrue();
                String output = Files.readString(outputs.get(h)) + Files.readString(work.resolve("host" + h + ".err"));
                assertThat(children.get(h).exitValue()).as(output).isZero();
                for (String v : VARIANTS) {
                    assertThat(output).contains("HOSTS OK " + v + " ranks " + 2 * h + ".." + (2 * h + 1));
                }
            }
        }
    }

    @Test
    void thePropertyPinsTheDriverOverTheEnvironment() throws Exception {
        Path driver = work.resolve("my-driver.so");
        try (ZipFile jar = new ZipFile(JarChild.jar().toFile())) {
            ZipEntry e = jar.getEntry("linux-x86-64/libptorun_emudrv.so");
            try (InputStream in = jar.getInputStream(e)) {
                Files.copy(in, driver, StandardCopyOption.REPLACE_EXISTING);
            }
        }
        JarChild.Outcome o = run(List.of("--enable-native-access=ALL-UNNAMED", "-Dptorun.driver=" + driver),
                Map.of("PTORUN_DRIVER", work.resolve("absent.so").toString()), "a2a3/onboard/hbg", "a5/onboard/trb");
        assertThat(o.exitCode()).as(o.output()).isZero();
        assertThat(o.output()).contains("OK a2a3/onboard/hbg ").contains("OK a5/onboard/trb ")
                .containsPattern("driver \\S+/libptorun_driver\\.so");
    }

    @Test
    void aDriverThatDoesNotLoadAtOpenIsALibraryLoadException() throws Exception {
        Path absent = work.resolve("absent-driver.so");
        JarChild.Outcome o = run(List.of("--enable-native-access=ALL-UNNAMED"), Map.of("PTORUN_DRIVER", absent.toString()),
                "open:a5/onboard/hbg");
        assertThat(o.exitCode()).as(o.output()).isEqualTo(3);
        assertThat(o.output()).contains("FAIL org.ptorun.LibraryLoadException: chip a5/onboard/hbg device 0")
                .contains(absent + " (PTORUN_DRIVER): cannot load it");
    }

    @Test
    void aMissingPinnedDriverIsALibraryLoadException() throws Exception {
        Path absent = work.resolve("absent-driver.so");
        JarChild.Outcome o = run(List.of("--enable-native-access=ALL-UNNAMED", "-Dptorun.driver=" + absent), Map.of(),
                "open:a2a3/onboard/trb");
        assertThat(o.exitCode()).as(o.output()).isEqualTo(3);
        assertThat(o.output()).contains("FAIL org.ptorun.LibraryLoadException: cannot load the device driver"
                + " -Dptorun.driver=" + absent + ": no such file");
    }

    @Test
    void withoutJnaItIsALibraryLoadException() throws Exception {
        JarChild.Outcome o = run(false, List.of(), Map.of(), "a5/sim/hbg");
        assertThat(o.exitCode()).as(o.output()).isEqualTo(3);
        assertThat(o.output()).contains("FAIL org.ptorun.LibraryLoadException: cannot load libptorun_a5_sim_hbg.so:"
                + " JNA is missing or could not initialise");
    }

    private JarChild.Outcome run(List<String> jvmOptions, Map<String, String> env, String... args)
            throws IOException, InterruptedException {
        return JarChild.run(work, true, jvmOptions, env, args);
    }

    private JarChild.Outcome run(boolean withJna, List<String> jvmOptions, Map<String, String> env, String... args)
            throws IOException, InterruptedException {
        return JarChild.run(work, withJna, jvmOptions, env, args);
    }
}

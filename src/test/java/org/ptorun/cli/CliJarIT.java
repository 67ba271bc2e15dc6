package org.ptorun.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The packaged -cli jar, run as `java -jar` in a child JVM (failsafe, after package). */
class CliJarIT {

    private static Path cliJar() {
        Path jar = Path.of(System.getProperty("ptorun.cliJar", "target/ptorun-cli.jar"));
        assertThat(jar).as("the -cli jar (mvn package builds it)").isRegularFile();
        return jar;
    }

    private static String[] java(String... args) {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        List<String> command = new java.util.ArrayList<>(List.of(java, "-jar", cliJar().toString()));
        command.addAll(List.of(args));
        return command.toArray(String[]::new);
    }

    private static int run(Path output, String... args) throws Exception {
        Process p = new ProcessBuilder(java(args)).redirectErrorStream(true).redirectOutput(output.toFile()).start();
        assertThat(p.waitFor(120, TimeUnit.SECONDS)).as("finished").isTrue();
        return p.exitValue();
    }

    @Test
    void helpExitsZero() throws Exception {
        Path out = Files.createTempFile("ptorun-help", ".txt");
        try {
            assertThat(run(out, "--help")).isZero();
            assertThat(Files.readString(out, StandardCharsets.UTF_8)).contains("Usage: ptorun", "inspect", "Exit codes:");
        } finally {
            Files.deleteIfExists(out);
        }
    }

    @Test
    void aDemoThatFailsEndsWithOneFailedVerdictAndExitsOne() throws Exception {
        Path out = Files.createTempFile("ptorun-demo-fails", ".txt");
        try {
            // a sim device of 8 MiB cannot stage the chain's 28 MiB: the first prepare fails
            ProcessBuilder pb = new ProcessBuilder(java("demo", "--runs", "2")).redirectOutput(out.toFile())
                    .redirectError(ProcessBuilder.Redirect.DISCARD);
            pb.environment().put("PTORUN_SIM_DEVICE_MEMORY", "8M");
            Process p = pb.start();
            assertThat(p.waitFor(120, TimeUnit.SECONDS)).as("finished").isTrue();
            String text = Files.readString(out, StandardCharsets.UTF_8);
            assertThat(p.exitValue()).as(text).isEqualTo(1);
            List<String> lines = text.lines().toList();
            assertThat(lines.get(lines.size() - 1)).startsWith("FAILED: the demo on a2a3/sim/hbg: ")
                    .contains("DeviceOutOfMemoryException");
            assertThat(lines).filteredOn(l -> l.startsWith("ok:") || l.startsWith("FAILED:")).hasSize(1);
        } finally {
            Files.deleteIfExists(out);
        }
    }

    @Test
    void inspectFromTheJarSaysWhichJarAndNotTheTemporaryCopy() throws Exception {
        Path out = Files.createTempFile("ptorun-inspect", ".txt");
        try {
            int rc = run(out, "inspect", "--variant", "a2a3/onboard/hbg");
            String text = Files.readString(out, StandardCharsets.UTF_8);
            assertThat(rc).as(text).isZero();
            assertThat(text).contains("libptorun_a2a3_onboard_hbg.so from the jar " + cliJar().toAbsolutePath().normalize(),
                    "contract      ok, ", "in flight     2 runs at most",
                    "driver        the emulated driver bundled with ptorun");
            assertThat(text).as("the extraction folder is the JVM's business").doesNotContainPattern("ptorun-[0-9]+-");
        } finally {
            Files.deleteIfExists(out);
        }
    }

    @Test
    void aUsageErrorExitsTwo() throws Exception {
        Path out = Files.createTempFile("ptorun-usage", ".txt");
        try {
            assertThat(run(out, "no-such-command")).isEqualTo(2);
        } finally {
            Files.deleteIfExists(out);
        }
    }

    @Test
    void theDemoRunsFromTheJar() throws Exception {
        Path out = Files.createTempFile("ptorun-demo", ".txt");
        try {
            int rc = run(out, "demo", "--runs", "2");
            String text = Files.readString(out, StandardCharsets.UTF_8);
            assertThat(rc).as(text).isZero();
            assertThat(text).contains("run 2: done")
                    .contains("ok: 2 runs on a2a3/sim/hbg, every result equal to plain Java");
        } finally {
            Files.deleteIfExists(out);
        }
    }
}

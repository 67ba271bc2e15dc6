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
            assertThat(text).contains("run 2: finalized");
        } finally {
            Files.deleteIfExists(out);
        }
    }
}

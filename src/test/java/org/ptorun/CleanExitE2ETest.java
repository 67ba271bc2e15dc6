package org.ptorun;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A program using ptorun ends when its {@code main} returns, at once: no thread of
 * ptorun keeps the JVM (or {@code mvn exec:java}, which interrupts and joins the threads
 * a program leaves) waiting. Each test runs {@link CleanExitMain} in a child JVM on
 * a2a3/sim/hbg, with the test class path and the properties Surefire gives this JVM.
 */
class CleanExitE2ETest {

    /** Generous for a JVM's own shutdown on a loaded machine; a lingering thread costs seconds. */
    private static final long EXIT_WITHIN_MS = 1_000;

    /**
     * The child prints the wall-clock time right after its last close and returns from
     * main; the parent notes the wall-clock time at which it sees the child's exit (the
     * process reaper's notice, not a poll), so the difference bounds how long the JVM took
     * to end after the program was done, from above.
     */
    @Test
    void aProgramThatClosedEverythingExitsWithinASecondOfItsLastClose() throws Exception {
        Child child = run("plain");
        assertThat(child.exitCode()).as(child.output()).isZero();
        long closedAt = child.lines().stream().filter(l -> l.startsWith("closed-at ")).findFirst()
                .map(l -> Long.parseLong(l.substring("closed-at ".length()))).orElseThrow(
                        () -> new AssertionError("no closed-at line in:\n" + child.output()));
        assertThat(child.exitSeenAt() - closedAt)
                .as("ms from the last close to the JVM's exit\n%s", child.output())
                .isLessThan(EXIT_WITHIN_MS);
        assertThat(child.lines()).as("nothing logged: no leak, no warning").containsExactly(
                "closed-at " + closedAt);
    }

    /**
     * As under {@code mvn exec:java}: the program leaves a background Worker and an
     * acceptance word open; every thread of its thread group — the leak net's, the
     * dispatcher's among them — ends once interrupted, so exec:java has nothing to wait
     * for ("will linger despite being asked to die via interruption").
     */
    @Test
    void underExecJavaEveryThreadOfTheProgramEndsWhenInterrupted() throws Exception {
        Child child = run("exec");
        assertThat(child.exitCode()).as(child.output()).isZero();
        String found = child.lines().stream().filter(l -> l.startsWith("group-threads ")).findFirst()
                .orElseThrow(() -> new AssertionError("no group-threads line in:\n" + child.output()));
        assertThat(found).as("the threads the test is about were alive").contains("ptorun-leak-net")
                .contains("ptorun-dispatch-0");
        assertThat(child.lines()).as(child.output()).contains("lingering none");
    }

    private record Child(int exitCode, long exitSeenAt, List<String> lines) {
        String output() {
            return String.join("\n", lines);
        }
    }

    private static Child run(String mode) throws Exception {
        List<String> command = new ArrayList<>();
        command.add(ProcessHandle.current().info().command()
                .orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString()));
        command.add("--enable-native-access=ALL-UNNAMED");
        for (String p : List.of("ptorun.nativeTestDir", "ptorun.libDir", "slf4j.provider",
                "slf4j.internal.verbosity")) {
            String value = System.getProperty(p);
            if (value != null) {
                command.add("-D" + p + "=" + value);
            }
        }
        command.add("-cp");
        command.add(System.getProperty("java.class.path"));
        command.add(CleanExitMain.class.getName());
        command.add(mode);
        command.add("a2a3/sim/hbg");
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        CompletableFuture<Long> exitSeen = process.onExit().thenApply(p -> System.currentTimeMillis());
        List<String> lines = new ArrayList<>();
        try (BufferedReader out = new BufferedReader(
                new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
            for (String line; (line = out.readLine()) != null; ) {
                lines.add(line);
            }
        } finally {
            if (!process.waitFor(120, TimeUnit.SECONDS)) {
                process.destroyForcibly();
            }
        }
        return new Child(process.exitValue(), exitSeen.get(60, TimeUnit.SECONDS), lines);
    }
}

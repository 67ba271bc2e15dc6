package org.ptorun.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * P10's harness, and the fix it measures: a fresh JVM's first run goes without the Flight
 * Recorder. The first {@code isEnabled()} of a JFR event class starts JFR's metadata
 * repository (a hundred {@code jdk.jfr.internal} classes, 120–470 ms of the first
 * prepare); RunEvents touches its event classes only once a recording made the recorder
 * initialized (RunEventsE2ETest shows the events under a recording).
 */
class FirstRunTest {

    @Test
    void aFreshJvmsFirstTrivialRunAndDemoPrepareLoadNoFlightRecorderInternals() throws Exception {
        for (String mode : List.of("trivial", "demo")) {
            List<String> lines = runFirstRun(mode);
            assertThat(lines).as("%s: FirstRun's result line", mode)
                    .anyMatch(l -> l.matches("^(total|prepare1)=[0-9]+ .*"));
            assertThat(lines).as("%s: classes loaded", mode)
                    .anyMatch(l -> l.contains("org.ptorun.RunEvents "))
                    .noneMatch(l -> l.contains(" jdk.jfr.internal."));
        }
    }

    /** FirstRun in a child JVM logging every class it loads; its output lines. */
    private static List<String> runFirstRun(String mode) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.add("--enable-native-access=ALL-UNNAMED");
        command.add("-Xlog:class+load=info:stdout");
        for (String p : List.of("ptorun.nativeTestDir", "ptorun.libDir")) {
            command.add("-D" + p + "=" + System.getProperty(p));
        }
        command.add("-cp");
        command.add(System.getProperty("java.class.path"));
        command.add(FirstRun.class.getName());
        command.add(mode);
        command.add("a2a3/sim/hbg");
        Process child = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(child.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(child.waitFor()).as(out).isZero();
        return out.lines().toList();
    }
}

package org.ptorun.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The packaged jar in a JVM that denies native access. {@code --illegal-native-access}
 * exists from Java 24 on, so Failsafe runs this class only on a JDK of 24 or later (the
 * {@code jdk24-its} profile of the pom; CI's second pass runs on Temurin 25): on Java 17
 * native access cannot be denied and there is nothing to test.
 */
class DeniedNativeAccessIT {

    @TempDir
    Path work;

    @Test
    void deniedNativeAccessIsALibraryLoadExceptionNamingTheFlag() throws Exception {
        JarChild.Outcome o = JarChild.run(work, true, List.of("--illegal-native-access=deny"), Map.of(),
                "a2a3/sim/hbg");
        assertThat(o.exitCode()).as(o.output()).isEqualTo(3);
        assertThat(o.output()).contains("FAIL org.ptorun.LibraryLoadException: cannot load libptorun_a2a3_sim_hbg.so")
                .contains("--enable-native-access=ALL-UNNAMED");
    }
}

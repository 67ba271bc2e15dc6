package org.ptorun.hosts;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.ptorun.Variant;

/**
 * A machine without Gloo: the libraries load a multi-host plugin only for a group across
 * hosts, so there (and only there) they fail, naming the package to install. The child
 * ({@link NoGlooMain}) finds copies of every native file first on its class path, beside a
 * plugin that needs a Gloo that does not exist (built by the native tests' Makefile).
 */
class NoGlooE2ETest {

    @Test
    void aGroupAcrossHostsNamesThePackageAndAGroupOnOneHostStillWorks(@TempDir Path work) throws Exception {
        Path natives = Files.createDirectories(work.resolve("cp").resolve("linux-x86-64"));
        try (Stream<Path> files = Files.list(Path.of("target", "classes", "linux-x86-64"))) {
            for (Path f : files.toList()) {
                if (!f.getFileName().toString().equals("libptorun_gloo.so")) {
                    Files.copy(f, natives.resolve(f.getFileName()), StandardCopyOption.COPY_ATTRIBUTES);
                }
            }
        }
        Path stub = Path.of(System.getProperty("ptorun.nativeTestDir"), "nogloo", "linux-x86-64", "libptorun_gloo.so");
        Files.copy(stub, natives.resolve("libptorun_gloo.so"));

        List<String> command = new ArrayList<>(NetnsHosts.javaCommand(NoGlooMain.class, List.of()));
        int cp = command.indexOf("-cp") + 1;
        command.set(cp, work.resolve("cp") + java.io.File.pathSeparator + command.get(cp));
        Process child = new ProcessBuilder(command).directory(work.toFile()).redirectErrorStream(true).start();
        byte[] out = child.getInputStream().readAllBytes();
        assertThat(child.waitFor(120, TimeUnit.SECONDS)).isTrue();
        String output = new String(out, StandardCharsets.UTF_8);
        assertThat(child.exitValue()).as(output).isZero();
        for (Variant v : Variant.all()) {
            assertThat(output).as(output)
                    .containsPattern("REFUSED " + v + " .*install the package libgloo0 .*libgloo\\.so\\.999")
                    .contains("LOCAL " + v + " ok");
        }
    }
}

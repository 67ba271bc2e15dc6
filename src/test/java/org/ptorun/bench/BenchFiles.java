package org.ptorun.bench;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import org.ptorun.Variant;

/**
 * Where the suite finds what the build made: the test libraries (system property
 * {@code ptorun.nativeTestDir}) and the device images next to the host libraries
 * ({@code ptorun.libDir}); both are set by the pom for the suite and for Surefire.
 */
final class BenchFiles {

    private BenchFiles() {
    }

    static Path nativeTestFile(String fileName) {
        return existing(directory("ptorun.nativeTestDir").resolve(fileName), "src/test/c (make)");
    }

    static Path deviceImage(Variant.Arch arch, String kind) {
        String file = "libptorun_" + kind + "_" + arch.name().toLowerCase(Locale.ROOT) + ".so";
        return existing(directory("ptorun.libDir").resolve(file), "src/main/c (make)");
    }

    private static Path directory(String property) {
        String dir = System.getProperty(property);
        if (dir == null) {
            throw new IllegalStateException("system property " + property + " is not set (the pom sets it;"
                    + " run the suite with mvn -Pbench verify)");
        }
        return Path.of(dir);
    }

    private static Path existing(Path file, String builtBy) {
        if (!Files.isRegularFile(file)) {
            throw new IllegalStateException(file + " does not exist; it is built by " + builtBy);
        }
        return file;
    }
}

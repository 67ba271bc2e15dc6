package org.ptorun.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

/**
 * A child JVM whose class path is the built jar, JNA and SLF4J only — not
 * {@code target/classes} — in a fresh working folder under {@code work}, running
 * {@code src/it/jar-smoke/JarSmoke.java} as a single source file.
 */
final class JarChild {

    record Outcome(int exitCode, String output) {
    }

    private JarChild() {
    }

    static Path jar() {
        Path jar = Path.of(System.getProperty("ptorun.jar", "target/ptorun.jar"));
        assertThat(jar).as("the packaged jar (run by mvn verify, after package)").isRegularFile();
        return jar;
    }

    /** The child's command and its fresh working folder. */
    record Launch(List<String> command, Path dir) {
    }

    static Launch prepare(Path work, boolean withJna, List<String> jvmOptions, String... args) throws IOException {
        Path source = Path.of(System.getProperty("ptorun.itSource", "src/it/jar-smoke/JarSmoke.java"))
                .toAbsolutePath();
        List<String> classPath = new ArrayList<>();
        classPath.add(jar().toAbsolutePath().toString());
        for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
            String name = Path.of(entry).getFileName().toString();
            if ((withJna && name.startsWith("jna-")) || name.startsWith("slf4j-api-")
                    || name.startsWith("slf4j-simple-")) {
                classPath.add(entry);
            }
        }
        assertThat(classPath).as("jar, jna, slf4j-api, slf4j-simple").hasSize(withJna ? 4 : 3);
        Path dir = Files.createTempDirectory(work, "cwd");
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.addAll(jvmOptions);
        command.add("-cp");
        command.add(String.join(File.pathSeparator, classPath));
        command.add(source.toString());
        command.addAll(Arrays.asList(args));
        return new Launch(command, dir);
    }

    static Outcome run(Path work, boolean withJna, List<String> jvmOptions, Map<String, String> env, String... args)
            throws IOException, InterruptedException {
        Launch launch = prepare(work, withJna, jvmOptions, args);
        List<String> command = launch.command();
        Path dir = launch.dir();
        ProcessBuilder pb = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true);
        pb.environment().remove("PTORUN_DRIVER");
        pb.environment().putAll(env);
        Process p = pb.start();
        p.getOutputStream().close();
        byte[] out = p.getInputStream().readAllBytes();
        if (!p.waitFor(120, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError("the child JVM did not end: " + command);
        }
        String text = new String(out, StandardCharsets.UTF_8);
        return new Outcome(p.exitValue(), command.stream().collect(Collectors.joining(" ")) + "\n" + text);
    }
}

package org.ptorun;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * docs/getting-started.md holds only code the build compiles: every {@code java} and
 * {@code xml} block on the page is a piece of a file of examples/ (compared line by line,
 * indentation aside), and the first project depends on the version this build makes.
 */
class GettingStartedDocTest {

    private static final Path PAGE = Path.of("docs/getting-started.md");
    private static final Pattern BLOCK = Pattern.compile("```(java|xml)\\n(.*?)```", Pattern.DOTALL);

    @Test
    void everyCodeBlockIsAPieceOfAFileTheBuildCompiles() throws IOException {
        List<String> blocks = new ArrayList<>();
        Matcher m = BLOCK.matcher(Files.readString(PAGE));
        while (m.find()) {
            blocks.add(m.group(2));
        }
        assertThat(blocks).as("code blocks on the page").hasSizeGreaterThanOrEqualTo(4);
        List<List<String>> files = exampleFiles();
        for (String block : blocks) {
            List<String> lines = normalized(block);
            assertThat(files.stream().anyMatch(f -> containsRun(f, lines)))
                    .as("this block of %s is a piece of a file of examples/:%n%s", PAGE, block).isTrue();
        }
    }

    @Test
    void theFirstProjectDependsOnThisVersion() throws IOException {
        String version = System.getProperty("ptorun.version");
        assertThat(version).as("the build passes its version").isNotBlank();
        String pom = Files.readString(Path.of("examples/first-project/pom.xml"));
        assertThat(pom).contains("<artifactId>ptorun</artifactId>\n      <version>" + version + "</version>");
    }

    /** The lines of every .java file and pom.xml under examples/, normalized. */
    private static List<List<String>> exampleFiles() throws IOException {
        try (Stream<Path> paths = Files.walk(Path.of("examples"))) {
            return paths.filter(p -> p.toString().endsWith(".java") || p.getFileName().toString().equals("pom.xml"))
                    .map(GettingStartedDocTest::read).map(GettingStartedDocTest::normalized).toList();
        }
    }

    private static String read(Path p) {
        try {
            return Files.readString(p);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Trimmed, without blank lines. */
    private static List<String> normalized(String text) {
        return text.lines().map(String::strip).filter(l -> !l.isEmpty()).toList();
    }

    private static boolean containsRun(List<String> file, List<String> run) {
        for (int i = 0; i + run.size() <= file.size(); i++) {
            if (file.subList(i, i + run.size()).equals(run)) {
                return true;
            }
        }
        return false;
    }
}

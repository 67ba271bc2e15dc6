package org.ptorun;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Every relative link of README.md, CHANGELOG.md and docs/*.md reaches a file of the
 * repository, and every {@code #anchor} a heading of its page (GitHub's slugs), so a
 * renamed heading or a moved file cannot leave a dead link behind; and no doc, source or
 * build file names a design document outside the repository.
 */
class DocLinksTest {

    /** [text](target): the target up to the closing parenthesis, no spaces. */
    private static final Pattern LINK = Pattern.compile("\\[[^\\]]*\\]\\(([^)\\s]+)\\)");
    private static final Pattern HEADING = Pattern.compile("^#{1,6}\\s+(.*?)\\s*#*\\s*$");

    @Test
    void everyRelativeLinkAndAnchorResolves() throws IOException {
        List<String> dead = new ArrayList<>();
        int checked = 0;
        for (Path page : pages()) {
            for (String target : links(page)) {
                if (target.matches("^[a-z]+:.*")) {
                    continue; // https:, mailto: — not ours to check
                }
                checked++;
                int hash = target.indexOf('#');
                String file = hash < 0 ? target : target.substring(0, hash);
                Path resolved = file.isEmpty() ? page : page.resolveSibling(file).normalize();
                if (!Files.exists(resolved)) {
                    dead.add(page + ": " + target + " (no file " + resolved + ")");
                } else if (hash >= 0 && resolved.toString().endsWith(".md")
                        && !anchors(resolved).contains(target.substring(hash + 1))) {
                    dead.add(page + ": " + target + " (no heading with that anchor in " + resolved + ")");
                }
            }
        }
        assertThat(checked).as("links checked").isGreaterThan(10);
        assertThat(dead).as("dead links").isEmpty();
    }

    @Test
    void nothingNamesAFileOutsideTheRepository() throws IOException {
        Pattern outside = Pattern.compile("(?<![\\w/.-])design/[\\w-]+\\.md|\\.\\./shared/");
        List<String> found = new ArrayList<>();
        for (String root : List.of("README.md", "CHANGELOG.md", "pom.xml", "docs", "src", "examples", ".ci")) {
            try (Stream<Path> files = Files.walk(Path.of(root))) {
                for (Path f : files.filter(Files::isRegularFile).filter(DocLinksTest::isText).toList()) {
                    List<String> lines = Files.readAllLines(f);
                    for (int i = 0; i < lines.size(); i++) {
                        if (outside.matcher(lines.get(i)).find()) {
                            found.add(f + ":" + (i + 1) + ": " + lines.get(i).strip());
                        }
                    }
                }
            }
        }
        assertThat(found).as("references to files outside the repository").isEmpty();
    }

    private static boolean isText(Path f) {
        String name = f.getFileName().toString();
        return name.matches(".*\\.(md|java|c|h|xml|sh|txt|properties)$") || name.equals("Makefile")
                || name.equals("run");
    }

    @Test
    void slugsFollowGitHub() {
        assertThat(slug("The callable decoder (`format/chip_callable.*`, `format/program_decode.c`)"))
                .isEqualTo("the-callable-decoder-formatchip_callable-formatprogram_decodec");
        assertThat(slug("6. Nothing freed under a user")).isEqualTo("6-nothing-freed-under-a-user");
        assertThat(slug("Loading")).isEqualTo("loading");
    }

    private static List<Path> pages() throws IOException {
        List<Path> pages = new ArrayList<>(List.of(Path.of("README.md"), Path.of("CHANGELOG.md")));
        try (Stream<Path> docs = Files.list(Path.of("docs"))) {
            docs.filter(p -> p.toString().endsWith(".md")).sorted().forEach(pages::add);
        }
        return pages;
    }

    /** The link targets of a page, outside fenced code blocks. */
    private static List<String> links(Path page) throws IOException {
        List<String> out = new ArrayList<>();
        boolean fenced = false;
        for (String line : Files.readAllLines(page)) {
            if (line.strip().startsWith("```")) {
                fenced = !fenced;
                continue;
            }
            if (fenced) {
                continue;
            }
            Matcher m = LINK.matcher(line.replaceAll("`[^`]*`", ""));
            while (m.find()) {
                out.add(m.group(1));
            }
        }
        return out;
    }

    /** The anchors of a page's headings, numbered "-1", "-2" … when repeated, as GitHub does. */
    private static Set<String> anchors(Path page) throws IOException {
        Set<String> anchors = new HashSet<>();
        boolean fenced = false;
        for (String line : Files.readAllLines(page)) {
            if (line.strip().startsWith("```")) {
                fenced = !fenced;
                continue;
            }
            Matcher m = HEADING.matcher(line);
            if (!fenced && m.matches()) {
                String base = slug(m.group(1));
                String anchor = base;
                for (int n = 1; !anchors.add(anchor); n++) {
                    anchor = base + "-" + n;
                }
            }
        }
        return anchors;
    }

    /** GitHub's heading slug: lower case, punctuation dropped, spaces to hyphens. */
    static String slug(String heading) {
        String text = heading.replaceAll("\\[([^\\]]*)\\]\\([^)]*\\)", "$1"); // a link: its text
        return text.toLowerCase(Locale.ROOT).replaceAll("[^\\p{L}\\p{N}\\s_-]", "").replace(' ', '-');
    }
}

package org.ptorun.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;
import picocli.CommandLine;
import picocli.CommandLine.Model.OptionSpec;

/**
 * Every command line the docs quote — {@code ptorun …} and {@code java -jar …-cli.jar …} in
 * code, and {@code -Ddemo.args="…"} — parses with the command's own parser, so the docs
 * cannot drift from the command (docs/cli.md). A synopsis is read as a command line: an
 * optional group {@code [a | b]} becomes its first alternative, {@code ...} is dropped and
 * the placeholders (V, N, FILE, &lt;variant&gt;, &lt;command&gt;) become values. Help,
 * version and {@code inspect} run as well (they are quick); the others are parsed only:
 * a demo, a bench of 20 000 runs or {@code idle} on eight libraries would take minutes.
 */
class DocCommandLinesTest {

    /** Where the docs quote command lines: every page of docs/ and the README. */
    static List<Path> pages() throws IOException {
        List<Path> pages = new ArrayList<>();
        try (Stream<Path> docs = Files.list(Path.of("docs"))) {
            docs.filter(p -> p.toString().endsWith(".md")).sorted().forEach(pages::add);
        }
        pages.add(Path.of("README.md"));
        return pages;
    }

    /** One quoted command line: where, as written, and the arguments it stands for. */
    record Quoted(Path page, int line, String text, List<String> args) {
        @Override
        public String toString() {
            return page + ":" + line + ": " + text;
        }
    }

    private static final Pattern FENCE = Pattern.compile("(?s)```[a-z]*\\n(.*?)```");
    private static final Pattern INLINE = Pattern.compile("`([^`]+)`");
    private static final Pattern DEMO_ARGS = Pattern.compile("-Ddemo\\.args=\"([^\"]*)\"");
    private static final Pattern JAR = Pattern.compile("java\\s+-jar\\s+\\S*ptorun\\S*-cli\\.jar\\b(.*)");
    private static final Pattern PTORUN = Pattern.compile("^ptorun(\\s.*)?$");
    private static final Pattern GROUP = Pattern.compile("\\[([^\\[\\]]*)]");
    private static final Map<String, String> PLACEHOLDERS = Map.of(
            "V", "a2a3/sim/hbg", "<variant>", "a5/sim/trb", "N", "1000", "FILE", "target/doc-trace.json",
            "<command>", "inspect");

    /** Every command line quoted in {@code page}. */
    static List<Quoted> quoted(Path page) throws IOException {
        String text = Files.readString(page, StandardCharsets.UTF_8);
        List<Quoted> found = new ArrayList<>();
        // fenced blocks line by line, then inline code in the rest (blanked, so offsets keep)
        StringBuilder rest = new StringBuilder(text);
        Matcher fence = FENCE.matcher(text);
        while (fence.find()) {
            int at = fence.start(1);
            for (String line : fence.group(1).split("\n", -1)) {
                candidate(page, lineOf(text, at), line, found);
                at += line.length() + 1;
            }
            for (int i = fence.start(); i < fence.end(); i++) {
                if (rest.charAt(i) != '\n') {
                    rest.setCharAt(i, ' ');
                }
            }
        }
        Matcher inline = INLINE.matcher(rest);
        while (inline.find()) {
            candidate(page, lineOf(text, inline.start()), inline.group(1), found);
        }
        return found;
    }

    private static void candidate(Path page, int line, String code, List<Quoted> found) {
        String flat = code.replaceAll("\\s+", " ").trim();
        Matcher demoArgs = DEMO_ARGS.matcher(flat);
        if (demoArgs.find()) {
            found.add(new Quoted(page, line, flat, args(demoArgs.group(1))));
            return;
        }
        Matcher jar = JAR.matcher(flat);
        if (jar.find()) {
            found.add(new Quoted(page, line, flat, args(jar.group(1))));
            return;
        }
        Matcher ptorun = PTORUN.matcher(flat);
        // a bare `ptorun` names the program; "ptorun <command>: done/total ..." is an output line
        if (ptorun.matches() && ptorun.group(1) != null && !flat.contains(": ")) {
            found.add(new Quoted(page, line, flat, args(ptorun.group(1))));
        }
    }

    /** The arguments a quoted command line (or synopsis) stands for. */
    static List<String> args(String commandLine) {
        String s = commandLine.replace("\\|", "|");
        // the shell's part ends the command line
        for (String end : List.of(" | ", " 2>", " >", " && ", ";")) {
            int at = outsideGroups(s, end);
            if (at >= 0) {
                s = s.substring(0, at);
            }
        }
        for (Matcher g = GROUP.matcher(s); g.find(); g = GROUP.matcher(s)) {
            String first = g.group(1).split("\\|", -1)[0].trim();
            s = s.substring(0, g.start()) + first + s.substring(g.end());
        }
        List<String> args = new ArrayList<>();
        for (String token : s.trim().split("\\s+")) {
            if (token.isEmpty() || token.equals("...") || token.equals("…")) {
                continue;
            }
            String value = PLACEHOLDERS.getOrDefault(token, token);
            if (value.length() >= 2 && (value.startsWith("\"") && value.endsWith("\"")
                    || value.startsWith("'") && value.endsWith("'"))) {
                value = value.substring(1, value.length() - 1);
            }
            args.add(value);
        }
        return args;
    }

    private static int outsideGroups(String s, String needle) {
        int depth = 0;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '[') {
                depth++;
            } else if (c == ']') {
                depth--;
            } else if (depth == 0 && s.startsWith(needle, i)) {
                return i;
            }
        }
        return -1;
    }

    private static int lineOf(String text, int offset) {
        int line = 1;
        for (int i = 0; i < offset; i++) {
            if (text.charAt(i) == '\n') {
                line++;
            }
        }
        return line;
    }

    static List<Quoted> allQuoted() throws IOException {
        List<Quoted> all = new ArrayList<>();
        for (Path page : pages()) {
            all.addAll(quoted(page));
        }
        return all;
    }

    @TestFactory
    Stream<DynamicTest> everyQuotedCommandLineParses() throws IOException {
        List<Quoted> all = allQuoted();
        return all.stream().map(q -> DynamicTest.dynamicTest(q.toString(), () -> {
            CommandLine.ParseResult parsed;
            try {
                parsed = Main.commandLine().parseArgs(q.args().toArray(String[]::new));
            } catch (CommandLine.ParameterException e) {
                throw new AssertionError(q + " (arguments " + q.args() + ") does not parse: " + e.getMessage(), e);
            }
            boolean helpOrVersion = parsed.isUsageHelpRequested() || parsed.isVersionHelpRequested()
                    || parsed.subcommand() != null && (parsed.subcommand().isUsageHelpRequested()
                            || parsed.subcommand().isVersionHelpRequested()
                            || parsed.subcommand().commandSpec().name().equals("help"));
            assertThat(parsed.hasSubcommand() || helpOrVersion).as(q + ": names a command").isTrue();
            String command = parsed.hasSubcommand() ? parsed.subcommand().commandSpec().name() : "";
            if (helpOrVersion || command.equals("inspect")) {
                StringWriter out = new StringWriter();
                StringWriter err = new StringWriter();
                int rc = Main.execute(q.args().toArray(String[]::new), new PrintWriter(out, true),
                        new PrintWriter(err, true));
                assertThat(rc).as(q + " exits 0: " + err).isZero();
            }
        }));
    }

    @Test
    void theDocsQuoteTheCommandLinesTheIssueNamed() throws IOException {
        List<String> texts = allQuoted().stream().map(Quoted::toString).toList();
        assertThat(texts).as("found in docs/cli.md")
                .anyMatch(t -> t.startsWith("docs/cli.md") && t.contains("ptorun bench [--variant V]"))
                .anyMatch(t -> t.startsWith("docs/cli.md") && t.contains("inspect --all --json"));
        assertThat(texts).as("found in docs/performance.md")
                .anyMatch(t -> t.startsWith("docs/performance.md") && t.contains("bench --worker --runs 20000"))
                .anyMatch(t -> t.startsWith("docs/performance.md") && t.contains("-Ddemo.args=\"idle\""));
        assertThat(args("inspect [--variant V ... \\| --all] [--json]"))
                .containsExactly("inspect", "--variant", "a2a3/sim/hbg", "--json");
        assertThat(args(" inspect --all --json 2>/dev/null | jq '.libraries[]'"))
                .containsExactly("inspect", "--all", "--json");
    }

    @Test
    void aCommandLineThatDoesNotParseIsCaught() {
        // the line docs/performance.md quoted before [13/17]
        List<String> stale = args("bench a2a3/sim/hbg 20000");
        org.assertj.core.api.Assertions.assertThatThrownBy(
                () -> Main.commandLine().parseArgs(stale.toArray(String[]::new)))
                .isInstanceOf(CommandLine.ParameterException.class);
    }

    @Test
    void docsCliNamesEveryOptionOfEveryCommand() throws IOException {
        String page = Files.readString(Path.of("docs/cli.md"), StandardCharsets.UTF_8);
        CommandLine root = Main.commandLine();
        List<String> missing = new ArrayList<>();
        for (CommandLine sub : root.getSubcommands().values()) {
            String name = sub.getCommandName();
            if (name.equals("help")) {
                continue;
            }
            assertThat(page).as("docs/cli.md names the command").contains("`ptorun " + name);
            for (OptionSpec option : sub.getCommandSpec().options()) {
                for (String n : option.names()) {
                    if (!page.contains("`" + n + "`") && !page.contains(n + " ") && !page.contains(n + "]")) {
                        missing.add(name + " " + n + " " + Arrays.toString(option.names()));
                    }
                }
            }
        }
        assertThat(missing).as("options docs/cli.md does not name").isEmpty();
    }
}

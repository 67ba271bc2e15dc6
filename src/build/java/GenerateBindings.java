import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Writes the Java side of the C contract from the C headers, so that adding an export
 * edits the header and its C implementations only (docs/architecture.md, Java side).
 * Run by the build (exec-maven-plugin, generate-sources) as a single-file program:
 *
 * <pre>java GenerateBindings.java &lt;pto_runtime_c_api.h&gt; &lt;arch.h&gt; &lt;main-out&gt; &lt;test-out&gt;</pre>
 *
 * <p>From every {@code PTO_EXPORT} prototype of the public header, in package
 * {@code org.ptorun.internal}: {@code NativeApi} (the interface, its {@code SYMBOLS}),
 * {@code DirectBindings} (JNA direct mapping), {@code FlushingNativeApi} (every call
 * followed by the one native-log hook, {@code NativeLogFlush.after}) and, under the test
 * output, {@code UnsupportedNativeApi} (every method throws, naming its C function: the
 * base of test doubles). From the header's numeric and string {@code #define PTO_*} /
 * {@code SIMPLER_*}: {@code NativeConstants}. From arch.h's {@code #ifdef PTO_ARCH_X …
 * #else … #endif}: the enum {@code NativeArch}, one constant per branch.
 *
 * <p>A prototype it cannot map, or a constant it cannot evaluate, fails the build naming
 * the header line. A file is rewritten only when its content changes, so an unchanged
 * header recompiles nothing.
 */
public final class GenerateBindings {

    private static final String PACKAGE = "org.ptorun.internal";
    private static final String SELF = "src/build/java/GenerateBindings.java";

    /** C scalar types by value, and the Java type each maps to. Pointers are all {@code long}. */
    private static final Map<String, String> SCALARS = Map.of(
            "int", "int", "int32_t", "int", "uint32_t", "int",
            "size_t", "long", "uint64_t", "long", "int64_t", "long");

    private static final Set<String> JAVA_KEYWORDS = Set.of("abstract", "boolean", "byte", "char", "class",
            "default", "double", "final", "float", "long", "native", "new", "package", "private", "protected",
            "public", "short", "static", "super", "switch", "this", "throw", "throws", "try", "var", "void");

    /** A generation failure: reported as one line, and the build fails. */
    static final class Refusal extends RuntimeException {
        Refusal(String message) {
            super(message);
        }
    }

    record Param(String cDecl, String javaType, String javaName) {
    }

    record Fn(String cName, String javaName, String javaReturn, List<Param> params, String signature,
              String doc) {
    }

    /** A constant: its Java type ("int", "long", "String") and literal. */
    record Constant(String name, String type, String literal, String cText, String doc) {
    }

    public static void main(String[] args) throws IOException {
        if (args.length != 4) {
            System.err.println("usage: java " + SELF + " <pto_runtime_c_api.h> <arch.h> <main-out> <test-out>");
            System.exit(2);
        }
        Path header = Path.of(args[0]);
        Path arch = Path.of(args[1]);
        Path mainOut = Path.of(args[2]).resolve(PACKAGE.replace('.', '/'));
        Path testOut = Path.of(args[3]).resolve(PACKAGE.replace('.', '/'));
        try {
            Source h = new Source(header.getFileName().toString(), Files.readString(header));
            List<Fn> fns = exports(h);
            List<Constant> constants = defines(h, h.code, new LinkedHashMap<>());
            Map<String, List<Constant>> arches = archTable(new Source("arch.h", Files.readString(arch)));
            write(mainOut.resolve("NativeApi.java"), nativeApi(fns));
            write(mainOut.resolve("DirectBindings.java"), directBindings(fns));
            write(mainOut.resolve("FlushingNativeApi.java"), flushingNativeApi(fns));
            write(mainOut.resolve("NativeConstants.java"), nativeConstants(constants));
            write(mainOut.resolve("NativeArch.java"), nativeArch(arches));
            write(testOut.resolve("UnsupportedNativeApi.java"), unsupportedNativeApi(fns));
            removeOthers(mainOut, testOut);
        } catch (Refusal e) {
            System.err.println("[ERROR] " + SELF + ": " + e.getMessage());
            System.exit(1);
        }
    }

    // ---- the C source: comments apart from code, with line numbers ------------------------

    /** A header, its comments, and its text with every comment blanked (offsets kept). */
    static final class Source {
        final String file;
        final String text;
        final String code;
        final List<int[]> comments = new ArrayList<>(); // {start, end}

        Source(String file, String text) {
            this.file = file;
            this.text = text;
            StringBuilder code = new StringBuilder(text);
            Matcher m = Pattern.compile("/\\*.*?\\*/|//[^\n]*", Pattern.DOTALL).matcher(text);
            while (m.find()) {
                comments.add(new int[] {m.start(), m.end()});
                for (int i = m.start(); i < m.end(); i++) {
                    if (code.charAt(i) != '\n') {
                        code.setCharAt(i, ' ');
                    }
                }
            }
            this.code = code.toString();
        }

        int line(int offset) {
            int line = 1;
            for (int i = 0; i < offset; i++) {
                if (text.charAt(i) == '\n') {
                    line++;
                }
            }
            return line;
        }

        String where(int offset) {
            return file + ":" + line(offset);
        }

        /**
         * The comment documenting what starts at {@code start} and ends at {@code end}: the
         * last comment on lines of its own in its paragraph above it (no blank line between),
         * and a comment beside it on its last line.
         */
        String docOf(int start, int end) {
            int paragraph = text.lastIndexOf('\n', start - 1) + 1;
            while (paragraph > 0) {
                int previous = text.lastIndexOf('\n', paragraph - 2) + 1;
                if (text.substring(previous, paragraph).isBlank()) {
                    break;
                }
                paragraph = previous;
            }
            String above = null;
            String beside = null;
            int lineEnd = text.indexOf('\n', end);
            lineEnd = lineEnd < 0 ? text.length() : lineEnd;
            for (int[] c : comments) {
                boolean ownLine = text.substring(text.lastIndexOf('\n', c[0] - 1) + 1, c[0]).isBlank();
                if (c[0] >= paragraph && c[1] <= start && ownLine) {
                    above = commentText(text.substring(c[0], c[1]));
                } else if (c[0] >= end && c[0] < lineEnd) {
                    beside = commentText(text.substring(c[0], c[1]));
                }
            }
            if (above == null) {
                return beside;
            }
            // the comment beside is about this line alone: it comes first
            return beside == null ? above : beside + "\n\n" + above;
        }
    }

    /** The words of a C comment, its markers and "----" rules dropped. */
    static String commentText(String comment) {
        String body = comment.startsWith("//") ? comment.substring(2)
                : comment.substring(2, comment.length() - 2);
        StringBuilder out = new StringBuilder();
        for (String line : body.split("\n")) {
            String l = line.strip();
            if (l.startsWith("*")) {
                l = l.substring(1).strip();
            }
            out.append(l).append(' ');
        }
        return out.toString().replaceAll("-{3,}", " ").replaceAll("\\s+", " ").strip();
    }

    // ---- exports --------------------------------------------------------------------------

    private static final Pattern PROTOTYPE = Pattern.compile(
            "PTO_EXPORT\\s+((?:const\\s+|volatile\\s+)*[A-Za-z_]\\w*(?:\\s+[A-Za-z_]\\w*)*[\\s*]*?)"
                    + "\\s*\\b([A-Za-z_]\\w*)\\s*\\(([^()]*)\\)\\s*;");

    static List<Fn> exports(Source h) {
        List<Fn> fns = new ArrayList<>();
        Set<String> javaNames = new java.util.HashSet<>();
        Matcher export = Pattern.compile("\\bPTO_EXPORT\\b").matcher(h.code);
        while (export.find()) {
            int start = export.start();
            int end = h.code.indexOf(';', start);
            if (end < 0) {
                throw new Refusal(h.where(start) + ": a PTO_EXPORT declaration without ';'");
            }
            end++;
            String decl = h.code.substring(start, end).replaceAll("\\s+", " ").strip();
            Matcher m = PROTOTYPE.matcher(decl);
            if (!m.matches()) {
                throw new Refusal(h.where(start) + ": cannot parse the prototype `" + decl + "`: expected"
                        + " PTO_EXPORT <return type> <name>(<parameters>); with no function pointer or macro"
                        + " in it (extend " + SELF + " to map more)");
            }
            String cName = m.group(2);
            String ret = m.group(1).strip();
            String javaReturn = ret.replaceAll("\\s+", " ").equals("void") ? "void"
                    : javaType(ret, h.where(start) + ": the return type of " + cName);
            List<Param> params = parameters(m.group(3).strip(), cName, h.where(start));
            String javaName = javaName(cName);
            if (!javaNames.add(javaName)) {
                throw new Refusal(h.where(start) + ": " + cName + " maps to the Java name " + javaName
                        + ", which an earlier export already has");
            }
            String doc = h.docOf(start, end);
            fns.add(new Fn(cName, javaName, javaReturn, params, decl.substring("PTO_EXPORT ".length()), doc));
        }
        if (fns.isEmpty()) {
            throw new Refusal(h.file + ": no PTO_EXPORT prototype found");
        }
        return fns;
    }

    private static List<Param> parameters(String list, String fn, String where) {
        List<Param> params = new ArrayList<>();
        if (list.isEmpty() || list.equals("void")) {
            return params;
        }
        String[] parts = list.split(",");
        for (int i = 0; i < parts.length; i++) {
            String p = parts[i].strip();
            if (p.equals("...")) {
                throw new Refusal(where + ": " + fn + " is variadic; JNA direct mapping cannot bind it");
            }
            Matcher named = Pattern.compile("(.*?[\\s*])([A-Za-z_]\\w*)").matcher(p);
            String type;
            String name;
            if (named.matches() && !named.group(1).isBlank() && !isTypeWord(named.group(2))) {
                type = named.group(1);
                name = camel(named.group(2));
            } else {
                type = p;
                name = "arg" + i;
            }
            if (JAVA_KEYWORDS.contains(name)) {
                name = name + "_";
            }
            params.add(new Param(p, javaType(type, where + ": parameter " + (i + 1) + " (`" + p + "`) of " + fn),
                    name));
        }
        return params;
    }

    private static boolean isTypeWord(String word) {
        return SCALARS.containsKey(word) || Set.of("const", "volatile", "unsigned", "signed", "char", "void",
                "short", "long").contains(word);
    }

    /** The Java type of a C type: every pointer is a {@code long}, scalars by {@link #SCALARS}. */
    static String javaType(String cType, String what) {
        String t = cType.strip();
        if (t.contains("*")) {
            if (t.contains("(") || t.contains("[")) {
                throw refusedType(what, t);
            }
            return "long";
        }
        String bare = t.replaceAll("\\b(const|volatile)\\b", "").strip();
        String java = SCALARS.get(bare);
        if (java == null) {
            throw refusedType(what, t);
        }
        return java;
    }

    private static Refusal refusedType(String what, String type) {
        return new Refusal(what + ": cannot map the C type `" + type + "`. The generator maps pointers, size_t,"
                + " uint64_t and int64_t to long, int, int32_t and uint32_t to int, and void; pass anything else"
                + " through a pointer, or extend " + SELF);
    }

    /**
     * The Java name of a C function: a leading {@code simpler_}, {@code ptorun_} or
     * {@code get_} and a trailing {@code _ctx} stripped, the rest in camelCase
     * ({@code get_arena_bank_gm_heap_base_ctx} → {@code arenaBankGmHeapBase}).
     */
    static String javaName(String cName) {
        String n = cName;
        for (String prefix : List.of("simpler_", "ptorun_", "get_")) {
            if (n.startsWith(prefix) && n.length() > prefix.length()) {
                n = n.substring(prefix.length());
                break;
            }
        }
        if (n.endsWith("_ctx") && n.length() > 4) {
            n = n.substring(0, n.length() - 4);
        }
        String name = camel(n);
        return JAVA_KEYWORDS.contains(name) ? name + "_" : name;
    }

    static String camel(String snake) {
        StringBuilder out = new StringBuilder();
        boolean upper = false;
        for (char c : snake.toCharArray()) {
            if (c == '_') {
                upper = out.length() > 0;
            } else {
                out.append(upper ? Character.toUpperCase(c) : c);
                upper = false;
            }
        }
        return out.toString();
    }

    // ---- constants ------------------------------------------------------------------------

    private static final Pattern DEFINE = Pattern.compile(
            "(?m)^[ \\t]*#[ \\t]*define[ \\t]+((?:PTO|SIMPLER)_\\w+)(?=[ \\t]|$)([^\\n]*)$");

    /**
     * Every object-like {@code #define PTO_*} / {@code SIMPLER_*} of {@code code} (a part
     * of {@code src}'s blanked text, same offsets): integers — literals, earlier constants,
     * + - * / % << >> & | ^ ~ and parentheses — and string literals.
     */
    static List<Constant> defines(Source src, String code, Map<String, Constant> known) {
        List<Constant> out = new ArrayList<>();
        Matcher m = DEFINE.matcher(code);
        while (m.find()) {
            String name = m.group(1);
            String expr = m.group(2).strip();
            String where = src.where(m.start());
            if (expr.endsWith("\\")) {
                throw new Refusal(where + ": #define " + name + " continues on the next line; keep a constant"
                        + " on one line");
            }
            int valueEnd = m.start(2) + m.group(2).stripTrailing().length();
            Constant c = constant(name, expr, known, where, src.docOf(m.start(), valueEnd));
            known.put(name, c);
            out.add(c);
        }
        return out;
    }

    private static Constant constant(String name, String expr, Map<String, Constant> known, String where,
                                     String doc) {
        String cText = "#define " + name + " " + expr;
        if (expr.matches("\"(?:[^\"\\\\]|\\\\.)*\"")) {
            return new Constant(name, "String", expr, cText, doc);
        }
        Evaluator e = new Evaluator(expr, known, where, name);
        long v = e.evaluate();
        boolean isInt = !e.wide && v >= Integer.MIN_VALUE && v <= Integer.MAX_VALUE;
        String literal = isInt ? Long.toString(v)
                : expr.matches("(?i)0x[0-9a-f]+[ul]*") || (v < 0 && e.unsignedWide)
                        ? "0x" + Long.toHexString(v).toUpperCase(Locale.ROOT) + "L"
                        : v + "L";
        return new Constant(name, isInt ? "int" : "long", literal, cText, doc);
    }

    /** Integer constant expressions over 64 bits, as the preprocessor computes them for these headers. */
    static final class Evaluator {
        private final String expr;
        private final Map<String, Constant> known;
        private final String where;
        private final String name;
        private int pos;
        boolean wide;
        boolean unsignedWide;

        Evaluator(String expr, Map<String, Constant> known, String where, String name) {
            this.expr = expr;
            this.known = known;
            this.where = where;
            this.name = name;
        }

        long evaluate() {
            if (expr.isEmpty()) {
                throw refused("it has no value");
            }
            long v = or();
            skip();
            if (pos != expr.length()) {
                throw refused("unexpected `" + expr.substring(pos) + "`");
            }
            return v;
        }

        private Refusal refused(String why) {
            return new Refusal(where + ": cannot evaluate #define " + name + " " + expr + " (" + why + "). The"
                    + " generator evaluates integer literals, earlier PTO_*/SIMPLER_* constants and"
                    + " + - * / % << >> & | ^ ~ ( ), and string literals; extend " + SELF + " for more");
        }

        private void skip() {
            while (pos < expr.length() && Character.isWhitespace(expr.charAt(pos))) {
                pos++;
            }
        }

        private boolean eat(String op) {
            skip();
            if (expr.startsWith(op, pos)) {
                // "<" of "<<" only as a whole
                pos += op.length();
                return true;
            }
            return false;
        }

        private long or() {
            long v = xor();
            while (!expr.startsWith("||", peek()) && eat("|")) {
                v |= xor();
            }
            return v;
        }

        private long xor() {
            long v = and();
            while (eat("^")) {
                v ^= and();
            }
            return v;
        }

        private long and() {
            long v = shift();
            while (!expr.startsWith("&&", peek()) && eat("&")) {
                v &= shift();
            }
            return v;
        }

        private long shift() {
            long v = sum();
            while (true) {
                if (eat("<<")) {
                    v <<= sum();
                } else if (eat(">>")) {
                    v >>>= sum();
                } else {
                    return v;
                }
            }
        }

        private long sum() {
            long v = product();
            while (true) {
                if (eat("+")) {
                    v += product();
                } else if (eat("-")) {
                    v -= product();
                } else {
                    return v;
                }
            }
        }

        private long product() {
            long v = unary();
            while (true) {
                if (eat("*")) {
                    v *= unary();
                } else if (eat("/")) {
                    long d = unary();
                    if (d == 0) {
                        throw refused("division by zero");
                    }
                    v /= d;
                } else if (eat("%")) {
                    long d = unary();
                    if (d == 0) {
                        throw refused("division by zero");
                    }
                    v %= d;
                } else {
                    return v;
                }
            }
        }

        private int peek() {
            skip();
            return pos;
        }

        private long unary() {
            if (eat("-")) {
                return -unary();
            }
            if (eat("+")) {
                return unary();
            }
            if (eat("~")) {
                return ~unary();
            }
            if (eat("(")) {
                long v = or();
                if (!eat(")")) {
                    throw refused("a '(' is not closed");
                }
                return v;
            }
            skip();
            Matcher number = Pattern.compile("(0[xX][0-9a-fA-F]+|[0-9]+)([uUlL]*)").matcher(expr);
            number.region(pos, expr.length());
            if (number.lookingAt()) {
                pos = number.end();
                String digits = number.group(1);
                String suffix = number.group(2).toLowerCase(Locale.ROOT);
                long v = digits.startsWith("0x") || digits.startsWith("0X")
                        ? Long.parseUnsignedLong(digits.substring(2), 16)
                        : digits.length() > 1 && digits.startsWith("0") ? Long.parseUnsignedLong(digits, 8)
                        : Long.parseUnsignedLong(digits);
                if (suffix.contains("l")) {
                    wide = true;
                    unsignedWide |= suffix.contains("u");
                }
                return v;
            }
            Matcher ident = Pattern.compile("[A-Za-z_]\\w*").matcher(expr);
            ident.region(pos, expr.length());
            if (ident.lookingAt()) {
                pos = ident.end();
                Constant c = known.get(ident.group());
                if (c == null || c.type().equals("String")) {
                    throw refused("`" + ident.group() + "` is no earlier integer constant");
                }
                wide |= c.type().equals("long");
                String lit = c.literal().replace("L", "");
                return lit.startsWith("0x") ? Long.parseUnsignedLong(lit.substring(2), 16) : Long.parseLong(lit);
            }
            throw refused(pos < expr.length() ? "unexpected `" + expr.substring(pos) + "`" : "it ends early");
        }
    }

    // ---- arch.h ---------------------------------------------------------------------------

    private static final Pattern DIRECTIVE = Pattern.compile("(?m)^[ \\t]*#[ \\t]*(\\w+)([^\\n]*)$");

    /**
     * arch.h's constants per arch: those outside its {@code #ifdef PTO_ARCH_X … #else …
     * #endif} belong to every arch, each branch's to one, named by the branch's
     * {@code PTO_ARCH_NAME}. Both branches define the same names.
     */
    static Map<String, List<Constant>> archTable(Source a) {
        StringBuilder common = blank(a.code);
        StringBuilder first = blank(a.code);
        StringBuilder second = blank(a.code);
        StringBuilder target = common;
        List<Boolean> stack = new ArrayList<>(); // true: the arch switch
        int armStart = -1;
        Matcher d = DIRECTIVE.matcher(a.code);
        while (d.find()) {
            String directive = d.group(1);
            String rest = d.group(2).strip();
            boolean inSwitch = stack.contains(Boolean.TRUE);
            switch (directive) {
                case "if", "ifdef", "ifndef" -> {
                    boolean arch = directive.equals("ifdef") && rest.matches("PTO_ARCH_\\w+");
                    if (arch && inSwitch) {
                        throw new Refusal(a.where(d.start()) + ": nested #ifdef PTO_ARCH_*");
                    }
                    if (arch && armStart >= 0) {
                        throw new Refusal(a.where(d.start()) + ": a second arch switch; the generator reads one");
                    }
                    if (inSwitch) {
                        throw new Refusal(a.where(d.start()) + ": a conditional inside the arch switch");
                    }
                    stack.add(arch);
                    if (arch) {
                        armStart = d.start();
                        target = first;
                    }
                }
                case "else", "elif" -> {
                    if (!stack.isEmpty() && stack.get(stack.size() - 1)) {
                        if (directive.equals("elif")) {
                            throw new Refusal(a.where(d.start()) + ": #elif in the arch switch; the generator"
                                    + " reads two branches, #ifdef PTO_ARCH_X … #else … #endif");
                        }
                        target = second;
                    }
                }
                case "endif" -> {
                    if (stack.isEmpty()) {
                        throw new Refusal(a.where(d.start()) + ": #endif without #if");
                    }
                    if (stack.remove(stack.size() - 1)) {
                        target = common;
                    }
                }
                case "define" -> target.replace(d.start(), d.end(), a.code.substring(d.start(), d.end()));
                default -> {
                    // #error, #include, #undef: no constant
                }
            }
        }
        if (armStart < 0) {
            throw new Refusal(a.file + ": no #ifdef PTO_ARCH_* switch found");
        }
        List<Constant> shared = defines(a, common.toString(), new LinkedHashMap<>());
        Map<String, List<Constant>> table = new LinkedHashMap<>();
        List<String> names = null;
        for (StringBuilder branch : List.of(first, second)) {
            Map<String, Constant> known = new LinkedHashMap<>();
            shared.forEach(c -> known.put(c.name(), c));
            List<Constant> own = defines(a, branch.toString(), known);
            Constant archName = own.stream().filter(c -> c.name().equals("PTO_ARCH_NAME")).findFirst()
                    .orElseThrow(() -> new Refusal(a.file + ": a branch of the arch switch defines no"
                            + " PTO_ARCH_NAME"));
            List<String> ownNames = own.stream().map(Constant::name).toList();
            if (names != null && !new java.util.HashSet<>(names).equals(new java.util.HashSet<>(ownNames))) {
                throw new Refusal(a.file + ": the branches of the arch switch define different names: "
                        + names + " and " + ownNames);
            }
            names = ownNames;
            List<Constant> all = new ArrayList<>(shared);
            all.addAll(own);
            String key = archName.literal().replace("\"", "").toUpperCase(Locale.ROOT);
            if (!key.matches("[A-Z][A-Z0-9_]*") || table.put(key, all) != null) {
                throw new Refusal(a.file + ": PTO_ARCH_NAME " + archName.literal() + " is no fresh Java name");
            }
        }
        return table;
    }

    /** {@code code} with every character but the line ends blanked: offsets and line starts kept. */
    private static StringBuilder blank(String code) {
        return new StringBuilder(code.replaceAll("[^\\n]", " "));
    }

    // ---- the Java files -------------------------------------------------------------------

    private static String head(String what) {
        return "package " + PACKAGE + ";\n\n"
                + "// GENERATED by " + SELF + " from " + what + ": do not edit.\n\n";
    }

    /** A C comment's words as Javadoc text: HTML and Javadoc markup escaped. */
    static String javadocText(String s) {
        return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("@", "&#64;")
                .replace("*/", "*&#47;").replace("\\", "&#92;").replace("{", "&#123;").replace("}", "&#125;");
    }

    private static String code(String s) {
        return "<code>" + javadocText(s) + "</code>";
    }

    private static void javadoc(StringBuilder out, String indent, String first, String doc) {
        out.append(indent).append("/**\n");
        wrap(out, indent, first);
        if (doc != null && !doc.isEmpty()) {
            for (String paragraph : doc.split("\n\n")) {
                out.append(indent).append(" *\n");
                wrap(out, indent, "<p>" + javadocText(paragraph));
            }
        }
        out.append(indent).append(" */\n");
    }

    private static void wrap(StringBuilder out, String indent, String text) {
        StringBuilder line = new StringBuilder();
        for (String word : text.split(" ")) {
            if (line.length() > 0 && line.length() + word.length() > 88) {
                out.append(indent).append(" * ").append(line).append('\n');
                line.setLength(0);
            }
            line.append(line.length() > 0 ? " " : "").append(word);
        }
        if (line.length() > 0) {
            out.append(indent).append(" * ").append(line).append('\n');
        }
    }

    private static String signature(Fn f) {
        StringBuilder s = new StringBuilder(f.javaReturn()).append(' ').append(f.javaName()).append('(');
        for (int i = 0; i < f.params().size(); i++) {
            Param p = f.params().get(i);
            s.append(i > 0 ? ", " : "").append(p.javaType()).append(' ').append(p.javaName());
        }
        return s.append(')').toString();
    }

    private static String arguments(Fn f) {
        return String.join(", ", f.params().stream().map(Param::javaName).toList());
    }

    private static String symbolList(List<Fn> fns) {
        StringBuilder s = new StringBuilder();
        for (int i = 0; i < fns.size(); i++) {
            s.append(i == 0 ? "" : ",").append("\n            \"").append(fns.get(i).cName()).append('"');
        }
        return s.toString();
    }

    static String nativeApi(List<Fn> fns) {
        StringBuilder out = new StringBuilder(head("include/ptorun/pto_runtime_c_api.h"));
        out.append("import java.util.List;\n\n");
        out.append("/**\n"
                + " * The exported contract of one host-runtime library (include/ptorun/pto_runtime_c_api.h),\n"
                + " * with primitive signatures only: {@code long} for pointers, sizes and u64, {@code int}\n"
                + " * for codes, ids and u32. Each method calls the C function its comment names. One\n"
                + " * implementation per loaded variant, bound by JNA direct mapping ({@link DirectBindings});\n"
                + " * {@link FlushingNativeApi} flushes the native log after the calls.\n"
                + " */\n");
        out.append("public interface NativeApi {\n\n");
        out.append("    /** Every symbol the contract requires, in header order. */\n");
        out.append("    List<String> SYMBOLS = List.of(").append(symbolList(fns)).append(");\n");
        for (Fn f : fns) {
            out.append('\n');
            javadoc(out, "    ", "{@code " + f.cName() + "}: " + code(f.signature()), f.doc());
            out.append("    ").append(signature(f)).append(";\n");
        }
        return out.append("}\n").toString();
    }

    static String directBindings(List<Fn> fns) {
        StringBuilder out = new StringBuilder(head("include/ptorun/pto_runtime_c_api.h"));
        out.append("/**\n"
                + " * JNA direct mapping of one library: static natives named after the C symbols, and\n"
                + " * {@link NativeApi} forwarding to them. JNA binds a class's natives to exactly one\n"
                + " * library, so {@link LibraryLoader} defines a fresh copy of this class per variant in a\n"
                + " * class loader of its own and registers that copy. The class must stay public with a\n"
                + " * public no-argument constructor and use nothing package-private: its copies live in\n"
                + " * other runtime packages.\n"
                + " */\n");
        out.append("public final class DirectBindings implements NativeApi {\n\n");
        out.append("    public DirectBindings() {\n    }\n");
        for (Fn f : fns) {
            String natives = signature(new Fn(f.cName(), f.cName(), f.javaReturn(), f.params(), "", null));
            out.append("\n    private static native ").append(natives).append(";\n\n");
            out.append("    @Override\n    public ").append(signature(f)).append(" {\n        ")
                    .append(f.javaReturn().equals("void") ? "" : "return ")
                    .append(f.cName()).append('(').append(arguments(f)).append(");\n    }\n");
        }
        return out.append("}\n").toString();
    }

    static String flushingNativeApi(List<Fn> fns) {
        StringBuilder out = new StringBuilder(head("include/ptorun/pto_runtime_c_api.h"));
        out.append("/**\n"
                + " * A {@link NativeApi} that hands every call's result to {@link NativeLogFlush#after}, the\n"
                + " * one place that decides when the library's native log is flushed (its policy and why).\n"
                + " * The hook runs on the calling thread after the call returned; the symbol index is the\n"
                + " * function's position in {@link NativeApi#SYMBOLS}.\n"
                + " */\n");
        out.append("public final class FlushingNativeApi implements NativeApi {\n\n");
        out.append("    private final NativeApi api;\n    private final NativeLogFlush flush;\n\n");
        out.append("    /** Wraps {@code api}; {@code flush} decides after each call. */\n");
        out.append("    public FlushingNativeApi(NativeApi api, NativeLogFlush flush) {\n"
                + "        this.api = api;\n        this.flush = flush;\n    }\n\n");
        out.append("    /** The hook every call goes through. */\n");
        out.append("    public NativeLogFlush flush() {\n        return flush;\n    }\n");
        for (int i = 0; i < fns.size(); i++) {
            Fn f = fns.get(i);
            String call = "api." + f.javaName() + "(" + arguments(f) + ")";
            out.append("\n    @Override\n    public ").append(signature(f)).append(" {\n");
            if (f.javaReturn().equals("void")) {
                out.append("        ").append(call).append(";\n");
                out.append("        flush.after(").append(i).append(", 0);\n");
            } else {
                out.append("        ").append(f.javaReturn()).append(" result = ").append(call).append(";\n");
                out.append("        flush.after(").append(i).append(", result);\n");
                out.append("        return result;\n");
            }
            out.append("    }\n");
        }
        return out.append("}\n").toString();
    }

    static String unsupportedNativeApi(List<Fn> fns) {
        StringBuilder out = new StringBuilder(head("include/ptorun/pto_runtime_c_api.h"));
        out.append("/**\n"
                + " * The base of a test double of {@link NativeApi}: every method throws\n"
                + " * {@link UnsupportedOperationException} naming its C function, so a double overrides\n"
                + " * what it models and a new export needs no edit of it.\n"
                + " */\n");
        out.append("public abstract class UnsupportedNativeApi implements NativeApi {\n\n");
        out.append("    protected UnsupportedNativeApi() {\n    }\n\n");
        out.append("    /** The exception of a function this double does not model. */\n");
        out.append("    protected UnsupportedOperationException unsupported(String cFunction) {\n"
                + "        return new UnsupportedOperationException(cFunction + \" is not modelled by \"\n"
                + "                + getClass().getSimpleName());\n    }\n");
        for (Fn f : fns) {
            out.append("\n    @Override\n    public ").append(signature(f)).append(" {\n");
            out.append("        throw unsupported(\"").append(f.cName()).append("\");\n    }\n");
        }
        return out.append("}\n").toString();
    }

    static String nativeConstants(List<Constant> constants) {
        StringBuilder out = new StringBuilder(head("include/ptorun/pto_runtime_c_api.h"));
        out.append("/**\n"
                + " * The constants of the C contract: every {@code #define PTO_*} and {@code SIMPLER_*} of\n"
                + " * include/ptorun/pto_runtime_c_api.h with a value, under its C name. Java code uses these,\n"
                + " * never a copy of the number.\n"
                + " */\n");
        out.append("public final class NativeConstants {\n\n");
        out.append("    private NativeConstants() {\n    }\n");
        for (Constant c : constants) {
            out.append('\n');
            javadoc(out, "    ", code(c.cText()), c.doc());
            out.append("    public static final ").append(c.type()).append(' ').append(c.name()).append(" = ")
                    .append(c.literal()).append(";\n");
        }
        return out.append("}\n").toString();
    }

    static String nativeArch(Map<String, List<Constant>> arches) {
        StringBuilder out = new StringBuilder(head("src/main/c/arch/arch.h"));
        out.append("/**\n"
                + " * The chip geometry and capabilities of each arch, as src/main/c/arch/arch.h defines them\n"
                + " * for the libraries built for it: one constant per branch of its arch switch, each field\n"
                + " * under its C name.\n"
                + " */\n");
        out.append("public enum NativeArch {\n");
        List<Constant> fields = arches.values().iterator().next();
        int n = 0;
        for (Map.Entry<String, List<Constant>> arch : arches.entrySet()) {
            out.append('\n');
            out.append("    /** The libraries built for {@code PTO_ARCH_NAME} ")
                    .append(javadocText(arch.getValue().stream().filter(c -> c.name().equals("PTO_ARCH_NAME"))
                            .findFirst().orElseThrow().literal()))
                    .append(". */\n");
            out.append("    ").append(arch.getKey()).append('(');
            List<String> values = new ArrayList<>();
            for (Constant field : fields) {
                Constant c = arch.getValue().stream().filter(x -> x.name().equals(field.name())).findFirst()
                        .orElseThrow();
                if (!c.type().equals(field.type())) {
                    throw new Refusal("arch.h: " + c.name() + " is " + field.type() + " in one branch and "
                            + c.type() + " in another");
                }
                values.add(c.literal());
            }
            out.append(String.join(", ", values)).append(++n == arches.size() ? ");\n" : "),\n");
        }
        for (Constant field : fields) {
            out.append('\n');
            javadoc(out, "    ", "{@code " + field.name() + "}", field.doc());
            out.append("    public final ").append(field.type()).append(' ').append(field.name()).append(";\n");
        }
        out.append("\n    NativeArch(");
        List<String> ps = new ArrayList<>();
        for (Constant field : fields) {
            ps.add(field.type() + " " + field.name());
        }
        out.append(String.join(", ", ps)).append(") {\n");
        for (Constant field : fields) {
            out.append("        this.").append(field.name()).append(" = ").append(field.name()).append(";\n");
        }
        out.append("    }\n");
        return out.append("}\n").toString();
    }

    private static final java.util.Set<Path> WRITTEN = new java.util.HashSet<>();

    /** A class this generator no longer writes (renamed, removed) must not stay on the compile path. */
    private static void removeOthers(Path... dirs) throws IOException {
        for (Path dir : dirs) {
            try (var files = Files.list(dir)) {
                for (Path f : files.toList()) {
                    if (f.toString().endsWith(".java") && !WRITTEN.contains(f)) {
                        Files.delete(f);
                    }
                }
            }
        }
    }

    private static void write(Path file, String content) throws IOException {
        WRITTEN.add(file);
        byte[] bytes = content.getBytes(StandardCharsets.UTF_8);
        if (Files.exists(file) && java.util.Arrays.equals(Files.readAllBytes(file), bytes)) {
            return;
        }
        Files.createDirectories(file.getParent());
        Files.write(file, bytes);
    }
}

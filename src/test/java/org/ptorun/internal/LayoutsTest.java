package org.ptorun.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.Reader;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.ptorun.PtoError;
import java.util.Properties;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * Every struct size, alignment and field offset in {@link Layouts} equals what the C
 * compiler computed from the public header (target/native-test/layouts.properties,
 * written by src/test/c/layout_dump.c), and every value the C side reports has a
 * Java constant.
 */
class LayoutsTest {

    private static final String ERROR_PREFIX = "error.";
    private static final String CALLABLE_PREFIX = "callable.";
    /** A status-code macro of the public header: {@code #define PTO_ERR_BUSY -6}. */
    private static final Pattern CODE_DEFINE =
            Pattern.compile("(?m)^#define\\s+(PTO_OK|PTO_(?:RUNTIME_)?ERR_\\w+)\\s+(-?\\d+)\\s*$");

    private static Properties dump() throws Exception {
        Path file = Path.of(System.getProperty("ptorun.nativeTestDir", "target/native-test"), "layouts.properties");
        Properties c = new Properties();
        try (Reader r = Files.newBufferedReader(file)) {
            c.load(r);
        }
        return c;
    }

    /**
     * {@link PtoError} holds exactly the status codes of include/ptorun/pto_runtime_c_api.h,
     * name for name and value for value: the header's #define lines (parsed here) and the
     * values the C compiler gives them (layout_dump.c) on one side, the enum on the
     * other. A code added, removed or renumbered on one side only fails.
     */
    @Test
    void javaErrorCodesEqualTheCHeader() throws Exception {
        Path header = Path.of(System.getProperty("ptorun.includeDir", "src/main/c/include"),
                "ptorun", "pto_runtime_c_api.h");
        Map<String, Integer> defined = new HashMap<>();
        Matcher m = CODE_DEFINE.matcher(Files.readString(header));
        while (m.find()) {
            defined.put(m.group(1), Integer.parseInt(m.group(2)));
        }
        assertThat(defined).as("codes defined in " + header).hasSizeGreaterThan(10);
        Map<String, Integer> compiled = new HashMap<>();
        Properties c = dump();
        for (String key : c.stringPropertyNames()) {
            if (key.startsWith(ERROR_PREFIX)) {
                compiled.put(key.substring(ERROR_PREFIX.length()), Integer.parseInt(c.getProperty(key)));
            }
        }
        assertThat(compiled).as("layout_dump.c prints every code the header defines").isEqualTo(defined);
        Map<String, Integer> java = new HashMap<>();
        for (PtoError e : PtoError.values()) {
            java.put(e.cName(), e.code());
            assertThat(PtoError.fromCode(e.code())).isSameAs(e);
        }
        assertThat(java).as("org.ptorun.PtoError").isEqualTo(defined);
    }

    /**
     * {@link CallableLayouts} — the callable format the Java builders write — equals
     * include/ptorun/chip_callable.h as compiled: every constant, struct size and field
     * offset layout_dump.c prints under "callable.", and every Java constant is confirmed.
     */
    @Test
    void javaCallableLayoutsEqualTheCHeader() throws Exception {
        Properties c = dump();
        Set<String> checked = new HashSet<>();
        for (String key : c.stringPropertyNames()) {
            if (!key.startsWith(CALLABLE_PREFIX)) {
                continue;
            }
            String name = key.substring(CALLABLE_PREFIX.length());
            long expected = Long.parseLong(c.getProperty(key));
            if (!name.contains(".")) {
                assertThat(CallableLayouts.class.getField(name).getLong(null)).as(key).isEqualTo(expected);
                checked.add(name);
                continue;
            }
            String struct = name.substring(0, name.indexOf('.'));
            String cField = name.substring(name.indexOf('.') + 1);
            Class<?> holder = Class.forName(CallableLayouts.class.getName() + "$" + struct);
            String javaName = switch (cField) {
                case "sizeof" -> "SIZE";
                case "size" -> struct.equals("PtoProgramParam") ? "SIZE_AFFINE" : "SIZE_FIELD";
                default -> cField.toUpperCase(Locale.ROOT);
            };
            assertThat(holder.getField(javaName).getLong(null)).as(key).isEqualTo(expected);
            checked.add(struct + "." + javaName);
        }
        for (Field f : CallableLayouts.class.getFields()) {
            assertThat(checked).as("C confirms CallableLayouts." + f.getName()).contains(f.getName());
        }
        for (Class<?> holder : CallableLayouts.class.getDeclaredClasses()) {
            for (Field f : holder.getFields()) {
                assertThat(checked).as("C confirms " + holder.getSimpleName() + "." + f.getName())
                        .contains(holder.getSimpleName() + "." + f.getName());
            }
        }
    }

    @Test
    void javaLayoutsEqualTheCHeader() throws Exception {
        Properties c = dump();
        assertThat(c).hasSizeGreaterThan(40);
        Set<String> checked = new HashSet<>();
        for (String key : c.stringPropertyNames()) {
            if (key.startsWith(ERROR_PREFIX) || key.startsWith(CALLABLE_PREFIX)) {
                continue; // javaErrorCodesEqualTheCHeader, javaCallableLayoutsEqualTheCHeader
            }
            long expected = Long.parseUnsignedLong(c.getProperty(key));
            if (!key.contains(".")) {
                assertThat(Layouts.class.getField(key).getLong(null)).as(key).isEqualTo(expected);
                checked.add(key);
                continue;
            }
            String struct = key.substring(0, key.indexOf('.'));
            String cField = key.substring(key.indexOf('.') + 1);
            Class<?> holder = Class.forName(Layouts.class.getName() + "$" + struct);
            String javaName = switch (cField) {
                case "sizeof" -> "SIZE";
                case "alignof" -> "ALIGN";
                case "size" -> "SIZE_FIELD"; // ChipTensor.size: SIZE is the struct's size
                default -> cField.toUpperCase(Locale.ROOT);
            };
            assertThat(holder.getField(javaName).getLong(null)).as(key).isEqualTo(expected);
            checked.add(struct + "." + javaName);
        }
        // the other direction: no Java constant the C side did not confirm
        for (Class<?> holder : Layouts.class.getDeclaredClasses()) {
            for (Field f : holder.getFields()) {
                if (!Modifier.isStatic(f.getModifiers())) {
                    continue;
                }
                assertThat(checked).as("C confirms " + holder.getSimpleName() + "." + f.getName())
                        .contains(holder.getSimpleName() + "." + f.getName());
            }
        }
    }
}

package org.ptorun.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.Reader;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Locale;
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

    @Test
    void javaLayoutsEqualTheCHeader() throws Exception {
        Path file = Path.of(System.getProperty("ptorun.nativeTestDir", "target/native-test"), "layouts.properties");
        Properties c = new Properties();
        try (Reader r = Files.newBufferedReader(file)) {
            c.load(r);
        }
        assertThat(c).hasSizeGreaterThan(40);
        Set<String> checked = new HashSet<>();
        for (String key : c.stringPropertyNames()) {
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

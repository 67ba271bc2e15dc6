package org.ptorun.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;
import org.junit.jupiter.api.Test;

/**
 * The natives in the packaged jar carry no debug info, and the debug-symbols artifact
 * has it for every one of them, linked by name (src/build/strip-natives.sh).
 */
class NativesStrippedIT {

    private static final String NATIVE_DIR = "linux-x86-64/";

    @Test
    void theJarsNativesAreStrippedAndTheirDebugInfoIsKeptBeside() throws IOException {
        Map<String, byte[]> natives = sharedObjects(Path.of(System.getProperty("ptorun.jar")), NATIVE_DIR, ".so");
        Map<String, byte[]> debug = sharedObjects(Path.of(System.getProperty("ptorun.debugSymbols")), "", ".so.debug");

        /* 8 host libraries, 2 AICPU and 2 AICore images, the driver, the chip host's proxy,
           the multi-host plugin (libptorun_gloo.so) */
        assertThat(natives).hasSize(15);
        assertThat(debug.keySet()).isEqualTo(suffixed(natives.keySet(), ".debug"));
        natives.forEach((name, bytes) -> {
            Set<String> sections = sectionNames(bytes, name);
            assertThat(sections).as(name).noneMatch(s -> s.startsWith(".debug_")).contains(".gnu_debuglink", ".dynsym");
            assertThat(debugLink(bytes, name)).as(name).isEqualTo(name + ".debug");
            assertThat(sectionNames(debug.get(name + ".debug"), name + ".debug")).as(name + ".debug")
                    .contains(".debug_info", ".debug_line");
        });
    }

    private static Map<String, byte[]> sharedObjects(Path zip, String folder, String suffix) throws IOException {
        Map<String, byte[]> found = new TreeMap<>();
        try (ZipFile file = new ZipFile(zip.toFile())) {
            for (ZipEntry e : java.util.Collections.list(file.entries())) {
                String n = e.getName();
                if (n.startsWith(folder) && n.endsWith(suffix) && n.indexOf('/', folder.length()) < 0) {
                    try (InputStream in = file.getInputStream(e)) {
                        found.put(n.substring(folder.length()), in.readAllBytes());
                    }
                }
            }
        }
        return found;
    }

    private static Set<String> suffixed(Set<String> names, String suffix) {
        Set<String> out = new TreeSet<>();
        names.forEach(n -> out.add(n + suffix));
        return out;
    }

    /** The section names of an ELF64 little-endian file, from its section header string table. */
    private static Set<String> sectionNames(byte[] bytes, String name) {
        ByteBuffer elf = elf(bytes, name);
        Set<String> names = new TreeSet<>();
        for (int i = 0; i < sectionCount(elf); i++) {
            names.add(sectionName(elf, i));
        }
        return names;
    }

    /** The file name a .gnu_debuglink section records (a NUL-terminated string, then a CRC). */
    private static String debugLink(byte[] bytes, String name) {
        ByteBuffer elf = elf(bytes, name);
        for (int i = 0; i < sectionCount(elf); i++) {
            if (sectionName(elf, i).equals(".gnu_debuglink")) {
                return cString(elf, (int) elf.getLong(header(elf, i) + 0x18));
            }
        }
        throw new AssertionError(name + " has no .gnu_debuglink");
    }

    private static ByteBuffer elf(byte[] bytes, String name) {
        ByteBuffer elf = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
        assertThat(bytes.length > 0x40 && elf.getInt(0) == 0x464C457F && elf.get(4) == 2)
                .as(name + " is an ELF64 file").isTrue();
        return elf;
    }

    private static int sectionCount(ByteBuffer elf) {
        return Short.toUnsignedInt(elf.getShort(0x3C));
    }

    private static int header(ByteBuffer elf, int index) {
        return (int) (elf.getLong(0x28) + (long) index * Short.toUnsignedInt(elf.getShort(0x3A)));
    }

    private static String sectionName(ByteBuffer elf, int index) {
        int strtab = header(elf, Short.toUnsignedInt(elf.getShort(0x3E)));
        return cString(elf, (int) (elf.getLong(strtab + 0x18) + elf.getInt(header(elf, index))));
    }

    private static String cString(ByteBuffer buf, int at) {
        int end = at;
        while (buf.get(end) != 0) {
            end++;
        }
        return new String(buf.array(), at, end - at, StandardCharsets.US_ASCII);
    }
}

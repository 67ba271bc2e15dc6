package org.ptorun.internal;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import java.util.TreeSet;

/** Reads the defined global symbols of an ELF64 little-endian shared object's .dynsym (tests, the ptorun command). */
public final class ElfSymbols {

    private static final int SHT_DYNSYM = 11;
    private static final int SHN_UNDEF = 0;
    private static final int STB_GLOBAL = 1;
    private static final int STB_WEAK = 2;

    private ElfSymbols() {
    }

    public static Set<String> definedGlobals(Path file) throws IOException {
        return definedGlobals(Files.readAllBytes(file), file.toString());
    }

    /** The same, of a file's bytes; {@code name} names it in the exception. */
    public static Set<String> definedGlobals(byte[] bytes, String name) throws IOException {
        ByteBuffer elf = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
        if (bytes.length < 0x40 || elf.getInt(0) != 0x464C457F || elf.get(4) != 2 || elf.get(5) != 1) {
            throw new IOException(name + " is not an ELF64 little-endian file");
        }
        long shoff = elf.getLong(0x28);
        int shentsize = Short.toUnsignedInt(elf.getShort(0x3A));
        int shnum = Short.toUnsignedInt(elf.getShort(0x3C));
        Set<String> names = new TreeSet<>();
        for (int i = 0; i < shnum; i++) {
            int sh = (int) (shoff + (long) i * shentsize);
            if (elf.getInt(sh + 4) != SHT_DYNSYM) {
                continue;
            }
            long symOff = elf.getLong(sh + 0x18);
            long symSize = elf.getLong(sh + 0x20);
            int link = elf.getInt(sh + 0x28);
            long entSize = elf.getLong(sh + 0x38);
            int strSh = (int) (shoff + (long) link * shentsize);
            long strOff = elf.getLong(strSh + 0x18);
            for (long s = symOff; s < symOff + symSize; s += entSize) {
                int nameIdx = elf.getInt((int) s);
                int info = Byte.toUnsignedInt(elf.get((int) s + 4));
                int shndx = Short.toUnsignedInt(elf.getShort((int) s + 6));
                int bind = info >> 4;
                if (shndx == SHN_UNDEF || (bind != STB_GLOBAL && bind != STB_WEAK)) {
                    continue;
                }
                names.add(cString(elf, (int) (strOff + nameIdx)));
            }
        }
        return names;
    }

    private static String cString(ByteBuffer buf, int at) {
        StringBuilder sb = new StringBuilder();
        for (int i = at; buf.get(i) != 0; i++) {
            sb.append((char) buf.get(i));
        }
        return sb.toString();
    }
}

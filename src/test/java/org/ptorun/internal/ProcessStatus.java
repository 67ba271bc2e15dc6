package org.ptorun.internal;

import com.sun.jna.Library;
import com.sun.jna.Native;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** Figures of this process from /proc/self/status, for the soaks. */
public final class ProcessStatus {

    private interface LibC extends Library {
        int malloc_trim(long pad);
    }

    private static final LibC LIBC = Native.load("c", LibC.class);

    private ProcessStatus() {
    }

    /**
     * VmRSS, KiB, after {@code malloc_trim(0)}: glibc keeps freed memory of its arenas
     * resident (the JIT's, for one), which would read as a growth that never goes away;
     * trimmed, resident memory follows what is allocated.
     */
    public static long residentKiB() {
        LIBC.malloc_trim(0);
        return field("VmRSS:");
    }

    /** Threads of the process (Java and native). */
    public static long threads() {
        return field("Threads:");
    }

    private static long field(String name) {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (line.startsWith(name)) {
                    return Long.parseLong(line.substring(name.length()).trim().split("\\s+")[0]);
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        throw new IllegalStateException("no " + name + " in /proc/self/status");
    }
}

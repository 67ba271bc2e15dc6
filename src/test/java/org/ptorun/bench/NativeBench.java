package org.ptorun.bench;

import com.sun.jna.Native;
import com.sun.jna.NativeLibrary;
import com.sun.jna.Pointer;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The native side of the suite, {@code libptorun_bench.so} (src/test/c/bench/pto_bench.c),
 * bound by JNA direct mapping: a trivial run driven from C through the exported contract,
 * the condition-variable round-trip floor and a single-threaded memcpy. Each call is one
 * operation; pointers travel as {@code long}.
 */
final class NativeBench {

    static {
        Native.register(NativeBench.class, NativeLibrary.getInstance(BenchFiles.nativeTestFile("libptorun_bench.so")
                .toString()));
    }

    private NativeBench() {
    }

    /** A device context of its own on {@code libraryPath}, {@code callable} registered under {@code id}; 0 on failure. */
    static native long pto_bench_cycle_open(String libraryPath, byte[] aicpu, long aicpuSize, byte[] aicore,
                                            long aicoreSize, byte[] callable, int id);

    /** prepare → launch → poll (→ wait) → finalize; 0 or the first error code. */
    static native int pto_bench_cycle_run(long cycle);

    static native long pto_bench_cycle_committed_device_memory(long cycle);

    static native void pto_bench_cycle_close(long cycle);

    /** Starts the echo thread (parked); 0 on failure. */
    static native long pto_bench_pingpong_open();

    /** Wakes the echo thread and parks until it wakes the caller back. */
    static native void pto_bench_pingpong_round(long pingPong);

    static native void pto_bench_pingpong_close(long pingPong);

    static native void pto_bench_memcpy(long dst, long src, long bytes);

    private static native Pointer pto_bench_last_error();

    static String lastError() {
        Pointer p = pto_bench_last_error();
        return p == null ? "" : p.getString(0);
    }

    /** Reads a whole file (device images handed to the C driver). */
    static byte[] read(Path file) {
        try {
            return Files.readAllBytes(file);
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }
}

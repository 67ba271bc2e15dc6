package org.ptorun.internal;

import com.sun.jna.Memory;
import com.sun.jna.NativeLibrary;
import java.nio.file.Path;

/**
 * Test-only binding of the emulated device driver's extras (include/ptorun/pto_emudrv.h):
 * fault injection and its resource accounting. It opens the same
 * libptorun_emudrv.so the onboard libraries load (next to them), so both see one
 * driver instance.
 */
public final class EmulatedDriver {

    /** PtoEmuFault. */
    public enum Fault {
        NONE(0), ALLOC(1), H2D(2), D2H(3), LAUNCH(4), STREAM(5), HANG(6), DEVICE_LOST(7);

        final int code;

        Fault(int code) {
            this.code = code;
        }
    }

    /** PtoEmuStats. */
    public record Stats(long devicesOpen, long memoryCommitted, long allocations, long streams, long images,
                        long hostRegistrations, long threads) {
    }

    private static final int STATS_FIELDS = 7;

    private final NativeLibrary library;

    private EmulatedDriver(NativeLibrary library) {
        this.library = library;
    }

    /** The bundled driver in {@code libDir} (the directory of the ptorun libraries). */
    public static EmulatedDriver bundled(Path libDir) {
        return new EmulatedDriver(NativeLibrary.getInstance(libDir.resolve("libptorun_emudrv.so").toString()));
    }

    /** Arms one fault: the (afterNCalls + 1)-th call that can suffer it fails, once. */
    public void inject(Fault fault, int afterNCalls) {
        int rc = library.getFunction("ptorun_emudrv_inject").invokeInt(new Object[] {fault.code, afterNCalls});
        if (rc != 0) {
            throw new IllegalStateException("ptorun_emudrv_inject(" + fault + ") returned " + rc);
        }
    }

    public void disarm() {
        inject(Fault.NONE, 0);
    }

    public Stats stats() {
        try (Memory m = new Memory(8L * STATS_FIELDS)) {
            library.getFunction("ptorun_emudrv_stats").invokeVoid(new Object[] {m});
            return new Stats(m.getLong(0), m.getLong(8), m.getLong(16), m.getLong(24), m.getLong(32), m.getLong(40),
                    m.getLong(48));
        }
    }
}

package org.ptorun.internal;

import com.sun.jna.Function;
import com.sun.jna.Memory;
import com.sun.jna.Pointer;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The extras of the emulated device driver (include/ptorun/pto_emudrv.h): fault injection
 * and resource accounting, bound in the driver instance an onboard runner loads.
 *
 * <p>The runner ({@code platform/onboard/onboard_driver.c}) loads the file named by the
 * process's native {@code PTORUN_DRIVER} when it is set and non-empty, else
 * {@code libptorun_emudrv.so} next to its own library file, with
 * {@code dlopen(path, RTLD_NOW | RTLD_LOCAL)}. {@link #locate} makes the same decision and
 * {@link #open} the same {@code dlopen} call, so the dynamic loader hands both the one
 * instance (it shares an object already loaded from the same file). The handle is kept
 * for the life of the JVM.
 */
public final class EmulatedDriverLibrary {

    /** The bundled driver's file name, as the runner looks it up. */
    public static final String BUNDLED_FILE_NAME = "libptorun_emudrv.so";
    /** The environment variable naming another driver. */
    public static final String DRIVER_ENV = "PTORUN_DRIVER";
    /** {@code PtoEmuStats}: nine {@code uint64_t}. */
    public static final int STATS_FIELDS = 9;

    private static final String INJECT = "ptorun_emudrv_inject";
    private static final String STATS = "ptorun_emudrv_stats";
    private static final String STATE_FD = "ptorun_emudrv_state_fd";
    private static final String DRIVER_API = "pto_driver_api";
    private static final String EMULATED_NAME = "ptorun emulated device driver";
    private static final int RTLD_NOW = 0x2;
    private static final int RTLD_LOCAL = 0x0;
    private static final Map<String, Bound> OPEN = new ConcurrentHashMap<>();
    /* resolved once: a lookup between dlopen and dlerror would clear dlerror's message */
    private static final Function GETENV = Function.getFunction("c", "getenv");
    private static final Function DLOPEN = Function.getFunction("c", "dlopen");
    private static final Function DLSYM = Function.getFunction("c", "dlsym");
    private static final Function DLCLOSE = Function.getFunction("c", "dlclose");
    private static final Function DLERROR = Function.getFunction("c", "dlerror");

    /** Where a runner loads its driver from, and why there. */
    public record Location(String path, Origin origin) {

        /** True when the user named the driver ({@code -Dptorun.driver} or {@code PTORUN_DRIVER}). */
        public boolean fromEnvironment() {
            return origin != Origin.BUNDLED;
        }
    }

    /** Why a runner loads the driver it loads. */
    public enum Origin {
        /** {@code -Dptorun.driver}: {@code libptorun_driver.so} next to the runner links to it. */
        PROPERTY("-D" + NativeFolder.DRIVER_PROPERTY),
        /** The native environment's {@code PTORUN_DRIVER}. */
        ENVIRONMENT(DRIVER_ENV),
        /** {@code libptorun_emudrv.so} next to the runner library. */
        BUNDLED("bundled, next to the runner library");

        private final String text;

        Origin(String text) {
            this.text = text;
        }

        @Override
        public String toString() {
            return text;
        }
    }

    /** The extras of one loaded driver file; stateFd null for a driver older than the shared state. */
    private record Bound(Function inject, Function stats, Function stateFd) {
    }

    private final Location location;
    private final Function inject;
    private final Function stats;
    private final Function stateFd;

    private EmulatedDriverLibrary(Location location, Bound bound) {
        this.location = location;
        this.inject = bound.inject();
        this.stats = bound.stats();
        this.stateFd = bound.stateFd();
    }

    /**
     * The driver the onboard runner in {@code runnerFile} loads when a device context is
     * created now: the target of {@code libptorun_driver.so} next to {@code runnerFile}
     * when that link exists (the pin of {@code -Dptorun.driver}); else the native
     * {@code PTORUN_DRIVER} (read with {@code getenv}, as the runner does, so a value set
     * with {@code setenv} counts); else the bundled file next to {@code runnerFile}.
     */
    public static Location locate(Path runnerFile) {
        Path dir = runnerFile.getParent() == null ? Path.of(".") : runnerFile.getParent();
        Path pin = dir.resolve(NativeFolder.PINNED_DRIVER_FILE_NAME);
        if (Files.exists(pin, LinkOption.NOFOLLOW_LINKS)) {
            return new Location(pin.toString(), Origin.PROPERTY);
        }
        String env = (String) GETENV.invoke(String.class, new Object[] {DRIVER_ENV});
        if (env != null && !env.isEmpty()) {
            return new Location(env, Origin.ENVIRONMENT);
        }
        return new Location(dir.resolve(BUNDLED_FILE_NAME).toString(), Origin.BUNDLED);
    }

    /**
     * Opens the driver at {@code location} (once per path) and binds its extras.
     *
     * @throws DriverUnavailableException when it cannot be loaded, or it is not the
     *         emulated device driver
     */
    public static EmulatedDriverLibrary open(Location location) {
        Bound bound = OPEN.get(location.path());
        if (bound == null) {
            bound = OPEN.computeIfAbsent(location.path(), p -> bind(location));
        }
        return new EmulatedDriverLibrary(location, bound);
    }

    private static Bound bind(Location location) {
        Pointer handle = (Pointer) DLOPEN.invoke(Pointer.class, new Object[] {location.path(), RTLD_NOW | RTLD_LOCAL});
        if (handle == null) {
            throw new DriverUnavailableException("cannot load the driver " + location.path() + " ("
                    + location.origin() + "): " + dlerror(), false);
        }
        Pointer driverApi = symbol(handle, DRIVER_API);
        Pointer inject = symbol(handle, INJECT);
        Pointer stats = symbol(handle, STATS);
        if (driverApi == null || inject == null || stats == null) {
            String missing = driverApi == null ? DRIVER_API : inject == null ? INJECT : STATS;
            dlclose(handle);
            throw new DriverUnavailableException("the driver " + location.path() + " (" + location.origin()
                    + ") is not the emulated device driver: it exports no " + missing, true);
        }
        Pointer table = (Pointer) Function.getFunction(driverApi).invoke(Pointer.class, new Object[0]);
        Pointer namePointer = table == null ? null : table.getPointer(8);
        String name = namePointer == null ? null : namePointer.getString(0);
        if (!EMULATED_NAME.equals(name)) {
            dlclose(handle);
            throw new DriverUnavailableException("the driver " + location.path() + " (" + location.origin()
                    + ") is not the emulated device driver: it calls itself '" + name + "'", true);
        }
        Pointer stateFd = symbol(handle, STATE_FD);
        return new Bound(Function.getFunction(inject), Function.getFunction(stats),
                stateFd == null ? null : Function.getFunction(stateFd));
    }

    private static Pointer symbol(Pointer handle, String name) {
        return (Pointer) DLSYM.invoke(Pointer.class, new Object[] {handle, name});
    }

    private static void dlclose(Pointer handle) {
        DLCLOSE.invokeInt(new Object[] {handle});
    }

    private static String dlerror() {
        String error = (String) DLERROR.invoke(String.class, new Object[0]);
        return error == null ? "dlopen failed" : error;
    }

    public Location location() {
        return location;
    }

    /** {@code ptorun_emudrv_inject(kind, afterNCalls)}: 0, or -1 for an unknown kind or a negative count. */
    public int inject(int kind, int afterNCalls) {
        return inject.invokeInt(new Object[] {kind, afterNCalls});
    }

    /** {@code ptorun_emudrv_stats}: the nine counters of {@code PtoEmuStats}, in order. */
    public long[] stats() {
        try (Memory m = new Memory(8L * STATS_FIELDS)) {
            m.clear();
            stats.invokeVoid(new Object[] {m});
            return m.getLongArray(0, STATS_FIELDS);
        }
    }

    /**
     * {@code ptorun_emudrv_state_fd}: the memfd holding this driver's armed faults and
     * counters, for a chip host to share (docs/isolation.md, Emulated faults); -1 when the
     * driver runs on private state or predates the shared state. The driver keeps it open
     * for the life of the process.
     */
    public int stateFd() {
        return stateFd == null ? -1 : stateFd.invokeInt(new Object[0]);
    }

    /**
     * The state fd ({@link #stateFd()}) of the emulated driver that the onboard runner in
     * {@code runnerFile} loads, found as {@link #locate} finds it and opened as
     * {@link #open} opens it (so the instance {@code org.ptorun.testing.EmulatedFaults}
     * arms faults in); -1 when that driver cannot be loaded or is another driver (a chip
     * host then runs its driver on state of its own). The bundled driver is loaded into the
     * JVM for this; a driver the user named ({@code -Dptorun.driver}, {@code PTORUN_DRIVER})
     * only when it was bound already ({@code EmulatedFaults.of}): a hardware driver named
     * there must not be loaded into the JVM of a chip in process isolation.
     */
    public static int sharedStateFd(Path runnerFile) {
        Location location = locate(runnerFile);
        if (location.fromEnvironment() && !OPEN.containsKey(location.path())) {
            return -1;
        }
        try {
            return open(location).stateFd();
        } catch (DriverUnavailableException e) {
            return -1;
        }
    }

    /** The driver cannot be bound: not loadable, or not the emulated driver. */
    public static final class DriverUnavailableException extends RuntimeException {

        private static final long serialVersionUID = 1L;
        private final boolean notEmulated;

        DriverUnavailableException(String message, boolean notEmulated) {
            super(message);
            this.notEmulated = notEmulated;
        }

        /** True: the driver loaded but is another driver; false: it could not be loaded. */
        public boolean notEmulated() {
            return notEmulated;
        }
    }
}

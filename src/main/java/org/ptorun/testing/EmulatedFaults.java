package org.ptorun.testing;

import java.nio.file.Path;
import java.util.Objects;
import org.ptorun.HostRuntime;
import org.ptorun.LibraryLoadException;
import org.ptorun.Variant;
import org.ptorun.internal.EmulatedDriverLibrary;
import org.ptorun.internal.EmulatedDriverLibrary.DriverUnavailableException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Fault injection into the emulated device driver that an onboard {@link HostRuntime}
 * loads, and the driver's resource accounting: test your service against device
 * faults through the public API (docs/testing.md).
 *
 * <pre>{@code
 * HostRuntime runtime = HostRuntime.load(Variant.parse("a2a3/onboard/hbg"));
 * EmulatedFaults faults = EmulatedFaults.of(runtime);
 * DriverStats before = faults.stats();
 * try (ChipWorker chip = ChipWorker.open(runtime, 0)) {
 *     try (ArmedFault armed = faults.armed(Fault.ALLOC, 0)) {
 *         assertThatThrownBy(() -> chip.malloc(4096)).isInstanceOf(DeviceOutOfMemoryException.class);
 *     }
 * }
 * assertThat(faults.stats()).isEqualTo(before);
 * }</pre>
 *
 * <p>The driver's faults are <b>process-wide</b>: one armed fault fires on the first
 * call that can suffer it on any device of any onboard library in the JVM (they all
 * load one driver instance). Chips in process isolation share them too: each onboard
 * chip host's driver maps the state page of this driver (armed faults and counters), so a
 * fault fires once in whichever process gets there first and {@link #stats()} counts
 * the chip hosts still running (docs/testing.md, Across chip hosts). Tests that inject
 * faults must not run in parallel with other onboard tests in the same JVM. Thread-safe.
 */
public final class EmulatedFaults {

    private static final Logger LOG = LoggerFactory.getLogger(EmulatedFaults.class);

    private final EmulatedDriverLibrary driver;

    private EmulatedFaults(EmulatedDriverLibrary driver) {
        this.driver = driver;
    }

    /**
     * The emulated driver {@code runtime}'s onboard libraries load: the file named by
     * {@code -Dptorun.driver} when it was set as the library loaded, else the file named
     * by the process environment's {@code PTORUN_DRIVER} when it is set, else
     * {@code libptorun_emudrv.so} next to {@link HostRuntime#libraryFile()}. The same
     * file is loaded once per process, so this binds exactly the instance the chips
     * use (it need not have been opened yet).
     *
     * @throws IllegalArgumentException when {@code runtime} is a sim variant (it loads
     *         no driver)
     * @throws IllegalStateException when the driver the runtime loads is another driver
     *         (a {@code PTORUN_DRIVER} naming a hardware driver), the message naming it
     * @throws LibraryLoadException when the driver file cannot be loaded
     */
    public static EmulatedFaults of(HostRuntime runtime) {
        Objects.requireNonNull(runtime, "runtime");
        Variant variant = runtime.variant();
        if (variant.platform() != Variant.Platform.ONBOARD) {
            throw new IllegalArgumentException(variant + " is a sim variant: it loads no device driver, so there is"
                    + " no emulated driver to inject faults into; use an onboard variant ("
                    + new Variant(variant.arch(), Variant.Platform.ONBOARD, variant.runtime()) + ")");
        }
        EmulatedDriverLibrary.Location location = EmulatedDriverLibrary.locate(runtime.libraryFile());
        try {
            EmulatedFaults faults = new EmulatedFaults(EmulatedDriverLibrary.open(location));
            LOG.debug("fault injection for {} bound to {} ({})", variant, location.path(), location.origin());
            return faults;
        } catch (DriverUnavailableException e) {
            String message = variant + ": " + e.getMessage();
            if (e.notEmulated()) {
                throw new IllegalStateException(message + "; fault injection needs the emulated driver"
                        + " (unset " + (location.origin() == EmulatedDriverLibrary.Origin.PROPERTY
                                ? "-Dptorun.driver" : "PTORUN_DRIVER") + " to use the bundled one)");
            }
            throw new LibraryLoadException(message);
        }
    }

    /** The driver file this binds (as the runner names it to the dynamic loader). */
    public Path driverFile() {
        return Path.of(driver.location().path());
    }

    /**
     * True when the user named the driver ({@code -Dptorun.driver} or {@code PTORUN_DRIVER}),
     * false for the bundled one.
     */
    public boolean fromEnvironment() {
        return driver.location().fromEnvironment();
    }

    /**
     * Arms {@code fault}, one-shot: the {@code afterNCalls + 1}-th driver call that can
     * suffer it fails (0 = the next one), then it is disarmed. Arming a fault that is
     * still armed replaces its countdown; other faults stay as they are.
     *
     * @throws IllegalArgumentException when {@code afterNCalls} is negative
     */
    public void inject(Fault fault, int afterNCalls) {
        Objects.requireNonNull(fault, "fault");
        if (afterNCalls < 0) {
            throw new IllegalArgumentException("afterNCalls must be >= 0, got " + afterNCalls);
        }
        int rc = driver.inject(fault.code(), afterNCalls);
        if (rc != 0) {
            throw new IllegalStateException("ptorun_emudrv_inject(" + fault + ", " + afterNCalls + ") returned " + rc);
        }
        LOG.debug("armed {} after {} call(s)", fault, afterNCalls);
    }

    /**
     * {@link #inject} as a scope: the returned handle disarms every fault when closed,
     * whether or not this one fired.
     */
    public ArmedFault armed(Fault fault, int afterNCalls) {
        inject(fault, afterNCalls);
        return new ArmedFault(this, fault, afterNCalls);
    }

    /** Disarms every fault (the driver disarms all kinds at once, there is no per-kind disarm). */
    public void disarm() {
        int rc = driver.inject(0, 0);
        if (rc != 0) {
            throw new IllegalStateException("ptorun_emudrv_inject(NONE) returned " + rc);
        }
    }

    /** The driver's accounting now. */
    public DriverStats stats() {
        long[] s = driver.stats();
        return new DriverStats(s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7], s[8]);
    }

    @Override
    public String toString() {
        return "EmulatedFaults[" + driver.location().path() + " (" + driver.location().origin() + ")]";
    }
}

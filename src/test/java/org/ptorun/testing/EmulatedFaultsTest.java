package org.ptorun.testing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;
import org.ptorun.ChipWorker;
import org.ptorun.DeviceOutOfMemoryException;
import org.ptorun.HostRuntime;
import org.ptorun.LibraryLoadException;
import org.ptorun.Variant;
import org.ptorun.internal.ProcessEnvironment;

/**
 * How {@link EmulatedFaults} finds the driver: the one the onboard runner loads (next to
 * it, or {@code PTORUN_DRIVER}), one instance for every onboard library, refusals for a
 * sim variant, a driver that is not the emulated one and one that cannot be loaded.
 */
class EmulatedFaultsTest {

    private static final Variant ONBOARD = Variant.parse("a2a3/onboard/hbg");

    static List<Variant> onboard() {
        return Variant.all().stream().filter(v -> v.platform() == Variant.Platform.ONBOARD).toList();
    }

    static List<Variant> sim() {
        return Variant.all().stream().filter(v -> v.platform() == Variant.Platform.SIM).toList();
    }

    @AfterEach
    void cleanUp() {
        ProcessEnvironment.unset("PTORUN_DRIVER");
        EmulatedFaults.of(HostRuntime.load(ONBOARD)).disarm();
    }

    private static Path bundledDriver(HostRuntime runtime) {
        return runtime.libraryFile().resolveSibling("libptorun_emudrv.so");
    }

    @ParameterizedTest
    @MethodSource("onboard")
    void everyOnboardLibraryBindsTheBundledDriverNextToIt(Variant variant) {
        HostRuntime runtime = HostRuntime.load(variant);
        EmulatedFaults faults = EmulatedFaults.of(runtime);
        assertThat(faults.driverFile()).isEqualTo(bundledDriver(runtime));
        assertThat(faults.fromEnvironment()).isFalse();
        assertThat(faults.toString()).contains("libptorun_emudrv.so").contains("bundled");
    }

    /** The driver is one instance: a fault armed through a5/onboard/trb's handle fires in an a2a3 chip. */
    @Test
    void aFaultArmedThroughOneLibraryFiresInAChipOfAnother() {
        EmulatedFaults viaA5 = EmulatedFaults.of(HostRuntime.load(Variant.parse("a5/onboard/trb")));
        DriverStats before = viaA5.stats();
        try (ChipWorker chip = ChipWorker.open(HostRuntime.load(ONBOARD), 0)) {
            assertThat(viaA5.stats().devicesOpen()).isEqualTo(before.devicesOpen() + 1);
            try (ArmedFault armed = viaA5.armed(Fault.ALLOC, 1)) {
                assertThat(armed.fault()).isEqualTo(Fault.ALLOC);
                assertThat(armed.afterNCalls()).isEqualTo(1);
                chip.malloc(4096).close(); // the first call passes
                assertThatThrownBy(() -> chip.malloc(4096)).isExactlyInstanceOf(DeviceOutOfMemoryException.class);
                chip.malloc(4096).close(); // one-shot: spent
            }
        }
        assertThat(viaA5.stats()).isEqualTo(before);
    }

    @Test
    void theScopeDisarmsAFaultThatDidNotFire() {
        EmulatedFaults faults = EmulatedFaults.of(HostRuntime.load(ONBOARD));
        try (ChipWorker chip = ChipWorker.open(HostRuntime.load(ONBOARD), 0)) {
            ArmedFault armed = faults.armed(Fault.ALLOC, 0);
            armed.close();
            armed.close(); // idempotent
            chip.malloc(4096).close();
            faults.inject(Fault.ALLOC, 0);
            faults.disarm();
            chip.malloc(4096).close();
        }
    }

    @Test
    void aNegativeCountIsRefused() {
        EmulatedFaults faults = EmulatedFaults.of(HostRuntime.load(ONBOARD));
        assertThatThrownBy(() -> faults.inject(Fault.LAUNCH, -1)).isExactlyInstanceOf(IllegalArgumentException.class)
                .hasMessage("afterNCalls must be >= 0, got -1");
        assertThatThrownBy(() -> faults.inject(null, 0)).isExactlyInstanceOf(NullPointerException.class);
    }

    @ParameterizedTest
    @EnumSource(Fault.class)
    void everyFaultHasItsDriverCode(Fault fault) {
        assertThat(fault.code()).isEqualTo(fault.ordinal() + 1);
    }

    @ParameterizedTest
    @MethodSource("sim")
    void aSimVariantIsRefused(Variant variant) {
        assertThatThrownBy(() -> EmulatedFaults.of(HostRuntime.load(variant)))
                .isExactlyInstanceOf(IllegalArgumentException.class)
                .hasMessage(variant + " is a sim variant: it loads no device driver, so there is no emulated driver"
                        + " to inject faults into; use an onboard variant (" + variant.arch().name().toLowerCase()
                        + "/onboard/" + variant.runtime().name().toLowerCase() + ")");
    }

    @Test
    void aDriverNamedByPtorunDriverIsTheOneBound() {
        Path bundled = bundledDriver(HostRuntime.load(ONBOARD));
        ProcessEnvironment.set("PTORUN_DRIVER", bundled.toString());
        EmulatedFaults faults = EmulatedFaults.of(HostRuntime.load(ONBOARD));
        assertThat(faults.driverFile()).isEqualTo(bundled);
        assertThat(faults.fromEnvironment()).isTrue();
        try (ChipWorker chip = ChipWorker.open(HostRuntime.load(ONBOARD), 0);
                ArmedFault armed = faults.armed(Fault.ALLOC, 0)) {
            assertThatThrownBy(() -> chip.malloc(4096)).isExactlyInstanceOf(DeviceOutOfMemoryException.class);
        }
    }

    @Test
    void aDriverThatIsNotTheEmulatedOneIsRefused() {
        Path other = Path.of(System.getProperty("ptorun.nativeTestDir"), "fixtures",
                "libptorun_fixture_incomplete_driver.so");
        ProcessEnvironment.set("PTORUN_DRIVER", other.toString());
        assertThatThrownBy(() -> EmulatedFaults.of(HostRuntime.load(ONBOARD)))
                .isExactlyInstanceOf(IllegalStateException.class)
                .hasMessage("a2a3/onboard/hbg: the driver " + other + " (PTORUN_DRIVER) is not the emulated device"
                        + " driver: it exports no ptorun_emudrv_inject; fault injection needs the emulated driver"
                        + " (unset PTORUN_DRIVER to use the bundled one)");
    }

    @Test
    void aLibraryThatIsNoDriverAtAllIsRefused() {
        Path runner = HostRuntime.load(Variant.DEFAULT).libraryFile();
        ProcessEnvironment.set("PTORUN_DRIVER", runner.toString());
        assertThatThrownBy(() -> EmulatedFaults.of(HostRuntime.load(ONBOARD)))
                .isExactlyInstanceOf(IllegalStateException.class)
                .hasMessageContaining("is not the emulated device driver: it exports no pto_driver_api");
    }

    @Test
    void aDriverThatCannotBeLoadedIsALibraryLoadException() {
        ProcessEnvironment.set("PTORUN_DRIVER", "/nonexistent/libdriver.so");
        assertThatThrownBy(() -> EmulatedFaults.of(HostRuntime.load(ONBOARD)))
                .isExactlyInstanceOf(LibraryLoadException.class)
                .hasMessageStartingWith("a2a3/onboard/hbg: cannot load the driver /nonexistent/libdriver.so"
                        + " (PTORUN_DRIVER): ")
                .hasMessageContaining("No such file");
    }
}

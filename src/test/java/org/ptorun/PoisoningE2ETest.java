package org.ptorun;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;
import static org.ptorun.SimE2E.assertBitExact;
import static org.ptorun.SimE2E.filled;
import static org.ptorun.SimE2E.random;

import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.ptorun.internal.ProcessEnvironment;
import org.ptorun.testing.DriverStats;
import org.ptorun.testing.EmulatedFaults;
import org.ptorun.testing.Fault;

/**
 * Poisoning as the real libraries decide it ({@code device_poisoned_ctx}, asked by the
 * chip after a failed call): on every onboard library a {@code PTO_ERR_DEVICE} from a
 * failed copy (a transient driver failure) has poisoned the context, so the chip is
 * unhealthy as the exception is thrown, before any further call; on every sim library a
 * {@code PTO_ERR_DEVICE} (the sim's injected submit failure,
 * PTORUN_SIM_FAIL_ENQUEUE_AFTER) has not, the chip stays healthy and the next run golden.
 */
class PoisoningE2ETest {

    private static final int CHAIN = 1;
    private static final int N = 256;
    private static final EmulatedFaults FAULTS =
            EmulatedFaults.of(HostRuntime.load(Variant.parse("a2a3/onboard/hbg")));

    static List<Variant> onboard() {
        return Variant.all().stream().filter(v -> v.platform() == Variant.Platform.ONBOARD).toList();
    }

    static List<Variant> sim() {
        return SimE2E.simVariants();
    }

    @AfterEach
    void disarm() {
        FAULTS.disarm();
        ProcessEnvironment.unset("PTORUN_SIM_FAIL_ENQUEUE_AFTER");
    }

    @ParameterizedTest
    @MethodSource("onboard")
    void onOnboardADeviceErrorOfAFailedCopyMakesTheChipUnhealthyAtOnce(Variant variant) {
        DriverStats baseline = FAULTS.stats();
        HostRuntime runtime = HostRuntime.load(variant);
        try (ChipWorker chip = ChipWorker.open(runtime, 0);
                DeviceBuffer buffer = chip.malloc(4L * N)) {
            assertThat(chip.isHealthy()).isTrue();
            assertThat(runtime.api().devicePoisoned(chip.deviceContext())).isZero();
            FAULTS.inject(Fault.H2D, 0);
            DeviceErrorException e = catchThrowableOfType(DeviceErrorException.class,
                    () -> chip.copyTo(buffer, random(N, 1)));
            assertThat(e).isNotNull();
            assertThat(e.code()).isEqualTo(PtoError.DEVICE.code());
            assertThat(chip.isHealthy()).as("unhealthy with no further call").isFalse();
            assertThat(runtime.api().devicePoisoned(chip.deviceContext())).as("the library's answer").isEqualTo(1);
        }
        assertThat(FAULTS.stats()).as("close released everything").isEqualTo(baseline);
    }

    @ParameterizedTest
    @MethodSource("sim")
    void onSimADeviceErrorLeavesTheChipHealthyAndTheNextRunGolden(Variant variant) {
        // the sim's test facility, read at simpler_init: the first submit fails before the marker
        ProcessEnvironment.set("PTORUN_SIM_FAIL_ENQUEUE_AFTER", "0");
        ChipWorker opened;
        try {
            opened = ChipWorker.open(HostRuntime.load(variant), 0);
        } finally {
            ProcessEnvironment.unset("PTORUN_SIM_FAIL_ENQUEUE_AFTER");
        }
        try (ChipWorker chip = opened) {
            chip.registerCallable(CHAIN, ChipWorkerE2ETest.vectorChain(N));
            float[] a = random(N, 1);
            float[] b = random(N, 2);
            NativeRun failing = chip.prepare(CHAIN, ChipWorkerE2ETest.chainArgs(a, b, filled(N)),
                    CallConfig.DEFAULT, PipelineSlotLease.of(0, 1), 1, 1, null);
            DeviceErrorException e = catchThrowableOfType(DeviceErrorException.class, () -> chip.launch(failing));
            assertThat(e).isNotNull();
            assertThat(e.code()).isEqualTo(PtoError.DEVICE.code());
            assertThat(e.getMessage()).contains("injected failure before the launch marker")
                    .doesNotContain("poisoned");
            assertThat(chip.isHealthy()).as("the sim never poisons").isTrue();
            assertThat(HostRuntime.load(variant).api().devicePoisoned(chip.deviceContext()))
                    .as("the library's answer").isZero();
            assertThat(catchThrowableOfType(DeviceErrorException.class, () -> chip.finalizeRun(failing)))
                    .isNotNull();
            assertThat(chip.isHealthy()).isTrue();
            float[] f = filled(N);
            chip.run(CHAIN, ChipWorkerE2ETest.chainArgs(a, b, f), CallConfig.DEFAULT, PipelineSlotLease.of(0, 1), 2,
                    2, null);
            assertBitExact(f, ChipWorkerE2ETest.reference(a, b));
        }
    }
}

package org.ptorun;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The poisoning rule on the Java side (docs/reliability.md, section 4), the same as the C
 * side's: {@code PTO_ERR_POISONED} on any platform, {@code PTO_ERR_DEVICE} and {@code
 * PTO_ERR_TIMEOUT} on an onboard library, nothing else; and a failure that poisons marks
 * the chip unhealthy as it is thrown (against a scripted {@link FakeNativeApi}).
 */
class ChipDevicePoisoningTest {

    /** Written out rather than derived from the rule under test. */
    private static final Set<PtoError> POISON_ON_SIM = EnumSet.of(PtoError.POISONED);
    private static final Set<PtoError> POISON_ON_ONBOARD =
            EnumSet.of(PtoError.DEVICE, PtoError.TIMEOUT, PtoError.POISONED);

    static List<Arguments> everyCodeOnEveryPlatform() {
        List<Arguments> all = new ArrayList<>();
        for (PtoError e : PtoError.values()) {
            for (Variant.Platform p : Variant.Platform.values()) {
                all.add(Arguments.of(e, p));
            }
        }
        return all;
    }

    @ParameterizedTest(name = "{0} on {1}")
    @MethodSource("everyCodeOnEveryPlatform")
    void aCodePoisonsExactlyAsTheRuleSays(PtoError error, Variant.Platform platform) {
        boolean expected = (platform == Variant.Platform.ONBOARD ? POISON_ON_ONBOARD : POISON_ON_SIM).contains(error);
        assertThat(ChipDevice.poisons(error.code(), platform)).as("%s on %s", error.cName(), platform)
                .isEqualTo(expected);
    }

    @ParameterizedTest
    @ValueSource(ints = {1, -16, -100, Integer.MIN_VALUE})
    void aCodeOutsideTheContractPoisonsNothing(int code) {
        for (Variant.Platform p : Variant.Platform.values()) {
            assertThat(ChipDevice.poisons(code, p)).as("%d on %s", code, p).isFalse();
        }
    }

    // ---- the chip is marked as the exception is thrown -------------------------------------------

    private static final Variant ONBOARD = Variant.parse("a2a3/onboard/hbg");
    private final List<AutoCloseable> toClose = new ArrayList<>();

    @AfterEach
    void tearDown() throws Exception {
        for (int i = toClose.size() - 1; i >= 0; i--) {
            toClose.get(i).close();
        }
    }

    private ChipWorker open(FakeNativeApi fake, Variant variant) {
        toClose.add(fake);
        ChipWorker chip = new ChipWorker(fake, variant, ChipWorkerPhaseTableTest.DEPTH2, fake.runtimeSize(),
                fake.runtimeAlignment(), 0, ChipWorkerPhaseTableTest.IMAGE, ChipWorkerPhaseTableTest.IMAGE);
        fake.bind(chip.runtimeBufferAddresses());
        toClose.add(chip);
        return chip;
    }

    @Test
    void onOnboardACopysDeviceErrorMarksTheChipAtOnce() {
        FakeNativeApi fake = new FakeNativeApi();
        ChipWorker chip = open(fake, ONBOARD);
        try (DeviceBuffer buffer = chip.malloc(64)) {
            fake.script("copyToDevice", PtoError.DEVICE.code(), "a copy to the device (memcpy_h2d) failed");
            assertThatThrownBy(() -> chip.copyTo(buffer, new float[16]))
                    .isExactlyInstanceOf(DeviceErrorException.class);
            assertThat(chip.isHealthy()).as("no further call needed").isFalse();
        }
    }

    @Test
    void onOnboardATimeoutAtFinalizeMarksTheChipAtOnce() {
        FakeNativeApi fake = new FakeNativeApi();
        ChipWorker chip = open(fake, ONBOARD);
        NativeRun run = chip.prepare(0, TaskArgs.of(Tensor.of(new float[4])), CallConfig.DEFAULT,
                PipelineSlotLease.of(0, 1), 7, 9, null);
        chip.launch(run);
        fake.script("finalizeRun", PtoError.TIMEOUT.code(), "the run exceeded its timeout of 200 ms");
        assertThatThrownBy(() -> chip.finalizeRun(run)).isExactlyInstanceOf(RunTimeoutException.class);
        assertThat(chip.isHealthy()).isFalse();
    }

    @Test
    void onOnboardOtherFailuresLeaveTheChipHealthy() {
        FakeNativeApi fake = new FakeNativeApi();
        ChipWorker chip = open(fake, ONBOARD);
        try (DeviceBuffer buffer = chip.malloc(64)) {
            fake.script("copyToDevice", PtoError.INVALID_ARGUMENT.code(), "outside the allocation");
            assertThatThrownBy(() -> chip.copyTo(buffer, new float[16]))
                    .isExactlyInstanceOf(InvalidNativeArgumentException.class);
        }
        NativeRun run = chip.prepare(0, TaskArgs.of(Tensor.of(new float[4])), CallConfig.DEFAULT,
                PipelineSlotLease.of(0, 1), 7, 9, null);
        chip.launch(run);
        fake.script("finalizeRun", PtoError.KERNEL_FAULT.code(), "kernel fault: task 0");
        assertThatThrownBy(() -> chip.finalizeRun(run)).isExactlyInstanceOf(KernelFaultException.class);
        assertThat(chip.isHealthy()).isTrue();
    }

    @Test
    void onSimADeviceErrorOrTimeoutLeavesTheChipHealthy() {
        FakeNativeApi fake = new FakeNativeApi();
        ChipWorker chip = open(fake, Variant.DEFAULT);
        try (DeviceBuffer buffer = chip.malloc(64)) {
            fake.script("copyToDevice", PtoError.DEVICE.code(), "injected");
            assertThatThrownBy(() -> chip.copyTo(buffer, new float[16]))
                    .isExactlyInstanceOf(DeviceErrorException.class);
        }
        NativeRun run = chip.prepare(0, TaskArgs.of(Tensor.of(new float[4])), CallConfig.DEFAULT,
                PipelineSlotLease.of(0, 1), 7, 9, null);
        chip.launch(run);
        fake.script("finalizeRun", PtoError.TIMEOUT.code(), "the run exceeded its timeout of 200 ms");
        assertThatThrownBy(() -> chip.finalizeRun(run)).isExactlyInstanceOf(RunTimeoutException.class);
        assertThat(chip.isHealthy()).isTrue();
    }

    @Test
    void aPoisonedRefusalMarksTheChipOnEitherPlatform() {
        for (Variant variant : List.of(Variant.DEFAULT, ONBOARD)) {
            FakeNativeApi fake = new FakeNativeApi();
            ChipWorker chip = open(fake, variant);
            fake.script("prepareRun", PtoError.POISONED.code(), "the device context refuses work");
            assertThatThrownBy(() -> chip.prepare(0, TaskArgs.of(Tensor.of(new float[4])), CallConfig.DEFAULT,
                    PipelineSlotLease.of(0, 1), 7, 9, null)).isExactlyInstanceOf(ChipPoisonedException.class);
            assertThat(chip.isHealthy()).as("%s", variant).isFalse();
        }
    }
}

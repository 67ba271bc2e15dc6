package org.ptorun;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Poisoning is the library's answer ({@code device_poisoned_ctx}), never a rule of the
 * Java side: against a scripted {@link FakeNativeApi}, a failed call marks the chip
 * unhealthy exactly when the library then says its context is poisoned — whatever the
 * code and the platform — as the exception is thrown; only a failure makes the chip ask.
 * What the real libraries answer (onboard and sim, with injected faults) is
 * {@link PoisoningE2ETest}'s.
 */
class ChipDevicePoisoningTest {

    static List<Arguments> everyFailureOnEveryPlatformEitherAnswer() {
        List<Arguments> all = new ArrayList<>();
        for (PtoError e : PtoError.values()) {
            for (Variant.Platform p : Variant.Platform.values()) {
                if (e != PtoError.OK) {
                    all.add(Arguments.of(e, p, true));
                    all.add(Arguments.of(e, p, false));
                }
            }
        }
        return all;
    }

    @ParameterizedTest(name = "{0} on {1}, library says poisoned: {2}")
    @MethodSource("everyFailureOnEveryPlatformEitherAnswer")
    void theChipFollowsTheLibrarysAnswer(PtoError error, Variant.Platform platform, boolean libraryPoisoned) {
        FakeNativeApi fake = new FakeNativeApi();
        ChipWorker chip = open(fake, new Variant(Variant.Arch.A2A3, platform, Variant.RuntimeKind.HBG));
        try (DeviceBuffer buffer = chip.malloc(64)) {
            fake.script("copyToDevice", error.code(), "injected");
            fake.poisoned = libraryPoisoned;
            assertThatThrownBy(() -> chip.copyTo(buffer, new float[16])).isInstanceOf(PtoRunException.class);
            assertThat(fake.poisonQueries).as("asked once, after the failure").hasValue(1);
            assertThat(chip.isHealthy()).as("no further call needed").isEqualTo(!libraryPoisoned);
        }
    }

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
    void aTimeoutAtFinalizeThatPoisonedMarksTheChipAtOnce() {
        FakeNativeApi fake = new FakeNativeApi();
        ChipWorker chip = open(fake, ONBOARD);
        NativeRun run = chip.prepare(0, TaskArgs.of(Tensor.of(new float[4])), CallConfig.DEFAULT,
                PipelineSlotLease.of(0, 1), 7, 9, null);
        chip.launch(run);
        fake.script("finalizeRun", PtoError.TIMEOUT.code(), "the run exceeded its timeout of 200 ms");
        fake.poisoned = true;
        assertThatThrownBy(() -> chip.finalizeRun(run)).isExactlyInstanceOf(RunTimeoutException.class);
        assertThat(chip.isHealthy()).isFalse();
    }

    @Test
    void aPoisonedRefusalOfPrepareMarksTheChip() {
        FakeNativeApi fake = new FakeNativeApi();
        ChipWorker chip = open(fake, ONBOARD);
        fake.script("prepareRun", PtoError.POISONED.code(), "the device context refuses work");
        fake.poisoned = true;
        assertThatThrownBy(() -> chip.prepare(0, TaskArgs.of(Tensor.of(new float[4])), CallConfig.DEFAULT,
                PipelineSlotLease.of(0, 1), 7, 9, null)).isExactlyInstanceOf(ChipPoisonedException.class);
        assertThat(chip.isHealthy()).isFalse();
    }

    /** The question costs a native call: never on the successful path (P1, docs/performance.md). */
    @Test
    void successfulCallsNeverAsk() {
        FakeNativeApi fake = new FakeNativeApi();
        ChipWorker chip = open(fake, ONBOARD);
        try (DeviceBuffer buffer = chip.malloc(64)) {
            chip.copyTo(buffer, new float[16]);
        }
        for (int i = 0; i < 3; i++) {
            NativeRun run = chip.prepare(0, TaskArgs.of(Tensor.of(new float[4])), CallConfig.DEFAULT,
                    PipelineSlotLease.of(0, i + 1), 7, 9, null);
            chip.launch(run);
            chip.finalizeRun(run);
        }
        assertThat(fake.poisonQueries).hasValue(0);
        assertThat(chip.isHealthy()).isTrue();
    }
}

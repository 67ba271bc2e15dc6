package org.ptorun;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;
import static org.ptorun.SimE2E.assertBitExact;
import static org.ptorun.SimE2E.filled;
import static org.ptorun.SimE2E.random;

import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.ptorun.testing.DriverStats;
import org.ptorun.testing.EmulatedFaults;
import org.ptorun.testing.Fault;

/**
 * The fault matrix of the onboard libraries on the emulated driver: each injectable
 * fault at each phase where it can occur gives the right exception with the run's
 * identity; a fault before the launch marker leaves the acceptance word 0; the chip is
 * usable again — directly after an allocation failure, after close and reopen after
 * every device failure ({@code PTO_ERR_DEVICE}, {@code PTO_ERR_TIMEOUT}: each one
 * poisons, transient ones such as a failed copy or a refused launch included, and the
 * chip reads unhealthy as the exception is thrown); and after close the driver's own
 * accounting is back to where it was before the chip was opened.
 */
class OnboardFaultMatrixE2ETest {

    private static final int CHAIN = 1;
    private static final int BIG_CHAIN = 2;
    private static final int FAULTY = 3;
    private static final int N = 256;
    /** Big enough that a run of it needs more staging than a run of the N-float chain committed. */
    private static final int BIG_N = 1 << 16;
    /** The emulated driver the onboard libraries load (one instance for all of them). */
    private static final EmulatedFaults FAULTS =
            EmulatedFaults.of(HostRuntime.load(Variant.parse("a2a3/onboard/hbg")));

    static List<Variant> onboard() {
        return Variant.all().stream().filter(v -> v.platform() == Variant.Platform.ONBOARD).toList();
    }

    @AfterEach
    void disarm() {
        FAULTS.disarm();
    }

    // ---- helpers ------------------------------------------------------------------------------

    private static ChipWorker open(Variant variant) {
        return ChipWorker.open(HostRuntime.load(variant), 0);
    }

    private static ChipWorker openWithChain(Variant variant) {
        ChipWorker chip = open(variant);
        chip.registerCallable(CHAIN, ChipWorkerE2ETest.vectorChain(N));
        return chip;
    }

    /** A golden run of the chain: the chip works. */
    private static void assertRunsGolden(ChipWorker chip, long runId) {
        float[] a = random(N, runId);
        float[] b = random(N, runId + 7);
        float[] f = filled(N);
        chip.run(CHAIN, ChipWorkerE2ETest.chainArgs(a, b, f), CallConfig.DEFAULT, PipelineSlotLease.of(0, 1), runId,
                runId, null);
        assertBitExact(f, ChipWorkerE2ETest.reference(a, b));
    }

    private static TaskArgs args() {
        return ChipWorkerE2ETest.chainArgs(random(N, 1), random(N, 2), filled(N));
    }

    /**
     * Launches a run that is going to fail on the device. A short run can end before the
     * launching thread wakes from the marker; launch then reports the run's outcome (the
     * ABI's rule: a run that already ended returns its result from launch), so both a
     * normal return and a failure naming this run are correct. Finalize reports the
     * failure either way, which is what the callers assert.
     */
    private static void launchFailingRun(ChipWorker chip, NativeRun run, long runId) {
        try {
            chip.launch(run);
        } catch (PtoRunException e) {
            assertIdentity(e, runId);
        }
    }

    private static void assertIdentity(PtoRunException e, long runId) {
        assertThat(e.run()).as("run identity of %s", e).isPresent();
        assertThat(e.run().get().runId()).isEqualTo(runId);
        assertThat(e.getMessage()).contains("run_id=" + runId);
    }

    /** The driver's accounting with no chip open (threads included) equals the baseline. */
    private static void assertBackTo(DriverStats baseline) {
        assertThat(FAULTS.stats()).isEqualTo(baseline);
    }

    /**
     * After a poisoning fault (its exception just caught): unhealthy before any further
     * call, prepares refused with PTO_ERR_POISONED, close releases everything, reopen works.
     */
    private static void assertPoisonedThenReopens(Variant variant, ChipWorker chip, DriverStats baseline) {
        assertThat(chip.isHealthy()).as("the device error's code marks the chip at once").isFalse();
        ChipPoisonedException poisoned = catchThrowableOfType(ChipPoisonedException.class,
                () -> chip.prepare(CHAIN, args(), CallConfig.DEFAULT, PipelineSlotLease.of(0, 1), 99, 99, null));
        assertThat(poisoned).isNotNull();
        assertThat(poisoned.code()).isEqualTo(PtoError.POISONED.code());
        assertThat(poisoned.getMessage()).contains("run_id=99");
        assertThat(chip.isHealthy()).as("poisoned for good").isFalse();
        chip.close();
        assertBackTo(baseline);
        try (ChipWorker again = openWithChain(variant)) {
            assertThat(again.isHealthy()).isTrue();
            assertRunsGolden(again, 100);
        }
        assertBackTo(baseline);
    }

    // ---- register -----------------------------------------------------------------------------

    @ParameterizedTest
    @MethodSource("onboard")
    void anAllocationFailureAtRegisterIsDeviceOutOfMemoryAndTheChipStaysUsable(Variant variant) {
        DriverStats baseline = FAULTS.stats();
        try (ChipWorker chip = open(variant)) {
            FAULTS.inject(Fault.ALLOC, 0);
            assertThatThrownBy(() -> chip.registerCallable(CHAIN, ChipWorkerE2ETest.vectorChain(N)))
                    .isInstanceOf(DeviceOutOfMemoryException.class);
            assertThat(chip.isHealthy()).isTrue();
            chip.registerCallable(CHAIN, ChipWorkerE2ETest.vectorChain(N));
            assertRunsGolden(chip, 1);
        }
        assertBackTo(baseline);
    }

    @ParameterizedTest
    @MethodSource("onboard")
    void aCopyFailureAtRegisterIsADeviceErrorThatPoisonsTheChipUntilReopened(Variant variant) {
        DriverStats baseline = FAULTS.stats();
        ChipWorker chip = openWithChain(variant);
        try {
            FAULTS.inject(Fault.H2D, 0);
            // other bytes than CHAIN's: an upload of the same content would be shared, not copied
            PtoRunException e = catchThrowableOfType(PtoRunException.class,
                    () -> chip.registerCallable(BIG_CHAIN, ChipWorkerE2ETest.vectorChain(BIG_N)));
            assertThat(e).isInstanceOf(DeviceErrorException.class);
            assertThat(e.code()).isEqualTo(PtoError.DEVICE.code());
            assertThat(e.getMessage()).contains("memcpy_h2d").contains("poisoned until finalize_device");
            assertPoisonedThenReopens(variant, chip, baseline);
        } finally {
            chip.close();
        }
    }

    // ---- prepare ------------------------------------------------------------------------------

    @ParameterizedTest
    @MethodSource("onboard")
    void aCopyFailureAtPrepareRefusesTheRunBeforeTheMarkerAndPoisonsTheChip(Variant variant) {
        DriverStats baseline = FAULTS.stats();
        ChipWorker chip = openWithChain(variant);
        try (AcceptanceWord word = AcceptanceWord.allocate()) {
            FAULTS.inject(Fault.H2D, 0);
            PtoRunException e = catchThrowableOfType(PtoRunException.class,
                    () -> chip.prepare(CHAIN, args(), CallConfig.DEFAULT, PipelineSlotLease.of(0, 1), 5, 5, word));
            assertThat(e).isInstanceOf(DeviceErrorException.class);
            assertThat(e.code()).isEqualTo(PtoError.DEVICE.code());
            assertThat(e.getMessage()).contains("run_id=5").contains("poisoned until finalize_device");
            assertThat(word.value()).isZero();
            assertPoisonedThenReopens(variant, chip, baseline);
        } finally {
            chip.close();
        }
    }

    /**
     * The allocation a prepare really makes: after a run of the small chain committed
     * slot 0's staging, a run of the big chain must grow it (hbg: bank 0's GM heap arena;
     * trb: slot 0's retained staging buffer), and that mem_alloc is refused.
     */
    @ParameterizedTest
    @MethodSource("onboard")
    void anAllocationFailureWhilePrepareGrowsTheStagingIsDeviceOutOfMemoryBeforeTheMarker(Variant variant) {
        DriverStats baseline = FAULTS.stats();
        try (ChipWorker chip = openWithChain(variant); AcceptanceWord word = AcceptanceWord.allocate()) {
            chip.registerCallable(BIG_CHAIN, ChipWorkerE2ETest.vectorChain(BIG_N));
            assertRunsGolden(chip, 20);
            long committed = chip.committedDeviceMemory();
            float[] f = filled(BIG_N);
            FAULTS.inject(Fault.ALLOC, 0);
            DeviceOutOfMemoryException e = catchThrowableOfType(DeviceOutOfMemoryException.class,
                    () -> chip.prepare(BIG_CHAIN, ChipWorkerE2ETest.chainArgs(random(BIG_N, 1), random(BIG_N, 2), f),
                            CallConfig.DEFAULT, PipelineSlotLease.of(0, 1), 21, 21, word));
            assertThat(e).isNotNull();
            assertThat(e.code()).isEqualTo(PtoError.OUT_OF_MEMORY.code());
            assertThat(e.getMessage()).contains("run_id=21").contains("onboard device 0 memory exhausted");
            if (variant.runtime() == Variant.RuntimeKind.TRB) {
                assertThat(e.getMessage()).contains("the retained staging buffer of pipeline slot 0 cannot grow");
            }
            assertThat(word.value()).isZero();
            assertThat(f).containsOnly(SimE2E.SENTINEL);
            assertThat(chip.committedDeviceMemory()).as("the old staging was released, nothing new kept")
                    .isLessThan(committed);
            assertThat(chip.isHealthy()).isTrue();
            float[] a = random(BIG_N, 3);
            float[] b = random(BIG_N, 4);
            chip.run(BIG_CHAIN, ChipWorkerE2ETest.chainArgs(a, b, f), CallConfig.DEFAULT, PipelineSlotLease.of(0, 1),
                    22, 22, word);
            assertThat(word.value()).isEqualTo(1);
            assertBitExact(f, ChipWorkerE2ETest.reference(a, b));
            assertRunsGolden(chip, 23);
        }
        assertBackTo(baseline);
    }

    @ParameterizedTest
    @MethodSource("onboard")
    void aLostDeviceAtPreparePoisonsTheChipUntilReopened(Variant variant) {
        DriverStats baseline = FAULTS.stats();
        ChipWorker chip = openWithChain(variant);
        try (AcceptanceWord word = AcceptanceWord.allocate()) {
            FAULTS.inject(Fault.DEVICE_LOST, 0);
            PtoRunException e = catchThrowableOfType(PtoRunException.class,
                    () -> chip.prepare(CHAIN, args(), CallConfig.DEFAULT, PipelineSlotLease.of(0, 1), 5, 5, word));
            assertThat(e).isNotNull();
            // prepare's first driver call (a2a3: stream_create of the slot's run stream; a5:
            // mem_alloc of the run's staging) meets the lost device: DEVICE, which poisons
            assertThat(e).isInstanceOf(DeviceErrorException.class);
            assertThat(e.code()).isEqualTo(PtoError.DEVICE.code());
            assertThat(e.getMessage()).contains("device lost").contains("poisoned until finalize_device");
            assertThat(e.getMessage()).contains("run_id=5");
            assertThat(word.value()).isZero();
            assertPoisonedThenReopens(variant, chip, baseline);
        } finally {
            chip.close();
        }
    }

    // ---- launch -------------------------------------------------------------------------------

    @ParameterizedTest
    @MethodSource("onboard")
    void aRefusedLaunchFailsTheRunBeforeTheMarkerAndPoisonsTheChip(Variant variant) {
        DriverStats baseline = FAULTS.stats();
        ChipWorker chip = openWithChain(variant);
        try (AcceptanceWord word = AcceptanceWord.allocate()) {
            NativeRun run = chip.prepare(CHAIN, args(), CallConfig.DEFAULT, PipelineSlotLease.of(0, 1), 7, 7, word);
            FAULTS.inject(Fault.LAUNCH, 0);
            PtoRunException e = catchThrowableOfType(PtoRunException.class, () -> chip.launch(run));
            assertThat(e).isInstanceOf(DeviceErrorException.class);
            assertThat(e.code()).isEqualTo(PtoError.DEVICE.code());
            assertThat(e.getMessage()).contains("launch refused by the device")
                    .contains("poisoned until finalize_device");
            assertIdentity(e, 7);
            assertThat(word.value()).isZero();
            assertThat(chip.isHealthy()).as("marked by the launch's own failure").isFalse();
            PtoRunException f = catchThrowableOfType(PtoRunException.class, () -> chip.finalizeRun(run));
            assertThat(f).isInstanceOf(DeviceErrorException.class);
            assertIdentity(f, 7);
            assertThat(word.value()).isZero();
            assertPoisonedThenReopens(variant, chip, baseline);
        } finally {
            chip.close();
        }
    }

    // ---- during execution -----------------------------------------------------------------------

    @ParameterizedTest
    @MethodSource("onboard")
    void aStreamErrorDuringExecutionFailsTheRunAndPoisonsTheChip(Variant variant) {
        DriverStats baseline = FAULTS.stats();
        ChipWorker chip = openWithChain(variant);
        try (AcceptanceWord word = AcceptanceWord.allocate()) {
            NativeRun run = chip.prepare(CHAIN, args(), CallConfig.DEFAULT, PipelineSlotLease.of(0, 1), 9, 9, word);
            FAULTS.inject(Fault.STREAM, 0);
            launchFailingRun(chip, run, 9);
            assertThat(word.isAccepted()).isTrue();
            chip.await(run);
            PtoRunException e = catchThrowableOfType(PtoRunException.class, () -> chip.finalizeRun(run));
            assertThat(e).isNotNull();
            assertThat(e.code()).isEqualTo(PtoError.DEVICE.code());
            assertIdentity(e, 9);
            assertPoisonedThenReopens(variant, chip, baseline);
        } finally {
            chip.close();
        }
    }

    @ParameterizedTest
    @MethodSource("onboard")
    void aHungKernelTimesOutWithinItsTimeoutWhilePollNeverBlocks(Variant variant) {
        DriverStats baseline = FAULTS.stats();
        int timeoutMs = 1_000;
        ChipWorker chip = openWithChain(variant);
        try (AcceptanceWord word = AcceptanceWord.allocate()) {
            CallConfig config = CallConfig.builder().timeoutMs(timeoutMs).build();
            NativeRun run = chip.prepare(CHAIN, args(), config, PipelineSlotLease.of(0, 1), 11, 11, word);
            FAULTS.inject(Fault.HANG, 0);
            chip.launch(run);
            assertThat(word.isAccepted()).isTrue();
            // the run is hung until its timeout: a poll that waited for the drain would
            // return only once the run ended, and then answer true
            for (int i = 0; i < 5; i++) {
                assertThat(chip.poll(run)).isFalse();
            }
            RunTimeoutException e = catchThrowableOfType(RunTimeoutException.class, () -> chip.finalizeRun(run));
            assertThat(e).isNotNull();
            assertThat(e.code()).isEqualTo(PtoError.TIMEOUT.code());
            assertIdentity(e, 11);
            assertPoisonedThenReopens(variant, chip, baseline);
        } finally {
            chip.close();
        }
    }

    // ---- drain --------------------------------------------------------------------------------

    @ParameterizedTest
    @MethodSource("onboard")
    void aCopyBackFailureAtDrainFailsTheRunAndPoisonsTheChip(Variant variant) {
        DriverStats baseline = FAULTS.stats();
        ChipWorker chip = openWithChain(variant);
        try {
            NativeRun run = chip.prepare(CHAIN, args(), CallConfig.DEFAULT, PipelineSlotLease.of(0, 1), 13, 13, null);
            chip.launch(run);
            chip.await(run);
            FAULTS.inject(Fault.D2H, 0);
            PtoRunException e = catchThrowableOfType(PtoRunException.class, () -> chip.finalizeRun(run));
            assertThat(e).isInstanceOf(DeviceErrorException.class);
            assertThat(e.code()).isEqualTo(PtoError.DEVICE.code());
            assertThat(e.getMessage()).contains("copying tensor 2 (1024 bytes) back to the host failed")
                    .contains("poisoned until finalize_device");
            assertIdentity(e, 13);
            assertPoisonedThenReopens(variant, chip, baseline);
        } finally {
            chip.close();
        }
    }

    /** A prepared run of the faulty vadd (a kernel fault) on a chip that also has the chain. */
    private static NativeRun prepareKernelFault(ChipWorker chip, float[] out, long runId, AcceptanceWord word) {
        chip.registerCallable(FAULTY, ChipWorkerE2ETest.faultyVadd(out.length));
        return chip.prepare(FAULTY, TaskArgs.of(Tensor.of(random(out.length, 1)), Tensor.of(random(out.length, 2)),
                Tensor.of(out)), CallConfig.DEFAULT, PipelineSlotLease.of(0, 1), runId, runId, word);
    }

    /**
     * A failed run's status block is read twice: by the drain (the runner's verdict) and
     * by finalize (the runtime names the failure). When the drain's read fails, that
     * device failure is the run's answer (it poisoned the chip, so the code must say so);
     * finalize's own read still names the kernel fault in the message; nothing is copied
     * back.
     */
    @ParameterizedTest
    @MethodSource("onboard")
    void aCopyFailureReadingAFailedRunsStatusBlockAtDrainIsTheRunsDeviceErrorAndStillNamesTheKernelFault(
            Variant variant) {
        DriverStats baseline = FAULTS.stats();
        ChipWorker chip = openWithChain(variant);
        try (AcceptanceWord word = AcceptanceWord.allocate()) {
            float[] out = filled(64);
            NativeRun run = prepareKernelFault(chip, out, 24, word);
            // armed after the prepare: the next D2H is the drain's read of the status block
            FAULTS.inject(Fault.D2H, 0);
            launchFailingRun(chip, run, 24);
            assertThat(word.value()).isEqualTo(1);
            chip.await(run);
            DeviceErrorException e = catchThrowableOfType(DeviceErrorException.class, () -> chip.finalizeRun(run));
            assertThat(e).isNotNull();
            assertThat(e.code()).isEqualTo(PtoError.DEVICE.code());
            assertThat(e.getMessage()).contains("memcpy_d2h").contains("poisoned until finalize_device")
                    .contains("kernel fault: task 0 (func_id 7, kernel 'vadd') returned");
            assertIdentity(e, 24);
            assertThat(out).containsOnly(SimE2E.SENTINEL);
            assertPoisonedThenReopens(variant, chip, baseline);
        } finally {
            chip.close();
        }
    }

    /**
     * When finalize's read of the failed run's status block fails, that device failure is
     * the answer; the message keeps the drain's verdict (-10) and says the details could
     * not be read.
     */
    @ParameterizedTest
    @MethodSource("onboard")
    void aCopyFailureReadingAFailedRunsStatusBlockAtFinalizeIsADeviceErrorNamingTheDrainsVerdict(Variant variant) {
        DriverStats baseline = FAULTS.stats();
        ChipWorker chip = openWithChain(variant);
        try (AcceptanceWord word = AcceptanceWord.allocate()) {
            float[] out = filled(64);
            NativeRun run = prepareKernelFault(chip, out, 26, word);
            launchFailingRun(chip, run, 26);
            assertThat(word.value()).isEqualTo(1);
            chip.await(run);
            // the drain has read the status block: the next D2H is finalize's read
            FAULTS.inject(Fault.D2H, 0);
            DeviceErrorException e = catchThrowableOfType(DeviceErrorException.class, () -> chip.finalizeRun(run));
            assertThat(e).isNotNull();
            assertThat(e.code()).isEqualTo(PtoError.DEVICE.code());
            assertThat(e.getMessage()).contains("the run failed (-10); its device status could not be read")
                    .contains("memcpy_d2h").contains("poisoned until finalize_device");
            assertIdentity(e, 26);
            assertThat(out).containsOnly(SimE2E.SENTINEL);
            assertPoisonedThenReopens(variant, chip, baseline);
        } finally {
            chip.close();
        }
    }

    // ---- finalize -----------------------------------------------------------------------------

    /**
     * Lost after the run's drain, before its finalize: finalize's copy-back is the first
     * driver call to see it. Finalize fails with the run's identity and says the device
     * context is poisoned; close releases everything; a reopened chip works.
     */
    @ParameterizedTest
    @MethodSource("onboard")
    void aLostDeviceDuringFinalizeOfALaunchedRunFailsItAndPoisonsTheChip(Variant variant) {
        DriverStats baseline = FAULTS.stats();
        ChipWorker chip = openWithChain(variant);
        try (AcceptanceWord word = AcceptanceWord.allocate()) {
            NativeRun run = chip.prepare(CHAIN, args(), CallConfig.DEFAULT, PipelineSlotLease.of(0, 1), 17, 17, word);
            chip.launch(run);
            assertThat(word.value()).isEqualTo(1);
            chip.await(run);
            assertThat(chip.poll(run)).isTrue();
            FAULTS.inject(Fault.DEVICE_LOST, 0);
            PtoRunException e = catchThrowableOfType(PtoRunException.class, () -> chip.finalizeRun(run));
            assertThat(e).isNotNull();
            assertThat(e.code()).isEqualTo(PtoError.DEVICE.code());
            assertIdentity(e, 17);
            assertThat(e.getMessage()).contains("poisoned until finalize_device");
            assertPoisonedThenReopens(variant, chip, baseline);
        } finally {
            chip.close();
        }
    }

    @ParameterizedTest
    @MethodSource("onboard")
    void aDeviceLostAtCloseStillReleasesEverything(Variant variant) {
        DriverStats baseline = FAULTS.stats();
        ChipWorker chip = openWithChain(variant);
        assertRunsGolden(chip, 15);
        FAULTS.inject(Fault.DEVICE_LOST, 0);
        chip.close();
        assertBackTo(baseline);
        try (ChipWorker again = openWithChain(variant)) {
            assertRunsGolden(again, 16);
        }
        assertBackTo(baseline);
    }
}

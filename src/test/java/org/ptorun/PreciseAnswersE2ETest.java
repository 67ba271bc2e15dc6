package org.ptorun;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.ptorun.testing.DriverStats;
import org.ptorun.testing.EmulatedFaults;
import org.ptorun.testing.Fault;

/**
 * Answers that used to be imprecise: a callable id outside the registry, a view whose
 * offset overflows, an allocation on a lost device (not "out of memory"), the timeout's
 * text at finalize, an id the Worker never registered.
 */
class PreciseAnswersE2ETest {

    private static final int N = 256;
    private static final EmulatedFaults FAULTS = EmulatedFaults.of(HostRuntime.load(Variant.parse("a2a3/onboard/hbg")));

    static List<Variant> variants() {
        return SimE2E.allVariants();
    }

    static List<Variant> onboard() {
        return variants().stream().filter(v -> v.platform() == Variant.Platform.ONBOARD).toList();
    }

    @ParameterizedTest
    @MethodSource("variants")
    void aCallableIdOutsideTheRegistryIsRefusedInJavaNamingTheRange(Variant variant) {
        try (ChipWorker chip = ChipWorker.open(HostRuntime.load(variant), 0)) {
            TaskArgs args = TaskArgs.of(Tensor.of(new float[4]));
            for (int id : new int[] {64, -1, Integer.MAX_VALUE}) {
                assertThatThrownBy(() -> chip.prepare(id, args, CallConfig.DEFAULT, PipelineSlotLease.of(0, 1), 1, 1,
                        null)).isInstanceOf(IllegalArgumentException.class)
                        .hasMessage("callable id " + id + " is outside [0, 64)");
                assertThatThrownBy(() -> chip.run(id, args, CallConfig.DEFAULT))
                        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("outside [0, 64)");
                assertThatThrownBy(() -> chip.registerCallable(id, ChipWorkerE2ETest.vectorChain(4)))
                        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("outside [0, 64)");
            }
        }
    }

    @Test
    void aViewWhoseOffsetOverflowsIsAnIllegalArgument() {
        Tensor t = Tensor.of(new float[16]);
        assertThatThrownBy(() -> t.withStartOffset(Long.MAX_VALUE / 2)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("start_offset " + Long.MAX_VALUE / 2).hasMessageContaining("past 2^63 bytes");
        assertThatThrownBy(() -> t.withStartOffset(Long.MAX_VALUE)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> t.withShape(4).withStrides(Integer.MAX_VALUE).withStartOffset(Long.MAX_VALUE - 8))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @ParameterizedTest
    @MethodSource("onboard")
    void mallocOnALostDeviceSaysDeviceLostNotOutOfMemory(Variant variant) {
        DriverStats baseline = FAULTS.stats();
        try (ChipWorker chip = ChipWorker.open(HostRuntime.load(variant), 0)) {
            FAULTS.inject(Fault.DEVICE_LOST, 0);
            PtoRunException e = catchThrowableOfType(PtoRunException.class, () -> chip.malloc(4096));
            assertThat(e).isNotNull().isNotInstanceOf(DeviceOutOfMemoryException.class);
            assertThat(e.code()).isEqualTo(PtoError.DEVICE.code());
            assertThat(e.getMessage()).contains("device_malloc of 4096 bytes failed: PTO_ERR_DEVICE (-9)")
                    .contains("device lost").doesNotContain("(-9) onboard");
            assertThat(e).isInstanceOf(DeviceErrorException.class);
        } finally {
            FAULTS.disarm();
        }
        assertThat(FAULTS.stats()).isEqualTo(baseline);
        try (ChipWorker chip = ChipWorker.open(HostRuntime.load(variant), 0)) {
            DriverStats open = FAULTS.stats();
            FAULTS.inject(Fault.ALLOC, 0);
            DeviceOutOfMemoryException oom = catchThrowableOfType(DeviceOutOfMemoryException.class,
                    () -> chip.malloc(4096));
            assertThat(oom).isNotNull();
            assertThat(oom.code()).isEqualTo(PtoError.OUT_OF_MEMORY.code());
            assertThat(oom.getMessage()).contains("memory exhausted: 4096 bytes requested");
            assertThat(chip.isHealthy()).isTrue();
            chip.malloc(4096).close();
            assertThat(FAULTS.stats().memoryCommitted()).isEqualTo(open.memoryCommitted());
        } finally {
            FAULTS.disarm();
        }
    }

    @ParameterizedTest
    @MethodSource("variants")
    void anAbsurdAllocationOnSimIsOutOfMemoryAndTheChipStaysUsable(Variant variant) {
        try (ChipWorker chip = ChipWorker.open(HostRuntime.load(variant), 0)) {
            long before = chip.committedDeviceMemory();
            DeviceOutOfMemoryException e = catchThrowableOfType(DeviceOutOfMemoryException.class,
                    () -> chip.malloc(1L << 56));
            assertThat(e).isNotNull();
            assertThat(e.code()).isEqualTo(PtoError.OUT_OF_MEMORY.code());
            assertThat(e.getMessage()).startsWith("device_malloc of " + (1L << 56) + " bytes failed: PTO_ERR_OUT_OF_MEMORY");
            assertThat(chip.committedDeviceMemory()).isEqualTo(before);
            assertThat(chip.isHealthy()).isTrue();
            chip.malloc(64).close();
        }
    }

    @ParameterizedTest
    @MethodSource("onboard")
    void anOnboardTimeoutKeepsItsTimeoutInTheFinalizeMessage(Variant variant) {
        DriverStats baseline = FAULTS.stats();
        ChipWorker chip = ChipWorker.open(HostRuntime.load(variant), 0);
        try {
            chip.registerCallable(1, ChipWorkerE2ETest.vectorChain(N));
            CallConfig config = CallConfig.builder().timeoutMs(200).build();
            TaskArgs args = ChipWorkerE2ETest.chainArgs(SimE2E.random(N, 1), SimE2E.random(N, 2), SimE2E.filled(N));
            NativeRun run = chip.prepare(1, args, config, PipelineSlotLease.of(0, 1), 21, 21, null);
            FAULTS.inject(Fault.HANG, 0);
            chip.launch(run);
            RunTimeoutException e = catchThrowableOfType(RunTimeoutException.class, () -> chip.finalizeRun(run));
            assertThat(e).isNotNull();
            assertThat(e.getMessage()).contains("exceeded its timeout of 200 ms");
        } finally {
            FAULTS.disarm();
            chip.close();
        }
        assertThat(FAULTS.stats()).isEqualTo(baseline);
    }

    @Test
    void aWorkerRefusesAnIdItNeverRegisteredAtEnqueue() throws Exception {
        try (org.ptorun.worker.Worker w = org.ptorun.worker.Worker.builder().variant(Variant.DEFAULT).build()) {
            TaskArgs args = TaskArgs.of(Tensor.of(new float[4]));
            assertThatThrownBy(() -> w.enqueue(7, args, CallConfig.DEFAULT))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("callable id 7 is not registered on this Worker (Worker.register it first)");
            assertThatThrownBy(() -> w.tryEnqueue(64, args, CallConfig.DEFAULT))
                    .isInstanceOf(IllegalArgumentException.class).hasMessage("callable id 64 is outside [0, 64)");
            assertThatThrownBy(() -> w.register(-1, ChipWorkerE2ETest.vectorChain(4)))
                    .isInstanceOf(IllegalArgumentException.class).hasMessage("callable id -1 is outside [0, 64)");
            w.register(7, ChipWorkerE2ETest.vectorChain(4)).get();
            float[] a = SimE2E.random(4, 1);
            float[] b = SimE2E.random(4, 2);
            float[] f = SimE2E.filled(4);
            var ticket = w.enqueue(7, ChipWorkerE2ETest.chainArgs(a, b, f), CallConfig.DEFAULT);
            assertThat(w.drain().failed()).isZero(); // caller-driven: drain makes the progress
            assertThat(ticket.result()).isDone();
            SimE2E.assertBitExact(f, ChipWorkerE2ETest.reference(a, b));
        }
    }
}

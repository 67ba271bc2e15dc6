package org.ptorun;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.ptorun.SimE2E.assertBitExact;
import static org.ptorun.SimE2E.filled;
import static org.ptorun.SimE2E.random;
import static org.ptorun.callable.Direction.IN;
import static org.ptorun.callable.Direction.OUT;

import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.ptorun.callable.ChipCallable;
import org.ptorun.callable.Kernel;
import org.ptorun.callable.Param;
import org.ptorun.callable.Program;
import org.ptorun.internal.ProcessEnvironment;

/**
 * The trb runtime's own promises on both sim arches: the per-slot retained staging
 * buffer (reuse, grow, keep, a failed grow), rings with back-pressure, and a request no
 * ring can ever hold.
 */
class TrbRuntimeE2ETest {

    private static final int SMALL = 1;
    private static final int LARGE = 2;

    static List<Variant> trbVariants() {
        return SimE2E.allTrbVariants();
    }

    /** The sim's device capacity (PTORUN_SIM_DEVICE_MEMORY) bounds these; onboard's is the driver's. */
    static List<Variant> simTrbVariants() {
        return SimE2E.simTrbVariants();
    }

    static List<Variant> allVariants() {
        return SimE2E.allVariants();
    }

    private static void runChain(ChipWorker chip, int id, int n, int slot, long seed) {
        float[] a = random(n, seed);
        float[] b = random(n, seed + 1);
        float[] f = filled(n);
        chip.run(id, RuntimeGoldenE2ETest.chainArgs(a, b, f), CallConfig.DEFAULT, PipelineSlotLease.of(slot, 1 + seed),
                seed, seed, null);
        assertBitExact(f, ChipWorkerE2ETest.reference(a, b));
    }

    @ParameterizedTest
    @MethodSource("trbVariants")
    void theRetainedBufferIsReusedForTheSameShapeGrownForALargerRunAndKeptForASmallerOne(Variant variant) {
        try (ChipWorker chip = ChipWorker.open(HostRuntime.load(variant), 0)) {
            chip.registerCallable(SMALL, ChipWorkerE2ETest.vectorChain(1000));
            chip.registerCallable(LARGE, ChipWorkerE2ETest.vectorChain(50_000));
            for (int slot = 0; slot < chip.pipelineDepth(); slot++) {
                assertThat(chip.retainedTempAddr(slot)).as("nothing retained before a run").isZero();
            }
            for (int slot = 0; slot < chip.pipelineDepth(); slot++) {
                runChain(chip, SMALL, 1000, slot, 10 * slot + 1);
                long small = chip.retainedTempAddr(slot);
                long committedSmall = chip.committedDeviceMemory();
                assertThat(small).as("slot %d retains its staging buffer", slot).isNotZero();

                runChain(chip, SMALL, 1000, slot, 10 * slot + 2);
                assertThat(chip.retainedTempAddr(slot)).as("same shape: reused").isEqualTo(small);
                assertThat(chip.committedDeviceMemory()).as("same shape: nothing allocated").isEqualTo(committedSmall);

                runChain(chip, LARGE, 50_000, slot, 10 * slot + 3);
                long large = chip.retainedTempAddr(slot);
                long committedLarge = chip.committedDeviceMemory();
                assertThat(large).isNotZero();
                assertThat(committedLarge).as("a larger run grows the buffer").isGreaterThan(committedSmall);

                runChain(chip, SMALL, 1000, slot, 10 * slot + 4);
                assertThat(chip.retainedTempAddr(slot)).as("a smaller run keeps the larger buffer").isEqualTo(large);
                assertThat(chip.committedDeviceMemory()).isEqualTo(committedLarge);
            }
            if (chip.pipelineDepth() > 1) {
                assertThat(chip.retainedTempAddr(0)).as("one buffer per slot").isNotEqualTo(chip.retainedTempAddr(1));
            }
        }
    }

    @ParameterizedTest
    @MethodSource("simTrbVariants")
    void anAllocationFailureDuringAGrowFailsThePrepareLeavesNoLeakAndAnEmptySlot(Variant variant) {
        // 32 MiB of device memory: the small chain fits, the large one (7 x 8 MiB staged) never does
        ProcessEnvironment.set("PTORUN_SIM_DEVICE_MEMORY", "32M");
        ChipWorker opened;
        try {
            opened = ChipWorker.open(HostRuntime.load(variant), 0);
        } finally {
            ProcessEnvironment.unset("PTORUN_SIM_DEVICE_MEMORY");
        }
        int big = 2 << 20;
        try (ChipWorker chip = opened) {
            chip.registerCallable(SMALL, ChipWorkerE2ETest.vectorChain(1000));
            chip.registerCallable(LARGE, ChipWorkerE2ETest.vectorChain(big));
            runChain(chip, SMALL, 1000, 0, 1);
            long committedSmall = chip.committedDeviceMemory();
            assertThat(chip.retainedTempAddr(0)).isNotZero();

            float[] f = filled(big);
            TaskArgs largeArgs = RuntimeGoldenE2ETest.chainArgs(random(big, 1), random(big, 2), f);
            assertThatThrownBy(() -> chip.prepare(LARGE, largeArgs, CallConfig.DEFAULT, PipelineSlotLease.of(0, 5), 2, 2,
                    null))
                    .isInstanceOf(DeviceOutOfMemoryException.class);
            assertThat(chip.retainedTempAddr(0)).as("the failed grow leaves the slot empty").isZero();
            assertThat(chip.committedDeviceMemory()).as("the old buffer was freed, nothing new kept")
                    .isLessThan(committedSmall);
            assertThat(f[0]).isEqualTo(SimE2E.SENTINEL);

            runChain(chip, SMALL, 1000, 0, 6);
            assertThat(chip.retainedTempAddr(0)).isNotZero();
            assertThat(chip.committedDeviceMemory()).as("no leak: the same footprint as before the failure")
                    .isEqualTo(committedSmall);
        }
    }

    @ParameterizedTest
    @MethodSource("allVariants")
    void aThousandTaskProgramCompletesCorrectlyThroughATaskWindowOf4AndA1024ByteHeap(Variant variant) {
        int iterations = 500;
        ChipCallable program = Programs.accumulate(iterations);
        assertThat(program.program().orElseThrow().taskCount()).isEqualTo(1000);
        CallConfig tiny = CallConfig.builder().ringTaskWindow(4).ringHeap(1024).build();
        try (ChipWorker chip = ChipWorker.open(HostRuntime.load(variant), 0)) {
            chip.registerCallable(SMALL, program);
            for (int r = 0; r < 2; r++) {
                float[] x = random(iterations * 16, 20 + r);
                float[] acc0 = random(16, 30 + r);
                float[] acc = acc0.clone();
                chip.run(SMALL, TaskArgs.of(Tensor.of(x), Tensor.of(acc)), tiny);
                assertBitExact(acc, Programs.accumulateReference(x, acc0, iterations));
            }
        }
    }

    @ParameterizedTest
    @MethodSource("trbVariants")
    void aRequestNoRingCanEverHoldFailsWithCapacityAndTheChipGoesOn(Variant variant) {
        CallConfig tiny = CallConfig.builder().ringTaskWindow(4).ringHeap(1024).build();
        ChipCallable tooLarge = ChipCallable.builder()
                .signature(IN, OUT)
                .child(0, Kernel.vcopy())
                .program(Program.builder()
                        .allocTensor(0, 4096) // 4 KiB from a 1 KiB ring heap
                        .submit(0, Param.tensor(0, IN, 0, 64), Param.local(0, OUT, 0, 64))
                        .build())
                .build();
        try (ChipWorker chip = ChipWorker.open(HostRuntime.load(variant), 0)) {
            chip.registerCallable(SMALL, tooLarge);
            chip.registerCallable(LARGE, ChipWorkerE2ETest.vectorChain(64));
            assertThatThrownBy(() -> chip.run(SMALL, TaskArgs.of(Tensor.of(random(16, 1)), Tensor.of(new float[16])),
                    tiny))
                    .isInstanceOf(PtoRunException.class)
                    .satisfies(e -> assertThat(((PtoRunException) e).code()).isEqualTo(PtoError.CAPACITY.code()))
                    .hasMessageContaining("PTO_ERR_CAPACITY");
            // the same program fits the default heap
            chip.run(SMALL, TaskArgs.of(Tensor.of(random(16, 1)), Tensor.of(new float[16])), CallConfig.DEFAULT);
            float[] a = random(64, 2);
            float[] b = random(64, 3);
            float[] f = filled(64);
            chip.run(LARGE, RuntimeGoldenE2ETest.chainArgs(a, b, f), tiny);
            assertBitExact(f, ChipWorkerE2ETest.reference(a, b));
        }
    }
}

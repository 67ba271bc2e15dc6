package org.ptorun;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.ptorun.testlog.LogCapture;
import org.slf4j.event.Level;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.ptorun.SlotTable.Phase;
import org.ptorun.PipelineContract.RawResource;
import org.ptorun.callable.ChipCallable;
import org.ptorun.callable.CoreType;
import org.ptorun.callable.Direction;
import org.ptorun.callable.Kernel;
import org.ptorun.callable.Param;
import org.ptorun.callable.Program;
import org.ptorun.internal.Layouts;
import org.ptorun.internal.NativeMemory;

/**
 * The ChipWorker's per-slot phase table (lifecycle.md §4) driven against a scripted
 * {@link FakeNativeApi}: every refusal, the launch outcomes, finalize, the lock never
 * held across a native call, phases from other threads, close.
 */
class ChipWorkerPhaseTableTest {

    /** hbg-like: depth 2, arenas per slot (bank = slot). */
    static final PipelineContract DEPTH2 = PipelineContract.admit(1, 5, 2, List.of(
            new RawResource(1, 0, 0), new RawResource(2, 0, 0), new RawResource(3, 0, 0),
            new RawResource(5, 2, 0), new RawResource(6, 2, 0)));
    static final PipelineContract DEPTH1 = PipelineContract.admit(1, 0, 1, List.of());
    static final byte[] IMAGE = {1, 2, 3, 4};

    private final List<AutoCloseable> toClose = new ArrayList<>();
    private final ExecutorService pool = Executors.newFixedThreadPool(6);

    @AfterEach
    void tearDown() throws Exception {
        pool.shutdownNow();
        for (int i = toClose.size() - 1; i >= 0; i--) {
            toClose.get(i).close();
        }
    }

    private FakeNativeApi fake() {
        FakeNativeApi fake = new FakeNativeApi();
        toClose.add(fake);
        return fake;
    }

    private ChipWorker open(FakeNativeApi fake, PipelineContract contract) {
        ChipWorker chip = new ChipWorker(fake, Variant.DEFAULT, contract, fake.runtimeSize(), fake.runtimeAlignment(),
                0, IMAGE, IMAGE);
        fake.bind(chip.runtimeBufferAddresses());
        toClose.add(chip);
        return chip;
    }

    private static final CallConfig CONFIG = CallConfig.DEFAULT;
    private static final CallConfig TRACED = CallConfig.builder().enableTrace(true).outputPrefix("/tmp/ptorun-trace").build();

    private static TaskArgs args() {
        return TaskArgs.of(Tensor.of(new float[4]));
    }

    private static NativeRun prepare(ChipWorker chip, int slot, long generation) {
        return chip.prepare(0, args(), CONFIG, PipelineSlotLease.of(slot, generation), 7, 9, null);
    }

    private <T> T on(java.util.concurrent.Callable<T> call) throws Exception {
        return pool.submit(call).get(30, TimeUnit.SECONDS);
    }

    private void onThread(Runnable r) throws Exception {
        pool.submit(r).get(30, TimeUnit.SECONDS);
    }

    // ---- open ------------------------------------------------------------------------

    @Test
    void openAllocatesOneAlignedStoragePerSlotAndInitializesTheDevice() {
        FakeNativeApi fake = fake();
        ChipWorker chip = open(fake, DEPTH2);
        assertThat(chip.pipelineDepth()).isEqualTo(2);
        assertThat(chip.supportsOverlap()).isTrue();
        List<Long> storages = chip.runtimeBufferAddresses();
        assertThat(storages).hasSize(2).doesNotHaveDuplicates();
        assertThat(storages).allMatch(a -> a % 64 == 0);
        assertThat(storages).allMatch(a -> NativeMemory.view(a, 4096).getLong(0) == 0, "zeroed");
        assertThat(fake.count("init")).isEqualTo(1);
        assertThat(chip.aicpuDlopenCount()).isEqualTo(3);
        assertThat(chip.hostDlopenCount()).isEqualTo(4);
        assertThat(chip.runStreamSetCreateCount()).isEqualTo(5);
        assertThat(chip.arenaBankGmHeapBase(1)).isEqualTo(0x2_0000_0000L);
        assertThat(chip.retainedTempAddr(1)).isEqualTo(0x2_0000_0001L);
        assertThatThrownBy(() -> chip.arenaBankGmHeapBase(2)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> chip.retainedTempAddr(2)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void aFailedInitDestroysTheContextAndNamesTheError() {
        FakeNativeApi fake = fake();
        fake.script("init", -9, "device 0 did not come up");
        assertThatThrownBy(() -> new ChipWorker(fake, Variant.DEFAULT, DEPTH2, 4096, 64, 0, IMAGE, IMAGE))
                .isExactlyInstanceOf(DeviceErrorException.class)
                .hasMessageContaining("PTO_ERR_DEVICE (-9)")
                .hasMessageContaining("device 0 did not come up");
        assertThat(fake.count("destroyDeviceContext")).isEqualTo(1);
        assertThatThrownBy(() -> new ChipWorker(fake, Variant.DEFAULT, DEPTH2, 4096, 64, 0, new byte[0], IMAGE))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new ChipWorker(fake, Variant.DEFAULT, DEPTH2, 4096, 64, -1, IMAGE, IMAGE))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void aMissingDeviceImageNamesItsResource() {
        assertThatThrownBy(() -> ChipWorker.readImage("libptorun_aicpu_nosucharch.so"))
                .isInstanceOf(LibraryLoadException.class)
                .hasMessageStartingWith("device image libptorun_aicpu_nosucharch.so not found: looked for the"
                        + " resource linux-x86-64/libptorun_aicpu_nosucharch.so on the class path of org.ptorun.ChipWorker"
                        + " (loaded from file:")
                .hasMessageContaining("ChipWorker.open(runtime, deviceId, aicpuImage, aicoreImage)")
                .hasMessageNotContaining("mvn");
    }

    // ---- prepare ---------------------------------------------------------------------

    @Test
    void aFullCycleWritesTheDescriptorAndWalksEveryPhase() {
        FakeNativeApi fake = fake();
        ChipWorker chip = open(fake, DEPTH2);
        fake.script("pollRun", 0, "");
        NativeRun run = chip.prepare(0, args(), CONFIG, PipelineSlotLease.of(1, 3), 11, 12, null);
        assertThat(run.slot()).isEqualTo(1);
        assertThat(run.generation()).isEqualTo(3);
        assertThat(run.runId()).isEqualTo(11);
        assertThat(run.dispatchId()).isEqualTo(12);
        assertThat(run.runEpoch()).isPositive();
        assertThat(chip.phaseOf(1)).isEqualTo(Phase.PREPARED);
        ByteBuffer d = fake.descriptor(1);
        assertThat(d.getInt(Layouts.NativeRunDescriptor.PIPELINE_SLOT)).isEqualTo(1);
        assertThat(d.getInt(Layouts.NativeRunDescriptor.ARENA_BANK)).isEqualTo(1);
        assertThat(d.getLong(Layouts.NativeRunDescriptor.RUN_ID)).isEqualTo(11);
        assertThat(d.getLong(Layouts.NativeRunDescriptor.GENERATION)).isEqualTo(3);
        assertThat(d.getLong(Layouts.NativeRunDescriptor.DISPATCH_ID)).isEqualTo(12);
        assertThat(d.getLong(Layouts.NativeRunDescriptor.RUN_EPOCH)).isEqualTo(run.runEpoch());
        assertThat(d.getLong(Layouts.NativeRunDescriptor.ACCEPTED_STATE)).isZero();

        chip.launch(run);
        assertThat(chip.phaseOf(1)).isEqualTo(Phase.RUNNING);
        assertThat(chip.poll(run)).isFalse();
        assertThat(chip.phaseOf(1)).isEqualTo(Phase.RUNNING);
        assertThat(chip.poll(run)).isTrue();
        assertThat(chip.phaseOf(1)).isEqualTo(Phase.ENDED);
        long polls = fake.count("pollRun");
        assertThat(chip.poll(run)).as("ENDED answers without a native call").isTrue();
        assertThat(fake.count("pollRun")).isEqualTo(polls);
        chip.finalizeRun(run);
        assertThat(chip.phaseOf(1)).isEqualTo(Phase.EMPTY);
        assertThat(fake.count("waitRun")).as("a reaped run is not waited again").isZero();
        assertThat(fake.callsOf("finalizeRun")).extracting(FakeNativeApi.Call::slot).containsExactly(1);
    }

    @Test
    void aLeaseOutsideTheContractIsAnArgumentErrorThatReachesNoNativeCode() {
        FakeNativeApi fake = fake();
        ChipWorker chip = open(fake, DEPTH2);
        for (PipelineSlotLease bad : List.of(new PipelineSlotLease(0, 1, 1), PipelineSlotLease.of(0, 0),
                PipelineSlotLease.of(2, 1), PipelineSlotLease.of(-1, 1))) {
            assertThatThrownBy(() -> chip.prepare(0, args(), CONFIG, bad, 0, 0, null))
                    .as(bad.toString())
                    .isExactlyInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("lease is outside the runtime PipelineContract");
        }
        ChipWorker shallow = open(fake(), DEPTH1);
        assertThatThrownBy(() -> prepare(shallow, 1, 1))
                .hasMessageContaining("lease is outside the runtime PipelineContract");
        assertThat(fake.count("prepareRun")).isZero();
    }

    @Test
    void anInvalidConfigIsRefusedBeforeAdmission() {
        FakeNativeApi fake = fake();
        ChipWorker chip = open(fake, DEPTH2);
        CallConfig a5Threads = CallConfig.builder().aicpuThreadNum(7).build();
        assertThatThrownBy(() -> chip.prepare(0, args(), a5Threads, PipelineSlotLease.of(0, 1), 0, 0, null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("aicpu_thread_num 7");
        assertThat(fake.count("prepareRun")).isZero();
        assertThat(chip.phaseOf(0)).isEqualTo(Phase.EMPTY);
    }

    @Test
    void aSlotHoldingARunRefusesAnotherPrepare() {
        ChipWorker chip = open(fake(), DEPTH2);
        NativeRun first = prepare(chip, 0, 1);
        assertThatThrownBy(() -> prepare(chip, 0, 1))
                .isExactlyInstanceOf(ChipBusyException.class)
                .hasMessageContaining("slot already owns an unfinished native run")
                .hasMessageContaining("slot=0 generation=1");
        chip.launch(first);
        assertThatThrownBy(() -> prepare(chip, 0, 2))
                .hasMessageContaining("slot already owns an unfinished native run");
        chip.finalizeRun(first);
        chip.finalizeRun(prepare(chip, 0, 2));
    }

    @Test
    void aSuccessorNeedsALaunchedPredecessorThatPermitsIt() {
        FakeNativeApi fake = fake();
        ChipWorker chip = open(fake, DEPTH2);
        NativeRun predecessor = prepare(chip, 0, 1);
        assertThatThrownBy(() -> prepare(chip, 1, 1))
                .as("a merely prepared predecessor")
                .isExactlyInstanceOf(ChipBusyException.class)
                .hasMessageContaining("requires an active predecessor before staging a successor");
        chip.launch(predecessor);
        assertThatThrownBy(() -> chip.prepare(0, args(), TRACED, PipelineSlotLease.of(1, 1), 0, 0, null))
                .as("a diagnostic successor")
                .hasMessageContaining("requires an active predecessor before staging a successor");
        NativeRun successor = prepare(chip, 1, 1);
        assertThat(chip.phaseOf(1)).isEqualTo(Phase.PREPARED);
        chip.finalizeRun(successor);
        chip.finalizeRun(predecessor);

        NativeRun traced = chip.prepare(0, args(), TRACED, PipelineSlotLease.of(0, 2), 0, 0, null);
        chip.launch(traced);
        assertThatThrownBy(() -> prepare(chip, 1, 2))
                .as("a diagnostic predecessor")
                .hasMessageContaining("requires an active predecessor before staging a successor");
        chip.finalizeRun(traced);
    }

    @Test
    void aLibraryWithoutConcurrentPrepareNeverStagesASuccessor() {
        FakeNativeApi fake = fake();
        fake.concurrentPrepare = 0;
        ChipWorker chip = open(fake, DEPTH2);
        assertThat(chip.supportsOverlap()).isFalse();
        NativeRun predecessor = prepare(chip, 0, 1);
        chip.launch(predecessor);
        assertThatThrownBy(() -> prepare(chip, 1, 1))
                .hasMessageContaining("requires an active predecessor before staging a successor");
        chip.finalizeRun(predecessor);
        chip.finalizeRun(prepare(chip, 1, 1));
    }

    @Test
    void theGenerationFilterRefusesOlderLeasesAndAdmitsEqualOnes() {
        FakeNativeApi fake = fake();
        ChipWorker chip = open(fake, DEPTH2);
        chip.finalizeRun(prepare(chip, 0, 5));
        assertThatThrownBy(() -> prepare(chip, 0, 4))
                .isExactlyInstanceOf(LeaseRejectedException.class)
                .hasMessageContaining("lease generation is stale")
                .hasMessageContaining("slot=0 generation=4");
        assertThat(chip.phaseOf(0)).isEqualTo(Phase.EMPTY);
        chip.finalizeRun(prepare(chip, 0, 5));
        chip.finalizeRun(prepare(chip, 0, 6));
        chip.finalizeRun(prepare(chip, 1, 1)); // generations are per slot
        assertThat(fake.count("prepareRun")).as("the stale prepare reached no native code").isEqualTo(4);
    }

    @Test
    void twoPreparesUnderOneGenerationGetTwoEpochsAndTheOldTokenIsRefused() {
        ChipWorker chip = open(fake(), DEPTH2);
        NativeRun first = prepare(chip, 0, 1);
        chip.finalizeRun(first);
        NativeRun second = prepare(chip, 0, 1);
        assertThat(second.runEpoch()).isGreaterThan(first.runEpoch());
        assertThatThrownBy(() -> chip.launch(first))
                .isExactlyInstanceOf(StaleRunException.class)
                .hasMessageContaining("stale or used in the wrong phase")
                .hasMessageContaining("run_epoch=" + first.runEpoch() + ")");
        assertThatThrownBy(() -> chip.finalizeRun(first)).hasMessageContaining("stale or already finalized");
        assertThat(chip.phaseOf(0)).isEqualTo(Phase.PREPARED);
        chip.launch(second);
        assertThatThrownBy(() -> chip.poll(first)).hasMessageContaining("stale or used in the wrong phase");
        assertThatThrownBy(() -> chip.await(first)).hasMessageContaining("stale or used in the wrong phase");
        chip.finalizeRun(second);
    }

    @Test
    void pollAndAwaitBeforeLaunchAreRefusedWithoutANativeCall() {
        FakeNativeApi fake = fake();
        ChipWorker chip = open(fake, DEPTH2);
        NativeRun run = prepare(chip, 0, 1);
        assertThatThrownBy(() -> chip.poll(run))
                .isExactlyInstanceOf(StaleRunException.class)
                .hasMessageContaining("stale or used in the wrong phase")
                .hasMessageContaining("PREPARED");
        assertThatThrownBy(() -> chip.await(run)).hasMessageContaining("stale or used in the wrong phase");
        assertThat(fake.count("pollRun") + fake.count("waitRun")).isZero();
        chip.finalizeRun(run);
    }

    @Test
    void aSecondFinalizeIsRefused() {
        FakeNativeApi fake = fake();
        ChipWorker chip = open(fake, DEPTH2);
        NativeRun run = prepare(chip, 0, 1);
        chip.finalizeRun(run);
        assertThatThrownBy(() -> chip.finalizeRun(run))
                .isExactlyInstanceOf(StaleRunException.class)
                .hasMessageContaining("stale or already finalized")
                .hasMessageContaining("(run_id=7 slot=0 generation=1 dispatch_id=9 run_epoch=" + run.runEpoch() + ")");
        assertThat(fake.count("finalizeRun")).isEqualTo(1);
    }

    @Test
    void aTokenFromAnotherChipWorkerIsRefused() {
        ChipWorker a = open(fake(), DEPTH2);
        ChipWorker b = open(fake(), DEPTH2);
        NativeRun onA = prepare(a, 0, 1);
        NativeRun onB = prepare(b, 0, 1);
        assertThat(onA.runEpoch()).isNotEqualTo(onB.runEpoch());
        assertThatThrownBy(() -> b.launch(onA)).hasMessageContaining("stale or used in the wrong phase");
        assertThatThrownBy(() -> b.finalizeRun(onA)).hasMessageContaining("stale or already finalized");
        assertThatThrownBy(() -> a.finalizeRun(new NativeRun(0, 1, 0, 7, 9)))
                .as("epoch 0 never names a prepared run")
                .hasMessageContaining("stale or already finalized");
        assertThatThrownBy(() -> a.launch(new NativeRun(5, 1, onA.runEpoch(), 7, 9)))
                .hasMessageContaining("stale or used in the wrong phase");
        a.finalizeRun(onA);
        b.finalizeRun(onB);
    }

    // ---- launch outcomes -----------------------------------------------------------------

    @Test
    void aLaunchRefusedBeforeItStartedLeavesTheRunPreparedAndTheSameTokenLaunchesLater() {
        FakeNativeApi fake = fake();
        ChipWorker chip = open(fake, DEPTH2);
        NativeRun run = prepare(chip, 0, 1);
        fake.script("launchRun", -6, "the execution claim is held by another run");
        assertThatThrownBy(() -> chip.launch(run))
                .isExactlyInstanceOf(ChipBusyException.class)
                .hasMessageContaining("PTO_ERR_BUSY (-6)")
                .hasMessageContaining("the execution claim is held by another run")
                .hasMessageContaining(run.identity())
                .satisfies(e -> assertThat(((PtoRunException) e).nativeMessage())
                        .isEqualTo("the execution claim is held by another run"));
        assertThat(chip.phaseOf(0)).isEqualTo(Phase.PREPARED);
        fake.script("launchRun", -15, "the device context refuses work after an unrecovered device error");
        assertThatThrownBy(() -> chip.launch(run)).isExactlyInstanceOf(ChipPoisonedException.class);
        assertThat(chip.phaseOf(0)).as("POISONED refuses before the run starts, like BUSY").isEqualTo(Phase.PREPARED);
        assertThat(fake.count("pollRun")).as("the outcome comes from the code, not from a poll").isZero();
        chip.launch(run);
        assertThat(chip.phaseOf(0)).isEqualTo(Phase.RUNNING);
        chip.finalizeRun(run);
        assertThat(fake.count("waitRun")).as("finalize waits inside its one native call").isZero();
        assertThat(fake.count("finalizeRun")).isEqualTo(1);
    }

    @Test
    void aLaunchFailingAfterTheRunEndedLeavesItReapedAndFinalizeReportsIt() {
        FakeNativeApi fake = fake();
        ChipWorker chip = open(fake, DEPTH2);
        NativeRun run = prepare(chip, 0, 1);
        fake.script("launchRun", -10, "task 3 func_id 7 returned 5");
        assertThatThrownBy(() -> chip.launch(run)).isExactlyInstanceOf(KernelFaultException.class);
        assertThat(chip.phaseOf(0)).as("any code but BUSY and POISONED ends the run").isEqualTo(Phase.ENDED);
        assertThat(fake.count("pollRun")).as("the outcome comes from the code, not from a poll").isZero();
        assertThatThrownBy(() -> chip.launch(run)).hasMessageContaining("stale or used in the wrong phase");
        long polls = fake.count("pollRun");
        assertThat(chip.poll(run)).isTrue();
        assertThat(fake.count("pollRun")).isEqualTo(polls);
        fake.script("finalizeRun", -10, "task 3 func_id 7 returned 5");
        assertThatThrownBy(() -> chip.finalizeRun(run))
                .isExactlyInstanceOf(KernelFaultException.class)
                .hasMessageContaining("run failed (reported by finalize): PTO_ERR_KERNEL_FAULT (-10): task 3 func_id 7 returned 5")
                .hasMessageContaining(run.identity());
        assertThat(chip.phaseOf(0)).isEqualTo(Phase.EMPTY);
        assertThat(fake.count("waitRun")).isZero();
    }

    // ---- finalize -----------------------------------------------------------------------

    @Test
    void finalizeAlwaysEmptiesTheSlot() {
        FakeNativeApi fake = fake();
        ChipWorker chip = open(fake, DEPTH2);
        NativeRun run = prepare(chip, 0, 1);
        chip.launch(run);
        fake.script("finalizeRun", -11, "run exceeded 45000 ms");
        assertThatThrownBy(() -> chip.finalizeRun(run)).isExactlyInstanceOf(RunTimeoutException.class);
        assertThat(chip.phaseOf(0)).isEqualTo(Phase.EMPTY);

        NativeRun next = prepare(chip, 0, 1);
        chip.launch(next);
        fake.script("waitRun", -15, "poisoned");
        chip.await(next);
        fake.script("finalizeRun", 0, "");
        assertThatThrownBy(() -> chip.finalizeRun(next))
                .as("a failed execution is reported even when finalize itself succeeded")
                .isExactlyInstanceOf(ChipPoisonedException.class)
                .hasMessageContaining("run failed: PTO_ERR_POISONED (-15): poisoned");
        assertThat(chip.phaseOf(0)).isEqualTo(Phase.EMPTY);
        chip.finalizeRun(prepare(chip, 0, 1));
    }

    @Test
    void aFailedNativePrepareEmptiesTheSlotAndReleasesWhatTheRunHeld() {
        FakeNativeApi fake = fake();
        ChipWorker chip = open(fake, DEPTH2);
        DeviceBuffer buffer = chip.malloc(64);
        try (AcceptanceWord word = AcceptanceWord.allocate()) {
            TaskArgs args = TaskArgs.of(Tensor.of(buffer, DType.F32));
            fake.script("prepareRun", -12, "tensor 0 is smaller than its shape");
            assertThatThrownBy(() -> chip.prepare(0, args, CONFIG, PipelineSlotLease.of(0, 1), 3, 4, word))
                    .isExactlyInstanceOf(BadCallableException.class)
                    .hasMessageContaining("PTO_ERR_BAD_CALLABLE (-12): tensor 0 is smaller than its shape")
                    .hasMessageContaining("(run_id=3 slot=0 generation=1 dispatch_id=4 run_epoch=");
            assertThat(chip.phaseOf(0)).isEqualTo(Phase.EMPTY);
            assertThat(word.isCaptured()).isFalse();
            buffer.close(); // the device buffer is no longer held by a run
            assertThat(fake.count("deviceFree")).isEqualTo(1);
        }
    }

    @Test
    void hostArraysAreStagedAndCopiedBackOnlyForOutputsOfASucceededLaunchedRun() {
        FakeNativeApi fake = fake();
        ChipWorker chip = open(fake, DEPTH2);
        ChipCallable callable = ChipCallable.builder()
                .signature(Direction.IN, Direction.OUT)
                .child(0, CoreType.AIV, Kernel.vcopy())
                .program(Program.builder().submit(0, Param.tensor(0, Direction.IN, 0, 16),
                        Param.tensor(1, Direction.OUT, 0, 16)).build())
                .build();
        chip.registerCallable(0, callable);
        float[] in = {1, 2, 3, 4};
        float[] out = {-1, -1, -1, -1};
        TaskArgs args = TaskArgs.of(Tensor.of(in), Tensor.of(out));

        NativeRun abandoned = chip.prepare(0, args, CONFIG, PipelineSlotLease.of(0, 1), 0, 0, null);
        ByteBuffer block = NativeMemory.view(fake.argsBlock(0), Layouts.ChipStorageTaskArgs.SIZE);
        long inStaging = block.getLong(Layouts.ChipTensor.ADDR);
        assertThat(NativeMemory.view(inStaging, 16).order(ByteOrder.LITTLE_ENDIAN).getFloat(12))
                .as("IN staged").isEqualTo(4f);
        chip.finalizeRun(abandoned);
        assertThat(out).as("never launched: nothing copied back").containsExactly(-1, -1, -1, -1);

        NativeRun failed = chip.prepare(0, args, CONFIG, PipelineSlotLease.of(0, 1), 0, 0, null);
        chip.launch(failed);
        fake.script("finalizeRun", -10, "task 0 func_id 0 returned 1");
        assertThatThrownBy(() -> chip.finalizeRun(failed)).isInstanceOf(KernelFaultException.class);
        assertThat(out).as("failed: nothing copied back").containsExactly(-1, -1, -1, -1);

        NativeRun ok = chip.prepare(0, args, CONFIG, PipelineSlotLease.of(0, 1), 0, 0, null);
        chip.launch(ok);
        chip.finalizeRun(ok);
        // an OUT array is produced whole: it takes every byte the run copied back into its staging
        assertThat(out[0]).isEqualTo(FakeNativeApi.RESULT);
        assertThat(in).as("IN is never copied back").containsExactly(1, 2, 3, 4);
    }

    @Test
    void directBuffersArePassedInPlaceAndDeviceBuffersAsChildMemory() {
        FakeNativeApi fake = fake();
        ChipWorker chip = open(fake, DEPTH2);
        ByteBuffer direct = ByteBuffer.allocateDirect(64).order(ByteOrder.LITTLE_ENDIAN);
        direct.position(16);
        DeviceBuffer device = chip.malloc(128);
        NativeRun run = chip.prepare(0, TaskArgs.of(Tensor.of(direct, DType.F32), Tensor.of(device, DType.I32, 4, 8)),
                CONFIG, PipelineSlotLease.of(0, 1), 0, 0, null);
        ByteBuffer block = NativeMemory.view(fake.argsBlock(0), Layouts.ChipStorageTaskArgs.SIZE);
        assertThat(block.getLong(Layouts.ChipTensor.ADDR)).isEqualTo(NativeMemory.address(direct) + 16);
        assertThat(block.getLong(Layouts.ChipTensor.SIZE_FIELD)).isEqualTo(48);
        assertThat(block.get(Layouts.ChipTensor.CHILD_MEMORY)).isZero();
        int second = Layouts.ChipTensor.SIZE;
        assertThat(block.getLong(second + Layouts.ChipTensor.ADDR)).isEqualTo(device.address());
        assertThat(block.get(second + Layouts.ChipTensor.CHILD_MEMORY)).isEqualTo((byte) 1);
        assertThatThrownBy(device::close)
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("not yet finalized");
        chip.launch(run);
        chip.finalizeRun(run);
        assertThat(direct.getFloat(16)).as("the library wrote the buffer in place").isEqualTo(FakeNativeApi.RESULT);
        device.close();
        device.close();
        assertThat(fake.count("deviceFree")).isEqualTo(1);
    }

    @Test
    void deviceBuffersOfAnotherChipWorkerOrClosedOnesAreRefused() {
        ChipWorker a = open(fake(), DEPTH2);
        FakeNativeApi fakeB = fake();
        ChipWorker b = open(fakeB, DEPTH2);
        DeviceBuffer onB = b.malloc(64);
        assertThatThrownBy(() -> a.prepare(0, TaskArgs.of(Tensor.of(onB, DType.F32)), CONFIG,
                PipelineSlotLease.of(0, 1), 0, 0, null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("belongs to another ChipWorker");
        assertThatThrownBy(() -> a.copyTo(onB, new float[4])).isInstanceOf(IllegalArgumentException.class);
        onB.close();
        assertThatThrownBy(() -> b.prepare(0, TaskArgs.of(Tensor.of(onB, DType.F32)), CONFIG,
                PipelineSlotLease.of(0, 1), 0, 0, null))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("closed");
        assertThat(a.phaseOf(0)).isEqualTo(Phase.EMPTY);
        assertThat(b.phaseOf(0)).isEqualTo(Phase.EMPTY);
        assertThatThrownBy(() -> b.copyFrom(onB, new float[4])).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void deviceMemoryCallsForwardAndCheckRanges() {
        FakeNativeApi fake = fake();
        ChipWorker chip = open(fake, DEPTH2);
        DeviceBuffer buffer = chip.malloc(1000);
        assertThat(chip.committedDeviceMemory()).isEqualTo(1000);
        chip.copyTo(buffer, new float[250]);
        chip.copyFrom(buffer, new byte[1000]);
        chip.copyTo(buffer, 996, ByteBuffer.allocate(4));
        assertThatThrownBy(() -> chip.copyTo(buffer, 997, ByteBuffer.allocate(4)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("do not fit");
        assertThatThrownBy(() -> chip.copyFrom(buffer, new float[251])).isInstanceOf(IllegalArgumentException.class);
        fake.script("copyToDevice", -3, "copy_to_device: range not inside one live allocation");
        assertThatThrownBy(() -> chip.copyTo(buffer, new int[1]))
                .isExactlyInstanceOf(InvalidNativeArgumentException.class)
                .hasMessageContaining("PTO_ERR_INVALID_ARGUMENT (-3): copy_to_device: range not inside one live allocation");
        fake.script("deviceMalloc", -8, "");
        assertThatThrownBy(() -> chip.malloc(1 << 20)).isExactlyInstanceOf(DeviceOutOfMemoryException.class);
        assertThatThrownBy(() -> chip.malloc(0)).isInstanceOf(IllegalArgumentException.class);
        chip.free(buffer);
        assertThat(chip.committedDeviceMemory()).isZero();
    }

    @Test
    void callableIdsAreCheckedAndRegistryRefusalsMapToExceptions() {
        FakeNativeApi fake = fake();
        ChipWorker chip = open(fake, DEPTH2);
        ChipCallable noop = ChipCallable.builder().child(0, Kernel.noop())
                .program(Program.builder().submit(0).build()).build();
        assertThatThrownBy(() -> chip.registerCallable(64, noop)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> chip.unregisterCallable(-1)).isInstanceOf(IllegalArgumentException.class);
        fake.script("registerCallable", -6, "a native run is outstanding");
        assertThatThrownBy(() -> chip.registerCallable(1, noop)).isExactlyInstanceOf(ChipBusyException.class);
        fake.script("registerCallable", -12, "unknown kernel");
        assertThatThrownBy(() -> chip.registerCallable(1, noop)).isExactlyInstanceOf(BadCallableException.class)
                .hasMessageContaining("unknown kernel");
        chip.registerCallable(1, noop);
        chip.unregisterCallable(1);
        assertThat(fake.count("registerCallable")).isEqualTo(3);
    }

    // ---- acceptance ------------------------------------------------------------------------

    @Test
    void theAcceptanceWordIsCapturedAtPrepareWrittenAtLaunchAndReusableAfterFinalize() {
        FakeNativeApi fake = fake();
        ChipWorker chip = open(fake, DEPTH2);
        try (AcceptanceWord word = AcceptanceWord.allocate(5)) {
            NativeRun run = chip.prepare(0, args(), CONFIG, PipelineSlotLease.of(0, 1), 0, 0, word);
            ByteBuffer d = fake.descriptor(0);
            assertThat(d.getLong(Layouts.NativeRunDescriptor.ACCEPTED_STATE)).isEqualTo(word.address());
            assertThat(d.getInt(Layouts.NativeRunDescriptor.ACCEPTED_VALUE)).isEqualTo(5);
            assertThat(word.isAccepted()).isFalse();
            assertThatThrownBy(word::reset).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("captured");
            assertThatThrownBy(word::close).isInstanceOf(IllegalStateException.class);
            assertThatThrownBy(() -> chip.prepare(0, args(), CONFIG, PipelineSlotLease.of(1, 1), 0, 0, word))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("captured");

            fake.script("launchRun", -6, "busy");
            fake.script("pollRun", -5, "");
            assertThatThrownBy(() -> chip.launch(run)).isInstanceOf(ChipBusyException.class);
            assertThat(word.value()).as("refused before the marker: never written").isZero();
            chip.launch(run);
            assertThat(word.isAccepted()).isTrue();
            assertThat(word.value()).isEqualTo(5);
            chip.finalizeRun(run);
            word.reset();
            assertThat(word.value()).isZero();
        }
    }

    // ---- threads and the lock ------------------------------------------------------------------

    @Test
    void noLockIsHeldAcrossANativeCall() throws Exception {
        FakeNativeApi fake = fake();
        ChipWorker chip = open(fake, DEPTH2);
        NativeRun predecessor = prepare(chip, 0, 1);
        chip.launch(predecessor);

        FakeNativeApi.Gate inPoll = fake.block("pollRun", 0);
        Future<Boolean> blockedPoll = pool.submit(() -> chip.poll(predecessor));
        inPoll.awaitEntered();
        // while slot 0's poll is parked inside the library, slot 1 and the device are usable
        NativeRun successor = prepare(chip, 1, 1);
        fake.script("launchRun", -6, "the predecessor holds the execution claim");
        assertThatThrownBy(() -> chip.launch(successor)).isInstanceOf(ChipBusyException.class);
        assertThat(chip.committedDeviceMemory()).isZero();
        // an overlapping call on the parked run fails fast instead of reaching the library
        assertThatThrownBy(() -> chip.poll(predecessor))
                .isInstanceOf(StaleRunException.class)
                .hasMessageContaining("another call on this run is in progress");
        assertThatThrownBy(() -> chip.finalizeRun(predecessor))
                .hasMessageContaining("another call on this run is in progress");
        inPoll.open();
        assertThat(blockedPoll.get(30, TimeUnit.SECONDS)).isFalse();

        FakeNativeApi.Gate inFinalize = fake.block("finalizeRun", 0);
        Future<?> blockedFinalize = pool.submit(() -> chip.finalizeRun(predecessor));
        inFinalize.awaitEntered();
        assertThat(chip.phaseOf(0)).isEqualTo(Phase.FINALIZING);
        chip.launch(successor); // the fake does not model the claim: this only shows the lock is free
        assertThat(chip.poll(successor)).isTrue();
        inFinalize.open();
        blockedFinalize.get(30, TimeUnit.SECONDS);
        chip.finalizeRun(successor);
        assertThat(chip.phaseOf(0)).isEqualTo(Phase.EMPTY);
        assertThat(chip.phaseOf(1)).isEqualTo(Phase.EMPTY);
    }

    @Test
    void aPrepareParkedInTheLibraryMakesOtherCallsAnswerNotWait() throws Exception {
        FakeNativeApi fake = fake();
        ChipWorker chip = open(fake, DEPTH2);
        FakeNativeApi.Gate inPrepare = fake.block("prepareRun", 0);
        Future<NativeRun> parked = pool.submit(() -> prepare(chip, 0, 1));
        inPrepare.awaitEntered();
        assertThat(chip.phaseOf(0)).isEqualTo(Phase.PREPARING);
        assertThatThrownBy(() -> prepare(chip, 1, 1))
                .hasMessageContaining("requires an active predecessor before staging a successor");
        assertThatThrownBy(() -> prepare(chip, 0, 1))
                .hasMessageContaining("slot already owns an unfinished native run");
        inPrepare.open();
        NativeRun run = parked.get(30, TimeUnit.SECONDS);
        chip.finalizeRun(run);
    }

    @Test
    void everyPhaseMayBeDrivenFromAThreadOtherThanThePreparingOne() throws Exception {
        FakeNativeApi fake = fake();
        ChipWorker chip = open(fake, DEPTH2);
        fake.script("pollRun", 0, "");
        ExecutorService[] threads = new ExecutorService[5];
        for (int i = 0; i < threads.length; i++) {
            int n = i;
            threads[i] = Executors.newSingleThreadExecutor(r -> new Thread(r, "phase-" + n));
        }
        try {
            NativeRun run = threads[0].submit(() -> prepare(chip, 0, 1)).get(30, TimeUnit.SECONDS);
            threads[1].submit(() -> chip.launch(run)).get(30, TimeUnit.SECONDS);
            assertThat(threads[2].submit(() -> chip.poll(run)).get(30, TimeUnit.SECONDS)).isFalse();
            threads[3].submit(() -> chip.await(run)).get(30, TimeUnit.SECONDS);
            threads[4].submit(() -> chip.finalizeRun(run)).get(30, TimeUnit.SECONDS);
        } finally {
            for (ExecutorService t : threads) {
                t.shutdownNow();
            }
        }
        assertThat(fake.callsOf("prepareRun")).extracting(FakeNativeApi.Call::thread).containsExactly("phase-0");
        assertThat(fake.callsOf("launchRun")).extracting(FakeNativeApi.Call::thread).containsExactly("phase-1");
        assertThat(fake.callsOf("pollRun")).extracting(FakeNativeApi.Call::thread).containsExactly("phase-2");
        assertThat(fake.callsOf("waitRun")).extracting(FakeNativeApi.Call::thread).containsExactly("phase-3");
        assertThat(fake.callsOf("finalizeRun")).extracting(FakeNativeApi.Call::thread).containsExactly("phase-4");
        assertThat(chip.phaseOf(0)).isEqualTo(Phase.EMPTY);
    }

    @Test
    void awaitRecordsAFailureWithoutThrowingAndFinalizeReportsIt() throws Exception {
        FakeNativeApi fake = fake();
        ChipWorker chip = open(fake, DEPTH2);
        NativeRun run = prepare(chip, 0, 1);
        chip.launch(run);
        fake.script("waitRun", -10, "task 1 func_id 2 returned 3");
        onThread(() -> chip.await(run));
        assertThat(chip.phaseOf(0)).isEqualTo(Phase.ENDED);
        chip.await(run); // reaped: returns at once
        assertThat(fake.count("waitRun")).isEqualTo(1);
        fake.script("finalizeRun", -10, "task 1 func_id 2 returned 3");
        assertThatThrownBy(() -> on(() -> {
            chip.finalizeRun(run);
            return null;
        })).hasCauseInstanceOf(KernelFaultException.class);
    }

    // ---- the blocking composition ------------------------------------------------------------

    @Test
    void anUnleasedRunUsesSlotZeroWithItsOwnEpochAndTouchesNoGenerationFilter() {
        FakeNativeApi fake = fake();
        ChipWorker chip = open(fake, DEPTH2);
        chip.finalizeRun(prepare(chip, 0, 9));
        float[] out = new float[2];
        ChipCallable callable = ChipCallable.builder().signature(Direction.OUT).child(0, Kernel.vfill())
                .program(Program.builder().submit(0, Param.tensor(0, Direction.OUT, 0, 8), Param.scalarF32(1f)).build())
                .build();
        chip.registerCallable(0, callable);
        RunReport first = chip.run(0, TaskArgs.of(Tensor.of(out)), CONFIG);
        assertThat(out[0]).isEqualTo(FakeNativeApi.RESULT);
        ByteBuffer d = fake.descriptor(0);
        assertThat(d.getInt(Layouts.NativeRunDescriptor.PIPELINE_SLOT)).isZero();
        assertThat(d.getLong(Layouts.NativeRunDescriptor.RUN_EPOCH)).as("a run epoch of its own, like a prepare's")
                .isPositive().isEqualTo(first.run().runEpoch());
        assertThat(d.getLong(Layouts.NativeRunDescriptor.GENERATION)).isZero();
        assertThat(first.run().slot()).isZero();
        assertThat(first.run().generation()).isZero();
        RunReport second = chip.run(0, TaskArgs.of(Tensor.of(out)), CONFIG);
        assertThat(second.run().runEpoch()).as("every blocking run mints its own epoch")
                .isGreaterThan(first.run().runEpoch());
        assertThat(chip.phaseOf(0)).isEqualTo(Phase.EMPTY);
        chip.finalizeRun(prepare(chip, 0, 9)); // the filter still admits generation 9

        fake.script("run", -10, "task 0 func_id 0 returned 1");
        assertThatThrownBy(() -> chip.run(0, TaskArgs.of(Tensor.of(out)), CONFIG))
                .isExactlyInstanceOf(KernelFaultException.class)
                .hasMessageContaining("(run_id=0 slot=0 generation=0 dispatch_id=0 run_epoch=")
                .hasMessageNotContaining("run_epoch=0)");
        assertThat(chip.phaseOf(0)).isEqualTo(Phase.EMPTY);

        try (AcceptanceWord word = AcceptanceWord.allocate()) {
            chip.run(0, TaskArgs.of(Tensor.of(out)), CONFIG, PipelineSlotLease.of(1, 1), 5, 6, word);
            assertThat(word.isAccepted()).isTrue();
            assertThat(fake.descriptor(1).getLong(Layouts.NativeRunDescriptor.RUN_EPOCH)).isPositive();
        }
        assertThatThrownBy(() -> chip.run(0, TaskArgs.of(Tensor.of(out)), CONFIG, PipelineSlotLease.of(1, 0), 5, 6, null))
                .hasMessageContaining("lease is outside the runtime PipelineContract");
    }

    @Test
    void aBlockingRunIsRefusedWhileItsSlotHoldsAPreparedRun() {
        ChipWorker chip = open(fake(), DEPTH2);
        NativeRun held = prepare(chip, 0, 1);
        assertThatThrownBy(() -> chip.run(0, args(), CONFIG))
                .isInstanceOf(ChipBusyException.class)
                .hasMessageContaining("slot already owns an unfinished native run");
        chip.finalizeRun(held);
    }

    // ---- close ------------------------------------------------------------------------------

    @Test
    void closeFinalizesOutstandingRunsThenReleasesTheDevice() {
        FakeNativeApi fake = fake();
        ChipWorker chip = open(fake, DEPTH2);
        NativeRun running = prepare(chip, 0, 1);
        chip.launch(running);
        NativeRun waiting = prepare(chip, 1, 1);
        DeviceBuffer buffer = chip.malloc(64);
        chip.close();
        assertThat(fake.count("waitRun")).as("finalize waits inside its one native call").isZero();
        assertThat(fake.callsOf("finalizeRun")).extracting(FakeNativeApi.Call::slot).containsExactlyInAnyOrder(0, 1);
        assertThat(fake.count("finalizeDevice")).isEqualTo(1);
        assertThat(fake.count("destroyDeviceContext")).isEqualTo(1);
        List<String> order = fake.calls.stream().map(FakeNativeApi.Call::fn).toList();
        assertThat(order.lastIndexOf("finalizeRun")).isLessThan(order.indexOf("finalizeDevice"));
        assertThat(order.indexOf("finalizeDevice")).isLessThan(order.indexOf("destroyDeviceContext"));

        assertThat(chip.isClosed()).isTrue();
        assertThatThrownBy(() -> prepare(chip, 0, 2)).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> chip.launch(waiting)).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> chip.finalizeRun(running)).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> chip.malloc(8)).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(chip::committedDeviceMemory).isInstanceOf(IllegalStateException.class);
        buffer.close(); // the device released it already: no native call
        assertThat(fake.count("deviceFree")).isZero();
        chip.close();
        assertThat(fake.count("finalizeDevice")).isEqualTo(1);
    }

    @Test
    void closeLogsAndSwallowsFailuresOfOutstandingRuns() {
        FakeNativeApi fake = fake();
        ChipWorker chip = open(fake, DEPTH2);
        NativeRun run = prepare(chip, 0, 1);
        chip.launch(run);
        fake.script("finalizeRun", -9, "device lost");
        try (LogCapture logs = LogCapture.open()) {
            chip.close();
            assertThat(logs.messages(Level.WARN)).singleElement().asString()
                    .contains("finalizing the outstanding run").contains("device lost");
        }
        assertThat(fake.count("destroyDeviceContext")).isEqualTo(1);
    }

    // close against a call in flight (waits, then finalizes; leaks only past the run's
    // timeout): ChipWorkerRaceTest

    @Test
    void concurrentClosesFinalizeEachRunOnce() throws Exception {
        FakeNativeApi fake = fake();
        ChipWorker chip = open(fake, DEPTH2);
        NativeRun run = prepare(chip, 0, 1);
        chip.launch(run);
        List<Future<?>> closers = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            closers.add(pool.submit(chip::close));
        }
        for (Future<?> f : closers) {
            f.get(30, TimeUnit.SECONDS);
        }
        assertThat(fake.count("finalizeRun")).isEqualTo(1);
        assertThat(fake.count("finalizeDevice")).isEqualTo(1);
        assertThat(fake.count("destroyDeviceContext")).isEqualTo(1);
    }
}

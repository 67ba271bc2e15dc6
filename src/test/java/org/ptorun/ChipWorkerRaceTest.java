package org.ptorun;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.ptorun.callable.Direction.IN;
import static org.ptorun.callable.Direction.OUT;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.ptorun.SlotTable.Phase;
import org.ptorun.callable.ChipCallable;
import org.ptorun.callable.Direction;
import org.ptorun.testlog.LogCapture;
import org.slf4j.event.Level;
import org.ptorun.callable.Kernel;
import org.ptorun.callable.Param;
import org.ptorun.callable.Program;

/**
 * Deterministic regression tests, over {@link FakeNativeApi} gates, for the races of
 * registration against prepare, of two registrations, and of close against a call in
 * flight: a thread is parked inside the "library", the other call is made, and the test
 * checks what the second call may and may not do before the gate opens.
 */
class ChipWorkerRaceTest {

    private final List<AutoCloseable> toClose = new ArrayList<>();
    private final ExecutorService pool = Executors.newCachedThreadPool();

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

    private ChipWorker open(FakeNativeApi fake) {
        ChipWorker chip = new ChipWorker(fake, Variant.DEFAULT, ChipWorkerPhaseTableTest.DEPTH2, fake.runtimeSize(),
                fake.runtimeAlignment(), 0, ChipWorkerPhaseTableTest.IMAGE, ChipWorkerPhaseTableTest.IMAGE);
        fake.bind(chip.runtimeBufferAddresses());
        toClose.add(chip);
        return chip;
    }

    /** x IN, y OUT. */
    private static final ChipCallable IN_OUT = twoTensors(IN, OUT);
    /** x OUT, y IN: the other way round. */
    private static final ChipCallable OUT_IN = twoTensors(OUT, IN);

    private static ChipCallable twoTensors(Direction first, Direction second) {
        Direction reads = first == IN ? first : second;
        return ChipCallable.builder()
                .signature(first, second)
                .child(0, Kernel.vcopy())
                .program(Program.builder()
                        .submit(0, Param.tensor(first == IN ? 0 : 1, reads, 0, 16),
                                Param.tensor(first == IN ? 1 : 0, OUT, 0, 16))
                        .build())
                .build();
    }

    private static NativeRun prepare(ChipWorker chip, float[] x, float[] y) {
        return chip.prepare(0, TaskArgs.of(Tensor.of(x), Tensor.of(y)), CallConfig.DEFAULT,
                PipelineSlotLease.of(0, 1), 1, 1, null);
    }

    // ---- registration against prepare -----------------------------------------------------------

    @Test
    void aRegistrationWaitsForAPrepareInsideTheLibraryAndTheRunKeepsItsSignature() throws Exception {
        FakeNativeApi fake = fake();
        ChipWorker chip = open(fake);
        chip.registerCallable(0, IN_OUT);
        FakeNativeApi.Gate inPrepare = fake.block("prepareRun", 0);
        float[] x = {1, 2, 3, 4};
        float[] y = {5, 6, 7, 8};
        Future<NativeRun> prepared = pool.submit(() -> prepare(chip, x, y));
        inPrepare.awaitEntered();

        TestThreads.Started register = TestThreads.start("registering", () -> chip.registerCallable(0, OUT_IN));
        TestThreads.awaitParked(register.thread());
        assertThat(fake.callsOf("registerCallable")).as("the re-registration reached the library while a prepare"
                + " of the same chip was inside it").hasSize(1);
        assertThat(register.done()).isNotDone();

        inPrepare.open();
        NativeRun run = prepared.get(30, TimeUnit.SECONDS);
        register.join();
        assertThat(fake.callsOf("registerCallable")).hasSize(2);
        assertThat(chip.signatureOf(0)).containsExactly(OUT, IN);

        // the prepared run copies back by the signature it was prepared with: y, not x
        chip.launch(run);
        chip.finalizeRun(run);
        assertThat(x[0]).isEqualTo(1f);
        assertThat(y[0]).isEqualTo(FakeNativeApi.RESULT);
    }

    @Test
    void aPrepareWaitsForARegistrationInsideTheLibrary() throws Exception {
        FakeNativeApi fake = fake();
        ChipWorker chip = open(fake);
        chip.registerCallable(0, IN_OUT);
        FakeNativeApi.Gate inRegister = fake.block("registerCallable", 0);
        TestThreads.Started register = TestThreads.start("registering", () -> chip.registerCallable(0, OUT_IN));
        inRegister.awaitEntered();

        float[] x = {1, 2, 3, 4};
        float[] y = {5, 6, 7, 8};
        CompletableFuture<NativeRun> prepared = new CompletableFuture<>();
        TestThreads.Started prepare = TestThreads.start("preparing", () -> prepared.complete(prepare(chip, x, y)));
        TestThreads.awaitParked(prepare.thread());
        assertThat(fake.callsOf("prepareRun")).as("a prepare read the signature while its registration was"
                + " inside the library").isEmpty();

        inRegister.open();
        register.join();
        prepare.join();
        NativeRun run = prepared.get();
        chip.launch(run);
        chip.finalizeRun(run);
        assertThat(x[0]).as("OUT_IN writes x").isEqualTo(FakeNativeApi.RESULT);
        assertThat(y[0]).as("OUT_IN only reads y").isEqualTo(5f);
    }

    // ---- two registrations ----------------------------------------------------------------------

    @Test
    void twoRegistrationsOfOneIdSerializeAndJavaHoldsTheLastOneTheLibraryTook() throws Exception {
        FakeNativeApi fake = fake();
        ChipWorker chip = open(fake);
        FakeNativeApi.Gate first = fake.block("registerCallable", 0);
        TestThreads.Started a = TestThreads.start("registering IN_OUT", () -> chip.registerCallable(0, IN_OUT));
        first.awaitEntered();
        TestThreads.Started b = TestThreads.start("registering OUT_IN", () -> chip.registerCallable(0, OUT_IN));
        TestThreads.awaitParked(b.thread());
        assertThat(fake.callsOf("registerCallable")).as("two registrations of one chip inside the library at once")
                .hasSize(1);

        first.open();
        a.join();
        b.join();
        assertThat(fake.callsOf("registerCallable")).hasSize(2);
        assertThat(chip.signatureOf(0)).as("the library took OUT_IN last").containsExactly(OUT, IN);
    }

    @Test
    void aRefusedRegistrationLeavesJavaWithTheCallableTheLibraryKept() {
        FakeNativeApi fake = fake();
        ChipWorker chip = open(fake);
        chip.registerCallable(0, IN_OUT);
        fake.script("registerCallable", PtoError.BUSY.code(), "a run is outstanding");
        assertThatThrownBy(() -> chip.registerCallable(0, OUT_IN)).isInstanceOf(ChipBusyException.class)
                .hasMessageContaining("register_callable 0").hasMessageContaining("a run is outstanding");
        assertThat(chip.signatureOf(0)).containsExactly(IN, OUT);
    }

    // ---- close against a call in flight ---------------------------------------------------------

    /**
     * Parks a thread inside {@code fn} of a run, closes from another thread, checks that
     * close waits (device untouched), then lets the call return: close finalizes the run
     * and releases the device — nothing leaked.
     */
    @ParameterizedTest
    @ValueSource(strings = {"prepareRun", "launchRun", "pollRun", "waitRun", "finalizeRun"})
    void closeWaitsForTheCallInFlightThenFinalizesAndReleasesEverything(String fn) throws Exception {
        FakeNativeApi fake = fake();
        ChipWorker chip = open(fake);
        chip.registerCallable(0, IN_OUT);
        float[] x = {1, 2, 3, 4};
        float[] y = {5, 6, 7, 8};
        FakeNativeApi.Gate gate = fake.block(fn, 0);
        NativeRun[] token = new NativeRun[1];
        TestThreads.Started caller = TestThreads.start("caller in " + fn, () -> {
            token[0] = prepare(chip, x, y);
            switch (fn) {
                case "prepareRun":
                    return;
                case "launchRun":
                    chip.launch(token[0]);
                    return;
                case "pollRun":
                    chip.launch(token[0]);
                    chip.poll(token[0]);
                    return;
                case "waitRun":
                    chip.launch(token[0]);
                    chip.await(token[0]);
                    return;
                default:
                    chip.launch(token[0]);
                    chip.finalizeRun(token[0]);
            }
        });
        gate.awaitEntered();

        CountDownLatch closeWaits = new CountDownLatch(1);
        chip.onCloseWaits(closeWaits::countDown);
        TestThreads.Started closer = TestThreads.start("closer", chip::close);
        assertThat(closeWaits.await(30, TimeUnit.SECONDS)).as("close waits for the call in flight").isTrue();
        assertThat(fake.callsOf("finalizeDevice")).as("the device released under a call in flight").isEmpty();
        assertThat(fake.callsOf("destroyDeviceContext")).isEmpty();
        assertThat(closer.done()).isNotDone();

        gate.open();
        caller.join();
        closer.join();
        assertThat(chip.isClosed()).isTrue();
        assertThat(fake.callsOf("finalizeRun")).as("the run finalized exactly once, by its caller or by close")
                .hasSize(1);
        assertThat(fake.callsOf("finalizeDevice")).hasSize(1);
        assertThat(fake.callsOf("destroyDeviceContext")).hasSize(1);
        if (!fn.equals("finalizeRun")) {
            // the caller's token outlived its run: close finalized it
            assertThatThrownBy(() -> chip.finalizeRun(token[0]))
                    .isInstanceOf(IllegalStateException.class).hasMessageContaining("is closed");
        }
    }

    @Test
    void aCallThatOutlivesItsTimeoutIsLeftBehindWithItsContextNotFreedUnderIt() throws Exception {
        FakeNativeApi fake = fake();
        ChipWorker chip = open(fake);
        chip.registerCallable(0, IN_OUT);
        FakeNativeApi.Gate gate = fake.block("waitRun", 0);
        CallConfig oneMs = CallConfig.builder().timeoutMs(1).build();
        float[] x = {1, 2, 3, 4};
        float[] y = {5, 6, 7, 8};
        TestThreads.Started caller = TestThreads.start("caller in waitRun", () -> {
            NativeRun run = chip.prepare(0, TaskArgs.of(Tensor.of(x), Tensor.of(y)), oneMs,
                    PipelineSlotLease.of(0, 1), 1, 1, null);
            chip.launch(run);
            chip.await(run);
        });
        gate.awaitEntered();
        try (LogCapture logs = LogCapture.open()) {
            chip.close(); // waits 1 ms + the grace, then leaves the call behind
            assertThat(logs.messages(Level.ERROR)).singleElement().asString()
                    .contains("the RUNNING call of").contains("did not return within its timeout of 1 ms")
                    .contains("leaking the device context");
        }
        assertThat(chip.isClosed()).isTrue();
        assertThat(fake.callsOf("finalizeDevice")).as("nothing freed under the live call").isEmpty();
        assertThat(fake.callsOf("destroyDeviceContext")).isEmpty();
        assertThat(chip.phaseOf(0)).isEqualTo(Phase.RUNNING);
        gate.open();
        caller.join();
    }
}

package org.ptorun.capture;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.ptorun.AcceptanceWord;
import org.ptorun.CallConfig;
import org.ptorun.ChipWorker;
import org.ptorun.DeviceErrorException;
import org.ptorun.HostRuntime;
import org.ptorun.KernelFaultException;
import org.ptorun.NativeRun;
import org.ptorun.PipelineSlotLease;
import org.ptorun.PtoRunException;
import org.ptorun.TaskArgs;
import org.ptorun.Tensor;
import org.ptorun.Variant;
import org.ptorun.testing.EmulatedFaults;
import org.ptorun.testing.Fault;
import org.ptorun.testlog.LogCapture;
import org.slf4j.event.Level;

/**
 * A {@link ChipWorker} honours {@code CallConfig.captureFailuresTo}: a run that fails — at
 * prepare, launch or finalize, prepared or blocking — is written once, with the inputs it
 * had when it was prepared, as a file {@link RunReplay} replays to the same failure (a
 * refusal at prepare is captured, not replayed: a callable decoded from its bytes has no
 * tensor extents, so a replay meets the library's refusal instead of Java's); a
 * successful run writes nothing; a capture that cannot be written is logged and changes
 * nothing of the run.
 */
class ChipWorkerCaptureE2ETest {

    /** The emulated driver every onboard library loads (one instance for all of them). */
    private static final EmulatedFaults FAULTS = EmulatedFaults.of(HostRuntime.load(Variant.parse("a2a3/onboard/hbg")));

    @TempDir
    Path dir;

    private ChipWorker chip;

    static List<Variant> allVariants() {
        return Variant.all();
    }

    /** An hbg and a trb sim library and an onboard one. */
    static List<Variant> someVariants() {
        return List.of(Variant.parse("a2a3/sim/hbg"), Variant.parse("a2a3/sim/trb"), Variant.parse("a5/onboard/trb"));
    }

    static List<Variant> onboard() {
        return Variant.all().stream().filter(v -> v.platform() == Variant.Platform.ONBOARD).toList();
    }

    @AfterEach
    void tearDown() {
        FAULTS.disarm();
        if (chip != null) {
            chip.close();
        }
    }

    private ChipWorker open(Variant variant) {
        chip = ChipWorker.open(HostRuntime.load(variant), 0);
        chip.registerCallable(Fixtures.FAULT, Fixtures.faultyVadd());
        chip.registerCallable(Fixtures.CHAIN, Fixtures.chain());
        return chip;
    }

    private void closeChip() {
        chip.close();
        chip = null;
    }

    private CallConfig capturing() {
        return CallConfig.builder().captureFailuresTo(dir.resolve("captures")).build();
    }

    private List<Path> captured() throws Exception {
        Path captures = dir.resolve("captures");
        if (!Files.exists(captures)) {
            return List.of();
        }
        try (Stream<Path> files = Files.list(captures)) {
            return files.sorted().toList();
        }
    }

    private static byte[] bytesOf(float[] x) {
        ByteBuffer b = ByteBuffer.allocate(4 * x.length).order(ByteOrder.LITTLE_ENDIAN);
        b.asFloatBuffer().put(x);
        return b.array();
    }

    @ParameterizedTest
    @MethodSource("allVariants")
    void aPreparedRunThatFailsIsCapturedOnceWithTheInputsItWasPreparedWith(Variant variant) throws Exception {
        open(variant);
        float[] a = Fixtures.random(Fixtures.N, 1);
        byte[] aAtPrepare = bytesOf(a);
        TaskArgs args = TaskArgs.of(Tensor.of(a), Tensor.of(Fixtures.random(Fixtures.N, 2)),
                Tensor.of(Fixtures.filled(Fixtures.N)));
        CallConfig config = capturing();
        NativeRun run;
        Throwable failed;
        try (AcceptanceWord word = AcceptanceWord.allocate()) {
            run = chip.prepare(Fixtures.FAULT, args, config, PipelineSlotLease.of(0, 1), 41, 7, word);
            java.util.Arrays.fill(a, 9f); // the caller reuses its array: the capture has what was prepared
            Throwable atLaunch = catchThrowable(() -> chip.launch(run));
            // the fault may end the run before the launch marker: launch reports it, finalize still runs
            assertThat(atLaunch).satisfiesAnyOf(t -> assertThat(t).isNull(),
                    t -> assertThat(t).isInstanceOf(KernelFaultException.class));
            Throwable atFinalize = catchThrowable(() -> chip.finalizeRun(run));
            failed = atLaunch != null ? atLaunch : atFinalize;
        }
        Throwable failure = failed;
        assertThat(failure).isInstanceOf(KernelFaultException.class);
        closeChip(); // the replay opens device 0 itself

        Path file = dir.resolve("captures").resolve("run-41-7.ptocap");
        assertThat(captured()).as("one file for the run, whichever phase failed first").containsExactly(file);
        RunCapture c = RunCapture.read(file);
        assertThat(c.variant()).isEqualTo(variant);
        assertThat(c.callableId()).isEqualTo(Fixtures.FAULT);
        assertThat(c.callable()).isEqualTo(Fixtures.faultyVadd().bytes());
        assertThat(c.config()).isEqualTo(config);
        assertThat(c.tensors().get(0).input()).isEqualTo(aAtPrepare);
        assertThat(c.hasOutputs()).isFalse();
        assertThat(c.failure()).get().satisfies(f -> {
            assertThat(f.exceptionClass()).isEqualTo(KernelFaultException.class.getName());
            assertThat(f.code()).isEqualTo(((PtoRunException) failure).code());
        });
        assertThat(c.identity()).contains(new RunCapture.RunIdentity(41, 7, run.runEpoch()));

        ReplayResult r = RunReplay.replay(c);
        assertThat(r.reproducedFailure()).as(r.verdict()).isTrue();
        assertThat(r.verdict()).startsWith("reproduced: KernelFaultException ");
        assertThat(captured()).as("the replay writes no capture into the service's directory").containsExactly(file);
    }

    @ParameterizedTest
    @MethodSource("allVariants")
    void aSuccessfulRunWritesNothing(Variant variant) throws Exception {
        open(variant);
        CallConfig config = capturing();
        NativeRun run = chip.prepare(Fixtures.CHAIN, Fixtures.chainArgs(5), config, PipelineSlotLease.of(0, 1), 1, 1,
                null);
        chip.launch(run);
        chip.finalizeRun(run);
        chip.run(Fixtures.CHAIN, Fixtures.chainArgs(6), config);
        // the same slot's next run fails: only it is written, not the successful one before it
        NativeRun failing = chip.prepare(Fixtures.FAULT, Fixtures.faultArgs(), config, PipelineSlotLease.of(0, 2), 2,
                2, null);
        catchThrowable(() -> chip.launch(failing));
        catchThrowable(() -> chip.finalizeRun(failing));
        assertThat(captured()).extracting(p -> p.getFileName().toString()).containsExactly("run-2-2.ptocap");
    }

    @ParameterizedTest
    @MethodSource("someVariants")
    void aBlockingRunThatFailsIsCapturedAndAnotherWithTheSameIdsBesideIt(Variant variant) throws Exception {
        open(variant);
        Throwable first = catchThrowable(() -> chip.run(Fixtures.FAULT, Fixtures.faultArgs(), capturing()));
        Throwable second = catchThrowable(() -> chip.run(Fixtures.FAULT, Fixtures.faultArgs(), capturing()));
        assertThat(first).isInstanceOf(KernelFaultException.class);
        assertThat(second).isInstanceOf(KernelFaultException.class);
        long secondEpoch = ((PtoRunException) second).run().orElseThrow().runEpoch();
        closeChip(); // the replay opens device 0 itself
        Path captures = dir.resolve("captures");
        assertThat(captured()).containsExactlyInAnyOrder(captures.resolve("run-0-0.ptocap"),
                captures.resolve("run-0-0-" + secondEpoch + ".ptocap"));
        for (Path file : captured()) {
            ReplayResult r = RunReplay.replay(RunCapture.read(file), variant);
            assertThat(r.verdict()).startsWith("reproduced: KernelFaultException ");
        }
        assertThat(RunCapture.read(captures.resolve("run-0-0-" + secondEpoch + ".ptocap")).identity()
                .orElseThrow().runEpoch()).isEqualTo(secondEpoch);
    }

    @ParameterizedTest
    @MethodSource("someVariants")
    void aRunRefusedAtPrepareIsCapturedWithItsRefusal(Variant variant) throws Exception {
        open(variant);
        // a tensor smaller than the chain's program reads: refused at prepare, on every library alike
        TaskArgs args = TaskArgs.of(Tensor.of(new float[16]), Tensor.of(Fixtures.random(Fixtures.N, 2)),
                Tensor.of(Fixtures.filled(Fixtures.N)), Tensor.of(Fixtures.filled(Fixtures.N)),
                Tensor.of(Fixtures.filled(Fixtures.N)), Tensor.of(Fixtures.filled(Fixtures.N)),
                Tensor.of(Fixtures.filled(Fixtures.N)));
        Throwable refused = catchThrowable(() -> chip.prepare(Fixtures.CHAIN, args, capturing(),
                PipelineSlotLease.of(0, 1), 3, 9, null));
        assertThat(refused).isInstanceOf(IllegalArgumentException.class);
        closeChip(); // the replay opens device 0 itself
        Path file = dir.resolve("captures").resolve("run-3-9.ptocap");
        assertThat(captured()).containsExactly(file);
        RunCapture c = RunCapture.read(file);
        assertThat(c.failure()).get().extracting(RunCapture.Failure::exceptionClass)
                .isEqualTo(IllegalArgumentException.class.getName());
        assertThat(c.identity()).get().extracting(RunCapture.RunIdentity::runId, RunCapture.RunIdentity::dispatchId)
                .containsExactly(3L, 9L);
        assertThat(c.failure().orElseThrow().message()).isEqualTo(refused.getMessage());
        assertThat(c.tensors().get(0).byteSize()).as("the tensor it was refused for").isEqualTo(64);
    }

    @ParameterizedTest
    @MethodSource("onboard")
    void aLaunchTheDriverRefusesIsCapturedAtTheLaunch(Variant variant) throws Exception {
        open(variant);
        NativeRun run = chip.prepare(Fixtures.CHAIN, Fixtures.chainArgs(8), capturing(), PipelineSlotLease.of(0, 1),
                12, 12, null);
        FAULTS.inject(Fault.LAUNCH, 0);
        Throwable atLaunch = catchThrowable(() -> chip.launch(run));
        assertThat(atLaunch).isInstanceOf(DeviceErrorException.class);
        Path file = dir.resolve("captures").resolve("run-12-12.ptocap");
        assertThat(captured()).as("written when the launch failed").containsExactly(file);
        catchThrowable(() -> chip.finalizeRun(run));
        assertThat(captured()).as("once").containsExactly(file);
        closeChip(); // poisoned; the replay opens device 0 itself
        RunCapture c = RunCapture.read(file);
        assertThat(c.failure()).get().satisfies(f -> {
            assertThat(f.exceptionClass()).isEqualTo(atLaunch.getClass().getName());
            assertThat(f.code()).isEqualTo(((PtoRunException) atLaunch).code());
        });
        // the driver refuses the replay's launch the same way
        FAULTS.inject(Fault.LAUNCH, 0);
        ReplayResult r = RunReplay.replay(c);
        assertThat(r.reproducedFailure()).as(r.verdict()).isTrue();
    }

    @ParameterizedTest
    @MethodSource("someVariants")
    void aCaptureThatCannotBeWrittenIsLoggedAndTheRunFailsAsItWould(Variant variant) throws Exception {
        open(variant);
        Path notADirectory = Files.writeString(dir.resolve("a-file"), "x");
        CallConfig config = CallConfig.builder().captureFailuresTo(notADirectory).build();
        try (LogCapture logs = LogCapture.open()) {
            Throwable failure = catchThrowable(() -> chip.run(Fixtures.FAULT, Fixtures.faultArgs(), config));
            assertThat(failure).isInstanceOf(KernelFaultException.class);
            assertThat(failure.getSuppressed()).isEmpty();
            assertThat(logs.messages(Level.WARN)).filteredOn(m -> m.contains("could not be captured")).hasSize(1);
        }
        assertThat(Files.readString(notADirectory)).isEqualTo("x");
        chip.run(Fixtures.CHAIN, Fixtures.chainArgs(1), config); // the chip runs on
    }
}

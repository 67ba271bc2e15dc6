package org.ptorun.capture;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.ptorun.CallConfig;
import org.ptorun.ChipWorker;
import org.ptorun.HostRuntime;
import org.ptorun.KernelFaultException;
import org.ptorun.RunReport;
import org.ptorun.TaskArgs;
import org.ptorun.Variant;
import org.ptorun.testlog.LogCapture;
import org.ptorun.worker.DrainReport;
import org.ptorun.worker.RunTicket;
import org.ptorun.worker.Worker;

/** Capture and replay on all eight libraries. */
class RunReplayE2ETest {

    @TempDir
    Path dir;

    static List<Variant> allVariants() {
        return Variant.all();
    }

    /** Captures one successful run of the chain on {@code variant}, outputs included. */
    private static RunCapture capturedChain(Variant variant) {
        TaskArgs args = Fixtures.chainArgs(11);
        RunCapture before = RunCapture.of(variant, Fixtures.CHAIN, Fixtures.chain(), args, CallConfig.DEFAULT);
        try (ChipWorker chip = ChipWorker.open(HostRuntime.load(variant), 0)) {
            chip.registerCallable(Fixtures.CHAIN, Fixtures.chain());
            RunReport report = chip.run(Fixtures.CHAIN, args, CallConfig.DEFAULT);
            return before.withOutcome(args, report);
        }
    }

    @ParameterizedTest
    @MethodSource("allVariants")
    void aCapturedRunReadsBackAndReplaysToTheSameOutputs(Variant variant) {
        RunCapture c = capturedChain(variant);
        assertThat(c.hasOutputs()).isTrue();
        assertThat(c.identity()).isPresent();
        RunCapture back = RunCapture.read(c.write(dir.resolve(c.fileName())));
        assertThat(back).isEqualTo(c);

        ReplayResult r = RunReplay.replay(back, variant);
        assertThat(r.matches()).as(r.verdict()).isTrue();
        assertThat(r.outputsCompared()).isTrue();
        assertThat(r.verdict()).isEqualTo("outputs equal to the capture");
    }

    @ParameterizedTest
    @MethodSource("allVariants")
    void aChangedOutputIsReportedAtItsFirstElement(Variant variant) {
        RunCapture c = capturedChain(variant);
        RunCapture.CapturedTensor f = c.tensors().get(2);
        byte[] wrong = f.output().clone();
        wrong[4 * 17] ^= 1;
        List<RunCapture.CapturedTensor> tensors = new java.util.ArrayList<>(c.tensors());
        tensors.set(2, new RunCapture.CapturedTensor(f.direction(), f.dtype(), f.shape(), f.strides(),
                f.startOffset(), f.byteSize(), f.input(), wrong));
        RunCapture tampered = new RunCapture(c.formatVersion(), c.variant(), c.callableId(), c.callable(), c.config(),
                c.scalars(), tensors, c.failure(), c.identity());
        ReplayResult r = RunReplay.replay(tampered, variant);
        assertThat(r.matches()).isFalse();
        assertThat(r.differences()).singleElement().satisfies(d -> {
            assertThat(d.tensor()).isEqualTo(2);
            assertThat(d.element()).isEqualTo(17);
            assertThat(d.differing()).isEqualTo(1);
        });
        assertThat(r.verdict()).startsWith("outputs differ: tensor 2 element 17: expected ");
    }

    @ParameterizedTest
    @MethodSource("allVariants")
    void aFailedRunCapturedByTheWorkerReplaysToTheSameFailure(Variant variant) throws Exception {
        Path captures = dir.resolve("captures");
        RunTicket faulty;
        RunTicket fine;
        try (Worker worker = Worker.builder().variant(variant).captureFailures(captures).build()) {
            worker.register(Fixtures.FAULT, Fixtures.faultyVadd()).get(60, TimeUnit.SECONDS);
            worker.register(Fixtures.CHAIN, Fixtures.chain()).get(60, TimeUnit.SECONDS);
            fine = worker.enqueue(Fixtures.CHAIN, Fixtures.chainArgs(3), CallConfig.DEFAULT);
            faulty = worker.enqueue(Fixtures.FAULT, Fixtures.faultArgs(), CallConfig.DEFAULT);
            DrainReport report = worker.drain();
            assertThat(report.failed()).isEqualTo(1);
        }
        assertThat(fine.result()).isCompleted();
        Throwable failure = org.assertj.core.api.Assertions.catchThrowable(() -> faulty.result().get());
        assertThat(failure).isInstanceOf(ExecutionException.class).cause().isInstanceOf(KernelFaultException.class);
        Path file = captures.resolve("run-" + faulty.runId() + "-" + faulty.dispatchId() + ".ptocap");
        try (Stream<Path> files = Files.list(captures)) {
            assertThat(files.toList()).as("only the failed run is written").containsExactly(file);
        }
        RunCapture c = RunCapture.read(file);
        assertThat(c.variant()).isEqualTo(variant);
        assertThat(c.callableId()).isEqualTo(Fixtures.FAULT);
        assertThat(c.callable()).isEqualTo(Fixtures.faultyVadd().bytes());
        assertThat(c.failure()).get().extracting(RunCapture.Failure::exceptionClass)
                .isEqualTo(KernelFaultException.class.getName());
        assertThat(c.identity()).get().satisfies(id -> {
            assertThat(id.runId()).isEqualTo(faulty.runId());
            assertThat(id.dispatchId()).isEqualTo(faulty.dispatchId());
            assertThat(id.runEpoch()).isNotZero();
        });

        ReplayResult r = RunReplay.replay(c);
        assertThat(r.reproducedFailure()).as(r.verdict()).isTrue();
        assertThat(r.matches()).isTrue();
        assertThat(r.verdict()).startsWith("reproduced: KernelFaultException ");
    }

    @ParameterizedTest
    @MethodSource("allVariants")
    void aConfigThatAsksCapturesItsFailedRunsOnAnyWorker(Variant variant) throws Exception {
        Path captures = dir.resolve("per-config");
        CallConfig capturing = CallConfig.builder().captureFailuresTo(captures).build();
        RunTicket faulty;
        try (Worker worker = Worker.builder().variant(variant).build(); LogCapture logs = LogCapture.open()) {
            worker.register(Fixtures.FAULT, Fixtures.faultyVadd()).get(60, TimeUnit.SECONDS);
            worker.enqueue(Fixtures.FAULT, Fixtures.faultArgs(), CallConfig.DEFAULT); // not asked: not captured
            faulty = worker.enqueue(Fixtures.FAULT, Fixtures.faultArgs(), capturing);
            assertThat(worker.drain().failed()).isEqualTo(2);
            assertThat(logs.messages("org.ptorun.worker.FailureCapture")).singleElement().asString()
                    .contains("captured to");
            assertThat(logs.messages("org.ptorun.ChipFailureCapture"))
                    .as("the Worker captures the run, its chip does not capture it again").isEmpty();
        }
        Path file = captures.resolve("run-" + faulty.runId() + "-" + faulty.dispatchId() + ".ptocap");
        try (Stream<Path> files = Files.list(captures)) {
            assertThat(files.toList()).containsExactly(file);
        }
        RunCapture c = RunCapture.read(file);
        assertThat(c.config()).isEqualTo(capturing);
        assertThat(RunReplay.replay(c).verdict()).startsWith("reproduced: KernelFaultException ");
    }

    @ParameterizedTest
    @MethodSource("allVariants")
    void theOtherRuntimeComputesTheSameOutputs(Variant variant) {
        Variant other = new Variant(variant.arch(), variant.platform(),
                variant.runtime() == Variant.RuntimeKind.HBG ? Variant.RuntimeKind.TRB : Variant.RuntimeKind.HBG);
        RunCapture c = capturedChain(variant);
        ReplayResult r = RunReplay.compare(c, variant, other);
        assertThat(r.matches()).as(r.verdict()).isTrue();
        assertThat(r.verdict()).isEqualTo("outputs equal to " + variant);
        // and against the capture taken on the first
        assertThat(RunReplay.replay(c, other).matches()).isTrue();
    }

    @ParameterizedTest
    @MethodSource("allVariants")
    void simAndOnboardComputeTheSameOutputs(Variant variant) {
        if (variant.platform() != Variant.Platform.SIM) {
            return;
        }
        Variant onboard = new Variant(variant.arch(), Variant.Platform.ONBOARD, variant.runtime());
        ReplayResult r = RunReplay.compare(capturedChain(variant), variant, onboard);
        assertThat(r.matches()).as(r.verdict()).isTrue();
    }
}

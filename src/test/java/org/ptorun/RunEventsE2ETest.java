package org.ptorun;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.ptorun.SimE2E.filled;
import static org.ptorun.SimE2E.random;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The JDK Flight Recorder events of a run's phases: one Prepare, Launch, Completion and
 * Finalize per run, each with the run's identity and its result; a failed run's
 * Completion and Finalize name the error. Nothing is recorded without a recording.
 */
class RunEventsE2ETest {

    private static final String[] NAMES = {"org.ptorun.Prepare", "org.ptorun.Launch", "org.ptorun.Completion",
        "org.ptorun.Finalize"};
    private static final int CHAIN = 1;
    private static final int FAULT = 2;
    private static final int N = 64;

    @Test
    void eachPhaseOfARunIsOneEventCarryingTheRunIdentityAndItsResult(@TempDir Path dir) throws Exception {
        Variant variant = Variant.parse("a2a3/sim/hbg");
        NativeRun ok;
        NativeRun failed;
        Path file = dir.resolve("runs.jfr");
        try (ChipWorker chip = ChipWorker.open(HostRuntime.load(variant), 0);
             Recording recording = new Recording()) {
            chip.registerCallable(CHAIN, ChipWorkerE2ETest.vectorChain(N));
            chip.registerCallable(FAULT, ChipWorkerE2ETest.faultyVadd(N));
            chip.run(CHAIN, ChipWorkerE2ETest.chainArgs(random(N, 1), random(N, 2), filled(N)), CallConfig.DEFAULT);
            for (String name : NAMES) {
                recording.enable(name).withThreshold(Duration.ZERO);
            }
            recording.start();
            PipelineSlotLease lease = PipelineSlotLease.of(0, 1);
            ok = chip.prepare(CHAIN, ChipWorkerE2ETest.chainArgs(random(N, 3), random(N, 4), filled(N)),
                    CallConfig.DEFAULT, lease, 41, 42, null);
            chip.launch(ok);
            chip.await(ok);
            chip.finalizeRun(ok);
            failed = chip.prepare(FAULT, TaskArgs.of(Tensor.of(random(N, 5)), Tensor.of(random(N, 6)),
                    Tensor.of(filled(N))), CallConfig.DEFAULT, lease, 43, 44, null);
            try {
                chip.launch(failed);
            } catch (PtoRunException e) {
                // a short failing run may end before launch returns: launch then reports it
            }
            NativeRun f = failed;
            assertThatThrownBy(() -> chip.finalizeRun(f)).isInstanceOf(KernelFaultException.class);
            recording.stop();
            recording.dump(file);
        }
        List<RecordedEvent> events = RecordingFile.readAllEvents(file);
        Map<Long, List<RecordedEvent>> byRun = events.stream()
                .filter(e -> e.getEventType().getName().startsWith("org.ptorun."))
                .collect(Collectors.groupingBy(e -> e.getLong("runId")));
        assertThat(byRun.keySet()).as("only the two runs inside the recording").containsExactlyInAnyOrder(41L, 43L);
        for (NativeRun run : List.of(ok, failed)) {
            List<RecordedEvent> mine = byRun.get(run.runId());
            assertThat(mine).extracting(e -> e.getEventType().getName()).containsExactlyInAnyOrder(NAMES);
            for (RecordedEvent e : mine) {
                assertThat(e.getString("variant")).isEqualTo("a2a3/sim/hbg");
                assertThat(e.getInt("deviceId")).isZero();
                assertThat(e.getInt("slot")).isZero();
                assertThat(e.getLong("dispatchId")).isEqualTo(run.dispatchId());
                assertThat(e.getLong("runEpoch")).isEqualTo(run.runEpoch()).isPositive();
            }
        }
        RecordedEvent prepare = event(byRun.get(41L), "org.ptorun.Prepare");
        assertThat(prepare.getInt("callableId")).isEqualTo(CHAIN);
        assertThat(prepare.getString("result")).isEqualTo("OK");
        assertThat(prepare.getDuration()).isPositive();
        assertThat(event(byRun.get(41L), "org.ptorun.Completion").getDuration("sinceLaunch")).isPositive();
        assertThat(event(byRun.get(41L), "org.ptorun.Finalize").getString("result")).isEqualTo("OK");
        assertThat(event(byRun.get(43L), "org.ptorun.Completion").getString("result"))
                .isEqualTo("PTO_ERR_KERNEL_FAULT");
        assertThat(event(byRun.get(43L), "org.ptorun.Finalize").getString("result"))
                .isEqualTo("PTO_ERR_KERNEL_FAULT");
        assertThat(Files.size(file)).isPositive();
    }

    private static RecordedEvent event(List<RecordedEvent> events, String name) {
        return events.stream().filter(e -> e.getEventType().getName().equals(name)).findFirst().orElseThrow();
    }
}

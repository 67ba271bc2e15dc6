package org.ptorun;

import static org.assertj.core.api.Assertions.assertThat;
import static org.ptorun.SimE2E.assertBitExact;
import static org.ptorun.SimE2E.filled;
import static org.ptorun.SimE2E.random;

import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Depth-2 pipelining on the onboard hbg libraries: a successor prepared while its
 * predecessor runs, each with its own bank, and the per-run stream sets the
 * platform creates (a2a3: one fresh AICore stream per prepare; a5: none).
 */
class OnboardPipeliningE2ETest {

    static List<Variant> onboardHbg() {
        return Variant.all().stream()
                .filter(v -> v.platform() == Variant.Platform.ONBOARD && v.runtime() == Variant.RuntimeKind.HBG)
                .toList();
    }

    @ParameterizedTest
    @MethodSource("onboardHbg")
    void aSuccessorPreparedWhileItsPredecessorRunsGetsItsOwnBankAndStreamSet(Variant variant) {
        int n = 64;
        try (ChipWorker chip = ChipWorker.open(HostRuntime.load(variant), 0)) {
            chip.registerCallable(1, ChipWorkerE2ETest.vectorChain(n));
            long before = chip.runStreamSetCreateCount();
            float[] a = random(n, 1);
            float[] b = random(n, 2);
            float[] out0 = filled(n);
            float[] out1 = filled(n);
            NativeRun first = chip.prepare(1, ChipWorkerE2ETest.chainArgs(a, b, out0), CallConfig.DEFAULT,
                    PipelineSlotLease.of(0, 1), 1, 1, null);
            chip.launch(first);
            NativeRun second = chip.prepare(1, ChipWorkerE2ETest.chainArgs(a, b, out1), CallConfig.DEFAULT,
                    PipelineSlotLease.of(1, 1), 2, 2, null);
            chip.await(first);
            chip.finalizeRun(first);
            chip.launch(second);
            chip.await(second);
            chip.finalizeRun(second);

            long perPrepare = variant.arch() == Variant.Arch.A2A3 ? 1 : 0;
            assertThat(chip.runStreamSetCreateCount() - before).isEqualTo(2 * perPrepare);
            assertThat(chip.arenaBankGmHeapBase(0)).isNotZero();
            assertThat(chip.arenaBankGmHeapBase(1)).isNotZero().isNotEqualTo(chip.arenaBankGmHeapBase(0));
            assertBitExact(out0, ChipWorkerE2ETest.reference(a, b));
            assertBitExact(out1, ChipWorkerE2ETest.reference(a, b));
            assertThat(chip.isHealthy()).isTrue();
        }
    }
}

package org.ptorun;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.ptorun.worker.RunResult;
import org.ptorun.worker.Worker;

/**
 * Background mode, an enqueue on an idle chip drives its own run (docs/worker.md, Who
 * drives a lane): the run is launched — its acceptance word set — by the time enqueue
 * returns, and a run that outlasts the enqueuer's short look goes on with the chip's
 * dispatcher, which finalizes it once it ends. A gate holds the run on the device, so
 * nothing here depends on timing: the dispatcher is parked before the enqueue (the test
 * waits until it is), and the run cannot end before the test opens its gate.
 */
class EnqueueDrivesE2ETest {

    static List<Variant> variants() {
        return SimE2E.allVariants();
    }

    @ParameterizedTest
    @MethodSource("variants")
    void anIdleChipsRunIsLaunchedByItsEnqueueAndFinishedByTheDispatcher(Variant variant) throws Exception {
        try (RunFiguresE2ETest.Gate gate = new RunFiguresE2ETest.Gate()) {
            Worker w = Worker.builder().variant(variant).background(true).build();
            try {
                w.register(RunFiguresE2ETest.GATED, RunFiguresE2ETest.gated()).get(60, TimeUnit.SECONDS);
                Thread dispatcher = TestThreads.dispatcherOf(0);
                TestThreads.awaitInside(dispatcher, "org.ptorun.worker.AdmissionQueue", "awaitEventOrEnd");

                RunFiguresE2ETest.Gated run = RunFiguresE2ETest.enqueueGated(w, gate, CallConfig.DEFAULT, 3);
                assertThat(run.ticket().isAccepted()).as("launched by the enqueuing thread before enqueue returned")
                        .isTrue();
                assertThat(run.ticket().isDone()).as("held on the device by its gate").isFalse();

                gate.open();
                RunResult r = run.result(); // finalized by the dispatcher: checks the output bit for bit
                assertThat(r.dispatchId()).isEqualTo(run.ticket().dispatchId());
                assertThat(w.drain().succeeded()).isEqualTo(1);
            } finally {
                gate.open();
                w.close();
            }
        }
    }
}

package org.ptorun.worker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.ptorun.CallConfig;
import org.ptorun.ChipCrashedException;
import org.ptorun.ChipIsolation;
import org.ptorun.ChipPoisonedException;
import org.ptorun.ProcessIsolationTestAccess;
import org.ptorun.TaskArgs;
import org.ptorun.Tensor;
import org.ptorun.Variant;

/**
 * A Worker whose chips run in process isolation restarts a chip whose process crashed, as
 * its {@link RestartPolicy} says, on all eight libraries: the crashing run fails
 * precisely, the runs queued behind it run golden on the restarted chip (or, when the
 * crash caught them prepared, fail with the crash), and a chip out of restarts stays down
 * with {@link ChipHealth} saying why.
 */
class WorkerRestartE2ETest {

    private static final int N = 1024;
    private static final int CRASH = 1;
    private static final int VADD = 2;

    static List<Variant> variants() {
        return ProcessIsolationTestAccess.allVariants();
    }

    @ParameterizedTest
    @MethodSource("variants")
    void aCrashedChipIsRestartedAndTakesTheRunsQueuedBehindTheCrash(Variant variant) throws Exception {
        RestartPolicy once = new RestartPolicy(1, Duration.ofMinutes(10), Duration.ZERO);
        try (Worker worker = Worker.builder().variant(variant).isolation(ChipIsolation.PROCESS).background(true)
                .restartPolicy(once).build()) {
            worker.register(CRASH, ProcessIsolationTestAccess.crashing("segfault", N)).get(60, TimeUnit.SECONDS);
            worker.register(VADD, ProcessIsolationTestAccess.vadd(N)).get(60, TimeUnit.SECONDS);
            long firstPid = worker.health().get(0).processId();
            assertThat(firstPid).isPositive();
            golden(worker, 0);

            RunTicket crash = worker.enqueue(CRASH, TaskArgs.of(Tensor.of(new float[N]), Tensor.of(new float[N])),
                    CallConfig.DEFAULT);
            List<float[][]> behind = new ArrayList<>();
            List<RunTicket> tickets = new ArrayList<>();
            for (int i = 0; i < 6; i++) {
                float[][] abc = inputs(10 + i);
                behind.add(abc);
                tickets.add(worker.enqueue(VADD, TaskArgs.of(Tensor.of(abc[0]), Tensor.of(abc[1]),
                        Tensor.of(abc[2])), CallConfig.DEFAULT));
            }
            assertThatThrownBy(() -> crash.result().get(60, TimeUnit.SECONDS))
                    .isInstanceOf(ExecutionException.class)
                    .cause().isInstanceOf(ChipCrashedException.class).hasMessageContaining("signal 11");
            int golden = 0;
            for (int i = 0; i < tickets.size(); i++) {
                try {
                    tickets.get(i).result().get(60, TimeUnit.SECONDS);
                    assertThat(behind.get(i)[2]).isEqualTo(ProcessIsolationTestAccess.sum(behind.get(i)[0],
                            behind.get(i)[1]));
                    golden++;
                } catch (ExecutionException e) {
                    // caught prepared on the crashed chip: fails with the crash, nothing copied back
                    assertThat(e.getCause()).isInstanceOf(ChipCrashedException.class);
                    assertThat(behind.get(i)[2]).containsOnly(-1f);
                }
            }
            assertThat(golden).as("the runs queued behind the crash ran on the restarted chip").isPositive();
            ChipHealth restarted = worker.health().get(0);
            assertThat(restarted.restarts()).isEqualTo(1);
            assertThat(restarted.healthy()).isTrue();
            assertThat(restarted.down()).isEmpty();
            assertThat(restarted.processId()).isPositive().isNotEqualTo(firstPid);
            golden(worker, 20);

            // the policy allows one restart: the next crash keeps the chip down
            RunTicket second = worker.enqueue(CRASH, TaskArgs.of(Tensor.of(new float[N]), Tensor.of(new float[N])),
                    CallConfig.DEFAULT);
            assertThatThrownBy(() -> second.result().get(60, TimeUnit.SECONDS))
                    .cause().isInstanceOf(ChipCrashedException.class);
            RunTicket refused = null;
            try {
                refused = worker.enqueue(VADD, TaskArgs.of(Tensor.of(new float[N]), Tensor.of(new float[N]),
                        Tensor.of(new float[N])), CallConfig.DEFAULT);
            } catch (ChipPoisonedException e) {
                // the chip was down already when this was admitted
            }
            if (refused != null) {
                RunTicket r = refused;
                assertThatThrownBy(() -> r.result().get(60, TimeUnit.SECONDS))
                        .cause().isInstanceOf(ChipPoisonedException.class);
            }
            ChipHealth down = worker.health().get(0);
            assertThat(down.healthy()).isFalse();
            assertThat(down.restarts()).isEqualTo(1);
            assertThat(down.down()).contains("signal 11").contains("not restarted");
        }
        assertThat(ProcessIsolationTestAccess.chipHosts()).as("no chip host is left").isEmpty();
    }

    private static float[][] inputs(long seed) {
        float[] c = new float[N];
        java.util.Arrays.fill(c, -1f);
        return new float[][] {org.ptorun.ProcessIsolationTestAccess.random(N, seed),
            org.ptorun.ProcessIsolationTestAccess.random(N, seed + 1000), c};
    }

    private static void golden(Worker worker, long seed) throws Exception {
        float[][] abc = inputs(seed);
        worker.enqueue(VADD, TaskArgs.of(Tensor.of(abc[0]), Tensor.of(abc[1]), Tensor.of(abc[2])),
                CallConfig.DEFAULT).result().get(60, TimeUnit.SECONDS);
        assertThat(abc[2]).isEqualTo(ProcessIsolationTestAccess.sum(abc[0], abc[1]));
    }
}

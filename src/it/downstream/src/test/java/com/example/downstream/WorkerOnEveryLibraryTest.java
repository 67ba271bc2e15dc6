package com.example.downstream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.ptorun.callable.Direction.IN;
import static org.ptorun.callable.Direction.OUT;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.ptorun.CallConfig;
import org.ptorun.HostRuntime;
import org.ptorun.TaskArgs;
import org.ptorun.Tensor;
import org.ptorun.Variant;
import org.ptorun.callable.ChipCallable;
import org.ptorun.callable.Kernel;
import org.ptorun.callable.Param;
import org.ptorun.callable.Program;
import org.ptorun.worker.DrainReport;
import org.ptorun.worker.RunResult;
import org.ptorun.worker.RunTicket;
import org.ptorun.worker.Worker;

/**
 * What a user's project does with ptorun from Maven Central: a background Worker, one
 * callable ({@code c = (a + b) * 2}), a batch of runs, every element checked. The class
 * path holds the installed ptorun jar, JNA and SLF4J — nothing of ptorun's build tree.
 */
class WorkerOnEveryLibraryTest {

    private static final int CALLABLE = 3;
    private static final int N = 1000;
    private static final int RUNS = 40;

    @ParameterizedTest
    @ValueSource(strings = {"a2a3/sim/hbg", "a2a3/sim/trb", "a2a3/onboard/hbg", "a2a3/onboard/trb",
            "a5/sim/hbg", "a5/sim/trb", "a5/onboard/hbg", "a5/onboard/trb"})
    void workerRunsGoldenBatch(String name) throws Exception {
        Variant variant = Variant.parse(name);
        Path library = HostRuntime.load(variant).libraryFile();
        assertFalse(library.toString().contains("target/classes"),
                "the library must come from the installed jar, not a build tree: " + library);

        try (Worker worker = Worker.builder().variant(variant).devices(0).background(true).queueCapacity(8).build()) {
            worker.register(CALLABLE, addTimesTwo()).get(60, TimeUnit.SECONDS);
            record Request(float[] a, float[] b, float[] c, RunTicket ticket) {
            }
            List<Request> requests = new ArrayList<>();
            for (int r = 0; r < RUNS; r++) {
                float[] a = new float[N];
                float[] b = new float[N];
                float[] c = new float[N];
                for (int i = 0; i < N; i++) {
                    a[i] = r * 0.25f + i;
                    b[i] = 3 - i * 0.5f;
                }
                RunTicket ticket = worker.enqueue(CALLABLE, TaskArgs.of(Tensor.of(a), Tensor.of(b), Tensor.of(c)),
                        CallConfig.DEFAULT);
                requests.add(new Request(a, b, c, ticket));
            }
            DrainReport report = worker.drain();
            assertEquals(0, report.failed(), () -> "failures: " + report.failures());
            for (Request q : requests) {
                RunResult result = q.ticket().result().get(60, TimeUnit.SECONDS);
                assertTrue(q.ticket().isAccepted(), "run " + result + " was never accepted");
                for (int i = 0; i < N; i++) {
                    assertEquals((q.a()[i] + q.b()[i]) * 2f, q.c()[i], name + " element " + i);
                }
            }
        }
    }

    private static ChipCallable addTimesTwo() {
        long bytes = 4L * N;
        return ChipCallable.builder()
                .signature(IN, IN, OUT)
                .child(0, Kernel.vadd())
                .child(1, Kernel.vmuls())
                .program(Program.builder()
                        .allocTensor(0, bytes)
                        .submit(0, Param.tensor(0, IN, 0, bytes), Param.tensor(1, IN, 0, bytes),
                                Param.local(0, OUT, 0, bytes))
                        .submit(1, Param.local(0, IN, 0, bytes), Param.tensor(2, OUT, 0, bytes),
                                Param.scalarF32(2f))
                        .build())
                .build();
    }
}

package org.ptorun.examples;

import static org.ptorun.callable.Direction.IN;
import static org.ptorun.callable.Direction.OUT;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.ptorun.CallConfig;
import org.ptorun.TaskArgs;
import org.ptorun.Tensor;
import org.ptorun.Variant;
import org.ptorun.callable.ChipCallable;
import org.ptorun.callable.Kernel;
import org.ptorun.callable.Param;
import org.ptorun.callable.Program;
import org.ptorun.worker.DrainReport;
import org.ptorun.worker.RunTicket;
import org.ptorun.worker.Worker;

/**
 * A small Worker service: one callable, {@code c = (a + b) * 2}, registered on every chip,
 * a batch of requests enqueued, each result checked against plain Java.
 *
 * <pre>java -cp ptorun.jar:jna.jar:slf4j-api.jar:... org.ptorun.examples.VectorService [variant] [requests]</pre>
 */
public final class VectorService implements AutoCloseable {

    static final int ADD_TIMES_TWO = 1;
    private static final int ADD = 0;
    private static final int TIMES_TWO = 1;

    private final Worker worker;
    private final int n;

    /** A background Worker over device 0 of {@code variant}, for vectors of {@code n} floats. */
    public VectorService(Variant variant, int n) {
        this.n = n;
        this.worker = Worker.builder().variant(variant).devices(0).background(true).queueCapacity(16).build();
        try {
            worker.register(ADD_TIMES_TWO, callable(n)).get(60, TimeUnit.SECONDS);
        } catch (Exception e) {
            worker.close();
            throw new IllegalStateException("cannot register the callable", e);
        }
    }

    /** a IN, b IN, c OUT; s, a local of n floats, holds a + b. */
    static ChipCallable callable(int n) {
        long bytes = 4L * n;
        return ChipCallable.builder()
                .signature(IN, IN, OUT)
                .child(ADD, Kernel.vadd())
                .child(TIMES_TWO, Kernel.vmuls())
                .program(Program.builder()
                        .allocTensor(0, bytes)
                        .submit(ADD, Param.tensor(0, IN, 0, bytes), Param.tensor(1, IN, 0, bytes),
                                Param.local(0, OUT, 0, bytes))
                        .submit(TIMES_TWO, Param.local(0, IN, 0, bytes), Param.tensor(2, OUT, 0, bytes),
                                Param.scalarF32(2f))
                        .build())
                .build();
    }

    /** Enqueues {@code requests} runs, waits for all, returns how many results were exact. */
    public int serve(int requests) throws InterruptedException {
        record Request(float[] a, float[] b, float[] c, RunTicket ticket) {
        }
        List<Request> inFlight = new ArrayList<>();
        for (int r = 0; r < requests; r++) {
            float[] a = new float[n];
            float[] b = new float[n];
            for (int i = 0; i < n; i++) {
                a[i] = r + i;
                b[i] = 0.5f * i;
            }
            float[] c = new float[n];
            TaskArgs args = TaskArgs.of(Tensor.of(a), Tensor.of(b), Tensor.of(c));
            inFlight.add(new Request(a, b, c, worker.enqueue(ADD_TIMES_TWO, args, CallConfig.DEFAULT)));
        }
        DrainReport report = worker.drain();
        if (report.failed() > 0) {
            throw new IllegalStateException(report.failed() + " run(s) failed: " + report.failures());
        }
        int exact = 0;
        for (Request q : inFlight) {
            boolean ok = q.ticket().result().isDone();
            for (int i = 0; i < n && ok; i++) {
                ok = q.c()[i] == (q.a()[i] + q.b()[i]) * 2f;
            }
            exact += ok ? 1 : 0;
        }
        return exact;
    }

    @Override
    public void close() {
        worker.close();
    }

    public static void main(String[] argv) throws InterruptedException {
        Variant variant = argv.length > 0 ? Variant.parse(argv[0]) : Variant.DEFAULT;
        int requests = argv.length > 1 ? Integer.parseInt(argv[1]) : 100;
        try (VectorService service = new VectorService(variant, 1024)) {
            int exact = service.serve(requests);
            System.out.println(variant + ": " + exact + " of " + requests + " results exact");
            if (exact != requests) {
                System.exit(1);
            }
        }
    }
}

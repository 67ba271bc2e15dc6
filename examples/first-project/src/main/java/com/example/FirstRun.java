package com.example;

import static org.ptorun.callable.Direction.IN;
import static org.ptorun.callable.Direction.OUT;

import java.util.ArrayList;
import java.util.List;
import org.ptorun.CallConfig;
import org.ptorun.ChipWorker;
import org.ptorun.HostRuntime;
import org.ptorun.TaskArgs;
import org.ptorun.Tensor;
import org.ptorun.Variant;
import org.ptorun.callable.ChipCallable;
import org.ptorun.callable.Kernel;
import org.ptorun.callable.Param;
import org.ptorun.callable.Program;
import org.ptorun.worker.RunTicket;
import org.ptorun.worker.Worker;

/**
 * A first ptorun program (docs/getting-started.md): one chip runs {@code y = x + 1}, then a
 * Worker service runs {@code c = a + b} for a batch of requests; every result is checked
 * against plain Java. Arguments: variants to run on (default: the default variant).
 */
public final class FirstRun {

    private FirstRun() {
    }

    public static void main(String[] args) throws Exception {
        List<Variant> variants = new ArrayList<>();
        for (String a : args) {
            variants.add(Variant.parse(a));
        }
        if (variants.isEmpty()) {
            variants.add(Variant.DEFAULT);
        }
        for (Variant v : variants) {
            runOn(v);
            System.out.println(v + ": ok, every result equal to plain Java");
        }
    }

    /** Sections 2 and 3 on {@code variant}; throws on a wrong result. */
    public static void runOn(Variant variant) throws Exception {
        oneChip(variant);
        service(variant);
    }

    /** Section 2 of getting-started: one chip, one callable. */
    static void oneChip(Variant variant) {
        int n = 1024;
        long bytes = 4L * n;
        float[] x = new float[n];
        float[] y = new float[n];
        for (int i = 0; i < n; i++) {
            x[i] = i;
        }

        ChipCallable plusOne = ChipCallable.builder()
                .signature(IN, OUT)
                .child(0, Kernel.vadds())
                .program(Program.builder()
                        .submit(0, Param.tensor(0, IN, 0, bytes), Param.tensor(1, OUT, 0, bytes), Param.scalarF32(1f))
                        .build())
                .build();

        try (ChipWorker chip = ChipWorker.open(HostRuntime.load(variant), 0)) {
            chip.registerCallable(0, plusOne);
            chip.run(0, TaskArgs.of(Tensor.of(x), Tensor.of(y)), CallConfig.DEFAULT);   // y = x + 1
        }

        for (int i = 0; i < n; i++) {
            check(y[i] == x[i] + 1f, variant + ": y[" + i + "] = " + y[i] + ", expected " + (x[i] + 1f));
        }
    }

    /** Section 3 of getting-started: a Worker service. */
    static void service(Variant v) throws Exception {
        int n = 256;
        long bytes = 4L * n;
        ChipCallable callable = ChipCallable.builder()
                .signature(IN, IN, OUT)
                .child(0, Kernel.vadd())
                .program(Program.builder()
                        .submit(0, Param.tensor(0, IN, 0, bytes), Param.tensor(1, IN, 0, bytes),
                                Param.tensor(2, OUT, 0, bytes))
                        .build())
                .build();
        float[] a = new float[n];
        float[] b = new float[n];
        float[] c = new float[n];
        for (int i = 0; i < n; i++) {
            a[i] = i;
            b[i] = 2 * i;
        }

        try (Worker worker = Worker.builder().variant(v).devices(0).background(true).build()) {
            worker.register(1, callable).get();
            RunTicket t = worker.enqueue(1, TaskArgs.of(Tensor.of(a), Tensor.of(b), Tensor.of(c)), CallConfig.DEFAULT);
            t.result().get();         // or thenApply(...) — it never runs on a thread that drives a chip
            worker.drain();           // every run enqueued so far is finalized
        }

        for (int i = 0; i < n; i++) {
            check(c[i] == a[i] + b[i], v + ": c[" + i + "] = " + c[i] + ", expected " + (a[i] + b[i]));
        }
    }

    private static void check(boolean ok, String failure) {
        if (!ok) {
            throw new IllegalStateException(failure);
        }
    }
}

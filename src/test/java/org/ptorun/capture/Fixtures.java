package org.ptorun.capture;

import static org.ptorun.callable.Direction.IN;
import static org.ptorun.callable.Direction.OUT;

import java.util.SplittableRandom;
import org.ptorun.TaskArgs;
import org.ptorun.Tensor;
import org.ptorun.callable.ChipCallable;
import org.ptorun.callable.Kernel;
import org.ptorun.callable.Param;
import org.ptorun.callable.Program;
import org.ptorun.cli.Demo;

/** Callables and data of the capture tests. */
final class Fixtures {

    static final int N = 256;
    static final int CHAIN = 3;
    static final int FAULT = 5;

    private Fixtures() {
    }

    /** The demo's five-task chain: a, b in; f and four intermediates out. */
    static ChipCallable chain() {
        return Demo.vectorChain(N);
    }

    /** vadd whose first view is 32 bytes while the kernel reads N floats: a kernel fault. */
    static ChipCallable faultyVadd() {
        return ChipCallable.builder()
                .signature(IN, IN, OUT)
                .child(7, Kernel.vadd())
                .program(Program.builder()
                        .submit(7, Param.tensor(0, IN, 0, 32), Param.tensor(1, IN, 0, 4L * N),
                                Param.tensor(2, OUT, 0, 4L * N))
                        .build())
                .build();
    }

    static float[] random(int n, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        float[] x = new float[n];
        for (int i = 0; i < n; i++) {
            x[i] = (float) (r.nextDouble() * 4 - 2);
        }
        return x;
    }

    static float[] filled(int n) {
        float[] x = new float[n];
        java.util.Arrays.fill(x, -12345.5f);
        return x;
    }

    /** Arguments of the chain: a, b, f and four intermediates (the intermediates' initial bytes are captured too). */
    static TaskArgs chainArgs(long seed) {
        return TaskArgs.of(Tensor.of(random(N, seed)), Tensor.of(random(N, seed + 1)), Tensor.of(filled(N)),
                Tensor.of(filled(N)), Tensor.of(filled(N)), Tensor.of(filled(N)), Tensor.of(filled(N)));
    }

    static TaskArgs faultArgs() {
        return TaskArgs.of(Tensor.of(random(N, 1)), Tensor.of(random(N, 2)), Tensor.of(filled(N)));
    }
}

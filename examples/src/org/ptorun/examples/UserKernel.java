package org.ptorun.examples;

import static org.ptorun.callable.Direction.IN;
import static org.ptorun.callable.Direction.INOUT;
import static org.ptorun.callable.Direction.SCALAR;

import java.nio.file.Path;
import org.ptorun.CallConfig;
import org.ptorun.ChipWorker;
import org.ptorun.HostRuntime;
import org.ptorun.TaskArgs;
import org.ptorun.Tensor;
import org.ptorun.Variant;
import org.ptorun.callable.ChipCallable;
import org.ptorun.callable.CoreType;
import org.ptorun.callable.Kernel;
import org.ptorun.callable.Param;
import org.ptorun.callable.Program;

/**
 * A kernel of your own: {@code examples/kernel/scale_add.c}, built into a shared library
 * (docs/getting-started.md), runs as a task: {@code y = a * x + y}.
 *
 * <pre>java ... org.ptorun.examples.UserKernel path/to/libscale_add.so [variant]</pre>
 */
public final class UserKernel {

    private UserKernel() {
    }

    /** Runs scale_add once over {@code x} and {@code y} (y is updated in place). */
    public static void scaleAdd(Variant variant, Path library, float a, float[] x, float[] y) {
        long bytes = 4L * y.length;
        ChipCallable callable = ChipCallable.builder()
                .signature(IN, INOUT, SCALAR)
                .child(0, CoreType.AIV, Kernel.fromLibrary(library, "scale_add"))
                .program(Program.builder()
                        .submit(0, Param.tensor(0, IN, 0, bytes), Param.tensor(1, INOUT, 0, bytes),
                                Param.scalarArg(0))
                        .build())
                .build();
        try (ChipWorker chip = ChipWorker.open(HostRuntime.load(variant), 0)) {
            chip.registerCallable(0, callable);
            chip.run(0, TaskArgs.of(Tensor.of(x), Tensor.of(y)).scalar(Float.floatToRawIntBits(a)), CallConfig.DEFAULT);
        }
    }

    public static void main(String[] argv) {
        Path library = Path.of(argv.length > 0 ? argv[0] : "libscale_add.so").toAbsolutePath();
        Variant variant = argv.length > 1 ? Variant.parse(argv[1]) : Variant.DEFAULT;
        float[] x = {1, 2, 3, 4};
        float[] y = {10, 20, 30, 40};
        scaleAdd(variant, library, 3f, x, y);
        System.out.println(variant + ": y = 3x + y = " + java.util.Arrays.toString(y));
        if (y[3] != 52f) {
            System.exit(1);
        }
    }
}

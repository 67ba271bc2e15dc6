import static org.ptorun.callable.Direction.IN;
import static org.ptorun.callable.Direction.OUT;

import java.nio.file.Files;
import java.nio.file.Path;
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
import org.ptorun.worker.RunTicket;
import org.ptorun.worker.Worker;

/**
 * Writes a real Worker timeline to draw (docs/operations.md, "Timeline"): a background
 * Worker on one chip runs {@code f = x + STEPS} as a chain of {@code STEPS} dependent
 * {@code vadds} tasks over two device-local tensors (so a run executes far longer than its
 * launch copies), {@code runs} times; the last two are traced with
 * {@code CallConfig.enableTrace} so their device tasks show. Every result is checked against
 * plain Java; closing the Worker writes the timeline. A single-file program, run against
 * the executable jar (it holds ptorun's dependencies):
 *
 * <pre>java -cp target/ptorun-*-cli.jar src/build/java/TimelineSample.java OUT.json [variant] [runs]</pre>
 *
 * (default {@code a2a3/sim/hbg}, 6 runs). Draw the file with {@code RenderTimeline.java}.
 */
public final class TimelineSample {

    private static final int CHAIN = 1;
    private static final int N = 1 << 18;
    private static final int STEPS = 40;

    private TimelineSample() {
    }

    /** x IN, f OUT; locals 0 and 1 take turns: l0 = x + 1, l1 = l0 + 1, ..., f = l + 1. */
    static ChipCallable chain() {
        long bytes = 4L * N;
        Program.Builder p = Program.builder().allocTensor(0, bytes).allocTensor(1, bytes);
        p.submit(0, Param.tensor(0, IN, 0, bytes), Param.local(0, OUT, 0, bytes), Param.scalarF32(1f));
        for (int s = 1; s < STEPS - 1; s++) {
            p.submit(0, Param.local((s - 1) % 2, IN, 0, bytes), Param.local(s % 2, OUT, 0, bytes), Param.scalarF32(1f));
        }
        p.submit(0, Param.local((STEPS - 2) % 2, IN, 0, bytes), Param.tensor(1, OUT, 0, bytes), Param.scalarF32(1f));
        return ChipCallable.builder().signature(IN, OUT).child(0, Kernel.vadds()).program(p.build()).build();
    }

    public static void main(String[] argv) throws Exception {
        if (argv.length < 1) {
            System.err.println("usage: TimelineSample OUT.json [variant] [runs]");
            System.exit(2);
        }
        Path out = Path.of(argv[0]).toAbsolutePath();
        Variant variant = Variant.parse(argv.length > 1 ? argv[1] : "a2a3/sim/hbg");
        int runs = argv.length > 2 ? Integer.parseInt(argv[2]) : 6;
        Path traces = Files.createTempDirectory("timeline-sample");
        CallConfig traced = CallConfig.builder().enableTrace(true).outputPrefix(traces).build();
        List<float[]> xs = new ArrayList<>();
        List<float[]> fs = new ArrayList<>();
        for (int r = 0; r < runs; r++) { // every input made first: the runs then follow each other closely
            float[] x = new float[N];
            for (int i = 0; i < N; i++) {
                x[i] = (i % 1000) * 0.25f + r;
            }
            xs.add(x);
            fs.add(new float[N]);
        }
        List<RunTicket> tickets = new ArrayList<>();
        Worker worker = Worker.builder().variant(variant).background(true).trace(out).build();
        try {
            worker.register(CHAIN, chain()).get(60, TimeUnit.SECONDS);
            for (int r = 0; r < runs; r++) {
                tickets.add(worker.enqueue(CHAIN, TaskArgs.of(Tensor.of(xs.get(r)), Tensor.of(fs.get(r))),
                        r >= runs - 2 ? traced : CallConfig.DEFAULT));
            }
            for (int r = 0; r < runs; r++) {
                tickets.get(r).result().get(60, TimeUnit.SECONDS);
                for (int i = 0; i < N; i++) {
                    if (fs.get(r)[i] != xs.get(r)[i] + STEPS) {
                        throw new IllegalStateException("run " + tickets.get(r).runId() + ": f[" + i + "] = "
                                + fs.get(r)[i] + ", plain Java " + (xs.get(r)[i] + STEPS));
                    }
                }
            }
        } finally {
            worker.close(); // writes the timeline (it reads the traced runs' own files)
        }
        System.out.println("wrote " + out + ": " + runs + " runs on " + variant + ", every result equal to plain Java");
    }
}

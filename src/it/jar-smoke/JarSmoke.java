import static org.ptorun.callable.Direction.IN;
import static org.ptorun.callable.Direction.OUT;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.ptorun.CallConfig;
import org.ptorun.ChipIsolation;
import org.ptorun.ChipWorker;
import org.ptorun.CommGroup;
import org.ptorun.DType;
import org.ptorun.HostRuntime;
import org.ptorun.TaskArgs;
import org.ptorun.Tensor;
import org.ptorun.Variant;
import org.ptorun.callable.ChipCallable;
import org.ptorun.callable.CoreType;
import org.ptorun.callable.Direction;
import org.ptorun.callable.Kernel;
import org.ptorun.callable.Param;
import org.ptorun.callable.Program;
import org.ptorun.testing.EmulatedFaults;
import org.ptorun.worker.RunTicket;
import org.ptorun.worker.Worker;

/**
 * A downstream program run against the packaged jar (JarIT, docs/java.md, Loading):
 * class path = the jar + JNA + SLF4J only (no Micrometer: the Worker runs without it),
 * launched as a single source file. Arguments:
 * the variants to run ("all" = the eight; "open:<variant>" only opens a chip), or
 * "hosts &lt;first&gt; &lt;local&gt; &lt;size&gt; &lt;root info&gt;..." (one host of a group across hosts, one root
 * info per variant of the eight: see {@link #acrossHosts}). Per variant: a golden vector add and vector
 * chain on a ChipWorker and a chain through a Worker; on onboard variants the driver the
 * fault injection binds. Prints "OK <variant> ..." per variant, or "FAIL <class>: <message>"
 * and exits 3 on the first failure.
 */
public final class JarSmoke {

    private static final int N = 4096;
    private static final int ADD = 1;
    private static final int CHAIN = 2;

    public static void main(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("hosts")) {
            acrossHosts(args);
            return;
        }
        List<String> names = args.length == 0 || args[0].equals("all") ? List.of(
                "a2a3/sim/hbg", "a2a3/sim/trb", "a2a3/onboard/hbg", "a2a3/onboard/trb",
                "a5/sim/hbg", "a5/sim/trb", "a5/onboard/hbg", "a5/onboard/trb") : List.of(args);
        try {
            // the Worker below must run with no Micrometer: only org.ptorun.metrics needs it (optional)
            try {
                Class.forName("io.micrometer.core.instrument.MeterRegistry");
                throw new IllegalStateException("Micrometer is on the class path of the packaged-jar check");
            } catch (ClassNotFoundException expected) {
                // as it should be
            }
            for (String name : names) {
                if (name.startsWith("open:")) {
                    /* only open a chip: the driver is loaded there */
                    Variant variant = Variant.parse(name.substring(5));
                    try (ChipWorker chip = ChipWorker.open(HostRuntime.load(variant), 0)) {
                        System.out.println("OPENED " + variant);
                    }
                    continue;
                }
                Variant variant = Variant.parse(name);
                HostRuntime runtime = HostRuntime.load(variant);
                String driver = "";
                if (variant.platform() == Variant.Platform.ONBOARD) {
                    driver = " driver " + EmulatedFaults.of(runtime).driverFile();
                }
                ChipIsolation isolation;
                try (ChipWorker chip = ChipWorker.open(runtime, 0)) {
                    isolation = chip.isolation();
                    chip.registerCallable(ADD, vectorAdd());
                    chip.registerCallable(CHAIN, vectorChain());
                    float[] a = ramp(1), b = ramp(5), c = new float[N];
                    chip.run(ADD, TaskArgs.of(Tensor.of(a), Tensor.of(b), Tensor.of(c)), CallConfig.DEFAULT);
                    for (int i = 0; i < N; i++) {
                        check(c[i] == a[i] + b[i], name + " vadd element " + i);
                    }
                    float[] f = new float[N];
                    chip.run(CHAIN, chainArgs(a, b, f), CallConfig.DEFAULT);
                    checkChain(a, b, f, name + " chain");
                }
                try (Worker worker = Worker.builder().runtime(runtime).devices(0).build()) {
                    worker.register(CHAIN, vectorChain()).get(60, TimeUnit.SECONDS);
                    float[] a = ramp(2), b = ramp(9), f = new float[N];
                    RunTicket ticket = worker.enqueue(CHAIN, chainArgs(a, b, f), CallConfig.DEFAULT);
                    worker.drain();
                    ticket.result().get(60, TimeUnit.SECONDS);
                    checkChain(a, b, f, name + " worker chain");
                }
                System.out.println("OK " + variant + " from " + runtime.libraryFile() + driver + " in " + isolation);
            }
        } catch (RuntimeException e) {
            System.out.println("FAIL " + e.getClass().getName() + ": " + e.getMessage());
            e.printStackTrace();
            System.exit(3);
        } catch (Error e) {
            System.out.println("FAIL " + e.getClass().getName() + ": " + e.getMessage());
            e.printStackTrace();
            System.exit(4);
        }
    }

    private static final List<String> EIGHT = List.of("a2a3/sim/hbg", "a2a3/sim/trb", "a2a3/onboard/hbg",
            "a2a3/onboard/trb", "a5/sim/hbg", "a5/sim/trb", "a5/onboard/hbg", "a5/onboard/trb");

    /**
     * One host of a group across hosts per variant: ranks first .. first+local-1 of size
     * (host h holds ranks h·local ..), joined through that variant's root info; every rank
     * allreduces its window and checks the sum in the cross-host order (each host's ranks
     * in rank order, then the hosts in order). Prints "HOSTS OK <variant> ranks a..b".
     */
    private static void acrossHosts(String[] args) {
        int first = Integer.parseInt(args[1]), local = Integer.parseInt(args[2]), size = Integer.parseInt(args[3]);
        try {
            for (int v = 0; v < EIGHT.size(); v++) {
                Variant variant = Variant.parse(EIGHT.get(v));
                HostRuntime runtime = HostRuntime.load(variant);
                List<ChipWorker> chips = new ArrayList<>();
                for (int i = 0; i < local; i++) {
                    chips.add(ChipWorker.open(runtime, i));
                }
                try (CommGroup group = CommGroup.join(chips, first, size, args[4 + v], Duration.ofSeconds(60))) {
                    group.allocWindows(4L * N);
                    List<float[]> results = group.onEveryRank(rank -> {
                        rank.chip().registerCallable(ADD, allreduce());
                        rank.chip().copyTo(rank.window(), ramp(rank.rank() + 1));
                        rank.chip().run(ADD, new TaskArgs().tensor(Tensor.of(rank.window(), DType.F32))
                                .scalar(rank.deviceContext()), CallConfig.DEFAULT);
                        float[] out = new float[N];
                        rank.chip().copyFrom(rank.window(), out);
                        return out;
                    });
                    float[] want = hostOrderSum(size, local);
                    for (float[] got : results) {
                        for (int i = 0; i < N; i++) {
                            check(Float.floatToRawIntBits(got[i]) == Float.floatToRawIntBits(want[i]),
                                    variant + " allreduce across hosts element " + i);
                        }
                    }
                    group.barrier(); // nobody leaves while a peer still reads its window
                } finally {
                    chips.forEach(ChipWorker::close);
                }
                System.out.println("HOSTS OK " + variant + " ranks " + first + ".." + (first + local - 1));
            }
        } catch (RuntimeException | Error e) {
            System.out.println("FAIL " + e.getClass().getName() + ": " + e.getMessage());
            e.printStackTrace();
            System.exit(3);
        }
    }

    /** ((x_0 + x_1) + ...) per host, then the hosts' sums in host order. */
    private static float[] hostOrderSum(int size, int local) {
        float[] total = null;
        for (int h = 0; h < size / local; h++) {
            float[] part = ramp(h * local + 1);
            for (int r = h * local + 1; r < (h + 1) * local; r++) {
                float[] x = ramp(r + 1);
                for (int i = 0; i < N; i++) {
                    part[i] = part[i] + x[i];
                }
            }
            if (total == null) {
                total = part;
            } else {
                for (int i = 0; i < N; i++) {
                    total[i] = total[i] + part[i];
                }
            }
        }
        return total;
    }

    private static ChipCallable allreduce() {
        return ChipCallable.builder()
                .signature(Direction.INOUT, Direction.SCALAR)
                .child(0, CoreType.AIV, Kernel.builtin("allreduce_sum"))
                .program(Program.builder().submit(0, Param.tensor(0, Direction.INOUT, 0, 4L * N), Param.scalarArg(0))
                        .build())
                .build();
    }

    private static ChipCallable vectorAdd() {
        long bytes = 4L * N;
        return ChipCallable.builder()
                .signature(IN, IN, OUT)
                .child(0, Kernel.vadd())
                .program(Program.builder()
                        .submit(0, Param.tensor(0, IN, 0, bytes), Param.tensor(1, IN, 0, bytes),
                                Param.tensor(2, OUT, 0, bytes))
                        .build())
                .build();
    }

    /** f = (a+b+1)*(a+b+2)+(a+b) as five dependent tasks. */
    private static ChipCallable vectorChain() {
        long bytes = 4L * N;
        return ChipCallable.builder()
                .signature(IN, IN, OUT, OUT, OUT, OUT, OUT)
                .child(0, Kernel.vadd())
                .child(1, Kernel.vadds())
                .child(2, Kernel.vmul())
                .program(Program.builder()
                        .submit(0, Param.tensor(0, IN, 0, bytes), Param.tensor(1, IN, 0, bytes),
                                Param.tensor(3, OUT, 0, bytes))
                        .submit(1, Param.tensor(3, IN, 0, bytes), Param.tensor(4, OUT, 0, bytes),
                                Param.scalarF32(1f))
                        .submit(1, Param.tensor(3, IN, 0, bytes), Param.tensor(5, OUT, 0, bytes),
                                Param.scalarF32(2f))
                        .submit(2, Param.tensor(4, IN, 0, bytes), Param.tensor(5, IN, 0, bytes),
                                Param.tensor(6, OUT, 0, bytes))
                        .submit(0, Param.tensor(6, IN, 0, bytes), Param.tensor(3, IN, 0, bytes),
                                Param.tensor(2, OUT, 0, bytes))
                        .build())
                .build();
    }

    private static TaskArgs chainArgs(float[] a, float[] b, float[] f) {
        return TaskArgs.of(Tensor.of(a), Tensor.of(b), Tensor.of(f), Tensor.of(new float[N]),
                Tensor.of(new float[N]), Tensor.of(new float[N]), Tensor.of(new float[N]));
    }

    private static void checkChain(float[] a, float[] b, float[] f, String what) {
        for (int i = 0; i < N; i++) {
            float s = a[i] + b[i];
            check(Float.floatToRawIntBits(f[i]) == Float.floatToRawIntBits((s + 1f) * (s + 2f) + s),
                    what + " element " + i);
        }
    }

    private static float[] ramp(int seed) {
        float[] x = new float[N];
        for (int i = 0; i < N; i++) {
            x[i] = (i % 1000) * 0.25f + seed;
        }
        return x;
    }

    private static void check(boolean ok, String what) {
        if (!ok) {
            throw new IllegalStateException(what + " differs from the Java reference");
        }
    }
}

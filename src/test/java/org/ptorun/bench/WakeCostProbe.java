package org.ptorun.bench;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Locale;
import java.util.concurrent.locks.LockSupport;
import org.ptorun.ChipWorker;
import org.ptorun.HostRuntime;
import org.ptorun.Variant;

/**
 * Why P1's interleaved p50 swings between runs of the suite (docs/performance.md, P1):
 * the same trivial ChipWorker cycle and the same condition-variable round trip, measured
 * back to back and after a 200 µs pause (every thread parked, the vCPUs idle), each
 * without and with a thread of this JVM burning a vCPU (so it never goes idle), with the
 * voluntary context switches of all threads per cycle. A {@code main}: {@code
 * WakeCostProbe <variant> <cycles>}.
 */
public final class WakeCostProbe {

    private WakeCostProbe() {
    }

    private static long switches() throws Exception {
        long t = 0;
        try (var s = Files.list(Path.of("/proc/self/task"))) {
            for (Path p : (Iterable<Path>) s::iterator) {
                for (String l : Files.readAllLines(p.resolve("status")))
                    if (l.startsWith("voluntary_ctxt_switches:")) t += Long.parseLong(l.split("\\s+")[1]);
            }
        }
        return t;
    }
    private static volatile boolean burn;
    public static void main(String[] a) throws Exception {
        HostRuntime rt = HostRuntime.load(Variant.parse(a[0]));
        int n = Integer.parseInt(a[1]);
        TrivialRun run = new TrivialRun(ChipWorker.open(rt, 0));
        long pp = NativeBench.pto_bench_pingpong_open();
        Thread burner = new Thread(() -> {
            while (true) {
                if (!burn) {
                    LockSupport.parkNanos(1_000_000); // parked between the burning modes
                }
            }
        });
        burner.setDaemon(true);
        burner.start();
        for (int i = 0; i < 2000; i++) run.cycle();
        for (String mode : new String[] {"back-to-back", "after-200us-pause", "back-to-back+burner", "after-200us-pause+burner"}) {
            burn = mode.contains("burner");
            boolean pause = mode.contains("pause");
            LockSupport.parkNanos(20_000_000);
            long[] t = new long[n], f = new long[n];
            long s0 = switches();
            for (int i = 0; i < n; i++) {
                if (pause) { LockSupport.parkNanos(200_000); }
                long t0 = System.nanoTime();
                run.cycle();
                t[i] = System.nanoTime() - t0;
            }
            long sw = switches() - s0;
            // the pause itself parks the main thread once per cycle
            double perCycle = (sw - (pause ? n : 0)) / (double) n;
            for (int i = 0; i < n; i++) {
                if (pause) { LockSupport.parkNanos(200_000); }
                long t0 = System.nanoTime();
                NativeBench.pto_bench_pingpong_round(pp);
                f[i] = System.nanoTime() - t0;
            }
            Arrays.sort(t); Arrays.sort(f);
            System.out.printf(Locale.ROOT, "%s %-26s cycle p50 %6.1f us p90 %6.1f | switches/cycle %.2f | floor p50 %6.1f us%n",
                a[0], mode, t[n / 2] / 1e3, t[n * 9 / 10] / 1e3, perCycle, f[n / 2] / 1e3);
        }
        NativeBench.pto_bench_pingpong_close(pp);
        run.chip().close();
    }
}

package org.ptorun.bench;

import java.lang.management.ManagementFactory;
import java.util.Arrays;
import java.util.Locale;
import org.ptorun.CallConfig;
import org.ptorun.ChipWorker;
import org.ptorun.HostRuntime;
import org.ptorun.NativeRun;
import org.ptorun.PipelineSlotLease;
import org.ptorun.TaskArgs;
import org.ptorun.Variant;

/**
 * P1's analysis (docs/performance.md): a ChipWorker trivial cycle timed call by call
 * (prepare, launch, poll/await, finalize; p50 each), alternating with the C-driven cycle
 * on the same library, and the bytes the calling thread allocates per pair. A {@code
 * main}: {@code CycleBreakdown <variant> <cycles>}.
 */
public final class CycleBreakdown {

    private CycleBreakdown() {
    }

    public static void main(String[] a) {
        HostRuntime rt = HostRuntime.load(Variant.parse(a[0]));
        int n = Integer.parseInt(a[1]);
        ChipWorker chip = ChipWorker.open(rt, 0);
        chip.registerCallable(0, TrivialRun.CALLABLE);
        long cd = TrivialRun.openCDriver(rt);
        TaskArgs args = new TaskArgs();
        PipelineSlotLease lease = PipelineSlotLease.of(0, 1);
        long[] p = new long[n], l = new long[n], w = new long[n], f = new long[n], c = new long[n], tot = new long[n];
        com.sun.management.ThreadMXBean mx = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        long id = 0; int polls = 0;
        for (int pass = 0; pass < 2; pass++) {
            long alloc0 = mx.getThreadAllocatedBytes(Thread.currentThread().getId());
            polls = 0;
            for (int i = 0; i < n; i++) {
                id++;
                long t0 = System.nanoTime();
                NativeRun run = chip.prepare(0, args, CallConfig.DEFAULT, lease, id, id, null);
                long t1 = System.nanoTime();
                chip.launch(run);
                long t2 = System.nanoTime();
                if (chip.poll(run)) {
                    polls++;
                } else {
                    chip.await(run);
                }
                long t3 = System.nanoTime();
                chip.finalizeRun(run);
                long t4 = System.nanoTime();
                TrivialRun.cDriverCycle(cd);
                long t5 = System.nanoTime();
                p[i] = t1 - t0; l[i] = t2 - t1; w[i] = t3 - t2; f[i] = t4 - t3; tot[i] = t4 - t0; c[i] = t5 - t4;
            }
            long alloc = mx.getThreadAllocatedBytes(Thread.currentThread().getId()) - alloc0;
            if (pass == 1) {
                System.out.printf(Locale.ROOT, "%s n=%d  java cycle p50 %.2f us = prepare %.2f + launch %.2f + poll/await %.2f + finalize %.2f | C cycle p50 %.2f us | alloc %.1f B/cycle (incl. the C call) | poll saw end %d%%%n",
                    a[0], n, med(tot), med(p), med(l), med(w), med(f), med(c), alloc / (double) n, 100 * polls / n);
            }
        }
        NativeBench.pto_bench_cycle_close(cd);
        chip.close();
    }
    private static double med(long[] x) { long[] s = x.clone(); Arrays.sort(s); return s[s.length / 2] / 1e3; }
}

package org.ptorun.bench;

import java.util.Arrays;
import java.util.Locale;
import java.util.concurrent.locks.LockSupport;
import org.ptorun.ChipInternals;
import org.ptorun.ChipWorker;
import org.ptorun.HostRuntime;
import org.ptorun.Variant;
import org.ptorun.internal.Layouts;
import org.ptorun.internal.NativeApi;
import org.ptorun.internal.OffHeapBlock;

/**
 * What bounds P1 (docs/performance.md): the trivial cycle three ways in one process,
 * measured as {@code TrivialRunBench.interleaved} measures (each operation makes one
 * of each in an order that rotates, then every thread parks for 200 µs and one floor
 * round trip runs):
 * <ul>
 *   <li>through {@link ChipWorker} (its own device context);</li>
 *   <li>"raw JNA": the same five native calls (prepare, launch, poll, wait if needed,
 *       finalize) made straight through the library's JNA binding on a second
 *       ChipWorker's device context and slot 0 storage — no ChipWorker bookkeeping, only
 *       the JNA crossings;</li>
 *   <li>driven from C (the benchmark's C driver, a device context of its own).</li>
 * </ul>
 * Raw JNA / C is the floor a Java cycle with this contract's calls can reach; ChipWorker /
 * raw JNA is what ChipWorker's own work adds. A {@code main}:
 * {@code JnaFloorProbe <variant> <operations>}.
 */
public final class JnaFloorProbe {

    private static final long RAW_EPOCH_BASE = 1L << 40;

    private JnaFloorProbe() {
    }

    public static void main(String[] a) {
        HostRuntime runtime = HostRuntime.load(Variant.parse(a[0]));
        int n = Integer.parseInt(a[1]);
        NativeApi api = ChipInternals.api(runtime);
        TrivialRun chip = new TrivialRun(ChipWorker.open(runtime, 0));
        TrivialRun rawChip = new TrivialRun(ChipWorker.open(runtime, 1));
        long ctx = ChipInternals.deviceContext(rawChip.chip());
        long storage = ChipInternals.slotStorage(rawChip.chip(), 0);
        long cDriver = TrivialRun.openCDriver(runtime);
        long pingPong = NativeBench.pto_bench_pingpong_open();
        // zeroed blocks: no tensors, the default config, slot 0 of bank 0
        try (OffHeapBlock args = OffHeapBlock.allocate(Layouts.ChipStorageTaskArgs.SIZE,
                     Layouts.ChipStorageTaskArgs.ALIGN);
             OffHeapBlock config = OffHeapBlock.allocate(Layouts.CallConfig.SIZE, 8);
             OffHeapBlock desc = OffHeapBlock.allocate(Layouts.NativeRunDescriptor.SIZE,
                     Layouts.NativeRunDescriptor.ALIGN)) {
            desc.buffer().putLong(Layouts.NativeRunDescriptor.GENERATION, 1);
            Runnable[] cycles = {
                chip::cycle,
                () -> rawCycle(api, ctx, storage, args.address(), config.address(), desc),
                () -> TrivialRun.cDriverCycle(cDriver),
            };
            for (int round = 0; round < 3; round++) {
                long[][] t = new long[3][n];
                for (int i = 0; i < n; i++) {
                    for (int k = 0; k < 3; k++) {
                        int which = (i + k) % 3; // each takes each position a third of the time
                        long t0 = System.nanoTime();
                        cycles[which].run();
                        t[which][i] = System.nanoTime() - t0;
                    }
                    LockSupport.parkNanos(TrivialRunBench.SETTLE_NANOS);
                    NativeBench.pto_bench_pingpong_round(pingPong);
                }
                double viaChip = p50(t[0]);
                double raw = p50(t[1]);
                double c = p50(t[2]);
                System.out.printf(Locale.ROOT, "%s round %d: p50 ChipWorker %.2f us, raw JNA %.2f us, C %.2f us;"
                        + " ChipWorker / C %.3f, raw JNA / C %.3f%n", a[0], round, viaChip, raw, c, viaChip / c,
                        raw / c);
            }
        } finally {
            NativeBench.pto_bench_pingpong_close(pingPong);
            NativeBench.pto_bench_cycle_close(cDriver);
            rawChip.chip().close();
            chip.chip().close();
        }
    }

    private static long rawEpoch = RAW_EPOCH_BASE;

    /** The C driver's cycle, each call a JNA crossing. */
    private static void rawCycle(NativeApi api, long ctx, long storage, long args, long config, OffHeapBlock desc) {
        desc.buffer().putLong(Layouts.NativeRunDescriptor.RUN_EPOCH, ++rawEpoch);
        int rc = api.prepareRun(ctx, storage, TrivialRun.CALLABLE_ID, args, config, desc.address());
        if (rc != 0) {
            throw new IllegalStateException("raw prepare failed: " + rc);
        }
        if (api.launchRun(ctx, storage) == 0 && api.pollRun(ctx, storage) == 0) {
            api.waitRun(ctx, storage);
        }
        rc = api.finalizeRun(ctx, storage);
        if (rc != 0) {
            throw new IllegalStateException("raw finalize failed: " + rc);
        }
    }

    private static double p50(long[] nanos) {
        long[] s = nanos.clone();
        Arrays.sort(s);
        return s[s.length / 2] / 1e3;
    }
}

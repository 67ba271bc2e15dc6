package org.ptorun.cli;

import java.io.PrintStream;
import java.util.Arrays;
import java.util.Locale;
import org.ptorun.HostRuntime;
import org.ptorun.PipelineContract;
import org.ptorun.Variant;

/**
 * The ptorun command line.
 *
 * <pre>
 * ptorun demo [variant]              the vector chain on a chip, pipelined (default a2a3/sim/hbg)
 * ptorun inspect [variant ...]       loaded libraries and their pipeline contracts
 * ptorun bench [variant] [runs]      p50/p90/p99 of one trivial run's full cycle through ChipWorker
 * ptorun idle [variant ...]          CPU a ChipWorker burns while it has no run (should be ~0)
 * </pre>
 */
public final class Main {

    private Main() {
    }

    public static void main(String[] args) {
        int rc = run(args, System.out, System.err);
        if (rc != 0) {
            System.exit(rc);
        }
    }

    static int run(String[] args, PrintStream out, PrintStream err) {
        String command = args.length == 0 ? "demo" : args[0];
        String[] rest = Arrays.copyOfRange(args, Math.min(1, args.length), args.length);
        switch (command) {
            case "demo":
                return Demo.run(rest.length > 0 ? Variant.parse(rest[0]) : Variant.DEFAULT, out);
            case "inspect":
                return inspect(rest, out);
            case "bench":
                return Bench.run(rest.length > 0 ? Variant.parse(rest[0]) : Variant.DEFAULT,
                        rest.length > 1 ? Integer.parseInt(rest[1]) : 20_000, out);
            case "idle":
                return Bench.idle(rest.length == 0 ? Variant.all() : Arrays.stream(rest).map(Variant::parse).toList(),
                        out);
            default:
                err.println("usage: ptorun demo [variant] | inspect [variant ...] | bench [variant] [runs]"
                        + " | idle [variant ...]");
                return 2;
        }
    }

    private static int inspect(String[] variants, PrintStream out) {
        Iterable<Variant> selected = variants.length == 0
                ? Variant.all()
                : Arrays.stream(variants).map(Variant::parse).toList();
        for (Variant v : selected) {
            HostRuntime runtime = HostRuntime.load(v);
            PipelineContract c = runtime.contract();
            out.printf(Locale.ROOT, "%-18s %s  run storage %d B / align %d  contract %s  bank(slot)=%s%n",
                    v, runtime.libraryFile().getFileName(), runtime.runStorageSize(),
                    runtime.runStorageAlignment(), c, banks(c));
        }
        return 0;
    }

    private static String banks(PipelineContract c) {
        StringBuilder sb = new StringBuilder("[");
        for (int slot = 0; slot < c.pipelineDepth(); slot++) {
            sb.append(slot == 0 ? "" : ",").append(c.bankOfSlot(slot));
        }
        return sb.append(']').toString();
    }
}

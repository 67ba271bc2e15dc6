package org.ptorun.cli;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Locale;
import org.ptorun.Variant;
import org.ptorun.capture.ReplayResult;
import org.ptorun.capture.RunCapture;
import org.ptorun.capture.RunReplay;

/**
 * {@code ptorun replay}: reruns a captured run (docs/replay.md) and ends with one verdict
 * line; exit 0 when the replay matches its reference (the same failure, or equal outputs),
 * {@link Main#FAILURE} otherwise.
 */
final class Replay {

    private Replay() {
    }

    static int run(Path file, Variant variant, Variant against, Path trace, PrintWriter out) throws IOException {
        RunCapture c = RunCapture.read(file);
        Variant on = variant != null ? variant : c.variant();
        out.printf(Locale.ROOT, "ptorun replay %s: callable %d (%d bytes) captured on %s, %d tensors, %d scalars, %s%n",
                file, c.callableId(), c.callable().length, c.variant(), c.tensors().size(), c.scalars().length,
                c.failure().map(f -> "failed with " + f.simpleName() + " (code " + f.code() + ")")
                        .orElse(c.hasOutputs() ? "finished with outputs" : "no outcome"));
        c.identity().ifPresent(id -> out.printf(Locale.ROOT, "  captured run: run_id=%s dispatch_id=%s run_epoch=%s%n",
                Long.toUnsignedString(id.runId()), Long.toUnsignedString(id.dispatchId()),
                Long.toUnsignedString(id.runEpoch())));
        ReplayResult r;
        if (against != null) {
            out.printf(Locale.ROOT, "  comparing %s with %s%n", against, on);
            r = RunReplay.compare(c, on, against);
        } else if (trace != null) {
            Path parent = trace.toAbsolutePath().getParent();
            Path dir = Files.createTempDirectory(Files.createDirectories(parent), ".ptorun-trace-");
            try {
                out.printf(Locale.ROOT, "  replaying on %s with a trace%n", on);
                r = RunReplay.replay(c, on, k -> k.toBuilder().enableTrace(true).outputPrefix(dir).build());
                for (Path p : r.outputFiles()) {
                    if (p.getFileName().toString().startsWith("trace_")) {
                        Files.move(p, trace, StandardCopyOption.REPLACE_EXISTING);
                        out.printf(Locale.ROOT, "  the replay's trace: %s%n", trace);
                    }
                }
            } finally {
                try (var left = Files.list(dir)) {
                    for (Path p : left.toList()) {
                        Files.deleteIfExists(p);
                    }
                }
                Files.deleteIfExists(dir);
            }
        } else {
            out.printf(Locale.ROOT, "  replaying on %s%n", on);
            r = RunReplay.replay(c, on);
        }
        out.println(r.verdict());
        out.flush();
        return r.matches() ? 0 : Main.FAILURE;
    }
}

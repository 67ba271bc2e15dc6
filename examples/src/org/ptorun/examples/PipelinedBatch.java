package org.ptorun.examples;

import static org.ptorun.callable.Direction.IN;
import static org.ptorun.callable.Direction.OUT;

import org.ptorun.AcceptanceWord;
import org.ptorun.CallConfig;
import org.ptorun.ChipBusyException;
import org.ptorun.ChipWorker;
import org.ptorun.HostRuntime;
import org.ptorun.NativeRun;
import org.ptorun.OverlapNotNowException;
import org.ptorun.PipelineSlotLease;
import org.ptorun.PipelineSlotPool;
import org.ptorun.TaskArgs;
import org.ptorun.Tensor;
import org.ptorun.Variant;
import org.ptorun.callable.ChipCallable;
import org.ptorun.callable.Kernel;
import org.ptorun.callable.Param;
import org.ptorun.callable.Program;

/**
 * A pipelined batch on one chip, driven by hand through the phases: while run N
 * executes, run N+1 is prepared in the other pipeline slot (where the library supports
 * it — hbg, and a2a3 trb, whose runs here all have one ring sizing; with a pipeline of
 * depth 1, a5 trb, the batch runs one at a time), then launched once N is finalized. A
 * chip that cannot take N+1 now ({@link ChipBusyException}, {@link OverlapNotNowException})
 * gets it again after N is finalized. Each output is {@code x + 1}.
 *
 * <pre>java ... org.ptorun.examples.PipelinedBatch [variant] [runs]</pre>
 */
public final class PipelinedBatch {

    private PipelinedBatch() {
    }

    private static final int N = 4096;

    /** Runs {@code runs} runs; returns how many were prepared while another executed. */
    public static int run(Variant variant, int runs) {
        long bytes = 4L * N;
        ChipCallable plusOne = ChipCallable.builder()
                .signature(IN, OUT)
                .child(0, Kernel.vadds())
                .program(Program.builder()
                        .submit(0, Param.tensor(0, IN, 0, bytes), Param.tensor(1, OUT, 0, bytes), Param.scalarF32(1f))
                        .build())
                .build();
        int overlapped = 0;
        try (ChipWorker chip = ChipWorker.open(HostRuntime.load(variant), 0);
             AcceptanceWord word0 = AcceptanceWord.allocate(); AcceptanceWord word1 = AcceptanceWord.allocate()) {
            chip.registerCallable(0, plusOne);
            PipelineSlotPool pool = new PipelineSlotPool(chip.pipelineDepth());
            AcceptanceWord[] words = {word0, word1};
            Staged executing = null;
            for (int r = 0; r <= runs; r++) {
                Staged next = null;
                if (r < runs) {
                    PipelineSlotLease lease = pool.tryAcquire().orElse(null);
                    if (lease == null) {
                        // a pipeline of depth 1: the executing run holds the only slot
                        finish(chip, pool, executing);
                        executing = null;
                        r--;
                        continue;
                    }
                    float[] x = new float[N];
                    java.util.Arrays.fill(x, r);
                    float[] y = new float[N];
                    AcceptanceWord word = words[lease.slotId()];
                    word.reset();
                    try {
                        NativeRun run = chip.prepare(0, TaskArgs.of(Tensor.of(x), Tensor.of(y)), CallConfig.DEFAULT,
                                lease, r, r, word);
                        next = new Staged(run, lease, x, y);
                        overlapped += executing != null ? 1 : 0;
                    } catch (ChipBusyException | OverlapNotNowException noOverlap) {
                        // the chip cannot prepare this run while that one executes: finish that one first
                        pool.release(lease);
                        finish(chip, pool, executing);
                        executing = null;
                        r--;
                        continue;
                    }
                }
                finish(chip, pool, executing);
                if (next != null) {
                    chip.launch(next.run());
                }
                executing = next;
            }
        }
        return overlapped;
    }

    private record Staged(NativeRun run, PipelineSlotLease lease, float[] x, float[] y) {
    }

    private static void finish(ChipWorker chip, PipelineSlotPool pool, Staged s) {
        if (s == null) {
            return;
        }
        chip.finalizeRun(s.run());
        pool.release(s.lease());
        for (int i = 0; i < N; i++) {
            if (s.y()[i] != s.x()[i] + 1f) {
                throw new IllegalStateException("run " + s.run().runId() + ": y[" + i + "] = " + s.y()[i]);
            }
        }
    }

    public static void main(String[] argv) {
        Variant variant = argv.length > 0 ? Variant.parse(argv[0]) : Variant.DEFAULT;
        int runs = argv.length > 1 ? Integer.parseInt(argv[1]) : 50;
        int overlapped = run(variant, runs);
        System.out.println(variant + ": " + runs + " runs, " + overlapped + " prepared while another executed");
    }
}

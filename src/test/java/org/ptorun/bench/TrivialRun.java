package org.ptorun.bench;

import org.ptorun.CallConfig;
import org.ptorun.ChipWorker;
import org.ptorun.HostRuntime;
import org.ptorun.NativeRun;
import org.ptorun.PipelineSlotLease;
import org.ptorun.TaskArgs;
import org.ptorun.Variant;
import org.ptorun.callable.ChipCallable;
import org.ptorun.callable.Kernel;
import org.ptorun.callable.Program;

/**
 * One trivial run — a callable of one {@code noop} task, no arguments — and its full
 * cycle through {@link ChipWorker} (the same calls as {@code ptorun bench}), or through
 * the C driver of {@code libptorun_bench.so} on the same library.
 */
final class TrivialRun {

    static final int CALLABLE_ID = 0;
    private static final int NOOP = 0;

    static final ChipCallable CALLABLE = ChipCallable.builder()
            .child(NOOP, Kernel.noop())
            .program(Program.builder().submit(NOOP).build())
            .build();

    private final ChipWorker chip;
    private final TaskArgs args = new TaskArgs();
    private final PipelineSlotLease lease = PipelineSlotLease.of(0, 1);
    private long runs;

    TrivialRun(ChipWorker chip) {
        this.chip = chip;
        chip.registerCallable(CALLABLE_ID, CALLABLE);
    }

    ChipWorker chip() {
        return chip;
    }

    /** prepare → launch → poll, await if not complete → finalize. */
    void cycle() {
        long id = ++runs;
        NativeRun run = chip.prepare(CALLABLE_ID, args, CallConfig.DEFAULT, lease, id, id, null);
        chip.launch(run);
        if (!chip.poll(run)) {
            chip.await(run);
        }
        chip.finalizeRun(run);
    }

    /** The same cycle driven from C on {@code runtime}'s library file: a device context of its own. */
    static long openCDriver(HostRuntime runtime) {
        Variant.Arch arch = runtime.variant().arch();
        byte[] aicpu = NativeBench.read(BenchFiles.deviceImage(arch, "aicpu"));
        byte[] aicore = NativeBench.read(BenchFiles.deviceImage(arch, "aicore"));
        long cycle = NativeBench.pto_bench_cycle_open(runtime.libraryFile().toString(), aicpu, aicpu.length, aicore,
                aicore.length, CALLABLE.bytes(), CALLABLE_ID);
        if (cycle == 0) {
            throw new IllegalStateException("C driver on " + runtime.variant() + ": " + NativeBench.lastError());
        }
        return cycle;
    }

    static void cDriverCycle(long cycle) {
        int rc = NativeBench.pto_bench_cycle_run(cycle);
        if (rc != 0) {
            throw new IllegalStateException("C-driven cycle failed (" + rc + "): " + NativeBench.lastError());
        }
    }
}

package org.ptorun;

import static org.ptorun.Misuse.of;
import static org.ptorun.callable.Direction.IN;
import static org.ptorun.callable.Direction.INOUT;
import static org.ptorun.callable.Direction.OUT;
import static org.ptorun.callable.Direction.SCALAR;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import org.ptorun.callable.Affine;
import org.ptorun.callable.ChipCallable;
import org.ptorun.callable.CoreType;
import org.ptorun.callable.Kernel;
import org.ptorun.callable.Param;
import org.ptorun.callable.Program;
import org.ptorun.worker.Worker;

/**
 * The misuses refused in Java before any chip is involved: Tensor, TaskArgs, CallConfig,
 * PipelineSlotPool, AcceptanceWord, the Program and ChipCallable builders, the Worker builder.
 */
final class ValueMisuses {

    private ValueMisuses() {
    }

    static List<Misuse> all() {
        List<Misuse> m = new ArrayList<>();
        Class<IllegalArgumentException> iae = IllegalArgumentException.class;
        String t = "Tensor";
        m.add(of(t, "withStartOffset(Long.MAX_VALUE / 2)", iae, "reaches past 2^63 bytes",
                f -> f.refused(() -> Tensor.of(new float[4]).withStartOffset(Long.MAX_VALUE / 2))));
        m.add(of(t, "withStartOffset(-1)", iae, "must be >= 0", f -> f.refused(() -> Tensor.of(new float[4]).withStartOffset(-1))));
        m.add(of(t, "withStartOffset(1) on a full view", iae, "needs 20 bytes but its data holds 16",
                f -> f.refused(() -> Tensor.of(new float[4]).withStartOffset(1))));
        m.add(of(t, "a shape larger than the data", iae, "needs 20 bytes but its data holds 16",
                f -> f.refused(() -> Tensor.of(new float[4], 5))));
        m.add(of(t, "a 2-D shape larger than the data", iae, "needs 24 bytes",
                f -> f.refused(() -> Tensor.of(new float[4], 2, 3))));
        m.add(of(t, "a negative dimension", iae, "has a negative dimension", f -> f.refused(() -> Tensor.of(new float[4], -1))));
        m.add(of(t, "six dimensions", iae, "a tensor has 1..5 dimensions, not 6",
                f -> f.refused(() -> Tensor.of(new float[1], 1, 1, 1, 1, 1, 1))));
        m.add(of(t, "zero dimensions", iae, "a tensor has 1..5 dimensions, not 0",
                f -> f.refused(() -> Tensor.of(new float[1]).withShape())));
        m.add(of(t, "strides with the wrong count", iae, "must have one entry per dimension",
                f -> f.refused(() -> Tensor.of(new float[4]).withStrides(1, 1))));
        m.add(of(t, "a zero stride", iae, "must each be > 0", f -> f.refused(() -> Tensor.of(new float[4]).withStrides(0))));
        m.add(of(t, "a stride that leaves the data", iae, "needs 28 bytes",
                f -> f.refused(() -> Tensor.of(new float[4]).withStrides(2))));
        m.add(of(t, "a wider dtype over the same data", iae, "needs 32 bytes but its data holds 16",
                f -> f.refused(() -> Tensor.of(new float[4]).withDType(DType.I64))));
        m.add(of(t, "a heap ByteBuffer", iae, "must be direct", f -> f.refused(() -> Tensor.of(ByteBuffer.allocate(16), DType.F32))));
        m.add(of(t, "a null array", NullPointerException.class, "data", f -> f.refused(() -> Tensor.of((float[]) null))));

        String a = "TaskArgs";
        m.add(of(a, "a tensor after a scalar", iae, "tensor arguments precede scalar arguments",
                f -> f.refused(() -> new TaskArgs().scalar(1).tensor(Tensor.of(new float[1])))));
        m.add(of(a, "257 tensors", iae, "at most 256 tensor arguments", f -> {
            TaskArgs args = new TaskArgs();
            for (int i = 0; i < 256; i++) {
                args.tensor(Tensor.of(new float[1]));
            }
            f.refused(() -> args.tensor(Tensor.of(new float[1])));
        }));
        m.add(of(a, "129 scalars", iae, "at most 128 scalar arguments", f -> {
            TaskArgs args = new TaskArgs();
            for (int i = 0; i < 128; i++) {
                args.scalar(i);
            }
            f.refused(() -> args.scalar(128));
        }));
        m.add(of(a, "a null tensor", NullPointerException.class, "tensor", f -> f.refused(() -> new TaskArgs().tensor(null))));

        String c = "CallConfig";
        m.add(of(c, "a negative timeout", iae, "timeout", f -> f.refused(() -> CallConfig.builder().timeoutMs(-1).build())));
        m.add(of(c, "1 AICPU thread", iae, "aicpu_thread_num", f -> f.refused(() -> CallConfig.builder().aicpuThreadNum(1).build())));
        m.add(of(c, "8 AICPU threads (a5 max 7)", iae, "aicpu_thread_num", f -> f.refused(() -> CallConfig.builder().aicpuThreadNum(8).build())));
        m.add(of(c, "block dim -1", iae, "block_dim", f -> f.refused(() -> CallConfig.builder().blockDim(-1).build())));
        m.add(of(c, "block dim 37 (a5 max 36)", iae, "block_dim", f -> f.refused(() -> CallConfig.builder().blockDim(37).build())));
        m.add(of(c, "block dim 30 validated for a2a3", iae, "block_dim 30",
                f -> f.refused(() -> CallConfig.builder().blockDim(30).build().validateFor(Variant.Arch.A2A3))));
        m.add(of(c, "a ring task window of 3", iae, "ring_task_window", f -> f.refused(() -> CallConfig.builder().ringTaskWindow(3).build())));
        m.add(of(c, "a ring task window of 12 (not a power of two)", iae, "ring_task_window",
                f -> f.refused(() -> CallConfig.builder().ringTaskWindow(12).build())));
        m.add(of(c, "a ring heap of 1000 bytes", iae, "ring_heap", f -> f.refused(() -> CallConfig.builder().ringHeap(1000).build())));
        m.add(of(c, "a ring dep pool of 2", iae, "ring_dep_pool", f -> f.refused(() -> CallConfig.builder().ringDepPool(2).build())));
        m.add(of(c, "ring index 4 of 4", iae, "ring 4 is outside [0, 4)",
                f -> f.refused(() -> CallConfig.builder().ringHeap(CallConfig.RING_COUNT, 4096).build())));
        m.add(of(c, "trace without an output prefix", iae, "output_prefix", f -> f.refused(() -> CallConfig.builder().enableTrace(true).build())));
        m.add(of(c, "an output prefix of 1024 bytes", iae, "output_prefix",
                f -> f.refused(() -> CallConfig.builder().outputPrefix("x".repeat(1024)).build())));

        String l = "leases and words";
        m.add(of(l, "a PipelineSlotPool of depth 0", iae, "pipeline depth 0 is outside", f -> f.refused(() -> new PipelineSlotPool(0))));
        m.add(of(l, "a PipelineSlotPool of depth 3", iae, "pipeline depth 3 is outside", f -> f.refused(() -> new PipelineSlotPool(3))));
        m.add(of(l, "an acceptance word with accepted value 0", iae, "the accepted value must be non-zero",
                f -> f.refused(() -> AcceptanceWord.allocate(0))));
        m.add(of(l, "read a closed acceptance word", IllegalStateException.class, "the acceptance word is closed", f -> {
            AcceptanceWord w = AcceptanceWord.allocate();
            w.close();
            f.refused(w::value);
        }));
        m.add(of(l, "reset a closed acceptance word", IllegalStateException.class, "the acceptance word is closed", f -> {
            AcceptanceWord w = AcceptanceWord.allocate();
            w.close();
            f.refused(w::reset);
        }));

        String p = "Program builder";
        m.add(of(p, "build() with a loop open", iae, "unbalanced program", f -> f.refused(() -> Program.builder().beginLoop(2).build())));
        m.add(of(p, "build() with a scope open", iae, "unbalanced program", f -> f.refused(() -> Program.builder().beginScope().build())));
        m.add(of(p, "endLoop() with nothing open", iae, "closes nothing", f -> f.refused(() -> Program.builder().endLoop())));
        m.add(of(p, "endScope() closing a loop", iae, "would close the LOOP", f -> f.refused(() -> Program.builder().beginLoop(2).endScope())));
        m.add(of(p, "a loop count of -1", iae, "a loop count is >= 0, not -1", f -> f.refused(() -> Program.builder().beginLoop(-1))));
        m.add(of(p, "five nested loops", iae, "loops nest at most 4 deep",
                f -> f.refused(() -> Program.builder().beginLoop(1).beginLoop(1).beginLoop(1).beginLoop(1).beginLoop(1))));
        m.add(of(p, "five nested scopes", iae, "scopes nest at most 4 deep",
                f -> f.refused(() -> Program.builder().beginScope().beginScope().beginScope().beginScope().beginScope())));
        m.add(of(p, "local tensor id 256", iae, "local tensor id 256 is outside 0..255",
                f -> f.refused(() -> Program.builder().allocTensor(256, 64))));
        m.add(of(p, "a local of 0 bytes", iae, "needs a positive size", f -> f.refused(() -> Program.builder().allocTensor(0, 0))));
        m.add(of(p, "a local allocated twice", iae, "is allocated a second time",
                f -> f.refused(() -> Program.builder().allocTensor(0, 64).allocTensor(0, 64))));
        m.add(of(p, "a local used before its ALLOC_TENSOR", iae, "uses local tensor 0",
                f -> f.refused(() -> Program.builder().submit(0, Param.local(0, OUT, 0, 8), Param.scalarF32(1)).build())));
        m.add(of(p, "a local used after the scope that allocated it", iae, "after the end of the scope",
                f -> f.refused(() -> Program.builder().beginScope().allocTensor(0, 64).endScope()
                        .submit(0, Param.local(0, OUT, 0, 8), Param.scalarF32(1)).build())));
        m.add(of(p, "a local view past the local's bytes", iae, "of local tensor 0",
                f -> f.refused(() -> Program.builder().allocTensor(0, 64)
                        .submit(0, Param.local(0, OUT, 32, 64), Param.scalarF32(1)).build())));
        m.add(of(p, "loopVar() with no loop open", IllegalStateException.class, "no loop is open",
                f -> f.refused(() -> Program.builder().loopVar())));
        m.add(of(p, "submit func_id 4096", iae, "func_id 4096 is outside", f -> f.refused(() -> Program.builder().submit(4096))));
        m.add(of(p, "a view offset that goes negative over the loop", iae, "can have a negative view offset",
                f -> f.refused(() -> Program.builder().loop(4, (b, i) -> b.submit(0,
                        Param.tensor(0, OUT, i.times(-8).plus(8), Affine.of(8)), Param.scalarF32(1))).build())));
        m.add(of(p, "Affine overflow", iae, "overflows a signed 64-bit value",
                f -> f.refused(() -> Affine.of(Long.MAX_VALUE).plus(1))));
        m.add(of(p, "Affine.loopVar(4)", iae, "loop depth 4 is outside 0..3", f -> f.refused(() -> Affine.loopVar(4))));
        m.add(of(p, "a view with a negative offset", iae, "must be >= 0", f -> f.refused(() -> Param.tensor(0, IN, -4, 8))));
        m.add(of(p, "a SCALAR tensor view", iae, "not SCALAR", f -> f.refused(() -> Param.tensor(0, SCALAR, 0, 8))));
        m.add(of(p, "scalar argument index -1", iae, "scalar argument index -1 is negative", f -> f.refused(() -> Param.scalarArg(-1))));

        String k = "ChipCallable builder";
        m.add(of(k, "a func_id bound twice", iae, "func_id 0 is bound twice",
                f -> f.refused(() -> ChipCallable.builder().signature(OUT).child(0, Kernel.vfill()).child(0, Kernel.vfill())
                        .program(Program.builder().submit(0, Param.tensor(0, OUT, 0, 8), Param.scalarF32(1)).build()).build())));
        m.add(of(k, "a SUBMIT of an unbound func_id", iae, "submits func_id 3",
                f -> f.refused(() -> ChipCallable.builder().signature(OUT).child(0, Kernel.vfill())
                        .program(Program.builder().submit(3, Param.tensor(0, OUT, 0, 8), Param.scalarF32(1)).build()).build())));
        m.add(of(k, "a view of a tensor outside the signature", iae, "views tensor argument 1",
                f -> f.refused(() -> ChipCallable.builder().signature(OUT).child(0, Kernel.vfill())
                        .program(Program.builder().submit(0, Param.tensor(1, OUT, 0, 8), Param.scalarF32(1)).build()).build())));
        m.add(of(k, "a write to an IN argument", iae, "writes tensor argument 0",
                f -> f.refused(() -> ChipCallable.builder().signature(IN).child(0, Kernel.vfill())
                        .program(Program.builder().submit(0, Param.tensor(0, OUT, 0, 8), Param.scalarF32(1)).build()).build())));
        m.add(of(k, "a scalar argument outside the signature", iae, "reads scalar argument 0",
                f -> f.refused(() -> ChipCallable.builder().signature(OUT).child(0, Kernel.vfill())
                        .program(Program.builder().submit(0, Param.tensor(0, OUT, 0, 8), Param.scalarArg(0)).build()).build())));
        m.add(of(k, "parameters that do not match the kernel", iae, "kernel vadd takes",
                f -> f.refused(() -> ChipCallable.builder().signature(IN, OUT).child(0, Kernel.vadd())
                        .program(Program.builder().submit(0, Param.tensor(0, IN, 0, 8), Param.tensor(1, OUT, 0, 8)).build()).build())));
        m.add(of(k, "a tensor after a scalar in the signature", iae, "is a tensor after a",
                f -> f.refused(() -> ChipCallable.builder().signature(SCALAR, INOUT).child(0, Kernel.noop())
                        .program(Program.builder().submit(0).build()).build())));
        m.add(of(k, "a program and an orchestration library together", iae, "orchestration",
                f -> f.refused(() -> ChipCallable.builder().child(0, Kernel.noop()).program(Program.builder().submit(0).build())
                        .orchestrationLibrary(new byte[] {1}, "entry").build())));
        m.add(of(k, "no orchestration at all", iae, "orchestration",
                f -> f.refused(() -> ChipCallable.builder().child(0, Kernel.noop()).build())));
        m.add(of(k, "child func_id 4096", iae, "func_id 4096 is outside",
                f -> f.refused(() -> ChipCallable.builder().child(4096, Kernel.noop()).program(Program.builder().build()).build())));
        m.add(of(k, "an AIC kernel bound as AIV", iae, "kernel 'gemm_tile' runs on",
                f -> f.refused(() -> ChipCallable.builder().child(0, CoreType.AIV, Kernel.gemmTile())
                        .program(Program.builder().build()).build())));
        m.add(of(k, "a library kernel without a core type", iae, "core type",
                f -> f.refused(() -> ChipCallable.builder().child(0, Kernel.fromLibrary(new byte[] {1, 2}, "k")))));
        m.add(of(k, "an empty kernel library", iae, "is empty", f -> f.refused(() -> Kernel.fromLibrary(new byte[0], "k"))));
        m.add(of(k, "withSignature on a built-in kernel", IllegalStateException.class, "has a fixed signature",
                f -> f.refused(() -> Kernel.vadd().withSignature(CoreType.AIV, IN, IN, OUT))));

        String w = "Worker builder";
        m.add(of(w, "no device ids", iae, "at least one device id", f -> f.refused(() -> Worker.builder().devices())));
        m.add(of(w, "a device id given twice", iae, "device id 3 given twice", f -> f.refused(() -> Worker.builder().devices(3, 3))));
        m.add(of(w, "queue capacity 0", iae, "queue capacity 0 must be at least 1", f -> f.refused(() -> Worker.builder().queueCapacity(0))));
        m.add(of(w, "pipeline depth 3", iae, "pipeline depth 3 is outside [1, 2]", f -> f.refused(() -> Worker.builder().pipelineDepth(3))));
        m.add(of(w, "build() without a variant", IllegalStateException.class, "needs a variant or a runtime",
                f -> f.refused(() -> Worker.builder().build())));
        m.add(of(w, "callable id 64 on register", iae, "callable id 64 is outside [0, 64)", f -> {
            // refused before any chip is touched; the Worker still has to be closed
            try (Worker worker = Worker.builder().variant(Variant.DEFAULT).devices(5).build()) {
                f.refused(() -> worker.register(64, MisuseFixture.chain()));
            }
        }));
        return m;
    }
}

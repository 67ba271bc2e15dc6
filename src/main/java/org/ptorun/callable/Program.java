package org.ptorun.callable;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.Consumer;
import org.ptorun.DType;
import org.ptorun.internal.CallableLayouts;

/**
 * A program orchestration: the bytecode a built-in interpreter runs to submit a run's
 * tasks (on the host for hbg, on the device for trb). Immutable; built with
 * {@link #builder()}.
 *
 * <ul>
 *   <li>{@code SUBMIT func_id params…} — one task per execution;</li>
 *   <li>{@code ALLOC_TENSOR local bytes} — a local (intermediate) tensor, allocated when
 *       its ALLOC_TENSOR executes while the local is not allocated; later executions in
 *       a loop inside its scope reuse it. A local allocated inside a scope is freed when
 *       that scope ends and must not be used after it; a loop around the scope allocates
 *       it again in every iteration, so the loop runs in one iteration's memory;</li>
 *   <li>{@code LOOP count … END_LOOP} — the body {@code count} times, with the loop
 *       variable of that nesting depth running {@code 0..count-1} (0 iterations skip
 *       the body); offsets, sizes and scalars may be {@link Affine} in the variables
 *       of the enclosing loops;</li>
 *   <li>{@code SCOPE_BEGIN … SCOPE_END} — a scope for the run's local memory (trb: the
 *       scope's own ring).</li>
 * </ul>
 *
 * Tasks depend on every earlier task whose views overlap theirs where one of the two
 * writes, so submission order is program order.
 *
 * <pre>{@code
 * Program p = Program.builder()
 *     .allocTensor(0, tileBytes)
 *     .loop(tiles, (b, i) -> b
 *         .submit(ADD, Param.tensor(0, IN, i.times(tileBytes), Affine.of(tileBytes)),
 *                      Param.tensor(1, IN, i.times(tileBytes), Affine.of(tileBytes)),
 *                      Param.local(0, OUT, 0, tileBytes))
 *         .submit(COPY, Param.local(0, IN, 0, tileBytes),
 *                       Param.tensor(2, OUT, i.times(tileBytes), Affine.of(tileBytes))))
 *     .build();
 * }</pre>
 */
public final class Program {

    /** Nesting limits of the format: loops and scopes, each. */
    public static final int MAX_LOOP_DEPTH = CallableLayouts.PTO_PROGRAM_MAX_LOOP_DEPTH;
    public static final int MAX_SCOPE_DEPTH = CallableLayouts.PTO_PROGRAM_MAX_SCOPE_DEPTH;
    public static final int MAX_LOCALS = CallableLayouts.PTO_PROGRAM_MAX_LOCALS;

    /** One SUBMIT as written, with its instruction index: for the callable builder's checks. */
    record Submit(int instruction, int funcId, List<Param> params) {
    }

    /** The body of {@link Builder#loop}: the builder and the new loop's variable. */
    @FunctionalInterface
    public interface LoopBody {
        void accept(Builder program, Affine loopVar);
    }

    private final byte[] bytes;
    private final List<Submit> submits;
    private final int instructionCount;
    private final int localCount;
    private final long taskCount;
    /** By argument tensor index: how far the program's views reach into it. */
    private final Map<Integer, TensorExtents.Reach> argumentReach;

    private Program(byte[] bytes, List<Submit> submits, int instructionCount, int localCount, long taskCount,
                    Map<Integer, TensorExtents.Reach> argumentReach) {
        this.bytes = bytes;
        this.submits = submits;
        this.instructionCount = instructionCount;
        this.localCount = localCount;
        this.taskCount = taskCount;
        this.argumentReach = argumentReach;
    }

    public static Builder builder() {
        return new Builder();
    }

    /** The program's bytes: PtoProgramHeader then the instructions. */
    public byte[] bytes() {
        return bytes.clone();
    }

    /** Bytes of the encoded program. */
    public int size() {
        return bytes.length;
    }

    /** Instructions in the program (every opcode). */
    public int instructionCount() {
        return instructionCount;
    }

    /** The header's local_count: the highest local id used + 1. */
    public int localCount() {
        return localCount;
    }

    /** Tasks one run submits (SUBMITs times their loops' counts); Long.MAX_VALUE if more. */
    public long taskCount() {
        return taskCount;
    }

    List<Submit> submits() {
        return submits;
    }

    /**
     * By argument tensor index, the farthest any view of the program reaches into that tensor
     * over every iteration that runs (SUBMITs in a loop of count 0 never run); tensors no view
     * names are absent.
     */
    Map<Integer, TensorExtents.Reach> argumentReach() {
        return argumentReach;
    }

    byte[] rawBytes() {
        return bytes;
    }

    @Override
    public String toString() {
        return "Program[" + instructionCount + " instructions, " + taskCount + " tasks, " + localCount + " locals, "
                + bytes.length + " bytes]";
    }

    /**
     * Builds a {@link Program}, checking what does not need the callable: nesting
     * (balanced, at most 4 loops and 4 scopes deep, an end closes the innermost open
     * construct), loop variables only inside their loops, locals (id &lt; 256, one
     * ALLOC_TENSOR each, before use, not after the scope that allocated them, never by a loop that
     * runs 0 times before a use outside it), byte views never negative and locals' views
     * inside their bytes over the loops' ranges, and every strided {@link View} inside its
     * dimensions' bounds (and a local's bytes) for every iteration, up to 2<sup>20</sup>
     * iterations of one SUBMIT (beyond, the library checks each as it submits it). The callable builder checks the
     * SUBMITs against its children and signature.
     */
    public static final class Builder {

        /** An open LOOP or SCOPE_BEGIN. */
        private record Open(boolean loop, int instruction, long count, int id, boolean manual) {
        }

        /** Where a local was allocated. */
        private record Local(long bytes, int instruction, List<Open> enclosing) {
        }

        private final List<byte[]> encoded = new ArrayList<>();
        private final List<Submit> submits = new ArrayList<>();
        private final Deque<Open> open = new ArrayDeque<>();
        private final Map<Integer, Local> locals = new HashMap<>();
        private final Map<Integer, Integer> endedScopeOfLocal = new HashMap<>();
        private final Map<Integer, TensorExtents.Reach> argumentReach = new HashMap<>();
        private int loops;
        private int scopes;
        private int nextOpenId;
        private int localCount;
        private long taskCount;

        private Builder() {
        }

        /**
         * Appends {@code SUBMIT funcId params…}: one task running the child with that
         * func id on these parameters, in kernel parameter order, per execution.
         *
         * @throws IllegalArgumentException for a func id outside 0..4095, more than 32
         *     params, a loop variable of a loop that does not enclose it, a local not
         *     allocated (or no longer alive) here, a view that can be negative or that
         *     leaves its local
         */
        public Builder submit(int funcId, Param... params) {
            return addSubmit(funcId, List.of(), params);
        }

        private Builder addSubmit(int funcId, List<Affine> after, Param... params) {
            Objects.requireNonNull(params, "params");
            if (funcId < 0 || funcId > CallableLayouts.PTO_CALLABLE_MAX_FUNC_ID) {
                throw new IllegalArgumentException("func_id " + funcId + " is outside 0.."
                        + CallableLayouts.PTO_CALLABLE_MAX_FUNC_ID);
            }
            if (params.length > CallableLayouts.PTO_MAX_TASK_PARAMS) {
                throw new IllegalArgumentException("a task takes at most " + CallableLayouts.PTO_MAX_TASK_PARAMS
                        + " parameters, not " + params.length);
            }
            int insn = nextInstruction();
            List<Param> list = List.copyOf(Arrays.asList(params));
            for (int i = 0; i < list.size(); i++) {
                checkParam(insn, funcId, i, list.get(i));
            }
            submits.add(new Submit(insn, funcId, list));
            encoded.add(encodeSubmit(funcId, list, after));
            taskCount = saturatingAdd(taskCount, iterations());
            return this;
        }

        /**
         * Appends {@code ALLOC_TENSOR} for a local tensor of {@code dtype} elements in a
         * row-major {@code shape} ({@link View#local(int, DType, long...)} views it).
         *
         * @throws IllegalArgumentException as {@link #allocTensor(int, long)}, or for an empty shape
         */
        public Builder allocTensor(int localId, DType dtype, long... shape) {
            Objects.requireNonNull(dtype, "dtype");
            Objects.requireNonNull(shape, "shape");
            if (shape.length == 0 || shape.length > CallableLayouts.PTO_VIEW_MAX_DIMS) {
                throw new IllegalArgumentException("a local tensor has 1.." + CallableLayouts.PTO_VIEW_MAX_DIMS
                        + " dims, not " + shape.length);
            }
            long bytes = dtype.byteSize();
            for (long extent : shape) {
                if (extent <= 0) {
                    throw new IllegalArgumentException("local tensor " + localId + " has shape "
                            + Arrays.toString(shape) + "; extents are > 0");
                }
                bytes = Math.multiplyExact(bytes, extent);
            }
            return allocTensor(localId, bytes);
        }

        /**
         * Appends {@code ALLOC_TENSOR localId bytes}: local tensor {@code localId} of
         * {@code bytes} bytes, visible to the SUBMITs after it until the end of the scope it
         * is in, which frees it. It is allocated when this instruction executes while the
         * local is not allocated: a loop around its scope allocates it again in every
         * iteration (after the previous iteration's scope freed it), so the loop runs in one
         * iteration's memory; a loop inside its scope reuses it.
         *
         * @throws IllegalArgumentException for an id outside 0..255, an id allocated
         *     before, or bytes ≤ 0
         */
        public Builder allocTensor(int localId, long bytes) {
            if (localId < 0 || localId >= MAX_LOCALS) {
                throw new IllegalArgumentException("local tensor id " + localId + " is outside 0.." + (MAX_LOCALS - 1));
            }
            if (bytes <= 0) {
                throw new IllegalArgumentException("local tensor " + localId + " needs a positive size, not " + bytes);
            }
            Local earlier = locals.get(localId);
            if (earlier != null) {
                throw new IllegalArgumentException("local tensor " + localId + " is allocated a second time (first at"
                        + " instruction " + earlier.instruction() + "); each local has one ALLOC_TENSOR");
            }
            int insn = nextInstruction();
            locals.put(localId, new Local(bytes, insn, List.copyOf(open)));
            localCount = Math.max(localCount, localId + 1);
            ByteBuffer b = insn(CallableLayouts.PTO_OP_ALLOC_TENSOR, CallableLayouts.PtoAllocInsn.SIZE);
            b.putInt(CallableLayouts.PtoAllocInsn.LOCAL_ID, localId);
            b.putInt(CallableLayouts.PtoAllocInsn.RESERVED, 0);
            b.putLong(CallableLayouts.PtoAllocInsn.BYTES, bytes);
            encoded.add(b.array());
            return this;
        }

        /**
         * Opens {@code LOOP count}: the instructions up to the matching {@link #endLoop()}
         * run {@code count} times; their loop variable is {@link #loopVar()} (depth =
         * the number of loops already open).
         *
         * @throws IllegalArgumentException for a negative count or a fifth nested loop
         */
        public Builder beginLoop(long count) {
            if (count < 0) {
                throw new IllegalArgumentException("a loop count is >= 0, not " + count);
            }
            if (loops == MAX_LOOP_DEPTH) {
                throw new IllegalArgumentException("loops nest at most " + MAX_LOOP_DEPTH + " deep");
            }
            int insn = nextInstruction();
            open.push(new Open(true, insn, count, nextOpenId++, false));
            loops++;
            ByteBuffer b = insn(CallableLayouts.PTO_OP_LOOP, CallableLayouts.PtoLoopInsn.SIZE);
            b.putLong(CallableLayouts.PtoLoopInsn.COUNT, count);
            encoded.add(b.array());
            return this;
        }

        /**
         * Closes the innermost LOOP.
         *
         * @throws IllegalArgumentException when no loop is open or a scope opened inside it is still open
         */
        public Builder endLoop() {
            close(true);
            return this;
        }

        /** {@code beginLoop(count)}, the body with this builder and the loop's variable, {@code endLoop()}. */
        public Builder loop(long count, LoopBody body) {
            Objects.requireNonNull(body, "body");
            beginLoop(count);
            body.accept(this, loopVar());
            return endLoop();
        }

        /**
         * Opens a scope: local memory allocated inside it is released at its end (trb: the
         * scope's own ring; scope depth d uses ring min(d, 3)).
         *
         * @throws IllegalArgumentException for a fifth nested scope
         */
        public Builder beginScope() {
            return beginScope(ScopeMode.AUTO);
        }

        /**
         * Opens a scope of {@code mode}: a {@link ScopeMode#MANUAL} scope infers no
         * dependency between its own tasks, which name their predecessors with
         * {@link #submitAfter}.
         *
         * @throws IllegalArgumentException for a fifth nested scope
         */
        public Builder beginScope(ScopeMode mode) {
            Objects.requireNonNull(mode, "mode");
            if (scopes == MAX_SCOPE_DEPTH) {
                throw new IllegalArgumentException("scopes nest at most " + MAX_SCOPE_DEPTH + " deep");
            }
            int insn = nextInstruction();
            boolean manual = mode == ScopeMode.MANUAL;
            open.push(new Open(false, insn, 0, nextOpenId++, manual));
            scopes++;
            encoded.add(insn(manual ? CallableLayouts.PTO_OP_SCOPE_BEGIN_MANUAL : CallableLayouts.PTO_OP_SCOPE_BEGIN,
                    CallableLayouts.PtoInsnHead.SIZE).array());
            return this;
        }

        /**
         * Appends a SUBMIT that waits for exactly the tasks of the innermost scope, which must
         * be {@link ScopeMode#MANUAL}, whose ordinals {@code after} gives: 0 is the first task
         * the scope submitted (in this execution of the scope), an ordinal may depend on the
         * loops, one that evaluates below 0 names no task (the first link of a chain) and a
         * repeated one counts once. The library refuses an ordinal that names no earlier task
         * of the scope.
         *
         * @throws IllegalArgumentException outside a MANUAL scope, for more than 32 ordinals,
         *     or as {@link #submit}
         */
        public Builder submitAfter(int funcId, List<Affine> after, Param... params) {
            Objects.requireNonNull(after, "after");
            Open scope = null;
            for (Open o : open) { // innermost first
                if (!o.loop()) {
                    scope = o;
                    break;
                }
            }
            if (scope == null || !scope.manual()) {
                throw new IllegalArgumentException("submitAfter names predecessors, which only a MANUAL scope takes"
                        + " (beginScope(ScopeMode.MANUAL)); the innermost scope here is "
                        + (scope == null ? "none" : "AUTO, opened at instruction " + scope.instruction()));
            }
            if (after.size() > CallableLayouts.PTO_PROGRAM_MAX_AFTER) {
                throw new IllegalArgumentException("a task names at most " + CallableLayouts.PTO_PROGRAM_MAX_AFTER
                        + " predecessors, not " + after.size());
            }
            for (Affine a : after) {
                checkLoopVars("instruction " + encoded.size() + " (SUBMIT): predecessor ordinal " + a, a);
            }
            return addSubmit(funcId, List.copyOf(after), params);
        }

        /** {@code beginScope(mode)}, the body, {@code endScope()}. */
        public Builder scope(ScopeMode mode, Consumer<Builder> body) {
            Objects.requireNonNull(body, "body");
            beginScope(mode);
            body.accept(this);
            return endScope();
        }

        /**
         * Closes the innermost scope; the locals allocated inside it are no longer usable.
         *
         * @throws IllegalArgumentException when no scope is open or a loop opened inside it is still open
         */
        public Builder endScope() {
            Open scope = close(false);
            locals.forEach((id, local) -> {
                if (local.enclosing().contains(scope)) {
                    endedScopeOfLocal.putIfAbsent(id, scope.instruction());
                }
            });
            return this;
        }

        /** {@code beginScope()}, the body, {@code endScope()}. */
        public Builder scope(Consumer<Builder> body) {
            Objects.requireNonNull(body, "body");
            beginScope();
            body.accept(this);
            return endScope();
        }

        /** Loops open at this point. */
        public int loopDepth() {
            return loops;
        }

        /**
         * The variable of the innermost open loop.
         *
         * @throws IllegalStateException when no loop is open
         */
        public Affine loopVar() {
            if (loops == 0) {
                throw new IllegalStateException("no loop is open");
            }
            return Affine.loopVar(loops - 1);
        }

        /**
         * Encodes the program.
         *
         * @throws IllegalArgumentException when a loop or scope is still open
         */
        public Program build() {
            if (!open.isEmpty()) {
                Open o = open.peek();
                throw new IllegalArgumentException("unbalanced program: the " + (o.loop() ? "LOOP" : "SCOPE_BEGIN")
                        + " at instruction " + o.instruction() + " is never closed (call "
                        + (o.loop() ? "endLoop()" : "endScope()") + ")");
            }
            int total = CallableLayouts.PtoProgramHeader.SIZE;
            for (byte[] e : encoded) {
                total += e.length;
            }
            ByteBuffer out = ByteBuffer.allocate(total).order(ByteOrder.LITTLE_ENDIAN);
            out.putInt(CallableLayouts.PtoProgramHeader.MAGIC, CallableLayouts.PTO_PROGRAM_MAGIC);
            out.putInt(CallableLayouts.PtoProgramHeader.INSTRUCTION_COUNT, encoded.size());
            out.putInt(CallableLayouts.PtoProgramHeader.LOCAL_COUNT, localCount);
            out.putInt(CallableLayouts.PtoProgramHeader.RESERVED, 0);
            out.position(CallableLayouts.PtoProgramHeader.SIZE);
            for (byte[] e : encoded) {
                out.put(e);
            }
            return new Program(out.array(), List.copyOf(submits), encoded.size(), localCount, taskCount,
                    Map.copyOf(argumentReach));
        }

        // ---- checks ------------------------------------------------------------------------

        private int nextInstruction() {
            if (encoded.size() == CallableLayouts.PTO_PROGRAM_MAX_INSNS) {
                throw new IllegalArgumentException("a program holds at most " + CallableLayouts.PTO_PROGRAM_MAX_INSNS
                        + " instructions");
            }
            return encoded.size();
        }

        private Open close(boolean loop) {
            String what = loop ? "endLoop()" : "endScope()";
            if (open.isEmpty()) {
                throw new IllegalArgumentException(what + " closes nothing: no " + (loop ? "loop" : "scope")
                        + " is open");
            }
            Open innermost = open.peek();
            if (innermost.loop() != loop) {
                throw new IllegalArgumentException(what + " would close the " + (innermost.loop() ? "LOOP" : "SCOPE_BEGIN")
                        + " opened at instruction " + innermost.instruction() + "; close it first");
            }
            nextInstruction();
            open.pop();
            if (loop) {
                loops--;
                encoded.add(insn(CallableLayouts.PTO_OP_END_LOOP, CallableLayouts.PtoInsnHead.SIZE).array());
            } else {
                scopes--;
                encoded.add(insn(CallableLayouts.PTO_OP_SCOPE_END, CallableLayouts.PtoInsnHead.SIZE).array());
            }
            return innermost;
        }

        /** Loop counts of the open loops by depth. */
        private long[] counts() {
            long[] counts = new long[loops];
            int depth = loops;
            for (Open o : open) { // innermost first
                if (o.loop()) {
                    counts[--depth] = o.count();
                }
            }
            return counts;
        }

        /** Executions of an instruction here: the product of the open loops' counts. */
        private long iterations() {
            long n = 1;
            for (long c : counts()) {
                n = c == 0 ? 0 : (n > Long.MAX_VALUE / c ? Long.MAX_VALUE : n * c);
            }
            return n;
        }

        private void checkParam(int insn, int funcId, int i, Param p) {
            String where = "instruction " + insn + " (SUBMIT) parameter " + i;
            String param = "instruction " + insn + " (SUBMIT func_id " + funcId + ") parameter " + i;
            if (p.kind() == Param.Kind.SCALAR_AFFINE) {
                checkLoopVars(where + ": the scalar value " + p.offset(), p.offset());
                return;
            }
            if (!p.kind().isTensor()) {
                return;
            }
            Local local = null;
            if (p.kind() == Param.Kind.LOCAL_TENSOR) {
                local = checkLocalAlive(where, p.index());
            }
            if (p.view() != null) {
                TensorExtents.Reach reach = ViewCheck.check(where, p.view(), loops, counts(),
                        local == null ? -1 : local.bytes(), param);
                reached(p, reach);
                return;
            }
            checkLoopVars(where + ": the view offset " + p.offset(), p.offset());
            checkLoopVars(where + ": the view size " + p.size(), p.size());
            long[] counts = counts();
            if (iterations() == 0) {
                return; // never executes: nothing the views could do wrong
            }
            try {
                long[] offset = p.offset().range(counts);
                long[] size = p.size().range(counts);
                long[] end = p.offset().plus(p.size()).range(counts);
                if (offset[0] < 0 || size[0] < 0) {
                    throw new IllegalArgumentException(where + " can have a negative view offset (" + offset[0]
                            + ") or size (" + size[0] + "): offset " + p.offset() + ", size " + p.size());
                }
                if (local != null && end[1] > local.bytes()) {
                    throw new IllegalArgumentException(where + " views up to byte " + end[1] + " of local tensor "
                            + p.index() + ", which has " + local.bytes() + " bytes (offset " + p.offset() + ", size "
                            + p.size() + ")");
                }
                if (local == null) {
                    // [offset, offset + size) inside the tensor, size >= 0: offset + size is linear, greatest at a corner
                    Affine end0 = p.offset().plus(p.size());
                    reached(p, TensorExtents.Reach.of(end[1], param, end0.argMax(counts), true));
                }
            } catch (ArithmeticException e) {
                throw new IllegalArgumentException(where + ": the view [" + p.offset() + ", +" + p.size()
                        + ") overflows a signed 64-bit value over its loops' ranges");
            }
        }

        /** Keeps, per argument tensor, the farthest reach of its views (the first view of the most bytes). */
        private void reached(Param p, TensorExtents.Reach reach) {
            if (reach != null && p.kind() == Param.Kind.ARG_TENSOR) {
                argumentReach.merge(p.index(), reach, TensorExtents.Reach::farther);
            }
        }

        private void checkLoopVars(String what, Affine a) {
            if (a.deepestLoopUsed() >= loops) {
                throw new IllegalArgumentException(what + " uses loop variable i" + a.deepestLoopUsed() + " but only "
                        + loops + " loop(s) enclose it");
            }
        }

        private Local checkLocalAlive(String where, int id) {
            Local local = locals.get(id);
            if (local == null) {
                throw new IllegalArgumentException(where + " uses local tensor " + id
                        + " before its allocTensor (ALLOC_TENSOR)");
            }
            Integer endedScope = endedScopeOfLocal.get(id);
            if (endedScope != null) {
                throw new IllegalArgumentException(where + " uses local tensor " + id + " after the end of the scope"
                        + " opened at instruction " + endedScope + ", which allocated it (instruction "
                        + local.instruction() + ")");
            }
            for (Open o : local.enclosing()) {
                if (o.loop() && o.count() == 0 && !open.contains(o)) {
                    throw new IllegalArgumentException(where + " uses local tensor " + id + ", whose ALLOC_TENSOR"
                            + " (instruction " + local.instruction() + ") is inside the LOOP at instruction "
                            + o.instruction() + ", which runs 0 times");
                }
            }
            return local;
        }

        // ---- encoding ----------------------------------------------------------------------

        private static ByteBuffer insn(int opcode, int size) {
            ByteBuffer b = ByteBuffer.allocate(size).order(ByteOrder.LITTLE_ENDIAN);
            b.putShort(CallableLayouts.PtoInsnHead.OPCODE, (short) opcode);
            b.putShort(CallableLayouts.PtoInsnHead.PARAM_COUNT, (short) 0);
            b.putInt(CallableLayouts.PtoInsnHead.SIZE_BYTES, size);
            return b;
        }

        private static byte[] encodeSubmit(int funcId, List<Param> params, List<Affine> after) {
            int afterAt = CallableLayouts.PtoSubmitInsn.SIZE + params.size() * CallableLayouts.PtoProgramParam.SIZE;
            int size = afterAt + after.size() * CallableLayouts.PtoAffine.SIZE;
            ByteBuffer b = insn(CallableLayouts.PTO_OP_SUBMIT, size);
            b.putShort(CallableLayouts.PtoInsnHead.PARAM_COUNT, (short) params.size());
            b.putInt(CallableLayouts.PtoSubmitInsn.FUNC_ID, funcId);
            b.putShort(CallableLayouts.PtoSubmitInsn.AFTER_COUNT, (short) after.size());
            for (int k = 0; k < after.size(); k++) {
                putAffine(b, afterAt + k * CallableLayouts.PtoAffine.SIZE, after.get(k));
            }
            int at = CallableLayouts.PtoSubmitInsn.SIZE;
            for (Param p : params) {
                b.put(at + CallableLayouts.PtoProgramParam.KIND, (byte) p.kind().code());
                b.put(at + CallableLayouts.PtoProgramParam.DIRECTION, (byte) p.direction().code());
                b.putInt(at + CallableLayouts.PtoProgramParam.INDEX, p.index());
                b.putLong(at + CallableLayouts.PtoProgramParam.IMM, p.imm());
                putAffine(b, at + CallableLayouts.PtoProgramParam.OFFSET, p.offset());
                putAffine(b, at + CallableLayouts.PtoProgramParam.SIZE_AFFINE, p.size());
                if (p.view() != null) {
                    putDims(b, at, p.view());
                }
                at += CallableLayouts.PtoProgramParam.SIZE;
            }
            return b.array();
        }

        private static void putDims(ByteBuffer b, int param, View v) {
            b.put(param + CallableLayouts.PtoProgramParam.DTYPE, (byte) v.dtype().code());
            b.put(param + CallableLayouts.PtoProgramParam.NDIMS, (byte) v.dims().size());
            int at = param + CallableLayouts.PtoProgramParam.DIMS;
            for (View.Dim d : v.dims()) {
                b.putLong(at + CallableLayouts.PtoViewDim.STRIDE, d.stride());
                b.putLong(at + CallableLayouts.PtoViewDim.BOUND, d.bound());
                putAffine(b, at + CallableLayouts.PtoViewDim.OFFSET, d.offset());
                if (!d.selected()) {
                    putAffine(b, at + CallableLayouts.PtoViewDim.EXTENT, d.extent());
                }
                b.putInt(at + CallableLayouts.PtoViewDim.FLAGS, d.selected() ? CallableLayouts.PTO_VIEW_DIM_SELECTED : 0);
                at += CallableLayouts.PtoViewDim.SIZE;
            }
        }

        private static void putAffine(ByteBuffer b, int at, Affine a) {
            b.putLong(at + CallableLayouts.PtoAffine.BASE, a.base());
            for (int d = 0; d < Affine.MAX_LOOP_DEPTH; d++) {
                b.putLong(at + CallableLayouts.PtoAffine.COEF + 8 * d, a.coef(d));
            }
            int clamp = 0;
            if (a.lowerClamp().isPresent()) {
                clamp |= CallableLayouts.PTO_AFFINE_HAS_LO;
                b.putLong(at + CallableLayouts.PtoAffine.LO, a.lowerClamp().getAsLong());
            }
            if (a.upperClamp().isPresent()) {
                clamp |= CallableLayouts.PTO_AFFINE_HAS_HI;
                b.putLong(at + CallableLayouts.PtoAffine.HI, a.upperClamp().getAsLong());
            }
            b.putInt(at + CallableLayouts.PtoAffine.CLAMP, clamp);
        }

        private static long saturatingAdd(long a, long b) {
            long r = a + b;
            return ((a ^ r) & (b ^ r)) < 0 ? Long.MAX_VALUE : r;
        }
    }
}

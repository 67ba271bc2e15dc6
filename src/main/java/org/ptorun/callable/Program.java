package org.ptorun.callable;

import static org.ptorun.callable.InstructionEncoding.encodeInvoke;
import static org.ptorun.callable.InstructionEncoding.encodeSubgraph;
import static org.ptorun.callable.InstructionEncoding.encodeSubmit;
import static org.ptorun.callable.InstructionEncoding.insn;

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
 *   <li>{@code SUBGRAPH id boundary body} — defines a sub-graph ({@link Builder#subgraph}):
 *       tasks recorded once per run and submitted as one unit by each
 *       {@code INVOKE id params…} ({@link Builder#invoke}).</li>
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

    /** The most sub-graphs a program defines: ids 0..63. */
    public static final int MAX_SUBGRAPHS = CallableLayouts.PTO_PROGRAM_MAX_SUBGRAPHS;

    /**
     * One SUBMIT as written, with its instruction index: for the callable builder's checks.
     * {@code subgraph} is the sub-graph whose body holds it, or -1: a body's tensor and scalar
     * indices name its boundary (the program builder checked them), not the signature.
     */
    record Submit(int instruction, int funcId, List<Param> params, int subgraph) {

        /** How messages name it: "instruction 3", "sub-graph 0 instruction 1". */
        String where() {
            return (subgraph < 0 ? "" : "sub-graph " + subgraph + " ") + "instruction " + instruction;
        }
    }

    /** One INVOKE as written: its params name argument tensors and scalars like a SUBMIT's. */
    record Invoke(int instruction, int subgraph, List<Param> params) {
    }

    /**
     * A sub-graph a {@link Builder} defined ({@link Builder#subgraph}): its id and its
     * boundary, the parameters each {@link Builder#invoke} passes — tensors (IN, OUT, INOUT)
     * first, then scalars. Belongs to the builder that defined it.
     */
    public static final class Subgraph {
        private final int id;
        private final List<Direction> boundary;
        private final Program body;
        private final Builder owner;

        private Subgraph(int id, List<Direction> boundary, Program body, Builder owner) {
            this.id = id;
            this.boundary = boundary;
            this.body = body;
            this.owner = owner;
        }

        /** Its id in the program, 0..63 (the key of {@code subgraph_submit}). */
        public int id() {
            return id;
        }

        /** The boundary's directions: tensors first, then {@link Direction#SCALAR}s. */
        public List<Direction> boundary() {
            return boundary;
        }

        /** Tasks of one invocation: the body's, plus the invocation's entry and exit tasks. */
        public long taskCount() {
            return body.taskCount() > Long.MAX_VALUE - 2 ? Long.MAX_VALUE : body.taskCount() + 2;
        }

        /** The body's own program (its argument tensors and scalars are the boundary's). */
        Program body() {
            return body;
        }

        @Override
        public String toString() {
            return "Subgraph[" + id + ", boundary=" + boundary + ", " + body.taskCount() + " body tasks]";
        }
    }

    /** The body of {@link Builder#loop}: the builder and the new loop's variable. */
    @FunctionalInterface
    public interface LoopBody {
        void accept(Builder program, Affine loopVar);
    }

    private final byte[] bytes;
    private final List<Submit> submits;
    private final List<Invoke> invokes;
    private final int instructionCount;
    private final int localCount;
    private final long taskCount;
    /** By argument tensor index: how far the program's views reach into it. */
    private final Map<Integer, TensorExtents.Reach> argumentReach;

    private Program(byte[] bytes, List<Submit> submits, List<Invoke> invokes, int instructionCount, int localCount,
                    long taskCount, Map<Integer, TensorExtents.Reach> argumentReach) {
        this.bytes = bytes;
        this.submits = submits;
        this.invokes = invokes;
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

    /**
     * Tasks one run submits (SUBMITs times their loops' counts, each INVOKE its sub-graph's
     * {@link Subgraph#taskCount()} times its loops' counts); Long.MAX_VALUE if more.
     */
    public long taskCount() {
        return taskCount;
    }

    /** Every SUBMIT, sub-graph bodies' included. */
    List<Submit> submits() {
        return submits;
    }

    List<Invoke> invokes() {
        return invokes;
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
     *
     * <p>Sub-graphs: {@link #subgraph} defines one at top level with a body written with this
     * same vocabulary, in which the boundary plays the arguments' part; {@link #invoke}
     * submits it wherever a SUBMIT may stand except inside a MANUAL scope. Misuse of a call in
     * the wrong place (a sub-graph inside a loop, scope or body, an invoke inside a MANUAL scope
     * or a body, a MANUAL scope or predecessors in a body) is an {@link IllegalStateException};
     * bad arguments are {@link IllegalArgumentException}s.
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
        private final List<Invoke> invokes = new ArrayList<>();
        private final Map<Integer, Subgraph> subgraphs = new HashMap<>();
        /** A sub-graph body's builder: its boundary and id; null and -1 for a program's. */
        private final List<Direction> boundary;
        private final int boundaryTensors;
        private final int bodyOf;

        private Builder() {
            this(null, 0, -1);
        }

        private Builder(List<Direction> boundary, int boundaryTensors, int bodyOf) {
            this.boundary = boundary;
            this.boundaryTensors = boundaryTensors;
            this.bodyOf = bodyOf;
        }

        /** "sub-graph 0 " in a body, else "": prefixes the instruction in messages. */
        private String prefix() {
            return bodyOf < 0 ? "" : "sub-graph " + bodyOf + " ";
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
            submits.add(new Submit(insn, funcId, list, bodyOf));
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
         * @throws IllegalStateException for a MANUAL scope in a sub-graph's body
         */
        public Builder beginScope(ScopeMode mode) {
            Objects.requireNonNull(mode, "mode");
            if (mode == ScopeMode.MANUAL && bodyOf >= 0) {
                throw new IllegalStateException("sub-graph " + bodyOf + "'s body cannot open a MANUAL scope: a body's"
                        + " dependencies are all inferred (it is recorded once and replayed)");
            }
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
         * @throws IllegalStateException in a sub-graph's body
         */
        public Builder submitAfter(int funcId, List<Affine> after, Param... params) {
            Objects.requireNonNull(after, "after");
            if (bodyOf >= 0) {
                throw new IllegalStateException("sub-graph " + bodyOf + "'s body cannot name predecessors"
                        + " (submitAfter): a body's dependencies are all inferred");
            }
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

        /**
         * Defines sub-graph {@code id} ({@code SUBGRAPH}): a piece of the graph recorded once per
         * run and submitted as one unit by each {@link #invoke} (docs/orchestration.md,
         * "Sub-graphs"). {@code boundary} lists the parameters an invocation passes, tensors
         * (IN, OUT, INOUT) first, then {@link Direction#SCALAR}s. {@code body} writes the
         * sub-graph's tasks on a builder of its own where the boundary plays the arguments'
         * part: {@code Param.tensor(k, …)} / {@code View.arg(k, …)} view boundary tensor k (a
         * view writing an IN one is refused) and {@code Param.scalarArg(j)} is boundary scalar
         * j; it may loop, open AUTO scopes and allocate locals of its own (freed when the
         * invocation ends), not define or invoke sub-graphs, open MANUAL scopes or name
         * predecessors. Only at top level, before its invocations.
         *
         * @return the sub-graph, for {@link #invoke}
         * @throws IllegalArgumentException for an id outside 0..63 or defined before, a boundary
         *     of no or more than 32 parameters, a tensor after a scalar, or whatever the body
         *     does wrong (its messages name "sub-graph id instruction n")
         * @throws IllegalStateException inside a loop or scope, in a sub-graph's body, or when
         *     {@code body} wrote to this builder instead of the one it is given
         */
        public Subgraph subgraph(int id, List<Direction> boundary, Consumer<Builder> body) {
            Objects.requireNonNull(boundary, "boundary");
            Objects.requireNonNull(body, "body");
            if (bodyOf >= 0) {
                throw new IllegalStateException("sub-graph " + bodyOf + "'s body cannot define a sub-graph: sub-graphs"
                        + " do not nest");
            }
            if (!open.isEmpty()) {
                Open o = open.peek();
                throw new IllegalStateException("a sub-graph is defined at top level, but the "
                        + (o.loop() ? "LOOP" : "SCOPE_BEGIN") + " opened at instruction " + o.instruction()
                        + " is open");
            }
            if (id < 0 || id >= MAX_SUBGRAPHS) {
                throw new IllegalArgumentException("sub-graph id " + id + " is outside 0.." + (MAX_SUBGRAPHS - 1));
            }
            if (subgraphs.containsKey(id)) {
                throw new IllegalArgumentException("sub-graph " + id + " is defined a second time; each id once");
            }
            List<Direction> dirs = List.copyOf(boundary);
            // one fewer than a task's (PTO_SUBGRAPH_MAX_BOUNDARY): its entry and exit tasks carry its block too
            int most = CallableLayouts.PTO_MAX_TASK_PARAMS - 1;
            if (dirs.isEmpty() || dirs.size() > most) {
                throw new IllegalArgumentException("sub-graph " + id + " has " + dirs.size()
                        + " boundary parameters; a sub-graph has 1.." + most);
            }
            int tensors = 0;
            for (int k = 0; k < dirs.size(); k++) {
                if (dirs.get(k).isTensor()) {
                    if (tensors != k) {
                        throw new IllegalArgumentException("sub-graph " + id + " boundary parameter " + k + " is a "
                                + dirs.get(k) + " tensor after a scalar: the boundary's tensors come first " + dirs);
                    }
                    tensors++;
                }
            }
            int insn = nextInstruction();
            Builder b = new Builder(dirs, tensors, id);
            body.accept(b);
            Program program = b.build();
            if (encoded.size() != insn) {
                throw new IllegalStateException("the body of sub-graph " + id + " appended instructions to the program"
                        + " defining it; write the body on the builder the body is given");
            }
            Subgraph sg = new Subgraph(id, dirs, program, this);
            subgraphs.put(id, sg);
            submits.addAll(program.submits());
            encoded.add(encodeSubgraph(id, dirs, program.rawBytes()));
            return sg;
        }

        /**
         * {@link #subgraph(int, List, Consumer)} with the smallest id not yet defined.
         *
         * @throws IllegalArgumentException when all 64 ids are defined, or as that method
         */
        public Subgraph subgraph(List<Direction> boundary, Consumer<Builder> body) {
            int id = 0;
            while (subgraphs.containsKey(id)) {
                id++;
            }
            return subgraph(id, boundary, body);
        }

        /**
         * Appends {@code INVOKE}: submits {@code subgraph} as one unit with these boundary
         * parameters, in its boundary's order — views of argument tensors or locals whose
         * directions equal the boundary's, then scalars ({@link Param#scalar},
         * {@link Param#scalarArg}, an {@link Affine} of the loops). Allowed wherever a
         * {@link #submit} is (loops, AUTO scopes), not inside a MANUAL scope. Each view is
         * checked like a SUBMIT's, and where its size is known here (a flat view, a strided one
         * of constant extents) against how far the body's views of it reach.
         *
         * @throws IllegalArgumentException for a sub-graph of another builder, a count or a
         *     direction that differs from the boundary, or a view {@link #submit} would refuse
         *     or that the body overruns
         * @throws IllegalStateException inside a MANUAL scope, or in a sub-graph's body
         */
        public Builder invoke(Subgraph subgraph, Param... params) {
            Objects.requireNonNull(subgraph, "subgraph");
            Objects.requireNonNull(params, "params");
            if (bodyOf >= 0) {
                throw new IllegalStateException("sub-graph " + bodyOf + "'s body cannot invoke sub-graph "
                        + subgraph.id() + ": sub-graphs do not nest");
            }
            if (subgraph.owner != this || subgraphs.get(subgraph.id()) != subgraph) {
                throw new IllegalArgumentException(subgraph + " was defined by another program builder");
            }
            for (Open o : open) {
                if (!o.loop() && o.manual()) {
                    throw new IllegalStateException("invoke(sub-graph " + subgraph.id() + ") inside the MANUAL scope"
                            + " opened at instruction " + o.instruction() + ": a sub-graph is not invoked inside a"
                            + " MANUAL scope");
                }
            }
            List<Direction> dirs = subgraph.boundary();
            String what = "instruction " + encoded.size() + " (INVOKE sub-graph " + subgraph.id() + ")";
            if (params.length != dirs.size()) {
                throw new IllegalArgumentException(what + " passes " + params.length + " parameters; the sub-graph's"
                        + " boundary has " + dirs.size() + " " + dirs);
            }
            int insn = nextInstruction();
            List<Param> list = List.copyOf(Arrays.asList(params));
            for (int i = 0; i < list.size(); i++) {
                Param p = list.get(i);
                Direction want = dirs.get(i);
                boolean fits = want.isTensor() ? p.kind().isTensor() && p.direction() == want : !p.kind().isTensor();
                if (!fits) {
                    throw new IllegalArgumentException(what + " parameter " + i + " is " + p + "; the sub-graph's"
                            + " boundary parameter " + i + " is " + (want.isTensor() ? "a " + want + " tensor view"
                                    : "a scalar"));
                }
                checkParam(insn, "INVOKE sub-graph", subgraph.id(), i, p);
                if (want.isTensor()) {
                    checkBodyReach(what, i, p, subgraph);
                }
            }
            invokes.add(new Invoke(insn, subgraph.id(), list));
            encoded.add(encodeInvoke(subgraph.id(), list));
            taskCount = saturatingAdd(taskCount, saturatingMul(subgraph.taskCount(), iterations()));
            return this;
        }

        /**
         * An INVOKE's boundary view k against the farthest byte the body's views of boundary
         * tensor k reach, where the view's size is known for every iteration: a flat view's
         * smallest size over the loops, a strided view of constant extents' span.
         */
        private void checkBodyReach(String what, int k, Param p, Subgraph sg) {
            TensorExtents.Reach reach = sg.body().argumentReach().get(k);
            if (reach == null || iterations() == 0) {
                return;
            }
            long smallest;
            try {
                if (p.view() == null) {
                    smallest = p.size().range(counts())[0];
                } else {
                    View v = p.view();
                    long span = 1;
                    for (View.Dim d : v.dims()) {
                        if (d.selected()) {
                            continue;
                        }
                        if (!d.extent().isConstant()) {
                            return; // not known here: the library checks each invocation
                        }
                        long extent = d.extent().evaluate();
                        if (extent == 0) {
                            span = 0;
                            break;
                        }
                        span = Math.addExact(span, Math.multiplyExact(extent - 1, d.stride()));
                    }
                    smallest = Math.multiplyExact(span, v.dtype().byteSize());
                }
            } catch (ArithmeticException e) {
                return;
            }
            if (reach.bytes() > smallest) {
                throw new IllegalArgumentException(what + " parameter " + k + " is a view of " + smallest
                        + " bytes, but the body reaches byte " + reach.bytes() + " of boundary tensor " + k + " ("
                        + reach.describe() + ")");
            }
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
            return new Program(out.array(), List.copyOf(submits), List.copyOf(invokes), encoded.size(), localCount,
                    taskCount, Map.copyOf(argumentReach));
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
            checkParam(insn, "SUBMIT func_id", funcId, i, p);
        }

        /** kind "SUBMIT func_id" or "INVOKE sub-graph", number its func id or sub-graph id. */
        private void checkParam(int insn, String kind, int number, int i, Param p) {
            String where = prefix() + "instruction " + insn + " (" + kind.substring(0, kind.indexOf(' ')) + ") parameter "
                    + i;
            String param = prefix() + "instruction " + insn + " (" + kind + " " + number + ") parameter " + i;
            if (bodyOf >= 0) {
                checkBoundaryParam(where, p);
            }
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

        /** In a body: argument tensors and scalars are the boundary's. */
        private void checkBoundaryParam(String where, Param p) {
            if (p.kind() == Param.Kind.ARG_TENSOR) {
                if (p.index() >= boundaryTensors) {
                    throw new IllegalArgumentException(where + " views boundary tensor " + p.index() + " but the"
                            + " sub-graph's boundary has " + boundaryTensors + " tensors " + boundary);
                }
                if (p.direction().writes() && !boundary.get(p.index()).writes()) {
                    throw new IllegalArgumentException(where + " writes boundary tensor " + p.index() + ", which the"
                            + " sub-graph's boundary declares " + boundary.get(p.index()));
                }
            } else if (p.kind() == Param.Kind.SCALAR_ARG && p.index() >= boundary.size() - boundaryTensors) {
                throw new IllegalArgumentException(where + " reads boundary scalar " + p.index() + " but the"
                        + " sub-graph's boundary has " + (boundary.size() - boundaryTensors) + " scalars " + boundary);
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

        private static long saturatingMul(long a, long b) {
            if (a == 0 || b == 0) {
                return 0;
            }
            return a > Long.MAX_VALUE / b ? Long.MAX_VALUE : a * b;
        }

        private static long saturatingAdd(long a, long b) {
            long r = a + b;
            return ((a ^ r) & (b ^ r)) < 0 ? Long.MAX_VALUE : r;
        }
    }
}

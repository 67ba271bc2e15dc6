package org.ptorun;

import static org.ptorun.callable.Direction.IN;
import static org.ptorun.callable.Direction.INOUT;
import static org.ptorun.callable.Direction.OUT;
import static org.ptorun.callable.Direction.SCALAR;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import org.ptorun.callable.Affine;
import org.ptorun.callable.ChipCallable;
import org.ptorun.callable.CoreType;
import org.ptorun.callable.Kernel;
import org.ptorun.callable.Param;
import org.ptorun.callable.Program;
import org.ptorun.callable.View;
import org.ptorun.internal.CallableLayouts;
import org.ptorun.internal.Layouts;

/**
 * Writes the seed corpus of the libFuzzer targets ({@code src/test/fuzz/corpus/<target>/},
 * docs/hardening.md) with the real encoders: {@link ChipCallable#bytes()},
 * {@link Program#bytes()}, {@link TaskArgs} and {@link CallConfig} as prepare writes them.
 * Files named {@code valid-*} must be accepted by their target's validation and
 * {@code invalid-*} refused (the fuzz Makefile checks both before fuzzing); an invalid seed
 * is a valid encoding with one field patched, since the encoders refuse to produce one.
 * Other files in the folders (regression inputs) are left alone.
 *
 * <pre>
 * mvn -q test-compile exec:java -Dexec.mainClass=org.ptorun.FuzzCorpusGenerator \
 *     -Dexec.classpathScope=test -Dexec.args=src/test/fuzz/corpus
 * </pre>
 */
public final class FuzzCorpusGenerator {

    /** The fake device memory of fuzz_run_args.c: a child_memory tensor must lie in it. */
    static final long FUZZ_DEVICE_BASE = 0x100_0000_0000L;
    /** Where host tensors are placed (any non-zero address that does not wrap). */
    static final long HOST_BASE = 0x2000_0000_0000L;

    private final Path root;

    private FuzzCorpusGenerator(Path root) {
        this.root = root;
    }

    public static void main(String[] args) {
        if (args.length != 1) {
            throw new IllegalArgumentException("usage: FuzzCorpusGenerator <corpus dir>");
        }
        FuzzCorpusGenerator g = new FuzzCorpusGenerator(Path.of(args[0]));
        g.chipCallables();
        g.programs();
        g.runArgs();
        g.callConfigs();
    }

    private void write(String target, String name, byte[] bytes) {
        try {
            Path dir = root.resolve(target);
            Files.createDirectories(dir);
            Files.write(dir.resolve(name), bytes);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static ByteBuffer le(byte[] bytes) {
        return ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
    }

    /** A copy of {@code bytes} with the int at {@code offset} replaced. */
    private static byte[] patchInt(byte[] bytes, int offset, int value) {
        byte[] copy = bytes.clone();
        le(copy).putInt(offset, value);
        return copy;
    }

    private static byte[] patchLong(byte[] bytes, int offset, long value) {
        byte[] copy = bytes.clone();
        le(copy).putLong(offset, value);
        return copy;
    }

    private static byte[] patchByte(byte[] bytes, int offset, int value) {
        byte[] copy = bytes.clone();
        copy[offset] = (byte) value;
        return copy;
    }

    // ---- callables and programs ----------------------------------------------------

    private static final int N = 64;
    private static final long BYTES = 4L * N;

    /** The README's vector chain f = (a+b+1)*(a+b+2)+(a+b), intermediates as locals. */
    static ChipCallable vectorChain() {
        Program p = Program.builder()
                .allocTensor(0, BYTES).allocTensor(1, BYTES).allocTensor(2, BYTES).allocTensor(3, BYTES)
                .submit(0, Param.tensor(0, IN, 0, BYTES), Param.tensor(1, IN, 0, BYTES), Param.local(0, OUT, 0, BYTES))
                .submit(1, Param.local(0, IN, 0, BYTES), Param.local(1, OUT, 0, BYTES), Param.scalarF32(1f))
                .submit(1, Param.local(0, IN, 0, BYTES), Param.local(2, OUT, 0, BYTES), Param.scalarF32(2f))
                .submit(2, Param.local(1, IN, 0, BYTES), Param.local(2, IN, 0, BYTES), Param.local(3, OUT, 0, BYTES))
                .submit(0, Param.local(3, IN, 0, BYTES), Param.local(0, IN, 0, BYTES), Param.tensor(2, OUT, 0, BYTES))
                .build();
        return ChipCallable.builder().signature(IN, IN, OUT)
                .child(0, CoreType.AIV, Kernel.vadd())
                .child(1, CoreType.AIV, Kernel.vadds())
                .child(2, CoreType.AIV, Kernel.vmul())
                .program(p).build();
    }

    /** Nested loops with affine views and scalars, a scope with its own local, scalar arguments. */
    static Program tiledProgram() {
        long tile = 64;
        return Program.builder()
                .allocTensor(0, tile)
                .loop(4, (b, i) -> b
                        .loop(2, (c, j) -> c
                                .submit(7, Param.tensor(0, IN, i.times(2 * tile).plus(j.times(tile)), Affine.of(tile)),
                                        Param.tensor(1, IN, i.times(2 * tile).plus(j.times(tile)), Affine.of(tile)),
                                        Param.local(0, OUT, 0, tile))
                                .submit(3, Param.local(0, IN, 0, tile), Param.local(0, OUT, 0, tile),
                                        Param.scalarArg(0))
                                .submit(3, Param.local(0, IN, 0, tile),
                                        Param.tensor(2, OUT, i.times(tile), Affine.of(tile)), Param.scalar(j))))
                .scope(s -> s
                        .allocTensor(1, 2 * tile)
                        .submit(3, Param.tensor(2, IN, 0, 2 * tile), Param.local(1, OUT, 0, 2 * tile),
                                Param.scalarArg(1))
                        .submit(3, Param.local(1, IN, 0, 2 * tile), Param.local(1, OUT, 0, 2 * tile),
                                Param.scalar(0x7ff0_0000_0000_0000L))
                        .submit(7, Param.local(1, IN, 0, 2 * tile), Param.local(1, IN, 0, 2 * tile),
                                Param.tensor(2, OUT, 0, 2 * tile)))
                .build();
    }

    /**
     * Strided views (format 2): 8 x 8 tiles of an 11 x 37 f32 matrix with clamped tails, a
     * transposed read, a selected dim, and a per-iteration local in a repeated scope.
     */
    static Program stridedProgram() {
        View x = View.arg(0, DType.F32, 11, 37);
        View y = View.arg(1, DType.F32, 11, 37);
        return Program.builder()
                .loop(2, (b, i) -> b.loop(5, (c, j) -> c.scope(s -> {
                    Affine rows = Affine.of(11).plus(-8, 0).min(8);
                    Affine cols = Affine.of(37).plus(-8, 1).min(8);
                    s.allocTensor(0, DType.F32, 8, 8)
                            .submit(7, Param.in(x.slice(0, i.times(8), rows).slice(1, j.times(8), cols)),
                                    Param.out(View.local(0, DType.F32, 8, 8).slice(0, 0, rows).slice(1, 0, cols)))
                            .submit(7, Param.in(View.local(0, DType.F32, 8, 8).slice(0, 0, rows).slice(1, 0, cols)),
                                    Param.out(y.slice(0, i.times(8), rows).slice(1, j.times(8), cols)));
                })))
                .submit(7, Param.in(x.transpose(0, 1).select(1, 3)), Param.out(y.select(0, 10)))
                .build();
    }

    static ChipCallable tiled() {
        return ChipCallable.builder().signature(IN, IN, INOUT, SCALAR, SCALAR)
                .child(7, CoreType.AIV, Kernel.vadd())
                .child(3, CoreType.AIV, Kernel.vadds())
                .program(tiledProgram()).build();
    }

    private void chipCallables() {
        String t = "chip_callable";
        byte[] chain = vectorChain().bytes();
        write(t, "valid-vector-chain", chain);
        write(t, "valid-tiled-loops-scopes", tiled().bytes());
        write(t, "valid-strided-tiles", ChipCallable.builder().signature(IN, OUT)
                .child(7, CoreType.AIV, Kernel.vcopy()).program(stridedProgram()).build().bytes());
        write(t, "valid-empty-program", ChipCallable.builder().signature()
                .program(Program.builder().build()).build().bytes());
        write(t, "valid-zero-trip-loop", ChipCallable.builder().signature(IN, OUT)
                .child(4095, CoreType.AIV, Kernel.vcopy())
                .program(Program.builder().loop(0, (b, i) -> b
                        .submit(4095, Param.tensor(0, IN, i.times(16), Affine.of(16)), Param.tensor(1, OUT, 0, 16)))
                        .scope(s -> s.scope(s2 -> s2.submit(4095, Param.tensor(0, IN, 0, 0), Param.tensor(1, OUT, 0, 0))))
                        .build()).build().bytes());
        byte[] image = "\u007fELF fake kernel library image: the decoder does not read it"
                .getBytes(StandardCharsets.US_ASCII);
        write(t, "valid-library-kernels", ChipCallable.builder().signature(IN, OUT, SCALAR)
                .child(12, CoreType.AIV, Kernel.fromLibrary(image, "saxpy_kernel"))
                .child(5, CoreType.AIC, Kernel.fromLibrary(image, "other_entry"))
                .child(9, CoreType.AIV, Kernel.noop())
                .program(Program.builder()
                        .submit(12, Param.tensor(0, IN, 0, 32), Param.tensor(1, OUT, 0, 32), Param.scalarArg(0))
                        .submit(5, Param.tensor(1, INOUT, 0, 32))
                        .submit(9)
                        .build()).build().bytes());
        write(t, "valid-subgraph-layers", ChipCallable.builder().signature(IN, INOUT, SCALAR)
                .child(1, CoreType.AIV, Kernel.vadds()).child(2, CoreType.AIV, Kernel.vcopy())
                .program(subgraphProgram()).build().bytes());
        write(t, "valid-orchestration-library", ChipCallable.builder().signature(IN, OUT)
                .child(1, CoreType.AIV, Kernel.vadd())
                .orchestrationLibrary(image, "my_orchestration").build().bytes());

        int h = 0;
        write(t, "invalid-bad-magic", patchInt(chain, h + CallableLayouts.ChipCallableHeader.MAGIC, 0x43435451));
        write(t, "invalid-total-size-below-header", patchInt(chain, CallableLayouts.ChipCallableHeader.TOTAL_SIZE, 40));
        write(t, "invalid-signature-blob-outside", patchInt(chain, 24 /* signature.offset */, chain.length));
        ChipCallable twoChildren = ChipCallable.builder().signature(IN, OUT)
                .child(1, CoreType.AIV, Kernel.vadd()).child(2, CoreType.AIV, Kernel.vcopy())
                .program(Program.builder().submit(2, Param.tensor(0, IN, 0, 8), Param.tensor(1, OUT, 0, 8)).build())
                .build();
        byte[] two = twoChildren.bytes();
        int children = le(two).getInt(32);
        write(t, "invalid-duplicate-func-id",
                patchInt(two, children + CallableLayouts.ChipCallableChild.SIZE /* child 1 func_id */, 1));
        int program = le(chain).getInt(40);
        // the program's first instruction (ALLOC_TENSOR local 0) allocates local 9 of 4
        write(t, "invalid-local-id-past-local-count", patchInt(chain, program + 16 + 8, 9));
        byte[] loops = tiled().bytes();
        int loopProgram = le(loops).getInt(40);
        // the inner loop's END_LOOP becomes a SCOPE_END: it would close a LOOP
        write(t, "invalid-mismatched-end", patchInt(loops,
                firstInstruction(loops, loopProgram, CallableLayouts.PTO_OP_END_LOOP), CallableLayouts.PTO_OP_SCOPE_END));
    }

    /** Offset in the callable of the first instruction with this opcode (opcode and param_count as one int). */
    private static int firstInstruction(byte[] callable, int program, int opcode) {
        ByteBuffer b = le(callable);
        int count = b.getInt(program + 4);
        for (int i = 0, at = program + 16; i < count; i++, at += b.getInt(at + 4)) {
            if (b.getShort(at) == opcode) {
                return at;
            }
        }
        throw new IllegalStateException("no instruction with opcode " + opcode);
    }

    /** fuzz_program.c's input: signature length, signature, counts, tensor sizes, program. */
    private static byte[] programInput(byte[] signature, int tensors, int scalars, long[] sizes, byte[] program) {
        ByteBuffer b = ByteBuffer.allocate(1 + signature.length + 2 + 4 * tensors + program.length)
                .order(ByteOrder.LITTLE_ENDIAN);
        b.put((byte) signature.length).put(signature).put((byte) tensors).put((byte) scalars);
        for (int i = 0; i < tensors; i++) {
            b.putInt((int) sizes[i]);
        }
        return b.put(program).array();
    }

    private static byte[] codes(org.ptorun.callable.Direction... ds) {
        byte[] b = new byte[ds.length];
        for (int i = 0; i < ds.length; i++) {
            b[i] = (byte) (ds[i] == SCALAR ? 0 : ds[i] == IN ? 1 : ds[i] == OUT ? 2 : 3);
        }
        return b;
    }

    /**
     * SUBGRAPH 0 (IN a, INOUT b, SCALAR k) { ALLOC 64; SCOPE { SUBMIT 1 (a[0, 64), local, k) };
     * SUBMIT 2 (a[0, 64), b[0, 64)) }; LOOP 3 { INVOKE 0 (x[64 i, +64), y[0, 64), s) }.
     */
    private static Program subgraphProgram() {
        Program.Builder b = Program.builder();
        Program.Subgraph layer = b.subgraph(0, java.util.List.of(IN, INOUT, SCALAR), body -> body
                .allocTensor(0, 64)
                .scope(s -> s.submit(1, Param.tensor(0, IN, 0, 64), Param.local(0, OUT, 0, 64), Param.scalarArg(0)))
                .submit(2, Param.tensor(0, IN, 0, 64), Param.tensor(1, INOUT, 0, 64)));
        return b.loop(3, (l, i) -> l.invoke(layer, Param.tensor(0, IN, i.times(64), Affine.of(64)),
                Param.tensor(1, INOUT, 0, 64), Param.scalarArg(0))).build();
    }

    private void programs() {
        String t = "program";
        byte[] chainProgram = vectorChain().program().orElseThrow().bytes();
        byte[] chainSig = codes(IN, IN, OUT);
        write(t, "valid-vector-chain", programInput(chainSig, 3, 0, new long[] {BYTES, BYTES, BYTES}, chainProgram));
        byte[] tiledSig = codes(IN, IN, INOUT, SCALAR, SCALAR);
        long[] tiledSizes = {512, 512, 256};
        byte[] tiled = tiledProgram().bytes();
        write(t, "valid-tiled-loops-scopes", programInput(tiledSig, 3, 2, tiledSizes, tiled));
        write(t, "valid-empty-program", programInput(new byte[0], 0, 0, new long[0], Program.builder().build().bytes()));
        write(t, "valid-zero-trip-loop", programInput(codes(IN, OUT), 2, 0, new long[] {16, 16}, Program.builder()
                .loop(0, (b, i) -> b.submit(1, Param.tensor(0, IN, i.times(1L << 40), Affine.of(16))))
                .submit(1, Param.tensor(1, OUT, 0, 16)).build().bytes()));

        byte[] strided = stridedProgram().bytes();
        write(t, "valid-strided-tiles", programInput(codes(IN, OUT), 2, 0, new long[] {11 * 37 * 4, 11 * 37 * 4},
                strided));
        write(t, "invalid-strided-view-past-tensor", programInput(codes(IN, OUT), 2, 0,
                new long[] {11 * 37 * 4 - 4, 11 * 37 * 4}, strided)); // x one element short
        write(t, "invalid-view-past-tensor",
                programInput(tiledSig, 3, 2, new long[] {512, 448, 256}, tiled)); // the last tile of b is missing
        write(t, "invalid-too-many-scalars", programInput(tiledSig, 3, 129, tiledSizes, tiled));
        write(t, "invalid-alloc-refused", programInput(codes(OUT), 1, 0, new long[] {8}, Program.builder()
                .allocTensor(0, 1L << 31).submit(1, Param.local(0, IN, 0, 8), Param.tensor(0, OUT, 0, 8))
                .build().bytes()));
        byte[] layers = subgraphProgram().bytes();
        write(t, "valid-subgraph-layers", programInput(codes(IN, INOUT, SCALAR), 2, 1, new long[] {192, 64}, layers));
        write(t, "invalid-subgraph-boundary-past-tensor",
                programInput(codes(IN, INOUT, SCALAR), 2, 1, new long[] {128, 64}, layers)); // the third layer's x
        write(t, "invalid-truncated", programInput(chainSig, 3, 0, new long[] {BYTES, BYTES, BYTES},
                Arrays.copyOf(chainProgram, chainProgram.length - 8)));
    }

    // ---- run arguments -------------------------------------------------------------

    /** fuzz_run_args.c's input: the counts, the signature's counts, the tensors as prepare writes them. */
    private static byte[] runArgsInput(TaskArgs args, int signatureTensors, int signatureScalars) {
        ByteBuffer block = ByteBuffer.allocate(Layouts.ChipStorageTaskArgs.SIZE).order(ByteOrder.LITTLE_ENDIAN);
        long[] next = {HOST_BASE};
        args.writeTo(block, (i, tensor) -> {
            long at = next[0];
            next[0] += (tensor.byteSize() + 0xfff) & ~0xfffL;
            return at;
        });
        int tensorBytes = args.tensorCount() * Layouts.ChipTensor.SIZE;
        ByteBuffer in = ByteBuffer.allocate(12 + tensorBytes).order(ByteOrder.LITTLE_ENDIAN);
        in.putInt(block.getInt(Layouts.ChipStorageTaskArgs.TENSOR_COUNT));
        in.putInt(block.getInt(Layouts.ChipStorageTaskArgs.SCALAR_COUNT));
        in.putShort((short) signatureTensors).putShort((short) signatureScalars);
        in.put(block.array(), Layouts.ChipStorageTaskArgs.TENSORS, tensorBytes);
        return in.array();
    }

    private static int tensorField(int index, int field) {
        return 12 + index * Layouts.ChipTensor.SIZE + field;
    }

    private void runArgs() {
        String t = "run_args";
        TaskArgs three = TaskArgs.of(Tensor.of(new float[N]), Tensor.of(new float[N]), Tensor.of(new float[N]));
        byte[] threeIn = runArgsInput(three, 3, 0);
        write(t, "valid-three-vectors", threeIn);
        TaskArgs mixed = TaskArgs.of(
                Tensor.of(new float[64], 4, 8).withStrides(16, 1).withDType(DType.I32),
                Tensor.of(new byte[100], 100).withShape(90).withStartOffset(10),
                Tensor.of(new long[6], 2, 3),
                Tensor.of(new short[0]),
                Tensor.of(new float[2 * 3 * 4 * 5 * 2], 2, 3, 4, 5, 2));
        mixed.scalar(7).scalarF32(1.5f).scalarF64(-2.25);
        write(t, "valid-strides-offsets-dtypes", runArgsInput(mixed, 5, 3));
        // a device tensor as prepare writes it: child_memory set, its device address inside the
        // fuzz target's device memory (a DeviceBuffer needs a live chip to exist)
        byte[] device = runArgsInput(TaskArgs.of(Tensor.of(new float[N])), 1, 0);
        device = patchLong(device, tensorField(0, Layouts.ChipTensor.ADDR), FUZZ_DEVICE_BASE + 0x100);
        write(t, "valid-child-memory", patchByte(device, tensorField(0, Layouts.ChipTensor.CHILD_MEMORY), 1));

        write(t, "invalid-count-mismatch", runArgsInput(three, 2, 0));
        write(t, "invalid-too-many-tensors", patchInt(threeIn, 0, 257));
        write(t, "invalid-dtype", patchByte(threeIn, tensorField(1, Layouts.ChipTensor.DTYPE), 10));
        write(t, "invalid-zero-stride", patchInt(threeIn, tensorField(2, Layouts.ChipTensor.STRIDES), 0));
        write(t, "invalid-size-too-small", patchLong(threeIn, tensorField(0, Layouts.ChipTensor.SIZE_FIELD), BYTES - 1));
        write(t, "invalid-null-address", patchLong(threeIn, tensorField(0, Layouts.ChipTensor.ADDR), 0));
        write(t, "invalid-wraps-around", patchLong(threeIn, tensorField(2, Layouts.ChipTensor.ADDR), -BYTES));
        write(t, "invalid-shape-overflow", patchLong(threeIn, tensorField(0, Layouts.ChipTensor.START_OFFSET), -1L));
        write(t, "invalid-child-memory-outside-device",
                patchByte(threeIn, tensorField(1, Layouts.ChipTensor.CHILD_MEMORY), 1));
    }

    // ---- call configs --------------------------------------------------------------

    private static byte[] config(CallConfig c) {
        ByteBuffer b = ByteBuffer.allocate(Layouts.CallConfig.SIZE).order(ByteOrder.LITTLE_ENDIAN);
        c.writeTo(b, 0);
        return b.array();
    }

    private void callConfigs() {
        String t = "call_config";
        byte[] def = config(CallConfig.DEFAULT);
        write(t, "valid-default", def);
        write(t, "valid-diagnostics", config(CallConfig.builder().enableTrace(true).enableDepGraph(true)
                .outputPrefix("/tmp/ptorun-fuzz/out").build()));
        write(t, "valid-rings-threads-blocks", config(CallConfig.builder().aicpuThreadNum(4).blockDim(24)
                .timeoutMs(1).ringTaskWindow(0, 4).ringTaskWindow(3, 1L << 30).ringHeap(1024).ringDepPool(2, 4)
                .ringDepPool(1, Integer.MAX_VALUE).build()));

        // valid for a5 (7 AICPU threads), refused by an a2a3 library
        write(t, "invalid-threads-above-a2a3", config(CallConfig.builder().aicpuThreadNum(7).build()));
        write(t, "invalid-one-thread", patchInt(def, Layouts.CallConfig.AICPU_THREAD_NUM, 1));
        write(t, "invalid-block-dim", patchInt(def, Layouts.CallConfig.BLOCK_DIM, 25));
        write(t, "invalid-negative-timeout", patchInt(def, Layouts.CallConfig.TIMEOUT_MS, -1));
        write(t, "invalid-window-not-power-of-two", patchLong(def, Layouts.CallConfig.RING_TASK_WINDOW + 8, 6));
        write(t, "invalid-small-heap", patchLong(def, Layouts.CallConfig.RING_HEAP + 16, 1023));
        write(t, "invalid-dep-pool-too-big", patchLong(def, Layouts.CallConfig.RING_DEP_POOL + 24, 1L << 31));
        byte[] unterminated = def.clone();
        Arrays.fill(unterminated, Layouts.CallConfig.OUTPUT_PREFIX, Layouts.CallConfig.SIZE, (byte) 'p');
        write(t, "invalid-prefix-unterminated", unterminated);
        write(t, "invalid-diagnostics-without-prefix", patchInt(def, Layouts.CallConfig.ENABLE_DUMP_ARGS, 1));
    }
}

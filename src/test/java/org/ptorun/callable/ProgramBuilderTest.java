package org.ptorun.callable;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.ptorun.callable.Direction.IN;
import static org.ptorun.callable.Direction.INOUT;
import static org.ptorun.callable.Direction.OUT;
import static org.ptorun.callable.Direction.SCALAR;

import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.ptorun.internal.CallableLayouts;

/**
 * The program instructions of [3/8] (ALLOC_TENSOR, LOOP/END_LOOP, SCOPE_BEGIN/END,
 * local views, affine offsets, sizes and scalars), kernel libraries and orchestration
 * libraries: bytes at the offsets of include/ptorun/chip_callable.h (literal numbers),
 * and every check the builders make.
 */
class ProgramBuilderTest {

    private static ByteBuffer le(byte[] b) {
        return ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN);
    }

    // ---- Affine ----------------------------------------------------------------------------

    @Test
    void affineExpressionsComposeEvaluateAndPrint() {
        Affine a = Affine.of(64).plus(256, 0).plus(Affine.loopVar(1).times(4));
        assertThat(a.base()).isEqualTo(64);
        assertThat(a.coef(0)).isEqualTo(256);
        assertThat(a.coef(1)).isEqualTo(4);
        assertThat(a.coef(2)).isZero();
        assertThat(a.deepestLoopUsed()).isEqualTo(1);
        assertThat(a.isConstant()).isFalse();
        assertThat(a.evaluate(2, 3)).isEqualTo(64 + 512 + 12);
        assertThat(a.toString()).isEqualTo("64 + 256*i0 + 4*i1");
        assertThat(Affine.loopVar(2).times(-3).plus(5).toString()).isEqualTo("5 - 3*i2");
        assertThat(Affine.loopVar(0).toString()).isEqualTo("i0");
        assertThat(Affine.of(-7).toString()).isEqualTo("-7");
        assertThat(Affine.of(3).isConstant()).isTrue();
        assertThat(a.times(2)).isEqualTo(Affine.of(128).plus(512, 0).plus(8, 1));
        assertThatThrownBy(() -> Affine.loopVar(4)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("loop depth 4 is outside 0..3");
        assertThatThrownBy(() -> Affine.of(Long.MAX_VALUE).plus(1)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("overflows");
        assertThatThrownBy(() -> Affine.loopVar(0).times(Long.MAX_VALUE).times(2))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("overflows");
    }

    // ---- bytes --------------------------------------------------------------------------------

    /** ALLOC 3 (96 B); LOOP 5 { SCOPE { SUBMIT 1 (local view i0-affine, arg view, affine scalar) } }. */
    private static Program nested() {
        return Program.builder()
                .allocTensor(3, 96)
                .loop(5, (p, i) -> p.scope(s -> s.submit(1,
                        Param.local(3, INOUT, Affine.zero(), Affine.of(16).plus(8, 0)),
                        Param.tensor(0, IN, i.times(32).plus(4), Affine.of(32)),
                        Param.scalar(i.plus(100)))))
                .build();
    }

    @Test
    void allocLoopScopeAndAffineParamsAreEncodedAtTheHeaderOffsets() {
        Program program = nested();
        ByteBuffer b = le(program.bytes());
        assertThat(program.instructionCount()).isEqualTo(6);
        assertThat(program.localCount()).isEqualTo(4);
        assertThat(program.taskCount()).isEqualTo(5);
        // PtoProgramHeader
        assertThat(b.getInt(0)).isEqualTo(0x47505450);
        assertThat(b.getInt(4)).isEqualTo(6);                     // instruction_count
        assertThat(b.getInt(8)).isEqualTo(4);                     // local_count: highest id + 1
        assertThat(b.getInt(12)).isZero();
        // ALLOC_TENSOR: PtoAllocInsn, 24 bytes
        int at = 16;
        assertThat(b.getShort(at)).isEqualTo((short) 2);
        assertThat(b.getShort(at + 2)).isZero();
        assertThat(b.getInt(at + 4)).isEqualTo(24);
        assertThat(b.getInt(at + 8)).isEqualTo(3);                // local_id
        assertThat(b.getInt(at + 12)).isZero();                   // reserved
        assertThat(b.getLong(at + 16)).isEqualTo(96);             // bytes
        // LOOP: PtoLoopInsn, 16 bytes
        at += 24;
        assertThat(b.getShort(at)).isEqualTo((short) 3);
        assertThat(b.getInt(at + 4)).isEqualTo(16);
        assertThat(b.getLong(at + 8)).isEqualTo(5);               // count
        // SCOPE_BEGIN: head only
        at += 16;
        assertThat(b.getShort(at)).isEqualTo((short) 5);
        assertThat(b.getShort(at + 2)).isZero();
        assertThat(b.getInt(at + 4)).isEqualTo(8);
        // SUBMIT with 3 params
        at += 8;
        assertThat(b.getShort(at)).isEqualTo((short) 1);
        assertThat(b.getShort(at + 2)).isEqualTo((short) 3);
        assertThat(b.getInt(at + 4)).isEqualTo(16 + 3 * 904);
        assertThat(b.getInt(at + 8)).isEqualTo(1);
        int local = at + 16;
        assertThat(b.get(local)).isEqualTo((byte) 1);             // LOCAL_TENSOR
        assertThat(b.get(local + 1)).isEqualTo((byte) 3);         // INOUT
        assertThat(b.getInt(local + 4)).isEqualTo(3);             // local id
        assertThat(b.getLong(local + 16)).isZero();               // offset.base
        assertThat(b.getLong(local + 80)).isEqualTo(16);          // size.base
        assertThat(b.getLong(local + 88)).isEqualTo(8);           // size.coef[0]
        assertThat(b.getLong(local + 96)).isZero();               // size.coef[1]
        int arg = local + 904;
        assertThat(b.get(arg)).isEqualTo((byte) 0);               // ARG_TENSOR
        assertThat(b.getLong(arg + 16)).isEqualTo(4);             // offset.base
        assertThat(b.getLong(arg + 24)).isEqualTo(32);            // offset.coef[0]
        assertThat(b.getLong(arg + 32)).isZero();                 // offset.coef[1]
        assertThat(b.getLong(arg + 80)).isEqualTo(32);            // size.base
        int scalar = arg + 904;
        assertThat(b.get(scalar)).isEqualTo((byte) 4);            // SCALAR_AFFINE
        assertThat(b.get(scalar + 1)).isEqualTo((byte) 0);        // direction SCALAR
        assertThat(b.getLong(scalar + 8)).isZero();               // imm
        assertThat(b.getLong(scalar + 16)).isEqualTo(100);        // the value: offset.base
        assertThat(b.getLong(scalar + 24)).isEqualTo(1);          // offset.coef[0]
        assertThat(b.getLong(scalar + 80)).isZero();              // size unused
        // SCOPE_END, END_LOOP
        at += 16 + 3 * 904;
        assertThat(b.getShort(at)).isEqualTo((short) 6);
        assertThat(b.getInt(at + 4)).isEqualTo(8);
        assertThat(b.getShort(at + 8)).isEqualTo((short) 4);
        assertThat(b.getInt(at + 12)).isEqualTo(8);
        assertThat(at + 16).isEqualTo(b.capacity());
    }

    @Test
    void beginEndFormsEncodeLikeTheLambdaFormsAndCountTasks() {
        Program explicit = Program.builder()
                .allocTensor(3, 96)
                .beginLoop(5).beginScope()
                .submit(1, Param.local(3, INOUT, Affine.zero(), Affine.of(16).plus(8, 0)),
                        Param.tensor(0, IN, Affine.loopVar(0).times(32).plus(4), Affine.of(32)),
                        Param.scalar(Affine.loopVar(0).plus(100)))
                .endScope().endLoop()
                .build();
        assertThat(explicit.bytes()).isEqualTo(nested().bytes());
        Program counted = Program.builder()
                .submit(0)
                .loop(3, (p, i) -> p.loop(4, (q, j) -> q.submit(0).submit(0)).submit(0))
                .loop(0, (p, i) -> p.submit(0))
                .build();
        assertThat(counted.taskCount()).isEqualTo(1 + 3 * (4 * 2 + 1));
        assertThat(counted.instructionCount()).isEqualTo(1 + 1 + 1 + 2 + 1 + 1 + 1 + 1 + 1 + 1);
    }

    // ---- builder checks --------------------------------------------------------------------------

    @Test
    void loopsAndScopesMustBalanceAndNestAtMostFourDeep() {
        assertThatThrownBy(() -> Program.builder().beginLoop(2).build())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("unbalanced program: the LOOP at instruction 0 is never closed");
        assertThatThrownBy(() -> Program.builder().submit(0).beginScope().build())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("the SCOPE_BEGIN at instruction 1 is never closed");
        assertThatThrownBy(() -> Program.builder().endLoop())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("closes nothing");
        assertThatThrownBy(() -> Program.builder().beginLoop(1).beginScope().endLoop())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("endLoop() would close the SCOPE_BEGIN opened at instruction 1");
        assertThatThrownBy(() -> Program.builder().beginScope().beginLoop(1).endScope())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("endScope() would close the LOOP opened at instruction 1");
        Program.Builder four = Program.builder().beginLoop(1).beginLoop(1).beginLoop(1).beginLoop(1);
        assertThatThrownBy(() -> four.beginLoop(1))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("loops nest at most 4 deep");
        Program.Builder scopes = Program.builder().beginScope().beginScope().beginScope().beginScope();
        assertThatThrownBy(scopes::beginScope)
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("scopes nest at most 4 deep");
        assertThatThrownBy(() -> Program.builder().beginLoop(-1))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("loop count is >= 0");
        assertThatThrownBy(() -> Program.builder().loopVar()).isInstanceOf(IllegalStateException.class);
        // four loops and four scopes interleaved are fine
        Program.LoopBody innermost = (g, l) -> g.scope(h -> h.submit(0, Param.scalar(l)));
        Program.LoopBody third = (e, k) -> e.scope(f -> f.loop(2, innermost));
        Program.LoopBody second = (c, j) -> c.scope(d -> d.loop(1, third));
        Program deep = Program.builder().loop(1, (a, i) -> a.scope(b -> b.loop(1, second))).build();
        assertThat(deep.taskCount()).isEqualTo(2);
    }

    @Test
    void loopVariablesAreUsableOnlyInsideTheirLoops() {
        assertThatThrownBy(() -> Program.builder().submit(0, Param.scalar(Affine.loopVar(0))))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("uses loop variable i0 but only 0 loop(s) enclose it");
        assertThatThrownBy(() -> Program.builder().loop(2, (p, i) -> p
                .submit(0, Param.tensor(0, IN, Affine.loopVar(1), Affine.of(4)))))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("the view offset i1 uses loop variable i1 but only 1 loop(s) enclose it");
        assertThatThrownBy(() -> Program.builder().loop(2, (p, i) -> p
                .submit(0, Param.tensor(0, IN, Affine.zero(), Affine.of(4).plus(4, 2)))))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("the view size");
    }

    @Test
    void viewsMustStayNonNegativeOverTheLoopsAndInsideTheirLocals() {
        assertThatThrownBy(() -> Program.builder().loop(3, (p, i) -> p
                .submit(0, Param.tensor(0, IN, Affine.of(8).plus(-8, 0), Affine.of(4)))))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("can have a negative view offset (-8)");
        assertThatThrownBy(() -> Program.builder().loop(3, (p, i) -> p
                .submit(0, Param.tensor(0, IN, Affine.zero(), Affine.of(4).plus(-4, 0)))))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("or size (-4)");
        // the same views are fine in loops that never reach the bad values
        Program.builder().loop(2, (p, i) -> p.submit(0, Param.tensor(0, IN, Affine.of(8).plus(-8, 0), Affine.of(4))));
        Program.builder().loop(0, (p, i) -> p.submit(0, Param.tensor(0, IN, Affine.of(8).plus(-80, 0), Affine.of(4))));
        // locals: the builder knows their bytes
        assertThatThrownBy(() -> Program.builder().allocTensor(0, 64).loop(4, (p, i) -> p
                .submit(0, Param.local(0, OUT, i.times(16), Affine.of(20)))))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("views up to byte 68 of local tensor 0, which has 64 bytes");
        Program.builder().allocTensor(0, 64).loop(4, (p, i) -> p.submit(0, Param.local(0, OUT, i.times(16), Affine.of(16))));
        assertThatThrownBy(() -> Param.tensor(0, IN, -1, 4)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> Param.local(0, IN, Affine.of(-1), Affine.of(4))).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> Param.local(256, IN, 0, 4)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("local tensor id 256 is outside 0..255");
        assertThatThrownBy(() -> Param.local(0, Direction.SCALAR, 0, 4)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void localsAreAllocatedOnceBeforeUseAndDieWithTheirScope() {
        assertThatThrownBy(() -> Program.builder().allocTensor(256, 4))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("outside 0..255");
        assertThatThrownBy(() -> Program.builder().allocTensor(0, 0))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("positive size");
        assertThatThrownBy(() -> Program.builder().allocTensor(1, 4).allocTensor(1, 4))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("local tensor 1 is allocated a second time (first at instruction 0)");
        assertThatThrownBy(() -> Program.builder().submit(0, Param.local(2, IN, 0, 4)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("uses local tensor 2 before its allocTensor");
        assertThatThrownBy(() -> Program.builder().scope(s -> s.allocTensor(0, 8)).submit(0, Param.local(0, IN, 0, 8)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("uses local tensor 0 after the end of the scope opened at instruction 0");
        assertThatThrownBy(() -> Program.builder().loop(0, (p, i) -> p.allocTensor(0, 8))
                .submit(0, Param.local(0, IN, 0, 8)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("inside the LOOP at instruction 0, which runs 0 times");
        // a scope that a loop repeats allocates its locals in every iteration (one iteration's memory)
        Program perIteration = Program.builder()
                .loop(2, (p, i) -> p.scope(s -> s.loop(3, (q, j) -> q.allocTensor(0, 8)))).build();
        assertThat(perIteration.localCount()).isEqualTo(1);
        // a loop inside the allocating scope is fine, and so is a scope that no loop repeats
        Program.builder().scope(s -> s.loop(3, (q, j) -> q.allocTensor(0, 8))).loop(2, (p, i) -> p.allocTensor(1, 8));
        // allocated inside a loop, used after it; allocated in an outer scope, used after an inner one ended
        Program ok = Program.builder()
                .loop(2, (p, i) -> p.allocTensor(0, 8))
                .submit(0, Param.local(0, IN, 0, 8))
                .scope(s -> s.allocTensor(1, 8).scope(t -> t.allocTensor(2, 8)).submit(0, Param.local(1, OUT, 0, 8)))
                .build();
        assertThat(ok.localCount()).isEqualTo(3);
    }

    @Test
    void theCallableBuilderChecksLocalAndAffineParamsAgainstKernels() {
        Program p = Program.builder().allocTensor(0, 64)
                .loop(4, (b, i) -> b.submit(0, Param.tensor(0, IN, i.times(16), Affine.of(16)),
                        Param.local(0, OUT, i.times(16), Affine.of(16)), Param.scalar(i)))
                .build();
        ChipCallable c = ChipCallable.builder().signature(IN).child(0, Kernel.vadds()).program(p).build();
        assertThat(c.program()).contains(p);
        assertThatThrownBy(() -> ChipCallable.builder().signature(IN).child(0, Kernel.vadd()).program(p).build())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("instruction 2: parameter 1 of kernel vadd is IN, not OUT local0[16*i0, +16)");
        assertThatThrownBy(() -> ChipCallable.builder().signature(IN).child(1, Kernel.vadds()).program(p).build())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("instruction 2 submits func_id 0, which no child binds");
    }

    @Test
    void theFullBuiltInSetCarriesItsParameterListsAndCoreTypes() {
        assertThat(Kernel.builtinNames()).containsExactly("noop", "vcopy", "vfill", "vadd", "vadds", "vmul", "vmuls",
                "vsub", "vdiv", "vmax", "vexp", "vrelu", "reduce_sum", "reduce_max", "softmax_rows", "gemm_tile", "tile_add",
                "allreduce_sum", "allgather", "reduce_scatter", "broadcast");
        assertThat(Kernel.gemmTile().coreType()).contains(CoreType.AIC);
        assertThat(Kernel.gemmTile().parameters()).contains(java.util.List.of(IN, IN, INOUT, SCALAR, SCALAR, SCALAR));
        assertThat(Kernel.tileAdd().parameters()).contains(java.util.List.of(IN, INOUT));
        assertThat(Kernel.allreduceSum().parameters()).contains(java.util.List.of(INOUT, SCALAR));
        assertThat(Kernel.allgather().parameters()).contains(java.util.List.of(IN, OUT, SCALAR));
        assertThat(Kernel.reduceScatter().parameters()).contains(java.util.List.of(IN, OUT, SCALAR));
        assertThat(Kernel.broadcast().parameters()).contains(java.util.List.of(INOUT, SCALAR, SCALAR));
        assertThat(Kernel.broadcast().coreType()).contains(CoreType.AIV);
        assertThat(Kernel.softmaxRows().parameters()).contains(java.util.List.of(IN, OUT, SCALAR));
        assertThat(Kernel.reduceSum().parameters()).contains(java.util.List.of(IN, OUT));
        assertThat(Kernel.reduceMax().parameters()).contains(java.util.List.of(IN, OUT));
        assertThat(Kernel.reduceMax().parameterForms())
                .contains(java.util.List.of(java.util.List.of(IN, OUT), java.util.List.of(IN, OUT, SCALAR)));
        assertThat(Kernel.gemmTile().parameterForms()).contains(java.util.List.of(
                java.util.List.of(IN, IN, INOUT, SCALAR, SCALAR, SCALAR), java.util.List.of(IN, IN, INOUT)));
        assertThat(Kernel.softmaxRows().parameterForms())
                .contains(java.util.List.of(java.util.List.of(IN, OUT, SCALAR), java.util.List.of(IN, OUT)));
        assertThat(Kernel.vadd().parameterForms()).contains(java.util.List.of(java.util.List.of(IN, IN, OUT)));
        for (Kernel k : new Kernel[] {Kernel.vsub(), Kernel.vdiv(), Kernel.vmax()}) {
            assertThat(k.parameters()).contains(java.util.List.of(IN, IN, OUT));
            assertThat(k.coreType()).contains(CoreType.AIV);
        }
        assertThat(Kernel.vexp().parameters()).contains(java.util.List.of(IN, OUT));
        assertThat(Kernel.vrelu().isBuiltin()).isTrue();
        assertThatThrownBy(() -> ChipCallable.builder().signature(IN, IN, INOUT).child(0, CoreType.AIV, Kernel.gemmTile())
                .program(Program.builder().build()).build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("runs on AIC, not AIV");
        assertThatThrownBy(() -> ChipCallable.builder().signature(IN, IN, OUT).child(0, Kernel.gemmTile())
                .program(Program.builder().submit(0, Param.tensor(0, IN, 0, 4), Param.tensor(1, IN, 0, 4),
                        Param.tensor(2, OUT, 0, 4), Param.scalar(1), Param.scalar(1), Param.scalar(1)).build()).build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("parameter 2 of kernel gemm_tile is INOUT");
    }

    // ---- libraries ---------------------------------------------------------------------------------

    @Test
    void kernelLibrariesTravelAsImagesWithTheirEntrySymbolOncePerDistinctImage(@TempDir Path dir) throws Exception {
        Path lib = dir.resolve("libk.so");
        byte[] image = {1, 2, 3, 4, 5};
        Files.write(lib, image);
        Kernel saxpy = Kernel.fromLibrary(lib, "saxpy");
        Files.write(lib, new byte[] {9}); // read at fromLibrary: later changes do not matter
        assertThat(saxpy.isBuiltin()).isFalse();
        assertThat(saxpy.image()).hasValueSatisfying(i -> assertThat(i).containsExactly(image));
        assertThat(saxpy.coreType()).isEmpty();
        assertThatThrownBy(() -> ChipCallable.builder().child(0, saxpy))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("core type of kernel 'saxpy' is not known")
                .hasMessageContaining("child(0, CoreType.AIV, kernel)").hasMessageContaining("withSignature");
        Kernel fail = Kernel.fromLibrary(image, "always_fail");
        ChipCallable c = ChipCallable.builder().signature(IN, INOUT, SCALAR)
                .child(4, CoreType.AIV, saxpy)
                .child(6, CoreType.AIC, fail)
                .child(8, Kernel.vadd())
                .program(Program.builder().build())
                .build();
        ByteBuffer b = le(c.bytes());
        // signature 56..59, children at 64 (3 x 32), names at 160: "saxpy" "always_fail" "vadd" (20 bytes)
        assertThat(b.getInt(32)).isEqualTo(64);
        int child0 = 64;
        assertThat(b.getInt(child0)).isEqualTo(4);
        assertThat(b.get(child0 + 4)).isEqualTo((byte) 1);          // AIV
        assertThat(b.get(child0 + 5)).isEqualTo((byte) 1);          // source_kind LIBRARY
        assertThat(b.getInt(child0 + 8)).isEqualTo(160);            // name.offset
        assertThat(b.getInt(child0 + 12)).isEqualTo(5);             // "saxpy"
        assertThat(b.getInt(child0 + 16)).isEqualTo(184);           // image.offset: 180 aligned to 8
        assertThat(b.getInt(child0 + 20)).isEqualTo(5);             // image.size
        int child1 = 96;
        assertThat(b.get(child1 + 4)).isEqualTo((byte) 0);          // AIC
        assertThat(b.get(child1 + 5)).isEqualTo((byte) 1);
        assertThat(b.getInt(child1 + 8)).isEqualTo(165);
        assertThat(b.getInt(child1 + 12)).isEqualTo(11);
        assertThat(b.getInt(child1 + 16)).as("the same image is stored once").isEqualTo(184);
        int child2 = 128;
        assertThat(b.get(child2 + 5)).isEqualTo((byte) 0);          // BUILTIN
        assertThat(b.getLong(child2 + 16)).isZero();                // no image
        assertThat(new String(c.bytes(), 160, 20, StandardCharsets.US_ASCII)).isEqualTo("saxpyalways_failvadd");
        assertThat(new byte[] {b.get(184), b.get(185), b.get(186), b.get(187), b.get(188)}).containsExactly(image);
        assertThat(b.getInt(40)).as("the program after the image, 8-aligned").isEqualTo(192);
        assertThat(b.getInt(8)).isEqualTo(192 + 16);

        Kernel declared = saxpy.withSignature(CoreType.AIV, IN, INOUT, SCALAR);
        assertThatThrownBy(() -> ChipCallable.builder().signature(IN, INOUT, SCALAR).child(0, declared)
                .program(Program.builder().submit(0, Param.tensor(0, IN, 0, 4), Param.tensor(1, IN, 0, 4),
                        Param.scalarArg(0)).build()).build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("parameter 1 of kernel saxpy is INOUT");
        assertThatThrownBy(() -> Kernel.vadd().withSignature(CoreType.AIV)).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> Kernel.fromLibrary(dir.resolve("missing.so"), "k"))
                .isInstanceOf(UncheckedIOException.class).hasMessageContaining("missing.so");
        assertThatThrownBy(() -> Kernel.fromLibrary(new byte[0], "k")).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> Kernel.fromLibrary(image, "bad symbol")).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void anOrchestrationLibraryReplacesTheProgram(@TempDir Path dir) throws Exception {
        Path lib = dir.resolve("libo.so");
        byte[] image = new byte[13];
        image[0] = 0x7f;
        Files.write(lib, image);
        ChipCallable c = ChipCallable.builder().signature(IN, IN, INOUT)
                .child(0, Kernel.vadd())
                .orchestrationLibrary(lib, "repeat_vadd")
                .build();
        assertThat(c.program()).isEmpty();
        assertThat(c.orchestrationLibrary()).hasValueSatisfying(o -> {
            assertThat(o.entry()).isEqualTo("repeat_vadd");
            assertThat(o.image()).containsExactly(image);
        });
        ByteBuffer b = le(c.bytes());
        assertThat(b.getShort(6)).isEqualTo((short) 1);             // orchestration_kind LIBRARY
        // signature 56..58; child at 64; names at 96: "vadd" then the entry "repeat_vadd" at 100
        assertThat(b.getInt(48)).isEqualTo(100);                    // orchestration_entry.offset
        assertThat(b.getInt(52)).isEqualTo(11);
        assertThat(new String(c.bytes(), 100, 11, StandardCharsets.US_ASCII)).isEqualTo("repeat_vadd");
        assertThat(b.getInt(40)).isEqualTo(112);                    // orchestration: the image, 8-aligned
        assertThat(b.getInt(44)).isEqualTo(13);
        assertThat(b.get(112)).isEqualTo((byte) 0x7f);
        assertThat(b.getInt(8)).isEqualTo(125).isEqualTo(c.size());

        assertThatThrownBy(() -> ChipCallable.builder().orchestrationLibrary(image, "o")
                .program(Program.builder().build()).build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("not both");
        assertThatThrownBy(() -> ChipCallable.builder().child(0, Kernel.noop()).build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("orchestrationLibrary");
        assertThatThrownBy(() -> ChipCallable.builder().orchestrationLibrary(new byte[0], "o"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("empty");
        assertThatThrownBy(() -> ChipCallable.builder().orchestrationLibrary(image, ""))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("entry symbol");
    }

    @Test
    void aManualScopeTakesPredecessorOrdinalsAndNothingElseDoes() {
        Program p = Program.builder().scope(ScopeMode.MANUAL, m -> m.loop(3, (b, i) -> b
                .submitAfter(1, List.of(i.plus(-1)), Param.tensor(0, OUT, 0, 4)))).build();
        ByteBuffer b = ByteBuffer.wrap(p.bytes()).order(ByteOrder.LITTLE_ENDIAN);
        int scope = CallableLayouts.PtoProgramHeader.SIZE;
        assertThat(b.getShort(scope)).isEqualTo((short) CallableLayouts.PTO_OP_SCOPE_BEGIN_MANUAL);
        int submit = scope + CallableLayouts.PtoInsnHead.SIZE + CallableLayouts.PtoLoopInsn.SIZE;
        int after = submit + CallableLayouts.PtoSubmitInsn.SIZE + CallableLayouts.PtoProgramParam.SIZE;
        assertThat(b.getInt(submit + CallableLayouts.PtoInsnHead.SIZE_BYTES))
                .isEqualTo(after - submit + CallableLayouts.PtoAffine.SIZE);
        assertThat(b.getShort(submit + CallableLayouts.PtoSubmitInsn.AFTER_COUNT)).isEqualTo((short) 1);
        assertThat(b.getLong(after + CallableLayouts.PtoAffine.BASE)).isEqualTo(-1);
        assertThat(b.getLong(after + CallableLayouts.PtoAffine.COEF)).isEqualTo(1);
        assertThatThrownBy(() -> Program.builder().scope(s -> s.submitAfter(1, List.of(Affine.zero()))))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("only a MANUAL scope takes").hasMessageContaining("AUTO, opened at instruction 0");
        assertThatThrownBy(() -> Program.builder().submitAfter(1, List.of()))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("the innermost scope here is none");
        assertThatThrownBy(() -> Program.builder().scope(ScopeMode.MANUAL, s -> s.submitAfter(1,
                List.of(Affine.loopVar(0))))).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("uses loop variable i0 but only 0 loop(s) enclose it");
    }
}

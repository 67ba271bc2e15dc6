package org.ptorun.callable;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.ptorun.callable.Direction.IN;
import static org.ptorun.callable.Direction.INOUT;
import static org.ptorun.callable.Direction.OUT;
import static org.ptorun.callable.Direction.SCALAR;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.ptorun.DType;

/**
 * Sub-graphs in the program builder: SUBGRAPH and INVOKE at the offsets of
 * include/ptorun/chip_callable.h (literal numbers), the task count, and every misuse
 * the builders refuse.
 */
class SubgraphBuilderTest {

    private static ByteBuffer le(byte[] b) {
        return ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN);
    }

    /**
     * SUBGRAPH 0 (IN a, INOUT b, SCALAR k) { ALLOC local0 100; SUBMIT 1 (a[0, 64) IN, local0 OUT, k);
     * SUBMIT 2 (local0 IN, b[0, 64) INOUT) }; LOOP 3 { INVOKE 0 (x[64 i, +64) IN, y[0, 64) INOUT, s) }.
     */
    static Program layers() {
        Program.Builder b = Program.builder();
        Program.Subgraph layer = b.subgraph(0, List.of(IN, INOUT, SCALAR), body -> body
                .allocTensor(0, 100)
                .submit(1, Param.tensor(0, IN, 0, 64), Param.local(0, OUT, 0, 64), Param.scalarArg(0))
                .submit(2, Param.local(0, IN, 0, 64), Param.tensor(1, INOUT, 0, 64)));
        return b.loop(3, (p, i) -> p.invoke(layer, Param.tensor(0, IN, i.times(64), Affine.of(64)),
                        Param.tensor(1, INOUT, 0, 64), Param.scalarArg(0)))
                .build();
    }

    @Test
    void subgraphAndInvokeAreEncodedAtTheHeaderOffsets() {
        Program program = layers();
        ByteBuffer b = le(program.bytes());
        assertThat(program.instructionCount()).isEqualTo(4); // SUBGRAPH, LOOP, INVOKE, END_LOOP
        assertThat(program.localCount()).isZero();             // the body's local is the body's
        assertThat(program.taskCount()).isEqualTo(3 * (2 + 2));
        assertThat(b.getInt(4)).isEqualTo(4);

        // SUBGRAPH at 16: head, id, boundary_count, reserved, directions padded to 8, the body
        int body = 2 * 904 + 16 + 3 * 904 + 16 + 24 + 16; // SUBMITs, ALLOC, header
        assertThat(b.getShort(16)).isEqualTo((short) 8);
        assertThat(b.getShort(18)).isZero();
        assertThat(b.getInt(20)).isEqualTo(16 + 8 + body);
        assertThat(b.getInt(24)).isZero();                       // subgraph_id
        assertThat(b.getShort(28)).isEqualTo((short) 3);         // boundary_count
        assertThat(b.getShort(30)).isZero();
        assertThat(new byte[] {b.get(32), b.get(33), b.get(34), b.get(35), b.get(39)})
                .containsExactly(1, 3, 0, 0, 0);                 // IN, INOUT, SCALAR, padding
        // the body: a program of its own
        assertThat(b.getInt(40)).isEqualTo(0x47505450);
        assertThat(b.getInt(44)).isEqualTo(3);                   // ALLOC, SUBMIT, SUBMIT
        assertThat(b.getInt(48)).isEqualTo(1);                   // its local_count
        assertThat(b.getShort(56)).isEqualTo((short) 2);         // ALLOC_TENSOR
        assertThat(b.getLong(56 + 16)).isEqualTo(100);
        int submit = 56 + 24;
        assertThat(b.getShort(submit)).isEqualTo((short) 1);
        assertThat(b.getInt(submit + 8)).isEqualTo(1);           // func_id
        assertThat(b.get(submit + 16 + 904 * 2)).isEqualTo((byte) 3); // SCALAR_ARG
        assertThat(b.getInt(submit + 16 + 904 * 2 + 4)).isZero();     // boundary scalar 0

        // LOOP 3, then INVOKE: head (param_count 3), subgraph_id, reserved, the params as SUBMIT's
        int loop = 16 + 16 + 8 + body;
        assertThat(b.getShort(loop)).isEqualTo((short) 3);
        assertThat(b.getLong(loop + 8)).isEqualTo(3);
        int invoke = loop + 16;
        assertThat(b.getShort(invoke)).isEqualTo((short) 9);
        assertThat(b.getShort(invoke + 2)).isEqualTo((short) 3);
        assertThat(b.getInt(invoke + 4)).isEqualTo(16 + 3 * 904);
        assertThat(b.getInt(invoke + 8)).isZero();
        assertThat(b.getInt(invoke + 12)).isZero();
        int p0 = invoke + 16;
        assertThat(b.get(p0)).isEqualTo((byte) 0);               // ARG_TENSOR
        assertThat(b.get(p0 + 1)).isEqualTo((byte) 1);           // IN
        assertThat(b.getLong(p0 + 16 + 8)).isEqualTo(64);        // offset coef[0]
        assertThat(b.getLong(p0 + 80)).isEqualTo(64);            // size base
        assertThat(b.get(p0 + 904 + 1)).isEqualTo((byte) 3);     // INOUT
        assertThat(b.get(p0 + 2 * 904)).isEqualTo((byte) 3);     // SCALAR_ARG
        assertThat(b.getShort(invoke + 16 + 3 * 904)).isEqualTo((short) 4); // END_LOOP
        assertThat(program.size()).isEqualTo(invoke + 16 + 3 * 904 + 8);
    }

    @Test
    void theInvokeReachesIntoArgumentsAndTheBodyIntoItsBoundaryOnly() {
        ChipCallable c = ChipCallable.builder().signature(IN, INOUT, OUT, SCALAR)
                .child(1, Kernel.vadds()).child(2, Kernel.vcopy())
                .program(layers()).build();
        // x is viewed up to byte 192 by the INVOKEs, y up to 64; the body's views are the boundary's
        assertThat(c.tensorExtents().bytesNeeded(0)).isEqualTo(192);
        assertThat(c.tensorExtents().bytesNeeded(1)).isEqualTo(64);
        assertThat(c.tensorExtents().bytesNeeded(2)).isZero();
    }

    @Test
    void subgraphIdsAreTheSmallestFreeOneByDefaultAndTaskCountsAddUp() {
        Program.Builder b = Program.builder();
        Program.Subgraph s0 = b.subgraph(List.of(INOUT), body -> body.submit(2, Param.tensor(0, INOUT, 0, 64)));
        Program.Subgraph s1 = b.subgraph(List.of(INOUT), body -> body
                .loop(4, (l, i) -> l.submit(2, Param.tensor(0, INOUT, i.times(16), Affine.of(16)))));
        assertThat(s0.id()).isZero();
        assertThat(s1.id()).isEqualTo(1);
        assertThat(s1.taskCount()).isEqualTo(6);
        Program p = b.invoke(s0, Param.tensor(0, INOUT, 0, 64))
                .loop(2, (l, i) -> l.scope(s -> s.invoke(s1, Param.tensor(0, INOUT, 0, 64))))
                .loop(0, (l, i) -> l.invoke(s1, Param.tensor(0, INOUT, 0, 64)))
                .build();
        assertThat(p.taskCount()).isEqualTo(3 + 2 * 6);
    }

    @Test
    void theBuilderRefusesMisplacedSubgraphsAndInvokes() {
        Program.Builder b = Program.builder();
        Program.Subgraph s = b.subgraph(0, List.of(IN, OUT), body -> body
                .submit(2, Param.tensor(0, IN, 0, 64), Param.tensor(1, OUT, 0, 64)));
        assertThatThrownBy(() -> b.subgraph(0, List.of(IN), body -> { }))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("sub-graph 0 is defined a second time");
        assertThatThrownBy(() -> b.subgraph(64, List.of(IN), body -> { }))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("sub-graph id 64 is outside 0..63");
        assertThatThrownBy(() -> b.subgraph(1, List.of(), body -> { }))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("sub-graph 1 has 0 boundary parameters; a sub-graph has 1..31");
        assertThatThrownBy(() -> b.subgraph(1, java.util.Collections.nCopies(32, IN), body -> { }))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("sub-graph 1 has 32 boundary parameters; a sub-graph has 1..31");
        assertThatThrownBy(() -> b.subgraph(1, List.of(SCALAR, IN), body -> { }))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("sub-graph 1 boundary parameter 1 is a IN tensor after a scalar");
        b.beginLoop(2);
        assertThatThrownBy(() -> b.subgraph(1, List.of(IN), body -> { }))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("a sub-graph is defined at top level, but the LOOP opened at instruction 1 is open");
        b.endLoop();
        b.beginScope(ScopeMode.MANUAL);
        assertThatThrownBy(() -> b.invoke(s, Param.tensor(0, IN, 0, 64), Param.tensor(1, OUT, 0, 64)))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("invoke(sub-graph 0) inside the MANUAL scope opened at instruction 3");
        b.endScope();
        assertThatThrownBy(() -> b.invoke(s, Param.tensor(0, IN, 0, 64)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("(INVOKE sub-graph 0) passes 1 parameters; the sub-graph's boundary has 2");
        assertThatThrownBy(() -> b.invoke(s, Param.tensor(0, IN, 0, 64), Param.tensor(1, INOUT, 0, 64)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("parameter 1 is ")
                .hasMessageContaining("the sub-graph's boundary parameter 1 is a OUT tensor view");
        assertThatThrownBy(() -> b.invoke(s, Param.tensor(0, IN, 0, 64), Param.scalar(1)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("the sub-graph's boundary parameter 1 is a OUT tensor view");
        Program.Subgraph foreign = Program.builder().subgraph(0, List.of(IN), body -> { });
        assertThatThrownBy(() -> b.invoke(foreign, Param.tensor(0, IN, 0, 64)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("was defined by another program builder");
        // an INVOKE's views are checked as a SUBMIT's
        assertThatThrownBy(() -> b.invoke(s, Param.local(3, IN, 0, 64), Param.tensor(1, OUT, 0, 64)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("instruction 5 (INVOKE) parameter 0 uses local tensor 3 before its allocTensor");
        assertThatThrownBy(() -> b.loop(2, (l, i) -> l.invoke(s, Param.tensor(0, IN, i.times(-8), Affine.of(8)),
                        Param.tensor(1, OUT, 0, 64))))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("can have a negative view offset");
    }

    @Test
    void aBodyRefusesWhatABodyCannotDo() {
        Program.Builder b = Program.builder();
        Program.Subgraph s = b.subgraph(0, List.of(IN, OUT), body -> { });
        assertThatThrownBy(() -> b.subgraph(1, List.of(IN), body -> body.subgraph(2, List.of(IN), inner -> { })))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("sub-graph 1's body cannot define a sub-graph: sub-graphs do not nest");
        assertThatThrownBy(() -> b.subgraph(1, List.of(IN, OUT), body -> body.invoke(s, Param.tensor(0, IN, 0, 8),
                        Param.tensor(1, OUT, 0, 8))))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("sub-graph 1's body cannot invoke sub-graph 0");
        assertThatThrownBy(() -> b.subgraph(1, List.of(IN), body -> body.beginScope(ScopeMode.MANUAL)))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("sub-graph 1's body cannot open a MANUAL scope");
        assertThatThrownBy(() -> b.subgraph(1, List.of(IN), body -> body.submitAfter(2, List.of(Affine.of(0)),
                        Param.tensor(0, IN, 0, 8))))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("sub-graph 1's body cannot name predecessors (submitAfter)");
        assertThatThrownBy(() -> b.subgraph(1, List.of(IN, OUT), body -> body.submit(2, Param.tensor(1, IN, 0, 8),
                        Param.tensor(0, OUT, 0, 8))))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("sub-graph 1 instruction 0 (SUBMIT) parameter 1 writes boundary tensor 0, which the"
                        + " sub-graph's boundary declares IN");
        assertThatThrownBy(() -> b.subgraph(1, List.of(IN, OUT), body -> body.submit(2, Param.tensor(2, IN, 0, 8))))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("views boundary tensor 2 but the sub-graph's boundary has 2 tensors");
        assertThatThrownBy(() -> b.subgraph(1, List.of(IN, SCALAR), body -> body.submit(2, Param.tensor(0, IN, 0, 8),
                        Param.scalarArg(1))))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("reads boundary scalar 1 but the sub-graph's boundary has 1 scalars");
        assertThatThrownBy(() -> b.subgraph(1, List.of(IN), body -> body.beginLoop(2)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("unbalanced program");
        assertThatThrownBy(() -> b.subgraph(1, List.of(IN), body -> b.submit(2, Param.tensor(0, IN, 0, 8))))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("the body of sub-graph 1 appended instructions to the program defining it");
        // the failed definitions took no id: 1 is still free
        assertThat(b.subgraph(List.of(IN), body -> { }).id()).isEqualTo(1);
    }

    @Test
    void anInvokeWhoseKnownViewTheBodyOverrunsIsRefused() {
        Program.Builder b = Program.builder();
        Program.Subgraph s = b.subgraph(0, List.of(IN, OUT), body -> body
                .submit(2, Param.tensor(0, IN, 64, 64), Param.tensor(1, OUT, 0, 64)));
        assertThatThrownBy(() -> b.invoke(s, Param.tensor(0, IN, 0, 100), Param.tensor(1, OUT, 0, 64)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("instruction 1 (INVOKE sub-graph 0) parameter 0 is a view of 100 bytes, but the"
                        + " body reaches byte 128 of boundary tensor 0 (sub-graph 0 instruction 0 (SUBMIT func_id 2)"
                        + " parameter 0 ends at byte 128)");
        // a strided view of constant extents: 2 rows of 8 f32 in a 16-wide matrix spans 64 + 32 bytes
        View rows = View.arg(0, DType.F32, 8, 16).slice(0, 0, 2).slice(1, 0, 8);
        assertThatThrownBy(() -> b.invoke(s, Param.in(rows), Param.tensor(1, OUT, 0, 64)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("is a view of 96 bytes");
        // the sizes the body needs, flat or strided, pass; a size that varies with the loop is checked at its least
        b.invoke(s, Param.tensor(0, IN, 0, 128), Param.tensor(1, OUT, 0, 64));
        b.invoke(s, Param.in(View.arg(0, DType.F32, 8, 16).slice(0, 0, 2)), Param.tensor(1, OUT, 0, 64));
        assertThatThrownBy(() -> b.loop(3, (l, i) -> l.invoke(s, Param.tensor(0, IN, Affine.zero(),
                        i.times(64).plus(64)), Param.tensor(1, OUT, 0, 64))))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("is a view of 64 bytes");
    }

    @Test
    void theCallableBuilderChecksInvokesAgainstTheSignatureAndBodiesAgainstTheChildren() {
        Program.Builder b = Program.builder();
        Program.Subgraph s = b.subgraph(0, List.of(INOUT, SCALAR), body -> body
                .submit(1, Param.tensor(0, IN, 0, 64), Param.tensor(0, OUT, 64, 64), Param.scalarArg(0)));
        Program writesIn = b.invoke(s, Param.tensor(0, INOUT, 0, 128), Param.scalar(3)).build();
        assertThatThrownBy(() -> ChipCallable.builder().signature(IN, SCALAR).child(1, Kernel.vadds())
                .program(writesIn).build())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("instruction 1 (INVOKE sub-graph 0) parameter 0 writes tensor argument 0, which the"
                        + " signature declares IN");
        assertThatThrownBy(() -> ChipCallable.builder().signature(INOUT, SCALAR).child(2, Kernel.vadds())
                .program(writesIn).build())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("sub-graph 0 instruction 0 submits func_id 1, which no child binds");
        assertThatThrownBy(() -> ChipCallable.builder().signature(INOUT, SCALAR).child(1, Kernel.vcopy())
                .program(writesIn).build())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("sub-graph 0 instruction 0: kernel vcopy takes 2 parameters");
        // the body's scalar 0 is the boundary's, not the signature's: a signature without scalars is fine
        Program.Builder b2 = Program.builder();
        Program.Subgraph s2 = b2.subgraph(0, List.of(INOUT, SCALAR), body -> body
                .submit(1, Param.tensor(0, IN, 0, 64), Param.tensor(0, OUT, 64, 64), Param.scalarArg(0)));
        Program ok = b2.invoke(s2, Param.tensor(0, INOUT, 0, 128), Param.scalar(3)).build();
        assertThat(ChipCallable.builder().signature(INOUT).child(1, Kernel.vadds()).program(ok).build()).isNotNull();
        assertThatThrownBy(() -> {
            Program.Builder b3 = Program.builder();
            Program.Subgraph s3 = b3.subgraph(0, List.of(INOUT, SCALAR), body -> body
                    .submit(1, Param.tensor(0, IN, 0, 64), Param.tensor(0, OUT, 64, 64), Param.scalarArg(0)));
            ChipCallable.builder().signature(INOUT).child(1, Kernel.vadds())
                    .program(b3.invoke(s3, Param.tensor(0, INOUT, 0, 128), Param.scalarArg(0)).build()).build();
        }).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("instruction 1 (INVOKE sub-graph 0) parameter 1 reads scalar argument 0 but the"
                        + " signature has 0 scalars");
    }
}

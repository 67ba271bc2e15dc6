package org.ptorun.callable;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.ptorun.callable.Direction.IN;
import static org.ptorun.callable.Direction.INOUT;
import static org.ptorun.callable.Direction.OUT;
import static org.ptorun.callable.Direction.SCALAR;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/**
 * ChipCallable bytes at every offset of include/ptorun/chip_callable.h (literal numbers
 * from the header, so the test pins the format, not our constants), and every check the
 * builder makes.
 */
class ChipCallableTest {

    private static ChipCallable sample() {
        return ChipCallable.builder()
                .signature(IN, IN, OUT, SCALAR)
                .child(5, CoreType.AIV, Kernel.vadd())
                .child(9, Kernel.vadds())
                .program(Program.builder()
                        .submit(5, Param.tensor(0, IN, 0, 16), Param.tensor(1, IN, 16, 16), Param.tensor(2, OUT, 0, 16))
                        .submit(9, Param.tensor(0, IN, 0, 16), Param.tensor(2, OUT, 16, 16), Param.scalarArg(0))
                        .submit(9, Param.tensor(1, IN, 0, 8), Param.tensor(2, INOUT, 32, 8), Param.scalarF32(2.5f))
                        .build())
                .build();
    }

    private static ByteBuffer le(byte[] b) {
        return ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN);
    }

    @Test
    void headerSignatureChildrenAndNames() {
        ChipCallable c = sample();
        ByteBuffer b = le(c.bytes());
        assertThat(b.capacity()).isEqualTo(8344).isEqualTo(c.size());
        // ChipCallableHeader, 56 bytes
        assertThat(b.getInt(0)).isEqualTo(0x43435450);             // magic "PTCC"
        assertThat(new String(c.bytes(), 0, 4, StandardCharsets.US_ASCII)).isEqualTo("PTCC");
        assertThat(b.getShort(4)).isEqualTo((short) 2);             // format_version
        assertThat(b.getShort(6)).isEqualTo((short) 0);             // orchestration_kind PROGRAM
        assertThat(b.getInt(8)).isEqualTo(8344);                    // total_size
        assertThat(b.getInt(12)).isEqualTo(2);                      // child_count
        assertThat(b.getInt(16)).isEqualTo(4);                      // signature_length
        assertThat(b.getInt(20)).isZero();                          // reserved
        assertThat(b.getInt(24)).isEqualTo(56);                     // signature.offset
        assertThat(b.getInt(28)).isEqualTo(4);                      // signature.size
        assertThat(b.getInt(32)).isEqualTo(64);                     // children.offset (8-aligned)
        assertThat(b.getInt(36)).isEqualTo(64);                     // children.size = 2 * 32
        assertThat(b.getInt(40)).isEqualTo(144);                    // orchestration.offset (8-aligned)
        assertThat(b.getInt(44)).isEqualTo(8200);                   // orchestration.size
        assertThat(b.getLong(48)).isZero();                         // orchestration_entry {0,0}
        // signature: one PtoArgDirection byte each
        assertThat(new byte[] {b.get(56), b.get(57), b.get(58), b.get(59)}).containsExactly(1, 1, 2, 0);
        assertThat(new byte[] {b.get(60), b.get(61), b.get(62), b.get(63)}).containsExactly(0, 0, 0, 0);
        // ChipCallableChild 0 at 64
        assertThat(b.getInt(64)).isEqualTo(5);                      // func_id
        assertThat(b.get(68)).isEqualTo((byte) 1);                  // core_type AIV
        assertThat(b.get(69)).isEqualTo((byte) 0);                  // source_kind BUILTIN
        assertThat(b.getShort(70)).isZero();                        // reserved
        assertThat(b.getInt(72)).isEqualTo(128);                    // name.offset
        assertThat(b.getInt(76)).isEqualTo(4);                      // name.size ("vadd", no NUL)
        assertThat(b.getLong(80)).isZero();                         // image {0,0}
        assertThat(b.getLong(88)).isZero();                         // resolved_addr
        // child 1 at 96
        assertThat(b.getInt(96)).isEqualTo(9);
        assertThat(b.get(100)).isEqualTo((byte) 1);
        assertThat(b.getInt(104)).isEqualTo(132);
        assertThat(b.getInt(108)).isEqualTo(5);
        assertThat(b.getLong(112)).isZero();
        assertThat(b.getLong(120)).isZero();
        assertThat(new String(c.bytes(), 128, 9, StandardCharsets.US_ASCII)).isEqualTo("vaddvadds");
        for (int pad = 137; pad < 144; pad++) {
            assertThat(b.get(pad)).isZero();
        }
    }

    @Test
    void programHeaderSubmitsAndParams() {
        ByteBuffer b = le(sample().bytes());
        int p = 144;
        // PtoProgramHeader
        assertThat(b.getInt(p)).isEqualTo(0x47505450);             // "PTPG"
        assertThat(b.getInt(p + 4)).isEqualTo(3);                   // instruction_count
        assertThat(b.getInt(p + 8)).isZero();                       // local_count
        assertThat(b.getInt(p + 12)).isZero();                      // reserved
        int insn = p + 16;
        long[][] views = {{0, 0, 16}, {1, 16, 16}, {2, 0, 16}};
        int[] dirs = {1, 1, 2};
        // SUBMIT 1: PtoSubmitInsn
        assertThat(b.getShort(insn)).isEqualTo((short) 1);          // opcode SUBMIT
        assertThat(b.getShort(insn + 2)).isEqualTo((short) 3);      // param_count
        assertThat(b.getInt(insn + 4)).isEqualTo(16 + 3 * 904);      // size_bytes
        assertThat(b.getInt(insn + 8)).isEqualTo(5);                // func_id
        assertThat(b.getInt(insn + 12)).isZero();                   // reserved
        for (int i = 0; i < 3; i++) {
            int at = insn + 16 + i * 904;
            assertThat(b.get(at)).isEqualTo((byte) 0);              // kind ARG_TENSOR
            assertThat(b.get(at + 1)).isEqualTo((byte) dirs[i]);    // direction
            assertThat(b.getShort(at + 2)).isZero();                // dtype, ndims: a byte view
            assertThat(b.getInt(at + 4)).isEqualTo((int) views[i][0]); // index
            assertThat(b.getLong(at + 8)).isZero();                 // imm
            assertThat(b.getLong(at + 16)).isEqualTo(views[i][1]);  // offset.base
            for (int k = 0; k < 4; k++) {
                assertThat(b.getLong(at + 24 + 8 * k)).isZero();    // offset.coef[k]
                assertThat(b.getLong(at + 88 + 8 * k)).isZero();    // size.coef[k]
            }
            assertThat(b.getLong(at + 80)).isEqualTo(views[i][2]);  // size.base
        }
        // SUBMIT 2: the third param is argument scalar 0
        insn += 2728;
        assertThat(b.getShort(insn)).isEqualTo((short) 1);
        assertThat(b.getInt(insn + 8)).isEqualTo(9);
        int scalarArg = insn + 16 + 2 * 904;
        assertThat(b.get(scalarArg)).isEqualTo((byte) 3);           // SCALAR_ARG
        assertThat(b.get(scalarArg + 1)).isEqualTo((byte) 0);       // direction SCALAR
        assertThat(b.getInt(scalarArg + 4)).isZero();
        assertThat(b.getLong(scalarArg + 16)).isZero();
        // SUBMIT 3: INOUT view and an f32 immediate
        insn += 2728;
        assertThat(b.get(insn + 16 + 904 + 1)).isEqualTo((byte) 3);  // INOUT
        int imm = insn + 16 + 2 * 904;
        assertThat(b.get(imm)).isEqualTo((byte) 2);                 // SCALAR_IMM
        assertThat(b.getLong(imm + 8)).isEqualTo(Integer.toUnsignedLong(Float.floatToRawIntBits(2.5f)));
        assertThat(insn + 2728).isEqualTo(8344);
    }

    @Test
    void theSignatureSplitsIntoTensorDirectionsAndScalars() {
        ChipCallable c = sample();
        assertThat(c.signature()).containsExactly(IN, IN, OUT, SCALAR);
        assertThat(c.tensorDirections()).containsExactly(IN, IN, OUT);
        assertThat(c.tensorCount()).isEqualTo(3);
        assertThat(c.scalarCount()).isEqualTo(1);
        assertThat(c.children()).extracting(ChipCallable.Child::funcId).containsExactly(5, 9);
        assertThat(c.program().orElseThrow().instructionCount()).isEqualTo(3);
        byte[] copy = c.bytes();
        copy[0] = 0;
        assertThat(c.bytes()[0]).as("bytes() is a copy").isEqualTo((byte) 0x50);
    }

    @Test
    void anEmptyCallableWritesAbsentBlobsAsZero() {
        ChipCallable c = ChipCallable.builder().program(Program.builder().build()).build();
        ByteBuffer b = le(c.bytes());
        assertThat(b.capacity()).isEqualTo(56 + 16);
        assertThat(b.getInt(12)).isZero();
        assertThat(b.getInt(16)).isZero();
        assertThat(b.getLong(24)).as("signature {0,0}").isZero();
        assertThat(b.getLong(32)).as("children {0,0}").isZero();
        assertThat(b.getInt(40)).isEqualTo(56);
        assertThat(b.getInt(44)).isEqualTo(16);
        assertThat(b.getInt(56 + 4)).isZero();
    }

    @Test
    void theBuilderChecksFuncIdsAndSubmits() {
        Program usesSeven = Program.builder().submit(7).build();
        assertThatThrownBy(() -> ChipCallable.builder().child(1, Kernel.noop()).child(1, Kernel.noop())
                .program(Program.builder().build()).build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("func_id 1 is bound twice");
        assertThatThrownBy(() -> ChipCallable.builder().child(1, Kernel.noop()).program(usesSeven).build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("submits func_id 7");
        assertThatThrownBy(() -> ChipCallable.builder().child(4096, Kernel.noop()).program(Program.builder().build()).build())
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> Program.builder().submit(4096))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> ChipCallable.builder().child(1, Kernel.noop()).build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("program");
        assertThatThrownBy(() -> ChipCallable.builder().child(1, CoreType.AIC, Kernel.vadd())
                .program(Program.builder().build()).build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("runs on AIV");
        Param[] tooMany = new Param[33];
        java.util.Arrays.fill(tooMany, Param.scalar(0));
        assertThatThrownBy(() -> Program.builder().submit(0, tooMany))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("at most 32");
    }

    @Test
    void theBuilderChecksIndicesAndDirectionsAgainstTheSignature() {
        ChipCallable.Builder twoInOneOut = ChipCallable.builder().signature(IN, IN, OUT, SCALAR)
                .child(0, Kernel.vadd()).child(1, Kernel.vadds()).child(2, CoreType.AIV, Kernel.builtin("future_kernel"));
        assertThatThrownBy(() -> twoInOneOut.program(Program.builder()
                .submit(0, Param.tensor(0, IN, 0, 4), Param.tensor(1, IN, 0, 4), Param.tensor(3, OUT, 0, 4)).build())
                .build())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("views tensor argument 3 but the signature has 3 tensors");
        assertThatThrownBy(() -> twoInOneOut.program(Program.builder()
                .submit(0, Param.tensor(0, IN, 0, 4), Param.tensor(2, IN, 0, 4), Param.tensor(1, OUT, 0, 4)).build())
                .build())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("writes tensor argument 1, which the signature declares IN");
        assertThatThrownBy(() -> twoInOneOut.program(Program.builder()
                .submit(1, Param.tensor(0, IN, 0, 4), Param.tensor(2, OUT, 0, 4), Param.scalarArg(1)).build())
                .build())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("reads scalar argument 1 but the signature has 1 scalars");
        // an unknown built-in is not checked against a parameter list
        ChipCallable ok = twoInOneOut.program(Program.builder()
                .submit(2, Param.tensor(2, IN, 0, 4), Param.scalar(9)).build()).build();
        assertThat(ok.children()).hasSize(3);
        assertThatThrownBy(() -> ChipCallable.builder().signature(IN, SCALAR, OUT).program(Program.builder().build())
                .build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("tensor after a scalar");
    }

    @Test
    void theBuilderChecksSubmitsAgainstTheKernelParameterList() {
        ChipCallable.Builder b = ChipCallable.builder().signature(IN, IN, OUT).child(0, Kernel.vadd())
                .child(1, Kernel.vfill()).child(2, Kernel.noop());
        assertThatThrownBy(() -> b.program(Program.builder()
                .submit(0, Param.tensor(0, IN, 0, 4), Param.tensor(2, OUT, 0, 4)).build()).build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("vadd takes 3 parameters");
        assertThatThrownBy(() -> b.program(Program.builder()
                .submit(0, Param.tensor(0, IN, 0, 4), Param.scalar(1), Param.tensor(2, OUT, 0, 4)).build()).build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("parameter 1 of kernel vadd is IN");
        assertThatThrownBy(() -> b.program(Program.builder()
                .submit(0, Param.tensor(0, IN, 0, 4), Param.tensor(1, IN, 0, 4), Param.tensor(2, IN, 0, 4)).build())
                .build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("parameter 2 of kernel vadd is OUT");
        assertThatThrownBy(() -> b.program(Program.builder()
                .submit(1, Param.tensor(2, OUT, 0, 4), Param.tensor(0, IN, 0, 4)).build()).build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("vfill is SCALAR");
        assertThatThrownBy(() -> b.program(Program.builder().submit(2, Param.scalar(0)).build()).build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("noop takes 0 parameters");
        // an INOUT view satisfies both an IN and an OUT kernel parameter
        ChipCallable inout = ChipCallable.builder().signature(INOUT, IN).child(0, Kernel.vadd())
                .program(Program.builder().submit(0, Param.tensor(0, INOUT, 0, 4), Param.tensor(1, IN, 0, 4),
                        Param.tensor(0, INOUT, 0, 4)).build())
                .build();
        assertThat(inout.tensorDirections()).containsExactly(INOUT, IN);
    }

    @Test
    void paramsAndKernelsRefuseMalformedValues() {
        assertThatThrownBy(() -> Param.tensor(0, SCALAR, 0, 4)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> Param.tensor(-1, IN, 0, 4)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> Param.tensor(0, IN, -1, 4)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> Param.tensor(0, IN, 0, -4)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> Param.scalarArg(-1)).isInstanceOf(IllegalArgumentException.class);
        assertThat(Param.scalarF32(1f).imm()).isEqualTo(0x3F80_0000L);
        assertThatThrownBy(() -> Kernel.builtin("")).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> Kernel.builtin("k".repeat(129))).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> Kernel.builtin("a\0b")).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> Kernel.builtin("v add")).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> Kernel.builtin("vädd")).isInstanceOf(IllegalArgumentException.class);
        assertThat(Kernel.builtin("k".repeat(128)).parameters()).isEmpty();
        assertThat(Kernel.vmuls().parameters()).contains(java.util.List.of(IN, OUT, SCALAR));
        assertThat(Kernel.vcopy().coreType()).contains(CoreType.AIV);
        assertThatThrownBy(() -> ChipCallable.builder().child(0, Kernel.builtin("future_kernel")))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("core type");
        assertThat(Direction.INOUT.code()).isEqualTo(3);
        assertThat(CoreType.AIC.code()).isZero();
    }
}

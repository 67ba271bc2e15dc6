package org.ptorun.callable;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import org.ptorun.internal.CallableLayouts;

/**
 * A program orchestration: the bytecode a built-in interpreter runs to submit a run's
 * tasks (on the host for hbg, on the device for trb). Immutable; built with
 * {@link #builder()}. Supported now: SUBMIT. Tasks depend on every earlier task whose
 * views overlap theirs where one of the two writes, so submission order is program
 * order.
 *
 * <pre>{@code
 * Program p = Program.builder()
 *     .submit(0, Param.tensor(0, IN, 0, n * 4), Param.tensor(1, IN, 0, n * 4), Param.tensor(2, OUT, 0, n * 4))
 *     .build();
 * }</pre>
 */
public final class Program {

    /** One SUBMIT as written: for the callable builder's checks. */
    record Submit(int funcId, List<Param> params) {
    }

    private final byte[] bytes;
    private final List<Submit> submits;

    private Program(byte[] bytes, List<Submit> submits) {
        this.bytes = bytes;
        this.submits = submits;
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

    /** Instructions in the program. */
    public int instructionCount() {
        return submits.size();
    }

    List<Submit> submits() {
        return submits;
    }

    byte[] rawBytes() {
        return bytes;
    }

    /** Builds a {@link Program}; the callable it goes into checks it against its children and signature. */
    public static final class Builder {
        private final List<Submit> submits = new ArrayList<>();

        private Builder() {
        }

        /**
         * Appends {@code SUBMIT funcId params…}: one task running the child with that
         * func id on these parameters, in kernel parameter order.
         *
         * @throws IllegalArgumentException for a func id outside 0..4095 or more than 32 params
         */
        public Builder submit(int funcId, Param... params) {
            Objects.requireNonNull(params, "params");
            if (funcId < 0 || funcId > CallableLayouts.PTO_CALLABLE_MAX_FUNC_ID) {
                throw new IllegalArgumentException("func_id " + funcId + " is outside 0.."
                        + CallableLayouts.PTO_CALLABLE_MAX_FUNC_ID);
            }
            if (params.length > CallableLayouts.PTO_MAX_TASK_PARAMS) {
                throw new IllegalArgumentException("a task takes at most " + CallableLayouts.PTO_MAX_TASK_PARAMS
                        + " parameters, not " + params.length);
            }
            for (Param p : params) {
                Objects.requireNonNull(p, "param");
            }
            if (submits.size() == CallableLayouts.PTO_PROGRAM_MAX_INSNS) {
                throw new IllegalArgumentException("a program holds at most "
                        + CallableLayouts.PTO_PROGRAM_MAX_INSNS + " instructions");
            }
            submits.add(new Submit(funcId, List.copyOf(Arrays.asList(params))));
            return this;
        }

        /** Encodes the program. */
        public Program build() {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            ByteBuffer header = ByteBuffer.allocate(CallableLayouts.PtoProgramHeader.SIZE).order(ByteOrder.LITTLE_ENDIAN);
            header.putInt(CallableLayouts.PtoProgramHeader.MAGIC, CallableLayouts.PTO_PROGRAM_MAGIC);
            header.putInt(CallableLayouts.PtoProgramHeader.INSTRUCTION_COUNT, submits.size());
            header.putInt(CallableLayouts.PtoProgramHeader.LOCAL_COUNT, 0);
            header.putInt(CallableLayouts.PtoProgramHeader.RESERVED, 0);
            out.writeBytes(header.array());
            for (Submit s : submits) {
                out.writeBytes(encodeSubmit(s));
            }
            return new Program(out.toByteArray(), List.copyOf(submits));
        }

        private static byte[] encodeSubmit(Submit s) {
            int size = CallableLayouts.PtoSubmitInsn.SIZE + s.params().size() * CallableLayouts.PtoProgramParam.SIZE;
            ByteBuffer b = ByteBuffer.allocate(size).order(ByteOrder.LITTLE_ENDIAN);
            b.putShort(CallableLayouts.PtoInsnHead.OPCODE, (short) CallableLayouts.PTO_OP_SUBMIT);
            b.putShort(CallableLayouts.PtoInsnHead.PARAM_COUNT, (short) s.params().size());
            b.putInt(CallableLayouts.PtoInsnHead.SIZE_BYTES, size);
            b.putInt(CallableLayouts.PtoSubmitInsn.FUNC_ID, s.funcId());
            b.putInt(CallableLayouts.PtoSubmitInsn.RESERVED, 0);
            int at = CallableLayouts.PtoSubmitInsn.SIZE;
            for (Param p : s.params()) {
                b.put(at + CallableLayouts.PtoProgramParam.KIND, (byte) p.kind().code());
                b.put(at + CallableLayouts.PtoProgramParam.DIRECTION, (byte) p.direction().code());
                b.putShort(at + CallableLayouts.PtoProgramParam.RESERVED, (short) 0);
                b.putInt(at + CallableLayouts.PtoProgramParam.INDEX, p.index());
                b.putLong(at + CallableLayouts.PtoProgramParam.IMM, p.imm());
                // affine values: base only, every loop coefficient 0 (ByteBuffer.allocate zeroed them)
                b.putLong(at + CallableLayouts.PtoProgramParam.OFFSET + CallableLayouts.PtoAffine.BASE, p.offsetBytes());
                b.putLong(at + CallableLayouts.PtoProgramParam.SIZE_AFFINE + CallableLayouts.PtoAffine.BASE, p.sizeBytes());
                at += CallableLayouts.PtoProgramParam.SIZE;
            }
            return b.array();
        }
    }
}

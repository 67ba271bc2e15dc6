package org.ptorun.callable;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;
import org.ptorun.internal.CallableLayouts;

/**
 * The bytes of a program's instructions (include/ptorun/chip_callable.h), little-endian,
 * as {@link Program.Builder} appends them: the head of every kind, and SUBMIT, SUBGRAPH
 * and INVOKE whole.
 */
final class InstructionEncoding {

    private InstructionEncoding() {
    }

    static ByteBuffer insn(int opcode, int size) {
        ByteBuffer b = ByteBuffer.allocate(size).order(ByteOrder.LITTLE_ENDIAN);
        b.putShort(CallableLayouts.PtoInsnHead.OPCODE, (short) opcode);
        b.putShort(CallableLayouts.PtoInsnHead.PARAM_COUNT, (short) 0);
        b.putInt(CallableLayouts.PtoInsnHead.SIZE_BYTES, size);
        return b;
    }

    /** SUBGRAPH: head, id, boundary count, the directions padded to 8, the body program. */
    static byte[] encodeSubgraph(int id, List<Direction> boundary, byte[] body) {
        int dirsEnd = CallableLayouts.PtoSubgraphInsn.SIZE + ((boundary.size() + 7) & ~7);
        ByteBuffer b = insn(CallableLayouts.PTO_OP_SUBGRAPH, dirsEnd + body.length);
        b.putInt(CallableLayouts.PtoSubgraphInsn.SUBGRAPH_ID, id);
        b.putShort(CallableLayouts.PtoSubgraphInsn.BOUNDARY_COUNT, (short) boundary.size());
        for (int k = 0; k < boundary.size(); k++) {
            b.put(CallableLayouts.PtoSubgraphInsn.SIZE + k, (byte) boundary.get(k).code());
        }
        b.put(dirsEnd, body, 0, body.length);
        return b.array();
    }

    /** INVOKE: head (param_count = the boundary's), id, then the params encoded as SUBMIT's. */
    static byte[] encodeInvoke(int id, List<Param> params) {
        byte[] asSubmit = encodeSubmit(0, params, List.of());
        ByteBuffer b = ByteBuffer.wrap(asSubmit).order(ByteOrder.LITTLE_ENDIAN);
        b.putShort(CallableLayouts.PtoInsnHead.OPCODE, (short) CallableLayouts.PTO_OP_INVOKE);
        b.putInt(CallableLayouts.PtoInvokeInsn.SUBGRAPH_ID, id);
        b.putInt(CallableLayouts.PtoInvokeInsn.RESERVED, 0);
        return asSubmit;
    }

    static byte[] encodeSubmit(int funcId, List<Param> params, List<Affine> after) {
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
}

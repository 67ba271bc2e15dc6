package org.ptorun.internal;

/**
 * Sizes, offsets and constants of the ChipCallable binary format
 * (include/ptorun/chip_callable.h). Kept apart from {@link Layouts}, whose constants
 * are checked against the C compiler by the layout dump; these are checked by
 * ChipCallableTest against the values the header asserts.
 */
public final class CallableLayouts {

    private CallableLayouts() {
    }

    /** {@code PTO_CALLABLE_MAGIC} ("PTCC"). */
    public static final int PTO_CALLABLE_MAGIC = 0x43435450;
    public static final int PTO_CALLABLE_FORMAT_VERSION = 2;
    public static final long PTO_CALLABLE_MAX_BYTES = 256L << 20;
    public static final int PTO_CALLABLE_MAX_CHILDREN = 64;
    public static final int PTO_CALLABLE_MAX_SIGNATURE = 384;
    public static final int PTO_CALLABLE_MAX_NAME = 128;
    public static final int PTO_CALLABLE_MAX_FUNC_ID = 4095;

    /** {@code PTO_PROGRAM_MAGIC} ("PTPG"). */
    public static final int PTO_PROGRAM_MAGIC = 0x47505450;
    public static final int PTO_PROGRAM_MAX_LOOP_DEPTH = 4;
    /** format/chip_callable.h: scopes nest at most this deep. */
    public static final int PTO_PROGRAM_MAX_SCOPE_DEPTH = 4;
    public static final int PTO_PROGRAM_MAX_LOCALS = 256;
    public static final int PTO_PROGRAM_MAX_INSNS = 1 << 20;
    public static final int PTO_MAX_TASK_PARAMS = 32;

    /** {@code PtoOpcode} */
    public static final int PTO_OP_SUBMIT = 1;
    public static final int PTO_OP_ALLOC_TENSOR = 2;
    public static final int PTO_OP_LOOP = 3;
    public static final int PTO_OP_END_LOOP = 4;
    public static final int PTO_OP_SCOPE_BEGIN = 5;
    public static final int PTO_OP_SCOPE_END = 6;
    public static final int PTO_OP_SCOPE_BEGIN_MANUAL = 7;
    public static final int PTO_PROGRAM_MAX_AFTER = 32;
    public static final int PTO_OP_SUBGRAPH = 8;
    public static final int PTO_OP_INVOKE = 9;
    public static final int PTO_PROGRAM_MAX_SUBGRAPHS = 64;
    public static final int PTO_SUBGRAPH_LOCAL_ALIGN = 64;

    /** {@code PtoParamKind} */
    public static final int PTO_PARAM_ARG_TENSOR = 0;
    public static final int PTO_PARAM_LOCAL_TENSOR = 1;
    public static final int PTO_PARAM_SCALAR_IMM = 2;
    public static final int PTO_PARAM_SCALAR_ARG = 3;
    public static final int PTO_PARAM_SCALAR_AFFINE = 4;

    /** {@code PtoKernelSource} and {@code PtoOrchestrationKind} */
    public static final int PTO_KERNEL_BUILTIN = 0;
    public static final int PTO_KERNEL_LIBRARY = 1;
    public static final int PTO_ORCH_PROGRAM = 0;
    public static final int PTO_ORCH_LIBRARY = 1;

    public static final class PtoBlobRef {
        public static final int SIZE = 8;
        public static final int OFFSET = 0;
        public static final int SIZE_FIELD = 4;

        private PtoBlobRef() {
        }
    }

    public static final class ChipCallableHeader {
        public static final int SIZE = 56;
        public static final int MAGIC = 0;
        public static final int FORMAT_VERSION = 4;
        public static final int ORCHESTRATION_KIND = 6;
        public static final int TOTAL_SIZE = 8;
        public static final int CHILD_COUNT = 12;
        public static final int SIGNATURE_LENGTH = 16;
        public static final int RESERVED = 20;
        public static final int SIGNATURE = 24;
        public static final int CHILDREN = 32;
        public static final int ORCHESTRATION = 40;
        public static final int ORCHESTRATION_ENTRY = 48;

        private ChipCallableHeader() {
        }
    }

    public static final class ChipCallableChild {
        public static final int SIZE = 32;
        public static final int FUNC_ID = 0;
        public static final int CORE_TYPE = 4;
        public static final int SOURCE_KIND = 5;
        public static final int RESERVED = 6;
        public static final int NAME = 8;
        public static final int IMAGE = 16;
        public static final int RESOLVED_ADDR = 24;

        private ChipCallableChild() {
        }
    }

    public static final class PtoProgramHeader {
        public static final int SIZE = 16;
        public static final int MAGIC = 0;
        public static final int INSTRUCTION_COUNT = 4;
        public static final int LOCAL_COUNT = 8;
        public static final int RESERVED = 12;

        private PtoProgramHeader() {
        }
    }

    public static final class PtoInsnHead {
        public static final int SIZE = 8;
        public static final int OPCODE = 0;
        public static final int PARAM_COUNT = 2;
        public static final int SIZE_BYTES = 4;

        private PtoInsnHead() {
        }
    }

    public static final class PtoSubmitInsn {
        public static final int SIZE = 16;
        public static final int HEAD = 0;
        public static final int FUNC_ID = 8;
        public static final int AFTER_COUNT = 12;
        public static final int RESERVED = 14;

        private PtoSubmitInsn() {
        }
    }

    public static final class PtoSubgraphInsn {
        public static final int SIZE = 16;
        public static final int HEAD = 0;
        public static final int SUBGRAPH_ID = 8;
        public static final int BOUNDARY_COUNT = 12;
        public static final int RESERVED = 14;

        private PtoSubgraphInsn() {
        }
    }

    public static final class PtoInvokeInsn {
        public static final int SIZE = 16;
        public static final int HEAD = 0;
        public static final int SUBGRAPH_ID = 8;
        public static final int RESERVED = 12;

        private PtoInvokeInsn() {
        }
    }

    public static final class PtoAllocInsn {
        public static final int SIZE = 24;
        public static final int HEAD = 0;
        public static final int LOCAL_ID = 8;
        public static final int RESERVED = 12;
        public static final int BYTES = 16;

        private PtoAllocInsn() {
        }
    }

    public static final class PtoLoopInsn {
        public static final int SIZE = 16;
        public static final int HEAD = 0;
        public static final int COUNT = 8;

        private PtoLoopInsn() {
        }
    }

    public static final class PtoAffine {
        public static final int SIZE = 64;
        public static final int BASE = 0;
        public static final int COEF = 8;
        public static final int LO = 40;
        public static final int HI = 48;
        public static final int CLAMP = 56;
        public static final int RESERVED = 60;

        private PtoAffine() {
        }
    }

    public static final int PTO_AFFINE_HAS_LO = 1;
    public static final int PTO_AFFINE_HAS_HI = 2;
    public static final int PTO_VIEW_DIM_SELECTED = 1;
    public static final int PTO_VIEW_MAX_DIMS = 5;

    public static final class PtoViewDim {
        public static final int SIZE = 152;
        public static final int STRIDE = 0;
        public static final int BOUND = 8;
        public static final int OFFSET = 16;
        public static final int EXTENT = 80;
        public static final int FLAGS = 144;
        public static final int RESERVED = 148;

        private PtoViewDim() {
        }
    }

    public static final class PtoProgramParam {
        public static final int SIZE = 904;
        public static final int KIND = 0;
        public static final int DIRECTION = 1;
        public static final int DTYPE = 2;
        public static final int NDIMS = 3;
        public static final int INDEX = 4;
        public static final int IMM = 8;
        public static final int OFFSET = 16;
        public static final int SIZE_AFFINE = 80;
        public static final int DIMS = 144;

        private PtoProgramParam() {
        }
    }
}

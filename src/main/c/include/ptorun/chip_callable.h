/*
 * The ChipCallable binary format: the bytes handed to simpler_register_callable.
 * Little-endian, every multi-byte field naturally aligned, every reference a
 * {offset, size} pair in bytes from the start of the callable. Built in Java by
 * org.ptorun.callable.ChipCallable; validated completely at registration
 * (PTO_ERR_BAD_CALLABLE, never reading past total_size).
 *
 *   ChipCallableHeader
 *   signature        signature_length bytes, one PtoArgDirection per parameter
 *   children         child_count x ChipCallableChild
 *   blobs            names, kernel library images, the orchestration
 *
 * The orchestration is a program (PtoProgramHeader + instructions, below) or an
 * orchestration library image plus its entry symbol.
 */
#ifndef PTORUN_CHIP_CALLABLE_H
#define PTORUN_CHIP_CALLABLE_H

#include <stddef.h>
#include <stdint.h>

#include "ptorun/pto_tensor.h"

#define PTO_CALLABLE_MAGIC 0x43435450u          /* "PTCC" */
#define PTO_CALLABLE_FORMAT_VERSION 2u        /* the only version accepted */
#define PTO_CALLABLE_MAX_BYTES (256u << 20)
#define PTO_CALLABLE_MAX_CHILDREN 64u
#define PTO_CALLABLE_MAX_SIGNATURE 384u          /* 256 tensors + 128 scalars */
#define PTO_CALLABLE_MAX_NAME 128u               /* kernel names and entry symbols, no NUL */
#define PTO_CALLABLE_MAX_FUNC_ID 4095u

/* Direction of a parameter (signature entries, program and task parameters). */
typedef enum PtoArgDirection {
    PTO_ARG_SCALAR = 0,
    PTO_ARG_IN = 1,
    PTO_ARG_OUT = 2,
    PTO_ARG_INOUT = 3
} PtoArgDirection;

typedef enum PtoCoreType { PTO_CORE_AIC = 0, PTO_CORE_AIV = 1 } PtoCoreType;

typedef enum PtoKernelSource {
    PTO_KERNEL_BUILTIN = 0,   /* name is a built-in kernel of the AICore image */
    PTO_KERNEL_LIBRARY = 1    /* image is a kernel library, name its entry symbol */
} PtoKernelSource;

typedef enum PtoOrchestrationKind {
    PTO_ORCH_PROGRAM = 0,     /* orchestration is program bytecode */
    PTO_ORCH_LIBRARY = 1      /* orchestration is a library image + entry symbol */
} PtoOrchestrationKind;

typedef struct PtoBlobRef {
    uint32_t offset;          /* bytes from the start of the callable */
    uint32_t size;            /* bytes; {0,0} = absent */
} PtoBlobRef;

typedef struct ChipCallableHeader {
    uint32_t magic;               /* PTO_CALLABLE_MAGIC */
    uint16_t format_version;      /* PTO_CALLABLE_FORMAT_VERSION */
    uint16_t orchestration_kind;  /* PtoOrchestrationKind */
    uint32_t total_size;          /* bytes of the whole callable, header included */
    uint32_t child_count;         /* <= PTO_CALLABLE_MAX_CHILDREN */
    uint32_t signature_length;    /* parameters, <= PTO_CALLABLE_MAX_SIGNATURE */
    uint32_t reserved;            /* 0 */
    PtoBlobRef signature;         /* signature_length bytes */
    PtoBlobRef children;          /* child_count * sizeof(ChipCallableChild) bytes */
    PtoBlobRef orchestration;     /* program bytes, or orchestration library image */
    PtoBlobRef orchestration_entry; /* library: entry symbol; program: {0,0} */
} ChipCallableHeader;

typedef struct ChipCallableChild {
    uint32_t func_id;             /* unique within the callable, <= PTO_CALLABLE_MAX_FUNC_ID */
    uint8_t core_type;            /* PtoCoreType */
    uint8_t source_kind;          /* PtoKernelSource */
    uint16_t reserved;            /* 0 */
    PtoBlobRef name;              /* built-in kernel name or library entry symbol (no NUL) */
    PtoBlobRef image;             /* kernel library image; {0,0} for built-ins */
    uint64_t resolved_addr;       /* 0 in the caller's bytes; the platform writes the kernel's
                                     device address into its uploaded copy */
} ChipCallableChild;

/* ---- program orchestration ------------------------------------------------
 * A program is a PtoProgramHeader followed by instruction_count instructions.
 * Each instruction starts with PtoInsnHead; size_bytes covers the whole
 * instruction and is a multiple of 8. Loop variables are named by nesting
 * depth (0 = outermost enclosing LOOP). */

#define PTO_PROGRAM_MAGIC 0x47505450u            /* "PTPG" */
#define PTO_PROGRAM_MAX_LOOP_DEPTH 4u
#define PTO_PROGRAM_MAX_SCOPE_DEPTH 4u
#define PTO_PROGRAM_MAX_LOCALS 256u
#define PTO_PROGRAM_MAX_INSNS (1u << 20)
#define PTO_MAX_TASK_PARAMS 32u
#define PTO_PROGRAM_MAX_AFTER 32u                /* explicit predecessors of one SUBMIT */
#define PTO_PROGRAM_MAX_SUBGRAPHS 64u            /* sub-graph ids 0..63 (SUBGRAPH) */
/* A sub-graph's boundary parameters: one fewer than a task's, so that its entry
   and exit tasks carry every boundary view and the invocation's own block. */
#define PTO_SUBGRAPH_MAX_BOUNDARY (PTO_MAX_TASK_PARAMS - 1u)
#define PTO_SUBGRAPH_LOCAL_ALIGN 64u             /* alloc_tensor inside a sub-graph body: the block's alignment */

typedef enum PtoOpcode {
    PTO_OP_SUBMIT = 1,        /* PtoSubmitInsn + param_count x PtoProgramParam */
    PTO_OP_ALLOC_TENSOR = 2,  /* PtoAllocInsn: a run-scoped local tensor */
    PTO_OP_LOOP = 3,          /* PtoLoopInsn: repeat until the matching END_LOOP */
    PTO_OP_END_LOOP = 4,      /* head only */
    PTO_OP_SCOPE_BEGIN = 5,   /* head only */
    PTO_OP_SCOPE_END = 6,     /* head only */
    PTO_OP_SCOPE_BEGIN_MANUAL = 7, /* head only: a MANUAL scope (pto_orchestration.h), closed by SCOPE_END */
    PTO_OP_SUBGRAPH = 8,      /* PtoSubgraphInsn + boundary directions + body program: defines a sub-graph */
    PTO_OP_INVOKE = 9         /* PtoInvokeInsn + param_count x PtoProgramParam: submits a sub-graph */
} PtoOpcode;

typedef enum PtoParamKind {
    PTO_PARAM_ARG_TENSOR = 0,    /* view of argument tensor `index` */
    PTO_PARAM_LOCAL_TENSOR = 1,  /* view of local tensor `index` (ALLOC_TENSOR) */
    PTO_PARAM_SCALAR_IMM = 2,    /* the raw 64 bits of `imm` */
    PTO_PARAM_SCALAR_ARG = 3,    /* argument scalar `index` */
    PTO_PARAM_SCALAR_AFFINE = 4  /* the value of `offset` (e.g. a loop variable) */
} PtoParamKind;

/* base + sum(coef[d] * loop_var[d]) over the enclosing loops, then clamped:
   raised to `lo` when PTO_AFFINE_HAS_LO is set, lowered to `hi` when
   PTO_AFFINE_HAS_HI is set (lo <= hi when both are). A clamp lets one loop
   cover a dimension that is not a multiple of its tile: the last tile's
   extent is min(N - T*i, T). All-zero bytes are the constant 0. */
typedef struct PtoAffine {
    int64_t base;
    int64_t coef[PTO_PROGRAM_MAX_LOOP_DEPTH];
    int64_t lo;                   /* PTO_AFFINE_HAS_LO: max(value, lo) */
    int64_t hi;                   /* PTO_AFFINE_HAS_HI: min(value, hi) */
    uint32_t clamp;               /* PTO_AFFINE_HAS_LO | PTO_AFFINE_HAS_HI */
    uint32_t reserved;            /* 0 */
} PtoAffine;

#define PTO_AFFINE_HAS_LO 1u
#define PTO_AFFINE_HAS_HI 2u

#define PTO_VIEW_DIM_SELECTED 1u  /* PtoViewDim.flags: an index, not a range (extent 1, not passed on) */

/* One dimension of a strided view: elements offset .. offset + extent - 1 of
   a logical dimension of `bound` elements, `stride` elements apart. The
   interpreter checks 0 <= offset, 0 <= extent, offset + extent <= bound for
   every loop value, so a tile never overhangs into the next row. */
typedef struct PtoViewDim {
    int64_t stride;               /* elements, >= 0 */
    int64_t bound;                /* elements of the logical dimension, >= 0 */
    PtoAffine offset;             /* first element along the dim */
    PtoAffine extent;             /* elements along the dim; zero for a SELECTED dim (extent 1) */
    uint32_t flags;               /* PTO_VIEW_DIM_SELECTED */
    uint32_t reserved;            /* 0 */
} PtoViewDim;

typedef struct PtoProgramHeader {
    uint32_t magic;               /* PTO_PROGRAM_MAGIC */
    uint32_t instruction_count;   /* <= PTO_PROGRAM_MAX_INSNS */
    uint32_t local_count;         /* local tensors, <= PTO_PROGRAM_MAX_LOCALS */
    uint32_t reserved;            /* 0 */
} PtoProgramHeader;

typedef struct PtoInsnHead {
    uint16_t opcode;              /* PtoOpcode */
    uint16_t param_count;         /* SUBMIT, INVOKE: <= PTO_MAX_TASK_PARAMS; else 0 */
    uint32_t size_bytes;          /* whole instruction, multiple of 8 */
} PtoInsnHead;

/* A tensor parameter is a flat byte view when ndims is 0: [offset, offset +
   size) bytes of the tensor. With ndims 1..PTO_VIEW_MAX_DIMS it is a strided
   view of dtype elements: its first element is element
   offset + sum(dims[d].offset * dims[d].stride) of the tensor, and the task
   receives a PtoTensorView (pto_tensor.h) of the dims not SELECTED, in order. */
typedef struct PtoProgramParam {
    uint8_t kind;                 /* PtoParamKind */
    uint8_t direction;            /* tensors: IN/OUT/INOUT; scalars: PTO_ARG_SCALAR */
    uint8_t dtype;                /* strided views: PtoDataType; else 0 */
    uint8_t ndims;                /* tensors: 0 flat, 1..5 strided; scalars: 0 */
    uint32_t index;               /* tensor arg index, local id, or scalar arg index */
    uint64_t imm;                 /* SCALAR_IMM */
    PtoAffine offset;             /* flat: byte offset; strided: element offset of the view's origin;
                                     SCALAR_AFFINE: the value */
    PtoAffine size;               /* flat: byte size; else zero */
    PtoViewDim dims[PTO_VIEW_MAX_DIMS]; /* strided: dims[0..ndims); the rest zero */
} PtoProgramParam;

/* SUBMIT: param_count PtoProgramParam follow, then after_count PtoAffine: the
   ordinals (0 = the first SUBMIT executed in the scope instance) of the tasks
   of the innermost scope, which must be MANUAL, that this task waits for; an
   ordinal that evaluates below 0 names no task (the first iteration of a chain). */
typedef struct PtoSubmitInsn {
    PtoInsnHead head;             /* opcode SUBMIT */
    uint32_t func_id;             /* a child of the callable */
    uint16_t after_count;         /* <= PTO_PROGRAM_MAX_AFTER */
    uint16_t reserved;            /* 0 */
} PtoSubmitInsn;

/* SUBGRAPH: defines sub-graph `subgraph_id` (pto_orchestration.h, subgraph_submit;
   docs/orchestration.md, "Sub-graphs"). Followed by boundary_count bytes of
   boundary directions (PtoArgDirection: the tensors, IN / OUT / INOUT, first,
   then the SCALAR ones), zero-padded to a multiple of 8, then the body: a
   complete program (PtoProgramHeader + instructions) filling the rest of
   head.size_bytes. In the body, ARG_TENSOR i views boundary tensor i and
   SCALAR_ARG j is boundary scalar j; it may not contain SUBGRAPH, INVOKE,
   SCOPE_BEGIN_MANUAL or a SUBMIT with predecessors. Only at top level (inside
   no LOOP or scope), each id once, before every INVOKE of it; executing it
   does nothing. head.param_count is 0. */
typedef struct PtoSubgraphInsn {
    PtoInsnHead head;             /* opcode SUBGRAPH */
    uint32_t subgraph_id;         /* < PTO_PROGRAM_MAX_SUBGRAPHS */
    uint16_t boundary_count;      /* 1..PTO_SUBGRAPH_MAX_BOUNDARY */
    uint16_t reserved;            /* 0 */
} PtoSubgraphInsn;

/* INVOKE: submits sub-graph `subgraph_id` (an earlier SUBGRAPH) as one unit
   with head.param_count (= its boundary_count) PtoProgramParam following, encoded
   as SUBMIT's, whose directions are the sub-graph's boundary directions in order.
   Allowed in LOOPs and AUTO scopes, not inside a MANUAL scope. */
typedef struct PtoInvokeInsn {
    PtoInsnHead head;             /* opcode INVOKE */
    uint32_t subgraph_id;
    uint32_t reserved;            /* 0 */
} PtoInvokeInsn;

typedef struct PtoAllocInsn {
    PtoInsnHead head;
    uint32_t local_id;            /* < local_count; one ALLOC_TENSOR per local in the text */
    uint32_t reserved;
    uint64_t bytes;
} PtoAllocInsn;

typedef struct PtoLoopInsn {
    PtoInsnHead head;
    uint64_t count;               /* iterations; the loop variable runs 0..count-1 */
} PtoLoopInsn;

_Static_assert(sizeof(PtoBlobRef) == 8, "PtoBlobRef size");
_Static_assert(sizeof(ChipCallableHeader) == 56, "ChipCallableHeader size");
_Static_assert(offsetof(ChipCallableHeader, signature) == 24, "ChipCallableHeader.signature");
_Static_assert(offsetof(ChipCallableHeader, orchestration_entry) == 48, "ChipCallableHeader.orchestration_entry");
_Static_assert(sizeof(ChipCallableChild) == 32, "ChipCallableChild size");
_Static_assert(offsetof(ChipCallableChild, name) == 8, "ChipCallableChild.name");
_Static_assert(offsetof(ChipCallableChild, image) == 16, "ChipCallableChild.image");
_Static_assert(offsetof(ChipCallableChild, resolved_addr) == 24, "ChipCallableChild.resolved_addr");
_Static_assert(sizeof(PtoAffine) == 64, "PtoAffine size");
_Static_assert(offsetof(PtoAffine, lo) == 40, "PtoAffine.lo");
_Static_assert(offsetof(PtoAffine, clamp) == 56, "PtoAffine.clamp");
_Static_assert(sizeof(PtoViewDim) == 152, "PtoViewDim size");
_Static_assert(offsetof(PtoViewDim, offset) == 16, "PtoViewDim.offset");
_Static_assert(offsetof(PtoViewDim, extent) == 80, "PtoViewDim.extent");
_Static_assert(offsetof(PtoViewDim, flags) == 144, "PtoViewDim.flags");
_Static_assert(sizeof(PtoProgramHeader) == 16, "PtoProgramHeader size");
_Static_assert(sizeof(PtoInsnHead) == 8, "PtoInsnHead size");
_Static_assert(sizeof(PtoProgramParam) == 904, "PtoProgramParam size");
_Static_assert(offsetof(PtoProgramParam, dtype) == 2, "PtoProgramParam.dtype");
_Static_assert(offsetof(PtoProgramParam, ndims) == 3, "PtoProgramParam.ndims");
_Static_assert(offsetof(PtoProgramParam, imm) == 8, "PtoProgramParam.imm");
_Static_assert(offsetof(PtoProgramParam, offset) == 16, "PtoProgramParam.offset");
_Static_assert(offsetof(PtoProgramParam, size) == 80, "PtoProgramParam.size");
_Static_assert(offsetof(PtoProgramParam, dims) == 144, "PtoProgramParam.dims");
_Static_assert(sizeof(PtoSubmitInsn) == 16, "PtoSubmitInsn size");
_Static_assert(offsetof(PtoSubmitInsn, after_count) == 12, "PtoSubmitInsn.after_count");
_Static_assert(sizeof(PtoSubgraphInsn) == 16, "PtoSubgraphInsn size");
_Static_assert(offsetof(PtoSubgraphInsn, boundary_count) == 12, "PtoSubgraphInsn.boundary_count");
_Static_assert(sizeof(PtoInvokeInsn) == 16, "PtoInvokeInsn size");
_Static_assert(sizeof(PtoAllocInsn) == 24, "PtoAllocInsn size");
_Static_assert(sizeof(PtoLoopInsn) == 16, "PtoLoopInsn size");

#endif

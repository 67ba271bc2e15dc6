/*
 * The ChipCallable decoder (format: include/ptorun/chip_callable.h). It
 * validates a callable completely, given only its pointer, and hands out a view
 * over the validated bytes. Nothing past the 56-byte header is read before
 * total_size has been checked, nothing past total_size ever. Every refusal is
 * PTO_ERR_BAD_CALLABLE with a message naming the defect, written into the
 * caller's buffer: the decoder has no host-only dependency (no last_error, no
 * HostApi), so the AICPU image can reuse it.
 *
 * It checks the format only; what a runtime supports beyond that (hbg: SUBMIT
 * and built-in kernels) is the runtime's to refuse.
 */
#ifndef PTORUN_FORMAT_CHIP_CALLABLE_H
#define PTORUN_FORMAT_CHIP_CALLABLE_H

#include <stddef.h>
#include <stdint.h>

#include "ptorun/chip_callable.h"
#include "util/content_hash.h"   /* pto_fnv1a64: every user of a callable hashes it */

#define CHIP_CALLABLE_MESSAGE_BYTES 256u

typedef struct ChipCallableView {
    const uint8_t *bytes;         /* the callable; header.total_size bytes */
    ChipCallableHeader header;
    const uint8_t *signature;     /* header.signature_length PtoArgDirection bytes */
    uint32_t tensor_count;        /* leading IN / OUT / INOUT entries */
    uint32_t scalar_count;        /* trailing SCALAR entries */
    const uint8_t *children;      /* header.child_count ChipCallableChild (read with chip_callable_child) */
    uint32_t library_children;    /* children whose source is a kernel library */
    const uint8_t *program;       /* PROGRAM orchestration: the program; else NULL */
    uint32_t program_size;
    PtoProgramHeader program_header;
    uint32_t opcodes_used;        /* bit (1u << opcode) for every opcode the program uses */
    uint32_t submit_count;        /* SUBMIT instructions in the program text, sub-graph bodies included */
    uint32_t views_unproved;      /* strided views of SUBMITs run over 65 536 times that registration could
                                     not prove for every iteration: the interpreter checks each */
    /* func_ids in ascending order and the child each belongs to */
    uint32_t sorted_func_ids[PTO_CALLABLE_MAX_CHILDREN];
    uint8_t sorted_child[PTO_CALLABLE_MAX_CHILDREN];
} ChipCallableView;

/* PTO_OK and a view over `callable`, or PTO_ERR_BAD_CALLABLE with the defect in
 * msg (msg_size bytes, NUL-terminated; CHIP_CALLABLE_MESSAGE_BYTES suffice). */
int chip_callable_decode(const void *callable, ChipCallableView *view, char *msg, size_t msg_size);

/* A private copy of a callable already validated in the caller's memory (total_size
 * bytes), decoded again so every later step reads only the copy: *bytes (malloc'ed,
 * the caller frees it) and *view over it. PTO_ERR_BAD_CALLABLE if the copy no longer
 * decodes to the same size (the caller's bytes changed meanwhile; a changed total_size
 * is refused before the copy is decoded, so nothing past total_size is ever read),
 * PTO_ERR_OUT_OF_MEMORY; *bytes is NULL and *view zeroed on failure. */
int chip_callable_private_copy(const void *callable, uint32_t total_size, uint8_t **bytes, ChipCallableView *view);

/* Child `index` (< child_count) of a decoded callable, copied out (the callable
 * bytes need not be aligned). */
void chip_callable_child(const ChipCallableView *view, uint32_t index, ChipCallableChild *out);

/* The child index owning func_id, or -1. */
int chip_callable_child_of(const ChipCallableView *view, uint32_t func_id);

/* The bytes of a blob of a decoded callable (not NUL-terminated). */
static inline const char *chip_callable_blob(const ChipCallableView *view, PtoBlobRef ref)
{
    return (const char *)view->bytes + ref.offset;
}

/* Byte offset, inside the callable, of child `index`'s resolved_addr field. */
uint32_t chip_callable_resolved_addr_offset(const ChipCallableView *view, uint32_t index);

/* Non-zero when name[0..len) is a built-in kernel of the AICore image. */
int pto_builtin_kernel_known(const char *name, size_t len);

/* ---- walking a decoded program ---------------------------------------------
 * for (PtoProgramCursor c = {0}; chip_program_next(view, &c, &insn);) { ... } */
typedef struct PtoProgramCursor {
    uint32_t offset;              /* of the next instruction; 0 = start */
    uint32_t index;               /* instructions returned so far */
} PtoProgramCursor;

typedef struct PtoProgramInsn {
    PtoInsnHead head;
    uint32_t offset;              /* of the instruction in the program */
    union {
        PtoSubmitInsn submit;
        PtoAllocInsn alloc;
        PtoLoopInsn loop;
        PtoSubgraphInsn subgraph;
        PtoInvokeInsn invoke;
    } u;
} PtoProgramInsn;

/* Copies the next instruction out; 0 after the last. */
int chip_program_next(const ChipCallableView *view, PtoProgramCursor *cursor, PtoProgramInsn *insn);

/* Parameter i (< param_count) of a SUBMIT or an INVOKE returned by chip_program_next. */
void chip_program_param(const ChipCallableView *view, const PtoProgramInsn *insn, uint32_t i,
                        PtoProgramParam *out);

/* Predecessor ordinal k (< after_count) of a SUBMIT returned by chip_program_next. */
void chip_program_after(const ChipCallableView *view, const PtoProgramInsn *insn, uint32_t k, PtoAffine *out);

/* The bytes of a SUBMIT with these counts (both within their limits). */
static inline uint32_t chip_program_submit_size(uint32_t param_count, uint32_t after_count)
{
    return (uint32_t)(sizeof(PtoSubmitInsn) + param_count * sizeof(PtoProgramParam) + after_count * sizeof(PtoAffine));
}

/* Where a SUBGRAPH's boundary directions start: after its fixed part. */
#define CHIP_SUBGRAPH_DIRECTIONS_OFFSET ((uint32_t)sizeof(PtoSubgraphInsn))

/* The bytes of a SUBGRAPH before its body: the fixed part and the boundary
   directions padded to a multiple of 8. */
static inline uint32_t chip_program_subgraph_body_offset(uint32_t boundary_count)
{
    return (uint32_t)sizeof(PtoSubgraphInsn) + ((boundary_count + 7u) & ~7u);
}

/* The bytes of an INVOKE of param_count parameters. */
static inline uint32_t chip_program_invoke_size(uint32_t param_count)
{
    return (uint32_t)(sizeof(PtoInvokeInsn) + param_count * sizeof(PtoProgramParam));
}

/* The body of a SUBGRAPH returned by chip_program_next (of a decoded program)
 * as a view of its own: `*body` is `view` with the program replaced by the
 * body, the signature by the boundary directions (tensor_count / scalar_count
 * from them), and the program statistics zeroed; walk it like any program. */
void chip_program_subgraph_body(const ChipCallableView *view, const PtoProgramInsn *insn, ChipCallableView *body);

/* The tasks a decoded program submits in a run that succeeds: each SUBMIT
 * times the trip counts of its enclosing loops (a loop of count 0 adds
 * nothing), and each INVOKE the same way as its sub-graph's body's tasks + 2
 * (the invocation's entry and exit tasks, orch/subgraph.h), summed; UINT64_MAX when that does not fit 64 bits. Trip counts
 * are constants and a program has no branches, so this is exact, and a
 * runtime with a task limit can refuse a program before its first task. */
uint64_t chip_program_task_count(const ChipCallableView *view);

/* The most local-tensor bytes a decoded program holds at once, each
   ALLOC_TENSOR rounded up to `align` (a power of two): a scope's end frees what
   was allocated inside it, and an ALLOC_TENSOR in a loop allocates again only
   after the scope around it ended, so a loop over a scope with per-iteration
   locals needs one iteration's bytes. An INVOKE holds, while it runs, its
   sub-graph's block: the body's own peak at PTO_SUBGRAPH_LOCAL_ALIGN rounded
   up to `align` (none when the body allocates nothing), freed at its end.
   UINT64_MAX when that overflows. */
uint64_t chip_program_local_peak(const ChipCallableView *view, uint64_t align);

const char *pto_opcode_name(uint32_t opcode);

#endif

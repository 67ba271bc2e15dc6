/*
 * The program interpreter (program_orchestration.h). It trusts nothing: the
 * program passed registration's decoder, but on the device it is read from
 * memory the host wrote, so every instruction is bounds-checked as it is read,
 * and everything that depends on the run (views against tensor sizes, affine
 * overflow, locals allocated before use, loop trip counts) is checked as it
 * executes. Refusals are PTO_ERR_BAD_CALLABLE naming the instruction, recorded
 * with pto_fail (util/last_error.c is compiled into the AICPU image too, so
 * on the device the message lands in that image's per-thread buffer).
 *
 * No allocation: the loop stack, the construct stack and the locals table live
 * in the interpreter's frame.
 *
 * Sub-graphs: SUBGRAPH only notes where the sub-graph's instruction is. INVOKE
 * resolves its params as SUBMIT does and hands them to api->subgraph_submit
 * with run_body, which interprets the body (when the runtime records it) in
 * body mode: another Interp whose argument tensors and scalars are the
 * boundary itself (no ChipStorageTaskArgs: that is 33 KiB, too much for a
 * device thread's stack), every parameter made of boundary parameter k
 * marked PTO_SUBGRAPH_REF(k), and no origins.
 *
 * Loops: a LOOP's body runs `count` times with its variable 0..count-1. Trip
 * counts are constants and a program has no branches, so every iteration of a
 * body performs the same operations; an iteration that submitted no task
 * proves the remaining ones would submit none either (their ALLOC_TENSORs only
 * allocate again what a scope end freed, their scopes are empty), and the loop
 * ends there.
 * The interpreter's work is therefore bounded by the tasks it submits, which
 * the runtime bounds, never by a trip count alone.
 */
#include "orch/program_orchestration.h"

#include <string.h>

#include "format/chip_callable.h"
#include "format/program_view.h"
#include "util/last_error.h"
#include "ptorun/pto_runtime_c_api.h"

#define MAX_CONSTRUCTS (PTO_PROGRAM_MAX_LOOP_DEPTH + PTO_PROGRAM_MAX_SCOPE_DEPTH)

typedef struct LoopFrame {
    uint32_t body_offset;     /* first instruction of the body */
    uint32_t body_index;
    uint64_t count;
    uint64_t submitted_before; /* tasks submitted when the current iteration began */
} LoopFrame;

typedef struct Interp {
    const PtoOrchApi *api;
    void *orch;
    const ChipStorageTaskArgs *args;  /* NULL in body mode */
    const PtoTaskParam *boundary;     /* body mode: the boundary (tensors first); else NULL */
    int32_t tensor_count, scalar_count; /* the run's arguments, or the boundary's */
    const uint8_t *program;
    uint32_t program_bytes;
    const uint8_t *signature;
    uint32_t signature_tensors;   /* leading tensor entries of the signature */
    PtoProgramHeader header;

    uint32_t offset, index;       /* the next instruction */
    LoopFrame loops[PTO_PROGRAM_MAX_LOOP_DEPTH];
    int64_t vars[PTO_PROGRAM_MAX_LOOP_DEPTH];
    uint32_t loop_depth;
    uint16_t constructs[MAX_CONSTRUCTS]; /* open LOOP / SCOPE_BEGIN (MANUAL ones too), innermost last */
    uint8_t manual[MAX_CONSTRUCTS];      /* the construct is a SCOPE_BEGIN_MANUAL */
    uint32_t construct_depth, scope_depth;
    uint64_t submitted;
    uint32_t *origins;            /* NULL, or where each SUBMIT's parameters' origins go (header) */
    uint32_t subgraph_at[PTO_PROGRAM_MAX_SUBGRAPHS]; /* program offset of sub-graph id's SUBGRAPH; 0: not yet */
    uint32_t subgraph_index[PTO_PROGRAM_MAX_SUBGRAPHS]; /* its instruction index */

    uint64_t local_addr[PTO_PROGRAM_MAX_LOCALS];
    uint64_t local_bytes[PTO_PROGRAM_MAX_LOCALS];
    uint8_t local_live[PTO_PROGRAM_MAX_LOCALS];  /* LOCAL_* */
    uint8_t local_scope[PTO_PROGRAM_MAX_LOCALS]; /* scope depth at its allocation (0: the run) */
} Interp;

/* A local's life: a scope's end frees what was allocated inside it (trb
   returns the scope's ring heap, hbg pops its local heap); its ALLOC_TENSOR
   running again allocates it anew. */
enum { LOCAL_UNALLOCATED = 0, LOCAL_LIVE = 1, LOCAL_FREED = 2 };

/* One decoded instruction: its head and, for the fixed-size kinds, its body. */
typedef struct Insn {
    PtoInsnHead head;
    uint32_t offset, index;
    union {
        PtoSubmitInsn submit;
        PtoAllocInsn alloc;
        PtoLoopInsn loop;
        PtoSubgraphInsn subgraph;
        PtoInvokeInsn invoke;
    } u;
} Insn;

/* ---- reading ------------------------------------------------------------------ */

static uint32_t fixed_size(uint16_t opcode)
{
    switch (opcode) {
    case PTO_OP_ALLOC_TENSOR: return sizeof(PtoAllocInsn);
    case PTO_OP_LOOP: return sizeof(PtoLoopInsn);
    case PTO_OP_END_LOOP:
    case PTO_OP_SCOPE_BEGIN:
    case PTO_OP_SCOPE_BEGIN_MANUAL:
    case PTO_OP_SCOPE_END: return sizeof(PtoInsnHead);
    default: return 0;
    }
}

/* Reads the instruction at (offset, index), checking it lies inside the
   program and has the size its opcode requires. */
static int read_insn(const Interp *in, uint32_t offset, uint32_t index, Insn *out)
{
    if (offset > in->program_bytes || in->program_bytes - offset < sizeof(PtoInsnHead))
        return pto_fail(PTO_ERR_BAD_CALLABLE, "program instruction %u at byte %u runs past the program's %u bytes",
                        index, offset, in->program_bytes);
    memcpy(&out->head, in->program + offset, sizeof out->head);
    out->offset = offset;
    out->index = index;
    uint32_t size = out->head.size_bytes;
    if (size > in->program_bytes - offset)
        return pto_fail(PTO_ERR_BAD_CALLABLE, "program instruction %u (%u bytes at byte %u) runs past the program's %u bytes",
                        index, size, offset, in->program_bytes);
    uint32_t want;
    if (out->head.opcode == PTO_OP_SUBMIT) {
        if (out->head.param_count > PTO_MAX_TASK_PARAMS)
            return pto_fail(PTO_ERR_BAD_CALLABLE, "program instruction %u (SUBMIT) has %u params, the limit is %u", index,
                            out->head.param_count, PTO_MAX_TASK_PARAMS);
        PtoSubmitInsn submit;
        if (size < sizeof submit)
            return pto_fail(PTO_ERR_BAD_CALLABLE, "program instruction %u (SUBMIT) is %u bytes, less than its %zu-byte head",
                            index, size, sizeof submit);
        memcpy(&submit, in->program + offset, sizeof submit);
        if (submit.after_count > PTO_PROGRAM_MAX_AFTER)
            return pto_fail(PTO_ERR_BAD_CALLABLE, "program instruction %u (SUBMIT) waits for %u tasks, the limit is %u",
                            index, submit.after_count, PTO_PROGRAM_MAX_AFTER);
        want = chip_program_submit_size(out->head.param_count, submit.after_count);
    } else if (out->head.opcode == PTO_OP_INVOKE) {
        if (out->head.param_count > PTO_MAX_TASK_PARAMS)
            return pto_fail(PTO_ERR_BAD_CALLABLE, "program instruction %u (INVOKE) has %u params, the limit is %u", index,
                            out->head.param_count, PTO_MAX_TASK_PARAMS);
        want = chip_program_invoke_size(out->head.param_count);
    } else if (out->head.opcode == PTO_OP_SUBGRAPH) {
        PtoSubgraphInsn sub;
        if (size < sizeof sub || out->head.param_count != 0)
            return pto_fail(PTO_ERR_BAD_CALLABLE, "program instruction %u (SUBGRAPH) is %u bytes with param_count %u; it "
                            "has param_count 0 and at least %zu bytes", index, size, out->head.param_count, sizeof sub);
        memcpy(&sub, in->program + offset, sizeof sub);
        if (sub.boundary_count == 0 || sub.boundary_count > PTO_SUBGRAPH_MAX_BOUNDARY)
            return pto_fail(PTO_ERR_BAD_CALLABLE, "program instruction %u (SUBGRAPH %u) has %u boundary parameters; a "
                            "sub-graph has 1..%u", index, sub.subgraph_id, sub.boundary_count, PTO_SUBGRAPH_MAX_BOUNDARY);
        want = chip_program_subgraph_body_offset(sub.boundary_count) + (uint32_t)sizeof(PtoProgramHeader);
        if (size % 8 == 0 && size >= want)
            want = size; /* the body fills the rest */
    } else if ((want = fixed_size(out->head.opcode)) == 0) {
        return pto_fail(PTO_ERR_BAD_CALLABLE, "program instruction %u has unknown opcode %u", index, out->head.opcode);
    }
    if (size != want)
        return pto_fail(PTO_ERR_BAD_CALLABLE, "program instruction %u (%s) is %u bytes, must be %u", index,
                        pto_opcode_name(out->head.opcode), size, want);
    memset(&out->u, 0, sizeof out->u);
    uint32_t body = want < sizeof out->u ? want : (uint32_t)sizeof out->u;
    memcpy(&out->u, in->program + offset, body);
    return PTO_OK;
}

/* How messages name an instruction whose params are resolved: "SUBMIT func_id 3",
   "INVOKE sub-graph 0" (subgraph_id sits where func_id does). */
static const char *insn_kind(const Insn *at)
{
    return at->head.opcode == PTO_OP_INVOKE ? "INVOKE sub-graph" : "SUBMIT func_id";
}

/* ---- values ------------------------------------------------------------------- */

/* The deepest loop variable `a` uses beyond the `depth` enclosing loops, or -1. */
static int uses_deeper_loop(const PtoAffine *a, uint32_t depth)
{
    for (uint32_t d = PTO_PROGRAM_MAX_LOOP_DEPTH; d-- > depth;)
        if (a->coef[d] != 0)
            return (int)d;
    return -1;
}

/* base + sum(coef[d] * var[d]), clamped; only enclosing loops' variables may appear. */
static int eval_affine(const Interp *in, const PtoAffine *a, const Insn *at, uint32_t param, const char *what,
                       int64_t *out)
{
    int deeper = uses_deeper_loop(a, in->loop_depth);
    if (deeper >= 0)
        return pto_fail(PTO_ERR_BAD_CALLABLE,
                        "program instruction %u (%s %u) param %u: %s uses loop variable %d but only %u "
                        "loop(s) enclose it",
                        at->index, insn_kind(at), at->u.submit.func_id, param, what, deeper, in->loop_depth);
    if (pto_affine_malformed(a) || pto_affine_eval(a, in->vars, in->loop_depth, out) != 0)
        return pto_fail(PTO_ERR_BAD_CALLABLE, "program instruction %u (%s %u) param %u: %s overflows",
                        at->index, insn_kind(at), at->u.submit.func_id, param, what);
    return PTO_OK;
}

/* A strided view of a tensor of `bound` bytes at `base`, checked for the
   current loop values: the message names them. */
static int resolve_strided(const Interp *in, const PtoProgramParam *p, const Insn *at, uint32_t param, uint64_t base,
                           uint64_t bound, const char *tensor, PtoTaskParam *out)
{
    char why[160];
    uint64_t span;
    if (pto_view_param_check(p, why, sizeof why) != 0)
        return pto_fail(PTO_ERR_BAD_CALLABLE, "program instruction %u (%s %u) param %u: %s", at->index,
                        insn_kind(at), at->u.submit.func_id, param, why);
    int deeper = uses_deeper_loop(&p->offset, in->loop_depth);
    for (uint32_t k = 0; k < p->ndims; k++) {
        int o = uses_deeper_loop(&p->dims[k].offset, in->loop_depth), e = uses_deeper_loop(&p->dims[k].extent, in->loop_depth);
        deeper = o > deeper ? o : deeper;
        deeper = e > deeper ? e : deeper;
    }
    if (deeper >= 0)
        return pto_fail(PTO_ERR_BAD_CALLABLE,
                        "program instruction %u (%s %u) param %u: the view uses loop variable %d but only %u "
                        "loop(s) enclose it",
                        at->index, insn_kind(at), at->u.submit.func_id, param, deeper, in->loop_depth);
    if (pto_view_param_resolve(p, in->vars, in->loop_depth, base, bound, &out->view, &span, why, sizeof why) != 0) {
        char values[96];
        pto_loop_values_text(in->vars, in->loop_depth, values, sizeof values);
        return pto_fail(PTO_ERR_BAD_CALLABLE,
                        "program instruction %u (%s %u) param %u, a view of %s %u: %s at %s", at->index,
                        insn_kind(at), at->u.submit.func_id, param, tensor, p->index, why, values);
    }
    out->value = out->view.addr;
    out->bytes = span;
    return PTO_OK;
}

/* The view [offset, offset + size) of a tensor of `bound` bytes at `base`. */
static int resolve_view(const Interp *in, const PtoProgramParam *p, const Insn *at, uint32_t param, uint64_t base,
                        uint64_t bound, const char *tensor, PtoTaskParam *out)
{
    int64_t off, size;
    int rc;
    if ((rc = eval_affine(in, &p->offset, at, param, "the view offset", &off)) != PTO_OK ||
        (rc = eval_affine(in, &p->size, at, param, "the view size", &size)) != PTO_OK)
        return rc;
    if (off < 0 || size < 0 || (uint64_t)off > bound || (uint64_t)size > bound - (uint64_t)off)
        return pto_fail(PTO_ERR_BAD_CALLABLE,
                        "program instruction %u (%s %u) param %u: view [%lld, %lld + %lld) lies outside %s %u "
                        "of %llu bytes",
                        at->index, insn_kind(at), at->u.submit.func_id, param, (long long)off, (long long)off, (long long)size, tensor,
                        p->index, (unsigned long long)bound);
    if (base + (uint64_t)off < base)
        return pto_fail(PTO_ERR_BAD_CALLABLE, "program instruction %u (%s %u) param %u: %s %u wraps around",
                        at->index, insn_kind(at), at->u.submit.func_id, param, tensor, p->index);
    out->value = base + (uint64_t)off;
    out->bytes = (uint64_t)size;
    return PTO_OK;
}

static int is_view_direction(uint32_t d)
{
    return d == PTO_ARG_IN || d == PTO_ARG_OUT || d == PTO_ARG_INOUT;
}

static void note_origin(const Interp *in, uint32_t param, uint32_t origin)
{
    if (in->origins != NULL)
        in->origins[param] = origin;
}

/* One program parameter as a task parameter. */
static int resolve_param(const Interp *in, const PtoProgramParam *p, const Insn *at, uint32_t i, PtoTaskParam *out)
{
    const char *arg = in->boundary != NULL ? "boundary" : "argument";
    uint32_t func_id = at->u.submit.func_id;
    int64_t value;
    int rc;
    *out = (PtoTaskParam){ .direction = p->direction };
    note_origin(in, i, PTO_PARAM_ORIGIN_FIXED);
    switch (p->kind) {
    case PTO_PARAM_ARG_TENSOR:
        if (!is_view_direction(p->direction))
            break;
        if (p->index >= (uint32_t)in->tensor_count || p->index >= in->signature_tensors)
            return pto_fail(PTO_ERR_BAD_CALLABLE,
                            "program instruction %u (%s %u) param %u names %s tensor %u; the %s has %d",
                            at->index, insn_kind(at), func_id, i, arg, p->index,
                            in->boundary != NULL ? "boundary" : "run", in->tensor_count);
        if (p->direction != PTO_ARG_IN && in->signature[p->index] == PTO_ARG_IN)
            return pto_fail(PTO_ERR_BAD_CALLABLE,
                            "program instruction %u (%s %u) param %u writes %s tensor %u, which the "
                            "%s declares IN",
                            at->index, insn_kind(at), func_id, i, arg, p->index,
                            in->boundary != NULL ? "sub-graph's boundary" : "signature");
        note_origin(in, i, PTO_PARAM_ORIGIN_TENSOR(p->index));
        if (in->boundary != NULL) {
            rc = (p->ndims != 0 ? resolve_strided : resolve_view)(in, p, at, i, in->boundary[p->index].value,
                                                                  in->boundary[p->index].bytes, "boundary tensor", out);
            out->reserved = PTO_SUBGRAPH_REF(p->index);
            return rc;
        }
        return (p->ndims != 0 ? resolve_strided : resolve_view)(in, p, at, i, in->args->tensors[p->index].addr,
                                                                in->args->tensors[p->index].size, "argument tensor", out);
    case PTO_PARAM_LOCAL_TENSOR:
        if (!is_view_direction(p->direction))
            break;
        if (p->index >= in->header.local_count)
            return pto_fail(PTO_ERR_BAD_CALLABLE,
                            "program instruction %u (%s %u) param %u names local tensor %u; local_count is %u",
                            at->index, insn_kind(at), func_id, i, p->index, in->header.local_count);
        if (in->local_live[p->index] == LOCAL_UNALLOCATED)
            return pto_fail(PTO_ERR_BAD_CALLABLE,
                            "program instruction %u (%s %u) param %u uses local tensor %u before its "
                            "ALLOC_TENSOR has executed",
                            at->index, insn_kind(at), func_id, i, p->index);
        if (in->local_live[p->index] == LOCAL_FREED)
            return pto_fail(PTO_ERR_BAD_CALLABLE,
                            "program instruction %u (%s %u) param %u uses local tensor %u after the scope "
                            "it was allocated in has ended",
                            at->index, insn_kind(at), func_id, i, p->index);
        note_origin(in, i, PTO_PARAM_ORIGIN_LOCAL(p->index));
        return (p->ndims != 0 ? resolve_strided : resolve_view)(in, p, at, i, in->local_addr[p->index],
                                                                in->local_bytes[p->index], "local tensor", out);
    case PTO_PARAM_SCALAR_IMM:
        if (p->direction != PTO_ARG_SCALAR)
            break;
        out->value = p->imm;
        return PTO_OK;
    case PTO_PARAM_SCALAR_ARG:
        if (p->direction != PTO_ARG_SCALAR)
            break;
        if (p->index >= (uint32_t)in->scalar_count)
            return pto_fail(PTO_ERR_BAD_CALLABLE,
                            "program instruction %u (%s %u) param %u names %s scalar %u; the %s has %d",
                            at->index, insn_kind(at), func_id, i, arg, p->index,
                            in->boundary != NULL ? "boundary" : "run", in->scalar_count);
        if (in->boundary != NULL) {
            out->value = in->boundary[(uint32_t)in->tensor_count + p->index].value;
            out->reserved = PTO_SUBGRAPH_REF((uint32_t)in->tensor_count + p->index);
            return PTO_OK;
        }
        out->value = in->args->scalars[p->index];
        note_origin(in, i, PTO_PARAM_ORIGIN_SCALAR(p->index));
        return PTO_OK;
    case PTO_PARAM_SCALAR_AFFINE:
        if (p->direction != PTO_ARG_SCALAR)
            break;
        if ((rc = eval_affine(in, &p->offset, at, i, "the scalar value", &value)) != PTO_OK)
            return rc;
        out->value = (uint64_t)value;
        return PTO_OK;
    default:
        return pto_fail(PTO_ERR_BAD_CALLABLE, "program instruction %u (%s %u) param %u has invalid kind %u",
                        at->index, insn_kind(at), func_id, i, p->kind);
    }
    return pto_fail(PTO_ERR_BAD_CALLABLE,
                    "program instruction %u (%s %u) param %u: direction %u does not fit parameter kind %u",
                    at->index, insn_kind(at), func_id, i, p->direction, p->kind);
}

/* ---- instructions ------------------------------------------------------------- */

/* Non-zero when the innermost open scope is a MANUAL one. */
static int in_manual_scope(const Interp *in)
{
    for (uint32_t k = in->construct_depth; k-- > 0;)
        if (in->constructs[k] == PTO_OP_SCOPE_BEGIN)
            return in->manual[k];
    return 0;
}

/* A SUBMIT with predecessors: their ordinals evaluated now (one below 0 names
   no task, a repeat is passed once), then submit_after. */
static int submit_after(Interp *in, const Insn *at, const PtoTaskParam *params)
{
    uint32_t func_id = at->u.submit.func_id, after[PTO_PROGRAM_MAX_AFTER], n = 0;
    if (!in_manual_scope(in))
        return pto_fail(PTO_ERR_BAD_CALLABLE,
                        "program instruction %u (%s %u) names predecessors outside a MANUAL scope", at->index,
                        insn_kind(at), func_id);
    if (in->api->submit_after == NULL)
        return pto_fail(PTO_ERR_ORCHESTRATION, "program instruction %u (%s %u): the orchestration API has no "
                                               "submit_after", at->index, insn_kind(at), func_id);
    for (uint32_t k = 0; k < at->u.submit.after_count; k++) {
        PtoAffine a;
        memcpy(&a, in->program + at->offset + chip_program_submit_size(at->head.param_count, k), sizeof a);
        int64_t ordinal;
        int rc = eval_affine(in, &a, at, at->head.param_count + k, "a predecessor ordinal", &ordinal);
        if (rc != PTO_OK)
            return rc;
        if (ordinal > (int64_t)UINT32_MAX)
            return pto_fail(PTO_ERR_BAD_CALLABLE,
                            "program instruction %u (%s %u): predecessor ordinal %lld is out of range",
                            at->index, insn_kind(at), func_id, (long long)ordinal);
        int seen = ordinal < 0; /* below 0: no task; a repeat: dependencies are a set */
        for (uint32_t j = 0; j < n && !seen; j++)
            seen = after[j] == (uint32_t)ordinal;
        if (!seen)
            after[n++] = (uint32_t)ordinal;
    }
    return in->api->submit_after(in->orch, func_id, params, at->head.param_count, after, n);
}

static int exec_submit(Interp *in, const Insn *at)
{
    PtoTaskParam params[PTO_MAX_TASK_PARAMS];
    for (uint32_t i = 0; i < at->head.param_count; i++) {
        PtoProgramParam p;
        memcpy(&p, in->program + at->offset + sizeof(PtoSubmitInsn) + (size_t)i * sizeof p, sizeof p);
        int rc = resolve_param(in, &p, at, i, &params[i]);
        if (rc != PTO_OK)
            return rc;
    }
    int rc = at->u.submit.after_count == 0
                 ? in->api->submit(in->orch, at->u.submit.func_id, params, at->head.param_count)
                 : submit_after(in, at, params);
    if (rc == PTO_OK)
        in->submitted++;
    return rc;
}

/* ---- sub-graphs --------------------------------------------------------------- */

/* What run_body needs of the program: the SUBGRAPH the INVOKE names. */
typedef struct BodyCtx {
    const uint8_t *program;
    uint32_t at;                  /* program offset of the SUBGRAPH */
    uint32_t size;                /* its size_bytes */
    uint32_t index;               /* its instruction index, for messages */
    uint32_t invoke;              /* the INVOKE's instruction index */
} BodyCtx;

static int run(Interp *in);
static int start(Interp *in, const uint8_t *program, size_t program_bytes, const uint8_t *signature,
                 uint32_t signature_length);

/* The body's own refusal, prefixed with the sub-graph (its instruction numbers
   are the body's). Out of line: the message copy stays off run_body's frame. */
static __attribute__((noinline)) int body_refused(int rc, uint32_t id, uint32_t index)
{
    char why[PTO_ERROR_MESSAGE_BYTES];
    strncpy(why, pto_last_error(), sizeof why - 1);
    why[sizeof why - 1] = '\0';
    return pto_fail(rc, "program instruction %u (SUBGRAPH %u) body: %s", index, id, why);
}

/* SUBGRAPH: notes where sub-graph id is; executing it does nothing else. */
static int exec_subgraph(Interp *in, const Insn *at)
{
    uint32_t id = at->u.subgraph.subgraph_id;
    if (in->boundary != NULL)
        return pto_fail(PTO_ERR_BAD_CALLABLE, "program instruction %u (SUBGRAPH %u): a sub-graph body cannot define a "
                        "sub-graph", at->index, id);
    if (in->construct_depth > 0)
        return pto_fail(PTO_ERR_BAD_CALLABLE, "program instruction %u (SUBGRAPH %u) is inside a LOOP or scope: a "
                        "sub-graph is defined at top level", at->index, id);
    if (id >= PTO_PROGRAM_MAX_SUBGRAPHS || in->subgraph_at[id] != 0)
        return pto_fail(PTO_ERR_BAD_CALLABLE, "program instruction %u (SUBGRAPH) defines sub-graph %u, %s", at->index, id,
                        id >= PTO_PROGRAM_MAX_SUBGRAPHS ? "beyond the 64 ids" : "defined before");
    in->subgraph_at[id] = at->offset;
    in->subgraph_index[id] = at->index;
    return PTO_OK;
}

/* The body of a sub-graph, interpreted against the boundary the runtime passes
   (PtoSubgraphBody): its ARG_TENSOR i is boundary tensor i, its SCALAR_ARG j
   boundary scalar j, each marked PTO_SUBGRAPH_REF. */
static int run_body(const PtoOrchApi *api, void *orch, void *ctx, const PtoTaskParam *boundary, uint32_t n)
{
    const BodyCtx *c = ctx;
    PtoSubgraphInsn sub;
    if (c == NULL || api == NULL || (boundary == NULL && n > 0))
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "sub-graph body: NULL context, api or boundary");
    memcpy(&sub, c->program + c->at, sizeof sub);
    uint32_t body = chip_program_subgraph_body_offset(sub.boundary_count);
    const uint8_t *dirs = c->program + c->at + CHIP_SUBGRAPH_DIRECTIONS_OFFSET;
    if (n != sub.boundary_count)
        return pto_fail(PTO_ERR_ORCHESTRATION, "program instruction %u (INVOKE sub-graph %u): the body was given %u "
                        "boundary parameters; the sub-graph has %u", c->invoke, sub.subgraph_id, n, sub.boundary_count);
    for (uint32_t k = 0; k < n; k++)
        if (boundary[k].direction != dirs[k])
            return pto_fail(PTO_ERR_ORCHESTRATION, "program instruction %u (INVOKE sub-graph %u): boundary parameter %u "
                            "has direction %u; the sub-graph's is %u", c->invoke, sub.subgraph_id, k,
                            boundary[k].direction, dirs[k]);
    Interp in;
    memset(&in, 0, offsetof(Interp, local_addr));
    memset(in.local_live, 0, sizeof in.local_live);
    in.api = api;
    in.orch = orch;
    in.boundary = boundary;
    int rc = start(&in, c->program + c->at + body, c->size - body, dirs, n);
    if (rc == PTO_OK) {
        in.tensor_count = (int32_t)in.signature_tensors;
        in.scalar_count = (int32_t)(n - in.signature_tensors);
        rc = run(&in);
    }
    return rc == PTO_ERR_BAD_CALLABLE ? body_refused(rc, sub.subgraph_id, c->index) : rc;
}

/* Non-zero when some open scope is a MANUAL one. */
static int inside_manual_scope(const Interp *in)
{
    for (uint32_t k = in->construct_depth; k-- > 0;)
        if (in->constructs[k] == PTO_OP_SCOPE_BEGIN && in->manual[k])
            return 1;
    return 0;
}

/* INVOKE: params resolved as a SUBMIT's, then api->subgraph_submit with run_body. */
static int exec_invoke(Interp *in, const Insn *at)
{
    uint32_t id = at->u.invoke.subgraph_id, n = at->head.param_count;
    if (in->boundary != NULL)
        return pto_fail(PTO_ERR_BAD_CALLABLE, "program instruction %u (INVOKE sub-graph %u): a sub-graph body cannot "
                        "invoke a sub-graph", at->index, id);
    if (id >= PTO_PROGRAM_MAX_SUBGRAPHS || in->subgraph_at[id] == 0)
        return pto_fail(PTO_ERR_BAD_CALLABLE, "program instruction %u (INVOKE) invokes sub-graph %u, which no earlier "
                        "SUBGRAPH defines", at->index, id);
    if (inside_manual_scope(in))
        return pto_fail(PTO_ERR_BAD_CALLABLE, "program instruction %u (INVOKE sub-graph %u) is inside a MANUAL scope: a "
                        "sub-graph is not invoked there", at->index, id);
    Insn def;
    int rc = read_insn(in, in->subgraph_at[id], 0, &def);
    if (rc != PTO_OK)
        return rc;
    const uint8_t *dirs = in->program + def.offset + CHIP_SUBGRAPH_DIRECTIONS_OFFSET;
    if (n != def.u.subgraph.boundary_count)
        return pto_fail(PTO_ERR_BAD_CALLABLE, "program instruction %u (INVOKE sub-graph %u) passes %u params; the "
                        "sub-graph's boundary has %u", at->index, id, n, def.u.subgraph.boundary_count);
    PtoTaskParam params[PTO_MAX_TASK_PARAMS];
    for (uint32_t i = 0; i < n; i++) {
        PtoProgramParam p;
        memcpy(&p, in->program + at->offset + sizeof(PtoInvokeInsn) + (size_t)i * sizeof p, sizeof p);
        if (p.direction != dirs[i])
            return pto_fail(PTO_ERR_BAD_CALLABLE, "program instruction %u (INVOKE sub-graph %u) param %u has direction "
                            "%u; the sub-graph's boundary parameter %u has %u", at->index, id, i, p.direction, i, dirs[i]);
        if ((rc = resolve_param(in, &p, at, i, &params[i])) != PTO_OK)
            return rc;
    }
    if (in->api->subgraph_submit == NULL)
        return pto_fail(PTO_ERR_ORCHESTRATION, "program instruction %u (INVOKE sub-graph %u): the orchestration API has "
                        "no subgraph_submit", at->index, id);
    BodyCtx ctx = { in->program, def.offset, def.head.size_bytes, in->subgraph_index[id], at->index };
    rc = in->api->subgraph_submit(in->orch, id, run_body, &ctx, params, n);
    if (rc == PTO_OK)
        in->submitted++;
    return rc;
}

/* Allocates a local when its ALLOC_TENSOR executes while the local is not live:
   the first time, and again in each iteration of a loop around the scope that
   frees it (the scope's end returned its memory). A loop inside that scope
   keeps the allocation, so heap use stays one iteration's. */
static int exec_alloc(Interp *in, const Insn *at)
{
    const PtoAllocInsn *a = &at->u.alloc;
    if (a->local_id >= in->header.local_count)
        return pto_fail(PTO_ERR_BAD_CALLABLE, "program instruction %u (ALLOC_TENSOR) allocates local %u; local_count is %u",
                        at->index, a->local_id, in->header.local_count);
    if (in->local_live[a->local_id] == LOCAL_LIVE)
        return PTO_OK;
    note_origin(in, 0, PTO_PARAM_ORIGIN_LOCAL(a->local_id)); /* the local the api allocates */
    uint64_t addr = in->api->alloc_tensor(in->orch, a->bytes);
    if (addr == 0)
        return pto_fail(PTO_ERR_OUT_OF_MEMORY, "program instruction %u (ALLOC_TENSOR local %u, %llu bytes): %s",
                        at->index, a->local_id, (unsigned long long)a->bytes, pto_last_error());
    in->local_addr[a->local_id] = addr;
    in->local_bytes[a->local_id] = a->bytes;
    in->local_live[a->local_id] = LOCAL_LIVE;
    in->local_scope[a->local_id] = (uint8_t)in->scope_depth;
    return PTO_OK;
}

static int open_construct(Interp *in, const Insn *at)
{
    uint16_t op = at->head.opcode == PTO_OP_SCOPE_BEGIN_MANUAL ? PTO_OP_SCOPE_BEGIN : at->head.opcode;
    if ((op == PTO_OP_LOOP && in->loop_depth == PTO_PROGRAM_MAX_LOOP_DEPTH) ||
        (op == PTO_OP_SCOPE_BEGIN && in->scope_depth == PTO_PROGRAM_MAX_SCOPE_DEPTH))
        return pto_fail(PTO_ERR_BAD_CALLABLE, "program instruction %u (%s) nests deeper than %u", at->index,
                        pto_opcode_name(at->head.opcode),
                        op == PTO_OP_LOOP ? PTO_PROGRAM_MAX_LOOP_DEPTH : PTO_PROGRAM_MAX_SCOPE_DEPTH);
    in->manual[in->construct_depth] = at->head.opcode == PTO_OP_SCOPE_BEGIN_MANUAL;
    in->constructs[in->construct_depth++] = op;
    return PTO_OK;
}

static int close_construct(Interp *in, const Insn *at, uint16_t opener)
{
    if (in->construct_depth == 0 || in->constructs[in->construct_depth - 1] != opener)
        return pto_fail(PTO_ERR_BAD_CALLABLE, "program instruction %u (%s) does not close an open %s", at->index,
                        pto_opcode_name(at->head.opcode), pto_opcode_name(opener));
    in->construct_depth--;
    return PTO_OK;
}

/* Moves past the END_LOOP matching the LOOP `at` without running its body. */
static int skip_loop(Interp *in, const Insn *at)
{
    uint32_t depth = 1, offset = at->offset + at->head.size_bytes, index = at->index + 1;
    while (depth > 0) {
        if (index >= in->header.instruction_count)
            return pto_fail(PTO_ERR_BAD_CALLABLE, "program instruction %u (LOOP) has no matching END_LOOP", at->index);
        Insn next;
        int rc = read_insn(in, offset, index, &next);
        if (rc != PTO_OK)
            return rc;
        if (next.head.opcode == PTO_OP_LOOP)
            depth++;
        else if (next.head.opcode == PTO_OP_END_LOOP)
            depth--;
        offset += next.head.size_bytes;
        index++;
    }
    in->offset = offset;
    in->index = index;
    return PTO_OK;
}

static int exec_loop(Interp *in, const Insn *at)
{
    uint64_t count = at->u.loop.count;
    if (count > (uint64_t)INT64_MAX)
        return pto_fail(PTO_ERR_BAD_CALLABLE, "program instruction %u (LOOP) count %llu exceeds %lld", at->index,
                        (unsigned long long)count, (long long)INT64_MAX);
    int rc = open_construct(in, at);
    if (rc != PTO_OK)
        return rc;
    if (count == 0) {
        in->construct_depth--;
        return skip_loop(in, at);
    }
    in->loops[in->loop_depth] = (LoopFrame){ in->offset, in->index, count, in->submitted };
    in->vars[in->loop_depth] = 0;
    in->loop_depth++;
    return PTO_OK;
}

static int exec_end_loop(Interp *in, const Insn *at)
{
    if (in->loop_depth == 0 || in->constructs[in->construct_depth - 1] != PTO_OP_LOOP)
        return close_construct(in, at, PTO_OP_LOOP);
    LoopFrame *f = &in->loops[in->loop_depth - 1];
    int64_t *var = &in->vars[in->loop_depth - 1];
    /* an iteration without tasks proves the rest would have none (see top) */
    if ((uint64_t)*var + 1 < f->count && in->submitted != f->submitted_before) {
        (*var)++;
        f->submitted_before = in->submitted;
        in->offset = f->body_offset;
        in->index = f->body_index;
        return PTO_OK;
    }
    in->loop_depth--;
    in->vars[in->loop_depth] = 0;
    return close_construct(in, at, PTO_OP_LOOP);
}

static int exec_scope(Interp *in, const Insn *at)
{
    int rc;
    if (at->head.opcode != PTO_OP_SCOPE_END) {
        int manual = at->head.opcode == PTO_OP_SCOPE_BEGIN_MANUAL;
        if (manual && in->boundary != NULL)
            return pto_fail(PTO_ERR_BAD_CALLABLE, "program instruction %u (SCOPE_BEGIN_MANUAL): a sub-graph body has no "
                            "MANUAL scope", at->index);
        if (manual && in->api->scope_begin_mode == NULL)
            return pto_fail(PTO_ERR_ORCHESTRATION, "program instruction %u (SCOPE_BEGIN_MANUAL): the orchestration API "
                                                   "has no scope_begin_mode", at->index);
        if ((rc = open_construct(in, at)) != PTO_OK)
            return rc;
        rc = manual ? in->api->scope_begin_mode(in->orch, PTO_SCOPE_MANUAL) : in->api->scope_begin(in->orch);
        if (rc != PTO_OK) {
            in->construct_depth--;
            return rc;
        }
        in->scope_depth++;
        return PTO_OK;
    }
    if ((rc = close_construct(in, at, PTO_OP_SCOPE_BEGIN)) != PTO_OK)
        return rc;
    for (uint32_t id = 0; id < in->header.local_count; id++)
        if (in->local_live[id] == LOCAL_LIVE && in->local_scope[id] == in->scope_depth)
            in->local_live[id] = LOCAL_FREED;
    in->scope_depth--;
    return in->api->scope_end(in->orch);
}

static int exec_insn(Interp *in, const Insn *at)
{
    switch (at->head.opcode) {
    case PTO_OP_SUBMIT: return exec_submit(in, at);
    case PTO_OP_ALLOC_TENSOR: return exec_alloc(in, at);
    case PTO_OP_LOOP: return exec_loop(in, at);
    case PTO_OP_END_LOOP: return exec_end_loop(in, at);
    case PTO_OP_SUBGRAPH: return exec_subgraph(in, at);
    case PTO_OP_INVOKE: return exec_invoke(in, at);
    default: return exec_scope(in, at);
    }
}

/* ---- the entry ------------------------------------------------------------------ */

static int start(Interp *in, const uint8_t *program, size_t program_bytes, const uint8_t *signature,
                 uint32_t signature_length)
{
    if (program_bytes < sizeof(PtoProgramHeader) || program_bytes > PTO_CALLABLE_MAX_BYTES)
        return pto_fail(PTO_ERR_BAD_CALLABLE, "program is %zu bytes; a program is %zu..%u bytes", program_bytes,
                        sizeof(PtoProgramHeader), PTO_CALLABLE_MAX_BYTES);
    memcpy(&in->header, program, sizeof in->header);
    if (in->header.magic != PTO_PROGRAM_MAGIC)
        return pto_fail(PTO_ERR_BAD_CALLABLE, "program has bad magic 0x%08x, expected 0x%08x (\"PTPG\")", in->header.magic,
                        PTO_PROGRAM_MAGIC);
    if (in->header.instruction_count > PTO_PROGRAM_MAX_INSNS || in->header.local_count > PTO_PROGRAM_MAX_LOCALS)
        return pto_fail(PTO_ERR_BAD_CALLABLE, "program has %u instructions and %u locals; the limits are %u and %u",
                        in->header.instruction_count, in->header.local_count, PTO_PROGRAM_MAX_INSNS,
                        PTO_PROGRAM_MAX_LOCALS);
    if (signature == NULL && signature_length > 0)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "program orchestration: NULL signature of %u entries", signature_length);
    in->program = program;
    in->program_bytes = (uint32_t)program_bytes;
    in->signature = signature;
    while (in->signature_tensors < signature_length && signature[in->signature_tensors] != PTO_ARG_SCALAR)
        in->signature_tensors++;
    in->offset = sizeof(PtoProgramHeader);
    return PTO_OK;
}

int pto_program_orchestrate(const PtoOrchApi *api, void *orch, const ChipStorageTaskArgs *args,
                            const uint8_t *program, size_t program_bytes,
                            const uint8_t *signature, uint32_t signature_length)
{
    return pto_program_orchestrate_origins(api, orch, args, program, program_bytes, signature, signature_length, NULL);
}

int pto_program_orchestrate_origins(const PtoOrchApi *api, void *orch, const ChipStorageTaskArgs *args,
                                    const uint8_t *program, size_t program_bytes, const uint8_t *signature,
                                    uint32_t signature_length, uint32_t *origins)
{
    if (api == NULL || args == NULL || program == NULL)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "program orchestration: NULL api, args or program");
    if (args->tensor_count < 0 || args->tensor_count > PTO_MAX_TENSOR_ARGS || args->scalar_count < 0 ||
        args->scalar_count > PTO_MAX_SCALAR_ARGS)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "program orchestration: %d tensors and %d scalars; at most %d and %d",
                        args->tensor_count, args->scalar_count, PTO_MAX_TENSOR_ARGS, PTO_MAX_SCALAR_ARGS);
    Interp in;
    memset(&in, 0, offsetof(Interp, local_addr));
    memset(in.local_live, 0, sizeof in.local_live);
    in.api = api;
    in.orch = orch;
    in.args = args;
    in.tensor_count = args->tensor_count;
    in.scalar_count = args->scalar_count;
    in.origins = origins;
    int rc = start(&in, program, program_bytes, signature, signature_length);
    return rc == PTO_OK ? run(&in) : rc;
}

/* Runs the program start() set up, to its end. */
static int run(Interp *in)
{
    int rc = PTO_OK;
    while (rc == PTO_OK && in->index < in->header.instruction_count) {
        Insn insn;
        if ((rc = read_insn(in, in->offset, in->index, &insn)) != PTO_OK)
            break;
        in->offset += insn.head.size_bytes;
        in->index++;
        rc = exec_insn(in, &insn);
    }
    if (rc == PTO_OK && in->construct_depth > 0)
        rc = pto_fail(PTO_ERR_BAD_CALLABLE, "program ends with %u LOOP / SCOPE_BEGIN construct(s) still open",
                      in->construct_depth);
    if (rc == PTO_OK && in->offset != in->program_bytes)
        rc = pto_fail(PTO_ERR_BAD_CALLABLE, "program has %u bytes after its last instruction",
                      in->program_bytes - in->offset);
    return rc;
}

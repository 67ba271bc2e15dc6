/*
 * Registration's decoder, the program part (format/chip_callable.h): nesting,
 * locals, parameters and strided views, each proved over the loops' ranges,
 * and for views every iteration it can enumerate. The callable part is
 * chip_callable.c; both write their refusal into the same CallableDecoder.
 *
 * Sub-graphs: a SUBGRAPH's body is decoded by the same code as a program of
 * its own whose signature is the boundary (ARG_TENSOR i: boundary tensor i,
 * SCALAR_ARG j: boundary scalar j), plus the body's rules (no SUBGRAPH,
 * INVOKE, SCOPE_BEGIN_MANUAL or predecessors); its refusal is prefixed with
 * the SUBGRAPH instruction. An INVOKE's params are checked like a SUBMIT's,
 * and their directions against the sub-graph's boundary.
 */
#include <stdint.h>
#include <string.h>

#include "format/callable_decoder.h"
#include "format/program_view.h"
#include "ptorun/pto_runtime_c_api.h"

/* The open LOOP / SCOPE_BEGIN constructs while walking a program. */
typedef struct Nesting {
    uint16_t opcode[PTO_PROGRAM_MAX_LOOP_DEPTH + PTO_PROGRAM_MAX_SCOPE_DEPTH]; /* LOOP or SCOPE_BEGIN */
    uint8_t manual[PTO_PROGRAM_MAX_LOOP_DEPTH + PTO_PROGRAM_MAX_SCOPE_DEPTH];  /* a SCOPE_BEGIN_MANUAL */
    uint32_t insn[PTO_PROGRAM_MAX_LOOP_DEPTH + PTO_PROGRAM_MAX_SCOPE_DEPTH];
    uint32_t depth, loops, scopes;
} Nesting;

typedef struct ProgramWalk {
    Nesting nest;
    uint64_t loop_count[PTO_PROGRAM_MAX_LOOP_DEPTH]; /* trip counts of the open loops, outermost first */
    uint8_t allocated[PTO_PROGRAM_MAX_LOCALS]; /* local id -> allocated earlier in the text */
    /* local id -> the instruction index of its ALLOC_TENSOR when a LOOP of count 0
       encloses it (it never runs), else NO_ALLOC_SKIPPED */
    uint32_t alloc_skipped[PTO_PROGRAM_MAX_LOCALS];
    uint64_t local_bytes[PTO_PROGRAM_MAX_LOCALS];
    /* the SCOPE_BEGIN (instruction index) whose end frees the local; NO_SCOPE: the run's end */
    uint32_t local_scope[PTO_PROGRAM_MAX_LOCALS];
    uint32_t subgraph_at[PTO_PROGRAM_MAX_SUBGRAPHS]; /* id -> program offset of its SUBGRAPH; 0: not defined */
} ProgramWalk;

#define NO_SCOPE UINT32_MAX
#define NO_ALLOC_SKIPPED UINT32_MAX

/* Non-zero when an enclosing LOOP has count 0: the instruction never runs. */
static int never_runs(const ProgramWalk *w)
{
    for (uint32_t d = 0; d < w->nest.loops; d++)
        if (w->loop_count[d] == 0)
            return 1;
    return 0;
}

/* Position in the nesting stack of the innermost open SCOPE_BEGIN, or -1. */
static int innermost_scope(const Nesting *n)
{
    for (uint32_t k = n->depth; k-- > 0;)
        if (n->opcode[k] == PTO_OP_SCOPE_BEGIN)
            return (int)k;
    return -1;
}

/* Non-zero while the SCOPE_BEGIN at instruction `insn` is open. */
static int scope_open(const Nesting *n, uint32_t insn)
{
    for (uint32_t k = 0; k < n->depth; k++)
        if (n->opcode[k] == PTO_OP_SCOPE_BEGIN && n->insn[k] == insn)
            return 1;
    return 0;
}

/* The values a + b (b may be NULL) takes over every iteration of the enclosing
   loops (loop variable d runs 0..loop_count[d]-1), in 128-bit arithmetic. 0
   when some enclosing loop has no iteration (the instruction never runs); -1
   when a value leaves int64. */
static int affine_range(const ProgramWalk *w, const PtoAffine *a, const PtoAffine *b, int64_t *lo, int64_t *hi)
{
    if (never_runs(w))
        return 0;
    __int128 min = (__int128)a->base + (b != NULL ? b->base : 0), max = min;
    for (uint32_t d = 0; d < w->nest.loops; d++) {
        /* |coef| <= 2^64 and count - 1 < 2^63: each term fits, and a sum is
           checked against int64 before the next term is added */
        __int128 coef = (__int128)a->coef[d] + (b != NULL ? b->coef[d] : 0);
        __int128 end = coef * (__int128)(w->loop_count[d] - 1);
        if (end < 0)
            min += end;
        else
            max += end;
        if (min < INT64_MIN || max > INT64_MAX)
            return -1;
    }
    if (min < INT64_MIN || max > INT64_MAX)
        return -1;
    if (b == NULL && (a->clamp & PTO_AFFINE_HAS_LO) != 0) {
        min = min < a->lo ? a->lo : min;
        max = max < a->lo ? a->lo : max;
    }
    if (b == NULL && (a->clamp & PTO_AFFINE_HAS_HI) != 0) {
        min = min > a->hi ? a->hi : min;
        max = max > a->hi ? a->hi : max;
    }
    *lo = (int64_t)min;
    *hi = (int64_t)max;
    return 1;
}

/* An affine expression may only use the loop variables of enclosing loops. */
static int check_affine(CallableDecoder *d, const PtoAffine *a, uint32_t loops, uint32_t insn, uint32_t param,
                        const char *what)
{
    for (uint32_t k = loops; k < PTO_PROGRAM_MAX_LOOP_DEPTH; k++)
        if (a->coef[k] != 0)
            return decoder_fail(d, "instruction %u param %u: %s uses loop variable %u but only %u loop(s) enclose it",
                        insn, param, what, k, loops);
    if (pto_affine_malformed(a))
        return decoder_fail(d, "instruction %u param %u: %s has a malformed min/max clamp", insn, param, what);
    return PTO_OK;
}

/* What registration can prove about a view from the text alone: offsets and
   sizes never negative and never overflowing over all iterations, and a view
   of a local inside its ALLOC_TENSOR bytes. (Argument tensors' sizes are the
   run's: the interpreter checks those.) */
static int check_view_range(CallableDecoder *d, const ProgramWalk *w, const PtoProgramParam *p, uint32_t insn, uint32_t i)
{
    int64_t off_lo, off_hi, size_lo, size_hi, end_lo, end_hi;
    int r1 = affine_range(w, &p->offset, NULL, &off_lo, &off_hi), r2 = affine_range(w, &p->size, NULL, &size_lo, &size_hi);
    if (r1 == 0)
        return PTO_OK; /* inside a loop that never iterates */
    if (r1 < 0 || r2 < 0)
        return decoder_fail(d, "instruction %u param %u: the view's %s leaves the 64-bit range in some iteration", insn, i,
                    r1 < 0 ? "offset" : "size");
    if (off_lo < 0)
        return decoder_fail(d, "instruction %u param %u: the view offset reaches %lld; a view lies inside its tensor", insn, i,
                    (long long)off_lo);
    if (size_lo < 0)
        return decoder_fail(d, "instruction %u param %u: the view size reaches %lld", insn, i, (long long)size_lo);
    int r3 = affine_range(w, &p->offset, &p->size, &end_lo, &end_hi);
    if (r3 < 0)
        return decoder_fail(d, "instruction %u param %u: the view's end leaves the 64-bit range in some iteration", insn, i);
    if (p->kind == PTO_PARAM_LOCAL_TENSOR && (uint64_t)end_hi > w->local_bytes[p->index])
        return decoder_fail(d, "instruction %u param %u: the view reaches byte %lld of local tensor %u, which has %llu bytes",
                    insn, i, (long long)end_hi, p->index, (unsigned long long)w->local_bytes[p->index]);
    return PTO_OK;
}

/* Beyond VIEW_PROOF_ITERATIONS: what value ranges over all iterations prove
   exactly (affine_range applies a single expression's clamp exactly). A
   negative origin, offset or extent, a selected index past its bound, and an
   unclamped offset + extent past its bound (one affine expression: its largest
   value is exact) are refused. What clamps on a sum hide, and a local's bytes,
   are left to the interpreter: the view counts in views_unproved. */
static int check_view_ranges(CallableDecoder *d, const ProgramWalk *w, const PtoProgramParam *p, uint32_t insn, uint32_t i)
{
    int64_t lo, hi;
    if (affine_range(w, &p->offset, NULL, &lo, &hi) < 0)
        return decoder_fail(d, "instruction %u param %u: the view origin leaves the 64-bit range in some iteration", insn, i);
    if (lo < 0)
        return decoder_fail(d, "instruction %u param %u: the view origin reaches element %lld in some iteration", insn, i,
                    (long long)lo);
    int unproved = p->kind == PTO_PARAM_LOCAL_TENSOR;
    __int128 reach = hi; /* the last element, at most, once every dim is inside its bound */
    for (uint32_t k = 0; k < p->ndims; k++) {
        if (p->dims[k].bound > 0 && reach <= PTO_VIEW_REACH_LIMIT)
            reach += (__int128)(p->dims[k].bound - 1) * p->dims[k].stride;
        const PtoViewDim *dim = &p->dims[k];
        int selected = (dim->flags & PTO_VIEW_DIM_SELECTED) != 0;
        int64_t off_lo, off_hi, ext_lo = 1, ext_hi = 1, end_lo, end_hi;
        if (affine_range(w, &dim->offset, NULL, &off_lo, &off_hi) < 0 ||
            (!selected && affine_range(w, &dim->extent, NULL, &ext_lo, &ext_hi) < 0))
            return decoder_fail(d, "instruction %u param %u: dim %u's offset or extent leaves the 64-bit range in some "
                           "iteration", insn, i, k);
        if (off_lo < 0 || ext_lo < 0)
            return decoder_fail(d, "instruction %u param %u: dim %u's %s reaches %lld in some iteration", insn, i, k,
                        off_lo < 0 ? "offset" : "extent", (long long)(off_lo < 0 ? off_lo : ext_lo));
        if (selected || (dim->offset.clamp == 0 && dim->extent.clamp == 0)) {
            if (selected) {
                end_hi = off_hi + 1;
            } else if (affine_range(w, &dim->offset, &dim->extent, &end_lo, &end_hi) < 0) {
                return decoder_fail(d, "instruction %u param %u: dim %u's end leaves the 64-bit range in some iteration", insn,
                            i, k);
            }
            if (end_hi > dim->bound)
                return decoder_fail(d, "instruction %u param %u: dim %u reaches element %lld of its bound of %lld in some "
                               "iteration", insn, i, k, (long long)end_hi, (long long)dim->bound);
        } else {
            unproved = 1;
        }
    }
    if (reach > PTO_VIEW_REACH_LIMIT || (reach + 1) * pto_dtype_bytes(p->dtype) > INT64_MAX)
        unproved = 1; /* it may leave int64: the interpreter checks */
    d->view->views_unproved += unproved;
    return PTO_OK;
}

/* Iterations of a SUBMIT up to which registration proves a strided view for
   every loop value; beyond, the interpreter checks each one as it submits it. */
#define VIEW_PROOF_ITERATIONS (1u << 16)

/* A strided view (ndims >= 1): its static fields, then every iteration of the
   enclosing loops in execution order when there are at most
   VIEW_PROOF_ITERATIONS of them, naming the first bad one. A view of an
   argument tensor is checked against its dims' bounds (the tensor's bytes are
   the run's); a view of a local also against the ALLOC_TENSOR bytes. */
static int check_strided_view(CallableDecoder *d, const ProgramWalk *w, const PtoProgramParam *p, uint32_t insn, uint32_t i)
{
    char why[160];
    if (pto_view_param_check(p, why, sizeof why) != 0)
        return decoder_fail(d, "instruction %u param %u: %s", insn, i, why);
    int rc = check_affine(d, &p->offset, w->nest.loops, insn, i, "the view origin");
    for (uint32_t k = 0; k < p->ndims && rc == PTO_OK; k++)
        if ((rc = check_affine(d, &p->dims[k].offset, w->nest.loops, insn, i, "a dim's offset")) == PTO_OK)
            rc = check_affine(d, &p->dims[k].extent, w->nest.loops, insn, i, "a dim's extent");
    if (rc != PTO_OK || never_runs(w))
        return rc;
    uint64_t iterations = 1;
    for (uint32_t k = 0; k < w->nest.loops; k++)
        if (__builtin_mul_overflow(iterations, w->loop_count[k], &iterations) || iterations > VIEW_PROOF_ITERATIONS)
            return check_view_ranges(d, w, p, insn, i);
    /* an argument tensor's bytes are the run's: its view must at least stay in int64, as a flat view's values do */
    uint64_t bytes = p->kind == PTO_PARAM_LOCAL_TENSOR ? w->local_bytes[p->index] : (uint64_t)INT64_MAX;
    int64_t vars[PTO_PROGRAM_MAX_LOOP_DEPTH] = { 0 };
    for (uint64_t n = 0; n < iterations; n++) {
        PtoTensorView view;
        uint64_t span;
        if (pto_view_param_resolve(p, vars, w->nest.loops, 0, bytes, &view, &span, why, sizeof why) != 0) {
            char at[96];
            pto_loop_values_text(vars, w->nest.loops, at, sizeof at);
            return decoder_fail(d, "instruction %u param %u (%s %s %u): %s at %s", insn, i, decoder_direction_name(p->direction),
                        p->kind == PTO_PARAM_LOCAL_TENSOR ? "local tensor" : "argument tensor", p->index, why, at);
        }
        for (uint32_t k = w->nest.loops; k-- > 0;) { /* the next iteration: innermost loop first */
            if ((uint64_t)++vars[k] < w->loop_count[k])
                break;
            vars[k] = 0;
        }
    }
    return PTO_OK;
}

/* A flat view and a scalar carry no dtype, dims or clamps of a strided view. */
static int check_unstrided(CallableDecoder *d, const PtoProgramParam *p, uint32_t insn, uint32_t i)
{
    static const PtoViewDim zero_dims[PTO_VIEW_MAX_DIMS];
    if (p->dtype != 0 || memcmp(p->dims, zero_dims, sizeof zero_dims) != 0)
        return decoder_fail(d, "instruction %u param %u: dtype and dims are set but ndims is 0", insn, i);
    if (p->kind != PTO_PARAM_SCALAR_AFFINE && p->offset.clamp != 0)
        return decoder_fail(d, "instruction %u param %u: only a strided view or a scalar value takes a min/max clamp", insn, i);
    if (p->size.clamp != 0)
        return decoder_fail(d, "instruction %u param %u: a flat view's size takes no min/max clamp", insn, i);
    return PTO_OK;
}

static int check_param(CallableDecoder *d, const ProgramWalk *w, const PtoProgramParam *p, uint32_t insn, uint32_t i)
{
    const ChipCallableView *v = d->view;
    uint32_t loops = w->nest.loops;
    int rc;
    if (p->ndims != 0 && p->kind != PTO_PARAM_ARG_TENSOR && p->kind != PTO_PARAM_LOCAL_TENSOR)
        return decoder_fail(d, "instruction %u param %u: a scalar has ndims 0, not %u", insn, i, p->ndims);
    if (p->ndims == 0 && (rc = check_unstrided(d, p, insn, i)) != PTO_OK)
        return rc;
    switch (p->kind) {
    case PTO_PARAM_ARG_TENSOR:
    case PTO_PARAM_LOCAL_TENSOR:
        if (p->direction != PTO_ARG_IN && p->direction != PTO_ARG_OUT && p->direction != PTO_ARG_INOUT)
            return decoder_fail(d, "instruction %u param %u: a tensor view needs direction IN, OUT or INOUT, not %s (%u)",
                        insn, i, decoder_direction_name(p->direction), p->direction);
        if (p->kind == PTO_PARAM_ARG_TENSOR && p->index >= v->tensor_count)
            return decoder_fail(d, "instruction %u param %u names %s tensor %u but the %s has %u tensor(s)", insn, i,
                        d->body ? "boundary" : "argument", p->index, d->body ? "boundary" : "signature",
                        v->tensor_count);
        if (p->kind == PTO_PARAM_LOCAL_TENSOR) {
            if (p->index >= v->program_header.local_count)
                return decoder_fail(d, "instruction %u param %u names local tensor %u but local_count is %u", insn, i,
                            p->index, v->program_header.local_count);
            if (!w->allocated[p->index])
                return decoder_fail(d, "instruction %u param %u uses local tensor %u before its ALLOC_TENSOR", insn, i,
                            p->index);
            /* the run executes this use but never that ALLOC_TENSOR: every run would
               refuse it, so registration does (a use that never runs is fine) */
            if (w->alloc_skipped[p->index] != NO_ALLOC_SKIPPED && !never_runs(w))
                return decoder_fail(d,
                            "instruction %u param %u uses local tensor %u, whose ALLOC_TENSOR (instruction %u) is "
                            "inside a LOOP of count 0 and never runs",
                            insn, i, p->index, w->alloc_skipped[p->index]);
            if (w->local_scope[p->index] != NO_SCOPE && !scope_open(&w->nest, w->local_scope[p->index]))
                return decoder_fail(d,
                            "instruction %u param %u uses local tensor %u after the scope that frees it (SCOPE_BEGIN "
                            "at instruction %u) has ended",
                            insn, i, p->index, w->local_scope[p->index]);
        }
        if (p->kind == PTO_PARAM_ARG_TENSOR && p->direction != PTO_ARG_IN && v->signature[p->index] == PTO_ARG_IN)
            return decoder_fail(d, "instruction %u param %u (%s) writes %s tensor %u, which the %s declares IN", insn, i,
                        decoder_direction_name(p->direction), d->body ? "boundary" : "argument", p->index,
                        d->body ? "sub-graph's boundary" : "signature");
        if (p->ndims != 0)
            return check_strided_view(d, w, p, insn, i);
        if ((rc = check_affine(d, &p->offset, loops, insn, i, "the view offset")) != PTO_OK ||
            (rc = check_affine(d, &p->size, loops, insn, i, "the view size")) != PTO_OK)
            return rc;
        return check_view_range(d, w, p, insn, i);
    case PTO_PARAM_SCALAR_IMM:
    case PTO_PARAM_SCALAR_ARG:
    case PTO_PARAM_SCALAR_AFFINE:
        if (p->direction != PTO_ARG_SCALAR)
            return decoder_fail(d, "instruction %u param %u: a scalar needs direction SCALAR, not %s (%u)", insn, i,
                        decoder_direction_name(p->direction), p->direction);
        if (p->kind == PTO_PARAM_SCALAR_ARG && p->index >= v->scalar_count)
            return decoder_fail(d, "instruction %u param %u names %s scalar %u but the %s has %u scalar(s)", insn, i,
                        d->body ? "boundary" : "argument", p->index, d->body ? "boundary" : "signature",
                        v->scalar_count);
        if (p->kind == PTO_PARAM_SCALAR_AFFINE) {
            int64_t lo, hi;
            if ((rc = check_affine(d, &p->offset, loops, insn, i, "the scalar value")) != PTO_OK)
                return rc;
            if (affine_range(w, &p->offset, NULL, &lo, &hi) < 0)
                return decoder_fail(d, "instruction %u param %u: the scalar value leaves the 64-bit range in some iteration",
                            insn, i);
        }
        return PTO_OK;
    default:
        return decoder_fail(d, "instruction %u param %u has invalid kind %u", insn, i, p->kind);
    }
}

static int check_submit(CallableDecoder *d, const ProgramWalk *w, const PtoProgramInsn *in, uint32_t index)
{
    const PtoSubmitInsn *s = &in->u.submit;
    if (in->head.param_count > PTO_MAX_TASK_PARAMS)
        return decoder_fail(d, "instruction %u (SUBMIT) has %u params, the limit is %u", index, in->head.param_count,
                    PTO_MAX_TASK_PARAMS);
    if (s->after_count > PTO_PROGRAM_MAX_AFTER)
        return decoder_fail(d, "instruction %u (SUBMIT) waits for %u tasks, the limit is %u", index, s->after_count,
                    PTO_PROGRAM_MAX_AFTER);
    uint32_t want = chip_program_submit_size(in->head.param_count, s->after_count);
    if (in->head.size_bytes != want)
        return decoder_fail(d, "instruction %u (SUBMIT) is %u bytes; %u params and %u predecessors need %u", index,
                    in->head.size_bytes, in->head.param_count, s->after_count, want);
    if (s->reserved != 0)
        return decoder_fail(d, "instruction %u (SUBMIT) reserved field is %u, must be 0", index, s->reserved);
    if (s->after_count > 0 && d->body)
        return decoder_fail(d, "instruction %u (SUBMIT) names %u predecessors: a sub-graph body's dependencies are all "
                       "inferred (it has no MANUAL scope)", index, s->after_count);
    if (s->after_count > 0) {
        int scope = innermost_scope(&w->nest);
        if (scope < 0 || !w->nest.manual[scope])
            return decoder_fail(d, "instruction %u (SUBMIT) names predecessors outside a MANUAL scope: its innermost scope "
                           "must begin with SCOPE_BEGIN_MANUAL",
                        index);
        for (uint32_t k = 0; k < s->after_count; k++) {
            PtoAffine a;
            chip_program_after(d->view, in, k, &a);
            int rc = check_affine(d, &a, w->nest.loops, index, in->head.param_count + k, "a predecessor ordinal");
            if (rc != PTO_OK)
                return rc;
        }
    }
    if (chip_callable_child_of(d->view, s->func_id) < 0)
        return decoder_fail(d, "instruction %u submits func_id %u, which is not a child of the callable", index,
                    s->func_id);
    for (uint32_t i = 0; i < in->head.param_count; i++) {
        PtoProgramParam p;
        chip_program_param(d->view, in, i, &p);
        int rc = check_param(d, w, &p, index, i);
        if (rc != PTO_OK)
            return rc;
    }
    d->view->submit_count++;
    return PTO_OK;
}

static int check_fixed_size(CallableDecoder *d, const PtoProgramInsn *in, uint32_t index, uint32_t size)
{
    if (in->head.param_count != 0)
        return decoder_fail(d, "instruction %u (%s) has param_count %u, must be 0", index, pto_opcode_name(in->head.opcode),
                    in->head.param_count);
    if (in->head.size_bytes != size)
        return decoder_fail(d, "instruction %u (%s) is %u bytes, must be %u", index, pto_opcode_name(in->head.opcode),
                    in->head.size_bytes, size);
    return PTO_OK;
}

static int open_construct(CallableDecoder *d, Nesting *n, uint16_t opcode, uint32_t index)
{
    if (opcode == PTO_OP_LOOP && n->loops == PTO_PROGRAM_MAX_LOOP_DEPTH)
        return decoder_fail(d, "instruction %u (LOOP) nests loops deeper than %u", index, PTO_PROGRAM_MAX_LOOP_DEPTH);
    if (opcode == PTO_OP_SCOPE_BEGIN && n->scopes == PTO_PROGRAM_MAX_SCOPE_DEPTH)
        return decoder_fail(d, "instruction %u (SCOPE_BEGIN) nests scopes deeper than %u", index,
                    PTO_PROGRAM_MAX_SCOPE_DEPTH);
    n->opcode[n->depth] = opcode;
    n->insn[n->depth] = index;
    n->depth++;
    if (opcode == PTO_OP_LOOP)
        n->loops++;
    else
        n->scopes++;
    return PTO_OK;
}

static int close_construct(CallableDecoder *d, Nesting *n, uint16_t opens, uint32_t index)
{
    const char *closer = opens == PTO_OP_LOOP ? "END_LOOP" : "SCOPE_END";
    if (n->depth == 0)
        return decoder_fail(d, "instruction %u (%s) closes nothing: no %s is open", index, closer, pto_opcode_name(opens));
    if (n->opcode[n->depth - 1] != opens)
        return decoder_fail(d, "instruction %u (%s) would close the %s opened at instruction %u", index, closer,
                    pto_opcode_name(n->opcode[n->depth - 1]), n->insn[n->depth - 1]);
    n->depth--;
    if (opens == PTO_OP_LOOP)
        n->loops--;
    else
        n->scopes--;
    return PTO_OK;
}

/* A local lives until the end of the innermost scope around its ALLOC_TENSOR;
   a loop around that scope allocates it afresh in every iteration. */
static void note_alloc(ProgramWalk *w, const PtoAllocInsn *a, uint32_t index)
{
    const Nesting *n = &w->nest;
    int scope = innermost_scope(n);
    w->allocated[a->local_id] = 1;
    w->alloc_skipped[a->local_id] = never_runs(w) ? index : NO_ALLOC_SKIPPED;
    w->local_bytes[a->local_id] = a->bytes;
    w->local_scope[a->local_id] = scope >= 0 ? n->insn[scope] : NO_SCOPE;
}

static int decode_text(CallableDecoder *d);

/* The construct that makes this point not the top level, or -1 at top level. */
static int enclosing(const Nesting *n)
{
    return n->depth > 0 ? (int)n->depth - 1 : -1;
}

/* SUBGRAPH: the boundary, then the body decoded as a program of its own. */
static int check_subgraph(CallableDecoder *d, ProgramWalk *w, const PtoProgramInsn *in, uint32_t index)
{
    const ChipCallableView *v = d->view;
    const PtoSubgraphInsn *s = &in->u.subgraph;
    if (d->body)
        return decoder_fail(d, "instruction %u (SUBGRAPH %u): a sub-graph body cannot define a sub-graph", index,
                    s->subgraph_id);
    if (in->head.param_count != 0)
        return decoder_fail(d, "instruction %u (SUBGRAPH) has param_count %u, must be 0", index, in->head.param_count);
    if (in->head.size_bytes < sizeof *s)
        return decoder_fail(d, "instruction %u (SUBGRAPH) is %u bytes, less than its %zu-byte head", index,
                    in->head.size_bytes, sizeof *s);
    if (s->reserved != 0)
        return decoder_fail(d, "instruction %u (SUBGRAPH) reserved field is %u, must be 0", index, s->reserved);
    if (s->subgraph_id >= PTO_PROGRAM_MAX_SUBGRAPHS)
        return decoder_fail(d, "instruction %u (SUBGRAPH) defines sub-graph %u; ids are below %u", index, s->subgraph_id,
                    PTO_PROGRAM_MAX_SUBGRAPHS);
    int open = enclosing(&w->nest);
    if (open >= 0)
        return decoder_fail(d, "instruction %u (SUBGRAPH %u) is inside the %s opened at instruction %u: a sub-graph is "
                       "defined at top level", index, s->subgraph_id, pto_opcode_name(w->nest.opcode[open]),
                    w->nest.insn[open]);
    if (w->subgraph_at[s->subgraph_id] != 0)
        return decoder_fail(d, "instruction %u (SUBGRAPH) defines sub-graph %u a second time", index, s->subgraph_id);
    if (s->boundary_count == 0 || s->boundary_count > PTO_SUBGRAPH_MAX_BOUNDARY)
        return decoder_fail(d, "instruction %u (SUBGRAPH %u) has %u boundary parameters; a sub-graph has 1..%u", index,
                    s->subgraph_id, s->boundary_count, PTO_SUBGRAPH_MAX_BOUNDARY);
    uint32_t at = chip_program_subgraph_body_offset(s->boundary_count);
    if (in->head.size_bytes < at + sizeof(PtoProgramHeader))
        return decoder_fail(d, "instruction %u (SUBGRAPH %u) is %u bytes; its %u boundary directions and a body's "
                       "%zu-byte program header need %zu", index, s->subgraph_id, in->head.size_bytes,
                    s->boundary_count, sizeof(PtoProgramHeader), at + sizeof(PtoProgramHeader));
    const uint8_t *dirs = v->program + in->offset + CHIP_SUBGRAPH_DIRECTIONS_OFFSET;
    int scalar_seen = 0;
    for (uint32_t k = 0; k < s->boundary_count; k++) {
        if (dirs[k] > PTO_ARG_INOUT)
            return decoder_fail(d, "instruction %u (SUBGRAPH %u) boundary parameter %u has direction %u, not SCALAR, "
                           "IN, OUT or INOUT", index, s->subgraph_id, k, dirs[k]);
        if (dirs[k] != PTO_ARG_SCALAR && scalar_seen)
            return decoder_fail(d, "instruction %u (SUBGRAPH %u) boundary parameter %u is a tensor after a scalar: the "
                           "boundary's tensors come first", index, s->subgraph_id, k);
        scalar_seen |= dirs[k] == PTO_ARG_SCALAR;
    }
    for (uint32_t k = s->boundary_count; k < at - CHIP_SUBGRAPH_DIRECTIONS_OFFSET; k++)
        if (dirs[k] != 0)
            return decoder_fail(d, "instruction %u (SUBGRAPH %u) padding byte %u after its boundary directions is %u, "
                           "must be 0", index, s->subgraph_id, k, dirs[k]);

    ChipCallableView body;
    char msg[CHIP_CALLABLE_MESSAGE_BYTES];
    chip_program_subgraph_body(v, in, &body);
    CallableDecoder sub = { .bytes = d->bytes, .total = d->total, .msg = msg, .msg_size = sizeof msg, .view = &body,
                            .body = s->subgraph_id + 1 };
    if (decode_text(&sub) != PTO_OK)
        return decoder_fail(d, "instruction %u (SUBGRAPH %u) body: %s", index, s->subgraph_id, msg);
    d->view->opcodes_used |= body.opcodes_used;
    d->view->submit_count += body.submit_count;
    d->view->views_unproved += body.views_unproved;
    w->subgraph_at[s->subgraph_id] = in->offset;
    return PTO_OK;
}

/* INVOKE: a defined sub-graph, params like a SUBMIT's whose directions are its boundary's. */
static int check_invoke(CallableDecoder *d, const ProgramWalk *w, const PtoProgramInsn *in, uint32_t index)
{
    const ChipCallableView *v = d->view;
    uint32_t id = in->u.invoke.subgraph_id, n = in->head.param_count;
    if (d->body)
        return decoder_fail(d, "instruction %u (INVOKE %u): a sub-graph body cannot invoke a sub-graph", index, id);
    if (n > PTO_MAX_TASK_PARAMS)
        return decoder_fail(d, "instruction %u (INVOKE) has %u params, the limit is %u", index, n, PTO_MAX_TASK_PARAMS);
    if (in->head.size_bytes != chip_program_invoke_size(n))
        return decoder_fail(d, "instruction %u (INVOKE) is %u bytes; %u params need %u", index, in->head.size_bytes, n,
                    chip_program_invoke_size(n));
    if (in->u.invoke.reserved != 0)
        return decoder_fail(d, "instruction %u (INVOKE) reserved field is %u, must be 0", index, in->u.invoke.reserved);
    if (id >= PTO_PROGRAM_MAX_SUBGRAPHS || w->subgraph_at[id] == 0)
        return decoder_fail(d, "instruction %u (INVOKE) invokes sub-graph %u, which no earlier SUBGRAPH defines", index,
                    id);
    for (uint32_t k = w->nest.depth; k-- > 0;)
        if (w->nest.opcode[k] == PTO_OP_SCOPE_BEGIN && w->nest.manual[k])
            return decoder_fail(d, "instruction %u (INVOKE %u) is inside the MANUAL scope opened at instruction %u: a "
                           "sub-graph is not invoked inside a MANUAL scope", index, id, w->nest.insn[k]);
    PtoSubgraphInsn def;
    memcpy(&def, v->program + w->subgraph_at[id], sizeof def);
    if (n != def.boundary_count)
        return decoder_fail(d, "instruction %u (INVOKE %u) passes %u params; the sub-graph's boundary has %u", index, id,
                    n, def.boundary_count);
    const uint8_t *dirs = v->program + w->subgraph_at[id] + CHIP_SUBGRAPH_DIRECTIONS_OFFSET;
    for (uint32_t i = 0; i < n; i++) {
        PtoProgramParam p;
        chip_program_param(v, in, i, &p);
        if (p.direction != dirs[i])
            return decoder_fail(d, "instruction %u (INVOKE %u) param %u is %s; the sub-graph's boundary parameter %u "
                           "is %s", index, id, i, decoder_direction_name(p.direction), i,
                        decoder_direction_name(dirs[i]));
        int rc = check_param(d, w, &p, index, i);
        if (rc != PTO_OK)
            return rc;
    }
    return PTO_OK;
}

static int check_insn(CallableDecoder *d, ProgramWalk *w, const PtoProgramInsn *in, uint32_t index)
{
    int rc;
    switch (in->head.opcode) {
    case PTO_OP_SUBMIT:
        return check_submit(d, w, in, index);
    case PTO_OP_ALLOC_TENSOR:
        if ((rc = check_fixed_size(d, in, index, sizeof(PtoAllocInsn))) != PTO_OK)
            return rc;
        if (in->u.alloc.reserved != 0)
            return decoder_fail(d, "instruction %u (ALLOC_TENSOR) reserved field is %u, must be 0", index,
                        in->u.alloc.reserved);
        if (in->u.alloc.local_id >= d->view->program_header.local_count)
            return decoder_fail(d, "instruction %u (ALLOC_TENSOR) allocates local %u but local_count is %u", index,
                        in->u.alloc.local_id, d->view->program_header.local_count);
        if (w->allocated[in->u.alloc.local_id])
            return decoder_fail(d, "instruction %u (ALLOC_TENSOR) allocates local %u a second time", index,
                        in->u.alloc.local_id);
        note_alloc(w, &in->u.alloc, index);
        return PTO_OK;
    case PTO_OP_LOOP:
        if ((rc = check_fixed_size(d, in, index, sizeof(PtoLoopInsn))) != PTO_OK)
            return rc;
        if (in->u.loop.count > (uint64_t)INT64_MAX)
            return decoder_fail(d, "instruction %u (LOOP) count %llu exceeds %lld", index,
                        (unsigned long long)in->u.loop.count, (long long)INT64_MAX);
        if ((rc = open_construct(d, &w->nest, PTO_OP_LOOP, index)) != PTO_OK)
            return rc;
        w->loop_count[w->nest.loops - 1] = in->u.loop.count;
        return PTO_OK;
    case PTO_OP_END_LOOP:
        if ((rc = check_fixed_size(d, in, index, sizeof(PtoInsnHead))) != PTO_OK)
            return rc;
        return close_construct(d, &w->nest, PTO_OP_LOOP, index);
    case PTO_OP_SUBGRAPH:
        return check_subgraph(d, w, in, index);
    case PTO_OP_INVOKE:
        return check_invoke(d, w, in, index);
    case PTO_OP_SCOPE_BEGIN:
    case PTO_OP_SCOPE_BEGIN_MANUAL:
        if (in->head.opcode == PTO_OP_SCOPE_BEGIN_MANUAL && d->body)
            return decoder_fail(d, "instruction %u (SCOPE_BEGIN_MANUAL): a sub-graph body has no MANUAL scope (its "
                           "dependencies are all inferred)", index);
        if ((rc = check_fixed_size(d, in, index, sizeof(PtoInsnHead))) != PTO_OK ||
            (rc = open_construct(d, &w->nest, PTO_OP_SCOPE_BEGIN, index)) != PTO_OK)
            return rc;
        w->nest.manual[w->nest.depth - 1] = in->head.opcode == PTO_OP_SCOPE_BEGIN_MANUAL;
        return PTO_OK;
    case PTO_OP_SCOPE_END:
        if ((rc = check_fixed_size(d, in, index, sizeof(PtoInsnHead))) != PTO_OK)
            return rc;
        return close_construct(d, &w->nest, PTO_OP_SCOPE_BEGIN, index);
    default:
        return decoder_fail(d, "instruction %u has unknown opcode %u", index, in->head.opcode);
    }
}

/* Reads the instruction at `offset` into `in` after checking its head fits. */
static int read_insn(CallableDecoder *d, uint32_t offset, uint32_t index, PtoProgramInsn *in)
{
    const ChipCallableView *v = d->view;
    if (v->program_size - offset < sizeof(PtoInsnHead))
        return decoder_fail(d, "instruction %u at program byte %u runs past the program's %u bytes", index, offset,
                    v->program_size);
    memcpy(&in->head, v->program + offset, sizeof in->head);
    in->offset = offset;
    if (in->head.size_bytes < sizeof(PtoInsnHead) || in->head.size_bytes % 8 != 0)
        return decoder_fail(d, "instruction %u at program byte %u has size %u: a multiple of 8 of at least 8 is required",
                    index, offset, in->head.size_bytes);
    if (in->head.size_bytes > v->program_size - offset)
        return decoder_fail(d, "instruction %u at program byte %u (%u bytes) runs past the program's %u bytes", index,
                    offset, in->head.size_bytes, v->program_size);
    size_t body = in->head.size_bytes < sizeof in->u ? in->head.size_bytes : sizeof in->u;
    memset(&in->u, 0, sizeof in->u);
    memcpy(&in->u, v->program + offset, body);
    return PTO_OK;
}

/* Decodes d->view's program text (program, program_size): header and instructions. */
static int decode_text(CallableDecoder *d)
{
    ChipCallableView *v = d->view;
    int rc;
    PtoProgramHeader *ph = &v->program_header;
    memcpy(ph, v->program, sizeof *ph);
    if (ph->magic != PTO_PROGRAM_MAGIC)
        return decoder_fail(d, "program has bad magic 0x%08x, expected 0x%08x (\"PTPG\")", ph->magic, PTO_PROGRAM_MAGIC);
    if (ph->reserved != 0)
        return decoder_fail(d, "program header reserved field is %u, must be 0", ph->reserved);
    if (ph->instruction_count > PTO_PROGRAM_MAX_INSNS)
        return decoder_fail(d, "program has %u instructions, the limit is %u", ph->instruction_count, PTO_PROGRAM_MAX_INSNS);
    if (ph->local_count > PTO_PROGRAM_MAX_LOCALS)
        return decoder_fail(d, "program declares %u local tensors, the limit is %u", ph->local_count,
                    PTO_PROGRAM_MAX_LOCALS);

    ProgramWalk walk;
    memset(&walk, 0, sizeof walk);
    uint32_t offset = sizeof(PtoProgramHeader);
    for (uint32_t i = 0; i < ph->instruction_count; i++) {
        PtoProgramInsn in;
        if ((rc = read_insn(d, offset, i, &in)) != PTO_OK || (rc = check_insn(d, &walk, &in, i)) != PTO_OK)
            return rc;
        v->opcodes_used |= 1u << in.head.opcode;
        offset += in.head.size_bytes;
    }
    if (walk.nest.depth > 0)
        return decoder_fail(d, "unbalanced program: the %s at instruction %u is never closed",
                    pto_opcode_name(walk.nest.opcode[walk.nest.depth - 1]), walk.nest.insn[walk.nest.depth - 1]);
    if (offset != v->program_size)
        return decoder_fail(d, "program has %u bytes after its last instruction", v->program_size - offset);
    return PTO_OK;
}

int decoder_program(CallableDecoder *d)
{
    ChipCallableView *v = d->view;
    const ChipCallableHeader *h = &v->header;
    int rc = decoder_check_blob(d, h->orchestration, "program", 8);
    if (rc != PTO_OK)
        return rc;
    if (h->orchestration_entry.size != 0 || h->orchestration_entry.offset != 0)
        return decoder_fail(d, "a program orchestration carries no entry symbol, but orchestration_entry is set");
    if (h->orchestration.size < sizeof(PtoProgramHeader))
        return decoder_fail(d, "program is %u bytes, smaller than its %zu-byte header", h->orchestration.size,
                    sizeof(PtoProgramHeader));
    v->program = d->bytes + h->orchestration.offset;
    v->program_size = h->orchestration.size;
    return decode_text(d);
}

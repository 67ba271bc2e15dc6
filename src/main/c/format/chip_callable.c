#include "format/chip_callable.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/program_view.h"
#include "util/last_error.h"
#include "device/pto_builtin_kernels.h"
#include "ptorun/pto_runtime_c_api.h"

#define BUILTIN_NAME(name) #name,
static const char *const builtin_kernel_names[] = { PTO_BUILTIN_KERNELS(BUILTIN_NAME) };

/* Where the decoder is and what it writes to. */
typedef struct Decoder {
    const uint8_t *bytes;
    uint32_t total;
    char *msg;
    size_t msg_size;
    ChipCallableView *view;
} Decoder;

__attribute__((format(printf, 2, 3))) static int fail(Decoder *d, const char *fmt, ...)
{
    if (d->msg != NULL && d->msg_size > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(d->msg, d->msg_size, fmt, ap);
        va_end(ap);
    }
    return PTO_ERR_BAD_CALLABLE;
}

int pto_builtin_kernel_known(const char *name, size_t len)
{
    for (size_t i = 0; i < sizeof builtin_kernel_names / sizeof builtin_kernel_names[0]; i++)
        if (strlen(builtin_kernel_names[i]) == len && memcmp(builtin_kernel_names[i], name, len) == 0)
            return 1;
    return 0;
}

const char *pto_opcode_name(uint32_t opcode)
{
    switch (opcode) {
    case PTO_OP_SUBMIT: return "SUBMIT";
    case PTO_OP_ALLOC_TENSOR: return "ALLOC_TENSOR";
    case PTO_OP_LOOP: return "LOOP";
    case PTO_OP_END_LOOP: return "END_LOOP";
    case PTO_OP_SCOPE_BEGIN: return "SCOPE_BEGIN";
    case PTO_OP_SCOPE_BEGIN_MANUAL: return "SCOPE_BEGIN_MANUAL";
    case PTO_OP_SCOPE_END: return "SCOPE_END";
    default: return "unknown";
    }
}

static const char *direction_name(uint32_t d)
{
    switch (d) {
    case PTO_ARG_SCALAR: return "SCALAR";
    case PTO_ARG_IN: return "IN";
    case PTO_ARG_OUT: return "OUT";
    case PTO_ARG_INOUT: return "INOUT";
    default: return "invalid";
    }
}

/* ---- blobs and names --------------------------------------------------------- */

/* A blob lies inside [sizeof header, total), is `align`-aligned, and, when
   `exact` is non-zero, is exactly `want` bytes. {0,0} is an absent blob. */
static int check_blob(Decoder *d, PtoBlobRef ref, const char *what, uint32_t align)
{
    if (ref.size == 0 && ref.offset == 0)
        return PTO_OK;
    if (ref.offset < sizeof(ChipCallableHeader))
        return fail(d, "%s blob at offset %u overlaps the %zu-byte header", what, ref.offset,
                    sizeof(ChipCallableHeader));
    if ((uint64_t)ref.offset + ref.size > d->total)
        return fail(d, "%s blob [%u, %u + %u) lies outside the callable's total_size of %u bytes", what,
                    ref.offset, ref.offset, ref.size, d->total);
    if (ref.offset % align != 0)
        return fail(d, "%s blob offset %u is not %u-byte aligned", what, ref.offset, align);
    return PTO_OK;
}

/* A kernel name or entry symbol: 1..PTO_CALLABLE_MAX_NAME printable bytes, no space. */
static int check_name(Decoder *d, PtoBlobRef ref, const char *what)
{
    int rc = check_blob(d, ref, what, 1);
    if (rc != PTO_OK)
        return rc;
    if (ref.size == 0)
        return fail(d, "%s is empty", what);
    if (ref.size > PTO_CALLABLE_MAX_NAME)
        return fail(d, "%s is %u bytes long, the limit is %u", what, ref.size, PTO_CALLABLE_MAX_NAME);
    for (uint32_t i = 0; i < ref.size; i++) {
        uint8_t c = d->bytes[ref.offset + i];
        if (c <= 0x20 || c >= 0x7f)
            return fail(d, "%s has byte 0x%02x at position %u: names are printable ASCII without spaces",
                        what, c, i);
    }
    return PTO_OK;
}

/* ---- header, signature, children ------------------------------------------------ */

static int decode_header(Decoder *d, const uint8_t *bytes)
{
    ChipCallableHeader *h = &d->view->header;
    memcpy(h, bytes, sizeof *h);
    if (h->magic != PTO_CALLABLE_MAGIC)
        return fail(d, "bad magic 0x%08x, expected 0x%08x (\"PTCC\")", h->magic, PTO_CALLABLE_MAGIC);
    if (h->format_version != PTO_CALLABLE_FORMAT_VERSION)
        return fail(d, "format version %u is not supported (expected %u)", h->format_version,
                    PTO_CALLABLE_FORMAT_VERSION);
    if (h->total_size < sizeof *h)
        return fail(d, "total_size %u is smaller than the %zu-byte header", h->total_size, sizeof *h);
    if (h->total_size > PTO_CALLABLE_MAX_BYTES)
        return fail(d, "total_size %u exceeds the limit of %u bytes", h->total_size, PTO_CALLABLE_MAX_BYTES);
    /* total_size is now trusted: the caller vouches for that many bytes */
    d->total = h->total_size;
    if (h->reserved != 0)
        return fail(d, "header reserved field is %u, must be 0", h->reserved);
    if (h->orchestration_kind != PTO_ORCH_PROGRAM && h->orchestration_kind != PTO_ORCH_LIBRARY)
        return fail(d, "unknown orchestration kind %u", h->orchestration_kind);
    if (h->child_count > PTO_CALLABLE_MAX_CHILDREN)
        return fail(d, "child_count %u exceeds the limit of %u", h->child_count, PTO_CALLABLE_MAX_CHILDREN);
    if (h->signature_length > PTO_CALLABLE_MAX_SIGNATURE)
        return fail(d, "signature_length %u exceeds the limit of %u", h->signature_length,
                    PTO_CALLABLE_MAX_SIGNATURE);
    return PTO_OK;
}

static int decode_signature(Decoder *d)
{
    const ChipCallableHeader *h = &d->view->header;
    int rc = check_blob(d, h->signature, "signature", 1);
    if (rc != PTO_OK)
        return rc;
    if (h->signature.size != h->signature_length)
        return fail(d, "signature blob is %u bytes for a signature_length of %u", h->signature.size,
                    h->signature_length);
    const uint8_t *sig = d->bytes + h->signature.offset;
    uint32_t tensors = 0, scalars = 0;
    for (uint32_t i = 0; i < h->signature_length; i++) {
        if (sig[i] > PTO_ARG_INOUT)
            return fail(d, "signature entry %u has invalid direction %u", i, sig[i]);
        if (sig[i] == PTO_ARG_SCALAR) {
            scalars++;
        } else if (scalars > 0) {
            return fail(d, "signature entry %u is a tensor (%s) after a scalar: tensors come first", i,
                        direction_name(sig[i]));
        } else {
            tensors++;
        }
    }
    if (tensors > PTO_MAX_TENSOR_ARGS)
        return fail(d, "signature has %u tensors, the limit is %d", tensors, PTO_MAX_TENSOR_ARGS);
    if (scalars > PTO_MAX_SCALAR_ARGS)
        return fail(d, "signature has %u scalars, the limit is %d", scalars, PTO_MAX_SCALAR_ARGS);
    d->view->signature = sig;
    d->view->tensor_count = tensors;
    d->view->scalar_count = scalars;
    return PTO_OK;
}

void chip_callable_child(const ChipCallableView *view, uint32_t index, ChipCallableChild *out)
{
    memcpy(out, view->children + (size_t)index * sizeof *out, sizeof *out);
}

uint32_t chip_callable_resolved_addr_offset(const ChipCallableView *view, uint32_t index)
{
    return view->header.children.offset + index * (uint32_t)sizeof(ChipCallableChild) +
           (uint32_t)offsetof(ChipCallableChild, resolved_addr);
}

static int decode_child(Decoder *d, uint32_t i, ChipCallableChild *c)
{
    chip_callable_child(d->view, i, c);
    char what[64];
    snprintf(what, sizeof what, "child %u (func_id %u) name", i, c->func_id);
    if (c->reserved != 0)
        return fail(d, "child %u reserved field is %u, must be 0", i, c->reserved);
    if (c->func_id > PTO_CALLABLE_MAX_FUNC_ID)
        return fail(d, "child %u func_id %u exceeds the limit of %u", i, c->func_id, PTO_CALLABLE_MAX_FUNC_ID);
    if (c->core_type != PTO_CORE_AIC && c->core_type != PTO_CORE_AIV)
        return fail(d, "child %u (func_id %u) has invalid core type %u", i, c->func_id, c->core_type);
    if (c->resolved_addr != 0)
        return fail(d, "child %u (func_id %u) resolved_addr is set; it must be 0 in a caller's callable", i,
                    c->func_id);
    int rc = check_name(d, c->name, what);
    if (rc != PTO_OK)
        return rc;
    const char *name = chip_callable_blob(d->view, c->name);
    int name_len = (int)c->name.size;
    switch (c->source_kind) {
    case PTO_KERNEL_BUILTIN:
        if (c->image.size != 0 || c->image.offset != 0)
            return fail(d, "child %u (func_id %u) is the built-in kernel '%.*s' but carries a library image", i,
                        c->func_id, name_len, name);
        if (!pto_builtin_kernel_known(name, c->name.size))
            return fail(d, "child %u (func_id %u): '%.*s' is not a built-in kernel", i, c->func_id, name_len,
                        name);
        return PTO_OK;
    case PTO_KERNEL_LIBRARY:
        snprintf(what, sizeof what, "child %u (func_id %u) image", i, c->func_id);
        if ((rc = check_blob(d, c->image, what, 1)) != PTO_OK)
            return rc;
        if (c->image.size == 0)
            return fail(d, "child %u (func_id %u) is a kernel library without an image", i, c->func_id);
        d->view->library_children++;
        return PTO_OK;
    default:
        return fail(d, "child %u (func_id %u) has invalid source kind %u", i, c->func_id, c->source_kind);
    }
}

static int decode_children(Decoder *d)
{
    ChipCallableView *v = d->view;
    const ChipCallableHeader *h = &v->header;
    int rc = check_blob(d, h->children, "children", 8);
    if (rc != PTO_OK)
        return rc;
    if (h->children.size != h->child_count * (uint32_t)sizeof(ChipCallableChild))
        return fail(d, "children blob is %u bytes for %u children of %zu bytes", h->children.size,
                    h->child_count, sizeof(ChipCallableChild));
    v->children = d->bytes + h->children.offset;
    for (uint32_t i = 0; i < h->child_count; i++) {
        ChipCallableChild c;
        if ((rc = decode_child(d, i, &c)) != PTO_OK)
            return rc;
        /* insertion into the sorted func_id table finds duplicates on the way */
        uint32_t at = i;
        while (at > 0 && v->sorted_func_ids[at - 1] > c.func_id) {
            v->sorted_func_ids[at] = v->sorted_func_ids[at - 1];
            v->sorted_child[at] = v->sorted_child[at - 1];
            at--;
        }
        if (at > 0 && v->sorted_func_ids[at - 1] == c.func_id)
            return fail(d, "func_id %u is used by child %u and child %u", c.func_id, v->sorted_child[at - 1], i);
        v->sorted_func_ids[at] = c.func_id;
        v->sorted_child[at] = (uint8_t)i;
    }
    return PTO_OK;
}

int chip_callable_child_of(const ChipCallableView *view, uint32_t func_id)
{
    uint32_t lo = 0, hi = view->header.child_count;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (view->sorted_func_ids[mid] < func_id)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < view->header.child_count && view->sorted_func_ids[lo] == func_id)
        return view->sorted_child[lo];
    return -1;
}

/* ---- the program -------------------------------------------------------------- */

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
static int check_affine(Decoder *d, const PtoAffine *a, uint32_t loops, uint32_t insn, uint32_t param,
                        const char *what)
{
    for (uint32_t k = loops; k < PTO_PROGRAM_MAX_LOOP_DEPTH; k++)
        if (a->coef[k] != 0)
            return fail(d, "instruction %u param %u: %s uses loop variable %u but only %u loop(s) enclose it",
                        insn, param, what, k, loops);
    if (pto_affine_malformed(a))
        return fail(d, "instruction %u param %u: %s has a malformed min/max clamp", insn, param, what);
    return PTO_OK;
}

/* What registration can prove about a view from the text alone: offsets and
   sizes never negative and never overflowing over all iterations, and a view
   of a local inside its ALLOC_TENSOR bytes. (Argument tensors' sizes are the
   run's: the interpreter checks those.) */
static int check_view_range(Decoder *d, const ProgramWalk *w, const PtoProgramParam *p, uint32_t insn, uint32_t i)
{
    int64_t off_lo, off_hi, size_lo, size_hi, end_lo, end_hi;
    int r1 = affine_range(w, &p->offset, NULL, &off_lo, &off_hi), r2 = affine_range(w, &p->size, NULL, &size_lo, &size_hi);
    if (r1 == 0)
        return PTO_OK; /* inside a loop that never iterates */
    if (r1 < 0 || r2 < 0)
        return fail(d, "instruction %u param %u: the view's %s leaves the 64-bit range in some iteration", insn, i,
                    r1 < 0 ? "offset" : "size");
    if (off_lo < 0)
        return fail(d, "instruction %u param %u: the view offset reaches %lld; a view lies inside its tensor", insn, i,
                    (long long)off_lo);
    if (size_lo < 0)
        return fail(d, "instruction %u param %u: the view size reaches %lld", insn, i, (long long)size_lo);
    int r3 = affine_range(w, &p->offset, &p->size, &end_lo, &end_hi);
    if (r3 < 0)
        return fail(d, "instruction %u param %u: the view's end leaves the 64-bit range in some iteration", insn, i);
    if (p->kind == PTO_PARAM_LOCAL_TENSOR && (uint64_t)end_hi > w->local_bytes[p->index])
        return fail(d, "instruction %u param %u: the view reaches byte %lld of local tensor %u, which has %llu bytes",
                    insn, i, (long long)end_hi, p->index, (unsigned long long)w->local_bytes[p->index]);
    return PTO_OK;
}

/* Beyond VIEW_PROOF_ITERATIONS: what value ranges over all iterations prove
   exactly (affine_range applies a single expression's clamp exactly). A
   negative origin, offset or extent, a selected index past its bound, and an
   unclamped offset + extent past its bound (one affine expression: its largest
   value is exact) are refused. What clamps on a sum hide, and a local's bytes,
   are left to the interpreter: the view counts in views_unproved. */
static int check_view_ranges(Decoder *d, const ProgramWalk *w, const PtoProgramParam *p, uint32_t insn, uint32_t i)
{
    int64_t lo, hi;
    if (affine_range(w, &p->offset, NULL, &lo, &hi) < 0)
        return fail(d, "instruction %u param %u: the view origin leaves the 64-bit range in some iteration", insn, i);
    if (lo < 0)
        return fail(d, "instruction %u param %u: the view origin reaches element %lld in some iteration", insn, i,
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
            return fail(d, "instruction %u param %u: dim %u's offset or extent leaves the 64-bit range in some "
                           "iteration", insn, i, k);
        if (off_lo < 0 || ext_lo < 0)
            return fail(d, "instruction %u param %u: dim %u's %s reaches %lld in some iteration", insn, i, k,
                        off_lo < 0 ? "offset" : "extent", (long long)(off_lo < 0 ? off_lo : ext_lo));
        if (selected || (dim->offset.clamp == 0 && dim->extent.clamp == 0)) {
            if (selected) {
                end_hi = off_hi + 1;
            } else if (affine_range(w, &dim->offset, &dim->extent, &end_lo, &end_hi) < 0) {
                return fail(d, "instruction %u param %u: dim %u's end leaves the 64-bit range in some iteration", insn,
                            i, k);
            }
            if (end_hi > dim->bound)
                return fail(d, "instruction %u param %u: dim %u reaches element %lld of its bound of %lld in some "
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
static int check_strided_view(Decoder *d, const ProgramWalk *w, const PtoProgramParam *p, uint32_t insn, uint32_t i)
{
    char why[160];
    if (pto_view_param_check(p, why, sizeof why) != 0)
        return fail(d, "instruction %u param %u: %s", insn, i, why);
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
            return fail(d, "instruction %u param %u (%s %s %u): %s at %s", insn, i, direction_name(p->direction),
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
static int check_unstrided(Decoder *d, const PtoProgramParam *p, uint32_t insn, uint32_t i)
{
    static const PtoViewDim zero_dims[PTO_VIEW_MAX_DIMS];
    if (p->dtype != 0 || memcmp(p->dims, zero_dims, sizeof zero_dims) != 0)
        return fail(d, "instruction %u param %u: dtype and dims are set but ndims is 0", insn, i);
    if (p->kind != PTO_PARAM_SCALAR_AFFINE && p->offset.clamp != 0)
        return fail(d, "instruction %u param %u: only a strided view or a scalar value takes a min/max clamp", insn, i);
    if (p->size.clamp != 0)
        return fail(d, "instruction %u param %u: a flat view's size takes no min/max clamp", insn, i);
    return PTO_OK;
}

static int check_param(Decoder *d, const ProgramWalk *w, const PtoProgramParam *p, uint32_t insn, uint32_t i)
{
    const ChipCallableView *v = d->view;
    uint32_t loops = w->nest.loops;
    int rc;
    if (p->ndims != 0 && p->kind != PTO_PARAM_ARG_TENSOR && p->kind != PTO_PARAM_LOCAL_TENSOR)
        return fail(d, "instruction %u param %u: a scalar has ndims 0, not %u", insn, i, p->ndims);
    if (p->ndims == 0 && (rc = check_unstrided(d, p, insn, i)) != PTO_OK)
        return rc;
    switch (p->kind) {
    case PTO_PARAM_ARG_TENSOR:
    case PTO_PARAM_LOCAL_TENSOR:
        if (p->direction != PTO_ARG_IN && p->direction != PTO_ARG_OUT && p->direction != PTO_ARG_INOUT)
            return fail(d, "instruction %u param %u: a tensor view needs direction IN, OUT or INOUT, not %s (%u)",
                        insn, i, direction_name(p->direction), p->direction);
        if (p->kind == PTO_PARAM_ARG_TENSOR && p->index >= v->tensor_count)
            return fail(d, "instruction %u param %u names argument tensor %u but the signature has %u tensor(s)",
                        insn, i, p->index, v->tensor_count);
        if (p->kind == PTO_PARAM_LOCAL_TENSOR) {
            if (p->index >= v->program_header.local_count)
                return fail(d, "instruction %u param %u names local tensor %u but local_count is %u", insn, i,
                            p->index, v->program_header.local_count);
            if (!w->allocated[p->index])
                return fail(d, "instruction %u param %u uses local tensor %u before its ALLOC_TENSOR", insn, i,
                            p->index);
            /* the run executes this use but never that ALLOC_TENSOR: every run would
               refuse it, so registration does (a use that never runs is fine) */
            if (w->alloc_skipped[p->index] != NO_ALLOC_SKIPPED && !never_runs(w))
                return fail(d,
                            "instruction %u param %u uses local tensor %u, whose ALLOC_TENSOR (instruction %u) is "
                            "inside a LOOP of count 0 and never runs",
                            insn, i, p->index, w->alloc_skipped[p->index]);
            if (w->local_scope[p->index] != NO_SCOPE && !scope_open(&w->nest, w->local_scope[p->index]))
                return fail(d,
                            "instruction %u param %u uses local tensor %u after the scope that frees it (SCOPE_BEGIN "
                            "at instruction %u) has ended",
                            insn, i, p->index, w->local_scope[p->index]);
        }
        if (p->kind == PTO_PARAM_ARG_TENSOR && p->direction != PTO_ARG_IN && v->signature[p->index] == PTO_ARG_IN)
            return fail(d, "instruction %u param %u (%s) writes argument tensor %u, which the signature declares IN",
                        insn, i, direction_name(p->direction), p->index);
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
            return fail(d, "instruction %u param %u: a scalar needs direction SCALAR, not %s (%u)", insn, i,
                        direction_name(p->direction), p->direction);
        if (p->kind == PTO_PARAM_SCALAR_ARG && p->index >= v->scalar_count)
            return fail(d, "instruction %u param %u names argument scalar %u but the signature has %u scalar(s)",
                        insn, i, p->index, v->scalar_count);
        if (p->kind == PTO_PARAM_SCALAR_AFFINE) {
            int64_t lo, hi;
            if ((rc = check_affine(d, &p->offset, loops, insn, i, "the scalar value")) != PTO_OK)
                return rc;
            if (affine_range(w, &p->offset, NULL, &lo, &hi) < 0)
                return fail(d, "instruction %u param %u: the scalar value leaves the 64-bit range in some iteration",
                            insn, i);
        }
        return PTO_OK;
    default:
        return fail(d, "instruction %u param %u has invalid kind %u", insn, i, p->kind);
    }
}

static int check_submit(Decoder *d, const ProgramWalk *w, const PtoProgramInsn *in, uint32_t index)
{
    const PtoSubmitInsn *s = &in->u.submit;
    if (in->head.param_count > PTO_MAX_TASK_PARAMS)
        return fail(d, "instruction %u (SUBMIT) has %u params, the limit is %u", index, in->head.param_count,
                    PTO_MAX_TASK_PARAMS);
    if (s->after_count > PTO_PROGRAM_MAX_AFTER)
        return fail(d, "instruction %u (SUBMIT) waits for %u tasks, the limit is %u", index, s->after_count,
                    PTO_PROGRAM_MAX_AFTER);
    uint32_t want = chip_program_submit_size(in->head.param_count, s->after_count);
    if (in->head.size_bytes != want)
        return fail(d, "instruction %u (SUBMIT) is %u bytes; %u params and %u predecessors need %u", index,
                    in->head.size_bytes, in->head.param_count, s->after_count, want);
    if (s->reserved != 0)
        return fail(d, "instruction %u (SUBMIT) reserved field is %u, must be 0", index, s->reserved);
    if (s->after_count > 0) {
        int scope = innermost_scope(&w->nest);
        if (scope < 0 || !w->nest.manual[scope])
            return fail(d, "instruction %u (SUBMIT) names predecessors outside a MANUAL scope: its innermost scope "
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
        return fail(d, "instruction %u submits func_id %u, which is not a child of the callable", index,
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

static int check_fixed_size(Decoder *d, const PtoProgramInsn *in, uint32_t index, uint32_t size)
{
    if (in->head.param_count != 0)
        return fail(d, "instruction %u (%s) has param_count %u, must be 0", index, pto_opcode_name(in->head.opcode),
                    in->head.param_count);
    if (in->head.size_bytes != size)
        return fail(d, "instruction %u (%s) is %u bytes, must be %u", index, pto_opcode_name(in->head.opcode),
                    in->head.size_bytes, size);
    return PTO_OK;
}

static int open_construct(Decoder *d, Nesting *n, uint16_t opcode, uint32_t index)
{
    if (opcode == PTO_OP_LOOP && n->loops == PTO_PROGRAM_MAX_LOOP_DEPTH)
        return fail(d, "instruction %u (LOOP) nests loops deeper than %u", index, PTO_PROGRAM_MAX_LOOP_DEPTH);
    if (opcode == PTO_OP_SCOPE_BEGIN && n->scopes == PTO_PROGRAM_MAX_SCOPE_DEPTH)
        return fail(d, "instruction %u (SCOPE_BEGIN) nests scopes deeper than %u", index,
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

static int close_construct(Decoder *d, Nesting *n, uint16_t opens, uint32_t index)
{
    const char *closer = opens == PTO_OP_LOOP ? "END_LOOP" : "SCOPE_END";
    if (n->depth == 0)
        return fail(d, "instruction %u (%s) closes nothing: no %s is open", index, closer, pto_opcode_name(opens));
    if (n->opcode[n->depth - 1] != opens)
        return fail(d, "instruction %u (%s) would close the %s opened at instruction %u", index, closer,
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

static int check_insn(Decoder *d, ProgramWalk *w, const PtoProgramInsn *in, uint32_t index)
{
    int rc;
    switch (in->head.opcode) {
    case PTO_OP_SUBMIT:
        return check_submit(d, w, in, index);
    case PTO_OP_ALLOC_TENSOR:
        if ((rc = check_fixed_size(d, in, index, sizeof(PtoAllocInsn))) != PTO_OK)
            return rc;
        if (in->u.alloc.reserved != 0)
            return fail(d, "instruction %u (ALLOC_TENSOR) reserved field is %u, must be 0", index,
                        in->u.alloc.reserved);
        if (in->u.alloc.local_id >= d->view->program_header.local_count)
            return fail(d, "instruction %u (ALLOC_TENSOR) allocates local %u but local_count is %u", index,
                        in->u.alloc.local_id, d->view->program_header.local_count);
        if (w->allocated[in->u.alloc.local_id])
            return fail(d, "instruction %u (ALLOC_TENSOR) allocates local %u a second time", index,
                        in->u.alloc.local_id);
        note_alloc(w, &in->u.alloc, index);
        return PTO_OK;
    case PTO_OP_LOOP:
        if ((rc = check_fixed_size(d, in, index, sizeof(PtoLoopInsn))) != PTO_OK)
            return rc;
        if (in->u.loop.count > (uint64_t)INT64_MAX)
            return fail(d, "instruction %u (LOOP) count %llu exceeds %lld", index,
                        (unsigned long long)in->u.loop.count, (long long)INT64_MAX);
        if ((rc = open_construct(d, &w->nest, PTO_OP_LOOP, index)) != PTO_OK)
            return rc;
        w->loop_count[w->nest.loops - 1] = in->u.loop.count;
        return PTO_OK;
    case PTO_OP_END_LOOP:
        if ((rc = check_fixed_size(d, in, index, sizeof(PtoInsnHead))) != PTO_OK)
            return rc;
        return close_construct(d, &w->nest, PTO_OP_LOOP, index);
    case PTO_OP_SCOPE_BEGIN:
    case PTO_OP_SCOPE_BEGIN_MANUAL:
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
        return fail(d, "instruction %u has unknown opcode %u", index, in->head.opcode);
    }
}

/* Reads the instruction at `offset` into `in` after checking its head fits. */
static int read_insn(Decoder *d, uint32_t offset, uint32_t index, PtoProgramInsn *in)
{
    const ChipCallableView *v = d->view;
    if (v->program_size - offset < sizeof(PtoInsnHead))
        return fail(d, "instruction %u at program byte %u runs past the program's %u bytes", index, offset,
                    v->program_size);
    memcpy(&in->head, v->program + offset, sizeof in->head);
    in->offset = offset;
    if (in->head.size_bytes < sizeof(PtoInsnHead) || in->head.size_bytes % 8 != 0)
        return fail(d, "instruction %u at program byte %u has size %u: a multiple of 8 of at least 8 is required",
                    index, offset, in->head.size_bytes);
    if (in->head.size_bytes > v->program_size - offset)
        return fail(d, "instruction %u at program byte %u (%u bytes) runs past the program's %u bytes", index,
                    offset, in->head.size_bytes, v->program_size);
    size_t body = in->head.size_bytes < sizeof in->u ? in->head.size_bytes : sizeof in->u;
    memset(&in->u, 0, sizeof in->u);
    memcpy(&in->u, v->program + offset, body);
    return PTO_OK;
}

static int decode_program(Decoder *d)
{
    ChipCallableView *v = d->view;
    const ChipCallableHeader *h = &v->header;
    int rc = check_blob(d, h->orchestration, "program", 8);
    if (rc != PTO_OK)
        return rc;
    if (h->orchestration_entry.size != 0 || h->orchestration_entry.offset != 0)
        return fail(d, "a program orchestration carries no entry symbol, but orchestration_entry is set");
    if (h->orchestration.size < sizeof(PtoProgramHeader))
        return fail(d, "program is %u bytes, smaller than its %zu-byte header", h->orchestration.size,
                    sizeof(PtoProgramHeader));
    v->program = d->bytes + h->orchestration.offset;
    v->program_size = h->orchestration.size;
    PtoProgramHeader *ph = &v->program_header;
    memcpy(ph, v->program, sizeof *ph);
    if (ph->magic != PTO_PROGRAM_MAGIC)
        return fail(d, "program has bad magic 0x%08x, expected 0x%08x (\"PTPG\")", ph->magic, PTO_PROGRAM_MAGIC);
    if (ph->reserved != 0)
        return fail(d, "program header reserved field is %u, must be 0", ph->reserved);
    if (ph->instruction_count > PTO_PROGRAM_MAX_INSNS)
        return fail(d, "program has %u instructions, the limit is %u", ph->instruction_count, PTO_PROGRAM_MAX_INSNS);
    if (ph->local_count > PTO_PROGRAM_MAX_LOCALS)
        return fail(d, "program declares %u local tensors, the limit is %u", ph->local_count,
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
        return fail(d, "unbalanced program: the %s at instruction %u is never closed",
                    pto_opcode_name(walk.nest.opcode[walk.nest.depth - 1]), walk.nest.insn[walk.nest.depth - 1]);
    if (offset != v->program_size)
        return fail(d, "program has %u bytes after its last instruction", v->program_size - offset);
    return PTO_OK;
}

static int decode_orchestration(Decoder *d)
{
    const ChipCallableHeader *h = &d->view->header;
    if (h->orchestration_kind == PTO_ORCH_PROGRAM)
        return decode_program(d);
    int rc = check_blob(d, h->orchestration, "orchestration library", 1);
    if (rc != PTO_OK)
        return rc;
    if (h->orchestration.size == 0)
        return fail(d, "orchestration library has no image");
    return check_name(d, h->orchestration_entry, "orchestration entry symbol");
}

int chip_callable_decode(const void *callable, ChipCallableView *view, char *msg, size_t msg_size)
{
    memset(view, 0, sizeof *view);
    Decoder d = { .bytes = callable, .total = 0, .msg = msg, .msg_size = msg_size, .view = view };
    if (msg != NULL && msg_size > 0)
        msg[0] = '\0';
    if (callable == NULL)
        return fail(&d, "the callable pointer is NULL");
    view->bytes = callable;
    int rc;
    if ((rc = decode_header(&d, callable)) != PTO_OK || (rc = decode_signature(&d)) != PTO_OK ||
        (rc = decode_children(&d)) != PTO_OK || (rc = decode_orchestration(&d)) != PTO_OK) {
        memset(view, 0, sizeof *view);
        return rc;
    }
    return PTO_OK;
}

int chip_callable_private_copy(const void *callable, uint32_t total_size, uint8_t **bytes, ChipCallableView *view)
{
    memset(view, 0, sizeof *view);
    *bytes = NULL;
    if (total_size < sizeof(ChipCallableHeader))
        return pto_fail(PTO_ERR_BAD_CALLABLE, "register_callable: %u bytes cannot hold the %zu-byte header",
                        total_size, sizeof(ChipCallableHeader));
    *bytes = malloc(total_size);
    if (*bytes == NULL)
        return pto_fail(PTO_ERR_OUT_OF_MEMORY, "register_callable: out of host memory");
    memcpy(*bytes, callable, total_size);
    /* The decoder trusts the header's total_size. If the caller changed it after
       validation, the copy holds fewer bytes than it claims: decoding it would
       read past the copy, so such a copy is refused before it is decoded. */
    uint32_t copied_total;
    memcpy(&copied_total, *bytes + offsetof(ChipCallableHeader, total_size), sizeof copied_total);
    if (copied_total != total_size) {
        free(*bytes);
        *bytes = NULL;
        return pto_fail(PTO_ERR_BAD_CALLABLE,
                        "register_callable: the callable's total_size changed from %u to %u while it was being "
                        "registered",
                        total_size, copied_total);
    }
    char msg[CHIP_CALLABLE_MESSAGE_BYTES];
    if (chip_callable_decode(*bytes, view, msg, sizeof msg) != PTO_OK) {
        free(*bytes);
        *bytes = NULL;
        return pto_fail(PTO_ERR_BAD_CALLABLE, "register_callable: the callable changed while it was being registered");
    }
    return PTO_OK;
}

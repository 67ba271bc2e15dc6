#include "util/tensor_view.h"

#include "ptorun/chip_callable.h"
#include "ptorun/pto_runtime_c_api.h"

/* A view reduced to its byte pattern: the bytes base + sum(i_l * stride[l]) +
 * [0, run) for i_l < count[l]. Dims are outermost first with strides
 * descending, each count >= 2 and stride > 0; dims that add no byte (extent 1,
 * stride 0) are gone, a dim whose stride is the inner block's length is merged
 * into it, and the innermost dims whose rows touch or overlap are folded into
 * the run. len[l] is the byte length of a block of dims l.. (len[k] = run). */
typedef struct Canon {
    uint64_t base, run;       /* run 0: the view is empty */
    uint32_t k;
    uint64_t count[PTO_VIEW_MAX_DIMS], stride[PTO_VIEW_MAX_DIMS];
    uint64_t len[PTO_VIEW_MAX_DIMS + 1];
} Canon;

const char *tensor_view_check(const PtoTensorView *v, uint64_t *span)
{
    uint64_t esz = pto_dtype_bytes(v->dtype);
    if (esz == 0)
        return "unknown dtype";
    if (v->ndims < 1 || v->ndims > PTO_VIEW_MAX_DIMS)
        return "ndims is not 1..5";
    *span = 0;
    for (uint32_t d = 0; d < v->ndims; d++)
        if (v->shape[d] == 0)
            return NULL; /* empty: no byte, whatever the strides */
    uint64_t last = 0; /* element offset of the last element */
    for (uint32_t d = 0; d < v->ndims; d++) {
        uint64_t reach;
        if (__builtin_mul_overflow(v->shape[d] - 1, v->strides[d], &reach) ||
            __builtin_add_overflow(last, reach, &last))
            return "its span overflows";
    }
    uint64_t bytes, end;
    if (__builtin_mul_overflow(last, esz, &bytes) || __builtin_add_overflow(bytes, esz, &bytes))
        return "its span overflows";
    if (__builtin_add_overflow(v->addr, bytes, &end))
        return "it wraps around the address space";
    *span = bytes;
    return NULL;
}

uint64_t tensor_view_span(const PtoTensorView *v)
{
    uint64_t span = 0;
    (void)tensor_view_check(v, &span);
    return span;
}

PtoTensorView tensor_view_flat(uint64_t addr, uint64_t bytes)
{
    return (PtoTensorView){ .addr = addr, .dtype = PTO_DTYPE_U8, .ndims = 1, .shape = { bytes }, .strides = { 1 } };
}

static void canonicalize(const PtoTensorView *v, Canon *c)
{
    uint64_t esz = pto_dtype_bytes(v->dtype);
    c->base = v->addr;
    c->run = 0;
    c->k = 0;
    uint64_t count[PTO_VIEW_MAX_DIMS], stride[PTO_VIEW_MAX_DIMS];
    uint32_t n = 0;
    for (uint32_t d = 0; d < v->ndims; d++) {
        if (v->shape[d] == 0)
            return;
        if (v->shape[d] == 1 || v->strides[d] == 0)
            continue;
        /* insertion by stride, descending */
        uint32_t at = n++;
        for (; at > 0 && stride[at - 1] < v->strides[d] * esz; at--) {
            count[at] = count[at - 1];
            stride[at] = stride[at - 1];
        }
        count[at] = v->shape[d];
        stride[at] = v->strides[d] * esz;
    }
    /* innermost first: fold into the run, merge into the dim inside, or keep */
    uint64_t run = esz;
    uint64_t kc[PTO_VIEW_MAX_DIMS], ks[PTO_VIEW_MAX_DIMS]; /* innermost first */
    uint32_t k = 0;
    for (uint32_t i = n; i-- > 0;) {
        if (k == 0 && stride[i] <= run)
            run += (count[i] - 1) * stride[i];
        else if (k > 0 && stride[i] == kc[k - 1] * ks[k - 1])
            kc[k - 1] *= count[i];
        else {
            kc[k] = count[i];
            ks[k] = stride[i];
            k++;
        }
    }
    c->run = run;
    c->k = k;
    c->len[k] = run;
    for (uint32_t l = k; l-- > 0;) {
        c->count[l] = kc[k - 1 - l];
        c->stride[l] = ks[k - 1 - l];
        c->len[l] = (c->count[l] - 1) * c->stride[l] + c->len[l + 1];
    }
}

/* The indices i < n whose block [o + i*s, o + i*s + sub) meets [lo, hi):
   [*first, *last]; 0 when there is none. */
static int meeting(uint64_t o, uint64_t n, uint64_t s, uint64_t sub, uint64_t lo, uint64_t hi, uint64_t *first,
                   uint64_t *last)
{
    if (hi <= o)
        return 0;
    uint64_t l = (hi - 1 - o) / s;
    if (l > n - 1)
        l = n - 1;
    uint64_t f = lo >= o + sub ? (lo - o - sub) / s + 1 : 0;
    *first = f;
    *last = l;
    return f <= l;
}

/* Whether block (a, la at oa) and block (b, lb at ob) share a byte: the longer
   one is split into the sub-blocks that can meet the other. */
static int meet(const Canon *a, uint32_t la, uint64_t oa, const Canon *b, uint32_t lb, uint64_t ob)
{
    uint64_t ea = oa + a->len[la], eb = ob + b->len[lb];
    if (oa >= eb || ob >= ea)
        return 0;
    int a_leaf = la == a->k, b_leaf = lb == b->k;
    if (a_leaf && b_leaf)
        return 1;
    if (!a_leaf && (b_leaf || a->len[la] >= b->len[lb])) {
        uint64_t f, l;
        if (meeting(oa, a->count[la], a->stride[la], a->len[la + 1], ob, eb, &f, &l))
            for (uint64_t i = f; i <= l; i++)
                if (meet(a, la + 1, oa + i * a->stride[la], b, lb, ob))
                    return 1;
        return 0;
    }
    return meet(b, lb, ob, a, la, oa);
}

int tensor_view_conflict(const PtoTensorView *a, const PtoTensorView *b)
{
    Canon ca, cb;
    canonicalize(a, &ca);
    canonicalize(b, &cb);
    if (ca.run == 0 || cb.run == 0)
        return 0;
    return meet(&ca, 0, ca.base, &cb, 0, cb.base);
}

/* The furthest end of the runs of block (w, l at o) that hold byte p; 0 when
   none does. */
static uint64_t reach(const Canon *w, uint32_t l, uint64_t o, uint64_t p)
{
    if (l == w->k)
        return o <= p && p < o + w->run ? o + w->run : 0;
    uint64_t f, last, best = 0;
    if (p < o || !meeting(o, w->count[l], w->stride[l], w->len[l + 1], p, p + 1, &f, &last))
        return 0;
    for (uint64_t i = f; i <= last; i++) {
        uint64_t e = reach(w, l + 1, o + i * w->stride[l], p);
        best = e > best ? e : best;
    }
    return best;
}

/* Whether the runs of w hold every byte of [x, y): hop from run end to run end. */
static int interval_covered(const Canon *w, uint64_t x, uint64_t y)
{
    while (x < y) {
        uint64_t e = reach(w, 0, w->base, x);
        if (e == 0)
            return 0;
        x = e;
    }
    return 1;
}

/* Whether w holds every byte of block (a, l at o). */
static int block_covered(const Canon *w, const Canon *a, uint32_t l, uint64_t o)
{
    if (reach(w, 0, w->base, o) >= o + a->len[l])
        return 1; /* one run of w holds the whole block */
    if (l == a->k)
        return interval_covered(w, o, o + a->run);
    for (uint64_t i = 0; i < a->count[l]; i++)
        if (!block_covered(w, a, l + 1, o + i * a->stride[l]))
            return 0;
    return 1;
}

int tensor_view_covers(const PtoTensorView *w, const PtoTensorView *a)
{
    Canon cw, ca;
    canonicalize(a, &ca);
    if (ca.run == 0)
        return 1;
    canonicalize(w, &cw);
    if (cw.run == 0 || ca.base < cw.base || ca.base + ca.len[0] > cw.base + cw.len[0])
        return 0;
    return block_covered(&cw, &ca, 0, ca.base);
}

/* ---- task parameters ---------------------------------------------------------- */

int tensor_view_param_is_tensor(const PtoTaskParam *p)
{
    return p->direction == PTO_ARG_IN || p->direction == PTO_ARG_OUT || p->direction == PTO_ARG_INOUT;
}

const char *tensor_view_param_check(const PtoTaskParam *p)
{
    if (p->view.ndims == 0)
        return NULL;
    uint64_t span;
    const char *why = tensor_view_check(&p->view, &span);
    if (why != NULL)
        return why;
    if (p->view.addr != p->value)
        return "view.addr is not the parameter's value";
    if (span != p->bytes)
        return "bytes is not the view's byte span";
    return NULL;
}

int tensor_view_param_kept(const PtoTaskParam *p)
{
    return tensor_view_param_is_tensor(p) && (p->view.ndims != 0 || p->bytes == 0);
}

int tensor_view_params_kept(const PtoTaskParam *params, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (tensor_view_param_kept(&params[i]))
            return 1;
    return 0;
}

PtoTensorView tensor_view_kernel_entry(const PtoTaskParam *p)
{
    PtoTensorView v = { 0 };
    if (!tensor_view_param_is_tensor(p))
        return v;
    v.addr = p->value;
    if (p->view.ndims == 0)
        return v;
    v.dtype = p->view.dtype;
    v.ndims = p->view.ndims;
    for (uint32_t d = 0; d < v.ndims && d < PTO_VIEW_MAX_DIMS; d++) {
        v.shape[d] = p->view.shape[d];
        v.strides[d] = p->view.strides[d];
    }
    return v;
}

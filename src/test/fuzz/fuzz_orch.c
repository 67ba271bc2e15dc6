#include "fuzz_orch.h"

#include <string.h>

#include "util/last_error.h"
#include "util/tensor_view.h"
#include "fuzz_common.h"
#include "orch/program_orchestration.h"

void fuzz_orch_init(FuzzOrch *o, const ChipStorageTaskArgs *args, const ChipCallableView *view,
                    uint64_t submit_budget, uint64_t alloc_limit)
{
    memset(o, 0, sizeof *o);
    o->args = args;
    o->view = view;
    o->submit_budget = submit_budget;
    o->alloc_limit = alloc_limit;
}

/* [value, value + bytes) inside r; computed without wrap-around. */
static int inside(const FuzzRange *r, uint64_t value, uint64_t bytes)
{
    unsigned __int128 end = (unsigned __int128)value + bytes;
    return value >= r->addr && end <= (unsigned __int128)r->addr + r->bytes;
}

static int view_is_known(const FuzzOrch *o, uint64_t value, uint64_t bytes)
{
    for (int32_t i = 0; i < o->args->tensor_count; i++) {
        FuzzRange r = { o->args->tensors[i].addr, o->args->tensors[i].size };
        if (inside(&r, value, bytes))
            return 1;
    }
    for (uint32_t i = 0; i < o->local_count; i++)
        if (inside(&o->locals[i], value, bytes))
            return 1;
    return 0;
}

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h;
}

/* The base param i's origin names; checks the value against it. */
static uint64_t origin_base(const FuzzOrch *o, const PtoTaskParam *p, uint32_t origin, uint32_t i)
{
    const ChipStorageTaskArgs *a = o->args;
    if (origin == PTO_PARAM_ORIGIN_FIXED) {
        FUZZ_CHECK(p->direction == PTO_ARG_SCALAR, "param %u: a tensor view of origin FIXED", i);
        return 0;
    }
    if (origin < PTO_PARAM_ORIGIN_SCALAR(0)) {
        uint32_t t = origin - PTO_PARAM_ORIGIN_TENSOR(0);
        FUZZ_CHECK(p->direction != PTO_ARG_SCALAR && t < (uint32_t)a->tensor_count, "param %u: origin tensor %u", i, t);
        FuzzRange r = { a->tensors[t].addr, a->tensors[t].size };
        FUZZ_CHECK(inside(&r, p->value, p->bytes), "param %u: a view outside its origin tensor %u", i, t);
        return r.addr;
    }
    if (origin < PTO_PARAM_ORIGIN_LOCAL(0)) {
        uint32_t j = origin - PTO_PARAM_ORIGIN_SCALAR(0);
        FUZZ_CHECK(p->direction == PTO_ARG_SCALAR && j < (uint32_t)a->scalar_count && p->value == a->scalars[j],
                   "param %u: not the value of its origin scalar %u", i, j);
        return p->value;
    }
    FUZZ_CHECK(p->direction != PTO_ARG_SCALAR && origin - PTO_PARAM_ORIGIN_LOCAL(0) < PTO_PROGRAM_MAX_LOCALS,
               "param %u: origin %u", i, origin);
    for (uint32_t k = 0; k < o->local_count; k++)
        if (inside(&o->locals[k], p->value, p->bytes))
            return o->locals[k].addr;
    FUZZ_CHECK(0, "param %u: a view of origin local %u outside every live local", i,
               origin - PTO_PARAM_ORIGIN_LOCAL(0));
    return 0;
}

/* A body's param (o->boundary set): one marked PTO_SUBGRAPH_REF(k) is boundary
   parameter k's value, or a view inside its view; folded relative to it, an
   unmarked view relative to the local holding it, an unmarked scalar as it is. */
static void fold_body_param(FuzzOrch *o, const PtoTaskParam *p, uint32_t i, uint64_t *h)
{
    uint64_t base = 0;
    if (p->reserved != 0) {
        uint32_t k = p->reserved - 1;
        FUZZ_CHECK(k < o->boundary_n, "body param %u: reserved %u past the %u-parameter boundary", i, p->reserved,
                   o->boundary_n);
        const PtoTaskParam *b = &o->boundary[k];
        FUZZ_CHECK((b->direction == PTO_ARG_SCALAR) == (p->direction == PTO_ARG_SCALAR),
                   "body param %u: direction %u marked as boundary parameter %u of direction %u", i, p->direction, k,
                   b->direction);
        if (p->direction == PTO_ARG_SCALAR) {
            FUZZ_CHECK(p->value == b->value, "body param %u: not the value of boundary scalar %u", i, k);
        } else {
            FuzzRange r = { b->value, b->bytes };
            FUZZ_CHECK(inside(&r, p->value, p->bytes), "body param %u: a view outside boundary view %u", i, k);
        }
        base = b->value;
    } else if (p->direction != PTO_ARG_SCALAR) {
        uint32_t k = 0;
        while (k < o->local_count && !inside(&o->locals[k], p->value, p->bytes))
            k++;
        FUZZ_CHECK(k < o->local_count, "body param %u: an unmarked view outside every live local", i);
        base = k < o->local_count ? o->locals[k].addr : 0;
    }
    *h = mix(*h, ((uint64_t)p->reserved << 8) | p->direction);
    *h = mix(*h, p->value - base);
    *h = mix(*h, p->bytes);
}

/* Folds the task with its params relative to their origins (fuzz_orch.h). */
static void fold_relocated(FuzzOrch *o, uint32_t func_id, const PtoTaskParam *params, uint32_t n)
{
    uint64_t h = mix(o->relocated_hash, ((uint64_t)func_id << 32) | n);
    for (uint32_t i = 0; i < n; i++) {
        const PtoTaskParam *p = &params[i];
        if (o->boundary != NULL) {
            fold_body_param(o, p, i, &h);
            continue;
        }
        uint64_t base = origin_base(o, p, o->origins[i], i);
        h = mix(h, ((uint64_t)o->origins[i] << 8) | p->direction);
        h = mix(h, p->value - base);
        h = mix(h, p->bytes);
        h = mix(h, ((uint64_t)p->view.dtype << 32) | p->view.ndims);
        for (uint32_t d = 0; d < p->view.ndims && d < PTO_VIEW_MAX_DIMS; d++)
            h = mix(mix(h, p->view.shape[d]), p->view.strides[d]);
    }
    o->relocated_hash = h;
}

static int fake_submit(void *orch, uint32_t func_id, const PtoTaskParam *params, uint32_t n)
{
    FuzzOrch *o = orch;
    FUZZ_CHECK(n <= PTO_MAX_TASK_PARAMS, "submit with %u params", n);
    FUZZ_CHECK(n == 0 || params != NULL, "submit with %u params and a NULL array", n);
    if (o->view != NULL)
        FUZZ_CHECK(chip_callable_child_of(o->view, func_id) >= 0, "submit of func_id %u, not a child", func_id);
    for (uint32_t i = 0; i < n; i++) {
        const PtoTaskParam *p = &params[i];
        FUZZ_CHECK(p->direction <= PTO_ARG_INOUT, "param %u has direction %u", i, p->direction);
        FUZZ_CHECK(p->reserved == 0 || o->boundary != NULL, "param %u reserved %u", i, p->reserved);
        if (p->direction == PTO_ARG_SCALAR) {
            FUZZ_CHECK(p->bytes == 0, "scalar param %u carries %llu bytes", i, (unsigned long long)p->bytes);
            continue;
        }
        const char *bad = tensor_view_param_check(p);
        FUZZ_CHECK(bad == NULL, "param %u (func_id %u): a malformed view: %s", i, func_id, bad);
        FUZZ_CHECK(view_is_known(o, p->value, p->bytes),
                       "param %u (func_id %u) view [0x%llx, +%llu) lies in no argument tensor and no local", i,
                       func_id, (unsigned long long)p->value, (unsigned long long)p->bytes);
    }
    if (o->origins != NULL || o->boundary != NULL)
        fold_relocated(o, func_id, params, n);
    if (o->submitted == o->submit_budget) {
        o->budget_hit = 1;
        return pto_fail(PTO_ERR_CAPACITY, "fuzz: submit budget of %llu tasks reached",
                        (unsigned long long)o->submit_budget);
    }
    o->submitted++;
    return PTO_OK;
}

static uint64_t fake_alloc_tensor(void *orch, uint64_t bytes)
{
    FuzzOrch *o = orch;
    /* each local id is live at most once: a scope's end frees what it allocated */
    FUZZ_CHECK(o->local_count < PTO_PROGRAM_MAX_LOCALS, "more than %u live locals", PTO_PROGRAM_MAX_LOCALS);
    if (bytes > o->alloc_limit) {
        o->alloc_refused = 1;
        pto_fail(PTO_ERR_OUT_OF_MEMORY, "fuzz: %llu bytes refused", (unsigned long long)bytes);
        return 0;
    }
    FuzzRange *r = &o->locals[o->local_count];
    r->addr = FUZZ_LOCAL_BASE + o->local_count * FUZZ_LOCAL_STRIDE;
    r->bytes = bytes;
    o->local_count++;
    return r->addr;
}

static int fake_scope_begin_mode(void *orch, uint32_t mode)
{
    FuzzOrch *o = orch;
    FUZZ_CHECK(mode == PTO_SCOPE_AUTO || mode == PTO_SCOPE_MANUAL, "scope_begin_mode %u", mode);
    o->scope_depth++;
    FUZZ_CHECK(o->scope_depth <= PTO_PROGRAM_MAX_SCOPE_DEPTH, "scopes nested %u deep", o->scope_depth);
    o->scope_locals[o->scope_depth] = o->local_count;
    o->scope_first[o->scope_depth] = o->submitted;
    o->scope_manual[o->scope_depth] = mode == PTO_SCOPE_MANUAL;
    return PTO_OK;
}

static int fake_scope_begin(void *orch)
{
    return fake_scope_begin_mode(orch, PTO_SCOPE_AUTO);
}

static int fake_scope_end(void *orch)
{
    FuzzOrch *o = orch;
    FUZZ_CHECK(o->scope_depth > 0, "scope_end without an open scope%s", "");
    o->local_count = o->scope_locals[o->scope_depth];
    o->scope_depth--;
    return PTO_OK;
}

/* As a runtime: the predecessors must be earlier tasks of the innermost scope,
   which the interpreter only calls this in when it is MANUAL. */
static int fake_submit_after(void *orch, uint32_t func_id, const PtoTaskParam *params, uint32_t n,
                             const uint32_t *after, uint32_t n_after)
{
    FuzzOrch *o = orch;
    FUZZ_CHECK(o->scope_depth > 0 && o->scope_manual[o->scope_depth], "submit_after outside a MANUAL scope%s", "");
    FUZZ_CHECK(n_after <= PTO_PROGRAM_MAX_AFTER && (n_after == 0 || after != NULL), "submit_after of %u", n_after);
    uint64_t earlier = o->submitted - o->scope_first[o->scope_depth];
    for (uint32_t i = 0; i < n_after; i++) {
        for (uint32_t j = 0; j < i; j++)
            FUZZ_CHECK(after[j] != after[i], "ordinal %u passed twice", after[i]);
        if (after[i] >= earlier) {
            o->after_refused = 1;
            return pto_fail(PTO_ERR_INVALID_ARGUMENT, "fuzz: after[%u] = %u is not an earlier submit", i, after[i]);
        }
    }
    return fake_submit(orch, func_id, params, n);
}

/* As the sub-graph layer, but calling the body at every submission. The body
   runs in scopes and locals of its own (the layer's session); its locals are
   freed when the invocation ends. */
static int fake_subgraph_submit(void *orch, uint32_t key, PtoSubgraphBody body, void *ctx,
                                const PtoTaskParam *boundary, uint32_t n)
{
    FuzzOrch *o = orch;
    FUZZ_CHECK(o->boundary == NULL, "subgraph_submit inside a body%s", "");
    FUZZ_CHECK(body != NULL && n >= 1 && n <= PTO_MAX_TASK_PARAMS && boundary != NULL, "subgraph_submit of %u", n);
    FUZZ_CHECK(o->scope_depth == 0 || !o->scope_manual[o->scope_depth], "subgraph_submit in a MANUAL scope%s", "");
    int scalar_seen = 0;
    for (uint32_t i = 0; i < n; i++) {
        const PtoTaskParam *p = &boundary[i];
        FUZZ_CHECK(p->direction <= PTO_ARG_INOUT && p->reserved == 0, "boundary %u: direction %u reserved %u", i,
                   p->direction, p->reserved);
        FUZZ_CHECK(p->direction == PTO_ARG_SCALAR || !scalar_seen, "boundary %u: a tensor after a scalar", i);
        scalar_seen |= p->direction == PTO_ARG_SCALAR;
        if (p->direction == PTO_ARG_SCALAR) {
            FUZZ_CHECK(p->bytes == 0, "boundary scalar %u carries %llu bytes", i, (unsigned long long)p->bytes);
            continue;
        }
        const char *bad = tensor_view_param_check(p);
        FUZZ_CHECK(bad == NULL, "boundary %u (sub-graph %u): a malformed view: %s", i, key, bad);
        FUZZ_CHECK(view_is_known(o, p->value, p->bytes), "boundary %u (sub-graph %u) lies in no tensor", i, key);
    }
    if (o->origins != NULL)
        fold_relocated(o, 0xFFFF0000u | key, boundary, n);
    o->invocations++;
    /* the body's own scopes and locals */
    uint32_t depth = o->scope_depth, locals = o->local_count;
    uint32_t saved_locals[PTO_PROGRAM_MAX_SCOPE_DEPTH + 1];
    uint64_t saved_first[PTO_PROGRAM_MAX_SCOPE_DEPTH + 1];
    uint8_t saved_manual[PTO_PROGRAM_MAX_SCOPE_DEPTH + 1];
    memcpy(saved_locals, o->scope_locals, sizeof saved_locals);
    memcpy(saved_first, o->scope_first, sizeof saved_first);
    memcpy(saved_manual, o->scope_manual, sizeof saved_manual);
    o->scope_depth = 0;
    o->boundary = boundary;
    o->boundary_n = n;
    int rc = body(&fuzz_orch_api, orch, ctx, boundary, n);
    FUZZ_CHECK(rc != PTO_OK || o->scope_depth == 0, "a body returned with %u scopes open", o->scope_depth);
    o->boundary = NULL;
    o->boundary_n = 0;
    o->scope_depth = depth;
    o->local_count = locals;
    memcpy(o->scope_locals, saved_locals, sizeof saved_locals);
    memcpy(o->scope_first, saved_first, sizeof saved_first);
    memcpy(o->scope_manual, saved_manual, sizeof saved_manual);
    return rc;
}

static int fake_read_tensor(void *orch, uint64_t dev_addr, void *dst, uint64_t n)
{
    (void)orch, (void)dev_addr, (void)dst, (void)n;
    FUZZ_CHECK(0, "the program interpreter called read_tensor%s", "");
    return PTO_ERR_FAILED;
}

static int fake_write_tensor(void *orch, uint64_t dev_addr, const void *src, uint64_t n)
{
    (void)orch, (void)dev_addr, (void)src, (void)n;
    FUZZ_CHECK(0, "the program interpreter called write_tensor%s", "");
    return PTO_ERR_FAILED;
}

const PtoOrchApi fuzz_orch_api = {
    .submit = fake_submit,
    .alloc_tensor = fake_alloc_tensor,
    .scope_begin = fake_scope_begin,
    .scope_end = fake_scope_end,
    .read_tensor = fake_read_tensor,
    .write_tensor = fake_write_tensor,
    .scope_begin_mode = fake_scope_begin_mode,
    .submit_after = fake_submit_after,
    .subgraph_submit = fake_subgraph_submit,
};

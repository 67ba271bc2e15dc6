/*
 * hbg's PtoOrchApi: the orchestration runs on the host inside bind. submit
 * appends to the task graph (dependencies computed there), alloc_tensor bumps
 * the run's local heap (a region of the bank's GM heap sized before the
 * orchestration starts) and scope_end moves the bump pointer back to where it
 * was at the scope's begin, so the heap is a stack: a loop over a scope with
 * scratch reuses the same bytes. That is safe although the graph is built long
 * before any task runs, because a task touching bytes handed out again is
 * ordered after the earlier tasks that touched them (hbg_graph_reuse).
 * A MANUAL scope's tasks infer no dependency on each other (hbg_graph.h);
 * submit_after names their predecessors by ordinal in the innermost scope.
 * read/write_tensor go through the host-access bridge. The orchestration's
 * state lives on bind's stack; the handle the orchestration gets is an
 * orchestration session (orch/orch_session.h), so a handle kept past its run,
 * or used from another thread, is refused rather than followed into a dead frame.
 *
 * Sticky failures: the first failed submit / submit_after / alloc_tensor /
 * scope call is remembered; every later such call is refused with its code,
 * and the prepare fails with it even when the library ignores it.
 * read/write_tensor failures are only the caller's to handle, except a device
 * failure of a write (its push to the device): that is the run's failure
 * whatever the library makes of it, because it poisoned an onboard device
 * (services/device_failure.h).
 */
#include <string.h>

#include "util/last_error.h"
#include "orch/orch_session.h"
#include "orch/program_orchestration.h"
#include "orch/subgraph.h"
#include "runtime/hbg/hbg_internal.h"

/* Scopes nest at most this deep, as on trb (PTO_TRB_MAX_SCOPE_DEPTH). */
#define HBG_MAX_SCOPE_DEPTH 64u

typedef struct HbgScope {
    uint64_t mark;            /* local_next at its begin: its end frees the heap above */
    uint32_t first_task;      /* its ordinal 0 */
    uint32_t mode;            /* PtoScopeMode */
} HbgScope;

typedef struct HbgOrch {
    const RuntimeCallable *callable;
    RuntimeSlotScratch *scratch;
    uint32_t scope_depth;
    uint32_t manual_depth;    /* the depth of the outermost open MANUAL scope, 0 none */
    HbgScope scopes[HBG_MAX_SCOPE_DEPTH]; /* scopes[d - 1]: the open scope at depth d */
    SubgraphTable subgraphs;                  /* the run's sub-graph recordings (orch/subgraph.h) */
    int failed;                               /* the first failed submit / alloc / scope call */
    char failure[PTO_ERROR_MESSAGE_BYTES];    /* ... and its message */
} HbgOrch;

/* Remembers the first failure of a call that changes the run, so a library
   that ignores it cannot launch a graph missing that task. */
static int note(HbgOrch *o, int rc)
{
    if (rc != PTO_OK && o->failed == PTO_OK) {
        o->failed = rc;
        strncpy(o->failure, pto_last_error(), sizeof o->failure - 1);
    }
    return rc;
}

/* The orchestration behind a handle that may change the run: NULL with *rc set
   when the handle is not this thread's live session, or when an earlier call
   of the run failed (sticky: the run is failed already). */
static HbgOrch *changing(void *orch, const char *fn, int *rc)
{
    HbgOrch *o = orch_session_resolve(orch, fn);
    if (o == NULL) {
        *rc = PTO_ERR_INVALID_ARGUMENT;
        return NULL;
    }
    if (o->failed != PTO_OK) {
        *rc = pto_fail(o->failed, "%s: refused, an earlier call of this orchestration failed: %s", fn, o->failure);
        return NULL;
    }
    return o;
}

/* The kernel behind func_id and the params' pointer, checked as submit does. */
static const CallableKernel *task_kernel(HbgOrch *o, const char *fn, uint32_t func_id, const PtoTaskParam *params,
                                         uint32_t n, int *rc)
{
    int child = chip_callable_child_of(&o->callable->copy.view, func_id);
    if (child < 0) {
        *rc = note(o, pto_fail(PTO_ERR_ORCHESTRATION, "%s: func_id %u is not a child of the callable", fn, func_id));
        return NULL;
    }
    if (params == NULL && n > 0) {
        *rc = note(o, pto_fail(PTO_ERR_ORCHESTRATION, "%s: NULL params", fn));
        return NULL;
    }
    return &o->callable->copy.kernels[child];
}

static int orch_submit(void *orch, uint32_t func_id, const PtoTaskParam *params, uint32_t n)
{
    int rc;
    HbgOrch *o = changing(orch, "submit", &rc);
    if (o == NULL)
        return rc;
    const CallableKernel *k = task_kernel(o, "submit", func_id, params, n, &rc);
    if (k == NULL)
        return rc;
    return note(o, hbg_graph_submit(&o->scratch->graph, k->addr, k->func_id, k->core_type, params, n));
}

static int orch_submit_after(void *orch, uint32_t func_id, const PtoTaskParam *params, uint32_t n,
                             const uint32_t *after, uint32_t n_after)
{
    int rc;
    HbgOrch *o = changing(orch, "submit_after", &rc);
    if (o == NULL)
        return rc;
    if (o->scope_depth == 0)
        return note(o, pto_fail(PTO_ERR_ORCHESTRATION, "submit_after: no scope is open (it needs a MANUAL scope)"));
    const HbgScope *scope = &o->scopes[o->scope_depth - 1];
    if (scope->mode != PTO_SCOPE_MANUAL)
        return note(o, pto_fail(PTO_ERR_ORCHESTRATION, "submit_after: the innermost scope is AUTO, not MANUAL"));
    if (after == NULL && n_after > 0)
        return note(o, pto_fail(PTO_ERR_INVALID_ARGUMENT, "submit_after: NULL after with n_after %u", n_after));
    uint32_t earlier = o->scratch->graph.task_count - scope->first_task;
    if (n_after > earlier)
        return note(o, pto_fail(PTO_ERR_INVALID_ARGUMENT,
                                "submit_after: n_after %u exceeds the %u earlier submits of this scope", n_after,
                                earlier));
    const CallableKernel *k = task_kernel(o, "submit_after", func_id, params, n, &rc);
    if (k == NULL)
        return rc;
    HbgAfter a = { scope->first_task, after, n_after };
    return note(o, hbg_graph_submit_after(&o->scratch->graph, k->addr, k->func_id, k->core_type, params, n, &a));
}

static uint64_t orch_alloc_tensor(void *orch, uint64_t bytes)
{
    int rc;
    HbgOrch *o = changing(orch, "alloc_tensor", &rc);
    if (o == NULL)
        return 0;
    RuntimeSlotScratch *s = o->scratch;
    uint64_t at = (s->local_next + HBG_LOCAL_ALIGN - 1) / HBG_LOCAL_ALIGN * HBG_LOCAL_ALIGN;
    if (at > s->local_end || bytes > s->local_end - at) {
        note(o, pto_fail(PTO_ERR_OUT_OF_MEMORY,
                         "alloc_tensor: %llu bytes do not fit the run's %llu-byte local heap (%llu in use; its size is "
                         "the most ALLOC_TENSOR bytes a program holds at once, or CallConfig.ring_heap[0] for an "
                         "orchestration library)",
                         (unsigned long long)bytes, (unsigned long long)(s->local_end - s->local_base),
                         (unsigned long long)(s->local_next - s->local_base)));
        return 0;
    }
    /* bytes an ended scope freed: their earlier users stay ordered before the new ones */
    if (at < s->local_high &&
        note(o, hbg_graph_reuse(&s->graph, at, at + bytes < s->local_high ? at + bytes : s->local_high)) != PTO_OK)
        return 0;
    s->local_next = at + bytes;
    if (s->local_next > s->local_high) {
        s->local_high = s->local_next;
        s->local_peak = s->local_high - s->local_base;
    }
    return at;
}

static int scope_begin(void *orch, const char *fn, uint32_t mode)
{
    int rc;
    HbgOrch *o = changing(orch, fn, &rc);
    if (o == NULL)
        return rc;
    if (mode != PTO_SCOPE_AUTO && mode != PTO_SCOPE_MANUAL)
        return note(o, pto_fail(PTO_ERR_INVALID_ARGUMENT,
                                "%s: mode %u is neither PTO_SCOPE_AUTO (0) nor PTO_SCOPE_MANUAL (1)", fn, mode));
    if (o->scope_depth == HBG_MAX_SCOPE_DEPTH)
        return note(o, pto_fail(PTO_ERR_ORCHESTRATION, "%s: scopes nest at most %u deep", fn, HBG_MAX_SCOPE_DEPTH));
    o->scopes[o->scope_depth++] = (HbgScope){ o->scratch->local_next, o->scratch->graph.task_count, mode };
    if (mode == PTO_SCOPE_MANUAL && o->manual_depth == 0) {
        o->manual_depth = o->scope_depth;
        hbg_graph_manual_begin(&o->scratch->graph);
    }
    return PTO_OK;
}

static int orch_scope_begin(void *orch)
{
    return scope_begin(orch, "scope_begin", PTO_SCOPE_AUTO);
}

static int orch_scope_begin_mode(void *orch, uint32_t mode)
{
    return scope_begin(orch, "scope_begin_mode", mode);
}

static int orch_scope_end(void *orch)
{
    int rc;
    HbgOrch *o = changing(orch, "scope_end", &rc);
    if (o == NULL)
        return rc;
    if (o->scope_depth == 0)
        return note(o, pto_fail(PTO_ERR_ORCHESTRATION, "scope_end: no scope is open"));
    if (o->scope_depth == o->manual_depth) {
        o->manual_depth = 0;
        if ((rc = hbg_graph_manual_end(&o->scratch->graph)) != PTO_OK)
            return note(o, rc);
    }
    /* the tensors the scope allocated end here: their bytes go to the next allocation */
    o->scratch->local_next = o->scopes[--o->scope_depth].mark;
    return PTO_OK;
}

/* read/write_tensor are not sticky: a refused access changes nothing, so the
   library may handle it (and may still read after a failed submit). */
static int orch_read_tensor(void *orch, uint64_t dev_addr, void *dst, uint64_t n)
{
    HbgOrch *o = orch_session_resolve(orch, "read_tensor");
    if (o == NULL)
        return PTO_ERR_INVALID_ARGUMENT;
    if (dst == NULL && n > 0)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "read_tensor: NULL destination");
    return hbg_bridge_read(&o->scratch->bridge, dev_addr, dst, n);
}

static int orch_write_tensor(void *orch, uint64_t dev_addr, const void *src, uint64_t n)
{
    HbgOrch *o = orch_session_resolve(orch, "write_tensor");
    if (o == NULL)
        return PTO_ERR_INVALID_ARGUMENT;
    if (src == NULL && n > 0)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "write_tensor: NULL source");
    int rc = hbg_bridge_write(&o->scratch->bridge, dev_addr, src, n);
    if (pto_device_failure(rc))
        note(o, rc);
    return rc;
}

_Static_assert(HBG_TASK_INFER == SUBGRAPH_TASK_INFER && HBG_TASK_RECORD == SUBGRAPH_TASK_RECORD, "task flags");

/* A sub-graph invocation's task (SubgraphSubmitFn): its handle is its index in
   the graph; the entry and exit run nothing. */
static int subgraph_task(void *run, uint32_t func_id, const PtoTaskParam *params, uint32_t n, const uint64_t *preds,
                         uint32_t n_preds, uint32_t flags, const uint32_t *origins, uint64_t *handle)
{
    HbgOrch *o = run;
    HbgGraph *g = &o->scratch->graph;
    uint64_t addr = PTO_KERNEL_ADDR_NONE;
    uint32_t core_type = PTO_CORE_AIV;
    if (func_id != SUBGRAPH_BOUNDARY_FUNC) {
        int rc;
        const CallableKernel *k = task_kernel(o, "subgraph_submit", func_id, params, n, &rc);
        if (k == NULL)
            return rc;
        addr = k->addr;
        core_type = k->core_type;
    }
    *handle = g->task_count;
    const uint32_t *outer = g->origins;
    g->origins = origins;
    int rc = hbg_graph_submit_wired(g, addr, func_id, core_type, params, n, preds, n_preds, flags);
    g->origins = outer;
    return rc;
}

static const PtoOrchApi hbg_orch_api;

static int orch_subgraph_submit(void *orch, uint32_t key, PtoSubgraphBody body, void *ctx,
                                const PtoTaskParam *boundary, uint32_t n)
{
    int rc;
    HbgOrch *o = changing(orch, "subgraph_submit", &rc);
    if (o == NULL)
        return rc;
    if (o->manual_depth != 0)
        return note(o, pto_fail(PTO_ERR_ORCHESTRATION, "subgraph_submit (key %u): not inside a MANUAL scope", key));
    /* the interpreter named the boundary's origins before this call, as before a submit */
    uint32_t origins[PTO_MAX_TASK_PARAMS];
    const uint32_t *named = o->scratch->graph.origins;
    if (named != NULL && n <= PTO_MAX_TASK_PARAMS)
        memcpy(origins, named, (size_t)n * sizeof *origins);
    return note(o, subgraph_invoke(&o->subgraphs, subgraph_task, o, &hbg_orch_api, orch, key, body, ctx, boundary, n,
                                   named != NULL ? origins : NULL));
}

static const PtoOrchApi hbg_orch_api = {
    .submit = orch_submit,
    .alloc_tensor = orch_alloc_tensor,
    .scope_begin = orch_scope_begin,
    .scope_end = orch_scope_end,
    .read_tensor = orch_read_tensor,
    .write_tensor = orch_write_tensor,
    .scope_begin_mode = orch_scope_begin_mode,
    .submit_after = orch_submit_after,
    .subgraph_submit = orch_subgraph_submit,
};

/* Calls a library's entry and judges what it left behind. */
static int run_library(HbgOrch *o, void *handle)
{
    const ChipCallableView *v = &o->callable->copy.view;
    int name_len = (int)v->header.orchestration_entry.size;
    const char *name = chip_callable_blob(v, v->header.orchestration_entry);
    pto_clear_error();
    int ret = o->callable->orch_entry(&hbg_orch_api, handle, o->scratch->dev_args);
    if (ret != 0) {
        const char *why = o->failed != PTO_OK ? o->failure : pto_last_error();
        int code = pto_device_failure(o->failed) ? o->failed : PTO_ERR_ORCHESTRATION; /* the code must tell */
        return pto_fail(code, "orchestration '%.*s' returned %d%s%s", name_len, name, ret, why[0] != '\0' ? ": " : "",
                        why);
    }
    if (o->failed != PTO_OK)
        return pto_fail(o->failed, "orchestration '%.*s' returned 0 after a failed call: %s", name_len, name, o->failure);
    if (o->scope_depth != 0)
        return pto_fail(PTO_ERR_ORCHESTRATION, "orchestration '%.*s' returned with %u scope(s) still open", name_len, name,
                        o->scope_depth);
    return PTO_OK;
}

int hbg_orchestrate(const RuntimeCallable *c, RuntimeSlotScratch *scratch)
{
    HbgOrch o = { .callable = c, .scratch = scratch };
    OrchSession session;
    void *handle = orch_session_open(&session, &o);
    int rc;
    if (c->orch_entry != NULL) {
        rc = run_library(&o, handle);
    } else {
        const ChipCallableView *v = &c->copy.view;
        /* the interpreter names each param's origin before its submit: the graph stays recordable */
        uint32_t origins[PTO_MAX_TASK_PARAMS];
        scratch->graph.origins = origins;
        scratch->graph.recordable = 1;
        rc = pto_program_orchestrate_origins(&hbg_orch_api, handle, scratch->dev_args, v->program, v->program_size,
                                             v->signature, v->header.signature_length, origins);
        scratch->graph.origins = NULL;
    }
    orch_session_close(&session); /* before o leaves scope: the handle never outlives it */
    subgraph_table_clear(&o.subgraphs);
    return rc;
}

/* Sub-graphs: recording a body, checking a boundary, invoking a recording (orch/subgraph.h). */
#include "orch/subgraph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orch/orch_session.h"
#include "orch/program_orchestration.h"
#include "util/last_error.h"
#include "util/tensor_view.h"

/* Where the recorder places the invocation's own tensors: an address no device
   memory has (the top of the 64-bit space), so they never meet a boundary view. */
#define LOCAL_BASE 0xF000000000000000ull
#define LOCAL_LIMIT (1ull << 40)
#define MAX_BODY_SCOPES 64u

enum { FROM_CONSTANT = 0, FROM_BOUNDARY = 1, FROM_LOCAL = 2 };

/* A recorded parameter: the param with its address (value, view.addr) made
   relative to what it comes from, or a boundary scalar's slot. */
typedef struct RecordedParam {
    PtoTaskParam p;
    uint32_t from;            /* FROM_* */
    uint32_t boundary;        /* FROM_BOUNDARY: the boundary param */
} RecordedParam;

typedef struct RecordedTask {
    uint32_t func_id;
    uint32_t param_first, param_count;
    uint32_t pred_first, pred_count;  /* producers inside the sub-graph, by task index */
    uint32_t has_consumer;
} RecordedTask;

typedef struct SubgraphRecording {
    struct SubgraphRecording *next;
    uint32_t key;
    uint32_t boundary_count;
    PtoTaskParam boundary[PTO_MAX_TASK_PARAMS]; /* the recorded boundary: its geometry and placement */
    uint64_t block_bytes;
    uint64_t bytes;           /* what it holds, for the run's budget */
    RecordedTask *tasks;
    RecordedParam *params;
    uint32_t *preds;
    uint64_t *handles;        /* an invocation's task handles, by task index */
    uint64_t *scratch;        /* an invocation's producers of one task */
    uint32_t task_count, param_count, pred_count;
    uint32_t task_cap, param_cap, pred_cap;
} SubgraphRecording;

/* An access of a recorded task, for the inference between the sub-graph's tasks. */
typedef struct Access {
    uint32_t task;
    uint64_t lo, hi;
    PtoTensorView view;       /* ndims 0: flat [lo, hi) */
} Access;

typedef struct AccessList {
    Access *items;
    uint32_t count, cap;
} AccessList;

typedef struct Recorder {
    SubgraphRecording *rec;
    const PtoTaskParam *boundary;
    uint32_t n;
    uint64_t next, high;      /* the body's bump pointer and high-water in the block */
    int allocated;            /* the body called alloc_tensor: the invocation has a block */
    uint64_t marks[MAX_BODY_SCOPES];
    uint32_t scopes;
    AccessList readers, writers;
    uint32_t *dep_mark;       /* per task: 1 + the task that last listed it as a producer */
    uint32_t dep_cap;
    int failed;
    char failure[PTO_ERROR_MESSAGE_BYTES];
} Recorder;

/* ---- growing arrays --------------------------------------------------------------- */

static int grow(void **items, uint32_t *cap, uint64_t need, size_t elem, const char *what)
{
    if (need <= *cap)
        return PTO_OK;
    if (need > SUBGRAPH_MAX_TASKS * (uint64_t)(PTO_MAX_TASK_PARAMS + 1))
        return pto_fail(PTO_ERR_CAPACITY, "subgraph_submit: the sub-graph has too many %s (a sub-graph holds at most "
                                          "%u tasks)", what, SUBGRAPH_MAX_TASKS);
    uint64_t cap2 = *cap < 16 ? 16 : (uint64_t)*cap * 2;
    while (cap2 < need)
        cap2 *= 2;
    void *p = realloc(*items, (size_t)cap2 * elem);
    if (p == NULL)
        return pto_fail(PTO_ERR_OUT_OF_MEMORY, "subgraph_submit: no host memory for the sub-graph's %s", what);
    *items = p;
    *cap = (uint32_t)cap2;
    return PTO_OK;
}

#define GROW(arr, cap, need, what) grow((void **)&(arr), &(cap), (need), sizeof *(arr), what)

static void recording_free(SubgraphRecording *rec)
{
    if (rec == NULL)
        return;
    free(rec->tasks);
    free(rec->params);
    free(rec->preds);
    free(rec->handles);
    free(rec->scratch);
    free(rec);
}

/* ---- the recorder's api ------------------------------------------------------------- */

static int note(Recorder *r, int rc)
{
    if (rc != PTO_OK && r->failed == PTO_OK) {
        r->failed = rc;
        strncpy(r->failure, pto_last_error(), sizeof r->failure - 1);
    }
    return rc;
}

static Recorder *recorder_of(void *orch, const char *fn, int *rc)
{
    Recorder *r = orch_session_resolve_kind(orch, ORCH_SESSION_SUBGRAPH_BODY, fn);
    if (r == NULL) {
        *rc = PTO_ERR_INVALID_ARGUMENT;
        return NULL;
    }
    if (r->failed != PTO_OK) {
        *rc = pto_fail(r->failed, "%s: refused, an earlier call of this sub-graph body failed: %s", fn, r->failure);
        return NULL;
    }
    return r;
}

static int is_tensor(uint32_t direction)
{
    return direction == PTO_ARG_IN || direction == PTO_ARG_OUT || direction == PTO_ARG_INOUT;
}

/* Whether boundary view b holds every byte of p: its span for a flat one, its
   elements for a strided one (a byte of the span between them is not the
   boundary's, and the entry and exit would not order it). */
static int holds(const PtoTaskParam *b, const PtoTaskParam *p)
{
    if (p->value < b->value || p->value + p->bytes > b->value + b->bytes)
        return 0;
    if (b->view.ndims == 0)
        return 1;
    PtoTensorView pv = p->view.ndims != 0 ? p->view : tensor_view_flat(p->value, p->bytes);
    return tensor_view_covers(&b->view, &pv);
}

/* Which boundary tensor view holds p: `named` (PTO_SUBGRAPH_REF), or the first
   that holds it and allows the access (a write: not an IN one), or else the
   first that holds it; -1 none. */
static int holder(const Recorder *r, const PtoTaskParam *p, uint32_t named)
{
    int first = -1, writes = p->direction != PTO_ARG_IN;
    for (uint32_t k = named != 0 ? named - 1 : 0; k < r->n; k++) {
        const PtoTaskParam *b = &r->boundary[k];
        if (is_tensor(b->direction) && holds(b, p)) {
            if (!writes || b->direction != PTO_ARG_IN)
                return (int)k;
            if (first < 0)
                first = (int)k;
        }
        if (named != 0)
            break;
    }
    return first;
}

/* A body's param as the recording keeps it. */
static int record_param(Recorder *r, uint32_t func_id, uint32_t i, const PtoTaskParam *p, RecordedParam *out)
{
    *out = (RecordedParam){ .p = *p, .from = FROM_CONSTANT };
    out->p.reserved = 0;
    uint32_t named = p->reserved;
    if (named > r->n)
        return pto_fail(PTO_ERR_ORCHESTRATION,
                        "subgraph_submit body: submit (func_id %u) param %u names boundary param %u; the boundary has %u",
                        func_id, i, named - 1, r->n);
    if (p->direction == PTO_ARG_SCALAR) {
        if (named == 0)
            return PTO_OK;
        if (r->boundary[named - 1].direction != PTO_ARG_SCALAR)
            return pto_fail(PTO_ERR_ORCHESTRATION,
                            "subgraph_submit body: submit (func_id %u) scalar param %u names boundary param %u, a tensor "
                            "view", func_id, i, named - 1);
        out->from = FROM_BOUNDARY;
        out->boundary = named - 1;
        out->p.value = 0;
        return PTO_OK;
    }
    if (!is_tensor(p->direction))
        return pto_fail(PTO_ERR_ORCHESTRATION, "subgraph_submit body: submit (func_id %u) param %u has invalid direction %u",
                        func_id, i, p->direction);
    const char *bad = tensor_view_param_check(p);
    uint64_t lo = p->value, hi = lo + p->bytes;
    if (hi < lo)
        return pto_fail(PTO_ERR_ORCHESTRATION, "subgraph_submit body: submit (func_id %u) param %u wraps around", func_id, i);
    if (bad != NULL)
        return pto_fail(PTO_ERR_ORCHESTRATION, "subgraph_submit body: submit (func_id %u) param %u: %s", func_id, i, bad);
    uint64_t base;
    int k = holder(r, p, named);
    if (k >= 0) {
        if (p->direction != PTO_ARG_IN && r->boundary[k].direction == PTO_ARG_IN)
            return pto_fail(PTO_ERR_ORCHESTRATION,
                            "subgraph_submit body: submit (func_id %u) param %u writes boundary param %u, which is IN",
                            func_id, i, (uint32_t)k);
        out->from = FROM_BOUNDARY;
        out->boundary = (uint32_t)k;
        base = r->boundary[k].value;
    } else if (named == 0 && lo >= LOCAL_BASE && hi <= LOCAL_BASE + r->high) {
        out->from = FROM_LOCAL;
        base = LOCAL_BASE;
    } else if (named != 0) {
        return pto_fail(PTO_ERR_ORCHESTRATION,
                        "subgraph_submit body: submit (func_id %u) param %u [%#llx, +%llu) does not lie inside boundary "
                        "param %u, which it names (inside its elements, when that view is strided)",
                        func_id, i, (unsigned long long)lo, (unsigned long long)p->bytes, named - 1);
    } else {
        return pto_fail(PTO_ERR_ORCHESTRATION,
                        "subgraph_submit body: submit (func_id %u) param %u [%#llx, +%llu) lies inside no boundary view "
                        "and no tensor the body allocated",
                        func_id, i, (unsigned long long)lo, (unsigned long long)p->bytes);
    }
    out->p.value -= base;
    if (out->p.view.ndims != 0)
        out->p.view.addr -= base;
    return PTO_OK;
}

static int add_pred(Recorder *r, uint32_t producer, uint32_t task)
{
    if (r->dep_mark[producer] == task + 1)
        return PTO_OK;
    r->dep_mark[producer] = task + 1;
    SubgraphRecording *rec = r->rec;
    int rc = GROW(rec->preds, rec->pred_cap, (uint64_t)rec->pred_count + 1, "dependencies");
    if (rc != PTO_OK)
        return rc;
    rec->preds[rec->pred_count++] = producer;
    rec->tasks[producer].has_consumer = 1;
    return PTO_OK;
}

static int conflicts(const Access *a, const Access *b)
{
    if (a->lo >= b->hi || b->lo >= a->hi)
        return 0;
    if (a->view.ndims == 0 && b->view.ndims == 0)
        return 1;
    PtoTensorView av = a->view.ndims != 0 ? a->view : tensor_view_flat(a->lo, a->hi - a->lo);
    PtoTensorView bv = b->view.ndims != 0 ? b->view : tensor_view_flat(b->lo, b->hi - b->lo);
    return tensor_view_conflict(&av, &bv);
}

static int depend_on(Recorder *r, const AccessList *list, const Access *a)
{
    for (uint32_t i = 0; i < list->count; i++)
        if (conflicts(&list->items[i], a)) {
            int rc = add_pred(r, list->items[i].task, a->task);
            if (rc != PTO_OK)
                return rc;
        }
    return PTO_OK;
}

/* A write covering an earlier access supersedes it, as in the runtimes. */
static void drop_covered(AccessList *list, const Access *w)
{
    PtoTensorView wv = w->view.ndims != 0 ? w->view : tensor_view_flat(w->lo, w->hi - w->lo);
    uint32_t kept = 0;
    for (uint32_t i = 0; i < list->count; i++) {
        const Access *a = &list->items[i];
        int covered = a->lo >= w->lo && a->hi <= w->hi;
        if (covered && w->view.ndims != 0) {
            PtoTensorView av = a->view.ndims != 0 ? a->view : tensor_view_flat(a->lo, a->hi - a->lo);
            covered = tensor_view_covers(&wv, &av);
        }
        if (!covered)
            list->items[kept++] = *a;
    }
    list->count = kept;
}

static int add_access(AccessList *list, const Access *a)
{
    int rc = GROW(list->items, list->cap, (uint64_t)list->count + 1, "accesses");
    if (rc == PTO_OK)
        list->items[list->count++] = *a;
    return rc;
}

/* The task's producers among the earlier ones, then its accesses. */
static int infer(Recorder *r, uint32_t task, const PtoTaskParam *params, uint32_t n)
{
    Access acc[PTO_MAX_TASK_PARAMS];
    int rc = PTO_OK;
    for (uint32_t i = 0; i < n && rc == PTO_OK; i++) {
        acc[i] = (Access){ task, params[i].value, params[i].value + params[i].bytes, params[i].view };
        if (params[i].view.ndims == 0)
            memset(&acc[i].view, 0, sizeof acc[i].view);
        if (!is_tensor(params[i].direction) || params[i].bytes == 0)
            continue;
        rc = depend_on(r, &r->writers, &acc[i]);
        if (rc == PTO_OK && params[i].direction != PTO_ARG_IN)
            rc = depend_on(r, &r->readers, &acc[i]);
    }
    for (uint32_t i = 0; i < n && rc == PTO_OK; i++) {
        if (!is_tensor(params[i].direction) || params[i].bytes == 0)
            continue;
        if (params[i].direction == PTO_ARG_IN) {
            rc = add_access(&r->readers, &acc[i]);
        } else {
            drop_covered(&r->writers, &acc[i]);
            drop_covered(&r->readers, &acc[i]);
            rc = add_access(&r->writers, &acc[i]);
        }
    }
    return rc;
}

/* Producers in ascending order: bound to handles, which ascend with the tasks,
   they reach the runtime sorted, as it keeps them. */
static void sort_preds(uint32_t *p, uint32_t n)
{
    for (uint32_t i = 1; i < n; i++) {
        uint32_t v = p[i], j = i;
        for (; j > 0 && p[j - 1] > v; j--)
            p[j] = p[j - 1];
        p[j] = v;
    }
}

static int body_submit(void *orch, uint32_t func_id, const PtoTaskParam *params, uint32_t n)
{
    int rc;
    Recorder *r = recorder_of(orch, "submit", &rc);
    if (r == NULL)
        return rc;
    SubgraphRecording *rec = r->rec;
    if (n > PTO_MAX_TASK_PARAMS)
        return note(r, pto_fail(PTO_ERR_CAPACITY, "subgraph_submit body: submit (func_id %u): %u params, a task takes "
                                                  "at most %u", func_id, n, PTO_MAX_TASK_PARAMS));
    if (params == NULL && n > 0)
        return note(r, pto_fail(PTO_ERR_ORCHESTRATION, "subgraph_submit body: submit (func_id %u): NULL params", func_id));
    if (func_id == SUBGRAPH_BOUNDARY_FUNC)
        return note(r, pto_fail(PTO_ERR_ORCHESTRATION, "subgraph_submit body: submit: func_id %u is reserved", func_id));
    if (rec->task_count == SUBGRAPH_MAX_TASKS)
        return note(r, pto_fail(PTO_ERR_CAPACITY, "subgraph_submit body: a sub-graph holds at most %u tasks",
                                SUBGRAPH_MAX_TASKS));
    uint32_t t = rec->task_count;
    if ((rc = GROW(rec->tasks, rec->task_cap, (uint64_t)t + 1, "tasks")) != PTO_OK ||
        (rc = GROW(rec->params, rec->param_cap, (uint64_t)rec->param_count + n, "params")) != PTO_OK ||
        (rc = GROW(r->dep_mark, r->dep_cap, (uint64_t)t + 1, "tasks")) != PTO_OK)
        return note(r, rc);
    for (uint32_t i = 0; i < n; i++)
        if ((rc = record_param(r, func_id, i, &params[i], &rec->params[rec->param_count + i])) != PTO_OK)
            return note(r, rc);
    r->dep_mark[t] = 0;
    rec->tasks[t] = (RecordedTask){ func_id, rec->param_count, n, rec->pred_count, 0, 0 };
    if ((rc = infer(r, t, params, n)) != PTO_OK)
        return note(r, rc);
    rec->tasks[t].pred_count = rec->pred_count - rec->tasks[t].pred_first;
    if (rec->tasks[t].pred_count > 1)
        sort_preds(&rec->preds[rec->tasks[t].pred_first], rec->tasks[t].pred_count);
    rec->param_count += n;
    rec->task_count++;
    return PTO_OK;
}

static uint64_t body_alloc_tensor(void *orch, uint64_t bytes)
{
    int rc;
    Recorder *r = recorder_of(orch, "alloc_tensor", &rc);
    if (r == NULL)
        return 0;
    uint64_t at = (r->next + SUBGRAPH_LOCAL_ALIGN - 1) / SUBGRAPH_LOCAL_ALIGN * SUBGRAPH_LOCAL_ALIGN;
    if (bytes > LOCAL_LIMIT || at > LOCAL_LIMIT - bytes) {
        note(r, pto_fail(PTO_ERR_OUT_OF_MEMORY, "subgraph_submit body: alloc_tensor of %llu bytes: a sub-graph's own "
                                                "tensors hold at most %llu bytes", (unsigned long long)bytes,
                         (unsigned long long)LOCAL_LIMIT));
        return 0;
    }
    r->next = at + bytes;
    r->high = r->next > r->high ? r->next : r->high;
    r->allocated = 1;
    return LOCAL_BASE + at;
}

static int body_scope_begin_mode(void *orch, uint32_t mode)
{
    int rc;
    Recorder *r = recorder_of(orch, "scope_begin", &rc);
    if (r == NULL)
        return rc;
    if (mode != PTO_SCOPE_AUTO)
        return note(r, pto_fail(PTO_ERR_ORCHESTRATION,
                                "subgraph_submit body: scope_begin_mode %u: a body opens AUTO scopes only", mode));
    if (r->scopes == MAX_BODY_SCOPES)
        return note(r, pto_fail(PTO_ERR_ORCHESTRATION, "subgraph_submit body: scopes nest at most %u deep",
                                MAX_BODY_SCOPES));
    r->marks[r->scopes++] = r->next;
    return PTO_OK;
}

static int body_scope_begin(void *orch)
{
    return body_scope_begin_mode(orch, PTO_SCOPE_AUTO);
}

/* A scope's end lets later tensors reuse its bytes: the inference orders their
   users after the earlier ones, as on the runtimes. */
static int body_scope_end(void *orch)
{
    int rc;
    Recorder *r = recorder_of(orch, "scope_end", &rc);
    if (r == NULL)
        return rc;
    if (r->scopes == 0)
        return note(r, pto_fail(PTO_ERR_ORCHESTRATION, "subgraph_submit body: scope_end without an open scope"));
    r->next = r->marks[--r->scopes];
    return PTO_OK;
}

static int refused(void *orch, const char *fn)
{
    int rc;
    Recorder *r = recorder_of(orch, fn, &rc);
    if (r == NULL)
        return rc;
    return note(r, pto_fail(PTO_ERR_ORCHESTRATION,
                            "subgraph_submit body: %s is not available in a sub-graph body (it is recorded once and "
                            "replayed: it may depend on nothing but its boundary)", fn));
}

static int body_read_tensor(void *orch, uint64_t dev_addr, void *dst, uint64_t n)
{
    (void)dev_addr, (void)dst, (void)n;
    return refused(orch, "read_tensor");
}

static int body_write_tensor(void *orch, uint64_t dev_addr, const void *src, uint64_t n)
{
    (void)dev_addr, (void)src, (void)n;
    return refused(orch, "write_tensor");
}

static int body_submit_after(void *orch, uint32_t func_id, const PtoTaskParam *params, uint32_t n,
                             const uint32_t *after, uint32_t n_after)
{
    (void)func_id, (void)params, (void)n, (void)after, (void)n_after;
    return refused(orch, "submit_after");
}

static int body_subgraph_submit(void *orch, uint32_t key, PtoSubgraphBody body, void *ctx,
                                const PtoTaskParam *boundary, uint32_t n)
{
    (void)key, (void)body, (void)ctx, (void)boundary, (void)n;
    return refused(orch, "subgraph_submit");
}

static const PtoOrchApi body_api = {
    .submit = body_submit,
    .alloc_tensor = body_alloc_tensor,
    .scope_begin = body_scope_begin,
    .scope_end = body_scope_end,
    .read_tensor = body_read_tensor,
    .write_tensor = body_write_tensor,
    .scope_begin_mode = body_scope_begin_mode,
    .submit_after = body_submit_after,
    .subgraph_submit = body_subgraph_submit,
};

/* ---- recording ----------------------------------------------------------------------- */

static uint64_t recording_bytes(const SubgraphRecording *rec)
{
    return sizeof *rec + (uint64_t)rec->task_cap * (sizeof *rec->tasks + 2 * sizeof *rec->handles) +
           (uint64_t)rec->param_cap * sizeof *rec->params + (uint64_t)rec->pred_cap * sizeof *rec->preds;
}

/* Runs the body against the recorder; *out the recording (the caller's to free). */
static int record(uint32_t key, PtoSubgraphBody body, void *ctx, const PtoTaskParam *boundary, uint32_t n,
                  SubgraphRecording **out)
{
    SubgraphRecording *rec = calloc(1, sizeof *rec);
    if (rec == NULL)
        return pto_fail(PTO_ERR_OUT_OF_MEMORY, "subgraph_submit (key %u): no host memory for its recording", key);
    rec->key = key;
    rec->boundary_count = n;
    memcpy(rec->boundary, boundary, (size_t)n * sizeof *boundary);
    Recorder r = { .rec = rec, .boundary = boundary, .n = n };
    OrchSession session;
    void *handle = orch_session_open_kind(&session, &r, ORCH_SESSION_SUBGRAPH_BODY);
    pto_clear_error(); /* a body failing on its own leaves its message, or none */
    int rc = body(&body_api, handle, ctx, boundary, n);
    orch_session_close(&session);
    if (r.failed != PTO_OK) /* the body may have ignored it */
        rc = pto_fail(r.failed, "%s", r.failure);
    else if (rc != PTO_OK && pto_last_error()[0] == '\0')
        rc = pto_fail(rc, "subgraph_submit (key %u): the body returned %d", key, rc);
    if (rc == PTO_OK && r.scopes != 0)
        rc = pto_fail(PTO_ERR_ORCHESTRATION, "subgraph_submit (key %u): the body left %u scope(s) open", key, r.scopes);
    free(r.readers.items);
    free(r.writers.items);
    free(r.dep_mark);
    /* an invocation's handles, and its scratch of producers: a task's, then the exit's (entry + sinks) */
    if (rc == PTO_OK && ((rec->handles = malloc(((size_t)rec->task_count + 1) * sizeof *rec->handles)) == NULL ||
                         (rec->scratch = malloc(((size_t)rec->task_count + 1) * sizeof *rec->scratch)) == NULL))
        rc = pto_fail(PTO_ERR_OUT_OF_MEMORY, "subgraph_submit (key %u): no host memory for its recording", key);
    if (rc != PTO_OK) {
        recording_free(rec);
        return rc;
    }
    /* a body that allocated only empty tensors still gets a block, so their
       views have an address inside the run's memory */
    rec->block_bytes = r.allocated && r.high == 0 ? 1 : r.high;
    rec->bytes = recording_bytes(rec);
    *out = rec;
    return PTO_OK;
}

/* ---- the boundary's geometry ------------------------------------------------------------ */

static void describe(const PtoTaskParam *p, char *buf, size_t cap)
{
    static const char *const dirs[] = { "SCALAR", "IN", "OUT", "INOUT" };
    const char *dir = p->direction < 4 ? dirs[p->direction] : "?";
    if (p->direction == PTO_ARG_SCALAR) {
        snprintf(buf, cap, "a scalar");
        return;
    }
    if (p->view.ndims == 0) {
        snprintf(buf, cap, "an %s flat view of %llu bytes", dir, (unsigned long long)p->bytes);
        return;
    }
    int at = snprintf(buf, cap, "an %s view of dtype %u, shape [", dir, p->view.dtype);
    for (uint32_t d = 0; d < p->view.ndims && at > 0 && (size_t)at < cap; d++)
        at += snprintf(buf + at, cap - (size_t)at, d ? ", %llu" : "%llu", (unsigned long long)p->view.shape[d]);
    if (at > 0 && (size_t)at < cap)
        at += snprintf(buf + at, cap - (size_t)at, "], strides [");
    for (uint32_t d = 0; d < p->view.ndims && at > 0 && (size_t)at < cap; d++)
        at += snprintf(buf + at, cap - (size_t)at, d ? ", %llu" : "%llu", (unsigned long long)p->view.strides[d]);
    if (at > 0 && (size_t)at < cap)
        snprintf(buf + at, cap - (size_t)at, "] (%llu bytes)", (unsigned long long)p->bytes);
}

static int same_geometry(const PtoTaskParam *a, const PtoTaskParam *b)
{
    if (a->direction != b->direction)
        return 0;
    if (a->direction == PTO_ARG_SCALAR)
        return 1;
    if (a->bytes != b->bytes || a->view.ndims != b->view.ndims)
        return 0;
    if (a->view.ndims == 0)
        return 1;
    return a->view.dtype == b->view.dtype &&
           memcmp(a->view.shape, b->view.shape, sizeof a->view.shape) == 0 &&
           memcmp(a->view.strides, b->view.strides, sizeof a->view.strides) == 0;
}

/* How tensor params i < j of a boundary overlap: 0 when they do not, else 1 +
   the distance from i's first byte to j's (as unsigned arithmetic). */
static uint64_t overlap_of(const PtoTaskParam *b, uint32_t i, uint32_t j)
{
    if (!is_tensor(b[i].direction) || !is_tensor(b[j].direction) || b[i].bytes == 0 || b[j].bytes == 0)
        return 0;
    if (b[i].value >= b[j].value + b[j].bytes || b[j].value >= b[i].value + b[i].bytes)
        return 0;
    return 1 + (b[j].value - b[i].value);
}

static void describe_overlap(uint64_t o, char *buf, size_t cap)
{
    if (o == 0)
        snprintf(buf, cap, "do not overlap");
    else if ((int64_t)(o - 1) >= 0)
        snprintf(buf, cap, "overlap, the second starting %lld bytes after the first", (long long)(o - 1));
    else
        snprintf(buf, cap, "overlap, the second starting %lld bytes before the first", -(long long)(o - 1));
}

static int check_boundary(const SubgraphRecording *rec, const PtoTaskParam *boundary, uint32_t n)
{
    char now[256], then[256];
    if (n != rec->boundary_count)
        return pto_fail(PTO_ERR_ORCHESTRATION, "subgraph_submit (key %u): %u boundary params; its recording has %u",
                        rec->key, n, rec->boundary_count);
    for (uint32_t k = 0; k < n; k++)
        if (!same_geometry(&boundary[k], &rec->boundary[k])) {
            describe(&boundary[k], now, sizeof now);
            describe(&rec->boundary[k], then, sizeof then);
            return pto_fail(PTO_ERR_ORCHESTRATION,
                            "subgraph_submit (key %u): boundary param %u is %s; in its recording it is %s", rec->key, k,
                            now, then);
        }
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t j = i + 1; j < n; j++) {
            uint64_t o = overlap_of(boundary, i, j), r = overlap_of(rec->boundary, i, j);
            if (o != r) {
                describe_overlap(o, now, sizeof now);
                describe_overlap(r, then, sizeof then);
                return pto_fail(PTO_ERR_ORCHESTRATION,
                                "subgraph_submit (key %u): boundary params %u and %u %s; in its recording they %s",
                                rec->key, i, j, now, then);
            }
        }
    return PTO_OK;
}

static int check_call(uint32_t key, PtoSubgraphBody body, const PtoTaskParam *boundary, uint32_t n)
{
    if (body == NULL)
        return pto_fail(PTO_ERR_ORCHESTRATION, "subgraph_submit (key %u): NULL body", key);
    if (n == 0 || n > PTO_SUBGRAPH_MAX_BOUNDARY || boundary == NULL)
        return pto_fail(PTO_ERR_ORCHESTRATION, "subgraph_submit (key %u): %u boundary params at %p; a boundary has "
                                               "1..%u", key, n, (const void *)boundary, PTO_SUBGRAPH_MAX_BOUNDARY);
    for (uint32_t k = 0; k < n; k++) {
        const PtoTaskParam *p = &boundary[k];
        if (p->direction != PTO_ARG_SCALAR && !is_tensor(p->direction))
            return pto_fail(PTO_ERR_ORCHESTRATION, "subgraph_submit (key %u): boundary param %u has invalid direction %u",
                            key, k, p->direction);
        const char *bad = is_tensor(p->direction) ? tensor_view_param_check(p) : NULL;
        if (bad != NULL || (is_tensor(p->direction) && p->value + p->bytes < p->value))
            return pto_fail(PTO_ERR_ORCHESTRATION, "subgraph_submit (key %u): boundary param %u: %s", key, k,
                            bad != NULL ? bad : "the view wraps around");
    }
    return PTO_OK;
}

/* ---- invocation -------------------------------------------------------------------------- */

typedef struct Invocation {
    SubgraphSubmitFn submit;
    void *run;
    const PtoTaskParam *boundary;
    const uint32_t *boundary_origins;
    uint64_t block;
} Invocation;

/* The entry's and the exit's params: the boundary's views and the block. */
static uint32_t edge_params(const SubgraphRecording *rec, const Invocation *v, PtoTaskParam *params, uint32_t *origins)
{
    uint32_t n = 0;
    for (uint32_t k = 0; k < rec->boundary_count; k++)
        if (is_tensor(v->boundary[k].direction)) {
            params[n] = v->boundary[k];
            params[n].reserved = 0;
            origins[n++] = v->boundary_origins != NULL ? v->boundary_origins[k] : PTO_PARAM_ORIGIN_FIXED;
        }
    if (rec->block_bytes > 0) {
        params[n] = (PtoTaskParam){ .direction = PTO_ARG_INOUT, .value = v->block, .bytes = rec->block_bytes };
        origins[n++] = PTO_PARAM_ORIGIN_LOCAL(0);
    }
    return n;
}

static void bind(const RecordedParam *r, const Invocation *v, PtoTaskParam *out, uint32_t *origin)
{
    *out = r->p;
    *origin = PTO_PARAM_ORIGIN_FIXED;
    uint64_t base = 0;
    if (r->from == FROM_LOCAL) {
        base = v->block;
        *origin = PTO_PARAM_ORIGIN_LOCAL(0);
    } else if (r->from == FROM_BOUNDARY) {
        base = v->boundary[r->boundary].value;
        if (v->boundary_origins != NULL)
            *origin = v->boundary_origins[r->boundary];
    }
    out->value += base;
    if (out->view.ndims != 0)
        out->view.addr += base;
}

/* The sub-graph's tasks, bound, each after its recorded producers (the entry
   when it has none); then *exit_preds (rec->scratch) holds the exit's: the entry
   and every task no other task depends on. */
static int run_tasks(SubgraphRecording *rec, const Invocation *v, uint64_t entry, uint32_t *exit_preds)
{
    PtoTaskParam params[PTO_MAX_TASK_PARAMS];
    uint32_t origins[PTO_MAX_TASK_PARAMS];
    uint64_t *preds = rec->scratch;
    int rc;
    for (uint32_t t = 0; t < rec->task_count; t++) {
        const RecordedTask *task = &rec->tasks[t];
        for (uint32_t i = 0; i < task->param_count; i++)
            bind(&rec->params[task->param_first + i], v, &params[i], &origins[i]);
        uint32_t n_preds = task->pred_count;
        for (uint32_t k = 0; k < n_preds; k++)
            preds[k] = rec->handles[rec->preds[task->pred_first + k]];
        if (n_preds == 0)
            preds[n_preds++] = entry;
        if ((rc = v->submit(v->run, task->func_id, params, task->param_count, preds, n_preds, 0,
                            v->boundary_origins != NULL ? origins : NULL, &rec->handles[t])) != PTO_OK)
            return rc;
    }
    uint32_t n = 0;
    preds[n++] = entry;
    for (uint32_t t = 0; t < rec->task_count; t++)
        if (!rec->tasks[t].has_consumer)
            preds[n++] = rec->handles[t];
    *exit_preds = n;
    return PTO_OK;
}

static int invoke(SubgraphRecording *rec, const Invocation *v0, const PtoOrchApi *api, void *orch)
{
    Invocation v = *v0;
    PtoTaskParam params[PTO_MAX_TASK_PARAMS]; /* the entry's and the exit's */
    uint32_t origins[PTO_MAX_TASK_PARAMS];
    int rc, scoped = rec->block_bytes > 0;
    if (scoped) {
        if ((rc = api->scope_begin(orch)) != PTO_OK)
            return rc;
        if ((v.block = api->alloc_tensor(orch, rec->block_bytes)) == 0)
            return pto_fail(PTO_ERR_OUT_OF_MEMORY, "subgraph_submit (key %u): its own tensors (%llu bytes): %s",
                            rec->key, (unsigned long long)rec->block_bytes, pto_last_error());
    }
    uint64_t entry, exit;
    uint32_t n = edge_params(rec, &v, params, origins), exit_preds = 0;
    const uint32_t *o = v.boundary_origins != NULL ? origins : NULL;
    if ((rc = v.submit(v.run, SUBGRAPH_BOUNDARY_FUNC, params, n, NULL, 0, SUBGRAPH_TASK_INFER | SUBGRAPH_TASK_RECORD, o,
                       &entry)) != PTO_OK ||
        (rc = run_tasks(rec, &v, entry, &exit_preds)) != PTO_OK ||
        (rc = v.submit(v.run, SUBGRAPH_BOUNDARY_FUNC, params, n, rec->scratch, exit_preds, SUBGRAPH_TASK_RECORD, o,
                       &exit)) != PTO_OK)
        return rc;
    return scoped ? api->scope_end(orch) : PTO_OK;
}

/* ---- the entry ---------------------------------------------------------------------------- */

int subgraph_invoke(SubgraphTable *table, SubgraphSubmitFn submit, void *run, const PtoOrchApi *api, void *orch,
                    uint32_t key, PtoSubgraphBody body, void *ctx, const PtoTaskParam *boundary, uint32_t n,
                    const uint32_t *boundary_origins)
{
    int rc = check_call(key, body, boundary, n);
    if (rc != PTO_OK)
        return rc;
    SubgraphRecording *rec = table->first;
    while (rec != NULL && rec->key != key)
        rec = rec->next;
    int kept = rec != NULL;
    if (rec != NULL)
        rc = check_boundary(rec, boundary, n);
    else if ((rc = record(key, body, ctx, boundary, n, &rec)) == PTO_OK &&
             table->bytes + rec->bytes <= (table->budget != 0 ? table->budget : SUBGRAPH_RUN_BUDGET_BYTES)) {
        rec->next = table->first;
        table->first = rec;
        table->bytes += rec->bytes;
        kept = 1;
    }
    if (rc != PTO_OK)
        return rc;
    Invocation v = { submit, run, boundary, boundary_origins, 0 };
    rc = invoke(rec, &v, api, orch);
    if (!kept)
        recording_free(rec);
    return rc;
}

void subgraph_table_clear(SubgraphTable *table)
{
    while (table->first != NULL) {
        SubgraphRecording *rec = table->first;
        table->first = rec->next;
        recording_free(rec);
    }
    table->bytes = 0;
}

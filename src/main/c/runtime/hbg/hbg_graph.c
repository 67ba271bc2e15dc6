#include "hbg_graph.h"

#include <stdlib.h>
#include <string.h>

#include "util/last_error.h"
#include "util/sorted_search.h"
#include "util/tensor_view.h"
#include "orch/program_orchestration.h"
#include "ptorun/chip_callable.h"
#include "ptorun/pto_runtime_c_api.h"

#define ALIGN8(x) (((x) + 7u) & ~(size_t)7u)

/* Grows *items (elem bytes each) to hold at least `need`. */
static int reserve(void **items, uint32_t *cap, uint64_t need, size_t elem)
{
    if (need <= *cap)
        return PTO_OK;
    uint64_t grown = *cap ? *cap : 64;
    while (grown < need)
        grown *= 2;
    if (grown > UINT32_MAX)
        grown = UINT32_MAX;
    if (grown < need)
        return pto_fail(PTO_ERR_CAPACITY, "hbg graph: %llu entries exceed what one run can hold",
                        (unsigned long long)need);
    void *p = realloc(*items, (size_t)grown * elem);
    if (p == NULL)
        return pto_fail(PTO_ERR_OUT_OF_MEMORY, "hbg graph: out of host memory");
    *items = p;
    *cap = (uint32_t)grown;
    return PTO_OK;
}

#define RESERVE(ptr, cap, need) reserve((void **)&(ptr), &(cap), (need), sizeof *(ptr))

/* The per-task arrays grow together and share task_cap. */
static int reserve_tasks(HbgGraph *g, uint64_t need)
{
    if (need <= g->task_cap)
        return PTO_OK;
    uint32_t cap = g->task_cap, mark_cap = g->task_cap, fill_cap = g->task_cap;
    int rc;
    if ((rc = RESERVE(g->tasks, cap, need)) != PTO_OK || (rc = RESERVE(g->dep_mark, mark_cap, need)) != PTO_OK ||
        (rc = RESERVE(g->fill, fill_cap, need)) != PTO_OK)
        return rc; /* the arrays that did grow stay valid, task_cap stays */
    g->task_cap = cap < mark_cap ? (cap < fill_cap ? cap : fill_cap) : (mark_cap < fill_cap ? mark_cap : fill_cap);
    return PTO_OK;
}

/* args, arg_sizes and arg_origins grow together and share arg_cap. */
static int reserve_args(HbgGraph *g, uint64_t need)
{
    if (need <= g->arg_cap)
        return PTO_OK;
    uint32_t cap = g->arg_cap, size_cap = g->arg_cap, origin_cap = g->arg_cap;
    int rc;
    if ((rc = RESERVE(g->args, cap, need)) != PTO_OK || (rc = RESERVE(g->arg_sizes, size_cap, need)) != PTO_OK ||
        (rc = RESERVE(g->arg_origins, origin_cap, need)) != PTO_OK)
        return rc;
    g->arg_cap = cap < size_cap ? cap : size_cap;
    g->arg_cap = g->arg_cap < origin_cap ? g->arg_cap : origin_cap;
    return PTO_OK;
}

void hbg_graph_init(HbgGraph *g)
{
    memset(g, 0, sizeof *g);
}

void hbg_graph_destroy(HbgGraph *g)
{
    for (uint32_t i = 0; i < g->class_cap; i++) {
        HbgAliasClass *c = &g->classes[i];
        free(c->writers.items);
        free(c->readers.items);
        free(c->manual_writers.items);
        free(c->manual_readers.items);
        free(c->freed_writers.items);
        free(c->freed_readers.items);
    }
    free(g->classes);
    free(g->tasks);
    free(g->args);
    free(g->arg_sizes);
    free(g->arg_origins);
    free(g->views);
    free(g->edges);
    free(g->dep_mark);
    free(g->fill);
    free(g->deps);
    memset(g, 0, sizeof *g);
}

void hbg_graph_reset(HbgGraph *g)
{
    g->task_count = 0;
    g->arg_count = 0;
    g->view_count = 0;
    g->edge_count = 0;
    g->dep_count = 0;
    g->class_count = 0;
    g->manual = 0;
    g->origins = NULL;
    g->recordable = 0;
}

/* ---- alias classes ------------------------------------------------------------- */

int hbg_graph_add_range(HbgGraph *g, uint64_t lo, uint64_t hi)
{
    uint32_t old_cap = g->class_cap;
    int rc = RESERVE(g->classes, g->class_cap, (uint64_t)g->class_count + 1);
    if (rc != PTO_OK)
        return rc;
    /* new slots own no access lists yet */
    memset(&g->classes[old_cap], 0, (g->class_cap - old_cap) * sizeof *g->classes);
    HbgAliasClass *c = &g->classes[g->class_count++];
    c->lo = lo;
    c->hi = hi;
    HbgAccessList *lists[] = { &c->writers,        &c->readers,       &c->manual_writers,
                               &c->manual_readers, &c->freed_writers, &c->freed_readers };
    for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++)
        lists[i]->count = 0, lists[i]->max_len = 0;
    return PTO_OK;
}

static int by_lo(const void *a, const void *b)
{
    const HbgAliasClass *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

void hbg_graph_seal_classes(HbgGraph *g)
{
    if (g->class_count < 2)
        return; /* nothing to merge (and no array at all when a run has no bytes) */
    qsort(g->classes, g->class_count, sizeof *g->classes, by_lo);
    uint32_t out = 0;
    for (uint32_t i = 0; i < g->class_count; i++) {
        if (out > 0 && g->classes[i].lo < g->classes[out - 1].hi) {
            if (g->classes[i].hi > g->classes[out - 1].hi)
                g->classes[out - 1].hi = g->classes[i].hi;
            continue;
        }
        /* swap so every slot keeps exactly one set of list buffers */
        HbgAliasClass keep = g->classes[out];
        g->classes[out] = g->classes[i];
        g->classes[i] = keep;
        out++;
    }
    g->class_count = out;
}

/* The class holding all of [lo, hi), or -1. */
static int32_t find_class(const HbgGraph *g, uint64_t lo, uint64_t hi)
{
    uint32_t a = PTO_SORTED_FIRST(g->classes, g->class_count, lo, lo, 1);
    if (a == 0)
        return -1;
    const HbgAliasClass *c = &g->classes[a - 1];
    return hi <= c->hi ? (int32_t)(a - 1) : -1;
}

/* ---- dependencies ---------------------------------------------------------------- */

static int add_dep(HbgGraph *g, uint32_t producer, uint32_t consumer)
{
    if (g->dep_mark[producer] == consumer + 1)
        return PTO_OK;
    g->dep_mark[producer] = consumer + 1;
    int rc = RESERVE(g->deps, g->dep_cap, (uint64_t)g->dep_count + 1);
    if (rc == PTO_OK)
        g->deps[g->dep_count++] = producer;
    return rc;
}

/* Producers in ascending order: the graph does not depend on parameter order. */
static void sort_deps(HbgGraph *g)
{
    for (uint32_t i = 1; i < g->dep_count; i++) {
        uint32_t d = g->deps[i], j = i;
        for (; j > 0 && g->deps[j - 1] > d; j--)
            g->deps[j] = g->deps[j - 1];
        g->deps[j] = d;
    }
}

/* The first item of the sorted list starting at or after `at`. */
static uint32_t first_from(const HbgAccessList *list, uint64_t at)
{
    return PTO_SORTED_FIRST(list->items, list->count, lo, at, 0);
}

/* A recorded access's view (its flat view when it kept none). */
static PtoTensorView access_view(const HbgGraph *g, const HbgAccess *a)
{
    return a->view != 0 ? g->views[a->view - 1] : tensor_view_flat(a->lo, a->hi - a->lo);
}

/* Whether an access whose span overlaps the view's shares a byte with it:
   only a strided view (of either) can miss. */
static int shares_a_byte(const HbgGraph *g, const HbgAccess *a, const PtoTensorView *view, int flat)
{
    if (flat && a->view == 0)
        return 1;
    PtoTensorView av = access_view(g, a);
    return tensor_view_conflict(&av, view);
}

/* Every access in `list` sharing a byte with the view ([lo, hi) its span, flat
   when it is a flat parameter's) becomes a producer of `task`. */
static int depend_on_overlaps(HbgGraph *g, const HbgAccessList *list, uint64_t lo, uint64_t hi,
                              const PtoTensorView *view, int flat, uint32_t task)
{
    uint64_t from = lo > list->max_len ? lo - list->max_len : 0;
    for (uint32_t i = first_from(list, from); i < list->count && list->items[i].lo < hi; i++) {
        const HbgAccess *a = &list->items[i];
        if (lo < a->hi && shares_a_byte(g, a, view, flat)) {
            int rc = add_dep(g, a->task, task);
            if (rc != PTO_OK)
                return rc;
        }
    }
    return PTO_OK;
}

/* Whether a write holds every byte of an access lying inside its span: a flat
   write always does. */
static int write_covers(const HbgGraph *g, const HbgAccess *a, const PtoTensorView *view, int flat)
{
    if (flat)
        return 1;
    PtoTensorView av = access_view(g, a);
    return tensor_view_covers(view, &av);
}

/* Removes the accesses the write (span [lo, hi)) covers: it supersedes them. */
static void drop_covered(const HbgGraph *g, HbgAccessList *list, uint64_t lo, uint64_t hi, const PtoTensorView *view,
                         int flat)
{
    uint32_t begin = first_from(list, lo), out = begin, i = begin;
    for (; i < list->count && list->items[i].lo < hi; i++)
        if (list->items[i].hi > hi || !write_covers(g, &list->items[i], view, flat))
            list->items[out++] = list->items[i];
    if (out == i)
        return;
    memmove(&list->items[out], &list->items[i], (size_t)(list->count - i) * sizeof *list->items);
    list->count -= i - out;
    if (list->count == 0)
        list->max_len = 0;
}

/* Inserts in lo order (after equal los: the order among them does not matter,
 * dependencies are sets). Submissions usually go up the addresses: an append. */
static int record_access(HbgAccessList *list, uint64_t lo, uint64_t hi, uint32_t task, uint32_t view)
{
    int rc = RESERVE(list->items, list->cap, (uint64_t)list->count + 1);
    if (rc != PTO_OK)
        return rc;
    uint32_t at = list->count;
    if (at > 0 && list->items[at - 1].lo > lo) {
        at = first_from(list, lo + 1);
        memmove(&list->items[at + 1], &list->items[at], (size_t)(list->count - at) * sizeof *list->items);
    }
    list->items[at] = (HbgAccess){ lo, hi, task, view };
    list->count++;
    if (hi - lo > list->max_len)
        list->max_len = hi - lo;
    return PTO_OK;
}

/* Finds each tensor view's class and, when `infer`, collects the task's producers. */
static int collect_deps(HbgGraph *g, const PtoTaskParam *params, uint32_t n, uint32_t task, int32_t *cls, int infer)
{
    int rc = PTO_OK;
    for (uint32_t i = 0; i < n && rc == PTO_OK; i++) {
        const PtoTaskParam *p = &params[i];
        cls[i] = -1;
        if (p->direction == PTO_ARG_SCALAR)
            continue;
        if (!tensor_view_param_is_tensor(p))
            return pto_fail(PTO_ERR_ORCHESTRATION, "submit: param %u has invalid direction %u", i, p->direction);
        uint64_t lo = p->value, hi = p->value + p->bytes;
        if (hi < lo)
            return pto_fail(PTO_ERR_ORCHESTRATION, "submit: param %u view [0x%llx, +%llu) wraps around", i,
                            (unsigned long long)lo, (unsigned long long)p->bytes);
        const char *bad = tensor_view_param_check(p);
        if (bad != NULL)
            return pto_fail(PTO_ERR_ORCHESTRATION, "submit: param %u strided view at 0x%llx: %s", i,
                            (unsigned long long)lo, bad);
        if (p->bytes == 0)
            continue; /* touches nothing, depends on nothing */
        if ((cls[i] = find_class(g, lo, hi)) < 0)
            return pto_fail(PTO_ERR_ORCHESTRATION, "submit: param %u view [0x%llx, +%llu) is not inside one run tensor",
                            i, (unsigned long long)lo, (unsigned long long)p->bytes);
        if (!infer)
            continue;
        HbgAliasClass *c = &g->classes[cls[i]];
        int flat = p->view.ndims == 0;
        PtoTensorView v = flat ? tensor_view_flat(lo, p->bytes) : p->view;
        rc = depend_on_overlaps(g, &c->writers, lo, hi, &v, flat, task);
        if (rc == PTO_OK && p->direction != PTO_ARG_IN)
            rc = depend_on_overlaps(g, &c->readers, lo, hi, &v, flat, task);
    }
    return rc;
}

/* A write supersedes the accesses it covers, reuse orderings included (it is
   ordered after them, and so is every later task conflicting with them). */
static void drop_covered_by_write(const HbgGraph *g, HbgAliasClass *c, uint64_t lo, uint64_t hi,
                                  const PtoTensorView *view, int flat)
{
    drop_covered(g, &c->writers, lo, hi, view, flat);
    drop_covered(g, &c->readers, lo, hi, view, flat);
    drop_covered(g, &c->freed_writers, lo, hi, view, flat);
    drop_covered(g, &c->freed_readers, lo, hi, view, flat);
}

/* Records the task's accesses once its producers are known: inside a MANUAL
   scope apart, dropping nothing (hbg_graph_manual_end); a strided view's access
   names its copy among the task's kept views (first at view_base). */
static int record_task(HbgGraph *g, const PtoTaskParam *params, uint32_t n, uint32_t task, const int32_t *cls,
                       uint32_t view_base)
{
    for (uint32_t i = 0; i < n; i++) {
        if (cls[i] < 0)
            continue;
        HbgAliasClass *c = &g->classes[cls[i]];
        uint64_t lo = params[i].value, hi = lo + params[i].bytes;
        int writes = params[i].direction != PTO_ARG_IN;
        int flat = params[i].view.ndims == 0;
        uint32_t view = flat ? 0 : view_base + i + 1;
        int rc;
        if (g->manual) {
            rc = record_access(writes ? &c->manual_writers : &c->manual_readers, lo, hi, task, view);
        } else if (!writes) {
            rc = record_access(&c->readers, lo, hi, task, view);
        } else {
            drop_covered_by_write(g, c, lo, hi, flat ? NULL : &g->views[view - 1], flat);
            rc = record_access(&c->writers, lo, hi, task, view);
        }
        if (rc != PTO_OK)
            return rc;
    }
    return PTO_OK;
}

/* The explicit predecessors of a submit_after, after the inferred ones (all
   earlier than the scope, so never the same task): each ordinal once. */
static int add_explicit(HbgGraph *g, const HbgAfter *after, uint32_t task)
{
    uint32_t earlier = task - after->base;
    for (uint32_t i = 0; i < after->count; i++) {
        uint32_t o = after->ordinals[i];
        if (o >= earlier)
            return pto_fail(PTO_ERR_INVALID_ARGUMENT,
                            "submit_after: after[%u] = %u is not an earlier submit of this scope (it has %u)", i, o,
                            earlier);
        if (g->dep_mark[after->base + o] == task + 1)
            return pto_fail(PTO_ERR_INVALID_ARGUMENT, "submit_after: after[%u] = %u is listed twice", i, o);
        int rc = add_dep(g, after->base + o, task);
        if (rc != PTO_OK)
            return rc;
    }
    return PTO_OK;
}

/* Reuse orderings: every recorded access of reused local heap bytes a view
   conflicts with, unless it is a dependency already. Always, MANUAL scope or not:
   they keep two tensors sharing bytes apart, whatever the orchestration declares. */
static int add_reuse(HbgGraph *g, const PtoTaskParam *params, uint32_t n, uint32_t task, const int32_t *cls)
{
    int rc = PTO_OK;
    for (uint32_t i = 0; i < n && rc == PTO_OK; i++) {
        if (cls[i] < 0)
            continue;
        HbgAliasClass *c = &g->classes[cls[i]];
        uint64_t lo = params[i].value, hi = lo + params[i].bytes;
        int flat = params[i].view.ndims == 0;
        PtoTensorView v = flat ? tensor_view_flat(lo, params[i].bytes) : params[i].view;
        rc = depend_on_overlaps(g, &c->freed_writers, lo, hi, &v, flat, task);
        if (rc == PTO_OK && params[i].direction != PTO_ARG_IN)
            rc = depend_on_overlaps(g, &c->freed_readers, lo, hi, &v, flat, task);
    }
    return rc;
}

/* A sub-graph task's producers, by task index (orch/subgraph.h). */
static int add_wired(HbgGraph *g, const uint64_t *preds, uint32_t n_preds, uint32_t task)
{
    for (uint32_t i = 0; i < n_preds; i++) {
        if (preds[i] >= task)
            return pto_fail(PTO_ERR_INVALID_ARGUMENT, "subgraph_submit: producer %llu is not an earlier task than %u",
                            (unsigned long long)preds[i], task);
        int rc = add_dep(g, (uint32_t)preds[i], task);
        if (rc != PTO_OK)
            return rc;
    }
    return PTO_OK;
}

/* Every submission: dependencies inferred from the views (HBG_TASK_INFER) and
   explicit ones (after: by ordinal in a MANUAL scope; wired: by task index),
   accesses recorded for later tasks (HBG_TASK_RECORD). */
static int add_task(HbgGraph *g, uint64_t kernel_addr, uint32_t func_id, uint32_t core_type, const PtoTaskParam *params,
                    uint32_t n, const HbgAfter *after, const uint64_t *wired, uint32_t n_wired, uint32_t flags)
{
    if (n > PTO_MAX_TASK_PARAMS)
        return pto_fail(PTO_ERR_CAPACITY, "submit: %u params, a task takes at most %u", n, PTO_MAX_TASK_PARAMS);
    if (g->task_count == HBG_MAX_TASKS)
        return pto_fail(PTO_ERR_CAPACITY, "submit: an hbg run holds at most %u tasks", HBG_MAX_TASKS);
    uint32_t t = g->task_count;
    int keep_views = tensor_view_params_kept(params, n);
    int rc;
    if ((rc = reserve_tasks(g, (uint64_t)t + 1)) != PTO_OK ||
        (rc = reserve_args(g, (uint64_t)g->arg_count + n)) != PTO_OK ||
        (keep_views && (rc = RESERVE(g->views, g->view_cap, (uint64_t)g->view_count + n)) != PTO_OK))
        return rc;

    int32_t cls[PTO_MAX_TASK_PARAMS];
    g->dep_mark[t] = 0;
    g->dep_count = 0;
    for (uint32_t i = 0; i < n; i++)
        cls[i] = -1; /* a task neither inferring nor recording touches no class */
    if (((flags & (HBG_TASK_INFER | HBG_TASK_RECORD)) != 0 &&
         (rc = collect_deps(g, params, n, t, cls, (flags & HBG_TASK_INFER) != 0)) != PTO_OK) ||
        (after != NULL && (rc = add_explicit(g, after, t)) != PTO_OK) ||
        (rc = add_wired(g, wired, n_wired, t)) != PTO_OK)
        return rc;
    sort_deps(g);
    uint32_t dependencies = g->dep_count;
    /* a task keeping views keeps every parameter's entry: the kernel gets them as one array */
    uint32_t view_base = g->view_count;
    for (uint32_t i = 0; keep_views && i < n; i++)
        g->views[view_base + i] = tensor_view_kernel_entry(&params[i]);
    if (((flags & HBG_TASK_INFER) && (rc = add_reuse(g, params, n, t, cls)) != PTO_OK) ||
        (rc = RESERVE(g->edges, g->edge_cap, 2 * ((uint64_t)g->edge_count + g->dep_count))) != PTO_OK ||
        ((flags & HBG_TASK_RECORD) && (rc = record_task(g, params, n, t, cls, view_base)) != PTO_OK))
        return rc;
    if (keep_views)
        g->view_count += n;

    for (uint32_t i = 0; i < g->dep_count; i++) {
        g->edges[2 * g->edge_count] = g->deps[i] | (i < dependencies ? 0 : HBG_EDGE_REUSE);
        g->edges[2 * g->edge_count + 1] = t;
        g->edge_count++;
        g->tasks[g->deps[i]].fanout_count++;
    }
    for (uint32_t i = 0; i < n; i++) {
        g->args[g->arg_count + i] = params[i].value;
        g->arg_sizes[g->arg_count + i] = params[i].direction == PTO_ARG_SCALAR ? 0 : params[i].bytes;
        g->arg_origins[g->arg_count + i] = g->origins != NULL ? g->origins[i] : PTO_PARAM_ORIGIN_FIXED;
    }
    if (g->origins == NULL)
        g->recordable = 0;
    g->tasks[t] = (PtoGraphTask){
        .kernel_addr = kernel_addr,
        .func_id = func_id,
        .core_type = core_type,
        .arg_index = g->arg_count,
        .arg_count = n,
        .fanout_count = 0,
        .fanin_count = g->dep_count,
        .view_index = keep_views ? view_base + 1 : 0,
    };
    g->arg_count += n;
    g->task_count++;
    return PTO_OK;
}

int hbg_graph_submit_after(HbgGraph *g, uint64_t kernel_addr, uint32_t func_id, uint32_t core_type,
                           const PtoTaskParam *params, uint32_t n, const HbgAfter *after)
{
    return add_task(g, kernel_addr, func_id, core_type, params, n, after, NULL, 0, HBG_TASK_INFER | HBG_TASK_RECORD);
}

int hbg_graph_submit_wired(HbgGraph *g, uint64_t kernel_addr, uint32_t func_id, uint32_t core_type,
                           const PtoTaskParam *params, uint32_t n, const uint64_t *preds, uint32_t n_preds,
                           uint32_t flags)
{
    return add_task(g, kernel_addr, func_id, core_type, params, n, NULL, preds, n_preds, flags);
}

int hbg_graph_submit(HbgGraph *g, uint64_t kernel_addr, uint32_t func_id, uint32_t core_type,
                     const PtoTaskParam *params, uint32_t n)
{
    return hbg_graph_submit_after(g, kernel_addr, func_id, core_type, params, n, NULL);
}

/* ---- scopes: MANUAL and reused bytes ---------------------------------------------- */

void hbg_graph_manual_begin(HbgGraph *g)
{
    g->manual = 1;
}

/* Appends every access of `from` to `to` (sorted) and empties `from`. */
static int join(HbgAccessList *to, HbgAccessList *from)
{
    int rc = RESERVE(to->items, to->cap, (uint64_t)to->count + from->count);
    for (uint32_t i = 0; i < from->count && rc == PTO_OK; i++)
        rc = record_access(to, from->items[i].lo, from->items[i].hi, from->items[i].task, from->items[i].view);
    from->count = 0;
    from->max_len = 0;
    return rc;
}

int hbg_graph_manual_end(HbgGraph *g)
{
    g->manual = 0;
    int rc = PTO_OK;
    for (uint32_t k = 0; k < g->class_count; k++) {
        HbgAliasClass *c = &g->classes[k];
        /* first the earlier accesses the scope's writes cover (each write was
           ordered after them), then the scope's own, none dropping another */
        for (uint32_t i = 0; i < c->manual_writers.count; i++) {
            const HbgAccess *a = &c->manual_writers.items[i];
            PtoTensorView v = access_view(g, a);
            drop_covered_by_write(g, c, a->lo, a->hi, &v, a->view == 0);
        }
        int w = join(&c->writers, &c->manual_writers), r = join(&c->readers, &c->manual_readers);
        if (rc == PTO_OK)
            rc = w != PTO_OK ? w : r;
    }
    return rc;
}

/* Moves the accesses of `from` overlapping [lo, hi) to `to`. */
static int move_overlapping(HbgAccessList *from, HbgAccessList *to, uint64_t lo, uint64_t hi)
{
    uint32_t begin = first_from(from, lo > from->max_len ? lo - from->max_len : 0), moving = 0, i;
    for (i = begin; i < from->count && from->items[i].lo < hi; i++)
        moving += from->items[i].hi > lo;
    int rc = RESERVE(to->items, to->cap, (uint64_t)to->count + moving);
    if (rc != PTO_OK || moving == 0)
        return rc;
    uint32_t out = begin;
    for (i = begin; i < from->count && from->items[i].lo < hi; i++) {
        HbgAccess a = from->items[i];
        if (a.hi > lo)
            record_access(to, a.lo, a.hi, a.task, a.view); /* reserved: cannot fail */
        else
            from->items[out++] = a;
    }
    memmove(&from->items[out], &from->items[i], (size_t)(from->count - i) * sizeof *from->items);
    from->count -= i - out;
    if (from->count == 0)
        from->max_len = 0;
    return PTO_OK;
}

int hbg_graph_reuse(HbgGraph *g, uint64_t lo, uint64_t hi)
{
    int32_t k = find_class(g, lo, hi);
    if (k < 0 || lo == hi)
        return PTO_OK;
    HbgAliasClass *c = &g->classes[k];
    int rc;
    if ((rc = move_overlapping(&c->writers, &c->freed_writers, lo, hi)) != PTO_OK ||
        (rc = move_overlapping(&c->manual_writers, &c->freed_writers, lo, hi)) != PTO_OK ||
        (rc = move_overlapping(&c->readers, &c->freed_readers, lo, hi)) != PTO_OK)
        return rc;
    return move_overlapping(&c->manual_readers, &c->freed_readers, lo, hi);
}

/* ---- the work image ---------------------------------------------------------------- */

typedef struct ImageLayout {
    size_t tasks, args, arg_sizes, views, fanout, arg_bases, total;
} ImageLayout;

static ImageLayout layout_of(const HbgGraph *g, int relocatable)
{
    ImageLayout l;
    l.tasks = ALIGN8(sizeof(PtoGraphHeader));
    l.args = l.tasks + (size_t)g->task_count * sizeof(PtoGraphTask);
    l.arg_sizes = l.args + (size_t)g->arg_count * sizeof(uint64_t);
    l.views = l.arg_sizes + (size_t)g->arg_count * sizeof(uint64_t);
    l.fanout = l.views + (size_t)g->view_count * sizeof(PtoTensorView);
    l.arg_bases = ALIGN8(l.fanout + (size_t)g->edge_count * sizeof(uint32_t));
    l.total = ALIGN8(l.arg_bases + (relocatable ? (size_t)g->arg_count * sizeof(uint32_t) : 0));
    return l;
}

size_t hbg_graph_image_bytes(const HbgGraph *g, const HbgBases *bases)
{
    return layout_of(g, bases != NULL).total;
}

/* The base an argument of this origin is relative to: 0 none, else 1 + its
   index in the base table (hbg_graph.h, HbgBases). */
static uint32_t base_of(uint32_t origin, uint32_t tensor_count)
{
    if (origin == PTO_PARAM_ORIGIN_FIXED)
        return 0;
    if (origin >= PTO_PARAM_ORIGIN_LOCAL(0)) /* hbg's local heap is laid out alike run after run */
        return 1;
    if (origin < PTO_PARAM_ORIGIN_SCALAR(0))
        return 2 + (origin - PTO_PARAM_ORIGIN_TENSOR(0));
    return (2 + tensor_count + (origin - PTO_PARAM_ORIGIN_SCALAR(0))) | PTO_GRAPH_BASE_SCALAR;
}

/* Makes a written image's arguments (and their kept views) relative to bases. */
static void relocate(const HbgGraph *g, uint8_t *dst, const ImageLayout *l, const HbgBases *bases)
{
    uint64_t *args = (uint64_t *)(dst + l->args);
    uint32_t *arg_bases = (uint32_t *)(dst + l->arg_bases);
    PtoTensorView *views = (PtoTensorView *)(dst + l->views);
    const PtoGraphTask *tasks = (const PtoGraphTask *)(dst + l->tasks);
    for (uint32_t a = 0; a < g->arg_count; a++) {
        uint32_t k = base_of(g->arg_origins[a], bases->tensor_count);
        arg_bases[a] = k;
        if (k != 0)
            args[a] -= bases->values[(k & ~PTO_GRAPH_BASE_SCALAR) - 1];
    }
    for (uint32_t t = 0; t < g->task_count; t++) {
        if (tasks[t].view_index == 0)
            continue;
        for (uint32_t i = 0; i < tasks[t].arg_count; i++) {
            uint32_t k = arg_bases[tasks[t].arg_index + i];
            if (k != 0 && !(k & PTO_GRAPH_BASE_SCALAR))
                views[tasks[t].view_index - 1 + i].addr -= bases->values[k - 1];
        }
    }
}

void hbg_graph_write_image(HbgGraph *g, uint8_t *dst, const HbgBases *bases)
{
    ImageLayout l = layout_of(g, bases != NULL);
    PtoGraphHeader h = {
        .magic = PTO_GRAPH_MAGIC,
        .task_count = g->task_count,
        .tasks_offset = l.tasks,
        .args_offset = l.args,
        .arg_sizes_offset = l.arg_sizes,
        .fanout_offset = l.fanout,
        .arg_total = g->arg_count,
        .fanout_total = g->edge_count,
        .views_offset = l.views,
        .view_total = g->view_count,
        .base_count = bases != NULL ? bases->count : 0,
        .arg_bases_offset = bases != NULL ? l.arg_bases : 0,
    };
    memset(dst, 0, l.tasks);
    memcpy(dst, &h, sizeof h);
    /* fan-out lists: each producer's consumers, contiguous and ascending */
    PtoGraphTask *tasks = (PtoGraphTask *)(dst + l.tasks);
    uint32_t next = 0;
    for (uint32_t t = 0; t < g->task_count; t++) {
        tasks[t] = g->tasks[t];
        tasks[t].fanout_index = next;
        next += g->tasks[t].fanout_count;
        g->fill[t] = 0;
    }
    uint32_t *fanout = (uint32_t *)(dst + l.fanout);
    for (uint32_t e = 0; e < g->edge_count; e++) {
        uint32_t p = g->edges[2 * e] & ~HBG_EDGE_REUSE, c = g->edges[2 * e + 1];
        fanout[tasks[p].fanout_index + g->fill[p]++] = c;
    }
    if (g->arg_count > 0) {
        memcpy(dst + l.args, g->args, (size_t)g->arg_count * sizeof(uint64_t));
        memcpy(dst + l.arg_sizes, g->arg_sizes, (size_t)g->arg_count * sizeof(uint64_t));
    }
    if (g->view_count > 0)
        memcpy(dst + l.views, g->views, (size_t)g->view_count * sizeof(PtoTensorView));
    size_t end = l.fanout + (size_t)g->edge_count * sizeof(uint32_t);
    memset(dst + end, 0, l.total - end);
    if (bases != NULL)
        relocate(g, dst, &l, bases);
}

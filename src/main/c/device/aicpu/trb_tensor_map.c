#include "device/aicpu/trb_tensor_map.h"

#include <stddef.h>
#include "util/sorted_search.h"
#include "util/tensor_view.h"

void trb_map_reset(TrbTensorMap *m, PtoTrbAccess *pool, uint32_t capacity, PtoTensorView *views,
                   uint32_t view_capacity)
{
    m->pool = pool;
    m->capacity = capacity;
    m->fresh = 0;
    m->free_head = 0;
    m->used = 0;
    m->views = views;
    m->view_capacity = view_capacity;
    m->view_fresh = 0;
    m->view_free_head = 0;
    m->views_used = 0;
    m->class_count = 0;
}

/* ---- classes ------------------------------------------------------------------ */

void trb_map_add_range(TrbTensorMap *m, uint64_t lo, uint64_t hi)
{
    if (m->class_count < TRB_MAX_CLASSES && lo < hi)
        m->classes[m->class_count++] = (TrbClass){ .lo = lo, .hi = hi };
}

void trb_map_seal(TrbTensorMap *m)
{
    /* insertion sort by lo: a few hundred ranges at most */
    for (uint32_t i = 1; i < m->class_count; i++) {
        TrbClass c = m->classes[i];
        uint32_t j = i;
        for (; j > 0 && m->classes[j - 1].lo > c.lo; j--)
            m->classes[j] = m->classes[j - 1];
        m->classes[j] = c;
    }
    uint32_t out = 0;
    for (uint32_t i = 0; i < m->class_count; i++) {
        if (out > 0 && m->classes[i].lo < m->classes[out - 1].hi) {
            if (m->classes[i].hi > m->classes[out - 1].hi)
                m->classes[out - 1].hi = m->classes[i].hi;
            continue;
        }
        m->classes[out++] = m->classes[i];
    }
    m->class_count = out;
}

int32_t trb_map_class(const TrbTensorMap *m, uint64_t lo, uint64_t hi)
{
    uint32_t a = PTO_SORTED_FIRST(m->classes, m->class_count, lo, lo, 1);
    if (a == 0)
        return -1;
    return hi <= m->classes[a - 1].hi ? (int32_t)(a - 1) : -1;
}

/* ---- entries -------------------------------------------------------------------- */

static PtoTrbAccess *entry(const TrbTensorMap *m, uint32_t ref)
{
    return &m->pool[ref - 1];
}

static uint32_t take_entry(TrbTensorMap *m)
{
    uint32_t ref;
    if (m->free_head != 0) {
        ref = m->free_head;
        m->free_head = entry(m, ref)->next;
    } else {
        ref = ++m->fresh;
    }
    m->used++;
    return ref;
}

static uint32_t take_view(TrbTensorMap *m, const PtoTensorView *v)
{
    uint32_t ref;
    if (m->view_free_head != 0) {
        ref = m->view_free_head;
        m->view_free_head = (uint32_t)m->views[ref - 1].addr;
    } else {
        ref = ++m->view_fresh;
    }
    m->views_used++;
    m->views[ref - 1] = *v;
    return ref;
}

static void give_entry(TrbTensorMap *m, uint32_t ref)
{
    PtoTrbAccess *a = entry(m, ref);
    if (a->view != 0) {
        m->views[a->view - 1].addr = m->view_free_head;
        m->view_free_head = a->view;
        m->views_used--;
        a->view = 0;
    }
    a->next = m->free_head;
    m->free_head = ref;
    m->used--;
}

static int overlaps(const PtoTrbAccess *a, uint64_t lo, uint64_t hi)
{
    return a->lo < hi && lo < a->hi;
}

/* An entry's view (its flat view when it kept none). */
static PtoTensorView access_view(const TrbTensorMap *m, const PtoTrbAccess *a)
{
    return a->view != 0 ? m->views[a->view - 1] : tensor_view_flat(a->lo, a->hi - a->lo);
}

/* Whether an entry whose span overlaps [lo, hi) shares a byte with the view
   spanning it (NULL: flat): only strided views can miss. */
static int shares_a_byte(const TrbTensorMap *m, const PtoTrbAccess *a, uint64_t lo, uint64_t hi,
                         const PtoTensorView *view)
{
    if (view == NULL && a->view == 0)
        return 1;
    PtoTensorView av = access_view(m, a), flat;
    if (view == NULL) {
        flat = tensor_view_flat(lo, hi - lo);
        view = &flat;
    }
    return tensor_view_conflict(&av, view);
}

static int visit_list(const TrbTensorMap *m, uint32_t head, uint64_t lo, uint64_t hi, const PtoTensorView *view,
                      TrbAccessVisit visit, void *ctx)
{
    for (uint32_t ref = head; ref != 0;) {
        const PtoTrbAccess *a = entry(m, ref);
        if (overlaps(a, lo, hi) && shares_a_byte(m, a, lo, hi, view)) {
            int rc = visit(ctx, a);
            if (rc != 0)
                return rc;
        }
        ref = a->next;
    }
    return 0;
}

/* The writers a view conflicts with, and the readers too when it writes. */
static int visit_conflicts(const TrbTensorMap *m, uint32_t writers, uint32_t readers, uint64_t lo, uint64_t hi,
                           const PtoTensorView *view, int writes, TrbAccessVisit visit, void *ctx)
{
    int rc = visit_list(m, writers, lo, hi, view, visit, ctx);
    if (rc == 0 && writes)
        rc = visit_list(m, readers, lo, hi, view, visit, ctx);
    return rc;
}

int trb_map_conflicts(const TrbTensorMap *m, int32_t cls, uint64_t lo, uint64_t hi, const PtoTensorView *view,
                      int writes, TrbAccessVisit visit, void *ctx)
{
    const TrbClass *c = &m->classes[cls];
    return visit_conflicts(m, c->writers, c->readers, lo, hi, view, writes, visit, ctx);
}

int trb_map_overlaps(const TrbTensorMap *m, int32_t cls, uint64_t lo, uint64_t hi, int writes, TrbAccessVisit visit,
                     void *ctx)
{
    return trb_map_conflicts(m, cls, lo, hi, NULL, writes, visit, ctx);
}

/* Unlinks and frees the entries of a list for which drop(a) holds. */
typedef int (*DropTest)(const TrbTensorMap *m, const PtoTrbAccess *a, const void *arg, TrbAccessDone done, void *ctx);

static uint32_t drop_from(TrbTensorMap *m, uint32_t *head, DropTest drop, const void *arg, TrbAccessDone done,
                          void *ctx)
{
    uint32_t dropped = 0;
    uint32_t *link = head;
    while (*link != 0) {
        uint32_t ref = *link;
        PtoTrbAccess *a = entry(m, ref);
        if (drop(m, a, arg, done, ctx)) {
            *link = a->next;
            give_entry(m, ref);
            dropped++;
        } else {
            link = &a->next;
        }
    }
    return dropped;
}

typedef struct Range {
    uint64_t lo, hi;
    const PtoTensorView *view; /* NULL: the flat [lo, hi) */
} Range;

/* Whether the write r holds every byte of the entry: its span first, then,
   for a strided write, its bytes. */
static int covered_by(const TrbTensorMap *m, const PtoTrbAccess *a, const void *arg, TrbAccessDone done, void *ctx)
{
    (void)done, (void)ctx;
    const Range *r = arg;
    if (a->lo < r->lo || a->hi > r->hi)
        return 0;
    if (r->view == NULL)
        return 1;
    PtoTensorView av = access_view(m, a);
    return tensor_view_covers(r->view, &av);
}

static int overlapping(const TrbTensorMap *m, const PtoTrbAccess *a, const void *arg, TrbAccessDone done, void *ctx)
{
    (void)m, (void)done, (void)ctx;
    const Range *r = arg;
    return overlaps(a, r->lo, r->hi);
}

static int finished(const TrbTensorMap *m, const PtoTrbAccess *a, const void *arg, TrbAccessDone done, void *ctx)
{
    (void)m, (void)arg;
    return done(ctx, a);
}

void trb_map_record(TrbTensorMap *m, int32_t cls, uint64_t lo, uint64_t hi, const PtoTensorView *view, int writes,
                    uint64_t task_id, uint64_t task)
{
    TrbClass *c = &m->classes[cls];
    if (writes) {
        Range r = { lo, hi, view };
        drop_from(m, &c->writers, covered_by, &r, NULL, NULL);
        drop_from(m, &c->readers, covered_by, &r, NULL, NULL);
    }
    uint32_t ref = take_entry(m);
    uint32_t *head = writes ? &c->writers : &c->readers;
    *entry(m, ref) = (PtoTrbAccess){ .lo = lo, .hi = hi, .task_id = task_id, .task = task, .next = *head,
                                     .view = view != NULL ? take_view(m, view) : 0 };
    *head = ref;
}

/* ---- MANUAL scopes -------------------------------------------------------------- */

void trb_map_record_manual(TrbTensorMap *m, int32_t cls, uint64_t lo, uint64_t hi, const PtoTensorView *view,
                           int writes, uint64_t task_id, uint64_t task)
{
    TrbClass *c = &m->classes[cls];
    uint32_t ref = take_entry(m);
    uint32_t *head = writes ? &c->manual_writers : &c->manual_readers;
    *entry(m, ref) = (PtoTrbAccess){ .lo = lo, .hi = hi, .task_id = task_id, .task = task, .next = *head,
                                     .view = view != NULL ? take_view(m, view) : 0 };
    *head = ref;
}

/* Moves a whole list in front of another (order within a list means nothing). */
static void splice(TrbTensorMap *m, uint32_t *to, uint32_t *from)
{
    if (*from == 0)
        return;
    uint32_t last = *from;
    while (entry(m, last)->next != 0)
        last = entry(m, last)->next;
    entry(m, last)->next = *to;
    *to = *from;
    *from = 0;
}

void trb_map_commit_manual(TrbTensorMap *m)
{
    for (uint32_t i = 0; i < m->class_count; i++) {
        TrbClass *c = &m->classes[i];
        for (uint32_t ref = c->manual_writers; ref != 0; ref = entry(m, ref)->next) {
            const PtoTrbAccess *a = entry(m, ref);
            PtoTensorView v = access_view(m, a);
            Range r = { a->lo, a->hi, a->view != 0 ? &v : NULL };
            drop_from(m, &c->writers, covered_by, &r, NULL, NULL);
            drop_from(m, &c->readers, covered_by, &r, NULL, NULL);
        }
        splice(m, &c->writers, &c->manual_writers);
        splice(m, &c->readers, &c->manual_readers);
    }
}

int trb_map_manual_conflicts(const TrbTensorMap *m, int32_t cls, uint64_t lo, uint64_t hi, const PtoTensorView *view,
                             int writes, TrbAccessVisit visit, void *ctx)
{
    const TrbClass *c = &m->classes[cls];
    return visit_conflicts(m, c->manual_writers, c->manual_readers, lo, hi, view, writes, visit, ctx);
}

/* ---- forgetting ------------------------------------------------------------------- */

uint32_t trb_map_reclaim(TrbTensorMap *m, TrbAccessDone done, void *ctx)
{
    uint32_t dropped = 0;
    for (uint32_t i = 0; i < m->class_count; i++) {
        TrbClass *c = &m->classes[i];
        uint32_t *lists[] = { &c->writers, &c->readers, &c->manual_writers, &c->manual_readers };
        for (int l = 0; l < 4; l++)
            dropped += drop_from(m, lists[l], finished, NULL, done, ctx);
    }
    return dropped;
}

void trb_map_purge(TrbTensorMap *m, int32_t cls, uint64_t lo, uint64_t hi)
{
    Range r = { lo, hi, NULL };
    TrbClass *c = &m->classes[cls];
    uint32_t *lists[] = { &c->writers, &c->readers, &c->manual_writers, &c->manual_readers };
    for (int l = 0; l < 4; l++)
        drop_from(m, lists[l], overlapping, &r, NULL, NULL);
}

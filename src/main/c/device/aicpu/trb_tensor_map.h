/*
 * The trb tensor map: views of the run's memory -> the tasks that last wrote
 * them and read them since, from which a submitted task's producers are
 * inferred (docs/orchestration.md, docs/device.md "Dependency rule"): a task
 * depends on every earlier task whose view shares a byte with one of its own
 * where at least one of the two writes; an access that a later write covers
 * completely (every byte) is dropped. The views' byte spans find the
 * candidates, util/tensor_view.h decides for strided views. The rule and its
 * bookkeeping are exactly hbg's (runtime/hbg/hbg_graph.h), so both runtimes
 * infer the same graph. A flat access is its span alone; a strided one keeps
 * its view in a second pool (view records, fewer than entries).
 *
 * Ranges are compared only within a *class*: a maximal set of the run's memory
 * ranges (argument tensors, ring heaps) that overlap each other, so views of
 * unrelated buffers are never compared. Each class keeps a list of writer and
 * of reader accesses; entries come from a fixed pool in the runtime image.
 *
 * Owned by the orchestrator thread alone: no locking. Whether an entry's task
 * has finished is asked of the caller (TrbAccessDone), which reads task state
 * the schedulers publish.
 */
#ifndef PTORUN_TRB_TENSOR_MAP_H
#define PTORUN_TRB_TENSOR_MAP_H

#include <stdint.h>

#include "device/pto_trb_abi.h"

#define TRB_MAX_CLASSES (PTO_MAX_TENSOR_ARGS + PTO_TRB_RINGS)

typedef struct TrbClass {
    uint64_t lo, hi;          /* union of its ranges */
    uint32_t writers, readers;/* list heads: entry index + 1, 0 = empty */
    /* the accesses of the open MANUAL scope's tasks, apart until it ends
       (trb_map_commit_manual): no task of that scope infers a dependency on another */
    uint32_t manual_writers, manual_readers;
} TrbClass;

typedef struct TrbTensorMap {
    PtoTrbAccess *pool;
    uint32_t capacity;
    uint32_t fresh;           /* entries never used since the reset */
    uint32_t free_head;       /* freed entries (index + 1), 0 = none */
    uint32_t used;
    PtoTensorView *views;     /* strided views of entries; a free record's addr links the free list */
    uint32_t view_capacity, view_fresh, view_free_head, views_used;
    TrbClass classes[TRB_MAX_CLASSES];
    uint32_t class_count;
} TrbTensorMap;

typedef int (*TrbAccessDone)(void *ctx, const PtoTrbAccess *a);
/* Called for each overlapping access; a non-zero return stops the walk and is returned. */
typedef int (*TrbAccessVisit)(void *ctx, const PtoTrbAccess *a);

/* Empties the map over `capacity` entries of `pool` and `view_capacity` view
   records of `views`. */
void trb_map_reset(TrbTensorMap *m, PtoTrbAccess *pool, uint32_t capacity, PtoTensorView *views,
                   uint32_t view_capacity);

/* Adds a memory range of the run (at most TRB_MAX_CLASSES, non-empty), then
   forms the classes once with trb_map_seal. */
void trb_map_add_range(TrbTensorMap *m, uint64_t lo, uint64_t hi);
void trb_map_seal(TrbTensorMap *m);

/* The class holding all of [lo, hi), or -1. */
int32_t trb_map_class(const TrbTensorMap *m, uint64_t lo, uint64_t hi);

static inline uint32_t trb_map_room(const TrbTensorMap *m)
{
    return m->capacity - m->used;
}

static inline uint32_t trb_map_view_room(const TrbTensorMap *m)
{
    return m->view_capacity - m->views_used;
}

/* Visits the class's writers sharing a byte with the view spanning [lo, hi)
   (view NULL: the flat [lo, hi)), and its readers too when the access writes. */
int trb_map_conflicts(const TrbTensorMap *m, int32_t cls, uint64_t lo, uint64_t hi, const PtoTensorView *view,
                      int writes, TrbAccessVisit visit, void *ctx);

/* trb_map_conflicts of the flat [lo, hi). */
int trb_map_overlaps(const TrbTensorMap *m, int32_t cls, uint64_t lo, uint64_t hi, int writes, TrbAccessVisit visit,
                     void *ctx);

/* Records an access to the view spanning [lo, hi) (view NULL: flat; needs
   trb_map_room >= 1, and trb_map_view_room >= 1 for a strided view): a read
   joins the readers; a write drops the writers and readers it covers and joins
   the writers. */
void trb_map_record(TrbTensorMap *m, int32_t cls, uint64_t lo, uint64_t hi, const PtoTensorView *view, int writes,
                    uint64_t task_id, uint64_t task);

/* Records an access of a task of the open MANUAL scope: it joins that scope's
   lists, dropping nothing (the scope's tasks are not ordered by inference). */
void trb_map_record_manual(TrbTensorMap *m, int32_t cls, uint64_t lo, uint64_t hi, const PtoTensorView *view,
                           int writes, uint64_t task_id, uint64_t task);

/* The outermost MANUAL scope ended: each of its writes drops the earlier
   accesses it covers (the writer depends on them), then its accesses join the
   class lists, none dropping another. Exactly hbg_graph_manual_end. */
void trb_map_commit_manual(TrbTensorMap *m);

/* trb_map_conflicts over the open MANUAL scope's accesses. */
int trb_map_manual_conflicts(const TrbTensorMap *m, int32_t cls, uint64_t lo, uint64_t hi, const PtoTensorView *view,
                             int writes, TrbAccessVisit visit, void *ctx);

/* Drops every entry whose task is done; returns how many. */
uint32_t trb_map_reclaim(TrbTensorMap *m, TrbAccessDone done, void *ctx);

/* Drops every entry of the class overlapping [lo, hi) (memory handed out anew). */
void trb_map_purge(TrbTensorMap *m, int32_t cls, uint64_t lo, uint64_t hi);

#endif

/*
 * The hbg task graph as the host builds it during bind: tasks in submission
 * order, their kernel arguments, and the dependencies between them, then
 * written out as the device's graph work image (device/pto_device_abi.h).
 *
 * Dependencies (docs/orchestration.md): a task depends on every earlier task
 * whose tensor view shares a byte with one of its own where at least one of
 * the two writes (RAW, WAR, WAW). The views' byte spans find the candidates;
 * util/tensor_view.h decides whether a candidate whose view or the task's is
 * strided really shares a byte. Spans are compared only within an alias
 * class: a maximal set of run tensors whose device ranges overlap, so views of
 * unrelated buffers are never compared. A recorded access that a later write
 * covers completely (every byte of it) is dropped: every later conflict with
 * it is also a conflict with that write, which is ordered after it, so the
 * order stays exact while the lists stay short.
 *
 * Everything is grow-only and reused run after run: no allocation per run once
 * its slot scratch has seen its largest run.
 */
#ifndef PTORUN_HBG_GRAPH_H
#define PTORUN_HBG_GRAPH_H

#include <stddef.h>
#include <stdint.h>

#include "device/pto_device_abi.h"
#include "ptorun/pto_orchestration.h"

#define HBG_MAX_TASKS (1u << 22)

typedef struct HbgAccess {
    uint64_t lo, hi;          /* [lo, hi) device bytes: the view's span */
    uint32_t task;
    uint32_t view;            /* 0: the flat view [lo, hi); else 1 + its index in HbgGraph.views */
} HbgAccess;

/* Sorted by lo; max_len bounds hi - lo over the items, so the items that can
 * overlap [lo, hi) all start in [lo - max_len, hi): a binary search finds them
 * without scanning the list (tiles of one tensor: O(log n) per access). */
typedef struct HbgAccessList {
    HbgAccess *items;
    uint32_t count, cap;
    uint64_t max_len;
} HbgAccessList;

typedef struct HbgAliasClass {
    uint64_t lo, hi;          /* union of its tensors' device ranges */
    HbgAccessList writers, readers;
    /* The accesses of the open MANUAL scope's tasks: kept apart, so no task of
       that scope infers a dependency on another; joined to writers/readers when
       the scope ends (hbg_graph_manual_end). */
    HbgAccessList manual_writers, manual_readers;
    /* The accesses of local heap bytes that alloc_tensor handed out again
       (hbg_graph_reuse): a later task touching those bytes is ordered after
       them for execution only: the new tensor is not the old one, so these
       orderings are no dependencies (no edge of the dependency-graph file). */
    HbgAccessList freed_writers, freed_readers;
} HbgAliasClass;

typedef struct HbgGraph {
    PtoGraphTask *tasks;
    uint32_t task_count, task_cap;
    uint64_t *args, *arg_sizes;
    uint32_t *arg_origins;    /* per argument its PTO_PARAM_ORIGIN_* (valid while `origins` was set) */
    uint32_t arg_count, arg_cap;
    PtoTensorView *views;     /* the kernel views of the tasks that keep theirs (PtoGraphTask.view_index) */
    uint32_t view_count, view_cap;
    uint32_t *edges;          /* (producer, consumer) pairs, consumers ascending */
    uint32_t edge_count, edge_cap;
    uint32_t *dep_mark;       /* per task: 1 + the last consumer that recorded it */
    uint32_t *fill;           /* per task: scratch for writing fan-out lists */
    uint32_t *deps;           /* the producers of the task being submitted */
    uint32_t dep_count, dep_cap;
    HbgAliasClass *classes;   /* ascending lo, disjoint */
    uint32_t class_count, class_cap;
    int manual;               /* a MANUAL scope is open: tasks record into the manual lists */
    /* Set by the orchestration (NULL after a reset): the origins of the params of
       the next submit (orch/program_orchestration.h), kept in arg_origins, so the
       graph can be recorded relocatably (hbg_recording.h). A submit without them
       makes the graph unrecordable. */
    const uint32_t *origins;
    int recordable;           /* every submit so far had origins (set to 1 with origins) */
} HbgGraph;

/* An edge whose producer carries this bit orders a reuse of freed local heap
   bytes (HbgAliasClass.freed_*): in the device image, not in the dependency graph. */
#define HBG_EDGE_REUSE 0x80000000u

/* The explicit predecessors of a submit_after: ordinals of the tasks of the
   innermost (MANUAL) scope, whose first task is `base`. */
typedef struct HbgAfter {
    uint32_t base;
    const uint32_t *ordinals;
    uint32_t count;
} HbgAfter;

void hbg_graph_init(HbgGraph *g);
void hbg_graph_destroy(HbgGraph *g);

/* Empties the graph and its classes for a new run (keeps the memory). */
void hbg_graph_reset(HbgGraph *g);

/* Adds the device ranges of the run's tensors, then forms the alias classes.
 * Call hbg_graph_add_range for every tensor with bytes, then
 * hbg_graph_seal_classes once. */
int hbg_graph_add_range(HbgGraph *g, uint64_t lo, uint64_t hi);
void hbg_graph_seal_classes(HbgGraph *g);

/* Appends a task running kernel_addr with these parameters (tensor views by
 * device address, scalars by value) and computes its dependencies. A view
 * outside every run tensor: PTO_ERR_ORCHESTRATION; too many tasks:
 * PTO_ERR_CAPACITY; PTO_ERR_OUT_OF_MEMORY (message recorded). */
int hbg_graph_submit(HbgGraph *g, uint64_t kernel_addr, uint32_t func_id, uint32_t core_type,
                     const PtoTaskParam *params, uint32_t n);

/* hbg_graph_submit with explicit predecessors (NULL: none): each ordinal must
 * name an earlier task of the scope, once (PTO_ERR_INVALID_ARGUMENT). */
int hbg_graph_submit_after(HbgGraph *g, uint64_t kernel_addr, uint32_t func_id, uint32_t core_type,
                           const PtoTaskParam *params, uint32_t n, const HbgAfter *after);

/* A sub-graph invocation's task (orch/subgraph.h): its producers `preds`,
 * earlier task indices, each once; its dependencies inferred from its views
 * when flags has HBG_TASK_INFER, its accesses recorded for later tasks' when it
 * has HBG_TASK_RECORD (the values of SUBGRAPH_TASK_*). A task with neither
 * touches no alias class: its views must lie inside run tensors already
 * (a sub-graph's lie inside its boundary or its own block). */
#define HBG_TASK_INFER 1u
#define HBG_TASK_RECORD 2u
int hbg_graph_submit_wired(HbgGraph *g, uint64_t kernel_addr, uint32_t func_id, uint32_t core_type,
                           const PtoTaskParam *params, uint32_t n, const uint64_t *preds, uint32_t n_preds,
                           uint32_t flags);

/* The outermost MANUAL scope opens: the tasks submitted until it ends infer no
 * dependency on each other (only on earlier tasks). Its end records their
 * accesses for the tasks after it: a write of the scope drops the earlier
 * accesses it covers (the writer depends on them), but no access of the
 * scope drops another (they are not ordered). PTO_ERR_OUT_OF_MEMORY. */
void hbg_graph_manual_begin(HbgGraph *g);
int hbg_graph_manual_end(HbgGraph *g);

/* alloc_tensor hands [lo, hi) out again: the recorded accesses of those
 * bytes become reuse orderings (HbgAliasClass.freed_*). PTO_ERR_OUT_OF_MEMORY. */
int hbg_graph_reuse(HbgGraph *g, uint64_t lo, uint64_t hi);

/* A run's base table (PtoAicpuArgs.bases_dev): values[0] the local heap's base,
 * values[1 + i] argument tensor i's device address, values[1 + tensor_count + j]
 * argument scalar j. */
typedef struct HbgBases {
    const uint64_t *values;
    uint32_t count;           /* 1 + tensor_count + the scalar count */
    uint32_t tensor_count;
} HbgBases;

/* Bytes of the graph work image, and writing it (8-aligned dst). With bases
 * (the graph must be recordable): a relocatable image, every argument of a
 * tensor, local or scalar origin relative to its base (pto_device_abi.h,
 * PtoGraphHeader.arg_bases_offset), so the image serves any run of the same
 * geometry given that run's base table. NULL: every argument absolute. */
size_t hbg_graph_image_bytes(const HbgGraph *g, const HbgBases *bases);
void hbg_graph_write_image(HbgGraph *g, uint8_t *dst, const HbgBases *bases);

#endif

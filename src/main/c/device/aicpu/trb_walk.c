/* A trb run walking its recorded graph (trb_walk.h). */
#include "device/aicpu/trb_walk.h"

#include <string.h>

#include "util/last_error.h"
#include "orch/program_orchestration.h"
#include "ptorun/pto_runtime_c_api.h"

_Static_assert(PTO_TRB_WALK_BASE_LOCALS == PTO_PARAM_ORIGIN_LOCAL(0), "the walk's bases follow the param origins");

/* The base table: each argument at its origin, the locals' block last. */
static void write_bases(TrbRun *t)
{
    const ChipStorageTaskArgs *a = t->args;
    memset(t->walk_bases, 0, sizeof t->walk_bases);
    for (int32_t i = 0; i < a->tensor_count; i++)
        t->walk_bases[PTO_PARAM_ORIGIN_TENSOR(i) - 1] = a->tensors[i].addr;
    for (int32_t j = 0; j < a->scalar_count; j++)
        t->walk_bases[PTO_PARAM_ORIGIN_SCALAR(j) - 1] = a->scalars[j];
    t->walk_bases[PTO_TRB_WALK_BASE_LOCALS - 1] = t->image->heap_dev;
}

/* The dependency-graph file's tasks and edges, from the graph the run walks. */
static int fill_dep_graph(TrbRun *t)
{
    PtoTrbDepGraph *g = t->graph;
    const GraphRun *w = &t->walk;
    uint64_t edges = 0;
    for (uint32_t i = 0; i < w->task_count; i++)
        edges += w->tasks[i].fanout_count;
    if (w->task_count > g->task_capacity || edges > g->edge_capacity)
        return pto_fail(PTO_ERR_CAPACITY, "the recorded graph's %u tasks and %llu edges: the dependency graph holds "
                        "at most %llu tasks and %llu edges",
                        w->task_count, (unsigned long long)edges, (unsigned long long)g->task_capacity,
                        (unsigned long long)g->edge_capacity);
    uint64_t e = 0;
    for (uint32_t i = 0; i < w->task_count; i++) {
        const PtoGraphTask *task = &w->tasks[i];
        t->graph_func_ids[i] = task->func_id;
        for (uint32_t k = 0; k < task->fanout_count; k++, e++) {
            t->graph_edges[2 * e] = i;
            t->graph_edges[2 * e + 1] = w->fanout[task->fanout_index + k];
        }
    }
    g->task_count = w->task_count;
    g->edge_count = edges;
    return PTO_OK;
}

int trb_walk_bind(TrbRun *t)
{
    const PtoTrbWork *w = t->work;
    if (w->walk_locals_bytes > t->image->heap_bytes)
        return pto_fail(PTO_ERR_DEVICE, "the recorded graph's locals take %llu bytes, the GM heap has %llu",
                        (unsigned long long)w->walk_locals_bytes, (unsigned long long)t->image->heap_bytes);
    write_bases(t);
    if (w->walk_dev == 0 || w->walk_dev % 8 != 0 ||
        !graph_run_bind(&t->walk, (const PtoGraphHeader *)(uintptr_t)w->walk_dev, w->walk_bytes,
                        (uint32_t *)(uintptr_t)w->walk_state_dev, w->walk_state_bytes, t->walk_bases,
                        PTO_TRB_WALK_BASES))
        return pto_fail(PTO_ERR_DEVICE, "the recorded graph's compiled image is malformed");
    return t->graph != NULL ? fill_dep_graph(t) : PTO_OK;
}

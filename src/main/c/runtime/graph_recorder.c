#include "runtime/graph_recorder.h"

#include <pthread.h>
#include <stdlib.h>

#include "util/last_error.h"

struct GraphRecorder {
    pthread_mutex_t lock;     /* guards current and its holders */
    GraphRecording *current;
};

GraphRecorder *graph_recorder_create(void)
{
    GraphRecorder *r = calloc(1, sizeof *r);
    if (r == NULL) {
        pto_fail(PTO_ERR_OUT_OF_MEMORY, "register_callable: out of host memory for the graph recorder");
        return NULL;
    }
    pthread_mutex_init(&r->lock, NULL);
    return r;
}

void graph_recorder_destroy(GraphRecorder *r, const HostApi *api)
{
    if (r == NULL)
        return;
    if (r->current != NULL)
        r->current->destroy(r->current, api);
    pthread_mutex_destroy(&r->lock);
    free(r);
}

/* ---- geometry ------------------------------------------------------------------- */

static int child_overlap(const RunTensor *a, const RunTensor *b)
{
    return !a->staged && !b->staged && a->size > 0 && b->size > 0 && a->dev < b->dev + b->size &&
           b->dev < a->dev + a->size;
}

/* Steps (*i, *j) to the next overlapping pair of child-memory tensors, i < j,
   in one fixed order; start from (0, 0). 0 when there is none. */
static int next_overlap(const RunTensorTable *t, uint32_t *i, uint32_t *j)
{
    for (;;) {
        if (++*j >= t->count) {
            if (++*i >= t->count)
                return 0;
            *j = *i;
            continue;
        }
        if (child_overlap(&t->entries[*i], &t->entries[*j]))
            return 1;
    }
}

static int same_geometry(const GraphRecording *r, const RunTensorTable *t, uint32_t scalar_count)
{
    if (r->tensor_count != t->count || r->scalar_count != scalar_count)
        return 0;
    for (uint32_t i = 0; i < t->count; i++)
        if (r->sizes[i] != t->entries[i].size || r->staged[i] != t->entries[i].staged)
            return 0;
    uint32_t k = 0, i = 0, j = 0;
    for (; next_overlap(t, &i, &j); k++)
        if (k == r->overlap_count || r->overlaps[k].i != i || r->overlaps[k].j != j ||
            r->overlaps[k].delta != t->entries[j].dev - t->entries[i].dev)
            return 0;
    return k == r->overlap_count;
}

int graph_recording_keep_geometry(GraphRecording *r, const RunTensorTable *t, uint32_t scalar_count)
{
    r->tensor_count = t->count;
    r->scalar_count = scalar_count;
    uint32_t overlaps = 0, i = 0, j = 0;
    while (next_overlap(t, &i, &j))
        overlaps++;
    r->sizes = malloc((size_t)t->count * (sizeof *r->sizes + 1) + 1);
    r->overlaps = overlaps > 0 ? malloc((size_t)overlaps * sizeof *r->overlaps) : NULL;
    if (r->sizes == NULL || (overlaps > 0 && r->overlaps == NULL))
        return PTO_ERR_OUT_OF_MEMORY;
    r->staged = (uint8_t *)(r->sizes + t->count);
    for (uint32_t k = 0; k < t->count; k++) {
        r->sizes[k] = t->entries[k].size;
        r->staged[k] = t->entries[k].staged;
    }
    for (i = 0, j = 0; next_overlap(t, &i, &j);)
        r->overlaps[r->overlap_count++] = (GeometryOverlap){ i, j, t->entries[j].dev - t->entries[i].dev };
    return PTO_OK;
}

void graph_recording_forget_geometry(GraphRecording *r)
{
    free(r->sizes);
    free(r->overlaps);
    r->sizes = NULL;
    r->overlaps = NULL;
}

/* ---- taking and publishing ---------------------------------------------------------- */

GraphRecording *graph_recorder_take(GraphRecorder *r, const RunTensorTable *t, uint32_t scalar_count)
{
    pthread_mutex_lock(&r->lock);
    GraphRecording *rec = r->current;
    if (rec != NULL && same_geometry(rec, t, scalar_count))
        rec->holders++;
    else
        rec = NULL;
    pthread_mutex_unlock(&r->lock);
    return rec;
}

int graph_recorder_publish(GraphRecorder *r, GraphRecording *made, const HostApi *api)
{
    pthread_mutex_lock(&r->lock);
    GraphRecording *old = r->current;
    if (old != NULL && old->holders > 0) {
        pthread_mutex_unlock(&r->lock);
        return 0;
    }
    r->current = made;
    made->holders = 1;
    pthread_mutex_unlock(&r->lock);
    if (old != NULL)
        old->destroy(old, api);
    return 1;
}

void graph_recorder_give_back(GraphRecorder *r, GraphRecording *rec)
{
    pthread_mutex_lock(&r->lock);
    rec->holders--;
    pthread_mutex_unlock(&r->lock);
}

const GraphRecording *graph_recorder_peek(GraphRecorder *r)
{
    pthread_mutex_lock(&r->lock);
    const GraphRecording *rec = r->current;
    pthread_mutex_unlock(&r->lock);
    return rec;
}

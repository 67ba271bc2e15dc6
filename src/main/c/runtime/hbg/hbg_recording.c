#include "runtime/hbg/hbg_recording.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "services/device_failure.h"
#include "util/last_error.h"

/* Two child-memory tensors sharing bytes: j starts `delta` bytes after i. */
typedef struct Overlap {
    uint32_t i, j;
    uint64_t delta;
} Overlap;

/* A recording with its geometry and its holders. */
typedef struct Recorded {
    HbgRecording rec;         /* first: what a run sees */
    uint32_t holders;         /* runs bound to it (under the recorder's lock) */
    uint32_t tensor_count, scalar_count;
    uint64_t *sizes;          /* [tensor_count] */
    uint8_t *staged;          /* [tensor_count] */
    Overlap *overlaps;
    uint32_t overlap_count;
} Recorded;

struct HbgRecorder {
    pthread_mutex_t lock;     /* guards current and its holders */
    Recorded *current;
};

HbgRecorder *hbg_recorder_create(void)
{
    HbgRecorder *r = calloc(1, sizeof *r);
    if (r == NULL) {
        pto_fail(PTO_ERR_OUT_OF_MEMORY, "register_callable: out of host memory for the graph recorder");
        return NULL;
    }
    pthread_mutex_init(&r->lock, NULL);
    return r;
}

static void recorded_free(Recorded *n, const HostApi *api)
{
    if (n == NULL)
        return;
    if (n->rec.image_dev != 0)
        host_api_device_free(api, (void *)(uintptr_t)n->rec.image_dev);
    free(n->rec.func_ids);
    free(n->rec.producers);
    free(n->sizes);
    free(n->overlaps);
    free(n);
}

void hbg_recorder_destroy(HbgRecorder *r, const HostApi *api)
{
    if (r == NULL)
        return;
    recorded_free(r->current, api);
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

static int same_geometry(const Recorded *n, const RunTensorTable *t, uint32_t scalar_count)
{
    if (n->tensor_count != t->count || n->scalar_count != scalar_count)
        return 0;
    for (uint32_t i = 0; i < t->count; i++)
        if (n->sizes[i] != t->entries[i].size || n->staged[i] != t->entries[i].staged)
            return 0;
    uint32_t k = 0, i = 0, j = 0;
    for (; next_overlap(t, &i, &j); k++)
        if (k == n->overlap_count || n->overlaps[k].i != i || n->overlaps[k].j != j ||
            n->overlaps[k].delta != t->entries[j].dev - t->entries[i].dev)
            return 0;
    return k == n->overlap_count;
}

static int keep_geometry(Recorded *n, const RunTensorTable *t, uint32_t scalar_count)
{
    n->tensor_count = t->count;
    n->scalar_count = scalar_count;
    uint32_t overlaps = 0, i = 0, j = 0;
    while (next_overlap(t, &i, &j))
        overlaps++;
    n->sizes = malloc((size_t)t->count * (sizeof *n->sizes + 1) + 1);
    n->overlaps = overlaps > 0 ? malloc((size_t)overlaps * sizeof *n->overlaps) : NULL;
    if (n->sizes == NULL || (overlaps > 0 && n->overlaps == NULL))
        return PTO_ERR_OUT_OF_MEMORY;
    n->staged = (uint8_t *)(n->sizes + t->count);
    for (uint32_t k = 0; k < t->count; k++) {
        n->sizes[k] = t->entries[k].size;
        n->staged[k] = t->entries[k].staged;
    }
    for (i = 0, j = 0; next_overlap(t, &i, &j);)
        n->overlaps[n->overlap_count++] = (Overlap){ i, j, t->entries[j].dev - t->entries[i].dev };
    return PTO_OK;
}

/* The dependency graph as dep_graph_write takes it, the reuse orderings left out. */
static int keep_dependencies(Recorded *n, const HbgGraph *g)
{
    n->rec.func_ids = malloc((size_t)g->task_count * sizeof(uint32_t) + 1);
    n->rec.producers = malloc(2 * (size_t)g->edge_count * sizeof(uint32_t) + 1);
    if (n->rec.func_ids == NULL || n->rec.producers == NULL)
        return PTO_ERR_OUT_OF_MEMORY;
    n->rec.consumers = n->rec.producers + g->edge_count;
    for (uint32_t t = 0; t < g->task_count; t++)
        n->rec.func_ids[t] = g->tasks[t].func_id;
    for (uint32_t e = 0; e < g->edge_count; e++) {
        if (g->edges[2 * e] & HBG_EDGE_REUSE)
            continue;
        n->rec.producers[n->rec.edge_count] = g->edges[2 * e];
        n->rec.consumers[n->rec.edge_count++] = g->edges[2 * e + 1];
    }
    return PTO_OK;
}

/* ---- taking and making ------------------------------------------------------------ */

const HbgRecording *hbg_recording_take(HbgRecorder *r, const RunTensorTable *tensors, uint32_t scalar_count)
{
    pthread_mutex_lock(&r->lock);
    Recorded *n = r->current;
    if (n != NULL && same_geometry(n, tensors, scalar_count))
        n->holders++;
    else
        n = NULL;
    pthread_mutex_unlock(&r->lock);
    return n != NULL ? &n->rec : NULL;
}

uint64_t hbg_recorder_bytes(HbgRecorder *r)
{
    pthread_mutex_lock(&r->lock);
    uint64_t bytes = r->current != NULL ? r->current->rec.image_bytes : 0;
    pthread_mutex_unlock(&r->lock);
    return bytes;
}

void hbg_recording_give_back(HbgRecorder *r, const HbgRecording *rec)
{
    pthread_mutex_lock(&r->lock);
    ((Recorded *)rec)->holders--;
    pthread_mutex_unlock(&r->lock);
}

/* Writes the relocatable image into device memory. A failure that is not the
   device's leaves *n without an image (not recorded) and no error behind. */
static int upload_image(Recorded *n, const HostApi *api, HbgGraph *g, const HbgBases *bases, uint8_t **image,
                        size_t *image_cap)
{
    size_t bytes = hbg_graph_image_bytes(g, bases);
    if (bytes > HBG_RECORDING_MAX_BYTES)
        return PTO_OK;
    if (bytes > *image_cap) {
        uint8_t *p = realloc(*image, bytes);
        if (p == NULL)
            return PTO_OK;
        *image = p;
        *image_cap = bytes;
    }
    hbg_graph_write_image(g, *image, bases);
    void *dev = host_api_device_malloc(api, bytes);
    int rc = dev != NULL ? host_api_copy_to_device(api, dev, *image, bytes) : pto_last_error_code();
    if (rc != PTO_OK) {
        if (dev != NULL)
            host_api_device_free(api, dev);
        if (pto_device_failure(rc))
            return rc;
        pto_clear_error(); /* no room for a recording now: the run goes unrecorded */
        return PTO_OK;
    }
    n->rec.image_dev = (uint64_t)(uintptr_t)dev;
    n->rec.image_bytes = bytes;
    return PTO_OK;
}

int hbg_recording_make(HbgRecorder *r, const HostApi *api, HbgGraph *g, const RunTensorTable *tensors,
                       const HbgBases *bases, uint64_t local_high, uint8_t **image, size_t *image_cap,
                       const HbgRecording **out)
{
    *out = NULL;
    if (!g->recordable)
        return PTO_OK;
    Recorded *n = calloc(1, sizeof *n);
    if (n == NULL)
        return PTO_OK;
    n->rec.task_count = g->task_count;
    n->rec.base_count = bases->count;
    n->rec.local_high = local_high;
    int rc = PTO_OK;
    if (keep_geometry(n, tensors, bases->count - 1 - bases->tensor_count) != PTO_OK ||
        keep_dependencies(n, g) != PTO_OK || (rc = upload_image(n, api, g, bases, image, image_cap)) != PTO_OK ||
        n->rec.image_dev == 0) {
        recorded_free(n, api);
        return rc;
    }
    pthread_mutex_lock(&r->lock);
    Recorded *old = r->current;
    if (old != NULL && old->holders > 0) {
        pthread_mutex_unlock(&r->lock); /* a run uses the current one: this run goes unrecorded */
        recorded_free(n, api);
        return PTO_OK;
    }
    r->current = n;
    n->holders = 1;
    pthread_mutex_unlock(&r->lock);
    recorded_free(old, api);
    *out = &n->rec;
    return PTO_OK;
}

void hbg_recording_bases(uint64_t *values, uint64_t local_base, const RunTensorTable *tensors, const uint64_t *scalars,
                         uint32_t scalar_count)
{
    values[0] = local_base;
    for (uint32_t i = 0; i < tensors->count; i++)
        values[1 + i] = tensors->entries[i].dev;
    memcpy(values + 1 + tensors->count, scalars, (size_t)scalar_count * sizeof *values);
}

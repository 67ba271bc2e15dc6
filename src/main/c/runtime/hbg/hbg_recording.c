#include "runtime/hbg/hbg_recording.h"

#include <stdlib.h>
#include <string.h>

#include "services/device_failure.h"
#include "util/last_error.h"

static void recording_destroy(GraphRecording *base, const HostApi *api)
{
    HbgRecording *rec = (HbgRecording *)base;
    if (rec->image_dev != 0)
        host_api_device_free(api, (void *)(uintptr_t)rec->image_dev);
    free(rec->func_ids);
    free(rec->producers);
    graph_recording_forget_geometry(base);
    free(rec);
}

/* The dependency graph as dep_graph_write takes it, the reuse orderings left out. */
static int keep_dependencies(HbgRecording *rec, const HbgGraph *g)
{
    rec->func_ids = malloc((size_t)g->task_count * sizeof(uint32_t) + 1);
    rec->producers = malloc(2 * (size_t)g->edge_count * sizeof(uint32_t) + 1);
    if (rec->func_ids == NULL || rec->producers == NULL)
        return PTO_ERR_OUT_OF_MEMORY;
    rec->consumers = rec->producers + g->edge_count;
    for (uint32_t t = 0; t < g->task_count; t++)
        rec->func_ids[t] = g->tasks[t].func_id;
    for (uint32_t e = 0; e < g->edge_count; e++) {
        if (g->edges[2 * e] & HBG_EDGE_REUSE)
            continue;
        rec->producers[rec->edge_count] = g->edges[2 * e];
        rec->consumers[rec->edge_count++] = g->edges[2 * e + 1];
    }
    return PTO_OK;
}

/* Writes the relocatable image into device memory. A failure that is not the
   device's leaves rec without an image (not recorded) and no error behind. */
static int upload_image(HbgRecording *rec, const HostApi *api, HbgGraph *g, const HbgBases *bases, uint8_t **image,
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
    rec->image_dev = (uint64_t)(uintptr_t)dev;
    rec->image_bytes = bytes;
    return PTO_OK;
}

const HbgRecording *hbg_recording_take(GraphRecorder *r, const RunTensorTable *tensors, uint32_t scalar_count)
{
    return (const HbgRecording *)graph_recorder_take(r, tensors, scalar_count);
}

int hbg_recording_make(GraphRecorder *r, const HostApi *api, HbgGraph *g, const RunTensorTable *tensors,
                       const HbgBases *bases, uint64_t local_high, uint8_t **image, size_t *image_cap,
                       const HbgRecording **out)
{
    *out = NULL;
    if (!g->recordable)
        return PTO_OK;
    HbgRecording *rec = calloc(1, sizeof *rec);
    if (rec == NULL)
        return PTO_OK;
    rec->base.destroy = recording_destroy;
    rec->task_count = g->task_count;
    rec->base_count = bases->count;
    rec->local_high = local_high;
    int rc = PTO_OK;
    if (graph_recording_keep_geometry(&rec->base, tensors, bases->count - 1 - bases->tensor_count) != PTO_OK ||
        keep_dependencies(rec, g) != PTO_OK || (rc = upload_image(rec, api, g, bases, image, image_cap)) != PTO_OK ||
        rec->image_dev == 0 || !graph_recorder_publish(r, &rec->base, api)) {
        recording_destroy(&rec->base, api); /* not recorded: the run uses its own image */
        return rc;
    }
    *out = rec;
    return PTO_OK;
}

uint64_t hbg_recorder_bytes(GraphRecorder *r)
{
    const HbgRecording *rec = (const HbgRecording *)graph_recorder_peek(r);
    return rec != NULL ? rec->image_bytes : 0;
}

void hbg_recording_give_back(GraphRecorder *r, const HbgRecording *rec)
{
    graph_recorder_give_back(r, (GraphRecording *)&rec->base);
}

void hbg_recording_bases(uint64_t *values, uint64_t local_base, const RunTensorTable *tensors, const uint64_t *scalars,
                         uint32_t scalar_count)
{
    values[0] = local_base;
    for (uint32_t i = 0; i < tensors->count; i++)
        values[1 + i] = tensors->entries[i].dev;
    memcpy(values + 1 + tensors->count, scalars, (size_t)scalar_count * sizeof *values);
}

/*
 * Recorded graphs on hbg (docs/recorded-graphs.md; which recording a prepare
 * replays, and when one is replaced or freed: runtime/graph_recorder.h): a
 * program's whole task graph as one prepare built it, kept in device memory as
 * a relocatable graph image (device/pto_device_abi.h: every argument relative
 * to the run's base table), so a later prepare of the same geometry only
 * writes its base table instead of interpreting the program and inferring
 * every dependency again. A graph whose image exceeds HBG_RECORDING_MAX_BYTES,
 * or that device memory cannot hold now, is not recorded: its runs are built
 * the ordinary way. The image counts in the chip's committed device memory
 * (not in a run's peak: like a callable's upload, every run shares it).
 */
#ifndef PTORUN_HBG_RECORDING_H
#define PTORUN_HBG_RECORDING_H

#include <stdint.h>

#include "ptorun/pto_runtime_c_api.h"
#include "runtime/hbg/hbg_graph.h"
#include "runtime/graph_recorder.h"
#include "runtime/run_tensors.h"
#include "services/host_api.h"

/* The largest graph image a recording holds (a 16 384-task chain of three-argument
   kernels takes about 1.5 MiB). */
#define HBG_RECORDING_MAX_BYTES (64ull << 20)

/* A recording, immutable once made; a run holds it from bind to unbind. */
typedef struct HbgRecording {
    GraphRecording base;      /* first: the geometry and holders (graph_recorder.h) */
    uint64_t image_dev;       /* the relocatable graph image in device memory */
    uint64_t image_bytes;
    uint32_t task_count;
    uint32_t base_count;      /* the base table's entries: 1 + tensors + scalars */
    uint64_t local_high;      /* the locals' high-water above the local heap's base */
    /* the dependency graph (services/dep_graph.h), without the reuse orderings */
    uint32_t *func_ids;       /* [task_count] */
    uint32_t *producers, *consumers;
    uint32_t edge_count;
} HbgRecording;

/* The recording of a bound run's geometry (its tensor table, placed, and its
   scalar count), held for the run; NULL when there is none. */
const HbgRecording *hbg_recording_take(GraphRecorder *r, const RunTensorTable *tensors, uint32_t scalar_count);

/* Records the graph just built for this geometry (g recordable, bases its base
   table, local_high the locals' high-water above the local heap's base) and
   holds it for the run (*out); *out NULL when it is not recorded (not
   recordable, too large, no memory for it now, or the current recording is
   held by a run): not an error, the run then uses its own image. Fails only
   with a device failure (services/device_failure.h) met uploading it. Uses
   `image` (image_cap bytes, grown by realloc) as the host build buffer. */
int hbg_recording_make(GraphRecorder *r, const HostApi *api, HbgGraph *g, const RunTensorTable *tensors,
                       const HbgBases *bases, uint64_t local_high, uint8_t **image, size_t *image_cap,
                       const HbgRecording **out);

/* The device bytes of the current recording (0: none), for tests and figures. */
uint64_t hbg_recorder_bytes(GraphRecorder *r);

/* The run is done with the recording. */
void hbg_recording_give_back(GraphRecorder *r, const HbgRecording *rec);

/* Writes a run's base table: values[0] = local_base, values[1 + i] = tensor i's
   device address, values[1 + tensor_count + j] = scalar j (HbgBases). */
void hbg_recording_bases(uint64_t *values, uint64_t local_base, const RunTensorTable *tensors, const uint64_t *scalars,
                         uint32_t scalar_count);

#endif

/*
 * The recorded graph of a registered program, as hbg and trb share it
 * (docs/recorded-graphs.md): which recording a prepare may replay, and when a
 * recording may be replaced or freed. What a recording holds is the runtime's
 * (hbg: a relocatable graph image; runtime/hbg/hbg_recording.h).
 *
 * A recording is made for one argument geometry: everything a program's graph
 * depends on besides addresses and scalar values — the tensor and scalar
 * counts, each tensor's size and whether the run stages it, and which
 * child-memory tensors overlap one another at what relative offset. A program
 * has no branches, its trip counts are constants, its views are affine in loop
 * variables and checked against tensor sizes, and dependencies follow from
 * shared bytes: two runs of one geometry build the same graph up to the
 * addresses and the scalars. An orchestration library's graph may depend on
 * anything (its data, the scalars): it is never recorded whole.
 *
 * One recording per registered callable (a GraphRecorder made at register and
 * destroyed with the callable at unregister or close, when no run holds it). A
 * prepare whose geometry matches takes the recording (held until its unbind);
 * one whose geometry differs makes a new one, which replaces the old unless a
 * run still holds that — then the new one is dropped and its run goes
 * unrecorded. Thread-safe: prepares of two slots may take, make and give back
 * concurrently.
 */
#ifndef PTORUN_GRAPH_RECORDER_H
#define PTORUN_GRAPH_RECORDER_H

#include <stdint.h>

#include "runtime/run_tensors.h"
#include "services/host_api.h"

/* Two child-memory tensors sharing bytes: j starts `delta` bytes after i. */
typedef struct GeometryOverlap {
    uint32_t i, j;
    uint64_t delta;
} GeometryOverlap;

/* The first member of a runtime's recording. */
typedef struct GraphRecording GraphRecording;
struct GraphRecording {
    uint32_t tensor_count, scalar_count;
    uint64_t *sizes;          /* [tensor_count] */
    uint8_t *staged;          /* [tensor_count] */
    GeometryOverlap *overlaps;
    uint32_t overlap_count;
    uint32_t holders;         /* runs bound to it (the recorder's lock) */
    /* frees the runtime's recording, this part included (graph_recording_forget_geometry) */
    void (*destroy)(GraphRecording *r, const HostApi *api);
};

typedef struct GraphRecorder GraphRecorder;

/* NULL (message recorded) when out of host memory. */
GraphRecorder *graph_recorder_create(void);
/* Destroys the current recording (no run may hold it) and the recorder. NULL: no-op. */
void graph_recorder_destroy(GraphRecorder *r, const HostApi *api);

/* Fills r's geometry from a bound run's tensor table (placed: device addresses
   known) and scalar count. PTO_ERR_OUT_OF_MEMORY. */
int graph_recording_keep_geometry(GraphRecording *r, const RunTensorTable *t, uint32_t scalar_count);
/* Frees what graph_recording_keep_geometry took. */
void graph_recording_forget_geometry(GraphRecording *r);

/* The current recording when it is of this geometry, held for the run; else NULL. */
GraphRecording *graph_recorder_take(GraphRecorder *r, const RunTensorTable *t, uint32_t scalar_count);

/* Makes `made` (geometry kept) the current recording, held for the run, and
   destroys the one it replaces; 0 when a run holds the current one: `made` is
   then not taken (the caller destroys it). */
int graph_recorder_publish(GraphRecorder *r, GraphRecording *made, const HostApi *api);

/* The run is done with the recording. */
void graph_recorder_give_back(GraphRecorder *r, GraphRecording *rec);

/* The current recording, NULL when there is none: for tests and figures, which
   read it while no run can replace it. */
const GraphRecording *graph_recorder_peek(GraphRecorder *r);

#endif

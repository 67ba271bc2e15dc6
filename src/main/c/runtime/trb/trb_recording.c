/* Recorded graphs on trb, host half (trb_recording.h). */
#include "runtime/trb/trb_recording.h"

#include <stdlib.h>
#include <string.h>

#include "device/pto_device_abi.h"
#include "runtime/trb/trb_walk_image.h"
#include "services/device_failure.h"
#include "util/last_error.h"

/* A recording: the geometry, the PtoTrbRecording the device wrote, and the
   graph compiled from it that a replay of the record run's ring sizing walks. */
typedef struct TrbRecording {
    GraphRecording base;      /* first (graph_recorder.h) */
    void *dev;
    uint64_t bytes;           /* device bytes: the recording and the compiled graph */
    TrbSizing sizing;         /* the record run's */
    void *walk_dev;           /* NULL: not compiled (replays go through the rings) */
    uint64_t walk_bytes, walk_state_bytes, walk_locals_bytes;
} TrbRecording;

static void recording_destroy(GraphRecording *base, const HostApi *api)
{
    TrbRecording *rec = (TrbRecording *)base;
    if (rec->walk_dev != NULL)
        host_api_device_free(api, rec->walk_dev);
    if (rec->dev != NULL)
        host_api_device_free(api, rec->dev);
    graph_recording_forget_geometry(base);
    free(rec);
}

/* ---- the plan ------------------------------------------------------------------------- */

static int is_view(uint8_t direction)
{
    return direction == PTO_ARG_IN || direction == PTO_ARG_OUT || direction == PTO_ARG_INOUT;
}

/* *sum += times * each, 0 on overflow. */
static int add_times(uint64_t *sum, uint64_t times, uint64_t each)
{
    uint64_t n;
    return !__builtin_mul_overflow(times, each, &n) && !__builtin_add_overflow(*sum, n, sum);
}

void trb_recording_plan(const ChipCallableView *v, TrbRecordingPlan *plan)
{
    memset(plan, 0, sizeof *plan);
    if (v->header.orchestration_kind != PTO_ORCH_PROGRAM)
        return;
    /* times[d]: how often code at loop depth d runs, as chip_program_task_count counts */
    uint64_t times[PTO_PROGRAM_MAX_LOOP_DEPTH + 1] = { 1 }, words = 0, accesses = 0, strided = 0, tasks = 0;
    uint32_t depth = 0;
    PtoProgramCursor cursor = { 0, 0 };
    PtoProgramInsn insn;
    int ok = 1;
    while (ok && chip_program_next(v, &cursor, &insn)) {
        switch (insn.head.opcode) {
        case PTO_OP_SUBMIT: {
            uint64_t task_words = 2, task_accesses = 0, task_strided = 0;
            for (uint32_t i = 0; i < insn.head.param_count; i++) {
                PtoProgramParam p;
                chip_program_param(v, &insn, i, &p);
                task_words += 3;
                if (is_view(p.direction)) {
                    task_accesses++;
                    task_strided += p.ndims != 0;
                    task_words += p.ndims != 0 ? PTO_TRB_VIEW_WORDS : 0;
                }
            }
            ok = add_times(&tasks, times[depth], 1) && add_times(&words, times[depth], task_words) &&
                 add_times(&accesses, times[depth], task_accesses) && add_times(&strided, times[depth], task_strided);
            break;
        }
        case PTO_OP_ALLOC_TENSOR:
            ok = add_times(&words, times[depth], 2);
            break;
        case PTO_OP_SCOPE_BEGIN:
        case PTO_OP_SCOPE_BEGIN_MANUAL:
        case PTO_OP_SCOPE_END:
            ok = add_times(&words, times[depth], 1);
            break;
        case PTO_OP_LOOP:
            if (depth == PTO_PROGRAM_MAX_LOOP_DEPTH || __builtin_mul_overflow(times[depth], insn.u.loop.count,
                                                                             &times[depth + 1]))
                ok = 0;
            depth++;
            break;
        case PTO_OP_END_LOOP:
            depth -= depth > 0;
            break;
        case PTO_OP_INVOKE:
            /* a sub-graph's tasks are the sub-graph layer's (orch/subgraph.h), not the
               interpreter's SUBMITs this plan sizes: a program invoking one is not
               recorded whole-run (every run builds its graph, BUILT) */
            ok = 0;
            break;
        default:
            break;
        }
    }
    /* the producers (task id, ref), then the whole against the bound */
    uint64_t max_words = (TRB_RECORDING_MAX_BYTES - sizeof(PtoTrbRecording)) / sizeof(uint64_t);
    uint64_t scratch = 0;
    if (!ok || !add_times(&words, 2 * TRB_RECORDING_EDGES_PER_ACCESS, accesses) || !add_times(&words, 2, 64) ||
        words > max_words || !add_times(&scratch, accesses + 1, sizeof(PtoTrbAccess)) ||
        !add_times(&scratch, strided, sizeof(PtoTensorView)) || !add_times(&scratch, tasks, sizeof(uint64_t)) ||
        scratch > TRB_RECORDING_MAX_BYTES || tasks == 0)
        return;
    *plan = (TrbRecordingPlan){ 1, tasks, words, accesses + 1, strided };
}

/* ---- a run ---------------------------------------------------------------------------- */

/* A failure allocating or writing a recording that is not the device's leaves
   the run unrecorded and no error behind. */
static int unrecorded(const HostApi *api, TrbRecordingRun *run, int rc)
{
    if (run->made != NULL)
        recording_destroy(run->made, api);
    if (run->scratch != NULL)
        host_api_device_free(api, run->scratch);
    run->made = NULL;
    run->scratch = NULL;
    run->device_bytes = 0;
    run->mode = PTO_TRB_RECORD_OFF;
    if (pto_device_failure(rc))
        return rc;
    pto_clear_error();
    return PTO_OK;
}

/* A replay walks the compiled graph when there is one and the run's rings are
   the record run's: the locals' block then fits the GM heap, and the run can
   end no other way than the recorded run did (a smaller dependency pool fails
   a task with more producers than it holds, as a built run would: through the
   rings). */
static int walks(const TrbRecording *rec, const TrbSizing *sizing)
{
    uint64_t heap = 0;
    for (uint32_t r = 0; r < PTO_TRB_RINGS; r++)
        heap += sizing->heap[r];
    return rec->walk_dev != NULL && memcmp(&rec->sizing, sizing, sizeof *sizing) == 0 &&
           rec->walk_locals_bytes <= heap;
}

int trb_recording_bind(const HostApi *api, GraphRecorder *r, const TrbRecordingPlan *plan, const RunTensorTable *t,
                       uint32_t scalar_count, const TrbSizing *sizing, TrbRecordingRun *run)
{
    memset(run, 0, sizeof *run);
    run->graph_source = PTO_RUN_GRAPH_BUILT;
    run->scalar_count = scalar_count;
    if (r == NULL || !plan->recordable)
        return PTO_OK;
    if ((run->held = graph_recorder_take(r, t, scalar_count)) != NULL) {
        run->mode = walks((const TrbRecording *)run->held, sizing) ? PTO_TRB_WALK : PTO_TRB_REPLAY;
        run->graph_source = PTO_RUN_GRAPH_REPLAYED;
        return PTO_OK;
    }
    TrbRecording *rec = calloc(1, sizeof *rec);
    if (rec == NULL)
        return PTO_OK;
    rec->base.destroy = recording_destroy;
    rec->bytes = sizeof(PtoTrbRecording) + plan->words * sizeof(uint64_t);
    rec->sizing = *sizing;
    run->made = &rec->base;
    run->mode = PTO_TRB_RECORD;
    uint64_t scratch = plan->map_entries * sizeof(PtoTrbAccess) + plan->map_views * sizeof(PtoTensorView) +
                       plan->tasks * sizeof(uint64_t);
    PtoTrbRecording header = { .magic = PTO_TRB_RECORDING_MAGIC, .capacity = plan->words, .task_capacity = plan->tasks };
    if ((rec->dev = host_api_device_malloc(api, rec->bytes)) == NULL ||
        (run->scratch = host_api_device_malloc(api, scratch)) == NULL)
        return unrecorded(api, run, pto_null_failure(PTO_ERR_OUT_OF_MEMORY));
    int rc = host_api_copy_to_device(api, rec->dev, &header, sizeof header);
    if (rc != PTO_OK)
        return unrecorded(api, run, rc);
    run->device_bytes = scratch;
    return PTO_OK;
}

void trb_recording_work(const TrbRecordingRun *run, const TrbRecordingPlan *plan, PtoTrbWork *w)
{
    w->record_mode = run->mode;
    if (run->mode == PTO_TRB_REPLAY)
        w->recording_dev = (uint64_t)(uintptr_t)((const TrbRecording *)run->held)->dev;
    if (run->mode == PTO_TRB_WALK) {
        const TrbRecording *rec = (const TrbRecording *)run->held;
        w->walk_dev = (uint64_t)(uintptr_t)rec->walk_dev;
        w->walk_bytes = rec->walk_bytes;
        w->walk_state_dev = w->walk_dev + rec->walk_bytes;
        w->walk_state_bytes = rec->walk_state_bytes;
        w->walk_locals_bytes = rec->walk_locals_bytes;
    }
    if (run->mode != PTO_TRB_RECORD)
        return;
    w->recording_dev = (uint64_t)(uintptr_t)((const TrbRecording *)run->made)->dev;
    w->record_scratch_dev = (uint64_t)(uintptr_t)run->scratch;
    w->record_map_entries = plan->map_entries;
    w->record_map_views = plan->map_views;
}

/* The recording's words compiled into the graph a replay walks, in device
   memory with its scheduling state after it. Best effort: a recording that does
   not compile, or that host or device memory cannot take now, is replayed
   through the rings; only a device failure is an error. */
static int compile_walk(const HostApi *api, TrbRecording *rec, const PtoTrbRecording *header,
                        const PtoTrbKernel *kernels, uint32_t kernel_count)
{
    if (header->used > header->capacity)
        return PTO_OK;
    uint64_t *words = malloc(header->used * sizeof *words + 1);
    if (words == NULL)
        return PTO_OK;
    TrbWalkImage image = { 0 };
    int rc = host_api_copy_from_device(api, words, (const uint8_t *)rec->dev + sizeof *header,
                                       header->used * sizeof *words);
    if (rc == PTO_OK &&
        trb_walk_compile(words, header->used, header->task_count, kernels, kernel_count, &image) == PTO_OK) {
        uint64_t state = pto_graph_state_bytes(image.task_count);
        void *dev = host_api_device_malloc(api, image.size + state);
        if (dev != NULL && (rc = host_api_copy_to_device(api, dev, image.bytes, image.size)) != PTO_OK)
            host_api_device_free(api, dev);
        else if (dev != NULL) {
            rec->walk_dev = dev;
            rec->walk_bytes = image.size;
            rec->walk_state_bytes = state;
            rec->walk_locals_bytes = image.locals_bytes;
            rec->bytes += image.size + state;
        }
    }
    trb_walk_image_free(&image);
    free(words);
    if (pto_device_failure(rc))
        return rc;
    pto_clear_error();
    return PTO_OK;
}

int trb_recording_collect(const HostApi *api, GraphRecorder *r, const RunTensorTable *t, const PtoTrbKernel *kernels,
                          uint32_t kernel_count, TrbRecordingRun *run)
{
    if (run->mode != PTO_TRB_RECORD || run->made == NULL)
        return PTO_OK;
    TrbRecording *rec = (TrbRecording *)run->made;
    PtoTrbRecording header;
    int rc = host_api_copy_from_device(api, &header, rec->dev, sizeof header);
    if (rc != PTO_OK)
        return rc;
    if (header.magic != PTO_TRB_RECORDING_MAGIC || header.complete != 1)
        return PTO_OK; /* lost on the device: the run was built, nothing is kept (unbind frees it) */
    if ((rc = compile_walk(api, rec, &header, kernels, kernel_count)) != PTO_OK)
        return rc;
    if (graph_recording_keep_geometry(&rec->base, t, run->scalar_count) != PTO_OK ||
        !graph_recorder_publish(r, &rec->base, api))
        return PTO_OK; /* out of host memory, or the current recording is held: not kept */
    run->held = run->made;
    run->made = NULL;
    run->graph_source = PTO_RUN_GRAPH_RECORDED;
    return PTO_OK;
}

void trb_recording_unbind(const HostApi *api, GraphRecorder *r, TrbRecordingRun *run)
{
    if (run->scratch != NULL)
        host_api_device_free(api, run->scratch);
    if (run->made != NULL)
        recording_destroy(run->made, api);
    if (run->held != NULL)
        graph_recorder_give_back(r, run->held);
    memset(run, 0, sizeof *run);
}

uint64_t trb_recorder_bytes(GraphRecorder *r)
{
    const TrbRecording *rec = r != NULL ? (const TrbRecording *)graph_recorder_peek(r) : NULL;
    return rec != NULL ? rec->bytes : 0;
}

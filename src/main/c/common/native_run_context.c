/* The library-level native-run state machine (native_run_context.h). */
#include "native_run_context.h"

#include <stdalign.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "services/call_config.h"
#include "services/device_failure.h"
#include "util/last_error.h"
#include "util/spin_wait.h"

#define IDENTITY_BYTES 160

/* ---- messages ------------------------------------------------------------- */

static void format_identity(char *buf, size_t n, const NativeRunDescriptor *d)
{
    snprintf(buf, n, PTO_RUN_IDENTITY_FORMAT, (unsigned long long)d->run_id, d->pipeline_slot,
             (unsigned long long)d->generation, (unsigned long long)d->dispatch_id, (unsigned long long)d->run_epoch);
}

/* Records "<fn> <identity>: <what>" and returns `code`. */
static int run_fail(int code, const char *fn, const NativeRunDescriptor *d, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int run_fail(int code, const char *fn, const NativeRunDescriptor *d, const char *fmt, ...)
{
    char identity[IDENTITY_BYTES];
    char what[PTO_ERROR_MESSAGE_BYTES];
    format_identity(identity, sizeof identity, d);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return pto_fail(code, "%s %s: %s", fn, identity, what);
}

/* Prefixes the calling thread's current message (set by a callee) with the run. */
static int run_fail_current(int code, const char *fn, const NativeRunDescriptor *d)
{
    const char *msg = pto_last_error();
    return run_fail(code, fn, d, "%s", msg[0] != '\0' ? msg : "failed");
}

/* Reports the job's outcome on the calling thread: the executor recorded the
 * failure message on its own thread (simpler_last_error is per thread). A kernel
 * fault is named by the runtime from the device status, as finalize names it, so it
 * reads the same whichever phase reports it. The platform's messages already say
 * what happened to the run: they are quoted as they are. */
static int job_outcome(NativeRunContext *run, const char *fn, int rc)
{
    if (rc == PTO_OK)
        return PTO_OK;
    if (rc == PTO_ERR_KERNEL_FAULT) {
        int named = runtime_read_failure(&run->runtime, &run->host_api, rc);
        if (named == PTO_ERR_KERNEL_FAULT && strncmp(pto_last_error(), "kernel fault: ", 14) == 0)
            return run_fail_current(rc, fn, &run->desc);
        if (named == PTO_ERR_RANKS_DISAGREE) /* a collective's ranks disagreed: its own code */
            return run_fail_current(named, fn, &run->desc);
        if (pto_device_failure(named)) {
            /* reading the status met a device failure: from now on it is the
               run's outcome (the job ended: the executor no longer writes it),
               so wait and finalize report it too (device_failure.h) */
            run->job.result = named;
            snprintf(run->job.message, sizeof run->job.message, "%s", pto_last_error());
            return run_fail_current(named, fn, &run->desc);
        }
    }
    return run_fail(rc, fn, &run->desc, "%s", run->job.message[0] != '\0' ? run->job.message : "the run failed");
}

/* ---- the phases ----------------------------------------------------------- */

const char *native_run_phase_name(int phase)
{
    switch (phase) {
    case NATIVE_RUN_PREPARED:
        return "Prepared";
    case NATIVE_RUN_LAUNCHING:
        return "Launching";
    case NATIVE_RUN_RUNNING:
        return "Running";
    case NATIVE_RUN_ENDED:
        return "Ended";
    }
    return "unknown";
}

static int load_phase(const NativeRunContext *run)
{
    return atomic_load_explicit(&run->phase, memory_order_acquire);
}

/* Every path a run's phase takes, listed once (docs/lifecycle.md, section 4):
 *
 *   Prepared  -> Launching   launch: the run holds the execution claim, its job goes to the executor
 *   Launching -> Running     launch: the launch marker was crossed and the job has not ended
 *   Launching -> Ended       launch: the job ended first (it failed before the marker, or was that short)
 *   Running   -> Ended       poll or wait: the job ended
 *
 * Prepare builds the run Prepared; finalize empties the storage from Prepared,
 * Running or Ended (the tag, not the phase, then says there is no run). A phase
 * never goes back and Ended is the last. */
static const unsigned char phase_paths[NATIVE_RUN_PHASE_COUNT][NATIVE_RUN_PHASE_COUNT] = {
    [NATIVE_RUN_PREPARED][NATIVE_RUN_LAUNCHING] = 1,
    [NATIVE_RUN_LAUNCHING][NATIVE_RUN_RUNNING] = 1,
    [NATIVE_RUN_LAUNCHING][NATIVE_RUN_ENDED] = 1,
    [NATIVE_RUN_RUNNING][NATIVE_RUN_ENDED] = 1,
};
_Static_assert(NATIVE_RUN_ENDED + 1 == NATIVE_RUN_PHASE_COUNT, "the table covers every phase");

int native_run_to(NativeRunContext *run, const char *fn, NativeRunPhase to)
{
    int from = load_phase(run);
    int known = from >= 0 && from < NATIVE_RUN_PHASE_COUNT && (int)to >= 0 && (int)to < NATIVE_RUN_PHASE_COUNT;
    if (!known || !phase_paths[from][to])
        return run_fail(PTO_ERR_WRONG_PHASE, fn, &run->desc,
                        "the run is %s and cannot move to %s: no path of a run's phases leads there (internal error)",
                        native_run_phase_name(from), native_run_phase_name((int)to));
    atomic_store_explicit(&run->phase, (int)to, memory_order_release);
    return PTO_OK;
}

/* ---- storage -------------------------------------------------------------- */

static uint64_t storage_tag(const void *storage)
{
    return atomic_load_explicit((const _Atomic uint64_t *)storage, memory_order_acquire);
}

static int storage_misaligned(const void *storage)
{
    return ((uintptr_t)storage & (alignof(NativeRunContext) - 1)) != 0;
}

/* The gate of every phase call: a live context, a storage holding a prepared
 * run (tag = magic), built by this context. NULL with *rc set otherwise. */
static NativeRunContext *run_from_storage(void *ctx, void *storage, const char *fn, int *rc)
{
    DeviceContext *dc = device_context_from(ctx, fn);
    if (dc == NULL) {
        *rc = PTO_ERR_INVALID_ARGUMENT;
        return NULL;
    }
    if (storage == NULL) {
        *rc = pto_fail(PTO_ERR_INVALID_ARGUMENT, "%s: storage is NULL", fn);
        return NULL;
    }
    if (storage_misaligned(storage)) {
        *rc = pto_fail(PTO_ERR_INVALID_ARGUMENT, "%s: storage %p is not aligned to %zu bytes, so it holds no run",
                       fn, storage, alignof(NativeRunContext));
        return NULL;
    }
    if (storage_tag(storage) != PTO_NATIVE_RUN_STORAGE_MAGIC) {
        *rc = pto_fail(PTO_ERR_BAD_STORAGE,
                       "%s: storage %p does not hold a prepared run (it is empty, already finalized, or not a run storage)",
                       fn, storage);
        return NULL;
    }
    NativeRunContext *run = storage;
    if (run->owner != dc) {
        *rc = run_fail(PTO_ERR_BAD_STORAGE, fn, &run->desc, "the run belongs to another device context");
        return NULL;
    }
    return run;
}

/* Builds the context in the storage; the tag goes last. On failure the tag is still 0. */
static int construct(NativeRunContext *run, DeviceContext *dc, const CallConfig *cfg, const NativeRunDescriptor *desc)
{
    run->owner = dc;
    run->claim_held = 0;
    run->reservation_held = 0;
    run->desc = *desc;
    run->host_api = host_api_bind(dc->runner, run->desc.pipeline_slot, run->desc.arena_bank, &host_api_ops);
    memcpy(&run->config, cfg, sizeof run->config);
    memset(&run->launch, 0, sizeof run->launch);
    memset(&run->runtime, 0, sizeof run->runtime);
    memset(&run->trace_spans, 0, sizeof run->trace_spans);
    run->runtime.trace_spans = &run->trace_spans;
    /* the report's figures and count; a path is only ever read below the count */
    run->report.execution_end_ns = 0;
    run->report.peak_device_memory = 0;
    run->report.output_file_count = 0;
    run->report.graph_source = PTO_RUN_GRAPH_BUILT;
    run->report.orchestration_ns = 0;
    __atomic_store_n(&run->report.launched_ctx, 0u, __ATOMIC_RELEASE);
    run->report.reserved = 0;
    run->runtime.report = &run->report;
    memset(&run->exec, 0, sizeof run->exec);
    atomic_init(&run->phase, NATIVE_RUN_PREPARED);

    int rc = launch_signal_init(&run->signal, run->desc.accepted_state, run->desc.accepted_value);
    if (rc != PTO_OK)
        goto fail;
    if ((rc = executor_job_init(&run->job, &run->report.device_ended)) != PTO_OK)
        goto fail_signal;
    atomic_store_explicit(&run->tag, PTO_NATIVE_RUN_STORAGE_MAGIC, memory_order_release);
    return PTO_OK;

fail_signal:
    launch_signal_destroy(&run->signal);
fail:
    return rc;
}

/* Drops what the run holds on its device context, destroys it and empties the
 * storage (tag 0, release): the last touch of the storage. */
static void tear_down(NativeRunContext *run)
{
    if (run->claim_held || run->reservation_held)
        device_context_release(run->owner, run);
    run->claim_held = 0;
    run->reservation_held = 0;
    executor_job_destroy(&run->job);
    launch_signal_destroy(&run->signal);
    atomic_store_explicit(&run->tag, 0, memory_order_release);
}

/* ---- a failed run breaks its communication domains ------------------------ */

/* Notes the domains the run's scalars name (common/comm_run.h) as soon as the
 * args are structurally readable: any non-NULL args block has its 128 scalar
 * slots, and a count out of range is clamped (the checks refuse it later). A
 * context without a comm handle pays one atomic load. */
static void note_domains(DeviceContext *dc, const void *args, RunCommDomains *out)
{
    out->count = 0;
    if (args == NULL || __atomic_load_n(&dc->comm_groups, __ATOMIC_RELAXED) == 0)
        return;
    const ChipStorageTaskArgs *a = args;
    int32_t n = a->scalar_count;
    n = n < 0 ? 0 : n > PTO_MAX_SCALAR_ARGS ? PTO_MAX_SCALAR_ARGS : n;
    comm_run_note(dc, a->scalars, (size_t)n, out);
}

/* The run failed with rc (non-zero): its domains break, naming this rank, so its
 * peers fail now instead of at the group timeout. PTO_ERR_BUSY and
 * PTO_ERR_OVERLAP_NOT_NOW are no failure: the caller retries the prepare (the
 * latter once the executing run is finalized), or launches the still-Prepared
 * run later.
 * PTO_ERR_RANKS_DISAGREE breaks nothing: every rank of the collective refused it
 * alike after the exit sync, so no peer waits, and the domain stays usable. */
static int run_failed(DeviceContext *dc, RunCommDomains *named, int rc)
{
    if (rc != PTO_OK && rc != PTO_ERR_BUSY && rc != PTO_ERR_OVERLAP_NOT_NOW && rc != PTO_ERR_RANKS_DISAGREE)
        comm_run_break(dc, named);
    return rc;
}

/* ---- prepare -------------------------------------------------------------- */

/* Checks everything that needs no construction, in the documented order. */
static int check_prepare(DeviceContext *dc, void *storage, int32_t id, const void *args, const CallConfig *cfg,
                         const NativeRunDescriptor *desc, const char *fn)
{
    if (storage == NULL)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "%s: storage is NULL", fn);
    if (cfg == NULL)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "%s: cfg (CallConfig) is NULL", fn);
    if (desc == NULL)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "%s: desc (NativeRunDescriptor) is NULL", fn);
    if (args == NULL)
        return run_fail(PTO_ERR_INVALID_ARGUMENT, fn, desc,
                        "args is NULL (pass a ChipStorageTaskArgs, counts 0 for no arguments)");
    if (desc->pipeline_slot >= PTO_PIPELINE_MAX_DEPTH)
        return run_fail(PTO_ERR_INVALID_ARGUMENT, fn, desc, "pipeline_slot %u is not below %u", desc->pipeline_slot,
                        PTO_PIPELINE_MAX_DEPTH);
    if (desc->arena_bank >= PTO_PIPELINE_MAX_DEPTH)
        return run_fail(PTO_ERR_INVALID_ARGUMENT, fn, desc, "arena_bank %u is not below %u", desc->arena_bank,
                        PTO_PIPELINE_MAX_DEPTH);
    if (storage_misaligned(storage))
        return run_fail(PTO_ERR_INVALID_ARGUMENT, fn, desc, "storage %p is not aligned to get_runtime_alignment() = %zu",
                        storage, alignof(NativeRunContext));
    if (call_config_validate(cfg) != PTO_OK)
        return run_fail_current(PTO_ERR_INVALID_ARGUMENT, fn, desc);
    if (device_context_check_initialized(dc, fn) != PTO_OK)
        return run_fail_current(PTO_ERR_WRONG_PHASE, fn, desc);
    if (id < 0 || id >= PTO_MAX_CALLABLES)
        return run_fail(PTO_ERR_INVALID_ARGUMENT, fn, desc, "callable id %d is outside 0..%d", id,
                        PTO_MAX_CALLABLES - 1);
    if (!device_context_is_registered(dc, id))
        return run_fail(PTO_ERR_NOT_REGISTERED, fn, desc, "callable %d is not registered", id);
    if (runner_poisoned(dc->runner))
        return run_fail(PTO_ERR_POISONED, fn, desc,
                        "the device context refuses work after an unrecovered device error (finalize_device resets it)");
    uint64_t tag = storage_tag(storage);
    if (tag == PTO_NATIVE_RUN_STORAGE_MAGIC)
        return run_fail(PTO_ERR_BAD_STORAGE, fn, desc, "storage %p already holds a prepared run; finalize it first",
                        storage);
    if (tag != 0)
        return run_fail(PTO_ERR_BAD_STORAGE, fn, desc,
                        "storage %p is not zero-initialized (first 8 bytes 0x%016llx); zero-fill it before first use",
                        storage, (unsigned long long)tag);
    return PTO_OK;
}

/* Whether the contract's arenas are one copy for every slot (the first arena kind
 * it declares is DEVICE_SCRATCH, as PipelineContract.bankOfSlot reads it): then
 * every run names bank 0 and two runs share it. */
static int contract_shares_bank(const PipelineContract *c)
{
    for (uint32_t i = 0; i < c->resource_count && i < PTO_PIPELINE_MAX_RESOURCES; i++) {
        uint32_t kind = c->resources[i].kind;
        if (kind == PTO_PIPELINE_GM_HEAP || kind == PTO_PIPELINE_GM_SM || kind == PTO_PIPELINE_RUNTIME_IMAGE)
            return c->resources[i].resource_class == PTO_PIPELINE_DEVICE_SCRATCH;
    }
    return 0;
}

/* Reserves slot and bank for the run (or says precisely why not) and returns
 * its callable, which stays registered while the reservation is held, and the
 * run it is prepared beside (*predecessor, owner NULL when none executes). */
static int admit(NativeRunContext *run, int32_t id, RuntimeCallable **callable, RunReservation *predecessor,
                 const char *fn)
{
    DeviceContext *dc = run->owner;
    const PipelineContract *contract = runtime_pipeline_contract();
    const char *overlap_refusal = run_overlap_refusal(runtime_supports_overlap(), contract->pipeline_depth,
                                                      call_config_has_diagnostics(&run->config));
    RunReservation request = {
        .owner = run,
        .slot = run->desc.pipeline_slot,
        .bank = run->desc.arena_bank,
        .permits_overlap = overlap_refusal == NULL,
        .shares_bank = contract_shares_bank(contract),
        .run_id = run->desc.run_id,
        .run_epoch = run->desc.run_epoch,
    };
    RunAdmission admission;
    RunReservation blocker;
    int rc = device_context_admit(dc, &request, id, callable, &admission, &blocker, predecessor);
    switch (rc) {
    case PTO_OK:
        run->reservation_held = 1;
        return PTO_OK;
    case PTO_ERR_WRONG_PHASE:
        return run_fail(rc, fn, &run->desc, "the device context was finalized meanwhile");
    case PTO_ERR_NOT_REGISTERED:
        return run_fail(rc, fn, &run->desc, "callable %d was unregistered meanwhile", id);
    default:
        if (admission == RUN_REFUSED_OVERLAP_NOT_PERMITTED)
            return run_fail(rc, fn, &run->desc, "%s (run_id=%llu slot=%u run_epoch=%llu): %s", run_admission_reason(admission),
                            (unsigned long long)blocker.run_id, blocker.slot, (unsigned long long)blocker.run_epoch,
                            overlap_refusal);
        return run_fail(rc, fn, &run->desc, "%s (run_id=%llu slot=%u bank=%u run_epoch=%llu)",
                        run_admission_reason(admission), (unsigned long long)blocker.run_id, blocker.slot,
                        blocker.bank, (unsigned long long)blocker.run_epoch);
    }
}

int native_run_prepare(void *ctx, void *storage, int32_t id, const void *args, const CallConfig *cfg,
                       const NativeRunDescriptor *caller_desc)
{
    static const char fn[] = "simpler_prepare_run";
    DeviceContext *dc = device_context_from(ctx, fn);
    if (dc == NULL)
        return PTO_ERR_INVALID_ARGUMENT;
    /* before every check that refuses: a bad view and a poisoned chip both break */
    RunCommDomains named;
    note_domains(dc, args, &named);
    if (caller_desc == NULL)
        return run_failed(dc, &named, check_prepare(dc, storage, id, args, cfg, NULL, fn));
    /* The caller's descriptor is read exactly once, here: the checks, the
       reservation, the slot and the HostApi all use this copy, so a caller
       changing its descriptor during prepare (hbg runs the orchestration in
       here) cannot bind a slot or bank other than the one reserved. */
    uint64_t prepare_start = pto_monotonic_ns();
    NativeRunDescriptor desc = *caller_desc;
    int rc = check_prepare(dc, storage, id, args, cfg, &desc, fn);
    if (rc != PTO_OK)
        return run_failed(dc, &named, rc);

    NativeRunContext *run = storage;
    if ((rc = construct(run, dc, cfg, &desc)) != PTO_OK)
        return run_failed(dc, &named, run_fail_current(rc, fn, &desc));
    run->comm = named;
    run->trace_spans.prepare_start = prepare_start;
    RuntimeCallable *callable;
    RunReservation predecessor;
    if ((rc = admit(run, id, &callable, &predecessor, fn)) != PTO_OK)
        goto fail;
    if ((rc = runner_prepare_slot(dc->runner, run->desc.pipeline_slot)) != PTO_OK) {
        run_fail_current(rc, fn, &run->desc);
        goto fail;
    }
    run->runtime.overlaps = predecessor.owner != NULL;
    rc = runtime_bind(&run->runtime, dc->slot_scratch[run->desc.pipeline_slot], &run->host_api, callable, args,
                      &run->config, &run->desc, &run->launch);
    if (rc == PTO_ERR_OVERLAP_NOT_NOW && predecessor.owner != NULL)
        run_fail(rc, fn, &run->desc,
                 "not now: run (run_id=%llu slot=%u run_epoch=%llu) executes and %s; prepare this run again once "
                 "that run is finalized",
                 (unsigned long long)predecessor.run_id, predecessor.slot, (unsigned long long)predecessor.run_epoch,
                 pto_last_error());
    else if (rc != PTO_OK)
        run_fail_current(rc, fn, &run->desc);
    if (rc != PTO_OK)
        goto fail_slot;
    run->trace_spans.prepare_end = pto_monotonic_ns();
    return PTO_OK;

fail_slot: {
    char saved[PTO_ERROR_MESSAGE_BYTES];
    snprintf(saved, sizeof saved, "%s", pto_last_error());
    int outcome = pto_outrank(rc, saved, runner_abandon_slot(dc->runner, run->desc.pipeline_slot));
    if (outcome != rc) /* the release's device failure: say which run */
        rc = run_fail_current(outcome, fn, &run->desc);
}
fail:
    run_failed(dc, &run->comm, rc);
    tear_down(run); /* drops the reservation (if taken) and empties the storage */
    return rc;
}

/* ---- launch, poll, wait --------------------------------------------------- */

/* Takes the runner's execution claim, or says who holds it. */
static int take_claim(NativeRunContext *run, const char *fn)
{
    RunReservation holder;
    RunClaim claim = device_context_claim(run->owner, run, &holder);
    if (claim == RUN_CLAIM_BUSY)
        return run_fail(PTO_ERR_BUSY, fn, &run->desc,
                        "the execution claim is held by run (run_id=%llu slot=%u run_epoch=%llu); "
                        "the run stays Prepared and may be launched once that run is finalized",
                        (unsigned long long)holder.run_id, holder.slot, (unsigned long long)holder.run_epoch);
    if (claim != RUN_CLAIMED)
        return run_fail(PTO_ERR_FAILED, fn, &run->desc, "the run holds no reservation (internal error)");
    run->claim_held = 1;
    return PTO_OK;
}

static void drop_claim(NativeRunContext *run)
{
    device_context_release_claim(run->owner, run);
    run->claim_held = 0;
}

int native_run_launch(void *ctx, void *storage)
{
    static const char fn[] = "simpler_launch_run";
    int rc;
    NativeRunContext *run = run_from_storage(ctx, storage, fn, &rc);
    if (run == NULL)
        return rc;
    int phase = load_phase(run);
    if (phase != NATIVE_RUN_PREPARED)
        return run_fail(PTO_ERR_WRONG_PHASE, fn, &run->desc, "the run is %s; only a Prepared run can be launched",
                        native_run_phase_name(phase));
    Runner *runner = run->owner->runner;
    if (runner_poisoned(runner))
        return run_failed(run->owner, &run->comm,
                          run_fail(PTO_ERR_POISONED, fn, &run->desc,
                                   "the device context refuses work after an unrecovered device error"));
    if ((rc = take_claim(run, fn)) != PTO_OK)
        return run_failed(run->owner, &run->comm, rc);
    if (runner_poisoned(runner)) { /* the predecessor may have poisoned it before releasing the claim */
        drop_claim(run);
        return run_failed(run->owner, &run->comm,
                          run_fail(PTO_ERR_POISONED, fn, &run->desc,
                                   "the device context refuses work after an unrecovered device error"));
    }

    if ((rc = native_run_to(run, fn, NATIVE_RUN_LAUNCHING)) != PTO_OK) {
        drop_claim(run);
        return rc;
    }
    run->trace_spans.launch_start = pto_monotonic_ns();
    executor_submit(&run->owner->executor, &run->job, runner, &run->exec, run->desc.pipeline_slot, &run->launch,
                    &run->signal);
    launch_signal_wait(&run->signal);
    run->trace_spans.launch_end = pto_monotonic_ns();
    if (executor_job_ended(&run->job)) {
        /* the job ended first: it failed before the marker, or the run was that short */
        if ((rc = native_run_to(run, fn, NATIVE_RUN_ENDED)) != PTO_OK)
            return rc;
        rc = run_failed(run->owner, &run->comm, job_outcome(run, fn, run->job.result));
    } else {
        rc = native_run_to(run, fn, NATIVE_RUN_RUNNING);
    }
    if (rc == PTO_OK) /* from here a poll may be answered from the storage (pto_runtime_c_api.h) */
        __atomic_store_n(&run->report.launched_ctx, (uint64_t)(uintptr_t)ctx, __ATOMIC_RELEASE);
    return rc;
}

/* A poll saw the job of its Running run end: Running -> Ended. */
static int ended_on_poll(NativeRunContext *run, const char *fn)
{
    int rc = native_run_to(run, fn, NATIVE_RUN_ENDED);
    return rc == PTO_OK ? SIMPLER_NATIVE_RUN_POLL_COMPLETE : rc;
}

int native_run_poll(void *ctx, void *storage)
{
    static const char fn[] = "simpler_poll_run";
    int rc;
    NativeRunContext *run = run_from_storage(ctx, storage, fn, &rc);
    if (run == NULL)
        return rc;
    int phase = load_phase(run);
    if (phase == NATIVE_RUN_PREPARED || phase == NATIVE_RUN_LAUNCHING)
        return run_fail(PTO_ERR_WRONG_PHASE, fn, &run->desc, "the run is %s; poll it after launch returned",
                        native_run_phase_name(phase));
    if (phase == NATIVE_RUN_ENDED)
        return SIMPLER_NATIVE_RUN_POLL_COMPLETE; /* the ABI's spelling of "ended" */
    if (executor_job_ended(&run->job))
        return ended_on_poll(run, fn);
    int device = runner_query(run->owner->runner, &run->exec);
    if (executor_job_ended(&run->job))
        return ended_on_poll(run, fn);
    if (device == SIMPLER_NATIVE_RUN_POLL_NOT_READY || device == SIMPLER_NATIVE_RUN_POLL_COMPLETE)
        return SIMPLER_NATIVE_RUN_POLL_NOT_READY; /* the device may be through; the run ends with its job, await included */
    if (device < 0)
        return run_failed(run->owner, &run->comm, run_fail_current(device, fn, &run->desc));
    return run_failed(run->owner, &run->comm,
                      run_fail(PTO_ERR_FAILED, fn, &run->desc, "the platform's device query returned %d", device));
}

int native_run_wait(void *ctx, void *storage)
{
    static const char fn[] = "simpler_wait_run";
    int rc;
    NativeRunContext *run = run_from_storage(ctx, storage, fn, &rc);
    if (run == NULL)
        return rc;
    int phase = load_phase(run);
    if (phase == NATIVE_RUN_PREPARED || phase == NATIVE_RUN_LAUNCHING)
        return run_fail(PTO_ERR_WRONG_PHASE, fn, &run->desc, "the run is %s; wait for it after launch returned",
                        native_run_phase_name(phase));
    if (run->trace_spans.wait_start == 0)
        run->trace_spans.wait_start = pto_monotonic_ns();
    rc = executor_job_wait(&run->job);
    run->trace_spans.wait_end = pto_monotonic_ns();
    if (phase == NATIVE_RUN_RUNNING) {
        int moved = native_run_to(run, fn, NATIVE_RUN_ENDED);
        if (moved != PTO_OK)
            return moved;
    }
    return run_failed(run->owner, &run->comm, job_outcome(run, fn, rc));
}

/* ---- finalize and the blocking composition -------------------------------- */

/* A launched run's result at finalize, its message the thread's: the collect's
 * failure (the runtime names a failed run from its device status), else the
 * execution's; a device failure of the execution outranks the collect's other
 * answer (a kernel fault named from a status block the drain could not read). */
static int finalize_outcome(NativeRunContext *run, const char *fn)
{
    int execution_rc = executor_job_wait(&run->job);
    /* the job ended and the executor let go of it: the device's end is final, and it precedes the copy-back */
    run->report.execution_end_ns = runner_execution_end_ns(&run->exec);
    run->trace_spans.collect_start = pto_monotonic_ns();
    int collect_rc = runtime_collect_results(&run->runtime, &run->host_api, execution_rc);
    if (collect_rc == PTO_OK)
        return job_outcome(run, fn, execution_rc);
    char collected[PTO_ERROR_MESSAGE_BYTES];
    snprintf(collected, sizeof collected, "%s", pto_last_error());
    if (pto_device_failure(execution_rc))
        pto_fail(execution_rc, "%s", run->job.message[0] != '\0' ? run->job.message : "the run failed");
    return run_fail_current(pto_outrank(collect_rc, collected, execution_rc), fn, &run->desc);
}

int native_run_finalize(void *ctx, void *storage)
{
    static const char fn[] = "simpler_finalize_run";
    int rc;
    NativeRunContext *run = run_from_storage(ctx, storage, fn, &rc);
    if (run == NULL)
        return rc;
    int phase = load_phase(run);
    if (phase == NATIVE_RUN_LAUNCHING)
        return run_fail(PTO_ERR_WRONG_PHASE, fn, &run->desc, "the run's launch is still in flight");

    __atomic_store_n(&run->report.launched_ctx, 0u, __ATOMIC_RELEASE); /* a poll from now on is the library's */
    run->trace_spans.finalize_start = pto_monotonic_ns();
    int launched = phase != NATIVE_RUN_PREPARED;
    NativeRunDescriptor desc = run->desc; /* the storage is empty after tear_down */
    if (launched)
        rc = finalize_outcome(run, fn);
    else { /* never launched: no results, nothing is copied back; releasing its slot may still fail */
        int released = runner_abandon_slot(run->owner->runner, desc.pipeline_slot);
        rc = pto_device_failure(released) ? run_fail_current(released, fn, &desc) : PTO_OK;
    }
    run_failed(run->owner, &run->comm, rc);
    run->report.peak_device_memory = runtime_run_device_bytes(&run->runtime);
    run->report.graph_source = runtime_run_graph_source(&run->runtime);
    run->report.orchestration_ns = runtime_run_orchestration_ns(&run->runtime);
    runtime_unbind(&run->runtime, &run->host_api);
    tear_down(run); /* the report stays: the caller reads it after this return */
    return rc;
}

int native_run_blocking(void *ctx, void *storage, int32_t id, const void *args, const CallConfig *cfg,
                        const NativeRunDescriptor *desc)
{
    int rc = native_run_prepare(ctx, storage, id, args, cfg, desc);
    if (rc != PTO_OK)
        return rc;
    int first = native_run_launch(ctx, storage);
    if (first == PTO_OK)
        first = native_run_wait(ctx, storage);
    char first_message[PTO_ERROR_MESSAGE_BYTES];
    snprintf(first_message, sizeof first_message, "%s", pto_last_error());
    rc = native_run_finalize(ctx, storage); /* always, after a successful prepare */
    /* the first error wins, unless finalize's is a device failure and it is not */
    return first != PTO_OK ? pto_outrank(first, first_message, rc) : rc;
}

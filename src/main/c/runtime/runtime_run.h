/*
 * What hbg and trb share about a bound run (RuntimeRun): the serial that
 * tells the device a new run's argument block, the lending of the slot
 * scratch, the check that the run was bound by this runtime (its state begins
 * with a 32-bit magic), and the message that names a kernel fault from the
 * device's status block. runtime_run.c implements runtime_collect_results
 * (runtime.h) once, over the two hooks each runtime provides below.
 */
#ifndef PTORUN_RUNTIME_RUN_H
#define PTORUN_RUNTIME_RUN_H

#include <stdint.h>

#include "format/chip_callable.h"
#include "services/host_api.h"
#include "device/pto_device_abi.h"
#include "runtime/run_tensors.h"
#include "runtime/runtime.h"

/* The next run serial (PtoAicpuArgs.run_serial): process-wide, never 0. */
uint64_t runtime_next_run_serial(void);

/* bind's argument check: PTO_ERR_INVALID_ARGUMENT naming the NULLs. */
int runtime_bind_check(const RuntimeRun *run, const RuntimeSlotScratch *scratch, const HostApi *api,
                       const RuntimeCallable *c, const ChipStorageTaskArgs *args, const CallConfig *cfg,
                       const DeviceLaunch *launch);

/* Lends a slot scratch whose holder is `*holder` to `run`; PTO_ERR_FAILED
 * (an internal error: a caller bound two runs to one slot) when it is lent. */
int runtime_lend_scratch(const RuntimeRun **holder, const RuntimeRun *run);

/* Non-zero when `run` and `api` are non-NULL and the run's state begins with `magic`. */
int runtime_run_bound(const RuntimeRun *run, const HostApi *api, uint32_t magic);

/* PTO_OK when bound, else PTO_ERR_INVALID_ARGUMENT (a NULL) or PTO_ERR_WRONG_PHASE
 * ("<fn>: the run was never bound"), with its message. */
int runtime_run_check(const RuntimeRun *run, const HostApi *api, uint32_t magic, const char *fn);

/* PTO_ERR_KERNEL_FAULT naming the task, func_id, kernel (from the callable),
 * code and its meaning, and core; `progress` says how many tasks completed;
 * `message` is the kernel's own text (the executor's message, "" or NULL when
 * none), appended. A built-in's PTO_KERNEL_ERR_RANKS_DISAGREE is
 * PTO_ERR_RANKS_DISAGREE instead, the kernel's text leading. */
int runtime_kernel_fault(const ChipCallableView *v, const PtoDeviceStatus *s, const char *progress,
                         const char *message);

/* read_failure's answer when the status block of a run that failed with
 * execution_rc could not be read (the read's code read_rc, its message the
 * thread's): execution_rc, unless the read met a device failure and the run's
 * own failure is none (device_failure.h: it outranks what it was to name). */
int runtime_unreadable_status(int execution_rc, int read_rc);

/* A bound run's outputs, as collect writes them. */
typedef struct RunOutputs {
    const RunTensorTable *tensors;  /* copied back */
    void *trace;                    /* the trace buffer (NULL: off) */
    const char *output_prefix;      /* of the diagnostic files */
    const NativeRunDescriptor *desc;
    const ChipCallableView *view;   /* the run's callable */
} RunOutputs;

/* ---- provided by each runtime ---------------------------------------------- */

/* The run's outputs; runtime_run_check's error when the run is not bound. */
int runtime_run_outputs(RuntimeRun *run, const HostApi *api, RunOutputs *out);

/* Writes a successful bound run's dependency graph when it was asked for (else
   0), recording the file in run->report. */
int runtime_write_dep_graph(RuntimeRun *run, const HostApi *api);

/* Reads what a successful run's device reports beyond its outputs: its locals'
   peak, for runtime_run_device_bytes, and its orchestration time, for
   runtime_run_orchestration_ns (trb: the ring heaps' peaks and the device
   orchestrator's CPU time, and it keeps the graph recording the device
   completed, trb_recording.h; hbg knows both from its host-side orchestration:
   no device read). */
int runtime_collect_device_figures(RuntimeRun *run, const HostApi *api);

#endif

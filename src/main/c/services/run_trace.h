/*
 * The trace diagnostic (CallConfig.enable_trace): a run as a Chrome / Perfetto
 * trace (Trace Event Format JSON), written at finalize of a successful run to
 * <output_prefix>/trace_<run_id>_<run_epoch>.json by both runtimes.
 *
 * The device half: at bind the runtime allocates a PtoTraceHeader buffer
 * (device/pto_device_abi.h) of at most RUN_TRACE_MAX_TASKS records and names it
 * in PtoAicpuArgs.trace_dev; the AICPU executor records every kernel call in it
 * (task, func_id, logical core, CLOCK_MONOTONIC start and end). The host half:
 * NativeRunContext stamps its phases (prepare, launch, wait, finalize and, inside
 * finalize, collect: the copy-back and the diagnostics after the device's end) with
 * the same clock into the RunTraceSpans its RuntimeRun points at. On the sim and
 * on the emulated driver both halves run in this process, so the clocks agree;
 * a real device would need its clock mapped onto the host's.
 *
 * The file:
 *   {"traceEvents":[ ...metadata events (process / thread names)...,
 *     {"name":"prepare","cat":"host","ph":"X","pid":1,"tid":0,"ts":0.000,"dur":12.345,"args":{}}, ...
 *     {"name":"<kernel>","cat":"task","ph":"X","pid":1,"tid":<1 + core>,"ts":..,"dur":..,
 *      "args":{"task_id":0,"func_id":1,"core":0}}, ... one per task, in task id order ],
 *    "displayTimeUnit":"ns",
 *    "metadata":{"run_id":..,"generation":..,"dispatch_id":..,"run_epoch":..,"slot":..,
 *                "variant":"a2a3/sim/hbg","clock":"CLOCK_MONOTONIC","clock_base_ns":..,"task_count":..}}
 * ts / dur are microseconds (3 decimals: exact ns) from clock_base_ns, the
 * start of prepare. tid 0 is the host; tid 1 + c is logical core c.
 */
#ifndef PTORUN_RUN_TRACE_H
#define PTORUN_RUN_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "format/chip_callable.h"
#include "services/host_api.h"
#include "ptorun/pto_runtime_c_api.h"

/* The most tasks a traced run records (the dependency graph's limit too). */
#define RUN_TRACE_MAX_TASKS (1u << 16)

/* The host's phases of one run, CLOCK_MONOTONIC ns; 0 = not (yet) stamped. */
typedef struct RunTraceSpans {
    uint64_t prepare_start, prepare_end;
    uint64_t launch_start, launch_end;
    uint64_t wait_start, wait_end;   /* simpler_wait_run, when it was called */
    uint64_t finalize_start;         /* finalize ends when the file is written */
    uint64_t collect_start;          /* finalize of a launched run: the job ended and the device's
                                        end recorded; the copy-back and the diagnostics follow */
} RunTraceSpans;

/* PTO_ERR_CAPACITY (at bind) when a run of `tasks` tasks cannot be traced;
   UINT64_MAX = a count that overflowed. `what` names the count, e.g. "the
   program submits". */
int run_trace_check_tasks(uint64_t tasks, const char *what);

/* The device buffer for `capacity` (<= RUN_TRACE_MAX_TASKS) records, its header written. */
int run_trace_alloc(const HostApi *api, uint32_t capacity, void **out);
void run_trace_free(const HostApi *api, void **buf);

/* Reads the device buffer back and writes the file (creating output_prefix as
 * needed, via a temporary file renamed into place), then records its path in
 * `report` (NULL: nowhere). Kernel names come from the callable's children;
 * spans NULL = no host track. PTO_OK, or PTO_ERR_CAPACITY (more kernel calls than the
 * buffer holds) / PTO_ERR_DEVICE (malformed buffer) / PTO_ERR_FAILED (file
 * system) / PTO_ERR_OUT_OF_MEMORY, with a message naming the path. */
int run_trace_write(const HostApi *api, const void *buf, const char *output_prefix, const NativeRunDescriptor *desc,
                    const ChipCallableView *view, const RunTraceSpans *spans, NativeRunReport *report);

/* "<output_prefix>/trace_<run_id>_<run_epoch>.json". */
int run_trace_path(char *out, size_t size, const char *output_prefix, const NativeRunDescriptor *desc);

#endif

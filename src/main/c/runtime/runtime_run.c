/* What hbg and trb share about a bound run (runtime_run.h). */
#include "runtime/runtime_run.h"

#include <stdatomic.h>
#include <string.h>

#include "util/last_error.h"
#include "services/run_trace.h"
#include "device/pto_builtin_kernels.h"

/* Tells the device executor that an argument block belongs to a new run. */
static _Atomic uint64_t next_run_serial = 1;

uint64_t runtime_next_run_serial(void)
{
    return atomic_fetch_add(&next_run_serial, 1);
}

int runtime_bind_check(const RuntimeRun *run, const RuntimeSlotScratch *scratch, const HostApi *api,
                       const RuntimeCallable *c, const ChipStorageTaskArgs *args, const CallConfig *cfg,
                       const DeviceLaunch *launch)
{
    if (run == NULL || scratch == NULL || api == NULL || c == NULL || args == NULL || cfg == NULL || launch == NULL)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "bind: NULL run, scratch, HostApi, callable, args, config or launch");
    return PTO_OK;
}

int runtime_lend_scratch(const RuntimeRun **holder, const RuntimeRun *run)
{
    if (*holder != NULL)
        return pto_fail(PTO_ERR_FAILED, "bind: the slot's scratch is lent to another run (internal error)");
    *holder = run;
    return PTO_OK;
}

int runtime_run_bound(const RuntimeRun *run, const HostApi *api, uint32_t magic)
{
    uint32_t found;
    if (run == NULL || api == NULL)
        return 0;
    memcpy(&found, run->opaque, sizeof found);
    return found == magic;
}

int runtime_run_check(const RuntimeRun *run, const HostApi *api, uint32_t magic, const char *fn)
{
    if (run == NULL || api == NULL)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "%s: NULL run or HostApi", fn);
    if (!runtime_run_bound(run, api, magic))
        return pto_fail(PTO_ERR_WRONG_PHASE, "%s: the run was never bound", fn);
    return PTO_OK;
}

int runtime_kernel_fault(const ChipCallableView *v, const PtoDeviceStatus *s, const char *progress,
                         const char *message)
{
    int child = chip_callable_child_of(v, s->func_id);
    ChipCallableChild c = { 0 };
    char meaning[96];
    if (child >= 0)
        chip_callable_child(v, (uint32_t)child, &c);
    const char *name = child >= 0 ? chip_callable_blob(v, c.name) : "";
    int builtin = child >= 0 && c.source_kind != PTO_KERNEL_LIBRARY;
    const char *text = message != NULL ? message : "";
    /* a built-in collective's ranks asked for different things: its own code,
       and the kernel's text (the same on every rank) leads */
    if (builtin && s->kernel_code == PTO_KERNEL_ERR_RANKS_DISAGREE)
        return pto_fail(PTO_ERR_RANKS_DISAGREE, "%s; task %llu (func_id %u, kernel '%.*s') moved no data; %s",
                        text[0] != '\0' ? text : "the ranks disagree on the collective", (unsigned long long)s->task_id,
                        s->func_id, (int)c.name.size, name, progress);
    return pto_fail(PTO_ERR_KERNEL_FAULT, "kernel fault: task %llu (func_id %u, kernel '%.*s') returned %d (%s) on core %u; %s%s%s",
                    (unsigned long long)s->task_id, s->func_id, (int)c.name.size, name, s->kernel_code,
                    c.source_kind == PTO_KERNEL_LIBRARY ? "the kernel library's own code"
                                                        : pto_kernel_code_describe(s->kernel_code, meaning, sizeof meaning),
                    s->core_id, progress, text[0] != '\0' ? "; the kernel says: " : "", text);
}

int runtime_unreadable_status(int execution_rc, int read_rc)
{
    int code = pto_device_failure(read_rc) && !pto_device_failure(execution_rc) ? read_rc : execution_rc;
    return pto_fail(code, "the run failed (%d); its device status could not be read: %s", execution_rc,
                    pto_last_error());
}

int runtime_collect_results(RuntimeRun *run, const HostApi *api, int execution_rc)
{
    if (execution_rc != PTO_OK)
        return runtime_read_failure(run, api, execution_rc);
    RunOutputs out;
    int rc = runtime_run_outputs(run, api, &out);
    if (rc == PTO_OK)
        rc = run_tensors_copy_back(api, out.tensors);
    if (rc == PTO_OK)
        rc = runtime_collect_device_figures(run, api);
    if (rc == PTO_OK)
        rc = runtime_write_dep_graph(run, api);
    if (rc == PTO_OK && out.trace != NULL)
        rc = run_trace_write(api, out.trace, out.output_prefix, out.desc, out.view, run->trace_spans, run->report);
    return rc;
}

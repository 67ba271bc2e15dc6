#include "run_trace.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "services/dep_graph.h"
#include "services/device_failure.h"
#include "util/last_error.h"
#include "util/spin_wait.h"
#include "services/variant.h"
#include "device/pto_device_abi.h"

int run_trace_path(char *out, size_t size, const char *output_prefix, const NativeRunDescriptor *desc)
{
    int n = snprintf(out, size, "%s/trace_%" PRIu64 "_%" PRIu64 ".json", output_prefix, desc->run_id,
                     desc->run_epoch);
    if (n < 0 || (size_t)n >= size)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "trace: the path under output_prefix '%s' is too long",
                        output_prefix);
    return PTO_OK;
}

int run_trace_check_tasks(uint64_t tasks, const char *what)
{
    if (tasks == UINT64_MAX)
        return pto_fail(PTO_ERR_CAPACITY,
                        "bind: %s a task count that overflows 64 bits; the trace (CallConfig.enable_trace) records "
                        "at most %u tasks",
                        what, RUN_TRACE_MAX_TASKS);
    if (tasks > RUN_TRACE_MAX_TASKS)
        return pto_fail(PTO_ERR_CAPACITY,
                        "bind: %s %llu tasks; the trace (CallConfig.enable_trace) records at most %u tasks", what,
                        (unsigned long long)tasks, RUN_TRACE_MAX_TASKS);
    return PTO_OK;
}

int run_trace_alloc(const HostApi *api, uint32_t capacity, void **out)
{
    *out = NULL;
    if (capacity > RUN_TRACE_MAX_TASKS)
        return run_trace_check_tasks(capacity, "the run has");
    size_t bytes = (size_t)pto_trace_bytes(capacity);
    void *dev = host_api_device_malloc(api, bytes);
    if (dev == NULL)
        return pto_fail(pto_null_failure(PTO_ERR_OUT_OF_MEMORY), "bind: no device memory for the trace (%zu bytes): %s",
                        bytes, pto_last_error());
    PtoTraceHeader h = { .magic = PTO_TRACE_MAGIC, .capacity = capacity, .count = 0 };
    int rc = host_api_copy_to_device(api, dev, &h, sizeof h);
    if (rc != PTO_OK) {
        host_api_device_free(api, dev);
        return rc;
    }
    *out = dev;
    return PTO_OK;
}

void run_trace_free(const HostApi *api, void **buf)
{
    if (*buf != NULL)
        host_api_device_free(api, *buf);
    *buf = NULL;
}

/* ---- the file ------------------------------------------------------------------ */

static void put_json_string(FILE *f, const char *s, size_t n)
{
    fputc('"', f);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20 || c == 0x7f)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

/* Microseconds from base with exact ns (3 decimals); instants before base clamp to 0. */
static void put_us(FILE *f, uint64_t ns, uint64_t base)
{
    uint64_t d = ns > base ? ns - base : 0;
    fprintf(f, "%" PRIu64 ".%03u", d / 1000u, (unsigned)(d % 1000u));
}

static void put_span(FILE *f, const char *name, uint64_t start, uint64_t end, uint64_t base)
{
    if (start == 0 || end < start)
        return;
    fprintf(f, ",\n{\"name\":\"%s\",\"cat\":\"host\",\"ph\":\"X\",\"pid\":1,\"tid\":0,\"ts\":", name);
    put_us(f, start, base);
    fputs(",\"dur\":", f);
    put_us(f, end, start);
    fputs(",\"args\":{}}", f);
}

static int by_task(const void *a, const void *b)
{
    const PtoTraceRecord *x = a, *y = b;
    if (x->task_id != y->task_id)
        return x->task_id < y->task_id ? -1 : 1;
    return x->start_ns < y->start_ns ? -1 : x->start_ns > y->start_ns;
}

static int write_json(FILE *f, const PtoTraceRecord *recs, uint32_t count, const NativeRunDescriptor *desc,
                      const ChipCallableView *view, const RunTraceSpans *sp, uint64_t finalize_end)
{
    uint64_t base = sp->prepare_start;
    if (base == 0 || (count > 0 && recs[0].start_ns < base)) /* no host stamps: the first task starts at 0 */
        base = count > 0 ? recs[0].start_ns : finalize_end;
    for (uint32_t i = 0; i < count; i++)
        if (recs[i].start_ns < base)
            base = recs[i].start_ns;
    fprintf(f, "{\"traceEvents\":[\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,\"args\":{\"name\":"
               "\"ptorun run %" PRIu64 " (%s)\"}},\n",
            desc->run_id, PTO_VARIANT_NAME);
    fputs("{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,\"args\":{\"name\":\"host\"}}", f);
    /* one named track per logical core that ran a task */
    uint8_t seen[PTO_ARCH_MAX_BLOCKS * 3] = { 0 };
    for (uint32_t i = 0; i < count; i++) {
        uint32_t core = recs[i].core_id;
        if (core >= sizeof seen || seen[core])
            continue;
        seen[core] = 1;
        fprintf(f,
                ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%u,\"args\":{\"name\":\"core %u "
                "(%s)\"}},\n{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":1,\"tid\":%u,\"args\":{"
                "\"sort_index\":%u}}",
                core + 1, core, core % 3 == 0 ? "AIC" : "AIV", core + 1, core + 1);
    }
    put_span(f, "prepare", sp->prepare_start, sp->prepare_end, base);
    put_span(f, "launch", sp->launch_start, sp->launch_end, base);
    put_span(f, "wait", sp->wait_start, sp->wait_end, base);
    put_span(f, "finalize", sp->finalize_start, finalize_end, base);
    put_span(f, "collect", sp->collect_start, finalize_end, base);
    for (uint32_t i = 0; i < count; i++) {
        const PtoTraceRecord *r = &recs[i];
        fputs(",\n{\"name\":", f);
        int child = chip_callable_child_of(view, r->func_id);
        ChipCallableChild c = { 0 };
        if (child >= 0)
            chip_callable_child(view, (uint32_t)child, &c);
        if (child >= 0 && c.name.size > 0) {
            put_json_string(f, chip_callable_blob(view, c.name), c.name.size);
        } else {
            fprintf(f, "\"f%u\"", r->func_id);
        }
        fprintf(f, ",\"cat\":\"task\",\"ph\":\"X\",\"pid\":1,\"tid\":%u,\"ts\":", r->core_id + 1);
        put_us(f, r->start_ns, base);
        fputs(",\"dur\":", f);
        put_us(f, r->end_ns, r->start_ns);
        fprintf(f, ",\"args\":{\"task_id\":%" PRIu64 ",\"func_id\":%u,\"core\":%u}}", r->task_id, r->func_id,
                r->core_id);
    }
    fprintf(f,
            "\n],\n\"displayTimeUnit\":\"ns\",\n\"metadata\":{\"run_id\":%" PRIu64 ",\"generation\":%" PRIu64
            ",\"dispatch_id\":%" PRIu64 ",\"run_epoch\":%" PRIu64 ",\"slot\":%u,\"variant\":\"%s\","
            "\"clock\":\"CLOCK_MONOTONIC\",\"clock_base_ns\":%" PRIu64 ",\"task_count\":%u}}\n",
            desc->run_id, desc->generation, desc->dispatch_id, desc->run_epoch, desc->pipeline_slot,
            PTO_VARIANT_NAME, base, count);
    return ferror(f) ? -1 : 0;
}

typedef struct TraceFile {
    const PtoTraceRecord *recs;
    uint32_t count;
    const NativeRunDescriptor *desc;
    const ChipCallableView *view;
    const RunTraceSpans *spans;
    uint64_t finalize_end;
} TraceFile;

static int write_trace_file(FILE *f, const void *ctx)
{
    const TraceFile *t = ctx;
    return write_json(f, t->recs, t->count, t->desc, t->view, t->spans, t->finalize_end);
}

int run_trace_write(const HostApi *api, const void *buf, const char *output_prefix, const NativeRunDescriptor *desc,
                    const ChipCallableView *view, const RunTraceSpans *spans, NativeRunReport *report)
{
    if (api == NULL || buf == NULL || output_prefix == NULL || desc == NULL || view == NULL)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "trace: NULL HostApi, buffer, output_prefix, descriptor or callable");
    PtoTraceHeader h;
    int rc = host_api_copy_from_device(api, &h, buf, sizeof h);
    if (rc != PTO_OK)
        return rc;
    if (h.magic != PTO_TRACE_MAGIC || h.capacity > RUN_TRACE_MAX_TASKS)
        return pto_fail(PTO_ERR_DEVICE, "collect: the device's trace buffer is malformed");
    if (h.count > h.capacity)
        return pto_fail(PTO_ERR_CAPACITY,
                        "collect: the run made %llu kernel calls; the trace (CallConfig.enable_trace) records at "
                        "most %u tasks, so no trace was written",
                        (unsigned long long)h.count, h.capacity);
    uint32_t count = (uint32_t)h.count;
    PtoTraceRecord *recs = malloc(((size_t)count + 1) * sizeof *recs);
    if (recs == NULL)
        return pto_fail(PTO_ERR_OUT_OF_MEMORY, "collect: out of host memory for the trace (%u tasks)", count);
    if (count > 0 &&
        (rc = host_api_copy_from_device(api, recs, (const uint8_t *)buf + sizeof h, count * sizeof *recs)) != PTO_OK)
        goto out;
    qsort(recs, count, sizeof *recs, by_task);

    char path[PTO_RUN_REPORT_PATH_BYTES];
    if ((rc = run_trace_path(path, sizeof path, output_prefix, desc)) != PTO_OK ||
        (rc = diagnostic_make_directories(output_prefix, "trace")) != PTO_OK)
        goto out;
    static const RunTraceSpans none;
    TraceFile file = { recs, count, desc, view, spans != NULL ? spans : &none, pto_monotonic_ns() };
    rc = diagnostic_write_file(path, "trace", write_trace_file, &file);
    if (rc == PTO_OK)
        diagnostic_record(report, path);
out:
    free(recs);
    return rc;
}

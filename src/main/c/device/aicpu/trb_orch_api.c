/*
 * The orchestration API on the device (PtoOrchApi, docs/device.md,
 * "Orchestration"): submit (trb_submit.c), alloc_tensor and scopes over the
 * ring heaps, read_tensor / write_tensor of run tensors once the tasks that
 * touch them have finished. Called on the orchestrator's thread only, through
 * a handle that is a session of the orchestration call (orch/orch_session.h).
 * Scopes are AUTO or MANUAL (the tensor map keeps a MANUAL scope's accesses
 * apart until it ends, trb_tensor_map.h). subgraph_submit is the generic
 * sub-graph layer's (orch/subgraph.h) over trb_subgraph_task (trb_submit.c).
 * A failed submit, submit_after, alloc_tensor, scope or subgraph_submit call
 * is sticky.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "util/last_error.h"
#include "orch/orch_session.h"
#include "device/aicpu/trb_orch_api.h"
#include "device/aicpu/trb_recording.h"
#include "device/aicpu/trb_scheduler.h"
#include "ptorun/pto_runtime_c_api.h"

/* ---- the calls' common part ------------------------------------------------------------- */

int32_t trb_api_fail(TrbRun *t, int32_t code, const char *fmt, ...)
{
    char message[PTO_TRB_MESSAGE_BYTES];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    if (t->api_error == 0) {
        t->api_error = code;
        memcpy(t->work->message, message, sizeof message);
    }
    return pto_fail(code, "%s", message);
}

TrbRun *trb_api_run(void *orch, const char *fn, int32_t *rc)
{
    TrbRun *t = orch_session_resolve(orch, fn);
    if (t == NULL) {
        *rc = PTO_ERR_INVALID_ARGUMENT;
        return NULL;
    }
    /* the orchestration goes on: a task kept for this thread must not wait for it */
    trb_sched_release_kept(&aicpu_device, t);
    return t;
}

TrbRun *trb_api_begin(void *orch, const char *fn, int32_t *rc)
{
    TrbRun *t = trb_api_run(orch, fn, rc);
    if (t == NULL || t->api_error == 0)
        return t;
    *rc = pto_fail(t->api_error, "%s: refused, an earlier call of this orchestration failed: %s", fn, t->work->message);
    return NULL;
}

/* ---- alloc_tensor and scopes ---------------------------------------------------------------- */

typedef struct HeapRequest {
    uint32_t ring;
    uint64_t bytes, offset, consumed;
} HeapRequest;

static int heap_granted(TrbRun *t, const void *arg)
{
    HeapRequest *q = (HeapRequest *)arg;
    q->consumed = trb_ring_heap_take(&t->rings[q->ring], q->bytes, &q->offset);
    return q->consumed > 0;
}

static int release_record_free(TrbRun *t, const void *arg)
{
    return t->rings[*(const uint32_t *)arg].release_count < TRB_RELEASE_RECORDS;
}

/* With the lock held: the open scope's release record on the ring, created at
   its first allocation. */
static int32_t open_release(AicpuDevice *d, TrbRun *t, uint32_t ring)
{
    TrbRing *r = &t->rings[ring];
    if (ring == 0 || r->open_release >= 0)
        return PTO_OK;
    int32_t rc = trb_orch_wait(d, t, release_record_free, &ring);
    if (rc != PTO_OK)
        return rc;
    uint32_t index = (r->release_head + r->release_count++) % TRB_RELEASE_RECORDS;
    r->releases[index] = (TrbRelease){ 0, 0, 0 };
    r->open_release = (int32_t)index;
    return PTO_OK;
}

static uint64_t api_alloc_tensor(void *orch, uint64_t bytes)
{
    int32_t rc;
    TrbRun *t = trb_api_begin(orch, "alloc_tensor", &rc);
    if (t == NULL)
        return 0;
    AicpuDevice *d = &aicpu_device;
    uint32_t ring = trb_ring_of_depth(t->depth);
    TrbRing *r = &t->rings[ring];
    if (bytes == 0) {
        trb_record_alloc(t, 0, trb_ring_heap_addr(r, 0));
        return trb_ring_heap_addr(r, 0); /* a view of it touches nothing */
    }
    uint64_t aligned = (bytes + PTO_TRB_HEAP_ALIGN - 1) / PTO_TRB_HEAP_ALIGN * PTO_TRB_HEAP_ALIGN;
    if (aligned < bytes || aligned > r->heap_bytes) {
        trb_api_fail(t, PTO_ERR_CAPACITY,
                     "alloc_tensor: %llu bytes can never fit ring %u's heap of %llu bytes (CallConfig.ring_heap[%u])",
                     (unsigned long long)bytes, ring, (unsigned long long)r->heap_bytes, ring);
        return 0;
    }
    pthread_mutex_lock(&d->lock);
    HeapRequest q = { ring, aligned, 0, 0 };
    rc = open_release(d, t, ring);
    if (rc == PTO_OK) {
        uint64_t kept = ring == 0 ? r->heap_used : r->releases[r->open_release].bytes;
        if (trb_ring_largest_piece(r, kept) < aligned)
            rc = trb_api_fail(t, PTO_ERR_CAPACITY,
                              "alloc_tensor: %llu bytes cannot fit ring %u's heap of %llu bytes beside the %llu "
                              "bytes its scope keeps (CallConfig.ring_heap[%u])",
                              (unsigned long long)bytes, ring, (unsigned long long)r->heap_bytes,
                              (unsigned long long)kept, ring);
        else
            rc = trb_orch_wait(d, t, heap_granted, &q);
    }
    if (rc == PTO_OK && ring > 0)
        r->releases[r->open_release].bytes += q.consumed;
    pthread_mutex_unlock(&d->lock);
    if (rc != PTO_OK)
        return 0;
    /* the memory's earlier users have all finished: forget their accesses */
    uint64_t addr = trb_ring_heap_addr(r, q.offset);
    int32_t cls = trb_map_class(&t->map, addr, addr + aligned);
    if (cls >= 0)
        trb_map_purge(&t->map, cls, addr, addr + aligned);
    trb_record_alloc(t, bytes, addr);
    return addr;
}

static int scope_begin(void *orch, const char *fn, uint32_t mode)
{
    int32_t rc;
    TrbRun *t = trb_api_begin(orch, fn, &rc);
    if (t == NULL)
        return rc;
    if (mode != PTO_SCOPE_AUTO && mode != PTO_SCOPE_MANUAL)
        return trb_api_fail(t, PTO_ERR_INVALID_ARGUMENT,
                            "%s: mode %u is neither PTO_SCOPE_AUTO (0) nor PTO_SCOPE_MANUAL (1)", fn, mode);
    if (t->depth >= PTO_TRB_MAX_SCOPE_DEPTH)
        return trb_api_fail(t, PTO_ERR_ORCHESTRATION, "%s: scopes nest at most %u deep", fn, PTO_TRB_MAX_SCOPE_DEPTH);
    t->depth++;
    t->scope_mode[t->depth] = mode;
    t->scope_first[t->depth] = t->submitted;
    if (mode == PTO_SCOPE_MANUAL && t->manual_depth == 0)
        t->manual_depth = t->depth; /* its tasks record apart (trb_map_record_manual) */
    trb_record_scope_begin(t, mode);
    return PTO_OK;
}

static int api_scope_begin(void *orch)
{
    return scope_begin(orch, "scope_begin", PTO_SCOPE_AUTO);
}

static int api_scope_begin_mode(void *orch, uint32_t mode)
{
    return scope_begin(orch, "scope_begin_mode", mode);
}

/* The scope at the current depth ends: at depth <= 3 it owns its ring's
   allocations, freed once its tasks have finished; deeper ones free with depth 3. */
static void end_scope(AicpuDevice *d, TrbRun *t)
{
    if (t->depth >= PTO_TRB_RINGS || t->rings[t->depth].open_release < 0)
        return;
    TrbRing *r = &t->rings[t->depth];
    pthread_mutex_lock(&d->lock);
    r->releases[r->open_release].ended = 1;
    r->open_release = -1;
    trb_ring_release_heap(r);
    pthread_mutex_unlock(&d->lock);
}

static int api_scope_end(void *orch)
{
    int32_t rc;
    TrbRun *t = trb_api_begin(orch, "scope_end", &rc);
    if (t == NULL || t->depth == 0)
        return t == NULL ? rc : trb_api_fail(t, PTO_ERR_ORCHESTRATION, "scope_end without a matching scope_begin");
    if (t->depth == t->manual_depth) {
        t->manual_depth = 0;
        trb_map_commit_manual(&t->map); /* later tasks infer their dependencies on the scope's */
    }
    end_scope(&aicpu_device, t);
    t->depth--;
    trb_record_scope_end(t);
    return PTO_OK;
}

/* ---- read_tensor and write_tensor -------------------------------------------------------------- */

typedef struct Span {
    int32_t cls;
    uint64_t lo, hi;
    int writes;
} Span;

static int pending_access(void *ctx, const PtoTrbAccess *a)
{
    return !trb_task_done(ctx, a->task);
}

static int span_settled(TrbRun *t, const void *arg)
{
    const Span *s = arg;
    return trb_map_overlaps(&t->map, s->cls, s->lo, s->hi, s->writes, pending_access, t) == 0 &&
           trb_map_manual_conflicts(&t->map, s->cls, s->lo, s->hi, NULL, s->writes, pending_access, t) == 0;
}

/* The bytes of a run tensor or ring heap, once every task that writes them
   (and, for a write, reads them) has finished. A zero-length access must lie
   inside one too (as on hbg) and waits for nothing. */
static int32_t settle_span(TrbRun *t, uint64_t addr, uint64_t n, int writes, const char *fn, Span *s)
{
    if (addr + n < addr || (s->cls = trb_map_class(&t->map, addr, addr + n)) < 0)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "%s: [0x%llx, +%llu) is not inside one run tensor or ring heap", fn,
                        (unsigned long long)addr, (unsigned long long)n);
    *s = (Span){ s->cls, addr, addr + n, writes };
    if (n == 0)
        return PTO_OK;
    return trb_orch_await(&aicpu_device, t, span_settled, s);
}

/* read/write_tensor are not sticky: a refused access changes nothing, so the
   library may handle it (and may still read after a failed submit). Copies n
   bytes from `from` to `to` once the bytes at dev_addr have settled. */
static int access_tensor(void *orch, const char *fn, uint64_t dev_addr, uint64_t n, int writes, void *to,
                         const void *from)
{
    int32_t rc;
    TrbRun *t = trb_api_run(orch, fn, &rc);
    if (t == NULL)
        return rc;
    if ((writes ? from : to) == NULL && n > 0)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "%s: NULL %s", fn, writes ? "source" : "destination");
    Span s;
    rc = settle_span(t, dev_addr, n, writes, fn, &s);
    if (rc == PTO_OK && n > 0)
        memcpy(to, from, n);
    return rc;
}

static int api_read_tensor(void *orch, uint64_t dev_addr, void *dst, uint64_t n)
{
    return access_tensor(orch, "read_tensor", dev_addr, n, 0, dst, (const void *)(uintptr_t)dev_addr);
}

static int api_write_tensor(void *orch, uint64_t dev_addr, const void *src, uint64_t n)
{
    return access_tensor(orch, "write_tensor", dev_addr, n, 1, (void *)(uintptr_t)dev_addr, src);
}

/* ---- subgraph_submit ---------------------------------------------------------------------- */

static int api_subgraph_submit(void *orch, uint32_t key, PtoSubgraphBody body, void *ctx,
                               const PtoTaskParam *boundary, uint32_t n)
{
    int32_t rc;
    TrbRun *t = trb_api_begin(orch, "subgraph_submit", &rc);
    if (t == NULL)
        return rc;
    if (t->manual_depth != 0)
        return trb_api_fail(t, PTO_ERR_ORCHESTRATION, "subgraph_submit (key %u): not inside a MANUAL scope", key);
    /* before the invocation's own alloc_tensor and scopes: a run with sub-graphs
       is not recorded whole (its tasks carry no origins) */
    trb_record_lose(t);
    rc = subgraph_invoke(&t->subgraphs, trb_subgraph_task, t, &trb_orch_api, orch, key, body, ctx, boundary, n,
                         NULL /* trb records no whole run with sub-graphs */);
    if (rc != PTO_OK && t->api_error == 0) /* the layer's own refusal or the body's: sticky too */
        return trb_api_fail(t, rc, "%s", pto_last_error());
    return rc;
}

const PtoOrchApi trb_orch_api = {
    .submit = trb_api_submit,
    .alloc_tensor = api_alloc_tensor,
    .scope_begin = api_scope_begin,
    .scope_end = api_scope_end,
    .read_tensor = api_read_tensor,
    .write_tensor = api_write_tensor,
    .scope_begin_mode = api_scope_begin_mode,
    .submit_after = trb_api_submit_after,
    .subgraph_submit = api_subgraph_submit,
};

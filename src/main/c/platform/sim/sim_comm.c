/* The sim's communication group (platform/comm_backend.h): the span group of
 * util/comm_span.h itself, on one host or across hosts. Device memory is host
 * memory, so a window's device address is this process's mapping of it. */
#include <stdlib.h>

#include "platform/comm_backend.h"
#include "ptorun/pto_runtime_c_api.h"
#include "util/comm_span.h"
#include "util/last_error.h"

struct CommBackend {
    CommSpan *group;
};

struct CommWindowSet {
    CommSpanWindows *windows;
};

int comm_backend_join(Runner *r, int rank, int nranks, const char *rootinfo_path, uint32_t timeout_ms,
                      CommBackend **out)
{
    (void)r;
    CommBackend *b = calloc(1, sizeof *b);
    if (b == NULL)
        return pto_fail(PTO_ERR_OUT_OF_MEMORY, "comm_init: out of host memory");
    int rc = comm_span_join(rank, nranks, rootinfo_path, timeout_ms, &b->group);
    if (rc != PTO_OK) {
        free(b);
        return rc;
    }
    *out = b;
    return PTO_OK;
}

void comm_backend_leave(CommBackend *b)
{
    comm_span_leave(b->group);
    free(b);
}

int comm_backend_barrier(CommBackend *b)
{
    return comm_span_barrier(b->group);
}

/* An allocation (slice NULL) or a slice of `slice`'s windows. */
static int alloc(CommBackend *b, uint64_t key, const uint32_t *ranks, size_t count, size_t bytes,
                 const CommWindowSet *slice, size_t offset, CommWindowSet **out)
{
    /* out of host memory here still takes part, so the peers fail too instead of waiting */
    CommWindowSet *w = calloc(1, sizeof *w);
    const int local = w == NULL ? PTO_ERR_OUT_OF_MEMORY : PTO_OK;
    CommSpanWindows *windows = NULL;
    int rc = slice != NULL
                 ? comm_span_alloc_slice(b->group, key, ranks, count, slice->windows, offset, bytes, local, &windows)
                 : comm_span_alloc_windows(b->group, key, ranks, count, bytes, local, &windows);
    if (rc != PTO_OK) {
        free(w);
        return rc;
    }
    w->windows = windows;
    *out = w;
    return PTO_OK;
}

int comm_backend_alloc(CommBackend *b, uint64_t key, const uint32_t *ranks, size_t count, size_t bytes,
                       CommWindowSet **out)
{
    return alloc(b, key, ranks, count, bytes, NULL, 0, out);
}

int comm_backend_alloc_slice(CommBackend *b, uint64_t key, const uint32_t *ranks, size_t count,
                             const CommWindowSet *group, size_t offset, size_t bytes, CommWindowSet **out)
{
    return alloc(b, key, ranks, count, bytes, group, offset, out);
}

void comm_backend_free(CommBackend *b, CommWindowSet *w)
{
    comm_span_windows_free(b->group, w->windows);
    free(w);
}

void comm_backend_addrs(const CommWindowSet *w, size_t i, uint64_t *window, uint64_t *signals)
{
    *window = (uint64_t)(uintptr_t)comm_span_windows_base(w->windows, i);
    *signals = (uint64_t)(uintptr_t)comm_span_windows_signals(w->windows, i);
}

/* The signal blocks are host memory of this process: break them directly. */
int comm_backend_break(CommBackend *b, CommWindowSet *w, uint32_t culprit)
{
    (void)b;
    return comm_span_break(w->windows, culprit);
}

int comm_backend_span(const CommWindowSet *w, PtoCommSpan *out)
{
    return comm_span_describe(w->windows, out);
}

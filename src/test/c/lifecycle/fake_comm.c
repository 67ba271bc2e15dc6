/* The platform half of the comm group for lifecycle_tests (platform/comm_backend.h):
 * one process, one rank (nranks 1), windows in host memory, so the exported comm
 * calls of common/comm.c run whole against the fake device. The windows the
 * context registers are counted, so a test can see them come and go. */
#include <stdlib.h>

#include "fake_device.h"
#include "platform/comm_backend.h"
#include "ptorun/pto_comm.h"
#include "util/comm_signal.h"
#include "util/last_error.h"

struct CommBackend {
    int rank;
};

struct CommWindowSet {
    void *window;
    uint32_t *signals;
    unsigned char *slice; /* a slice's window (in its group's): not freed */
};

int fake_comm_windows_registered;

int runner_add_window(Runner *r, uint64_t dev, size_t n)
{
    (void)r, (void)dev, (void)n;
    __atomic_add_fetch(&fake_comm_windows_registered, 1, __ATOMIC_SEQ_CST);
    return PTO_OK;
}

void runner_remove_window(Runner *r, uint64_t dev)
{
    (void)r, (void)dev;
    __atomic_sub_fetch(&fake_comm_windows_registered, 1, __ATOMIC_SEQ_CST);
}

int comm_backend_join(Runner *r, int rank, int nranks, const char *rootinfo_path, uint32_t timeout_ms,
                      CommBackend **out)
{
    (void)r, (void)rootinfo_path, (void)timeout_ms;
    if (nranks != 1)
        return pto_fail(PTO_ERR_TIMEOUT, "comm: rank 1 did not arrive (the fake has one rank)");
    CommBackend *b = calloc(1, sizeof *b);
    if (b == NULL)
        return pto_fail(PTO_ERR_OUT_OF_MEMORY, "fake comm: out of memory");
    b->rank = rank;
    *out = b;
    return PTO_OK;
}

void comm_backend_leave(CommBackend *b)
{
    free(b);
}

int comm_backend_barrier(CommBackend *b)
{
    (void)b;
    return PTO_OK;
}

int comm_backend_alloc(CommBackend *b, uint64_t key, const uint32_t *ranks, size_t count, size_t bytes,
                       CommWindowSet **out)
{
    (void)b, (void)key, (void)ranks;
    if (count != 1)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "fake comm: one rank only");
    CommWindowSet *w = calloc(1, sizeof *w);
    if (w == NULL)
        return pto_fail(PTO_ERR_OUT_OF_MEMORY, "fake comm: out of memory");
    w->window = calloc(1, bytes > 0 ? bytes : 1);
    w->signals = calloc(PTO_COMM_SIGNAL_WORDS, sizeof *w->signals);
    if (w->window == NULL || w->signals == NULL) {
        free(w->window);
        free(w->signals);
        free(w);
        return pto_fail(PTO_ERR_OUT_OF_MEMORY, "fake comm: out of memory");
    }
    *out = w;
    return PTO_OK;
}

int comm_backend_alloc_slice(CommBackend *b, uint64_t key, const uint32_t *ranks, size_t count,
                             const CommWindowSet *group, size_t offset, size_t bytes, CommWindowSet **out)
{
    (void)bytes;
    int rc = comm_backend_alloc(b, key, ranks, count, 0, out);
    if (rc == PTO_OK)
        (*out)->slice = (unsigned char *)group->window + offset;
    return rc;
}

void comm_backend_free(CommBackend *b, CommWindowSet *w)
{
    (void)b;
    free(w->window);
    free(w->signals);
    free(w);
}

void comm_backend_addrs(const CommWindowSet *w, size_t i, uint64_t *window, uint64_t *signals)
{
    (void)i;
    *window = (uint64_t)(uintptr_t)(w->slice != NULL ? w->slice : w->window);
    *signals = (uint64_t)(uintptr_t)w->signals;
}

int comm_backend_break(CommBackend *b, CommWindowSet *w, uint32_t culprit)
{
    (void)b;
    PtoCommDeviceContext c = { .magic = PTO_COMM_CTX_MAGIC, .nranks = 1, .signals = { (uint64_t)(uintptr_t)w->signals } };
    pto_comm_break(&c, culprit);
    return PTO_OK;
}

int comm_backend_span(const CommWindowSet *w, PtoCommSpan *out)
{
    (void)w;
    (void)out;
    return 0;
}

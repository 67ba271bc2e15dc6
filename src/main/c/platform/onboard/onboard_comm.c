/* The onboard communication group (platform/comm_backend.h): through the
 * driver ABI's comm entries only. The driver's own message (comm_last_message)
 * names the rank a timeout or a lost peer is about; it is carried into ours. */
#include <stdlib.h>

#include "platform/comm_backend.h"
#include "platform/onboard/onboard_runner.h"
#include "ptorun/pto_runtime_c_api.h"
#include "util/last_error.h"

struct CommBackend {
    Runner *runner;
    PtoDrvComm *comm;
};

struct CommWindowSet {
    PtoDrvWindows *windows;
    size_t count;
    uint64_t *addrs; /* window, signals per member */
    int span;        /* the driver's comm_window_span: 1 across hosts */
    PtoCommSpan span_info;
};

static const PtoDriverApi *api_of(const CommBackend *b)
{
    return b->runner->driver.api;
}

static int comm_code(int drv_rc)
{
    switch (drv_rc) {
    case PTO_DRV_ERR_OUT_OF_MEMORY: return PTO_ERR_OUT_OF_MEMORY;
    case PTO_DRV_ERR_TIMEOUT: return PTO_ERR_TIMEOUT;
    case PTO_DRV_ERR_INVALID: return PTO_ERR_INVALID_ARGUMENT;
    case PTO_DRV_ERR_UNSUPPORTED: return PTO_RUNTIME_ERR_UNSUPPORTED;
    case PTO_DRV_ERR_MISMATCH: return PTO_ERR_RANKS_DISAGREE;
    default: return PTO_ERR_DEVICE; /* a peer lost, the group broken, this device lost */
    }
}

static int comm_fail(const PtoDriverApi *api, int device_id, int drv_rc, const char *what)
{
    const char *detail = api->comm_last_message();
    return pto_fail(comm_code(drv_rc), "onboard device %d: %s failed: %s (%d)%s%s", device_id, what,
                    api->error_string(drv_rc), drv_rc, detail[0] != '\0' ? ": " : "", detail);
}

int comm_backend_join(Runner *r, int rank, int nranks, const char *rootinfo_path, uint32_t timeout_ms,
                      CommBackend **out)
{
    CommBackend *b = calloc(1, sizeof *b);
    if (b == NULL)
        return pto_fail(PTO_ERR_OUT_OF_MEMORY, "comm_init: out of host memory");
    b->runner = r;
    int drc = r->driver.api->comm_join(r->dev, rank, nranks, rootinfo_path, timeout_ms, &b->comm);
    if (drc != PTO_DRV_OK) {
        int rc = comm_fail(r->driver.api, r->core.device_id, drc, "comm_join");
        free(b);
        return rc;
    }
    *out = b;
    return PTO_OK;
}

void comm_backend_leave(CommBackend *b)
{
    (void)api_of(b)->comm_leave(b->comm); /* the driver releases everything whatever it reports */
    free(b);
}

int comm_backend_barrier(CommBackend *b)
{
    int drc = api_of(b)->comm_barrier(b->comm);
    return drc == PTO_DRV_OK ? PTO_OK : comm_fail(api_of(b), b->runner->core.device_id, drc, "comm_barrier");
}

/* The driver's windows as a CommWindowSet: every member's addresses and the
   span, read once; on failure the driver's windows are freed. */
static int adopt(CommBackend *b, PtoDrvWindows *windows, size_t count, CommWindowSet **out)
{
    const PtoDriverApi *api = api_of(b);
    int rc = PTO_ERR_OUT_OF_MEMORY, drc;
    CommWindowSet *w = calloc(1, sizeof *w);
    uint64_t *addrs = calloc(2 * count, sizeof *addrs);
    if (w == NULL || addrs == NULL) {
        pto_fail(rc, "comm: out of host memory");
        goto fail;
    }
    for (size_t i = 0; i < count; i++) {
        drc = api->comm_window_addrs(windows, i, &addrs[2 * i], &addrs[2 * i + 1]);
        if (drc != PTO_DRV_OK) {
            rc = comm_fail(api, b->runner->core.device_id, drc, "comm_window_addrs");
            goto fail;
        }
    }
    drc = api->comm_window_span(windows, &w->span_info);
    if (drc < 0) {
        rc = comm_fail(api, b->runner->core.device_id, drc, "comm_window_span");
        goto fail;
    }
    w->span = drc;
    w->windows = windows;
    w->count = count;
    w->addrs = addrs;
    *out = w;
    return PTO_OK;

fail:
    free(addrs);
    free(w);
    (void)api->comm_window_free(b->comm, windows);
    return rc;
}

int comm_backend_alloc(CommBackend *b, uint64_t key, const uint32_t *ranks, size_t count, size_t bytes,
                       CommWindowSet **out)
{
    PtoDrvWindows *windows = NULL;
    int drc = api_of(b)->comm_window_alloc(b->comm, key, ranks, count, bytes, &windows);
    if (drc != PTO_DRV_OK)
        return comm_fail(api_of(b), b->runner->core.device_id, drc, "comm_window_alloc");
    return adopt(b, windows, count, out);
}

int comm_backend_alloc_slice(CommBackend *b, uint64_t key, const uint32_t *ranks, size_t count,
                             const CommWindowSet *group, size_t offset, size_t bytes, CommWindowSet **out)
{
    PtoDrvWindows *windows = NULL;
    int drc = api_of(b)->comm_window_slice(b->comm, key, ranks, count, group->windows, offset, bytes, &windows);
    if (drc != PTO_DRV_OK)
        return comm_fail(api_of(b), b->runner->core.device_id, drc, "comm_window_slice");
    return adopt(b, windows, count, out);
}

void comm_backend_free(CommBackend *b, CommWindowSet *w)
{
    (void)api_of(b)->comm_window_free(b->comm, w->windows);
    free(w->addrs);
    free(w);
}

void comm_backend_addrs(const CommWindowSet *w, size_t i, uint64_t *window, uint64_t *signals)
{
    *window = w->addrs[2 * i];
    *signals = w->addrs[2 * i + 1];
}

/* Only the driver reaches the signal blocks (device memory, peers' included):
   its comm_window_break does what pto_comm_break does, on the device's side. */
int comm_backend_break(CommBackend *b, CommWindowSet *w, uint32_t culprit)
{
    int drc = api_of(b)->comm_window_break(b->comm, w->windows, culprit);
    return drc == PTO_DRV_OK ? PTO_OK : comm_fail(api_of(b), b->runner->core.device_id, drc, "comm_window_break");
}

int comm_backend_span(const CommWindowSet *w, PtoCommSpan *out)
{
    if (w->span)
        *out = w->span_info;
    return w->span;
}

/* The exported communication group (docs/communication.md): argument checks,
 * the handle registry, the domains of a rank and their device-side
 * descriptors. The platform half (platform/comm_backend.h) joins, meets and
 * maps windows; this half decides what a call means.
 *
 * A handle is one rank. Its domains: the group's windows (comm_alloc_windows,
 * once), derived contexts (slices of those windows, fresh signal blocks) and
 * domain windows (fresh windows for a subset of ranks, released by id). Each
 * domain has a PtoCommDeviceContext in this device's memory, written once, and
 * its windows registered with the runner so copies and child_memory tensors
 * may use them. Calls on one handle are serialized by its lock; the registry
 * refuses stale handles and makes comm_destroy wait for calls in flight.
 *
 * A failed run breaks the domains its scalars name (common/comm_run.h), and
 * comm_break_domain breaks one on request: neither takes the handle's lock (a
 * barrier may hold it for the whole timeout). They walk the registry under
 * registry_lock instead, which is why a handle's domain list is linked and
 * unlinked under registry_lock too, and comm_destroy marks the handle dying
 * (under it) before it frees a domain. */
#include <limits.h>
#include <stddef.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/comm_run.h"
#include "common/device_context.h"
#include "platform/comm_backend.h"
#include "ptorun/pto_comm.h"
#include "ptorun/pto_runtime_c_api.h"
#include "util/last_error.h"

#define COMM_HANDLE_MAGIC 0x50544F434F4D4D31ull /* "PTOCOMM1" */
/* Keys of the platform's allocations: one space, three kinds. */
#define COMM_KEY_GROUP 1ull
#define COMM_KEY_DERIVED (1ull << 62)
#define COMM_KEY_DOMAIN (1ull << 63)
#define COMM_ID_LIMIT (1ull << 62)

typedef enum CommDomainKind { DOMAIN_GROUP, DOMAIN_DERIVED, DOMAIN_ALLOCATED } CommDomainKind;

typedef struct CommDomain {
    struct CommDomain *next;
    CommDomainKind kind;
    uint64_t key;
    uint32_t rank_count, domain_rank;
    uint32_t ranks[PTO_COMM_MAX_RANKS]; /* group rank of each domain rank */
    CommWindowSet *set;
    size_t window_bytes;
    uint64_t windows[PTO_COMM_MAX_RANKS];
    uint64_t device_ctx;                /* its PtoCommDeviceContext in device memory */
} CommDomain;

typedef struct CommHandle {
    uint64_t magic;
    struct CommHandle *next;            /* registry */
    unsigned users;                     /* registry: calls in flight */
    int dying;                          /* registry: comm_destroy is under way */
    pthread_mutex_t lock;               /* serializes the calls on this rank */
    DeviceContext *dc;
    int rank, nranks;
    uint32_t timeout_ms;
    CommBackend *backend;
    CommDomain *domains;
    CommDomain *group;                  /* the group's windows, once allocated */
} CommHandle;

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t registry_cond = PTHREAD_COND_INITIALIZER;
static CommHandle *registry;

static void comm_release(CommHandle *h)
{
    pthread_mutex_unlock(&h->lock);
    pthread_mutex_lock(&registry_lock);
    if (--h->users == 0)
        pthread_cond_broadcast(&registry_cond);
    pthread_mutex_unlock(&registry_lock);
}

/* A use of a live handle, or NULL with a message; pair with comm_release. */
static CommHandle *comm_acquire(void *comm, const char *fn)
{
    pthread_mutex_lock(&registry_lock);
    CommHandle *h = registry;
    while (h != NULL && (void *)h != comm)
        h = h->next;
    if (h != NULL && !h->dying)
        h->users++;
    else
        h = NULL;
    pthread_mutex_unlock(&registry_lock);
    if (h == NULL) {
        pto_fail(PTO_ERR_INVALID_ARGUMENT, "%s: %s is not a live comm handle", fn, comm == NULL ? "NULL" : "the handle");
        return NULL;
    }
    pthread_mutex_lock(&h->lock);
    if (h->backend == NULL) { /* comm_destroy got the lock first */
        comm_release(h);
        pto_fail(PTO_ERR_INVALID_ARGUMENT, "%s: the comm handle was destroyed", fn);
        return NULL;
    }
    return h;
}

/* ---- domains ---------------------------------------------------------------- */

static CommDomain *find_domain(CommHandle *h, uint64_t key)
{
    for (CommDomain *d = h->domains; d != NULL; d = d->next)
        if (d->key == key)
            return d;
    return NULL;
}

/* A descriptor and, for a domain across hosts, its PtoCommSpan right after it
   (ptorun/pto_comm.h), as written into device memory. */
typedef struct DescriptorImage {
    PtoCommDeviceContext desc;
    PtoCommSpan span;
} DescriptorImage;

/* Writes the domain's descriptor into this device's memory. */
static int write_descriptor(CommHandle *h, CommDomain *d)
{
    DescriptorImage image = {
        .desc = {
            .magic = PTO_COMM_CTX_MAGIC,
            .rank = d->domain_rank,
            .nranks = d->rank_count,
            .timeout_ms = h->timeout_ms,
            .window_size = d->window_bytes,
        },
    };
    for (uint32_t i = 0; i < d->rank_count; i++) {
        uint64_t window, signals;
        comm_backend_addrs(d->set, i, &window, &signals);
        image.desc.windows[i] = d->windows[i];
        image.desc.signals[i] = signals;
    }
    const int spans = comm_backend_span(d->set, &image.span);
    size_t bytes = spans ? sizeof image : sizeof image.desc;
    if (spans) {
        for (uint32_t n = 0; n < image.span.local.nranks; n++)
            image.span.local.windows[n] = d->windows[image.span.local_rank[n]];
        image.span.local.magic = PTO_COMM_CTX_MAGIC;
        image.span.local.timeout_ms = h->timeout_ms;
        image.span.local.window_size = d->window_bytes;
    }
    void *dev = runner_device_malloc(h->dc->runner, bytes);
    if (dev == NULL)
        return pto_last_error_code() != 0 ? pto_last_error_code() : PTO_ERR_OUT_OF_MEMORY;
    if (spans)
        image.desc.span = (uint64_t)(uintptr_t)dev + offsetof(DescriptorImage, span);
    int rc = runner_copy_to_device(h->dc->runner, dev, &image, bytes);
    if (rc != PTO_OK) {
        runner_device_free(h->dc->runner, dev);
        return rc;
    }
    d->device_ctx = (uint64_t)(uintptr_t)dev;
    return PTO_OK;
}

/* Fresh windows are registered with the runner; a derived domain slices the
   group's, and a signals-only domain has none. */
static int owns_windows(const CommDomain *d)
{
    return d->kind != DOMAIN_DERIVED && d->window_bytes != 0;
}

static void unregister_windows(CommHandle *h, CommDomain *d, uint32_t count)
{
    for (uint32_t i = 0; i < count; i++)
        runner_remove_window(h->dc->runner, d->windows[i]);
}

static int register_windows(CommHandle *h, CommDomain *d)
{
    if (!owns_windows(d))
        return PTO_OK;
    for (uint32_t i = 0; i < d->rank_count; i++) {
        int rc = runner_add_window(h->dc->runner, d->windows[i], d->window_bytes);
        if (rc != PTO_OK) {
            unregister_windows(h, d, i);
            return rc;
        }
    }
    return PTO_OK;
}

/* The windows leave the runner's table (waiting for copies into them) before
 * the backend unmaps them. */
static void free_domain(CommHandle *h, CommDomain *d)
{
    runner_device_free(h->dc->runner, (void *)(uintptr_t)d->device_ctx);
    if (owns_windows(d))
        unregister_windows(h, d, d->rank_count);
    comm_backend_free(h->backend, d->set);
    free(d);
}

/* Collective over d->ranks: the platform's allocation (a derived domain's: a
 * slice of the group's windows from `slice_offset`), this rank's view of every
 * member's window, the descriptor. On success d joins the handle. */
static int open_domain(CommHandle *h, const char *fn, CommDomain *d, size_t slice_offset)
{
    int rc = d->kind == DOMAIN_DERIVED
                 ? comm_backend_alloc_slice(h->backend, d->key, d->ranks, d->rank_count, h->group->set, slice_offset,
                                            d->window_bytes, &d->set)
                 : comm_backend_alloc(h->backend, d->key, d->ranks, d->rank_count, d->window_bytes, &d->set);
    if (rc == PTO_ERR_RANKS_DISAGREE) {
        /* the same words on every platform: the backend's own lead (the
           driver's, the sim's) would differ, and the first rank named must be
           the odd one */
        const char *why = strstr(pto_last_error(), "the ranks disagree");
        char text[512];
        snprintf(text, sizeof text, "%s", why != NULL ? why : pto_last_error());
        rc = pto_fail(rc, "%s: %s", fn, text);
    }
    if (rc != PTO_OK)
        goto fail_alloc;
    for (uint32_t i = 0; i < d->rank_count; i++) {
        uint64_t signals;
        comm_backend_addrs(d->set, i, &d->windows[i], &signals);
    }
    if ((rc = register_windows(h, d)) != PTO_OK)
        goto fail_register;
    if ((rc = write_descriptor(h, d)) != PTO_OK)
        goto fail_descriptor;
    pthread_mutex_lock(&registry_lock); /* breakers walk the list under it */
    d->next = h->domains;
    h->domains = d;
    pthread_mutex_unlock(&registry_lock);
    return PTO_OK;

fail_descriptor:
    if (owns_windows(d))
        unregister_windows(h, d, d->rank_count);
fail_register:
    comm_backend_free(h->backend, d->set);
fail_alloc:
    free(d);
    return rc;
}

/* A domain over rank_ids with this rank at domain_rank, every argument checked. */
static int new_domain(CommHandle *h, const char *fn, CommDomainKind kind, const uint32_t *rank_ids, size_t rank_count,
                      uint32_t domain_rank, size_t window_bytes, CommDomain **out)
{
    if (rank_ids == NULL)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "%s: rank_ids is NULL", fn);
    if (rank_count < 1 || rank_count > (size_t)h->nranks)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "%s: rank_count %zu; 1..%d allowed", fn, rank_count, h->nranks);
    if (domain_rank >= rank_count)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "%s: domain_rank %u is not below rank_count %zu", fn, domain_rank,
                        rank_count);
    uint32_t seen = 0;
    for (size_t i = 0; i < rank_count; i++) {
        if (rank_ids[i] >= (uint32_t)h->nranks)
            return pto_fail(PTO_ERR_INVALID_ARGUMENT, "%s: rank_ids[%zu] = %u is not a rank of the group of %d", fn, i,
                            rank_ids[i], h->nranks);
        if (seen & (1u << rank_ids[i]))
            return pto_fail(PTO_ERR_INVALID_ARGUMENT, "%s: rank %u is listed twice", fn, rank_ids[i]);
        seen |= 1u << rank_ids[i];
    }
    if (rank_ids[domain_rank] != (uint32_t)h->rank)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "%s: rank_ids[domain_rank %u] is %u, not this rank (%d)", fn,
                        domain_rank, rank_ids[domain_rank], h->rank);
    CommDomain *d = calloc(1, sizeof *d);
    if (d == NULL)
        return pto_fail(PTO_ERR_OUT_OF_MEMORY, "%s: out of host memory", fn);
    d->kind = kind;
    d->rank_count = (uint32_t)rank_count;
    d->domain_rank = domain_rank;
    memcpy(d->ranks, rank_ids, rank_count * sizeof *rank_ids);
    d->window_bytes = window_bytes;
    *out = d;
    return PTO_OK;
}

static int need_out(const void *p, const char *fn, const char *what)
{
    return p != NULL ? PTO_OK : pto_fail(PTO_ERR_INVALID_ARGUMENT, "%s: %s is NULL", fn, what);
}

static int need_group_windows(const CommHandle *h, const char *fn)
{
    return h->group != NULL ? PTO_OK
                            : pto_fail(PTO_ERR_WRONG_PHASE, "%s: the group has no windows yet (comm_alloc_windows)", fn);
}

/* ---- exported --------------------------------------------------------------- */

/* NULL cannot say why: the message leads with the code, "(<code>) ...", as
 * device_malloc_ctx's does. */
static void *refuse_init(void)
{
    int code = pto_last_error_code() != 0 ? pto_last_error_code() : PTO_ERR_FAILED;
    pto_fail(code, "(%d) %s", code, pto_last_error());
    return NULL;
}

void *comm_init(void *ctx, int rank, int nranks, const char *rootinfo_path, uint32_t timeout_ms)
{
    pto_clear_error();
    DeviceContext *dc = device_context_from(ctx, "comm_init");
    if (dc == NULL)
        return refuse_init();
    if (nranks < 1 || nranks > (int)PTO_COMM_MAX_RANKS) {
        pto_fail(PTO_ERR_INVALID_ARGUMENT, "comm_init: nranks %d; 1..%u allowed", nranks, PTO_COMM_MAX_RANKS);
        return refuse_init();
    }
    if (rank < 0 || rank >= nranks) {
        pto_fail(PTO_ERR_INVALID_ARGUMENT, "comm_init: rank %d is not in [0, %d)", rank, nranks);
        return refuse_init();
    }
    if (rootinfo_path == NULL || rootinfo_path[0] == '\0' || strlen(rootinfo_path) >= PATH_MAX - 64) {
        pto_fail(PTO_ERR_INVALID_ARGUMENT, "comm_init: rootinfo_path is %s",
                 rootinfo_path == NULL ? "NULL" : rootinfo_path[0] == '\0' ? "empty" : "too long");
        return refuse_init();
    }
    CommHandle *h = calloc(1, sizeof *h);
    if (h == NULL) {
        pto_fail(PTO_ERR_OUT_OF_MEMORY, "comm_init: out of host memory");
        return refuse_init();
    }
    h->magic = COMM_HANDLE_MAGIC;
    h->dc = dc;
    h->rank = rank;
    h->nranks = nranks;
    h->timeout_ms = timeout_ms != 0 ? timeout_ms : (uint32_t)PTO_DEFAULT_TIMEOUT_MS;
    if (pthread_mutex_init(&h->lock, NULL) != 0) {
        pto_fail(PTO_ERR_OUT_OF_MEMORY, "comm_init: cannot create a lock");
        goto fail_lock;
    }
    if (device_context_comm_join(dc, "comm_init") != PTO_OK)
        goto fail_context;
    if (comm_backend_join(dc->runner, rank, nranks, rootinfo_path, h->timeout_ms, &h->backend) != PTO_OK)
        goto fail_join;
    pthread_mutex_lock(&registry_lock);
    h->next = registry;
    registry = h;
    pthread_mutex_unlock(&registry_lock);
    return h;

fail_join:
    device_context_comm_unjoin(dc);
fail_context:
    pthread_mutex_destroy(&h->lock);
fail_lock:
    free(h);
    return refuse_init();
}

int comm_alloc_windows(void *comm, size_t win_size, uint64_t *device_ctx_out)
{
    pto_clear_error();
    static const char fn[] = "comm_alloc_windows";
    CommHandle *h = comm_acquire(comm, fn);
    if (h == NULL)
        return PTO_ERR_INVALID_ARGUMENT;
    int rc = need_out(device_ctx_out, fn, "device_ctx_out");
    if (rc == PTO_OK && h->group != NULL)
        rc = pto_fail(PTO_ERR_WRONG_PHASE, "%s: the group's windows are already allocated", fn);
    if (rc == PTO_OK && win_size == 0)
        rc = pto_fail(PTO_ERR_INVALID_ARGUMENT, "%s: win_size 0", fn);
    uint32_t all[PTO_COMM_MAX_RANKS];
    for (int i = 0; i < h->nranks; i++)
        all[i] = (uint32_t)i;
    CommDomain *d = NULL;
    if (rc == PTO_OK)
        rc = new_domain(h, fn, DOMAIN_GROUP, all, (size_t)h->nranks, (uint32_t)h->rank, win_size, &d);
    if (rc == PTO_OK) {
        d->key = COMM_KEY_GROUP;
        rc = open_domain(h, fn, d, 0);
    }
    if (rc == PTO_OK) {
        h->group = d;
        *device_ctx_out = d->device_ctx;
    }
    comm_release(h);
    return rc;
}

int comm_get_local_window_base(void *comm, uint64_t *base_out)
{
    pto_clear_error();
    static const char fn[] = "comm_get_local_window_base";
    CommHandle *h = comm_acquire(comm, fn);
    if (h == NULL)
        return PTO_ERR_INVALID_ARGUMENT;
    int rc = need_out(base_out, fn, "base_out");
    if (rc == PTO_OK)
        rc = need_group_windows(h, fn);
    if (rc == PTO_OK)
        *base_out = h->group->windows[h->rank];
    comm_release(h);
    return rc;
}

int comm_get_window_size(void *comm, size_t *size_out)
{
    pto_clear_error();
    static const char fn[] = "comm_get_window_size";
    CommHandle *h = comm_acquire(comm, fn);
    if (h == NULL)
        return PTO_ERR_INVALID_ARGUMENT;
    int rc = need_out(size_out, fn, "size_out");
    if (rc == PTO_OK)
        rc = need_group_windows(h, fn);
    if (rc == PTO_OK)
        *size_out = h->group->window_bytes;
    comm_release(h);
    return rc;
}

/* Every member derives the same domain with the same arguments, so the key
 * they agree on is a hash of them; a second identical derive is refused. */
static uint64_t derived_key(const uint32_t *rank_ids, size_t rank_count, size_t offset, size_t size)
{
    uint64_t words[3 + PTO_COMM_MAX_RANKS] = { rank_count, offset, size };
    for (size_t i = 0; i < rank_count; i++)
        words[3 + i] = rank_ids[i];
    uint64_t hash = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < 3 + rank_count; i++)
        for (int b = 0; b < 64; b += 8) {
            hash ^= (words[i] >> b) & 0xff;
            hash *= 0x100000001b3ull;
        }
    return COMM_KEY_DERIVED | (hash & (COMM_KEY_DERIVED - 1));
}

int comm_derive_context(void *comm, const uint32_t *rank_ids, size_t rank_count, uint32_t domain_rank,
                        size_t window_offset, size_t window_size, uint64_t *device_ctx_out)
{
    pto_clear_error();
    static const char fn[] = "comm_derive_context";
    CommHandle *h = comm_acquire(comm, fn);
    if (h == NULL)
        return PTO_ERR_INVALID_ARGUMENT;
    int rc = need_out(device_ctx_out, fn, "device_ctx_out");
    if (rc == PTO_OK)
        rc = need_group_windows(h, fn);
    if (rc == PTO_OK && (window_size == 0 || window_offset > h->group->window_bytes ||
                         window_size > h->group->window_bytes - window_offset))
        rc = pto_fail(PTO_ERR_INVALID_ARGUMENT, "%s: the slice [%zu, +%zu) is empty or leaves the window of %zu bytes",
                      fn, window_offset, window_size, h->group->window_bytes);
    CommDomain *d = NULL;
    if (rc == PTO_OK)
        rc = new_domain(h, fn, DOMAIN_DERIVED, rank_ids, rank_count, domain_rank, window_size, &d);
    if (rc == PTO_OK) {
        d->key = derived_key(rank_ids, rank_count, window_offset, window_size);
        if (find_domain(h, d->key) != NULL) {
            free(d);
            rc = pto_fail(PTO_ERR_INVALID_ARGUMENT, "%s: an identical context was derived already; use it", fn);
        } else {
            rc = open_domain(h, fn, d, window_offset);
        }
    }
    if (rc == PTO_OK)
        *device_ctx_out = d->device_ctx;
    comm_release(h);
    return rc;
}

int comm_alloc_domain_windows(void *comm, uint64_t allocation_id, const uint32_t *rank_ids, size_t rank_count,
                              uint32_t domain_rank, size_t window_size, uint64_t *device_ctx_out,
                              uint64_t *local_window_base_out)
{
    pto_clear_error();
    static const char fn[] = "comm_alloc_domain_windows";
    CommHandle *h = comm_acquire(comm, fn);
    if (h == NULL)
        return PTO_ERR_INVALID_ARGUMENT;
    int rc = need_out(device_ctx_out, fn, "device_ctx_out");
    if (rc == PTO_OK)
        rc = need_out(local_window_base_out, fn, "local_window_base_out");
    if (rc == PTO_OK && window_size == 0)
        rc = pto_fail(PTO_ERR_INVALID_ARGUMENT, "%s: window_size 0", fn);
    if (rc == PTO_OK && allocation_id >= COMM_ID_LIMIT)
        rc = pto_fail(PTO_ERR_INVALID_ARGUMENT, "%s: allocation_id %llu is not below 2^62", fn,
                      (unsigned long long)allocation_id);
    if (rc == PTO_OK && find_domain(h, COMM_KEY_DOMAIN | allocation_id) != NULL)
        rc = pto_fail(PTO_ERR_INVALID_ARGUMENT, "%s: allocation_id %llu is in use", fn,
                      (unsigned long long)allocation_id);
    CommDomain *d = NULL;
    if (rc == PTO_OK)
        rc = new_domain(h, fn, DOMAIN_ALLOCATED, rank_ids, rank_count, domain_rank, window_size, &d);
    if (rc == PTO_OK) {
        d->key = COMM_KEY_DOMAIN | allocation_id;
        rc = open_domain(h, fn, d, 0);
    }
    if (rc == PTO_OK) {
        *device_ctx_out = d->device_ctx;
        *local_window_base_out = d->windows[domain_rank];
    }
    comm_release(h);
    return rc;
}

int comm_release_domain_windows(void *comm, uint64_t allocation_id, size_t rank_count, uint32_t domain_rank)
{
    pto_clear_error();
    static const char fn[] = "comm_release_domain_windows";
    CommHandle *h = comm_acquire(comm, fn);
    if (h == NULL)
        return PTO_ERR_INVALID_ARGUMENT;
    int rc = PTO_OK;
    CommDomain **link = &h->domains;
    while (*link != NULL && (*link)->key != (COMM_KEY_DOMAIN | allocation_id))
        link = &(*link)->next;
    CommDomain *d = allocation_id < COMM_ID_LIMIT ? *link : NULL;
    if (d == NULL)
        rc = pto_fail(PTO_ERR_INVALID_ARGUMENT, "%s: no domain windows with allocation_id %llu", fn,
                      (unsigned long long)allocation_id);
    else if (d->rank_count != rank_count || d->domain_rank != domain_rank)
        rc = pto_fail(PTO_ERR_INVALID_ARGUMENT, "%s: allocation %llu has %u ranks with this one at %u, not %zu and %u",
                      fn, (unsigned long long)allocation_id, d->rank_count, d->domain_rank, rank_count, domain_rank);
    else if (device_context_outstanding_runs(h->dc) != 0)
        rc = pto_fail(PTO_ERR_BUSY, "%s: native runs are outstanding and may use the windows; finalize them first", fn);
    if (rc == PTO_OK) {
        pthread_mutex_lock(&registry_lock); /* breakers walk the list under it */
        *link = d->next;
        pthread_mutex_unlock(&registry_lock);
        free_domain(h, d);
    }
    comm_release(h);
    return rc;
}

/* ---- breaking domains: failed runs, comm_break_domain -------------------------- */

/* Breaks d naming this rank (registry_lock held, h not dying). */
static int break_domain(CommHandle *h, CommDomain *d)
{
    return comm_backend_break(h->backend, d->set, d->domain_rank);
}

void comm_run_note(DeviceContext *dc, const uint64_t *scalars, size_t count, RunCommDomains *out)
{
    out->count = 0;
    if (__atomic_load_n(&dc->comm_groups, __ATOMIC_ACQUIRE) == 0 || count == 0)
        return; /* the usual run: no group over this context */
    pthread_mutex_lock(&registry_lock);
    for (CommHandle *h = registry; h != NULL; h = h->next) {
        if (h->dc != dc || h->dying)
            continue;
        for (CommDomain *d = h->domains; d != NULL && out->count < PTO_RUN_COMM_DOMAINS; d = d->next)
            for (size_t i = 0; i < count; i++)
                if (scalars[i] == d->device_ctx) {
                    out->device_ctx[out->count++] = d->device_ctx;
                    break;
                }
    }
    pthread_mutex_unlock(&registry_lock);
}

void comm_run_break(DeviceContext *dc, RunCommDomains *named)
{
    if (named->count == 0)
        return;
    /* a backend's refusal records a message: the run's own stays the thread's */
    int code = pto_last_error_code();
    char saved[PTO_ERROR_MESSAGE_BYTES];
    snprintf(saved, sizeof saved, "%s", pto_last_error());
    pthread_mutex_lock(&registry_lock);
    for (CommHandle *h = registry; h != NULL; h = h->next) {
        if (h->dc != dc || h->dying)
            continue;
        for (CommDomain *d = h->domains; d != NULL; d = d->next)
            for (uint32_t i = 0; i < named->count; i++)
                if (named->device_ctx[i] == d->device_ctx) {
                    (void)break_domain(h, d); /* best effort: the run failed either way */
                    break;
                }
    }
    pthread_mutex_unlock(&registry_lock);
    named->count = 0;
    if (code != 0)
        pto_fail(code, "%s", saved);
    else
        pto_clear_error();
}

int comm_break_domain(void *comm, uint64_t device_ctx)
{
    pto_clear_error();
    static const char fn[] = "comm_break_domain";
    pthread_mutex_lock(&registry_lock);
    CommHandle *h = registry;
    while (h != NULL && (void *)h != comm)
        h = h->next;
    int rc;
    if (h == NULL || h->dying) {
        rc = pto_fail(PTO_ERR_INVALID_ARGUMENT, "%s: %s is not a live comm handle", fn,
                      comm == NULL ? "NULL" : "the handle");
    } else {
        CommDomain *d = h->domains;
        while (d != NULL && d->device_ctx != device_ctx)
            d = d->next;
        rc = d == NULL ? pto_fail(PTO_ERR_INVALID_ARGUMENT, "%s: 0x%llx is no live domain descriptor of this rank", fn,
                                  (unsigned long long)device_ctx)
                       : break_domain(h, d);
    }
    pthread_mutex_unlock(&registry_lock);
    return rc;
}

int comm_barrier(void *comm)
{
    pto_clear_error();
    CommHandle *h = comm_acquire(comm, "comm_barrier");
    if (h == NULL)
        return PTO_ERR_INVALID_ARGUMENT;
    int rc = comm_backend_barrier(h->backend);
    comm_release(h);
    return rc;
}

int comm_destroy(void *comm)
{
    pto_clear_error();
    if (comm == NULL)
        return PTO_OK;
    static const char fn[] = "comm_destroy";
    CommHandle *h = comm_acquire(comm, fn);
    if (h == NULL)
        return PTO_ERR_INVALID_ARGUMENT;
    int rc = device_context_comm_leave(h->dc, fn);
    if (rc != PTO_OK) {
        comm_release(h);
        return rc;
    }
    /* no new call gets in; the ones already waiting for the lock find it dying */
    pthread_mutex_lock(&registry_lock);
    h->dying = 1;
    pthread_mutex_unlock(&registry_lock);
    while (h->domains != NULL) {
        CommDomain *d = h->domains;
        h->domains = d->next;
        free_domain(h, d);
    }
    comm_backend_leave(h->backend);
    h->backend = NULL;
    comm_release(h);

    pthread_mutex_lock(&registry_lock);
    while (h->users > 0)
        pthread_cond_wait(&registry_cond, &registry_lock);
    CommHandle **link = &registry;
    while (*link != h)
        link = &(*link)->next;
    *link = h->next;
    pthread_mutex_unlock(&registry_lock);
    pthread_mutex_destroy(&h->lock);
    h->magic = 0;
    free(h);
    return PTO_OK;
}

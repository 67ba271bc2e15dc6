/*
 * Communication groups of the emulated driver (pto_driver.h, ABI 2-5): each
 * comm is one rank of the span group of util/comm_span.h, on one device.
 * The windows it maps are entered in its device's window table, so the
 * device's copies, memsets and kernels reach them like device memory (the
 * emulated device's addresses are host addresses).
 *
 * A comm lives on its device's list (g_comm_lock): close_device and
 * reset_device make its ranks leave (later calls on the comm are refused as
 * stale handles). PTO_EMU_FAULT_PEER_LOST marks the ranks of a device lost.
 */
#include <pthread.h>
#include <stdlib.h>

#include "emudrv/emudrv.h"
#include "ptorun/pto_runtime_c_api.h"
#include "util/comm_span.h"
#include "util/last_error.h"

struct PtoDrvWindows {
    struct PtoDrvWindows *next;      /* the comm's */
    CommSpanWindows *windows;
};

struct PtoDrvComm {
    struct PtoDrvComm *reg_next;
    int users;                       /* g_comm_lock: calls in flight */
    int dead;                        /* g_comm_lock: left, or its device went */
    PtoDrvDevice *dev;
    CommSpan *group;
    PtoDrvWindows *windows;          /* g_comm_lock */
};

static pthread_mutex_t g_comm_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_comm_cond = PTHREAD_COND_INITIALIZER;
static PtoDrvComm *g_comms;

static int drv_code(int pto_rc)
{
    switch (pto_rc) {
    case PTO_OK: return PTO_DRV_OK;
    case PTO_ERR_TIMEOUT: return PTO_DRV_ERR_TIMEOUT;
    case PTO_ERR_OUT_OF_MEMORY: return PTO_DRV_ERR_OUT_OF_MEMORY;
    case PTO_ERR_DEVICE: return PTO_DRV_ERR_PEER_LOST;
    case PTO_ERR_RANKS_DISAGREE: return PTO_DRV_ERR_MISMATCH;
    default: return PTO_DRV_ERR_INVALID;
    }
}

/* A use of a live comm (pair with comm_exit), or NULL. */
static PtoDrvComm *comm_enter(PtoDrvComm *comm)
{
    pto_clear_error();
    pthread_mutex_lock(&g_comm_lock);
    PtoDrvComm *c = g_comms;
    while (c != NULL && c != comm)
        c = c->reg_next;
    if (c != NULL && !c->dead)
        c->users++;
    else
        c = NULL;
    pthread_mutex_unlock(&g_comm_lock);
    if (c == NULL)
        pto_fail(PTO_ERR_INVALID_ARGUMENT, "comm: not a live comm handle");
    return c;
}

static void comm_exit(PtoDrvComm *c)
{
    pthread_mutex_lock(&g_comm_lock);
    if (--c->users == 0)
        pthread_cond_broadcast(&g_comm_cond);
    pthread_mutex_unlock(&g_comm_lock);
}

int emu_comm_fault_hit(PtoDrvDevice *dev)
{
    int member = 0;
    pthread_mutex_lock(&g_comm_lock);
    for (PtoDrvComm *c = g_comms; c != NULL; c = c->reg_next)
        member |= c->dev == dev && !c->dead;
    pthread_mutex_unlock(&g_comm_lock);
    if (!member || !emu_fault_hit(PTO_EMU_FAULT_PEER_LOST))
        return 0;
    pthread_mutex_lock(&g_comm_lock);
    for (PtoDrvComm *c = g_comms; c != NULL; c = c->reg_next)
        if (c->dev == dev && !c->dead)
            comm_span_mark_lost(c->group);
    pthread_mutex_unlock(&g_comm_lock);
    emu_device_lose(dev);
    return 1;
}

int emu_comm_join(PtoDrvDevice *dev, int rank, int nranks, const char *rootinfo_path, uint32_t timeout_ms,
                  PtoDrvComm **out)
{
    pto_clear_error();
    if (out == NULL || rootinfo_path == NULL || timeout_ms == 0) {
        pto_fail(PTO_ERR_INVALID_ARGUMENT, "comm_join: %s", out == NULL ? "out is NULL"
                                                            : rootinfo_path == NULL ? "rootinfo_path is NULL"
                                                                                    : "timeout 0");
        return PTO_DRV_ERR_INVALID;
    }
    int rc = emu_device_enter(dev);
    if (rc != PTO_DRV_OK)
        return rc;
    PtoDrvComm *c = calloc(1, sizeof *c);
    if (c == NULL) {
        emu_device_exit(dev);
        return PTO_DRV_ERR_OUT_OF_MEMORY;
    }
    c->dev = dev;
    int prc = comm_span_join(rank, nranks, rootinfo_path, timeout_ms, &c->group);
    if (prc != PTO_OK) {
        free(c);
        emu_device_exit(dev);
        return drv_code(prc);
    }
    pthread_mutex_lock(&g_comm_lock);
    c->reg_next = g_comms;
    g_comms = c;
    pthread_mutex_unlock(&g_comm_lock);
    atomic_fetch_add(&emu_counters()->comm_ranks, 1);
    emu_device_exit(dev);
    *out = c;
    return PTO_DRV_OK;
}

/* Takes members [0, count) of `windows` out of the device's window table; each
 * removal waits for the copies pinning it, so they may be unmapped after. */
static void forget_windows(PtoDrvDevice *dev, const CommSpanWindows *windows, size_t count)
{
    for (size_t i = 0; comm_span_windows_bytes(windows) > 0 && i < count; i++) {
        size_t size;
        (void)alloc_table_remove(&dev->windows, (uintptr_t)comm_span_windows_base(windows, i), &size);
    }
}

/* Unlinks the comm's windows from its device's table and unmaps them. */
static void free_windows(PtoDrvComm *c, PtoDrvWindows *w)
{
    forget_windows(c->dev, w->windows, comm_span_windows_count(w->windows));
    comm_span_windows_free(c->group, w->windows);
    free(w);
    atomic_fetch_sub(&emu_counters()->comm_window_sets, 1);
}

/* Kills a comm found on the list (g_comm_lock held, released and retaken):
 * waits for its calls to end, frees its windows, leaves the group. */
static void comm_kill(PtoDrvComm *c)
{
    c->dead = 1;
    while (c->users > 0)
        pthread_cond_wait(&g_comm_cond, &g_comm_lock);
    for (PtoDrvComm **at = &g_comms; *at != NULL; at = &(*at)->reg_next)
        if (*at == c) {
            *at = c->reg_next;
            break;
        }
    pthread_mutex_unlock(&g_comm_lock);
    while (c->windows != NULL) {
        PtoDrvWindows *w = c->windows;
        c->windows = w->next;
        free_windows(c, w);
    }
    comm_span_leave(c->group);
    free(c);
    atomic_fetch_sub(&emu_counters()->comm_ranks, 1);
    pthread_mutex_lock(&g_comm_lock);
}

int emu_comm_leave(PtoDrvComm *comm)
{
    pto_clear_error();
    pthread_mutex_lock(&g_comm_lock);
    PtoDrvComm *c = g_comms;
    while (c != NULL && c != comm)
        c = c->reg_next;
    int found = c != NULL && !c->dead;
    if (found)
        comm_kill(c);
    pthread_mutex_unlock(&g_comm_lock);
    return found ? PTO_DRV_OK : PTO_DRV_ERR_INVALID;
}

void emu_comm_forget_device(PtoDrvDevice *dev)
{
    pthread_mutex_lock(&g_comm_lock);
    for (PtoDrvComm *c = g_comms; c != NULL;) {
        if (c->dev == dev && !c->dead) {
            comm_kill(c);
            c = g_comms; /* the list changed while unlocked */
        } else {
            c = c->reg_next;
        }
    }
    pthread_mutex_unlock(&g_comm_lock);
}

int emu_comm_barrier(PtoDrvComm *comm)
{
    PtoDrvComm *c = comm_enter(comm);
    if (c == NULL)
        return PTO_DRV_ERR_INVALID;
    int rc = emu_comm_fault_hit(c->dev) ? PTO_DRV_ERR_DEVICE_LOST : drv_code(comm_span_barrier(c->group));
    comm_exit(c);
    return rc;
}

/* Whether `w` is a live window set of c (its windows stay mapped while c's call runs). */
static int owns_window_set(PtoDrvComm *c, const PtoDrvWindows *w)
{
    pthread_mutex_lock(&g_comm_lock);
    const PtoDrvWindows *at = c->windows;
    while (at != NULL && at != w)
        at = at->next;
    pthread_mutex_unlock(&g_comm_lock);
    return at != NULL;
}

/* comm_window_alloc, or with `group` comm_window_slice: the span group's
   allocation, its windows entered in the device's table (a slice's are the
   group's, entered already). */
static int window_alloc(PtoDrvComm *comm, const char *fn, uint64_t key, const uint32_t *ranks, size_t count,
                        size_t bytes, PtoDrvWindows *group, size_t offset, PtoDrvWindows **out)
{
    PtoDrvComm *c = comm_enter(comm);
    if (c == NULL)
        return PTO_DRV_ERR_INVALID;
    if (out == NULL || ranks == NULL) {
        comm_exit(c);
        pto_fail(PTO_ERR_INVALID_ARGUMENT, "%s: %s is NULL", fn, out == NULL ? "out" : "ranks");
        return PTO_DRV_ERR_INVALID;
    }
    if (group != NULL && !owns_window_set(c, group)) {
        comm_exit(c);
        pto_fail(PTO_ERR_INVALID_ARGUMENT, "%s: the group's windows are not a live window set of this comm", fn);
        return PTO_DRV_ERR_INVALID;
    }
    if (emu_comm_fault_hit(c->dev)) {
        comm_exit(c);
        return PTO_DRV_ERR_DEVICE_LOST;
    }
    /* an injected allocation failure (or no host memory) still takes part, so every member fails */
    PtoDrvWindows *w = calloc(1, sizeof *w);
    int local = w == NULL || emu_fault_hit(PTO_EMU_FAULT_ALLOC) ? PTO_ERR_OUT_OF_MEMORY : PTO_OK;
    if (local != PTO_OK)
        pto_fail(local, "%s: the device cannot allocate a window of %zu bytes", fn, bytes);
    CommSpanWindows *windows = NULL;
    int prc = group != NULL ? comm_span_alloc_slice(c->group, key, ranks, count, group->windows, offset, bytes, local,
                                                    &windows)
                            : comm_span_alloc_windows(c->group, key, ranks, count, bytes, local, &windows);
    size_t entered = 0;
    if (prc == PTO_OK) {
        w->windows = windows;
        for (; comm_span_windows_bytes(windows) > 0 && entered < count; entered++) {
            uintptr_t base = (uintptr_t)comm_span_windows_base(windows, entered);
            if (alloc_table_reserve(&c->dev->windows, bytes) != PTO_OK ||
                alloc_table_insert(&c->dev->windows, base, bytes) != PTO_OK) {
                prc = pto_fail(PTO_ERR_OUT_OF_MEMORY, "%s: the device's window table cannot grow", fn);
                break;
            }
        }
    }
    if (prc != PTO_OK) {
        if (windows != NULL) {
            forget_windows(c->dev, windows, entered);
            comm_span_windows_free(c->group, windows);
        }
        free(w);
        comm_exit(c);
        return drv_code(prc);
    }
    pthread_mutex_lock(&g_comm_lock);
    w->next = c->windows;
    c->windows = w;
    pthread_mutex_unlock(&g_comm_lock);
    atomic_fetch_add(&emu_counters()->comm_window_sets, 1);
    comm_exit(c);
    *out = w;
    return PTO_DRV_OK;
}

int emu_comm_window_alloc(PtoDrvComm *comm, uint64_t key, const uint32_t *ranks, size_t count, size_t bytes,
                          PtoDrvWindows **out)
{
    return window_alloc(comm, "comm_window_alloc", key, ranks, count, bytes, NULL, 0, out);
}

int emu_comm_window_slice(PtoDrvComm *comm, uint64_t key, const uint32_t *ranks, size_t count, PtoDrvWindows *group,
                          size_t offset, size_t bytes, PtoDrvWindows **out)
{
    if (group == NULL) {
        pto_clear_error();
        pto_fail(PTO_ERR_INVALID_ARGUMENT, "comm_window_slice: group is NULL");
        return PTO_DRV_ERR_INVALID;
    }
    return window_alloc(comm, "comm_window_slice", key, ranks, count, bytes, group, offset, out);
}

int emu_comm_window_free(PtoDrvComm *comm, PtoDrvWindows *windows)
{
    PtoDrvComm *c = comm_enter(comm);
    if (c == NULL)
        return PTO_DRV_ERR_INVALID;
    int found = 0;
    pthread_mutex_lock(&g_comm_lock);
    for (PtoDrvWindows **at = &c->windows; *at != NULL; at = &(*at)->next)
        if (*at == windows) {
            *at = windows->next;
            found = 1;
            break;
        }
    pthread_mutex_unlock(&g_comm_lock);
    if (found)
        free_windows(c, windows);
    comm_exit(c);
    return found ? PTO_DRV_OK : PTO_DRV_ERR_INVALID;
}

int emu_comm_window_addrs(PtoDrvWindows *windows, size_t i, uint64_t *window, uint64_t *signals)
{
    if (windows == NULL || window == NULL || signals == NULL || i >= comm_span_windows_count(windows->windows))
        return PTO_DRV_ERR_INVALID;
    *window = (uint64_t)(uintptr_t)comm_span_windows_base(windows->windows, i);
    *signals = (uint64_t)(uintptr_t)comm_span_windows_signals(windows->windows, i);
    return PTO_DRV_OK;
}

const char *emu_comm_last_message(void)
{
    return pto_last_error();
}

/* The emulated device's memory is host memory: the break is pto_comm_break over
   a descriptor naming the members' signal blocks. A lost device still breaks (its
   ranks are marked lost, not gone): the culprit's peers learn why sooner. */
int emu_comm_window_break(PtoDrvComm *comm, PtoDrvWindows *windows, uint32_t culprit)
{
    PtoDrvComm *c = comm_enter(comm);
    if (c == NULL)
        return PTO_DRV_ERR_INVALID;
    int rc = PTO_DRV_ERR_INVALID;
    /* held throughout: comm_window_free unlinks under it before it unmaps, and the
       break itself never blocks (atomics and futex wakes) */
    pthread_mutex_lock(&g_comm_lock);
    PtoDrvWindows *w = c->windows;
    while (w != NULL && w != windows)
        w = w->next;
    if (w == NULL) {
        pto_fail(PTO_ERR_INVALID_ARGUMENT, "comm_window_break: not a live window set of this comm");
    } else if (culprit >= comm_span_windows_count(w->windows)) {
        pto_fail(PTO_ERR_INVALID_ARGUMENT, "comm_window_break: culprit %u is not a member", culprit);
    } else {
        rc = drv_code(comm_span_break(w->windows, culprit));
    }
    pthread_mutex_unlock(&g_comm_lock);
    comm_exit(c);
    return rc;
}

int emu_comm_window_span(PtoDrvWindows *windows, PtoCommSpan *out)
{
    if (windows == NULL || out == NULL)
        return PTO_DRV_ERR_INVALID;
    return comm_span_describe(windows->windows, out);
}

/*
 * Joining a shared-memory group (util/comm_shm.h): rank 0 creates the control
 * segment under a fresh name and publishes it in the root-info file (written
 * to a temporary name, renamed into place); the other ranks wait for a root
 * info naming a segment that exists and is gathering exactly their nranks
 * (inotify on the file's directory: no polling), map it and sign in. Once
 * every rank signed in, rank 0 unlinks the segment's name and the file.
 */
#include "util/comm_shm_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ptorun/pto_runtime_c_api.h"
#include "util/last_error.h"
#include "util/spin_wait.h"

#define ROOTINFO_TAG "ptorun-comm 1"

static int sys_fail(const char *what, const char *name)
{
    int e = errno;
    return pto_fail(e == ENOMEM || e == ENOSPC ? PTO_ERR_OUT_OF_MEMORY : PTO_ERR_FAILED, "comm: %s %s: %s", what,
                    name, strerror(e));
}

static ShmControl *map_control(int fd)
{
    void *p = mmap(NULL, sizeof(ShmControl), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* The first rank not signed in; nranks when all are. */
static int first_absent(const ShmControl *c, int nranks)
{
    for (int r = 0; r < nranks; r++)
        if (__atomic_load_n(&c->rank_state[r], __ATOMIC_SEQ_CST) == SHM_RANK_ABSENT)
            return r;
    return nranks;
}

/* Waits (parked on seq) until cond(c) or the deadline; 1 when cond holds. */
static int await_control(ShmControl *c, int (*cond)(const ShmControl *, int), int nranks, uint64_t deadline)
{
    for (;;) {
        uint32_t seq = __atomic_load_n(&c->seq, __ATOMIC_SEQ_CST);
        if (cond(c, nranks))
            return 1;
        uint64_t now = pto_monotonic_ns();
        if (now >= deadline)
            return 0;
        shm_futex_wait(&c->seq, seq, deadline - now);
    }
}

static int all_signed_in(const ShmControl *c, int nranks)
{
    return first_absent(c, nranks) == nranks;
}

static int settled(const ShmControl *c, int nranks)
{
    (void)nranks;
    return __atomic_load_n(&c->state, __ATOMIC_SEQ_CST) != SHM_JOINING;
}

/* ---- rank 0 ------------------------------------------------------------------------ */

/* Removes the root info at `path` if it is still the one rank 0 published
 * (same file): a newer group's is left alone. */
static void unpublish(const char *path, const struct stat *mine)
{
    struct stat now;
    if (stat(path, &now) == 0 && now.st_dev == mine->st_dev && now.st_ino == mine->st_ino)
        unlink(path);
}

static int publish(const char *path, const ShmGroup *g, struct stat *published)
{
    char tmp[PATH_MAX];
    uint32_t nonce = 0;
    (void)getrandom(&nonce, sizeof nonce, 0);
    if (snprintf(tmp, sizeof tmp, "%s.tmp.%d.%08x", path, (int)getpid(), nonce) >= (int)sizeof tmp)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "comm: rootinfo_path is too long");
    int fd = open(tmp, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
    if (fd < 0)
        return sys_fail("cannot write the root info", tmp);
    char line[SHM_NAME_BYTES + 64];
    int n = snprintf(line, sizeof line, "%s %d %s\n", ROOTINFO_TAG, g->nranks, g->name);
    int ok = write(fd, line, (size_t)n) == n && fstat(fd, published) == 0;
    close(fd);
    if (!ok || rename(tmp, path) != 0) {
        int rc = sys_fail("cannot publish the root info at", path);
        unlink(tmp);
        return rc;
    }
    return PTO_OK;
}

static int create_group(ShmGroup *g, const char *path, uint64_t deadline)
{
    uint64_t nonce = 0;
    (void)getrandom(&nonce, sizeof nonce, 0);
    snprintf(g->name, sizeof g->name, "/ptorun-comm-%d-%016" PRIx64, (int)getpid(), nonce);
    int fd = shm_open(g->name, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0)
        return sys_fail("cannot create the shared segment", g->name);
    int rc = PTO_OK;
    if (ftruncate(fd, sizeof(ShmControl)) != 0 || (g->ctl = map_control(fd)) == NULL)
        rc = sys_fail("cannot size or map the shared segment", g->name);
    close(fd);
    if (rc != PTO_OK)
        goto fail_segment;
    ShmControl *c = g->ctl;
    c->magic = SHM_MAGIC;
    c->nranks = (uint32_t)g->nranks;
    c->pid[0] = getpid();
    c->rank_state[0] = SHM_RANK_ALIVE;
    __atomic_store_n(&c->state, SHM_JOINING, __ATOMIC_SEQ_CST);
    struct stat published;
    if ((rc = publish(path, g, &published)) != PTO_OK)
        goto fail_publish;
    if (!await_control(c, all_signed_in, g->nranks, deadline)) {
        int absent = first_absent(c, g->nranks), joined = 0;
        for (int r = 0; r < g->nranks; r++)
            joined += __atomic_load_n(&c->rank_state[r], __ATOMIC_SEQ_CST) != SHM_RANK_ABSENT;
        __atomic_store_n(&c->state, SHM_ABANDONED, __ATOMIC_SEQ_CST);
        shm_bump(c);
        rc = pto_fail(PTO_ERR_TIMEOUT, "comm_init: rank %d did not arrive within %u ms (%d of %d ranks joined)",
                      absent, g->timeout_ms, joined, g->nranks);
        unpublish(path, &published);
        goto fail_publish;
    }
    __atomic_store_n(&c->state, SHM_READY, __ATOMIC_SEQ_CST);
    shm_bump(c);
    /* every rank maps it now: nothing of the group keeps a name */
    shm_unlink(g->name);
    unpublish(path, &published);
    return PTO_OK;

fail_publish:
    munmap(g->ctl, sizeof(ShmControl));
    g->ctl = NULL;
fail_segment:
    shm_unlink(g->name);
    return rc;
}

/* ---- the other ranks --------------------------------------------------------------- */

/* Maps the segment the root info at `path` names when it is a group gathering
 * `nranks` ranks; 0 (nothing mapped) when there is none yet. */
static int try_attach(ShmGroup *g, const char *path)
{
    char line[SHM_NAME_BYTES + 64] = "";
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, line, sizeof line - 1);
    close(fd);
    if (n <= 0)
        return 0;
    line[n] = '\0';
    int nranks = 0;
    char name[SHM_NAME_BYTES];
    if (sscanf(line, ROOTINFO_TAG " %d %95s", &nranks, name) != 2 || nranks != g->nranks)
        return 0;
    int shm = shm_open(name, O_RDWR | O_CLOEXEC, 0);
    if (shm < 0)
        return 0; /* a stale root info: its group is gone */
    struct stat st;
    ShmControl *c = fstat(shm, &st) == 0 && (size_t)st.st_size >= sizeof(ShmControl) ? map_control(shm) : NULL;
    close(shm);
    if (c == NULL)
        return 0;
    if (c->magic != SHM_MAGIC || c->nranks != (uint32_t)nranks ||
        __atomic_load_n(&c->state, __ATOMIC_SEQ_CST) != SHM_JOINING) {
        munmap(c, sizeof *c);
        return 0;
    }
    int32_t founder = __atomic_load_n(&c->pid[0], __ATOMIC_SEQ_CST);
    if (founder != getpid() && shm_process_exited(founder)) {
        /* its rank 0 died before the group formed: nobody will complete or unlink it */
        shm_unlink(name);
        munmap(c, sizeof *c);
        return 0;
    }
    snprintf(g->name, sizeof g->name, "%s", name);
    g->ctl = c;
    return 1;
}

/* Waits for a root info to attach to; inotify wakes us when the directory changes. */
static int attach(ShmGroup *g, const char *path, uint64_t deadline)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash == dir)
        slash[1] = '\0';
    else if (slash != NULL)
        *slash = '\0';
    else
        snprintf(dir, sizeof dir, ".");
    int in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (in < 0)
        return sys_fail("cannot watch the root info's directory", dir);
    int rc = PTO_OK;
    if (inotify_add_watch(in, dir, IN_CREATE | IN_MOVED_TO | IN_CLOSE_WRITE) < 0) {
        rc = errno == ENOENT || errno == ENOTDIR
                 ? pto_fail(PTO_ERR_INVALID_ARGUMENT, "comm_init: the directory of rootinfo_path %s does not exist",
                            path)
                 : sys_fail("cannot watch the root info's directory", dir);
        close(in);
        return rc;
    }
    while (!try_attach(g, path)) {
        uint64_t now = pto_monotonic_ns();
        if (now >= deadline) {
            rc = pto_fail(PTO_ERR_TIMEOUT, "comm_init: rank 0 did not arrive within %u ms (no root info at %s)",
                          g->timeout_ms, path);
            break;
        }
        struct pollfd p = { in, POLLIN, 0 };
        uint64_t ms = (deadline - now + 999999u) / 1000000u;
        (void)poll(&p, 1, ms > INT32_MAX ? INT32_MAX : (int)ms);
        char events[4096];
        while (read(in, events, sizeof events) > 0) {
        }
    }
    close(in);
    return rc;
}

static int join_group(ShmGroup *g, const char *path, uint64_t deadline)
{
    int rc = attach(g, path, deadline);
    if (rc != PTO_OK)
        return rc;
    ShmControl *c = g->ctl;
    uint32_t absent = SHM_RANK_ABSENT;
    __atomic_store_n(&c->pid[g->rank], getpid(), __ATOMIC_SEQ_CST);
    if (!__atomic_compare_exchange_n(&c->rank_state[g->rank], &absent, SHM_RANK_ALIVE, 0, __ATOMIC_SEQ_CST,
                                     __ATOMIC_SEQ_CST)) {
        rc = pto_fail(PTO_ERR_INVALID_ARGUMENT, "comm_init: rank %d of this group joined already", g->rank);
        goto fail;
    }
    shm_bump(c);
    if (!await_control(c, settled, g->nranks, deadline) ||
        __atomic_load_n(&c->state, __ATOMIC_SEQ_CST) != SHM_READY) {
        __atomic_store_n(&c->rank_state[g->rank], SHM_RANK_LEFT, __ATOMIC_SEQ_CST);
        shm_bump(c);
        int missing = first_absent(c, g->nranks);
        rc = pto_fail(PTO_ERR_TIMEOUT, "comm_init: rank %d did not arrive within %u ms", missing < g->nranks ? missing : 0,
                      g->timeout_ms);
        goto fail;
    }
    return PTO_OK;

fail:
    munmap(c, sizeof *c);
    g->ctl = NULL;
    return rc;
}

int shm_group_join(int rank, int nranks, const char *rootinfo_path, uint32_t timeout_ms, ShmGroup **out)
{
    if (nranks < 1 || nranks > (int)PTO_COMM_MAX_RANKS || rank < 0 || rank >= nranks)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "comm_init: rank %d of %d; 1..%u ranks allowed", rank, nranks,
                        PTO_COMM_MAX_RANKS);
    if (rootinfo_path == NULL || rootinfo_path[0] == '\0' || strlen(rootinfo_path) > PATH_MAX - 64)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "comm_init: rootinfo_path is NULL, empty or too long");
    if (timeout_ms == 0 || out == NULL)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "comm_init: %s", out == NULL ? "out is NULL" : "timeout 0");
    ShmGroup *g = calloc(1, sizeof *g);
    if (g == NULL)
        return pto_fail(PTO_ERR_OUT_OF_MEMORY, "comm_init: out of host memory");
    g->rank = rank;
    g->nranks = nranks;
    g->timeout_ms = timeout_ms;
    uint64_t deadline = shm_deadline(timeout_ms);
    int rc = rank == 0 ? create_group(g, rootinfo_path, deadline) : join_group(g, rootinfo_path, deadline);
    if (rc != PTO_OK) {
        free(g);
        return rc;
    }
    *out = g;
    return PTO_OK;
}

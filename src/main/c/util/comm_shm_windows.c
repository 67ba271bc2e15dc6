/*
 * Windows of a shared-memory group (util/comm_shm.h): each member of an
 * allocation creates one segment (its window rounded up to pages, then a page
 * holding its signal block), every member maps every other member's, and each
 * unlinks its own name once all have mapped it. Three meetings over the
 * members: after creating (every member's `created` status is then readable),
 * after mapping (`mapped`), and after reading the statuses and unlinking the
 * names (so no status is overwritten, and no name of a later allocation under
 * the same key unlinked, before every member is done with this one).
 *
 * Every member publishes the size it asks for (`wanted`) with its `created`
 * status; after the first meeting every member compares them all and, when
 * they differ, maps nothing and fails with PTO_ERR_RANKS_DISAGREE naming the
 * odd member first (the same words read by every member: the same message on
 * every member). `wanted` is stable until the third meeting, which no member
 * passes before every member has read it.
 */
#include "util/comm_shm_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ptorun/pto_runtime_c_api.h"
#include "util/last_error.h"

static void segment_name(const ShmGroup *g, uint64_t key, uint32_t rank, char *out, size_t cap)
{
    snprintf(out, cap, "%s-k%016" PRIx64 "-r%u", g->name, key, rank);
}

static int errno_code(void)
{
    return errno == ENOMEM || errno == ENOSPC || errno == EMFILE || errno == ENFILE ? PTO_ERR_OUT_OF_MEMORY
                                                                                     : PTO_ERR_FAILED;
}

static uint32_t *signals_of(const ShmWindows *w, size_t i)
{
    return (uint32_t *)(w->base[i] + w->signals_offset);
}

/* Creates and maps this member's segment; its signal block zeroed (a fresh
 * segment is) but for the PID word. PTO_OK or a code, message recorded. */
static int create_own(const ShmGroup *g, ShmWindows *w)
{
    char name[SHM_NAME_BYTES + 48];
    segment_name(g, w->key, (uint32_t)g->rank, name, sizeof name);
    int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0)
        return pto_fail(errno_code(), "comm: rank %d could not create its window %s: %s", g->rank, name,
                        strerror(errno));
    int rc = PTO_OK;
    void *p = MAP_FAILED;
    if (ftruncate(fd, (off_t)w->segment_bytes) != 0 ||
        (p = mmap(NULL, w->segment_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
        rc = pto_fail(errno_code(), "comm: rank %d could not allocate its window of %zu bytes: %s", g->rank, w->bytes,
                      strerror(errno));
        shm_unlink(name);
    }
    close(fd);
    if (rc == PTO_OK) {
        w->base[w->self] = p;
        __atomic_store_n(&signals_of(w, w->self)[PTO_COMM_SIG_PID], (uint32_t)getpid(), __ATOMIC_SEQ_CST);
    }
    return rc;
}

static int map_peer(const ShmGroup *g, ShmWindows *w, size_t i)
{
    char name[SHM_NAME_BYTES + 48];
    segment_name(g, w->key, w->ranks[i], name, sizeof name);
    int fd = shm_open(name, O_RDWR | O_CLOEXEC, 0);
    if (fd < 0)
        return pto_fail(errno_code(), "comm: rank %d could not open rank %u's window: %s", g->rank, w->ranks[i],
                        strerror(errno));
    struct stat st;
    void *p = MAP_FAILED;
    int rc = PTO_OK;
    if (fstat(fd, &st) != 0 || (size_t)st.st_size != w->segment_bytes)
        rc = pto_fail(PTO_ERR_FAILED, "comm: rank %u's window is not the size rank %d expects", w->ranks[i], g->rank);
    else if ((p = mmap(NULL, w->segment_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED)
        rc = pto_fail(errno_code(), "comm: rank %d could not map rank %u's window: %s", g->rank, w->ranks[i],
                      strerror(errno));
    close(fd);
    if (rc == PTO_OK)
        w->base[i] = p;
    return rc;
}

static void unmap_all(ShmWindows *w)
{
    for (size_t i = 0; i < w->count; i++) {
        if (w->base[i] != NULL)
            munmap(w->base[i], w->segment_bytes);
        w->base[i] = NULL;
    }
}

/* Every member's name, in case a member failed between creating and unlinking
 * its own (ENOENT ignored). */
static void unlink_all(const ShmGroup *g, const ShmWindows *w)
{
    char name[SHM_NAME_BYTES + 48];
    for (size_t i = 0; i < w->count; i++) {
        segment_name(g, w->key, w->ranks[i], name, sizeof name);
        shm_unlink(name);
    }
}

/* The first member whose status is a failure: its index, or count. */
static size_t first_failed(const ShmWindows *w, const int32_t *status)
{
    for (size_t i = 0; i < w->count; i++)
        if (__atomic_load_n(&status[w->ranks[i]], __ATOMIC_SEQ_CST) != PTO_OK)
            return i;
    return w->count;
}

static int member_failed(const ShmWindows *w, const int32_t *status, size_t i, const char *what)
{
    int code = __atomic_load_n(&status[w->ranks[i]], __ATOMIC_SEQ_CST);
    return pto_fail(code, "comm: rank %u could not %s a window of %zu bytes", w->ranks[i], what, w->bytes);
}

/* The size most members asked for (ties: the one of the lowest-indexed of
 * them, so rank 0's when two sizes tie on two members); 0 when all agree, else
 * writes the refusal into last_error and returns PTO_ERR_RANKS_DISAGREE. */
static int check_sizes(const ShmGroup *g, const ShmWindows *w)
{
    uint64_t want[PTO_COMM_MAX_RANKS];
    for (size_t i = 0; i < w->count; i++)
        want[i] = __atomic_load_n(&g->ctl->wanted[w->ranks[i]], __ATOMIC_SEQ_CST);
    size_t best = 0, best_votes = 0;
    for (size_t i = 0; i < w->count; i++) {
        size_t votes = 0;
        for (size_t j = 0; j < w->count; j++)
            votes += want[j] == want[i];
        if (votes > best_votes) {
            best = i;
            best_votes = votes;
        }
    }
    if (best_votes == w->count)
        return PTO_OK;
    char odd[320];
    size_t used = 0;
    for (size_t i = 0; i < w->count && used < sizeof odd; i++)
        if (want[i] != want[best])
            used += (size_t)snprintf(odd + used, sizeof odd - used, "%srank %u asked for %" PRIu64 " bytes",
                                     used == 0 ? "" : ", ", w->ranks[i], want[i]);
    return pto_fail(PTO_ERR_RANKS_DISAGREE, "comm: the ranks disagree on the window size: %s, the others for %" PRIu64,
                    odd, want[best]);
}

int shm_group_alloc_windows(ShmGroup *g, uint64_t key, const uint32_t *ranks, size_t count, size_t window_bytes,
                            int local_failure, ShmWindows **out)
{
    size_t self;
    int rc = shm_check_usable(g);
    if (rc == PTO_OK)
        rc = shm_check_members(g, ranks, count, &self);
    if (rc != PTO_OK)
        return rc;
    for (ShmWindows *w = g->windows; w != NULL; w = w->next)
        if (w->key == key)
            return pto_fail(PTO_ERR_INVALID_ARGUMENT, "comm: allocation key %" PRIu64 " is in use", key);
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (window_bytes > SIZE_MAX / 2)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "comm: a window of %zu bytes", window_bytes);
    ShmWindows *w = calloc(1, sizeof *w);
    if (w == NULL && local_failure == PTO_OK)
        local_failure = pto_fail(PTO_ERR_OUT_OF_MEMORY, "comm: out of host memory");
    ShmWindows scratch = { 0 }; /* takes part without memory of its own */
    ShmWindows *use = w != NULL ? w : &scratch;
    use->key = key;
    use->count = count;
    use->self = self;
    use->bytes = window_bytes;
    use->signals_offset = (window_bytes + page - 1) / page * page;
    use->segment_bytes = use->signals_offset + page;
    memcpy(use->ranks, ranks, count * sizeof *ranks);

    __atomic_store_n(&g->ctl->wanted[g->rank], (uint64_t)window_bytes, __ATOMIC_SEQ_CST);
    int created = local_failure != PTO_OK ? local_failure : create_own(g, use);
    __atomic_store_n(&g->ctl->created[g->rank], created, __ATOMIC_SEQ_CST);
    if ((rc = shm_group_meet(g, ranks, count)) != PTO_OK)
        goto fail;
    /* different sizes outrank any member's failure to create: they are why */
    int sizes = check_sizes(g, use);
    size_t bad = sizes != PTO_OK ? count : first_failed(use, g->ctl->created);
    int mapped = PTO_OK;
    for (size_t i = 0; sizes == PTO_OK && bad == count && mapped == PTO_OK && i < count; i++)
        if (i != self)
            mapped = map_peer(g, use, i);
    __atomic_store_n(&g->ctl->mapped[g->rank], mapped, __ATOMIC_SEQ_CST);
    if ((rc = shm_group_meet(g, ranks, count)) != PTO_OK)
        goto fail;
    if (sizes != PTO_OK)
        rc = check_sizes(g, use); /* again: the meeting may have overwritten last_error */
    else if (bad != count)
        rc = member_failed(use, g->ctl->created, bad, "allocate");
    else if ((bad = first_failed(use, g->ctl->mapped)) != count)
        rc = member_failed(use, g->ctl->mapped, bad, "map");
    /* The names go before the last meeting: once a member is past it, it may
     * allocate again under the same key, and its new names must not be
     * unlinked by our clean-up. */
    if (rc != PTO_OK) {
        unlink_all(g, use);
    } else {
        char name[SHM_NAME_BYTES + 48];
        segment_name(g, key, (uint32_t)g->rank, name, sizeof name);
        shm_unlink(name); /* every member maps it now */
    }
    int rc3 = shm_group_meet(g, ranks, count);
    if (rc3 != PTO_OK) {
        rc = rc3;
        goto fail; /* the group is broken: no allocation follows, a dead member's name may still be there */
    }
    if (rc != PTO_OK) {
        unmap_all(use);
        free(w);
        return rc;
    }
    w->next = g->windows;
    g->windows = w;
    *out = w;
    return PTO_OK;

fail:
    unmap_all(use);
    unlink_all(g, use);
    free(w);
    return rc;
}

void shm_windows_say_gone(ShmWindows *w)
{
    __atomic_store_n(&signals_of(w, w->self)[PTO_COMM_SIG_PID], PTO_COMM_PID_GONE, __ATOMIC_SEQ_CST);
    for (size_t i = 0; i < w->count; i++) {
        uint32_t *doorbell = &signals_of(w, i)[PTO_COMM_SIG_DOORBELL];
        __atomic_add_fetch(doorbell, 1, __ATOMIC_SEQ_CST);
        shm_futex_wake(doorbell);
    }
}

void shm_windows_free(ShmGroup *g, ShmWindows *w)
{
    if (w == NULL)
        return;
    for (ShmWindows **at = &g->windows; *at != NULL; at = &(*at)->next)
        if (*at == w) {
            *at = w->next;
            break;
        }
    shm_windows_say_gone(w);
    unmap_all(w);
    free(w);
}

size_t shm_windows_count(const ShmWindows *w)
{
    return w->count;
}

size_t shm_windows_bytes(const ShmWindows *w)
{
    return w->bytes;
}

uint64_t shm_windows_key(const ShmWindows *w)
{
    return w->key;
}

void *shm_windows_base(const ShmWindows *w, size_t i)
{
    return w->base[i];
}

uint32_t *shm_windows_signals(const ShmWindows *w, size_t i)
{
    return signals_of(w, i);
}

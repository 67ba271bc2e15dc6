/*
 * The shared-memory communication group (util/comm_shm.h): the control
 * segment and the meetings. The rendezvous through the root-info file is in
 * comm_shm_rendezvous.c, the windows in comm_shm_windows.c; comm_shm_internal.h
 * is what the three share.
 */
#include "util/comm_shm_internal.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "ptorun/pto_runtime_c_api.h"
#include "util/futex_word.h"
#include "util/last_error.h"
#include "util/spin_wait.h"

/* ---- futex on process-shared words ------------------------------------------ */

void shm_futex_wait(uint32_t *word, uint32_t seen, uint64_t ns)
{
    pto_futex_wait_ns(word, seen, ns);
}

void shm_futex_wake(uint32_t *word)
{
    pto_futex_wake(word);
}

void shm_bump(ShmControl *c)
{
    __atomic_add_fetch(&c->seq, 1, __ATOMIC_SEQ_CST);
    shm_futex_wake(&c->seq);
}

uint64_t shm_deadline(uint32_t timeout_ms)
{
    return pto_monotonic_ns() + (uint64_t)timeout_ms * 1000000u;
}

/* ---- the group's failure ------------------------------------------------------ */

static const char *gone_why(uint32_t why)
{
    switch (why) {
    case SHM_GONE_EXITED: return "its process exited";
    case SHM_GONE_LEFT: return "it left the group";
    default: return "it was lost";
    }
}

int shm_fail_broken(const ShmGroup *g, uint64_t word)
{
    uint32_t why = (uint32_t)(word >> 40) & 0xffu;
    uint32_t rank = (uint32_t)(word >> 32) & 0xffu;
    int code = -(int)(word & 0xffffffffu);
    if (code == PTO_ERR_TIMEOUT)
        return pto_fail(code, "comm: rank %u did not arrive within %u ms (the group is broken)", rank,
                        g->timeout_ms);
    return pto_fail(code, "comm: rank %u is gone (%s; the group is broken)", rank, gone_why(why));
}

/* The first failure wins; every rank reports that one. */
int shm_break(ShmGroup *g, int code, uint32_t rank, uint32_t why)
{
    uint64_t word = ((uint64_t)why << 40) | ((uint64_t)rank << 32) | (uint32_t)(-code);
    uint64_t none = 0;
    __atomic_compare_exchange_n(&g->ctl->broken, &none, word, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    shm_bump(g->ctl);
    return shm_fail_broken(g, __atomic_load_n(&g->ctl->broken, __ATOMIC_SEQ_CST));
}

/* Whether process `pid` no longer runs: gone (ESRCH), or a zombie its parent
 * has not reaped yet (it still answers kill). */
int shm_process_exited(int32_t pid)
{
    if (kill(pid, 0) != 0)
        return errno == ESRCH;
    char path[64], stat[256];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "re");
    if (f == NULL)
        return 0;
    size_t n = fread(stat, 1, sizeof stat - 1, f);
    fclose(f);
    stat[n] = '\0';
    const char *close = strrchr(stat, ')'); /* the state follows the command name */
    return close != NULL && close[1] == ' ' && close[2] == 'Z';
}

/* SHM_GONE_* when rank p no longer takes part, else 0. */
uint32_t shm_gone(const ShmGroup *g, uint32_t p)
{
    uint32_t state = __atomic_load_n(&g->ctl->rank_state[p], __ATOMIC_SEQ_CST);
    if (state == SHM_RANK_LEFT)
        return SHM_GONE_LEFT;
    if (state == SHM_RANK_LOST)
        return SHM_GONE_LOST;
    int32_t pid = __atomic_load_n(&g->ctl->pid[p], __ATOMIC_SEQ_CST);
    if (state == SHM_RANK_ALIVE && pid > 0 && pid != getpid() && shm_process_exited(pid))
        return SHM_GONE_EXITED;
    return 0;
}

/* Checks before any call: this rank usable, the group not broken. */
int shm_check_usable(const ShmGroup *g)
{
    if (g->lost)
        return pto_fail(PTO_ERR_DEVICE, "comm: rank %d was lost", g->rank);
    uint64_t broken = __atomic_load_n(&g->ctl->broken, __ATOMIC_SEQ_CST);
    return broken != 0 ? shm_fail_broken(g, broken) : PTO_OK;
}

/* ---- meetings ------------------------------------------------------------------- */

int shm_check_members(const ShmGroup *g, const uint32_t *ranks, size_t count, size_t *self)
{
    if (ranks == NULL || count < 1 || count > (size_t)g->nranks)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "comm: %zu ranks listed; 1..%d allowed", ranks == NULL ? 0 : count,
                        g->nranks);
    uint32_t seen = 0;
    *self = count;
    for (size_t i = 0; i < count; i++) {
        if (ranks[i] >= (uint32_t)g->nranks || (seen & (1u << ranks[i])))
            return pto_fail(PTO_ERR_INVALID_ARGUMENT, "comm: rank %u is %s", ranks[i],
                            ranks[i] >= (uint32_t)g->nranks ? "not a rank of the group" : "listed twice");
        seen |= 1u << ranks[i];
        if (ranks[i] == (uint32_t)g->rank)
            *self = i;
    }
    if (*self == count)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "comm: rank %d is not among the ranks listed", g->rank);
    return PTO_OK;
}

typedef struct MeetWait {
    const ShmGroup *g;
    const uint32_t *ranks;
    size_t count;
    const uint32_t *target;
} MeetWait;

/* Whether member p has entered as many meetings with us as we have with it (wrap-safe). */
static int member_entered(const ShmGroup *g, uint32_t p, uint32_t target)
{
    return (int32_t)(__atomic_load_n(&g->ctl->meet[p][g->rank], __ATOMIC_SEQ_CST) - target) >= 0;
}

/* The first member that has not entered yet; count when none. */
static size_t first_pending(const MeetWait *w)
{
    for (size_t i = 0; i < w->count; i++) {
        uint32_t p = w->ranks[i];
        if (p != (uint32_t)w->g->rank && !member_entered(w->g, p, w->target[p]))
            return i;
    }
    return w->count;
}

static int meet_done(const void *arg)
{
    const MeetWait *w = arg;
    return first_pending(w) == w->count || __atomic_load_n(&w->g->ctl->broken, __ATOMIC_SEQ_CST) != 0;
}

int shm_group_meet(ShmGroup *g, const uint32_t *ranks, size_t count)
{
    size_t self;
    int rc = shm_check_usable(g);
    if (rc == PTO_OK)
        rc = shm_check_members(g, ranks, count, &self);
    if (rc != PTO_OK)
        return rc;
    uint32_t me = (uint32_t)g->rank;
    uint32_t target[PTO_COMM_MAX_RANKS] = { 0 };
    for (size_t i = 0; i < count; i++)
        if (ranks[i] != me)
            target[ranks[i]] = __atomic_add_fetch(&g->ctl->meet[me][ranks[i]], 1, __ATOMIC_SEQ_CST);
    shm_bump(g->ctl);

    MeetWait w = { g, ranks, count, target };
    uint64_t deadline = shm_deadline(g->timeout_ms);
    (void)pto_spin_until(meet_done, &w);
    for (;;) {
        uint32_t seq = __atomic_load_n(&g->ctl->seq, __ATOMIC_SEQ_CST);
        /* a meeting every member entered is complete, whatever broke the group since */
        size_t pending = first_pending(&w);
        if (pending == count)
            return PTO_OK;
        uint64_t broken = __atomic_load_n(&g->ctl->broken, __ATOMIC_SEQ_CST);
        if (broken != 0)
            return shm_fail_broken(g, broken);
        /* only a member still missing can fail us: one that came and then left did its part.
           Its count is read after its state: a member enters before it can leave or exit. */
        for (size_t i = pending; i < count; i++) {
            uint32_t p = ranks[i];
            if (p == me || member_entered(g, p, target[p]))
                continue;
            uint32_t why = shm_gone(g, p);
            if (why != 0 && !member_entered(g, p, target[p]))
                return shm_break(g, PTO_ERR_DEVICE, p, why);
        }
        uint64_t now = pto_monotonic_ns();
        if (now >= deadline)
            return shm_break(g, PTO_ERR_TIMEOUT, ranks[pending], 0);
        uint64_t slice = (uint64_t)COMM_SHM_LIVENESS_MS * 1000000u;
        shm_futex_wait(&g->ctl->seq, seq, deadline - now < slice ? deadline - now : slice);
    }
}

int shm_group_barrier(ShmGroup *g)
{
    uint32_t all[PTO_COMM_MAX_RANKS];
    for (int i = 0; i < g->nranks; i++)
        all[i] = (uint32_t)i;
    return shm_group_meet(g, all, (size_t)g->nranks);
}

/* ---- leaving ------------------------------------------------------------------------ */

void shm_group_leave(ShmGroup *g)
{
    if (g == NULL)
        return;
    while (g->windows != NULL)
        shm_windows_free(g, g->windows);
    uint32_t alive = SHM_RANK_ALIVE;
    __atomic_compare_exchange_n(&g->ctl->rank_state[g->rank], &alive, SHM_RANK_LEFT, 0, __ATOMIC_SEQ_CST,
                                __ATOMIC_SEQ_CST);
    shm_bump(g->ctl);
    munmap(g->ctl, sizeof *g->ctl);
    free(g);
}

void shm_group_mark_lost(ShmGroup *g)
{
    g->lost = 1;
    __atomic_store_n(&g->ctl->rank_state[g->rank], SHM_RANK_LOST, __ATOMIC_SEQ_CST);
    for (ShmWindows *w = g->windows; w != NULL; w = w->next)
        shm_windows_say_gone(w);
    shm_bump(g->ctl);
}

int shm_group_rank(const ShmGroup *g)
{
    return g->rank;
}

int shm_group_nranks(const ShmGroup *g)
{
    return g->nranks;
}

uint32_t shm_group_timeout_ms(const ShmGroup *g)
{
    return g->timeout_ms;
}

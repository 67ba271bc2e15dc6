/*
 * Device-side synchronization over a communication domain's signal blocks
 * (ptorun/pto_comm.h): header-only, because the AICore image links none of
 * util/ sources. Every rank's block may live in another process's shared memory,
 * so every futex call here is process-shared (no FUTEX_PRIVATE_FLAG) and
 * every word is accessed with __atomic builtins.
 *
 * Protocol. A rank publishes progress by adding to one of its own counters
 * (pto_comm_signal), then bumps and wakes every peer's doorbell. A waiter
 * (pto_comm_wait_all) spins the bounded spin of spin_wait.h, then parks on
 * its own doorbell: it reads the doorbell, re-checks its condition, and
 * FUTEX_WAITs on the value it read, so a ring between the check and the park
 * makes the wait return at once (no lost wake-up). All of these are seq_cst:
 * the counter add is ordered before the doorbell bump, and the waiter's
 * doorbell read before its counter reads.
 *
 * Failure. pto_comm_break writes BROKEN = 1 + culprit into every rank's
 * block; every later wait of every rank then fails at once naming that rank.
 * Rank 0's block arbitrates: a breaker first CASes rank 0's word and, if
 * someone else won, spreads the winner's culprit instead of its own, so two
 * ranks breaking at once still leave one culprit in every block.
 */
#ifndef PTORUN_COMM_SIGNAL_H
#define PTORUN_COMM_SIGNAL_H

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "ptorun/pto_comm.h"
#include "util/spin_wait.h"

#define PTO_COMM_WAIT_OK 0
#define PTO_COMM_WAIT_TIMEOUT (-1) /* *who: the first rank whose counter was short */
#define PTO_COMM_WAIT_LOST (-2)    /* *who: a peer that left or whose process died */
#define PTO_COMM_WAIT_BROKEN (-3)  /* *who: the culprit the domain was broken with */
#define PTO_COMM_WAIT_BAD_CONTEXT (-4)

/* The longest a waiter parks before it re-checks liveness and the deadline
   (a peer may die without ringing anyone). */
#define PTO_COMM_PARK_SLICE_MS 20u

static inline uint32_t *pto_comm_word(const PtoCommDeviceContext *c, uint32_t rank, uint32_t word)
{
    return (uint32_t *)(uintptr_t)c->signals[rank] + word;
}

/* 0 when c is a usable descriptor, else PTO_COMM_WAIT_BAD_CONTEXT. */
static inline int pto_comm_check_context(const PtoCommDeviceContext *c)
{
    if (c == NULL || ((uintptr_t)c % _Alignof(PtoCommDeviceContext)) != 0)
        return PTO_COMM_WAIT_BAD_CONTEXT;
    if (c->magic != PTO_COMM_CTX_MAGIC || c->nranks < 1 || c->nranks > PTO_COMM_MAX_RANKS ||
        c->rank >= c->nranks || c->timeout_ms == 0)
        return PTO_COMM_WAIT_BAD_CONTEXT;
    /* across hosts, another host's member has no signal block here: the
       meetings go over the span's local descriptor, checked as one of these */
    const PtoCommSpan *s = (const PtoCommSpan *)(uintptr_t)c->span;
    if (s != NULL && (((uintptr_t)s % _Alignof(PtoCommSpan)) != 0 || s->local.span != 0 || s->hosts < 2 ||
                      s->hosts > c->nranks || s->local.nranks > c->nranks ||
                      pto_comm_check_context(&s->local) != PTO_COMM_WAIT_OK))
        return PTO_COMM_WAIT_BAD_CONTEXT;
    for (uint32_t r = 0; r < c->nranks; r++)
        if (c->windows[r] == 0 || (s == NULL && c->signals[r] == 0) || c->signals[r] % sizeof(uint32_t) != 0)
            return PTO_COMM_WAIT_BAD_CONTEXT;
    return PTO_COMM_WAIT_OK;
}

static inline void pto_comm_futex_wake(uint32_t *word)
{
    syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/* Bumps rank r's doorbell and wakes whoever parks on it. */
static inline void pto_comm_ring(const PtoCommDeviceContext *c, uint32_t r)
{
    uint32_t *bell = pto_comm_word(c, r, PTO_COMM_SIG_DOORBELL);
    __atomic_fetch_add(bell, 1u, __ATOMIC_SEQ_CST);
    pto_comm_futex_wake(bell);
}

/* Adds `add` to this rank's counter `word` (PTO_COMM_SIG_COUNTERS + i), rings
   every peer; returns the counter's new value. The add releases everything
   this rank wrote before it to a peer that sees the new value. */
static inline uint32_t pto_comm_signal(const PtoCommDeviceContext *c, uint32_t word, uint32_t add)
{
    uint32_t now = __atomic_add_fetch(pto_comm_word(c, c->rank, word), add, __ATOMIC_SEQ_CST);
    for (uint32_t r = 0; r < c->nranks; r++)
        if (r != c->rank)
            pto_comm_ring(c, r);
    return now;
}

/* Breaks the domain naming `culprit` (see the top of the file) and rings
   every rank, so every waiter fails fast naming the same rank. */
static inline void pto_comm_break(const PtoCommDeviceContext *c, uint32_t culprit)
{
    uint32_t mark = 1u + culprit, seen = 0;
    if (!__atomic_compare_exchange_n(pto_comm_word(c, 0, PTO_COMM_SIG_BROKEN), &seen, mark, 0, __ATOMIC_SEQ_CST,
                                     __ATOMIC_SEQ_CST))
        mark = seen;
    for (uint32_t r = 1; r < c->nranks; r++) {
        seen = 0;
        __atomic_compare_exchange_n(pto_comm_word(c, r, PTO_COMM_SIG_BROKEN), &seen, mark, 0, __ATOMIC_SEQ_CST,
                                    __ATOMIC_SEQ_CST);
    }
    for (uint32_t r = 0; r < c->nranks; r++)
        pto_comm_ring(c, r);
}

/* What a wait's condition reads. */
typedef struct PtoCommWaitArg {
    const PtoCommDeviceContext *c;
    uint32_t word, target;
    uint32_t lo, hi; /* the ranks whose counter is waited for */
} PtoCommWaitArg;

/* Wrap-safe: counters are u32 and only ever increase. */
static inline int pto_comm_reached(uint32_t v, uint32_t target)
{
    return (int32_t)(v - target) >= 0;
}

/* The first rank waited for whose counter has not reached the target, or w->hi. */
static inline uint32_t pto_comm_first_short(const PtoCommWaitArg *w)
{
    for (uint32_t r = w->lo; r < w->hi; r++)
        if (!pto_comm_reached(__atomic_load_n(pto_comm_word(w->c, r, w->word), __ATOMIC_SEQ_CST), w->target))
            return r;
    return w->hi;
}

/* The spin's condition: done, or nothing more to wait for (broken). */
static inline int pto_comm_wait_ready(const void *arg)
{
    const PtoCommWaitArg *w = arg;
    return __atomic_load_n(pto_comm_word(w->c, w->c->rank, PTO_COMM_SIG_BROKEN), __ATOMIC_SEQ_CST) != 0 ||
           pto_comm_first_short(w) == w->hi;
}

/* A peer still short of the wait's target that left (PID word
   PTO_COMM_PID_GONE) or, with probe_processes, whose process no longer
   exists; w->hi when none. A PID word of 0 is a peer that has not signed in
   yet: not lost. The counter is read again after the PID word: a peer bumps
   its counter before it can leave, so one that reached the target and then
   left did its part and fails nobody. */
static inline uint32_t pto_comm_lost_peer(const PtoCommWaitArg *w, int probe_processes)
{
    const PtoCommDeviceContext *c = w->c;
    const pid_t self = getpid();
    for (uint32_t r = w->lo; r < w->hi; r++) {
        if (r == c->rank)
            continue;
        uint32_t pid = __atomic_load_n(pto_comm_word(c, r, PTO_COMM_SIG_PID), __ATOMIC_SEQ_CST);
        int lost = pid == PTO_COMM_PID_GONE ||
                   (probe_processes && pid != 0 && (pid_t)pid != self && (pid_t)pid > 0 && kill((pid_t)pid, 0) != 0 &&
                    errno == ESRCH);
        if (lost && !pto_comm_reached(__atomic_load_n(pto_comm_word(c, r, w->word), __ATOMIC_SEQ_CST), w->target))
            return r;
    }
    return w->hi;
}

/* Waits until the counter `word` of ranks [w->lo, w->hi) reached w->target
   (wrap-safe), the bounded spin first, then parked on this rank's doorbell,
   at most timeout_ms. Returns PTO_COMM_WAIT_OK, or fails with *who naming a
   rank: PTO_COMM_WAIT_BROKEN (this rank's BROKEN word set: who = its
   culprit), PTO_COMM_WAIT_LOST (a rank waited for left or its process died),
   or PTO_COMM_WAIT_TIMEOUT (who = the first rank short). The broken word is
   checked first: a broken domain fails every wait, even one whose counters
   are there. The wait does not break the domain itself; the caller decides
   (the collectives do). w->c must have passed pto_comm_check_context. */
static inline int pto_comm_wait_for(const PtoCommWaitArg *arg, uint32_t timeout_ms, uint32_t *who)
{
    const PtoCommWaitArg w = *arg;
    const PtoCommDeviceContext *c = w.c;
    uint32_t *bell = pto_comm_word(c, c->rank, PTO_COMM_SIG_DOORBELL);
    uint32_t *broken = pto_comm_word(c, c->rank, PTO_COMM_SIG_BROKEN);
    uint32_t dummy;
    if (who == NULL)
        who = &dummy;
    pto_spin_until(pto_comm_wait_ready, &w);
    const uint64_t start = pto_monotonic_ns();
    const uint64_t deadline = start + (uint64_t)timeout_ms * 1000000u;
    /* kill(2) is a system call per peer: probe processes at most once per
       park slice; a PID word that says gone is read on every wake. */
    uint64_t next_probe = start;
    for (;;) {
        uint32_t ring = __atomic_load_n(bell, __ATOMIC_SEQ_CST);
        uint32_t b = __atomic_load_n(broken, __ATOMIC_SEQ_CST);
        if (b != 0) {
            *who = b - 1u;
            return PTO_COMM_WAIT_BROKEN;
        }
        uint32_t short_rank = pto_comm_first_short(&w);
        if (short_rank == w.hi)
            return PTO_COMM_WAIT_OK;
        uint64_t now = pto_monotonic_ns();
        int probe = now >= next_probe;
        if (probe)
            next_probe = now + (uint64_t)PTO_COMM_PARK_SLICE_MS * 1000000u;
        uint32_t lost = pto_comm_lost_peer(&w, probe);
        if (lost != w.hi) {
            *who = lost;
            return PTO_COMM_WAIT_LOST;
        }
        if (now >= deadline) {
            *who = short_rank;
            return PTO_COMM_WAIT_TIMEOUT;
        }
        uint64_t slice = deadline - now;
        if (slice > (uint64_t)PTO_COMM_PARK_SLICE_MS * 1000000u)
            slice = (uint64_t)PTO_COMM_PARK_SLICE_MS * 1000000u;
        struct timespec ts = { .tv_sec = (time_t)(slice / 1000000000u), .tv_nsec = (long)(slice % 1000000000u) };
        /* EAGAIN (rung since the read), EINTR and ETIMEDOUT all just mean:
           look again. */
        syscall(SYS_futex, bell, FUTEX_WAIT, ring, &ts, NULL, 0);
    }
}

/* Waits until every rank's counter `word` reached `target`, at most the
   domain's timeout (pto_comm_wait_for). */
static inline int pto_comm_wait_all(const PtoCommDeviceContext *c, uint32_t word, uint32_t target, uint32_t *who)
{
    const PtoCommWaitArg w = { c, word, target, 0, c->nranks };
    return pto_comm_wait_for(&w, c->timeout_ms, who);
}

#endif

/*
 * The network proxy of a rank of a group across hosts (util/comm_span.h,
 * ptorun/pto_comm.h's span words): one thread that parks on its bell (a futex
 * word, no polling) until a collective kernel of a domain this rank leads
 * posts a host step in its signal block and rings. It then runs the step
 * between the hosts' leaders over Gloo:
 *
 *   1. every leader's intent and step, gathered: hosts that disagree end the
 *      step DISAGREE (the first differing intent word, its value per host) on
 *      every host alike, and nothing moves (the leaders' group stays usable);
 *   2. MIRROR_ALL: every host's members' data, gathered into this host's
 *      mirrors of the other hosts' members; MIRROR_ONE: the root's alone;
 *      SUM: the hosts' sums (each in its leader's first mirror) summed in
 *      place, in host order;
 *   3. the outcome (status, culprit) and then DONE = the step's sequence into
 *      the leader's block, and every member on this host is rung.
 *
 * A Gloo failure breaks the domain's leaders' group: that step and every later
 * one of the domain end with the same status and culprit. The thread is the
 * only user of the leaders' groups; domains come and go under the lock.
 */
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ptorun/pto_runtime_c_api.h"
#include "util/comm_signal.h"
#include "util/comm_span_internal.h"
#include "util/last_error.h"

typedef struct SpanDomain {
    struct SpanDomain *next;
    CommSpanWindows *w;
    const GlooApi *api;
    PtoGlooGroup *leaders;
    uint32_t group_rank[PTO_COMM_MAX_RANKS];   /* member -> group rank (Gloo's messages name those) */
    uint32_t broken_status, broken_culprit;    /* after a Gloo failure */
    int serving;
} SpanDomain;

struct SpanProxy {
    uint32_t bell;                             /* bumped by a kernel after it posted a step */
    int stop;                                  /* under lock */
    pthread_mutex_t lock;
    pthread_cond_t idle;                       /* a step ended */
    SpanDomain *domains;
    pthread_t thread;
    unsigned char *scratch;
    size_t scratch_bytes;
};

/* One step's record, as every leader gathers it. */
typedef struct StepRecord {
    uint32_t intent[PTO_COMM_INTENT_WORDS];
    uint32_t op, root;
    uint64_t offset, bytes;
} StepRecord;

static uint32_t *leader_block(const SpanDomain *d)
{
    return (uint32_t *)(uintptr_t)d->w->span.local.signals[0];
}

static uint64_t load64(const uint32_t *b, uint32_t at)
{
    return (uint64_t)__atomic_load_n(&b[at], __ATOMIC_RELAXED) |
           (uint64_t)__atomic_load_n(&b[at + 1], __ATOMIC_RELAXED) << 32;
}

static void store64(uint32_t *b, uint32_t at, uint64_t v)
{
    __atomic_store_n(&b[at], (uint32_t)v, __ATOMIC_RELAXED);
    __atomic_store_n(&b[at + 1], (uint32_t)(v >> 32), __ATOMIC_RELAXED);
}

static int pending(const SpanDomain *d)
{
    const uint32_t *b = leader_block(d);
    return __atomic_load_n(&b[PTO_COMM_SIG_SPAN_SEQ], __ATOMIC_ACQUIRE) !=
           __atomic_load_n(&b[PTO_COMM_SIG_SPAN_DONE], __ATOMIC_RELAXED);
}

static void *scratch(SpanProxy *p, size_t bytes)
{
    if (bytes > p->scratch_bytes) {
        unsigned char *s = realloc(p->scratch, bytes);
        if (s == NULL)
            return NULL;
        p->scratch = s;
        p->scratch_bytes = bytes;
    }
    return p->scratch;
}

/* The member a Gloo message names ("... rank 3 ..." in group numbering), or
   the first leader of another host when it names none. */
static uint32_t culprit_of(const SpanDomain *d, const char *message)
{
    const PtoCommSpan *s = &d->w->span;
    const char *at = message;
    while ((at = strstr(at, "rank ")) != NULL) {
        unsigned r;
        if (sscanf(at, "rank %u", &r) == 1)
            for (size_t i = 0; i < d->w->count; i++)
                if (d->group_rank[i] == r)
                    return (uint32_t)i;
        at += 5;
    }
    for (size_t i = 0; i < d->w->count; i++)
        if (s->host_of[i] != s->host)
            return (uint32_t)i;
    return 0;
}

static void fail_step(SpanDomain *d, int rc)
{
    d->broken_status = rc == PTO_ERR_DEVICE    ? PTO_COMM_SPAN_LOST
                       : rc == PTO_ERR_TIMEOUT ? PTO_COMM_SPAN_TIMEOUT
                                               : PTO_COMM_SPAN_FAILED;
    d->broken_culprit = culprit_of(d, d->api->last_error());
}

/* The first intent word (in the order the kernels compare them) on which the
   hosts differ, written with every host's value; 0 when they agree. */
static int disagreement(uint32_t *b, const StepRecord *all, uint32_t hosts)
{
    static const uint32_t order[] = { PTO_COMM_INTENT_KIND, PTO_COMM_INTENT_OP,     PTO_COMM_INTENT_DTYPE,
                                      PTO_COMM_INTENT_COUNT, PTO_COMM_INTENT_OFFSET, PTO_COMM_INTENT_ROOT,
                                      PTO_COMM_INTENT_WINDOW };
    for (size_t f = 0; f < sizeof order / sizeof order[0]; f++) {
        uint32_t at = order[f];
        int wide = at == PTO_COMM_INTENT_COUNT || at == PTO_COMM_INTENT_OFFSET || at == PTO_COMM_INTENT_WINDOW;
        int differs = 0;
        for (uint32_t h = 0; h < hosts; h++) {
            uint64_t v = wide ? (uint64_t)all[h].intent[at] | (uint64_t)all[h].intent[at + 1] << 32
                              : all[h].intent[at];
            uint64_t v0 = wide ? (uint64_t)all[0].intent[at] | (uint64_t)all[0].intent[at + 1] << 32
                               : all[0].intent[at];
            differs |= v != v0;
            store64(b, PTO_COMM_SIG_SPAN_VALUES + 2 * h, v);
        }
        if (differs) {
            __atomic_store_n(&b[PTO_COMM_SIG_SPAN_FIELD], at, __ATOMIC_RELAXED);
            return 1;
        }
    }
    return 0;
}

/* Every host's members' data (MIRROR_ALL) or the root's (MIRROR_ONE) into
   this host's mirrors. Hosts' parts come in host order, each its members in
   domain order. */
static int mirror(SpanProxy *p, SpanDomain *d, uint32_t op, uint32_t root, uint64_t off, uint64_t bytes)
{
    const CommSpanWindows *w = d->w;
    const PtoCommSpan *s = &w->span;
    size_t per_host[PTO_COMM_MAX_RANKS] = { 0 }, total = 0, mine = 0;
    for (size_t i = 0; i < w->count; i++)
        if (op == PTO_COMM_SPAN_MIRROR_ALL || i == root)
            per_host[s->host_of[i]] += bytes;
    for (uint32_t h = 0; h < s->hosts; h++)
        total += per_host[h];
    mine = per_host[s->host];
    unsigned char *in = scratch(p, total + mine);
    if (in == NULL)
        return pto_fail(PTO_ERR_OUT_OF_MEMORY, "comm: the network proxy is out of host memory");
    unsigned char *out = in + mine, *at = in;
    for (size_t i = 0; i < w->count; i++)
        if (s->host_of[i] == s->host && (op == PTO_COMM_SPAN_MIRROR_ALL || i == root)) {
            memcpy(at, (unsigned char *)w->base[i] + off, bytes);
            at += bytes;
        }
    int rc = d->api->allgatherv(d->leaders, in, out, per_host);
    if (rc != PTO_OK)
        return rc;
    at = out;
    for (uint32_t h = 0; h < s->hosts; h++)
        for (size_t i = 0; i < w->count; i++)
            if (s->host_of[i] == h && (op == PTO_COMM_SPAN_MIRROR_ALL || i == root)) {
                if (h != s->host)
                    memcpy((unsigned char *)w->base[i] + off, at, bytes);
                at += bytes;
            }
    return PTO_OK;
}

/* The first member on another host: its mirror, in the leader's share, holds
   this host's sum of an allreduce (kernels_collective.c). */
static size_t first_remote(const SpanDomain *d)
{
    size_t i = 0;
    while (d->w->span.host_of[i] == d->w->span.host)
        i++;
    return i;
}

static void run_step(SpanProxy *p, SpanDomain *d)
{
    uint32_t *b = leader_block(d);
    const uint32_t seq = __atomic_load_n(&b[PTO_COMM_SIG_SPAN_SEQ], __ATOMIC_ACQUIRE);
    StepRecord mine = {
        .op = __atomic_load_n(&b[PTO_COMM_SIG_SPAN_OP], __ATOMIC_RELAXED),
        .root = __atomic_load_n(&b[PTO_COMM_SIG_SPAN_ROOT], __ATOMIC_RELAXED),
        .offset = load64(b, PTO_COMM_SIG_SPAN_OFFSET),
        .bytes = load64(b, PTO_COMM_SIG_SPAN_BYTES),
    };
    for (uint32_t i = 0; i < PTO_COMM_INTENT_WORDS; i++)
        mine.intent[i] = __atomic_load_n(&b[PTO_COMM_SIG_INTENT + i], __ATOMIC_RELAXED);
    uint32_t status = d->broken_status;
    if (status == PTO_COMM_SPAN_OK) {
        StepRecord all[PTO_COMM_MAX_RANKS];
        int rc = d->api->allgather(d->leaders, &mine, all, sizeof mine);
        if (rc == PTO_OK && disagreement(b, all, d->w->span.hosts)) {
            status = PTO_COMM_SPAN_DISAGREE;
        } else if (rc == PTO_OK) {
            void *data = (unsigned char *)d->w->base[first_remote(d)] + mine.offset;
            if (mine.op == PTO_COMM_SPAN_SUM && mine.intent[PTO_COMM_INTENT_DTYPE] == PTO_DTYPE_I32)
                rc = d->api->allreduce_i32(d->leaders, data, mine.bytes / 4u);
            else if (mine.op == PTO_COMM_SPAN_SUM)
                rc = d->api->allreduce_f32(d->leaders, data, mine.bytes / 4u);
            else
                rc = mirror(p, d, mine.op, mine.root, mine.offset, mine.bytes);
        }
        if (rc != PTO_OK && status == PTO_COMM_SPAN_OK) {
            fail_step(d, rc);
            status = d->broken_status;
        }
    }
    __atomic_store_n(&b[PTO_COMM_SIG_SPAN_STATUS], status, __ATOMIC_RELAXED);
    __atomic_store_n(&b[PTO_COMM_SIG_SPAN_CULPRIT], d->broken_culprit, __ATOMIC_RELAXED);
    __atomic_store_n(&b[PTO_COMM_SIG_SPAN_DONE], seq, __ATOMIC_SEQ_CST);
    const PtoCommDeviceContext *local = &d->w->span.local;
    for (uint32_t r = 0; r < local->nranks; r++)
        pto_comm_ring(local, r);
}

/* A domain with a step posted and not being served, marked served; or NULL. */
static SpanDomain *take_pending(SpanProxy *p)
{
    for (SpanDomain *d = p->domains; d != NULL; d = d->next)
        if (!d->serving && pending(d)) {
            d->serving = 1;
            return d;
        }
    return NULL;
}

static void *proxy_main(void *arg)
{
    SpanProxy *p = arg;
    pthread_mutex_lock(&p->lock);
    while (!p->stop) {
        /* read before the scan: a ring after it makes the wait return at once */
        uint32_t rung = __atomic_load_n(&p->bell, __ATOMIC_SEQ_CST);
        SpanDomain *d = take_pending(p);
        if (d != NULL) {
            pthread_mutex_unlock(&p->lock);
            run_step(p, d);
            pthread_mutex_lock(&p->lock);
            d->serving = 0;
            pthread_cond_broadcast(&p->idle);
            continue;
        }
        pthread_mutex_unlock(&p->lock);
        syscall(SYS_futex, &p->bell, FUTEX_WAIT, rung, NULL, NULL, 0);
        pthread_mutex_lock(&p->lock);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

int span_proxy_start(SpanProxy **out)
{
    SpanProxy *p = calloc(1, sizeof *p);
    if (p == NULL)
        return pto_fail(PTO_ERR_OUT_OF_MEMORY, "comm_init: out of host memory");
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->idle, NULL);
    int e = pthread_create(&p->thread, NULL, proxy_main, p);
    if (e != 0) {
        pthread_cond_destroy(&p->idle);
        pthread_mutex_destroy(&p->lock);
        free(p);
        return pto_fail(PTO_ERR_OUT_OF_MEMORY, "comm_init: cannot start the network proxy: %s", strerror(e));
    }
    *out = p;
    return PTO_OK;
}

static void ring(SpanProxy *p)
{
    __atomic_fetch_add(&p->bell, 1u, __ATOMIC_SEQ_CST);
    syscall(SYS_futex, &p->bell, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

void span_proxy_stop(SpanProxy *p)
{
    if (p == NULL)
        return;
    pthread_mutex_lock(&p->lock);
    p->stop = 1;
    pthread_mutex_unlock(&p->lock);
    ring(p);
    pthread_join(p->thread, NULL);
    while (p->domains != NULL) { /* none is left unless a caller skipped its free */
        SpanDomain *d = p->domains;
        p->domains = d->next;
        d->api->close(d->leaders);
        free(d);
    }
    free(p->scratch);
    pthread_cond_destroy(&p->idle);
    pthread_mutex_destroy(&p->lock);
    free(p);
}

uint32_t *span_proxy_bell(SpanProxy *p)
{
    return &p->bell;
}

int span_proxy_add(SpanProxy *p, const GlooApi *api, CommSpanWindows *w, PtoGlooGroup *leaders,
                   const uint32_t *member_group_rank)
{
    SpanDomain *d = calloc(1, sizeof *d);
    if (d == NULL) {
        api->close(leaders);
        return pto_fail(PTO_ERR_OUT_OF_MEMORY, "comm: out of host memory");
    }
    d->w = w;
    d->api = api;
    d->leaders = leaders;
    memcpy(d->group_rank, member_group_rank, w->count * sizeof *member_group_rank);
    pthread_mutex_lock(&p->lock);
    d->next = p->domains;
    p->domains = d;
    pthread_mutex_unlock(&p->lock);
    return PTO_OK;
}

void span_proxy_remove(SpanProxy *p, CommSpanWindows *w)
{
    pthread_mutex_lock(&p->lock);
    SpanDomain **at, *d;
    for (;;) { /* found again after each wait: the list may have changed */
        at = &p->domains;
        while (*at != NULL && (*at)->w != w)
            at = &(*at)->next;
        d = *at;
        if (d == NULL || !d->serving)
            break;
        pthread_cond_wait(&p->idle, &p->lock);
    }
    if (d != NULL)
        *at = d->next;
    pthread_mutex_unlock(&p->lock);
    if (d != NULL) {
        d->api->close(d->leaders);
        free(d);
    }
}

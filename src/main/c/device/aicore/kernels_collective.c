/*
 * The collectives: allreduce_sum, allgather, reduce_scatter, broadcast over a
 * communication domain (ptorun/pto_comm.h). The domain's descriptor comes as a
 * SCALAR parameter holding the device address of a PtoCommDeviceContext.
 *
 * Symmetric windows: the data tensor x must lie wholly inside this rank's
 * window; every peer's x is at the same offset in its own window, and every
 * rank has read/write access to every window, so a collective is plain loads
 * and stores into peers' windows between two syncs.
 *
 * Syncs: every call of any collective on a domain first signals its entry
 * counter and waits for every rank's entry counter to reach its own new
 * value, then does its work, then does the same with its exit counter (so
 * nobody reads a result, or reuses its window, before every writer is done).
 * Each call adds exactly 1 to each, whatever the collective, its size or its
 * success; the target is computed from this rank's own new value. That is
 * correct because every rank of a domain calls the domain's collectives in
 * the same order, the same number of times (the rule callers must keep).
 *
 * Failures: a sync that fails breaks the domain naming the rank it blames
 * (pto_comm_break), so every rank fails fast naming the same rank:
 * PTO_KERNEL_ERR_COMM_TIMEOUT_BASE + r (this rank timed out waiting for r) or
 * PTO_KERNEL_ERR_PEER_LOST_BASE + r (r is gone, or the domain was broken
 * naming r, e.g. by a rank that timed out waiting for it). A kernel that
 * refuses its arguments after its descriptor checked out breaks the domain
 * naming itself before returning its code: its peers would otherwise wait for
 * it until their timeout. A refusal writes no data.
 *
 * Agreement: before its entry signal every rank publishes its intent (kind,
 * dtype, op, root, element count, x's offset in the window, the window's
 * bytes) in its own signal block (PTO_COMM_SIG_INTENT); after the entry sync
 * every rank reads every rank's intent. A peer cannot overwrite its intent
 * before a slow rank has read it: it writes the next one only when it starts
 * its next collective on the domain, after its exit sync, which completes
 * only once every rank signalled exit, i.e. after every rank compared. When
 * the intents differ no data moves, every rank still does the exit sync (each
 * call consumes one count of each counter, so the domain stays aligned and
 * usable for the next, agreeing collective: nothing is broken, nothing was
 * written) and fails with PTO_KERNEL_ERR_RANKS_DISAGREE, its message built
 * from the same words on every rank: the same text everywhere.
 *
 * Sums are exact rank-order f32 (or wrapping i32) additions, one rounding
 * each: ((x0 + x1) + x2) + ..., the same bits on every rank (the image is
 * built with -ffp-contract=off).
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "device/aicore/kernel_common.h"
#include "util/comm_signal.h"

#define COLL_ENTRY (PTO_COMM_SIG_COUNTERS + 0u)
#define COLL_EXIT (PTO_COMM_SIG_COUNTERS + 1u)
#define COLL_MID (PTO_COMM_SIG_COUNTERS + 2u) /* across hosts: allreduce's host sum is whole */

/* Elements per block of a reduction: nr input blocks and the sum stay in L1. */
#define COLL_BLOCK 1024u

/* A data tensor: contiguous 4-byte elements. */
typedef struct CollTensor {
    char *p;
    uint64_t bytes;
    uint32_t dtype; /* PTO_DTYPE_F32 or PTO_DTYPE_I32 */
} CollTensor;

/* The descriptor at scalar args[i], or NULL. */
static const PtoCommDeviceContext *coll_context(const uint64_t *args, uint32_t i)
{
    const PtoCommDeviceContext *c = (const PtoCommDeviceContext *)(uintptr_t)args[i];
    return pto_comm_check_context(c) == PTO_COMM_WAIT_OK ? c : NULL;
}

/* Across hosts: the span after the descriptor, else NULL. */
static const PtoCommSpan *span_of(const PtoCommDeviceContext *c)
{
    return (const PtoCommSpan *)(uintptr_t)c->span;
}

/* What the ranks meet over: this host's members (across hosts) or all. */
static const PtoCommDeviceContext *meet_of(const PtoCommDeviceContext *c)
{
    return c->span != 0 ? &span_of(c)->local : c;
}

/* The domain rank of rank r of meet_of(c). */
static uint32_t domain_rank(const PtoCommDeviceContext *c, uint32_t r)
{
    return c->span != 0 ? span_of(c)->local_rank[r] : r;
}

/* Whether a strided view is dense row-major: its elements are one contiguous run. */
static int dense(const PtoTensorView *v)
{
    uint64_t expect = 1;
    for (int d = (int)v->ndims - 1; d >= 0; d--) {
        if (v->shape[d] > 1 && v->strides[d] != expect)
            return 0;
        expect *= v->shape[d];
    }
    return 1;
}

/* Tensor parameter i: flat f32, or a dense strided view of f32 or i32. */
static int32_t coll_tensor(const uint64_t *args, const PtoKernelContext *k, uint32_t i, int strided, int output,
                           CollTensor *t)
{
    int32_t rc;
    if (!strided) {
        if ((rc = kernel_check_f32_view(args[i], k->arg_sizes[i])) != PTO_KERNEL_OK)
            return rc;
        *t = (CollTensor){ (char *)(uintptr_t)args[i], k->arg_sizes[i], PTO_DTYPE_F32 };
        return PTO_KERNEL_OK;
    }
    KTensor kt;
    if ((rc = kernel_strided_tensor(args, k, i, output, &kt)) != PTO_KERNEL_OK)
        return rc;
    if (kt.dtype != PTO_DTYPE_F32 && kt.dtype != PTO_DTYPE_I32)
        return PTO_KERNEL_ERR_DTYPE;
    if (!dense(&k->views[i]))
        return PTO_KERNEL_ERR_SHAPE;
    uint64_t n = 1;
    for (uint32_t d = 0; d < kt.ndims; d++)
        n *= kt.shape[d]; /* bounded: kernel_strided_tensor checked the span */
    *t = (CollTensor){ kt.base, n * kt.esz, kt.dtype };
    return PTO_KERNEL_OK;
}

/* Whether t lies in this rank's window; *off is its offset there. */
static int in_window(const PtoCommDeviceContext *c, const CollTensor *t, uint64_t *off)
{
    uint64_t w = c->windows[c->rank], p = (uint64_t)(uintptr_t)t->p;
    if (p < w || p - w > c->window_size || t->bytes > c->window_size - (p - w))
        return 0;
    *off = p - w;
    return 1;
}

/* Whether [a, a + an) and [b, b + bn) share a byte. */
static int overlaps(uint64_t a, uint64_t an, uint64_t b, uint64_t bn)
{
    return an != 0 && bn != 0 && a < b + bn && b < a + an;
}

/* Whether y overlaps any rank's x (at offset off of each window). */
static int overlaps_any_input(const PtoCommDeviceContext *c, uint64_t off, uint64_t xbytes, const CollTensor *y)
{
    for (uint32_t r = 0; r < c->nranks; r++)
        if (overlaps(c->windows[r] + off, xbytes, (uint64_t)(uintptr_t)y->p, y->bytes))
            return 1;
    return 0;
}

/* A refusal once the descriptor is known: break the domain naming this rank. */
static int32_t refuse(const PtoCommDeviceContext *c, int32_t code)
{
    pto_comm_break(meet_of(c), c->rank);
    return code;
}

/* A failed wait over meet_of(c) as the kernel's code, the domain broken
   naming the rank it blames (a domain rank). */
static int32_t wait_failed(const PtoCommDeviceContext *c, int how, uint32_t who)
{
    const PtoCommDeviceContext *m = meet_of(c);
    switch (how) {
    case PTO_COMM_WAIT_BROKEN: /* the mark already is a domain rank */
        return PTO_KERNEL_ERR_PEER_LOST_BASE + (int32_t)(who % PTO_KERNEL_ERR_RANK_SPAN);
    case PTO_COMM_WAIT_TIMEOUT:
        pto_comm_break(m, domain_rank(c, who));
        return PTO_KERNEL_ERR_COMM_TIMEOUT_BASE + (int32_t)domain_rank(c, who);
    default: /* PTO_COMM_WAIT_LOST */
        pto_comm_break(m, domain_rank(c, who));
        return PTO_KERNEL_ERR_PEER_LOST_BASE + (int32_t)domain_rank(c, who);
    }
}

/* One sync over counter `word` (see the top of the file), among this host's
   members across hosts. */
static int32_t coll_sync(const PtoCommDeviceContext *c, uint32_t word)
{
    const PtoCommDeviceContext *m = meet_of(c);
    uint32_t who = 0;
    uint32_t target = pto_comm_signal(m, word, 1u);
    int how = pto_comm_wait_all(m, word, target, &who);
    return how == PTO_COMM_WAIT_OK ? PTO_KERNEL_OK : wait_failed(c, how, who);
}

/* What a collective call is about to do (ptorun/pto_comm.h, the intent words). */
typedef struct CollIntent {
    uint32_t kind, dtype, op, root;
    uint64_t count, offset, window;
} CollIntent;

static void put64(uint32_t *b, uint32_t at, uint64_t v)
{
    __atomic_store_n(&b[at], (uint32_t)v, __ATOMIC_RELAXED);
    __atomic_store_n(&b[at + 1], (uint32_t)(v >> 32), __ATOMIC_RELAXED);
}

static uint64_t get64(const uint32_t *b, uint32_t at)
{
    return (uint64_t)__atomic_load_n(&b[at], __ATOMIC_RELAXED) |
           (uint64_t)__atomic_load_n(&b[at + 1], __ATOMIC_RELAXED) << 32;
}

/* Into this rank's block; relaxed, published by the entry signal's seq_cst add
   (a release) and read after the wait saw it (an acquire). */
static void publish_intent(const PtoCommDeviceContext *c, const CollIntent *i)
{
    uint32_t *b = pto_comm_word(c, c->rank, PTO_COMM_SIG_INTENT);
    __atomic_store_n(&b[PTO_COMM_INTENT_KIND], i->kind, __ATOMIC_RELAXED);
    __atomic_store_n(&b[PTO_COMM_INTENT_DTYPE], i->dtype, __ATOMIC_RELAXED);
    __atomic_store_n(&b[PTO_COMM_INTENT_OP], i->op, __ATOMIC_RELAXED);
    __atomic_store_n(&b[PTO_COMM_INTENT_ROOT], i->root, __ATOMIC_RELAXED);
    put64(b, PTO_COMM_INTENT_COUNT, i->count);
    put64(b, PTO_COMM_INTENT_OFFSET, i->offset);
    put64(b, PTO_COMM_INTENT_WINDOW, i->window);
}

static CollIntent read_intent(const PtoCommDeviceContext *c, uint32_t r)
{
    const uint32_t *b = pto_comm_word(c, r, PTO_COMM_SIG_INTENT);
    return (CollIntent){ __atomic_load_n(&b[PTO_COMM_INTENT_KIND], __ATOMIC_RELAXED),
                         __atomic_load_n(&b[PTO_COMM_INTENT_DTYPE], __ATOMIC_RELAXED),
                         __atomic_load_n(&b[PTO_COMM_INTENT_OP], __ATOMIC_RELAXED),
                         __atomic_load_n(&b[PTO_COMM_INTENT_ROOT], __ATOMIC_RELAXED),
                         get64(b, PTO_COMM_INTENT_COUNT), get64(b, PTO_COMM_INTENT_OFFSET),
                         get64(b, PTO_COMM_INTENT_WINDOW) };
}

/* The intent's fields in the order they are compared (the first that differs
   is reported). */
enum { F_KIND, F_OP, F_DTYPE, F_COUNT, F_OFFSET, F_ROOT, F_WINDOW, F_FIELDS };

static const char *const field_name[F_FIELDS] = {
    "collective", "operation", "dtype", "element count", "data offset in the window", "root", "window size",
};

static uint64_t field_of(const CollIntent *i, int f)
{
    switch (f) {
    case F_KIND: return i->kind;
    case F_OP: return i->op;
    case F_DTYPE: return i->dtype;
    case F_COUNT: return i->count;
    case F_OFFSET: return i->offset;
    case F_ROOT: return i->root;
    default: return i->window;
    }
}

static const char *kind_name(uint64_t kind)
{
    switch (kind) {
    case PTO_COMM_ALLREDUCE_SUM: return "allreduce_sum";
    case PTO_COMM_ALLGATHER: return "allgather";
    case PTO_COMM_REDUCE_SCATTER: return "reduce_scatter";
    case PTO_COMM_BROADCAST: return "broadcast";
    default: return "no collective";
    }
}

/* A field's value as the message shows it. */
static void format_value(int f, uint64_t v, char *buf, size_t size)
{
    if (f == F_KIND)
        snprintf(buf, size, "%s", kind_name(v));
    else if (f == F_OP)
        snprintf(buf, size, "%s", v == PTO_COMM_OP_SUM ? "sum" : "none");
    else if (f == F_DTYPE && (v == PTO_DTYPE_F32 || v == PTO_DTYPE_I32))
        snprintf(buf, size, "%s", v == PTO_DTYPE_F32 ? "f32" : "i32");
    else
        snprintf(buf, size, "%llu", (unsigned long long)v);
}

/* Appends to buf at *used, never past size (truncates). */
__attribute__((format(printf, 4, 5))) static void append(char *buf, size_t size, size_t *used, const char *fmt, ...)
{
    if (*used + 1 >= size)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *used, size - *used, fmt, ap);
    va_end(ap);
    if (n > 0)
        *used = *used + (size_t)n < size ? *used + (size_t)n : size - 1;
}

/* "<kind>: the ranks disagree on the <field>: rank 1 has 1000, the others 1001
   (rank 0 1001, rank 1 1000, rank 2 1001)": the odd ranks first (those whose
   value is not the majority's; ties go to the lowest rank's value), so the
   first rank a reader finds is one that differs, then every rank's value.
   all[i] is domain rank name[i]'s intent (name NULL: rank i's). */
static void disagree_message(uint32_t nranks, const uint32_t *name, const CollIntent *all, int f, char *buf,
                             size_t size)
{
    uint32_t best = 0, best_votes = 0;
    for (uint32_t r = 0; r < nranks; r++) {
        uint32_t votes = 0;
        for (uint32_t q = 0; q < nranks; q++)
            votes += field_of(&all[q], f) == field_of(&all[r], f);
        if (votes > best_votes) {
            best = r;
            best_votes = votes;
        }
    }
    const uint64_t majority = field_of(&all[best], f);
    char v[32];
    size_t used = 0;
    buf[0] = '\0';
    append(buf, size, &used, "%s: the ranks disagree on the %s: ", f == F_KIND ? "collective" : kind_name(all[0].kind),
           field_name[f]);
    for (uint32_t r = 0; r < nranks; r++) {
        if (field_of(&all[r], f) == majority)
            continue;
        format_value(f, field_of(&all[r], f), v, sizeof v);
        append(buf, size, &used, "rank %u has %s, ", name != NULL ? name[r] : r, v);
    }
    format_value(f, majority, v, sizeof v);
    append(buf, size, &used, "the others %s (", v);
    for (uint32_t r = 0; r < nranks; r++) {
        format_value(f, field_of(&all[r], f), v, sizeof v);
        append(buf, size, &used, "%srank %u %s", r == 0 ? "" : ", ", name != NULL ? name[r] : r, v);
    }
    append(buf, size, &used, ")");
}

/* The first field on which some intent of all[0..n) differs from all[0], or -1. */
static int first_disagreement(uint32_t n, const CollIntent *all)
{
    for (int f = 0; f < F_FIELDS; f++)
        for (uint32_t r = 1; r < n; r++)
            if (field_of(&all[r], f) != field_of(&all[0], f))
                return f;
    return -1;
}

/* A disagreement found: the message into k's channel, the exit sync (the
   domain stays aligned and usable), PTO_KERNEL_ERR_RANKS_DISAGREE (or the
   exit sync's failure). */
static int32_t disagreed(const PtoCommDeviceContext *c, const PtoKernelContext *k, uint32_t n, const uint32_t *name,
                         const CollIntent *all, int f)
{
    int32_t rc = coll_sync(c, COLL_EXIT);
    if (rc != PTO_KERNEL_OK)
        return rc; /* the domain broke meanwhile: that is the run's failure */
    if (k->message != NULL && k->message_bytes > 0)
        disagree_message(n, name, all, f, k->message, k->message_bytes);
    return PTO_KERNEL_ERR_RANKS_DISAGREE;
}

/* A collective's entry: publishes this rank's intent, does the entry sync and
   compares the intents of the ranks it met (this host's, across hosts).
   PTO_KERNEL_OK: go ahead (the caller does the exit sync). On disagreement
   see disagreed(). A failed entry sync returns its code. */
static int32_t coll_enter(const PtoCommDeviceContext *c, const PtoKernelContext *k, const CollIntent *mine)
{
    const PtoCommDeviceContext *m = meet_of(c);
    publish_intent(c, mine);
    int32_t rc = coll_sync(c, COLL_ENTRY);
    if (rc != PTO_KERNEL_OK)
        return rc;
    CollIntent all[PTO_COMM_MAX_RANKS];
    uint32_t name[PTO_COMM_MAX_RANKS];
    for (uint32_t r = 0; r < m->nranks; r++) {
        all[r] = read_intent(m, r);
        name[r] = domain_rank(c, r);
    }
    int f = first_disagreement(m->nranks, all);
    return f < 0 ? PTO_KERNEL_OK : disagreed(c, k, m->nranks, name, all, f);
}

/* ---- across hosts: the host step (ptorun/pto_comm.h, the span words) ---------- */

/* The intent field of an intent word (the proxy reports words). */
static int field_of_word(uint32_t word)
{
    switch (word) {
    case PTO_COMM_INTENT_KIND: return F_KIND;
    case PTO_COMM_INTENT_OP: return F_OP;
    case PTO_COMM_INTENT_DTYPE: return F_DTYPE;
    case PTO_COMM_INTENT_COUNT: return F_COUNT;
    case PTO_COMM_INTENT_OFFSET: return F_OFFSET;
    case PTO_COMM_INTENT_ROOT: return F_ROOT;
    default: return F_WINDOW;
    }
}

static void set_field(CollIntent *i, int f, uint64_t v)
{
    switch (f) {
    case F_KIND: i->kind = (uint32_t)v; break;
    case F_OP: i->op = (uint32_t)v; break;
    case F_DTYPE: i->dtype = (uint32_t)v; break;
    case F_COUNT: i->count = v; break;
    case F_OFFSET: i->offset = v; break;
    case F_ROOT: i->root = (uint32_t)v; break;
    default: i->window = v; break;
    }
}

/* The host step of this collective: the leader (this host's member 0) posts
   it and rings the proxy; every member waits for its end in the leader's
   block (twice the timeout: the proxy's two Gloo calls are each bounded by
   it, and it names the culprit first). Its failures break this host's part
   of the domain naming the proxy's culprit; a disagreement between the hosts
   fails like one within a host, with every rank's value. */
static int32_t span_step(const PtoCommDeviceContext *c, const PtoKernelContext *k, const CollIntent *mine,
                         uint32_t op, uint32_t root, uint64_t off, uint64_t bytes)
{
    const PtoCommSpan *s = span_of(c);
    const PtoCommDeviceContext *m = &s->local;
    uint32_t *lead = pto_comm_word(m, 0, 0);
    const uint32_t seq = __atomic_load_n(pto_comm_word(m, m->rank, COLL_ENTRY), __ATOMIC_SEQ_CST);
    if (m->rank == 0) {
        __atomic_store_n(&lead[PTO_COMM_SIG_SPAN_OP], op, __ATOMIC_RELAXED);
        __atomic_store_n(&lead[PTO_COMM_SIG_SPAN_ROOT], root, __ATOMIC_RELAXED);
        put64(lead, PTO_COMM_SIG_SPAN_OFFSET, off);
        put64(lead, PTO_COMM_SIG_SPAN_BYTES, bytes);
        __atomic_store_n(&lead[PTO_COMM_SIG_SPAN_SEQ], seq, __ATOMIC_SEQ_CST);
        uint32_t *bell = (uint32_t *)(uintptr_t)s->proxy_bell;
        __atomic_fetch_add(bell, 1u, __ATOMIC_SEQ_CST);
        pto_comm_futex_wake(bell);
    }
    const PtoCommWaitArg w = { m, PTO_COMM_SIG_SPAN_DONE, seq, 0, 1 };
    uint32_t who = 0;
    int how = pto_comm_wait_for(&w, 2u * m->timeout_ms + 1000u, &who);
    /* the step's own outcome first: a failed step breaks this host's part, and a
       member that sees the break before the outcome must still report the outcome */
    const uint32_t done = __atomic_load_n(&lead[PTO_COMM_SIG_SPAN_DONE], __ATOMIC_SEQ_CST);
    if (how != PTO_COMM_WAIT_OK && !pto_comm_reached(done, seq))
        return wait_failed(c, how, who);
    const uint32_t status = __atomic_load_n(&lead[PTO_COMM_SIG_SPAN_STATUS], __ATOMIC_RELAXED);
    const uint32_t culprit = __atomic_load_n(&lead[PTO_COMM_SIG_SPAN_CULPRIT], __ATOMIC_RELAXED);
    switch (status) {
    case PTO_COMM_SPAN_OK:
        return PTO_KERNEL_OK;
    case PTO_COMM_SPAN_DISAGREE: {
        int f = field_of_word(__atomic_load_n(&lead[PTO_COMM_SIG_SPAN_FIELD], __ATOMIC_RELAXED));
        CollIntent all[PTO_COMM_MAX_RANKS];
        for (uint32_t r = 0; r < c->nranks; r++) {
            all[r] = *mine;
            set_field(&all[r], f, get64(lead, PTO_COMM_SIG_SPAN_VALUES + 2u * s->host_of[r]));
        }
        return disagreed(c, k, c->nranks, NULL, all, f);
    }
    case PTO_COMM_SPAN_TIMEOUT:
        pto_comm_break(m, culprit);
        return PTO_KERNEL_ERR_COMM_TIMEOUT_BASE + (int32_t)(culprit % PTO_KERNEL_ERR_RANK_SPAN);
    default: /* LOST, FAILED */
        pto_comm_break(m, culprit);
        return PTO_KERNEL_ERR_PEER_LOST_BASE + (int32_t)(culprit % PTO_KERNEL_ERR_RANK_SPAN);
    }
}

/* The first element of rank r's chunk of n: floor(r * n / nr), without
   overflowing. */
static uint64_t chunk_lo(uint64_t n, uint32_t nr, uint32_t r)
{
    return (uint64_t)r * (n / nr) + (uint64_t)r * (n % nr) / nr;
}

/* dst[i] = ((src[0][i] + src[1][i]) + src[2][i]) + ..., nr >= 2. Plain loops
   the compiler vectorizes; the order per element is the rank order. */
static void sum_f32(void *dst, char *const *src, uint32_t nr, uint64_t len)
{
    float *d = dst;
    const float *a = (const float *)src[0], *b = (const float *)src[1];
    for (uint64_t i = 0; i < len; i++)
        d[i] = a[i] + b[i];
    for (uint32_t p = 2; p < nr; p++) {
        const float *s = (const float *)src[p];
        for (uint64_t i = 0; i < len; i++)
            d[i] = d[i] + s[i];
    }
}

/* As sum_f32 for i32, wrapping (Java's int addition). */
static void sum_i32(void *dst, char *const *src, uint32_t nr, uint64_t len)
{
    uint32_t *d = dst;
    const uint32_t *a = (const uint32_t *)src[0], *b = (const uint32_t *)src[1];
    for (uint64_t i = 0; i < len; i++)
        d[i] = a[i] + b[i];
    for (uint32_t p = 2; p < nr; p++) {
        const uint32_t *s = (const uint32_t *)src[p];
        for (uint64_t i = 0; i < len; i++)
            d[i] = d[i] + s[i];
    }
}

/* Elements [lo, hi) of the sum over every rank's x (at offset off), block by
   block: sum(block, ...) for each, with src[p] pointing at rank p's block. */
typedef void (*CollBlockFn)(void *ctx, uint64_t at, uint64_t len, char *const *src);

static void for_each_block(const PtoCommDeviceContext *c, uint64_t off, uint64_t lo, uint64_t hi, CollBlockFn fn,
                           void *ctx)
{
    char *src[PTO_COMM_MAX_RANKS];
    for (uint64_t at = lo; at < hi; at += COLL_BLOCK) {
        uint64_t len = hi - at < COLL_BLOCK ? hi - at : COLL_BLOCK;
        for (uint32_t p = 0; p < c->nranks; p++)
            src[p] = (char *)(uintptr_t)(c->windows[p] + off + at * 4u);
        fn(ctx, at, len, src);
    }
}

typedef struct AllreduceCtx {
    const PtoCommDeviceContext *c;
    uint64_t off;
    uint32_t dtype;
} AllreduceCtx;

/* Sums one block into a local buffer, then writes it into every window. */
static void allreduce_block(void *ctx, uint64_t at, uint64_t len, char *const *src)
{
    const AllreduceCtx *a = ctx;
    _Alignas(64) float sum[COLL_BLOCK];
    if (a->dtype == PTO_DTYPE_I32)
        sum_i32(sum, src, a->c->nranks, len);
    else
        sum_f32(sum, src, a->c->nranks, len);
    for (uint32_t p = 0; p < a->c->nranks; p++)
        memcpy(src[p], sum, len * 4u);
    (void)at;
}

typedef struct ReduceScatterCtx {
    char *y;
    uint64_t lo;
    uint32_t dtype, nranks;
    const PtoCommSpan *span; /* across hosts: each host's ranks summed, then the hosts */
} ReduceScatterCtx;

/* d = the rank-order sum of src[0..nr), nr >= 1. */
static void sum_into(void *d, char *const *src, uint32_t nr, uint64_t len, uint32_t dtype)
{
    if (nr == 1)
        memcpy(d, src[0], len * 4u);
    else if (dtype == PTO_DTYPE_I32)
        sum_i32(d, src, nr, len);
    else
        sum_f32(d, src, nr, len);
}

/* Sums one block straight into y (y overlaps no input): in rank order, or
   across hosts ((h0) + h1) + ... with each h the rank-order sum of a host's
   ranks (docs/communication.md, Summation order). */
static void reduce_scatter_block(void *ctx, uint64_t at, uint64_t len, char *const *src)
{
    const ReduceScatterCtx *r = ctx;
    char *d = r->y + (at - r->lo) * 4u;
    if (r->span == NULL) {
        sum_into(d, src, r->nranks, len, r->dtype);
        return;
    }
    _Alignas(64) float part[COLL_BLOCK];
    char *host[PTO_COMM_MAX_RANKS];
    for (uint32_t h = 0; h < r->span->hosts; h++) {
        uint32_t n = 0;
        for (uint32_t p = 0; p < r->nranks; p++)
            if (r->span->host_of[p] == h)
                host[n++] = src[p];
        sum_into(h == 0 ? (void *)d : (void *)part, host, n, len, r->dtype);
        if (h > 0) {
            char *const two[2] = { d, (char *)part };
            sum_into(d, two, 2, len, r->dtype);
        }
    }
}

/* The checks of (INOUT x, SCALAR comm, ...) with `want` parameters: the
   descriptor (*c), x's view (*x) and x inside this rank's window at *off. A
   refusal after the descriptor checked out breaks the domain (refuse). */
static int32_t inout_in_window(const uint64_t *args, uint32_t nargs, uint32_t want, const PtoKernelContext *k,
                               const PtoCommDeviceContext **c, CollTensor *x, uint64_t *off)
{
    if (nargs != want)
        return PTO_KERNEL_ERR_PARAM_COUNT;
    if ((*c = coll_context(args, 1)) == NULL)
        return PTO_KERNEL_ERR_COMM_CONTEXT;
    static const uint32_t idx[1] = { 0 };
    int strided;
    int32_t rc;
    if ((rc = kernel_view_kind(k, idx, 1, &strided)) != PTO_KERNEL_OK ||
        (rc = coll_tensor(args, k, 0, strided, 1, x)) != PTO_KERNEL_OK)
        return refuse(*c, rc);
    return in_window(*c, x, off) ? PTO_KERNEL_OK : refuse(*c, PTO_KERNEL_ERR_NOT_IN_WINDOW);
}

/* allreduce_sum across hosts: this host's members sum their chunks of x into
   the leader's first mirror (the host's sum), the proxy sums the hosts' in
   place, in host order, and every member copies it into its x. Nothing is
   written to x before the hosts agreed. */
static int32_t allreduce_across(const PtoCommDeviceContext *c, const PtoKernelContext *k, const CollIntent *intent,
                                const CollTensor *x, uint64_t off)
{
    const PtoCommSpan *s = span_of(c);
    const PtoCommDeviceContext *m = &s->local;
    uint32_t first_remote = 0;
    while (s->host_of[first_remote] == s->host)
        first_remote++;
    char *sum = (char *)(uintptr_t)(c->windows[first_remote] + off);
    uint64_t n = x->bytes / 4u, lo = chunk_lo(n, m->nranks, m->rank), hi = chunk_lo(n, m->nranks, m->rank + 1);
    ReduceScatterCtx r = { sum + lo * 4u, lo, x->dtype, m->nranks, NULL };
    for_each_block(m, off, lo, hi, reduce_scatter_block, &r);
    int32_t rc = coll_sync(c, COLL_MID);
    if (rc == PTO_KERNEL_OK)
        rc = span_step(c, k, intent, PTO_COMM_SPAN_SUM, 0, off, x->bytes);
    if (rc != PTO_KERNEL_OK)
        return rc;
    memcpy(x->p, sum, x->bytes);
    return coll_sync(c, COLL_EXIT);
}

/* allreduce_sum(INOUT x, SCALAR comm): every rank's x = x_0 + ... + x_{nr-1}.
   Rank r reduces chunk r, reading it from every window and writing the sum
   into every window (a fused reduce-scatter and allgather). */
KERNEL_SIGNATURE(allreduce_sum)
{
    const PtoCommDeviceContext *c;
    CollTensor x;
    uint64_t off;
    int32_t rc = inout_in_window(args, nargs, 2, k, &c, &x, &off);
    if (rc != PTO_KERNEL_OK)
        return rc;
    const CollIntent intent = { PTO_COMM_ALLREDUCE_SUM, x.dtype, PTO_COMM_OP_SUM, 0, x.bytes / 4u, off, c->window_size };
    if ((rc = coll_enter(c, k, &intent)) != PTO_KERNEL_OK)
        return rc;
    if (c->span != 0)
        return allreduce_across(c, k, &intent, &x, off);
    if (c->nranks > 1) {
        uint64_t n = x.bytes / 4u;
        AllreduceCtx a = { c, off, x.dtype };
        for_each_block(c, off, chunk_lo(n, c->nranks, c->rank), chunk_lo(n, c->nranks, c->rank + 1), allreduce_block,
                       &a);
    }
    return coll_sync(c, COLL_EXIT);
}

/* The checks of (IN x, OUT y, SCALAR comm): x in the window, y of x's kind
   and dtype overlapping no rank's x. */
static int32_t x_y_comm(const uint64_t *args, uint32_t nargs, const PtoKernelContext *k,
                        const PtoCommDeviceContext **cp, CollTensor *x, CollTensor *y, uint64_t *off)
{
    static const uint32_t idx[2] = { 0, 1 };
    if (nargs != 3)
        return PTO_KERNEL_ERR_PARAM_COUNT;
    const PtoCommDeviceContext *c = *cp = coll_context(args, 2);
    if (c == NULL)
        return PTO_KERNEL_ERR_COMM_CONTEXT;
    int strided;
    int32_t rc;
    if ((rc = kernel_view_kind(k, idx, 2, &strided)) != PTO_KERNEL_OK ||
        (rc = coll_tensor(args, k, 0, strided, 0, x)) != PTO_KERNEL_OK ||
        (rc = coll_tensor(args, k, 1, strided, 1, y)) != PTO_KERNEL_OK)
        return refuse(c, rc);
    if (x->dtype != y->dtype)
        return refuse(c, PTO_KERNEL_ERR_DTYPE);
    if (!in_window(c, x, off))
        return refuse(c, PTO_KERNEL_ERR_NOT_IN_WINDOW);
    return PTO_KERNEL_OK;
}

/* allgather(IN x, OUT y, SCALAR comm): y[r*n, (r+1)*n) = x_r for every rank r;
   bytes(y) == nranks * bytes(x). */
KERNEL_SIGNATURE(allgather)
{
    const PtoCommDeviceContext *c = NULL;
    CollTensor x, y;
    uint64_t off;
    int32_t rc = x_y_comm(args, nargs, k, &c, &x, &y, &off);
    if (rc != PTO_KERNEL_OK)
        return rc;
    uint64_t want;
    if (__builtin_mul_overflow(x.bytes, (uint64_t)c->nranks, &want) || want != y.bytes)
        return refuse(c, PTO_KERNEL_ERR_SHAPE);
    if (overlaps_any_input(c, off, x.bytes, &y))
        return refuse(c, PTO_KERNEL_ERR_COMM_OVERLAP);
    const CollIntent intent = { PTO_COMM_ALLGATHER, x.dtype, PTO_COMM_OP_NONE, 0, x.bytes / 4u, off, c->window_size };
    if ((rc = coll_enter(c, k, &intent)) != PTO_KERNEL_OK ||
        (c->span != 0 && (rc = span_step(c, k, &intent, PTO_COMM_SPAN_MIRROR_ALL, 0, off, x.bytes)) != PTO_KERNEL_OK))
        return rc;
    for (uint32_t p = 0; p < c->nranks; p++)
        memcpy(y.p + (uint64_t)p * x.bytes, (const char *)(uintptr_t)(c->windows[p] + off), x.bytes);
    return coll_sync(c, COLL_EXIT);
}

/* reduce_scatter(IN x, OUT y, SCALAR comm): y = x_0 + ... + x_{nr-1} over this
   rank's chunk, elements [floor(r*n/nr), floor((r+1)*n/nr)) of x's n;
   bytes(y) == the chunk's bytes. */
KERNEL_SIGNATURE(reduce_scatter)
{
    const PtoCommDeviceContext *c = NULL;
    CollTensor x, y;
    uint64_t off;
    int32_t rc = x_y_comm(args, nargs, k, &c, &x, &y, &off);
    if (rc != PTO_KERNEL_OK)
        return rc;
    uint64_t n = x.bytes / 4u, lo = chunk_lo(n, c->nranks, c->rank), hi = chunk_lo(n, c->nranks, c->rank + 1);
    if (y.bytes != (hi - lo) * 4u)
        return refuse(c, PTO_KERNEL_ERR_SHAPE);
    if (overlaps_any_input(c, off, x.bytes, &y))
        return refuse(c, PTO_KERNEL_ERR_COMM_OVERLAP);
    const CollIntent intent = { PTO_COMM_REDUCE_SCATTER, x.dtype, PTO_COMM_OP_SUM, 0, n, off, c->window_size };
    if ((rc = coll_enter(c, k, &intent)) != PTO_KERNEL_OK ||
        (c->span != 0 && (rc = span_step(c, k, &intent, PTO_COMM_SPAN_MIRROR_ALL, 0, off, x.bytes)) != PTO_KERNEL_OK))
        return rc;
    ReduceScatterCtx r = { y.p, lo, x.dtype, c->nranks, span_of(c) };
    for_each_block(c, off, lo, hi, reduce_scatter_block, &r);
    return coll_sync(c, COLL_EXIT);
}

/* broadcast(INOUT x, SCALAR comm, SCALAR root): every rank's x = x_root. */
KERNEL_SIGNATURE(broadcast)
{
    const PtoCommDeviceContext *c;
    CollTensor x;
    uint64_t off;
    int32_t rc = inout_in_window(args, nargs, 3, k, &c, &x, &off);
    if (rc != PTO_KERNEL_OK)
        return rc;
    if (args[2] >= c->nranks)
        return refuse(c, PTO_KERNEL_ERR_BAD_SCALAR);
    uint32_t root = (uint32_t)args[2];
    const CollIntent intent = { PTO_COMM_BROADCAST, x.dtype, PTO_COMM_OP_NONE, root, x.bytes / 4u, off, c->window_size };
    if ((rc = coll_enter(c, k, &intent)) != PTO_KERNEL_OK ||
        (c->span != 0 && (rc = span_step(c, k, &intent, PTO_COMM_SPAN_MIRROR_ONE, root, off, x.bytes)) != PTO_KERNEL_OK))
        return rc;
    if (c->rank != root)
        memcpy(x.p, (const char *)(uintptr_t)(c->windows[root] + off), x.bytes);
    return coll_sync(c, COLL_EXIT);
}

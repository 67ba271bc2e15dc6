/*
 * The span group (util/comm_span.h): a file root info passes through to the
 * shared-memory group; a "ptorun-gloo:" one opens the Gloo group of every
 * rank, gathers the host keys, joins this host's ranks in a shared-memory
 * group of their own (its root info a file in this host's /dev/shm, named by
 * the group id and the host's lowest rank) and starts the network proxy.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ptorun/pto_runtime_c_api.h"
#include "util/comm_signal.h"
#include "util/comm_span_internal.h"
#include "util/last_error.h"

#define HOST_KEY_BYTES 128

int comm_span_rootinfo_is_hosts(const char *rootinfo)
{
    return rootinfo != NULL && strncmp(rootinfo, "ptorun-gloo:", 12) == 0;
}

/* ---- joining ----------------------------------------------------------------- */

/* Boot, network namespace and /dev/shm: ranks that share all three share memory. */
static int host_key(char key[HOST_KEY_BYTES])
{
    char boot[64] = "";
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (f != NULL) {
        if (fgets(boot, sizeof boot, f) == NULL)
            boot[0] = '\0';
        fclose(f);
        boot[strcspn(boot, "\n")] = '\0';
    }
    struct stat net, shm;
    if (stat("/proc/self/ns/net", &net) != 0 || stat("/dev/shm", &shm) != 0)
        return pto_fail(PTO_ERR_FAILED, "comm_init: cannot tell this host apart (/proc/self/ns/net, /dev/shm): %s",
                        strerror(errno));
    memset(key, 0, HOST_KEY_BYTES);
    snprintf(key, HOST_KEY_BYTES, "boot %s net %llu shm %llu:%llu", boot, (unsigned long long)net.st_ino,
             (unsigned long long)shm.st_dev, (unsigned long long)shm.st_ino);
    return PTO_OK;
}

/* The address of this host's interface toward the store: what this rank's
   Gloo pairs listen on (a UDP connect sends nothing). */
static int bind_address(const char *rootinfo, char out[INET_ADDRSTRLEN])
{
    const char *at = strstr(rootinfo, "store=");
    char ip[INET_ADDRSTRLEN] = "";
    unsigned port = 0;
    if (at == NULL || sscanf(at, "store=%15[0-9.]:%u", ip, &port) != 2 || port == 0 || port > 65535)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "comm_init: root info \"%s\" names no store=<ipv4>:<port>",
                        rootinfo);
    struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    if (inet_pton(AF_INET, ip, &to.sin_addr) != 1)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "comm_init: root info store address %s is not IPv4", ip);
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return pto_fail(PTO_ERR_FAILED, "comm_init: socket: %s", strerror(errno));
    struct sockaddr_in me;
    socklen_t len = sizeof me;
    int ok = connect(s, (struct sockaddr *)&to, sizeof to) == 0 && getsockname(s, (struct sockaddr *)&me, &len) == 0;
    int e = errno;
    close(s);
    if (!ok)
        return pto_fail(PTO_ERR_FAILED, "comm_init: no route to the store %s:%u: %s", ip, port, strerror(e));
    inet_ntop(AF_INET, &me.sin_addr, out, INET_ADDRSTRLEN);
    return PTO_OK;
}

/* Hosts in the order of their lowest rank; this host's ranks in rank order. */
static void topology(CommSpan *g, const char *keys)
{
    uint32_t lowest[PTO_COMM_MAX_RANKS];
    g->hosts = 0;
    for (int r = 0; r < g->nranks; r++) {
        uint32_t h = 0;
        while (h < g->hosts && memcmp(keys + (size_t)lowest[h] * HOST_KEY_BYTES, keys + (size_t)r * HOST_KEY_BYTES,
                                      HOST_KEY_BYTES) != 0)
            h++;
        if (h == g->hosts)
            lowest[g->hosts++] = (uint32_t)r;
        g->host_of[r] = h;
    }
    uint32_t n = 0;
    for (int r = 0; r < g->nranks; r++)
        g->local_index[r] = g->host_of[r] == g->host_of[g->rank] ? n++ : SPAN_NOT_LOCAL;
}

static int join_hosts(CommSpan *g, const char *rootinfo)
{
    char bind[INET_ADDRSTRLEN], key[HOST_KEY_BYTES], path[160];
    int rc;
    if ((g->api = span_gloo_api()) == NULL)
        return pto_last_error_code();
    if ((rc = bind_address(rootinfo, bind)) != PTO_OK || (rc = host_key(key)) != PTO_OK)
        return rc;
    rc = g->api->open(rootinfo, g->rank, g->nranks, bind, g->timeout_ms, &g->gloo);
    if (rc != PTO_OK)
        return span_gloo_fail(g->api, rc, "comm_init: across hosts");
    char *keys = malloc((size_t)g->nranks * HOST_KEY_BYTES);
    if (keys == NULL) {
        rc = pto_fail(PTO_ERR_OUT_OF_MEMORY, "comm_init: out of host memory");
        goto fail;
    }
    rc = g->api->allgather(g->gloo, key, keys, HOST_KEY_BYTES);
    if (rc != PTO_OK) {
        free(keys);
        rc = span_gloo_fail(g->api, rc, "comm_init: gathering the host keys");
        goto fail;
    }
    topology(g, keys);
    free(keys);
    uint32_t leader = 0;
    while (g->host_of[leader] != g->host_of[g->rank])
        leader++;
    const char *id = strstr(rootinfo, "group=");
    snprintf(path, sizeof path, "/dev/shm/ptorun-span-%.32s-%u", id != NULL ? id + 6 : "x", leader);
    int local_ranks = 0;
    for (int r = 0; r < g->nranks; r++)
        local_ranks += g->local_index[r] != SPAN_NOT_LOCAL;
    rc = shm_group_join((int)g->local_index[g->rank], local_ranks, path, g->timeout_ms, &g->local);
    if (rc != PTO_OK)
        goto fail;
    if ((rc = span_proxy_start(&g->proxy)) != PTO_OK)
        goto fail_proxy;
    return PTO_OK;

fail_proxy:
    shm_group_leave(g->local);
fail:
    g->api->close(g->gloo);
    return rc;
}

int comm_span_join(int rank, int nranks, const char *rootinfo, uint32_t timeout_ms, CommSpan **out)
{
    CommSpan *g = calloc(1, sizeof *g);
    if (g == NULL)
        return pto_fail(PTO_ERR_OUT_OF_MEMORY, "comm_init: out of host memory");
    g->rank = rank;
    g->nranks = nranks;
    g->timeout_ms = timeout_ms;
    int rc;
    if (comm_span_rootinfo_is_hosts(rootinfo)) {
        rc = join_hosts(g, rootinfo);
    } else {
        for (int r = 0; r < nranks; r++)
            g->local_index[r] = (uint32_t)r;
        rc = shm_group_join(rank, nranks, rootinfo, timeout_ms, &g->local);
    }
    if (rc != PTO_OK) {
        free(g);
        return rc;
    }
    *out = g;
    return PTO_OK;
}

void comm_span_leave(CommSpan *g)
{
    if (g == NULL)
        return;
    span_proxy_stop(g->proxy); /* every domain was freed: it serves nothing */
    shm_group_leave(g->local);
    if (g->gloo != NULL)
        g->api->close(g->gloo);
    while (g->generations != NULL) {
        SpanGeneration *n = g->generations->next;
        free(g->generations);
        g->generations = n;
    }
    free(g);
}

void comm_span_mark_lost(CommSpan *g)
{
    shm_group_mark_lost(g->local);
}

int comm_span_barrier(CommSpan *g)
{
    int rc = shm_group_barrier(g->local);
    if (rc != PTO_OK || g->gloo == NULL || g->hosts == 1)
        return rc;
    rc = g->api->barrier(g->gloo);
    return rc == PTO_OK ? PTO_OK : span_gloo_fail(g->api, rc, "comm_barrier: across hosts");
}

/* ---- windows ----------------------------------------------------------------- */

/* The members' group ranks on this host, in domain order, as ranks of `local`. */
static size_t local_members(const CommSpan *g, const uint32_t *ranks, size_t count, uint32_t *out)
{
    size_t n = 0;
    for (size_t i = 0; i < count; i++)
        if (ranks[i] < (uint32_t)g->nranks && g->local_index[ranks[i]] != SPAN_NOT_LOCAL)
            out[n++] = g->local_index[ranks[i]];
    return n;
}

static CommSpanWindows *new_windows(size_t count, size_t bytes)
{
    CommSpanWindows *w = calloc(1, sizeof *w);
    if (w != NULL) {
        w->count = count;
        w->window_bytes = bytes;
    }
    return w;
}

/* Where a derived domain's windows are (comm_span_alloc_slice): the group's
   windows from byte `offset`. A slice allocates signal blocks only. */
typedef struct SpanSlice {
    const CommSpanWindows *group;
    size_t offset;
} SpanSlice;

static void *slice_base(const SpanSlice *slice, uint32_t group_rank)
{
    return (unsigned char *)slice->group->base[group_rank] + slice->offset;
}

/* A domain on this host: the shared-memory allocation, member for member. */
static int alloc_local(CommSpan *g, uint64_t key, const uint32_t *ranks, size_t count, size_t bytes,
                       const SpanSlice *slice, int local_failure, CommSpanWindows **out)
{
    uint32_t local[PTO_COMM_MAX_RANKS];
    if (g->gloo != NULL)
        local_members(g, ranks, count, local);
    const size_t own = slice != NULL ? 0 : bytes;
    CommSpanWindows *w = new_windows(count, own);
    ShmWindows *windows = NULL;
    /* out of host memory here still takes part, so the peers fail too instead of waiting */
    int rc = shm_group_alloc_windows(g->local, key, g->gloo != NULL ? local : ranks, count, own,
                                     w == NULL ? PTO_ERR_OUT_OF_MEMORY : local_failure, &windows);
    if (rc != PTO_OK) {
        free(w);
        return rc;
    }
    w->windows = windows;
    for (size_t i = 0; i < count; i++) {
        w->base[i] = slice != NULL ? slice_base(slice, ranks[i]) : shm_windows_base(w->windows, i);
        w->signals[i] = shm_windows_signals(w->windows, i);
    }
    *out = w;
    return PTO_OK;
}

/* What each member says before a domain across hosts is made. */
typedef struct SpanAsk {
    uint64_t bytes;
    int32_t failure;   /* local_failure, or a failure of this host's part */
    uint32_t ranks_hash;
} SpanAsk;

static uint32_t hash_ranks(const uint32_t *ranks, size_t count)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < count; i++)
        h = (h ^ ranks[i]) * 16777619u;
    return h;
}

/* Gathers every member's ask over `members` (a group of the domain's members,
   in rank order) and judges them alike on every member. */
static int agree(CommSpan *g, PtoGlooGroup *members, const uint32_t *ranks, size_t count, const SpanAsk *mine,
                 const char *what)
{
    SpanAsk all[PTO_COMM_MAX_RANKS];
    int rc = g->api->allgather(members, mine, all, sizeof *mine);
    if (rc != PTO_OK)
        return span_gloo_fail(g->api, rc, what);
    for (size_t i = 0; i < count; i++)
        if (all[i].ranks_hash != all[0].ranks_hash)
            return pto_fail(PTO_ERR_RANKS_DISAGREE, "%s: the ranks disagree on the domain's members: rank %u lists "
                            "others than rank %u", what, ranks[i], ranks[0]);
    for (size_t i = 0; i < count; i++)
        if (all[i].failure != PTO_OK)
            return pto_fail(all[i].failure == PTO_ERR_OUT_OF_MEMORY ? PTO_ERR_OUT_OF_MEMORY : all[i].failure,
                            "%s: rank %u could not make its part of the windows (%d)", what, ranks[i],
                            all[i].failure);
    /* the odd one first: the size most members asked for is the others' */
    size_t best = 0, best_votes = 0;
    for (size_t i = 0; i < count; i++) {
        size_t votes = 0;
        for (size_t j = 0; j < count; j++)
            votes += all[j].bytes == all[i].bytes;
        if (votes > best_votes) {
            best = i;
            best_votes = votes;
        }
    }
    for (size_t i = 0; i < count; i++)
        if (all[i].bytes != all[best].bytes)
            return pto_fail(PTO_ERR_RANKS_DISAGREE, "%s: the ranks disagree on the window size: rank %u asked for "
                            "%llu bytes, the others for %llu", what, ranks[i], (unsigned long long)all[i].bytes,
                            (unsigned long long)all[best].bytes);
    return PTO_OK;
}

/* This host's part of a domain across hosts: the members' windows and the
   mirrors of the other hosts' members, in one shared-memory allocation: each
   member's segment holds its window and then its share of the mirrors
   (mirror j of the remote members, in domain order, is slot j / L of local
   member j % L's share). A slice's windows and mirrors are the group's. */
static int make_host_part(CommSpan *g, uint64_t key, const uint32_t *ranks, size_t count, size_t bytes,
                          const SpanSlice *slice, CommSpanWindows *w)
{
    uint32_t local[PTO_COMM_MAX_RANKS];
    size_t l = local_members(g, ranks, count, local), remote = count - l;
    const size_t own = slice != NULL ? 0 : bytes; /* a slice: signal blocks only */
    size_t share = (remote + l - 1) / l;
    int rc = own > SIZE_MAX / (1 + share)
                 ? pto_fail(PTO_ERR_OUT_OF_MEMORY, "comm: a window of %zu bytes and its %zu mirrors overflow", own,
                            share)
                 : shm_group_alloc_windows(g->local, key, local, l, own * (1 + share), PTO_OK, &w->windows);
    if (rc != PTO_OK)
        return rc;
    size_t li = 0, ri = 0;
    for (size_t i = 0; i < count; i++) {
        if (g->local_index[ranks[i]] != SPAN_NOT_LOCAL) {
            w->base[i] = shm_windows_base(w->windows, li);
            w->signals[i] = shm_windows_signals(w->windows, li);
            li++;
        } else {
            w->base[i] = (unsigned char *)shm_windows_base(w->windows, ri % l) + (1 + ri / l) * own;
            w->signals[i] = NULL;
            ri++;
        }
        if (slice != NULL)
            w->base[i] = slice_base(slice, ranks[i]);
    }
    return PTO_OK;
}

static void free_host_part(CommSpan *g, CommSpanWindows *w)
{
    shm_windows_free(g->local, w->windows);
    w->windows = NULL;
}

/* The PtoCommSpan of a domain across hosts, as this rank sees it. */
static void describe_span(const CommSpan *g, const uint32_t *ranks, size_t count, CommSpanWindows *w)
{
    PtoCommSpan *s = &w->span;
    uint32_t host_index[PTO_COMM_MAX_RANKS]; /* group host -> domain host */
    for (uint32_t h = 0; h < PTO_COMM_MAX_RANKS; h++)
        host_index[h] = SPAN_NOT_LOCAL;
    s->hosts = 0;
    uint32_t n = 0;
    for (size_t i = 0; i < count; i++) {
        uint32_t gh = g->host_of[ranks[i]];
        if (host_index[gh] == SPAN_NOT_LOCAL)
            host_index[gh] = s->hosts++;
        s->host_of[i] = host_index[gh];
        if (w->signals[i] != NULL) {
            if (ranks[i] == (uint32_t)g->rank)
                s->local.rank = n;
            s->local_rank[n] = (uint32_t)i;
            s->local.windows[n] = (uint64_t)(uintptr_t)w->base[i];
            s->local.signals[n] = (uint64_t)(uintptr_t)w->signals[i];
            n++;
        }
    }
    s->host = host_index[g->host_of[g->rank]];
    s->local.nranks = n;
    s->proxy_bell = (uint64_t)(uintptr_t)span_proxy_bell(g->proxy);
    w->leads = s->local.rank == 0;
}

/* Members of a domain across hosts: the group of every rank for the group's
   windows, else a group of the members (tag: the allocation's key). */
static int open_members(CommSpan *g, const char *name, const uint32_t *ranks, size_t count, PtoGlooGroup **out)
{
    if (count == (size_t)g->nranks) {
        *out = g->gloo;
        return PTO_OK;
    }
    int members[PTO_COMM_MAX_RANKS];
    for (size_t i = 0; i < count; i++)
        members[i] = (int)ranks[i];
    char tag[64];
    snprintf(tag, sizeof tag, "m%s", name);
    int rc = g->api->open_subgroup(g->gloo, tag, members, count, out);
    return rc == PTO_OK ? PTO_OK : span_gloo_fail(g->api, rc, "comm: meeting a domain's members across hosts");
}

/* The hosts' leaders of the domain (each host's lowest member), in host order. */
static int open_leaders(CommSpan *g, const char *name, const uint32_t *ranks, size_t count, PtoGlooGroup **out)
{
    int leaders[PTO_COMM_MAX_RANKS];
    size_t n = 0;
    uint32_t seen = 0;
    for (size_t i = 0; i < count; i++)
        if (!(seen & (1u << g->host_of[ranks[i]]))) {
            seen |= 1u << g->host_of[ranks[i]];
            leaders[n++] = (int)ranks[i];
        }
    char tag[64];
    snprintf(tag, sizeof tag, "l%s", name);
    int rc = g->api->open_subgroup(g->gloo, tag, leaders, n, out);
    return rc == PTO_OK ? PTO_OK : span_gloo_fail(g->api, rc, "comm: connecting the hosts' leaders");
}

/* "<key>.<generation>": the name of this allocation's Gloo groups, the same
   on every member. */
static int allocation_name(CommSpan *g, uint64_t key, uint32_t members_hash, char *out, size_t size)
{
    SpanGeneration *gen = g->generations;
    while (gen != NULL && (gen->key != key || gen->members_hash != members_hash))
        gen = gen->next;
    if (gen == NULL) {
        if ((gen = calloc(1, sizeof *gen)) == NULL)
            return pto_fail(PTO_ERR_OUT_OF_MEMORY, "comm: out of host memory");
        gen->key = key;
        gen->members_hash = members_hash;
        gen->next = g->generations;
        g->generations = gen;
    }
    snprintf(out, size, "%llx.%x.%u", (unsigned long long)key, members_hash, gen->count++);
    return PTO_OK;
}

static int alloc_across(CommSpan *g, uint64_t key, const uint32_t *ranks, size_t count, size_t bytes,
                        const SpanSlice *slice, int local_failure, CommSpanWindows **out)
{
    const char *what = slice != NULL ? "comm_derive_context: across hosts" : "comm_alloc_windows: across hosts";
    for (size_t i = 1; i < count; i++)
        if (ranks[i] <= ranks[i - 1])
            return pto_fail(PTO_ERR_INVALID_ARGUMENT, "%s: a domain across hosts lists its ranks in ascending "
                            "order (rank %u follows rank %u)", what, ranks[i], ranks[i - 1]);
    PtoGlooGroup *members = NULL, *leaders = NULL;
    char name[48];
    int rc = allocation_name(g, key, hash_ranks(ranks, count), name, sizeof name);
    if (rc != PTO_OK || (rc = open_members(g, name, ranks, count, &members)) != PTO_OK)
        return rc;
    CommSpanWindows *w = new_windows(count, slice != NULL ? 0 : bytes);
    SpanAsk ask = { bytes, w == NULL ? PTO_ERR_OUT_OF_MEMORY : local_failure, hash_ranks(ranks, count) };
    if ((rc = agree(g, members, ranks, count, &ask, what)) != PTO_OK)
        goto fail_agree;
    /* every member agreed and came: make this host's part, then say how it went */
    ask.failure = make_host_part(g, key, ranks, count, bytes, slice, w);
    if ((rc = agree(g, members, ranks, count, &ask, what)) != PTO_OK)
        goto fail_part;
    describe_span(g, ranks, count, w);
    w->spans = 1;
    if (w->leads) {
        if ((rc = open_leaders(g, name, ranks, count, &leaders)) != PTO_OK)
            goto fail_part;
        if ((rc = span_proxy_add(g->proxy, g->api, w, leaders, ranks)) != PTO_OK)
            goto fail_part; /* the proxy closed the leaders' group */
    }
    if (members != g->gloo)
        g->api->close(members);
    *out = w;
    return PTO_OK;

fail_part:
    if (w->windows != NULL)
        free_host_part(g, w);
fail_agree:
    free(w);
    if (members != g->gloo)
        g->api->close(members);
    return rc;
}

static int alloc(CommSpan *g, uint64_t key, const uint32_t *ranks, size_t count, size_t bytes,
                 const SpanSlice *slice, int local_failure, CommSpanWindows **out)
{
    int across = 0;
    for (size_t i = 0; i < count; i++)
        across |= ranks[i] < (uint32_t)g->nranks && g->local_index[ranks[i]] == SPAN_NOT_LOCAL;
    if (!across)
        return alloc_local(g, key, ranks, count, bytes, slice, local_failure, out);
    return alloc_across(g, key, ranks, count, bytes, slice, local_failure, out);
}

int comm_span_alloc_windows(CommSpan *g, uint64_t key, const uint32_t *ranks, size_t count, size_t window_bytes,
                            int local_failure, CommSpanWindows **out)
{
    return alloc(g, key, ranks, count, window_bytes, NULL, local_failure, out);
}

int comm_span_alloc_slice(CommSpan *g, uint64_t key, const uint32_t *ranks, size_t count,
                          const CommSpanWindows *group, size_t offset, size_t bytes, int local_failure,
                          CommSpanWindows **out)
{
    if (group == NULL || group->count != (size_t)g->nranks || group->window_bytes == 0)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "comm: a slice needs the windows of every rank of the group");
    if (bytes == 0 || offset > group->window_bytes || bytes > group->window_bytes - offset)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "comm: the slice [%zu, +%zu) is empty or leaves the window of "
                        "%zu bytes", offset, bytes, group->window_bytes);
    for (size_t i = 0; i < count; i++)
        if (ranks[i] >= (uint32_t)g->nranks)
            return pto_fail(PTO_ERR_INVALID_ARGUMENT, "comm: rank %u is not a rank of the group of %d", ranks[i],
                            g->nranks);
    const SpanSlice slice = { group, offset };
    return alloc(g, key, ranks, count, bytes, &slice, local_failure, out);
}

void comm_span_windows_free(CommSpan *g, CommSpanWindows *w)
{
    if (w == NULL)
        return;
    if (w->spans && w->leads)
        span_proxy_remove(g->proxy, w);
    free_host_part(g, w);
    free(w);
}

size_t comm_span_windows_count(const CommSpanWindows *w)
{
    return w->count;
}

size_t comm_span_windows_bytes(const CommSpanWindows *w)
{
    return w->window_bytes;
}

void *comm_span_windows_base(const CommSpanWindows *w, size_t i)
{
    return w->base[i];
}

uint32_t *comm_span_windows_signals(const CommSpanWindows *w, size_t i)
{
    return w->signals[i];
}

int comm_span_describe(const CommSpanWindows *w, PtoCommSpan *out)
{
    if (!w->spans)
        return 0;
    *out = w->span;
    return 1;
}

int comm_span_break(CommSpanWindows *w, uint32_t culprit)
{
    if (culprit >= w->count)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "comm: culprit %u is not a member of the domain", culprit);
    PtoCommDeviceContext c = { .magic = PTO_COMM_CTX_MAGIC };
    for (size_t i = 0; i < w->count; i++)
        if (w->signals[i] != NULL)
            c.signals[c.nranks++] = (uint64_t)(uintptr_t)w->signals[i];
    pto_comm_break(&c, culprit);
    return PTO_OK;
}

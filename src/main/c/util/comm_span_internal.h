/*
 * What the files of the span group share (util/comm_span.h is the API):
 * comm_span.c (joining, topology, windows and mirrors), comm_span_gloo.c (the
 * plugin, loaded once) and comm_span_proxy.c (the network proxy thread).
 */
#ifndef PTORUN_COMM_SPAN_INTERNAL_H
#define PTORUN_COMM_SPAN_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "ptorun/pto_gloo.h"
#include "util/comm_shm.h"
#include "util/comm_span.h"

#define SPAN_NOT_LOCAL UINT32_MAX

/* The plugin's calls (include/ptorun/pto_gloo.h). */
typedef struct GlooApi {
    __typeof__(&ptorun_gloo_open) open;
    __typeof__(&ptorun_gloo_open_subgroup) open_subgroup;
    __typeof__(&ptorun_gloo_allgather) allgather;
    __typeof__(&ptorun_gloo_allgatherv) allgatherv;
    __typeof__(&ptorun_gloo_allreduce_sum_f32) allreduce_f32;
    __typeof__(&ptorun_gloo_allreduce_sum_i32) allreduce_i32;
    __typeof__(&ptorun_gloo_barrier) barrier;
    __typeof__(&ptorun_gloo_close) close;
    __typeof__(&ptorun_gloo_last_error) last_error;
} GlooApi;

/* The plugin, loaded on the first call (never unloaded: Gloo keeps threads),
   or NULL with a message naming what is missing. */
const GlooApi *span_gloo_api(void);
/* A plugin call's failure as ours: its code, "<what>: <plugin's message>". */
int span_gloo_fail(const GlooApi *api, int rc, const char *what);

typedef struct SpanProxy SpanProxy;

/* How often this rank allocated windows of one key over one member list: the
   members of such an allocation share that history, so it names the
   allocation's Gloo groups alike on each (a freed key may come again). */
typedef struct SpanGeneration {
    struct SpanGeneration *next;
    uint64_t key;
    uint32_t members_hash, count;
} SpanGeneration;

struct CommSpan {
    int rank, nranks;
    uint32_t timeout_ms;
    ShmGroup *local;                             /* this host's ranks */
    /* across hosts only (api != NULL) */
    const GlooApi *api;
    PtoGlooGroup *gloo;                          /* every rank */
    uint32_t hosts;
    uint32_t host_of[PTO_COMM_MAX_RANKS];        /* group rank -> host (hosts ordered by their lowest rank) */
    uint32_t local_index[PTO_COMM_MAX_RANKS];    /* group rank -> rank in `local`, or SPAN_NOT_LOCAL */
    SpanProxy *proxy;
    SpanGeneration *generations;
};

struct CommSpanWindows {
    size_t count;                                /* domain members */
    size_t window_bytes;
    ShmWindows *windows;                         /* this host's members' (across hosts: and the mirrors) */
    void *base[PTO_COMM_MAX_RANKS];              /* member -> window, or this host's mirror of it */
    uint32_t *signals[PTO_COMM_MAX_RANKS];       /* member -> signal block, NULL on another host */
    int spans;
    PtoCommSpan span;                            /* when spans */
    int leads;                                   /* this rank is its host's leader of the domain */
};

/* The proxy: a thread that parks on its bell until a leader posts a host
   step of a domain it was given, and runs it between the hosts' leaders. */
int span_proxy_start(SpanProxy **out);
void span_proxy_stop(SpanProxy *p);
uint32_t *span_proxy_bell(SpanProxy *p);
/* Gives the proxy the domain w this rank leads, with its leaders' group (the
   proxy closes it when the domain is taken back). */
int span_proxy_add(SpanProxy *p, const GlooApi *api, CommSpanWindows *w, PtoGlooGroup *leaders,
                   const uint32_t *member_group_rank);
/* Takes it back, once no step of it is being served. */
void span_proxy_remove(SpanProxy *p, CommSpanWindows *w);

#endif

/*
 * A communication group that may span hosts (docs/communication.md, Across
 * hosts): the one group behind the sim's comm_* calls and the emulated
 * driver's comm entries. A root info that is a file path makes a group of one
 * host, exactly util/comm_shm.h's. A root info "ptorun-gloo:v1;..." makes a
 * group over Gloo (include/ptorun/pto_gloo.h, the plugin loaded on first use):
 * the ranks publish their host keys, the ranks of one host form a
 * shared-memory group of their own, and only the host step of a collective
 * crosses the network, run by this rank's network proxy thread
 * (comm_span_proxy.c) between the hosts' leaders.
 *
 * A domain whose members all share this rank's host is a shared-memory domain
 * as before. One across hosts lists its ranks in ascending order; each host's
 * members get their windows in the host's shared memory, and every member on
 * this host reads another host's member through this host's mirror of its
 * window (filled by the proxy). comm_span_describe gives what its
 * PtoCommSpan holds.
 *
 * Thread safety as util/comm_shm.h: one CommSpan is one rank, its calls made by
 * one thread at a time; its proxy thread is its own. Returns PTO_OK or a
 * PTO_ERR_* code with a pto_fail message, as comm_shm.h's calls do.
 */
#ifndef PTORUN_COMM_SPAN_H
#define PTORUN_COMM_SPAN_H

#include <stddef.h>
#include <stdint.h>

#include "ptorun/pto_comm.h"

typedef struct CommSpan CommSpan;
typedef struct CommSpanWindows CommSpanWindows;

/* Whether a root info names a group across hosts (its prefix). */
int comm_span_rootinfo_is_hosts(const char *rootinfo);

int comm_span_join(int rank, int nranks, const char *rootinfo, uint32_t timeout_ms, CommSpan **out);
void comm_span_leave(CommSpan *g);
void comm_span_mark_lost(CommSpan *g);
int comm_span_barrier(CommSpan *g);

/* As shm_group_alloc_windows over group ranks ranks[0..count). */
int comm_span_alloc_windows(CommSpan *g, uint64_t key, const uint32_t *ranks, size_t count, size_t window_bytes,
                            int local_failure, CommSpanWindows **out);
/* A derived domain over group ranks ranks[0..count): a fresh signal block per
   member, no memory of its own; member i's window is [offset, +bytes) of
   `group`'s window of rank ranks[i] (`group`: the allocation over every rank
   in rank order; across hosts: of this host's mirror of it). Collective as
   comm_span_alloc_windows; `group` must outlive it. */
int comm_span_alloc_slice(CommSpan *g, uint64_t key, const uint32_t *ranks, size_t count,
                          const CommSpanWindows *group, size_t offset, size_t bytes, int local_failure,
                          CommSpanWindows **out);
void comm_span_windows_free(CommSpan *g, CommSpanWindows *w);

size_t comm_span_windows_count(const CommSpanWindows *w);
size_t comm_span_windows_bytes(const CommSpanWindows *w); /* window_bytes as allocated (a slice: 0) */
/* Member i's window (another host's: this host's mirror of it) and signal
   block (another host's: NULL), as this process maps them. */
void *comm_span_windows_base(const CommSpanWindows *w, size_t i);
uint32_t *comm_span_windows_signals(const CommSpanWindows *w, size_t i);

/* 1 with *out filled (but its local descriptor's magic, timeout_ms and
   window_size, which the comm layer writes) when the domain spans hosts; 0
   when it lies on this host. */
int comm_span_describe(const CommSpanWindows *w, PtoCommSpan *out);

/* Breaks the domain (pto_comm_break) over this host's members' signal blocks,
   naming domain rank `culprit`. */
int comm_span_break(CommSpanWindows *w, uint32_t culprit);

#endif

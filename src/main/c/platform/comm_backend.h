/*
 * The platform half of the communication group (common/comm.c is the other):
 * how one rank of a device joins a group, meets its peers and gets windows
 * every member can address. Exactly one platform is linked into each library,
 * so these resolve at link time: the sim runs the group itself in shared
 * memory (util/comm_shm.h), onboard asks its driver (pto_driver.h),
 * whose emulated implementation runs the same shared-memory group.
 *
 * Every function returns PTO_OK or a PTO_ERR_* code with a message naming the
 * rank a PTO_ERR_TIMEOUT or PTO_ERR_DEVICE (a peer gone, the group broken) is
 * about. Nothing here poisons the device context: a lost peer is the group's
 * failure, not this device's. Calls on one CommBackend come from one thread at
 * a time (common/comm.c holds the handle's lock).
 */
#ifndef PTORUN_COMM_BACKEND_H
#define PTORUN_COMM_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "platform/runner.h"
#include "ptorun/pto_comm.h"

typedef struct CommBackend CommBackend;     /* one rank of a group */
typedef struct CommWindowSet CommWindowSet; /* one allocation's windows and signal blocks */

/* Collective: every rank joins, or PTO_ERR_TIMEOUT after timeout_ms. */
int comm_backend_join(Runner *r, int rank, int nranks, const char *rootinfo_path, uint32_t timeout_ms,
                      CommBackend **out);
/* Releases everything of this rank (windows still held first); peers see it gone. */
void comm_backend_leave(CommBackend *b);
int comm_backend_barrier(CommBackend *b);
/* Collective over the group ranks ranks[0..count): a window of `bytes` (0: signal
 * blocks only) and a zeroed signal block per member, every member's addressable. */
int comm_backend_alloc(CommBackend *b, uint64_t key, const uint32_t *ranks, size_t count, size_t bytes,
                       CommWindowSet **out);
/* Collective as comm_backend_alloc with bytes 0 (fresh zeroed signal blocks), for
 * a derived domain: member i's window is [offset, +bytes) of `group`'s window of
 * group rank ranks[i] (`group`: the allocation over every rank, in rank order;
 * across hosts, of this rank's mirror of it). `group` outlives it. */
int comm_backend_alloc_slice(CommBackend *b, uint64_t key, const uint32_t *ranks, size_t count,
                             const CommWindowSet *group, size_t offset, size_t bytes, CommWindowSet **out);
void comm_backend_free(CommBackend *b, CommWindowSet *w);
/* Member i's window and signal block, as device addresses of this rank's device. */
void comm_backend_addrs(const CommWindowSet *w, size_t i, uint64_t *window, uint64_t *signals);
/* Breaks the domain over w naming `culprit` (a member index): every member's
 * signal block gets BROKEN = 1 + culprit (the first culprit wins) and every
 * doorbell rings, so every wait of every member fails at once naming it
 * (util/comm_signal.h, pto_comm_break). Local and non-blocking; callable from
 * any thread while w is live (it does not need the handle's lock). */
int comm_backend_break(CommBackend *b, CommWindowSet *w, uint32_t culprit);
/* 1 with *out filled (all but its local descriptor's magic, timeout_ms and
 * window_size) when w's members span hosts, 0 when they share this one. */
int comm_backend_span(const CommWindowSet *w, PtoCommSpan *out);

#endif

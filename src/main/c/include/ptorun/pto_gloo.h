/*
 * ptorun's multi-host communication plugin: libptorun_gloo.so, a group of
 * ranks on several hosts over Gloo's TCP transport, behind a plain C ABI.
 *
 * No host library links it: it is dlopen'ed only when a group spans hosts.
 * It exports exactly the ptorun_gloo_* functions declared here.
 *
 * Every int-returning call returns PTO_OK (0) or a negative PTO_ERR_* code of
 * ptorun/pto_runtime_c_api.h:
 *   PTO_ERR_INVALID_ARGUMENT  a bad argument (NULL, rank out of range, a
 *                             malformed rootinfo or address)
 *   PTO_ERR_TIMEOUT           the call did not complete within the group's
 *                             timeout (a peer too slow, a partition, the
 *                             store unreachable)
 *   PTO_ERR_DEVICE            a peer was lost (its connection closed or reset)
 *   PTO_ERR_OUT_OF_MEMORY     a buffer could not be allocated
 *   PTO_ERR_RANKS_DISAGREE    the ranks passed different arguments: at open,
 *                             another group id than the store's or another
 *                             nranks than rank 0's; at a subgroup's open,
 *                             another rank list; in a collective, another
 *                             collective, size, sizes or root (every rank
 *                             fails)
 *   PTO_ERR_FAILED            anything else
 * and then ptorun_gloo_last_error() describes it. A lost peer is named by
 * the store: every rank keeps its store connection as a health lane, and one
 * that closes without a goodbye (its process died) names its rank; a rank
 * whose call failed asks (waiting up to 500 ms for a death to show), and
 * falls back to the address in Gloo's message. The library never prints.
 *
 * A group is used by one thread at a time, but a group and its subgroups
 * (ptorun_gloo_open_subgroup) may be used by different threads at once; every
 * rank must call the same collectives in the same order with the same sizes. Each collective but the
 * barrier first compares its call (kind, size, root) across the ranks with one
 * small all-gather, so a disagreement fails on every rank instead of reaching
 * Gloo's transport (which terminates the process on a message longer than
 * the buffer posted for it); that costs one latency round per call. After a
 * call failed, the group is broken: close it (every rank) and open a new one.
 */
#ifndef PTORUN_PTO_GLOO_H
#define PTORUN_PTO_GLOO_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PTO_GLOO_EXPORT __attribute__((visibility("default")))

/* The rootinfo prefix and the length of a group id (hex characters). */
#define PTO_GLOO_ROOTINFO_PREFIX "ptorun-gloo:v1;"
#define PTO_GLOO_GROUP_ID_CHARS 32

typedef struct PtoGlooGroup PtoGlooGroup;

/* Opens rank `rank` of a group of `nranks` ranks (1 <= nranks, 0 <= rank < nranks).
 * rootinfo: "ptorun-gloo:v1;store=<ipv4>:<port>;group=<32 hex chars>", the same
 * on every rank. Rank 0 serves the rendezvous store at that address (binds it
 * with SO_REUSEADDR) for the group's life; every rank (rank 0 too) connects to
 * it, retrying until the timeout (the server may start later), publishes the
 * addresses of its Gloo pairs and connects the full mesh. The store refuses a
 * client of another group id (PTO_ERR_RANKS_DISAGREE).
 * bind_addr: the IPv4 address this rank's Gloo pairs listen on (its interface).
 * timeout_ms (> 0) bounds the open and, afterwards, every collective of the group.
 * Returns only when every rank has connected (the open ends with a barrier).
 * On success *out is the group; on failure *out is NULL. */
PTO_GLOO_EXPORT int ptorun_gloo_open(const char *rootinfo, int rank, int nranks,
                                     const char *bind_addr, uint32_t timeout_ms,
                                     PtoGlooGroup **out);

/* Opens a subgroup of parent: the parent's ranks ranks[0..count) (strictly
 * ascending, this rank among them, 1 <= count <= the parent's nranks), called
 * by exactly those ranks, each with the same list; this rank's rank in it is
 * its index in ranks. tag: 1 to 64 of [A-Za-z0-9._-], the same on every
 * member and never used again for a subgroup of this parent while the parent
 * is open (the caller's to guarantee): the rendezvous goes through the
 * parent's store under keys of that tag.
 * The members first compare their lists through the store: one that passed
 * another list fails with PTO_ERR_RANKS_DISAGREE, and so does every member
 * whose list holds it. Then the subgroup connects a full mesh of its own
 * (new connections on the parent's interface) and the open ends with a
 * barrier. Its timeout is the parent's. A group of one (count 1) connects
 * nothing: its collectives are local copies.
 * Its failures name ranks in the parent's numbering ("lost peer rank 3 of
 * the parent group"), a lost one through the store's health lanes like the
 * parent's. Subgroups may be opened from subgroups.
 * The parent must stay open until every subgroup of it is closed (its store
 * and interface serve them); ptorun_gloo_close on a subgroup closes only the
 * subgroup's own connections. A subgroup and its parent (or another
 * subgroup) may be used by two threads at once, e.g. one running collectives
 * on a subgroup while another opens a subgroup of the same parent (each open
 * waits on a store connection of its own); each group's collectives still by
 * one thread at a time.
 * On success *out is the subgroup; on failure *out is NULL (a failed open
 * leaves the parent as it was: its connections are not the subgroup's). */
PTO_GLOO_EXPORT int ptorun_gloo_open_subgroup(PtoGlooGroup *parent, const char *tag, const int *ranks, size_t count,
                                              PtoGlooGroup **out);

/* In place: data[i] becomes ((x0[i] + x1[i]) + x2[i]) + ... in rank order, bit
 * identical on every rank. Rank r reduces elements [floor(r*n/N), floor((r+1)*n/N))
 * (a reduce-scatter of the chunks straight from data, each segment summed in
 * rank order into data as it arrives, pipelined with the all-gather of the sums
 * straight into data), which moves the bytes of a ring allreduce. count may be
 * 0. The group keeps a scratch buffer of the largest reduction so far
 * ((nranks-1)/nranks * count floats here, nranks * count_per_rank for
 * reduce_scatter) until it closes. */
PTO_GLOO_EXPORT int ptorun_gloo_allreduce_sum_f32(PtoGlooGroup *g, float *data, size_t count);

/* As allreduce_sum_f32 over int32: data[i] becomes the two's complement
 * (wrapping) sum of every rank's data[i], added in rank order. */
PTO_GLOO_EXPORT int ptorun_gloo_allreduce_sum_i32(PtoGlooGroup *g, int32_t *data, size_t count);

/* out (nranks * bytes_per_rank bytes) receives every rank's `in` in rank order.
 * in and out must not overlap. */
PTO_GLOO_EXPORT int ptorun_gloo_allgather(PtoGlooGroup *g, const void *in, void *out,
                                          size_t bytes_per_rank);

/* Rank r contributes bytes_per_rank[r] bytes (in; may be 0, in then may be
 * NULL); out (the sum of bytes_per_rank) receives every rank's contribution
 * in rank order. bytes_per_rank has nranks entries, the same on every rank
 * (else every rank fails with PTO_ERR_RANKS_DISAGREE). in and out must not
 * overlap. */
PTO_GLOO_EXPORT int ptorun_gloo_allgatherv(PtoGlooGroup *g, const void *in, void *out,
                                           const size_t *bytes_per_rank);

/* in: nranks * count_per_rank floats; out (count_per_rank floats) receives, for
 * rank r, out[i] = ((x0[r*c+i] + x1[r*c+i]) + x2[r*c+i]) + ... in rank order
 * (c = count_per_rank). in and out must not overlap. */
PTO_GLOO_EXPORT int ptorun_gloo_reduce_scatter_sum_f32(PtoGlooGroup *g, const float *in,
                                                       float *out, size_t count_per_rank);

/* In place: every rank's data (bytes bytes) becomes root's. */
PTO_GLOO_EXPORT int ptorun_gloo_broadcast(PtoGlooGroup *g, void *data, size_t bytes, int root);

/* Returns once every rank of the group has entered it. */
PTO_GLOO_EXPORT int ptorun_gloo_barrier(PtoGlooGroup *g);

/* Closes the connections and, on rank 0, stops the store; frees the group
 * (NULL tolerated). A subgroup's close closes only its own connections. Rank 0 waits at most 2 s for the other ranks to close
 * theirs first (a rank whose call failed asks the store who was lost); no
 * other rank waits. */
PTO_GLOO_EXPORT void ptorun_gloo_close(PtoGlooGroup *g);

/* The calling thread's message of its last failed call ("" when none); valid
 * until its next call of this library. */
PTO_GLOO_EXPORT const char *ptorun_gloo_last_error(void);

/* Writes a fresh group id, 32 lowercase hex characters from getrandom(2) and a
 * NUL, into out (33 bytes). */
PTO_GLOO_EXPORT int ptorun_gloo_new_group_id(char out[33]);

#ifdef __cplusplus
}
#endif

#endif

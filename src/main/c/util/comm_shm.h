/*
 * A communication group of ranks on one host, in POSIX shared memory: the one
 * mechanism behind the sim's comm_* calls and the emulated driver's comm
 * entries (docs/communication.md). Ranks are device contexts in one process or
 * in several processes of the host.
 *
 * Rendezvous: rank 0 publishes the group's root info (a fresh, unique name of
 * its control segment) in the file at rootinfo_path (written to a temporary
 * name, then renamed into place); the other ranks wait for it (inotify, no
 * polling), map the control segment and sign in. Once every rank signed in,
 * rank 0 unlinks the control segment's name and the root-info file: from then
 * on nothing of the group has a name in the file system, so a crash leaves no
 * file behind (the mappings die with the processes).
 *
 * Meetings (barriers over all ranks or over a subset): rank r keeps a counter
 * per peer p in the control segment — the meetings r entered that include p.
 * A meeting over S returns when every p in S has entered as many meetings with
 * r as r has with p. Collective calls are issued by every member in the same
 * order, so overlapping subsets need no further agreement. Waiting parks on
 * one process-shared futex word of the control segment (after the bounded
 * spin of spin_wait.h); the wait wakes at least every
 * COMM_SHM_LIVENESS_MS to check the peers' processes.
 *
 * Failures are the group's: a meeting that times out, or that finds a peer it
 * still waits for gone (its process exited or is a zombie, it left, or it was
 * marked lost), marks the group broken, naming the rank; every later meeting
 * of every rank fails at once with the same code and message (a meeting every
 * member had entered still succeeds). A broken group can only be left. A root
 * info whose rank 0 died before the group formed is not joined, and the rank
 * that finds it unlinks its segment.
 *
 * Thread safety: one ShmGroup is one rank; its calls are made by one thread
 * at a time (the comm layer serializes them). Different ranks' ShmGroups (in
 * one process or several) are independent.
 *
 * Every function returns PTO_OK or a PTO_ERR_* code with a pto_fail message:
 * PTO_ERR_INVALID_ARGUMENT (bad rank, count, path, size), PTO_ERR_TIMEOUT (a
 * rank did not arrive within the group's timeout), PTO_ERR_DEVICE (a peer is
 * gone: its message names the rank), PTO_ERR_OUT_OF_MEMORY (shared memory
 * could not be created or mapped), PTO_ERR_FAILED (a system call failed
 * otherwise; its message names it and errno).
 */
#ifndef PTORUN_COMM_SHM_H
#define PTORUN_COMM_SHM_H

#include <stddef.h>
#include <stdint.h>

#include "ptorun/pto_comm.h"

#define COMM_SHM_LIVENESS_MS 20u

typedef struct ShmGroup ShmGroup;
typedef struct ShmWindows ShmWindows;

/* Joins rank `rank` of `nranks` (1..PTO_COMM_MAX_RANKS). Blocks until every
 * rank signed in, at most timeout_ms (> 0) — then PTO_ERR_TIMEOUT and nothing
 * is left behind (rank 0 removes the root-info file it wrote). A root-info
 * file left by an earlier group at the path is not joined: rank 0 replaces it
 * and the others only accept a root info whose control segment still exists
 * and is waiting for exactly this nranks. */
int shm_group_join(int rank, int nranks, const char *rootinfo_path, uint32_t timeout_ms, ShmGroup **out);

/* Leaves: marks this rank gone (peers' meetings with it fail from now on
 * unless they already completed), unmaps the control segment. Windows still
 * allocated are freed first. NULL tolerated. Never fails. */
void shm_group_leave(ShmGroup *g);

/* Marks this rank lost, as if its process had died, without leaving (the
 * emulated driver's PTO_EMU_FAULT_PEER_LOST): its peers' meetings and
 * device-side waits fail naming it; its own later calls fail with
 * PTO_ERR_DEVICE. */
void shm_group_mark_lost(ShmGroup *g);

int shm_group_rank(const ShmGroup *g);
int shm_group_nranks(const ShmGroup *g);
uint32_t shm_group_timeout_ms(const ShmGroup *g);

/* A meeting over every rank. */
int shm_group_barrier(ShmGroup *g);

/* A meeting over ranks[0..count) (distinct, ascending not required, this
 * rank among them). */
int shm_group_meet(ShmGroup *g, const uint32_t *ranks, size_t count);

/* Collective over ranks[0..count) (this rank among them, at index
 * member_index): every member creates one shared segment holding its window
 * of window_bytes (page aligned; 0 allowed: signals only) and its signal block
 * (PTO_COMM_SIGNAL_WORDS words, zeroed, PID word set), every member maps every
 * other member's, and the names are unlinked before it returns. `key` names
 * the allocation among the group's (every member passes the same; a key in use
 * is refused). local_failure != 0 (a PTO_ERR_* code, e.g. an injected fault)
 * makes this rank create nothing: every member then fails with
 * PTO_ERR_OUT_OF_MEMORY (or local_failure's code) naming this rank, and nothing
 * stays mapped or named anywhere. */
int shm_group_alloc_windows(ShmGroup *g, uint64_t key, const uint32_t *ranks, size_t count, size_t window_bytes,
                            int local_failure, ShmWindows **out);

/* Local: unmaps this rank's view of the allocation (its own block's PID word
 * is set to PTO_COMM_PID_GONE first). The memory lives on while a peer still
 * maps it. NULL tolerated. */
void shm_windows_free(ShmGroup *g, ShmWindows *w);

size_t shm_windows_count(const ShmWindows *w);        /* members */
size_t shm_windows_bytes(const ShmWindows *w);        /* window_bytes as allocated */
uint64_t shm_windows_key(const ShmWindows *w);
/* Member i's window / signal block as this process maps them. */
void *shm_windows_base(const ShmWindows *w, size_t i);
uint32_t *shm_windows_signals(const ShmWindows *w, size_t i);

#endif

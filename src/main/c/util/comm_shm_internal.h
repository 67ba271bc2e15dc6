/*
 * What the files of the shared-memory group share (util/comm_shm.h is the
 * API): the control segment every rank maps, the rank's local state, and the
 * helpers of the three files — comm_shm.c (meetings, failures, leaving),
 * comm_shm_rendezvous.c (joining through the root-info file),
 * comm_shm_windows.c (windows and signal blocks).
 *
 * Every shared word is accessed with __atomic builtins (the segment is mapped
 * by every rank, in one process or several); `seq` is the one futex word
 * anyone parks on: every arrival and every change of state bumps it.
 */
#ifndef PTORUN_COMM_SHM_INTERNAL_H
#define PTORUN_COMM_SHM_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "util/comm_shm.h"

#define SHM_MAGIC 0x3148534D434F5450ull /* "PTOCMSH1" */
#define SHM_NAME_BYTES 96

enum { SHM_JOINING = 1, SHM_READY = 2, SHM_ABANDONED = 3 };           /* ShmControl.state */
enum { SHM_RANK_ABSENT = 0, SHM_RANK_ALIVE = 1, SHM_RANK_LEFT = 2, SHM_RANK_LOST = 3 };
enum { SHM_GONE_EXITED = 1, SHM_GONE_LEFT = 2, SHM_GONE_LOST = 3 };    /* why a peer is gone */

typedef struct ShmControl {
    uint64_t magic;
    uint32_t nranks;
    uint32_t state;
    uint32_t seq;
    uint32_t reserved;
    uint64_t broken;                      /* 0, or why << 40 | rank << 32 | -code: the first failure */
    int32_t pid[PTO_COMM_MAX_RANKS];
    uint32_t rank_state[PTO_COMM_MAX_RANKS];
    uint32_t meet[PTO_COMM_MAX_RANKS][PTO_COMM_MAX_RANKS]; /* meet[r][p]: meetings r entered that include p */
    int32_t created[PTO_COMM_MAX_RANKS];  /* a window allocation, phase 1: 0 or the code of what failed */
    int32_t mapped[PTO_COMM_MAX_RANKS];   /* phase 2 */
    uint64_t wanted[PTO_COMM_MAX_RANKS];  /* phase 1: the window bytes each member asked for */
} ShmControl;

struct ShmGroup {
    int rank, nranks;
    uint32_t timeout_ms;
    int lost;
    char name[SHM_NAME_BYTES];            /* the control segment's (names the windows' too) */
    ShmControl *ctl;
    ShmWindows *windows;                  /* this rank's live allocations */
};

struct ShmWindows {
    ShmWindows *next;
    uint64_t key;
    size_t count, self;
    size_t bytes;                         /* as asked */
    size_t segment_bytes;                 /* window rounded to pages, then one page of signals */
    size_t signals_offset;
    uint32_t ranks[PTO_COMM_MAX_RANKS];
    unsigned char *base[PTO_COMM_MAX_RANKS];
};

void shm_futex_wait(uint32_t *word, uint32_t seen, uint64_t ns);
void shm_futex_wake(uint32_t *word);
void shm_bump(ShmControl *c);
uint64_t shm_deadline(uint32_t timeout_ms);

int shm_check_usable(const ShmGroup *g);
/* ranks valid, distinct, this rank among them at *self. */
int shm_check_members(const ShmGroup *g, const uint32_t *ranks, size_t count, size_t *self);
uint32_t shm_gone(const ShmGroup *g, uint32_t p);
int shm_process_exited(int32_t pid);
/* Marks the group broken (the first failure wins) and reports the winner. */
int shm_break(ShmGroup *g, int code, uint32_t rank, uint32_t why);
int shm_fail_broken(const ShmGroup *g, uint64_t word);

/* This rank's signal block of `w` says it is gone; every member's doorbell rings. */
void shm_windows_say_gone(ShmWindows *w);

#endif

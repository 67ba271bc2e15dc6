/* What the tests of the shared-memory group (util/comm_shm.h) share: ranks as
 * threads running a script, failures recorded per rank and reported by the
 * test's thread, the temporary directory of the root-info file, the /dev/shm
 * names this process's groups left, window patterns. */
#ifndef PTORUN_TEST_COMM_SHM_H
#define PTORUN_TEST_COMM_SHM_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "ptorun/pto_runtime_c_api.h"
#include "util/comm_shm.h"

#define SHM_MAX 16

typedef struct ShmRank ShmRank;
typedef void (*ShmScript)(ShmRank *r);

/* What the ranks of one run share: a test's own state hangs off `test`. */
typedef struct ShmTeam {
    int nranks;
    const char *path;
    uint32_t timeout_ms;
    pthread_barrier_t sync;     /* among the threads that run (not the group's) */
    int entered[1280][SHM_MAX]; /* step s: rank r entered its meeting (atomics) */
    void *test;
} ShmTeam;

struct ShmRank {
    pthread_t thread;
    int rank;
    ShmTeam *team;
    ShmScript script;
    ShmGroup *g;                /* left after the script unless the script cleared it */
    int rc_join;
    char join_message[256];
    int rc[8];                  /* the script's outputs */
    char msg[8][256];
    uint64_t ns[8];
    int failures;
    char first_failure[300];
};

/* Records a failed check of a rank thread; the test's thread reports it. */
void shm_rank_fail(ShmRank *r, int line, const char *what);
#define RCHECK(r, cond)                                                       \
    do {                                                                      \
        if (!(cond))                                                          \
            shm_rank_fail((r), __LINE__, #cond);                              \
    } while (0)

/* Runs the ranks whose bit is in `mask` (rank i of team->nranks) as threads,
 * started in ascending rank order unless `descending`: each joins, runs the
 * script when joined, leaves; all joined before it returns. */
void shm_run(ShmTeam *team, ShmRank *ranks, uint32_t mask, int descending, ShmScript script);
/* CHECKs every rank recorded no failure (naming the first), from the test's thread. */
void shm_report(const ShmRank *ranks, int n, const char *file, int line);
#define SHM_REPORT(ranks, n) shm_report((ranks), (n), __FILE__, __LINE__)
/* CHECKs every rank joined, naming the join's error. */
void shm_check_joined(const ShmRank *ranks, int n, const char *file, int line);
#define SHM_CHECK_JOINED(ranks, n) shm_check_joined((ranks), (n), __FILE__, __LINE__)

/* Marks step s entered by this rank, then checks every rank of `ranks` did
 * once the meeting returned (so a meeting that returned early fails). */
void shm_enter(ShmRank *r, int step);
int shm_all_entered(ShmRank *r, int step, const uint32_t *ranks, size_t count);
int shm_checked_meet(ShmRank *r, int step, const uint32_t *ranks, size_t count);

/* "/dev/shm/ptorun-comm-<getpid()>-*" entries: names of this process's groups. */
int shm_names_left(void);
/* A fresh temporary directory (mkdtemp) and the root-info path inside it. */
typedef struct ShmTmp {
    char dir[64];
    char path[96];
} ShmTmp;
int shm_tmp_make(ShmTmp *t);

/* The byte at offset i of rank `rank`'s window written under `tag`. */
static inline unsigned char shm_pattern(uint32_t rank, uint32_t tag, size_t i)
{
    return (unsigned char)((i * 131u + (i >> 8)) ^ (rank * 37u + tag * 11u + 1u));
}
void shm_fill(void *base, size_t bytes, uint32_t rank, uint32_t tag);
int shm_matches(const void *base, size_t bytes, uint32_t rank, uint32_t tag);
/* Member i's signal block: zero but the PID word == pid. */
int shm_signals_fresh(const ShmWindows *w, size_t i, uint32_t pid);

uint64_t shm_now_ns(void);

#endif

/*
 * The shared-memory group's failures (util/comm_shm.h): a join or a barrier
 * that times out, a peer whose process exited, that was marked lost or that
 * left, stale root info, an allocation failing on one rank, bad member lists,
 * keys in use. Every failure is checked for its code, the rank its message
 * names, and for what it leaves behind (/dev/shm names, the root-info file);
 * helpers are in test_comm_shm.c.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ptest.h"
#include "test_comm_shm.h"
#include "test_util.h"
#include "util/comm_shm_internal.h"
#include "util/last_error.h"

static ShmTeam *new_team(int nranks, const char *path, uint32_t timeout_ms, void *test)
{
    ShmTeam *t = calloc(1, sizeof *t);
    if (t != NULL)
        *t = (ShmTeam){ .nranks = nranks, .path = path, .timeout_ms = timeout_ms, .test = test };
    return t;
}

static void record(ShmRank *r, int i, int rc)
{
    r->rc[i] = rc;
    snprintf(r->msg[i], sizeof r->msg[i], "%s", rc == PTO_OK ? "" : pto_last_error());
}

static void sync_threads(ShmRank *r)
{
    pthread_barrier_wait(&r->team->sync);
}

static void check_names_rank(const char *msg, int rank)
{
    char want[32];
    snprintf(want, sizeof want, "rank %d", rank);
    CHECK_CONTAINS(msg, want);
}

/* ---- joining ------------------------------------------------------------------------ */

TEST(comm_shm_a_join_times_out_and_leaves_nothing_behind)
{
    ShmTmp tmp;
    REQUIRE(shm_tmp_make(&tmp));
    ShmRank ranks[3];
    /* only rank 0 comes */
    ShmTeam *t = new_team(2, tmp.path, 200, NULL);
    REQUIRE(t != NULL);
    shm_run(t, ranks, 1u << 0, 0, NULL);
    CHECK_EQ_INT(ranks[0].rc_join, PTO_ERR_TIMEOUT);
    check_names_rank(ranks[0].join_message, 1);
    CHECK_EQ_INT(test_dir_entries(tmp.dir), 0); /* rank 0 removed the root info it wrote */
    CHECK_EQ_INT(shm_names_left(), 0);
    /* only rank 1 comes */
    shm_run(t, ranks, 1u << 1, 0, NULL);
    CHECK_EQ_INT(ranks[1].rc_join, PTO_ERR_TIMEOUT);
    check_names_rank(ranks[1].join_message, 0);
    /* ranks 0 and 1 of 3 come: both time out naming rank 2 */
    t->nranks = 3;
    t->timeout_ms = 300;
    shm_run(t, ranks, 3u, 0, NULL);
    for (int i = 0; i < 2; i++) {
        CHECK_EQ_INT(ranks[i].rc_join, PTO_ERR_TIMEOUT);
        check_names_rank(ranks[i].join_message, 2);
    }
    CHECK_EQ_INT(test_dir_entries(tmp.dir), 0);
    CHECK_EQ_INT(shm_names_left(), 0);

    ShmGroup *g = NULL;
    CHECK_EQ_INT(shm_group_join(0, 0, tmp.path, 100, &g), PTO_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(shm_group_join(0, (int)PTO_COMM_MAX_RANKS + 1, tmp.path, 100, &g), PTO_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(shm_group_join(-1, 2, tmp.path, 100, &g), PTO_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(shm_group_join(2, 2, tmp.path, 100, &g), PTO_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(shm_group_join(0, 2, NULL, 100, &g), PTO_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(shm_group_join(0, 2, "", 100, &g), PTO_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(shm_group_join(0, 2, tmp.path, 0, &g), PTO_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(shm_group_join(0, 2, tmp.path, 100, NULL), PTO_ERR_INVALID_ARGUMENT);
    char missing[128];
    snprintf(missing, sizeof missing, "%s/no-such-dir/rootinfo", tmp.dir);
    CHECK_EQ_INT(shm_group_join(1, 2, missing, 100, &g), PTO_ERR_INVALID_ARGUMENT);
    CHECK(shm_group_join(0, 2, missing, 100, &g) != PTO_OK);
    CHECK(g == NULL);
    CHECK_EQ_INT(shm_names_left(), 0);
    CHECK_EQ_INT(rmdir(tmp.dir), 0);
    free(t);
}

/* Rank 0 meets alone until the timeout; rank 1 comes after (the threads' own
 * barrier orders it) to find the group broken. */
static void script_barrier_timeout(ShmRank *r)
{
    uint32_t self = (uint32_t)r->rank;
    if (r->rank == 1)
        sync_threads(r);
    uint64_t t0 = shm_now_ns();
    record(r, 0, shm_group_barrier(r->g));
    r->ns[0] = shm_now_ns() - t0;
    record(r, 1, shm_group_meet(r->g, &self, 1));
    ShmWindows *w = NULL;
    record(r, 2, shm_group_alloc_windows(r->g, 1, &self, 1, 64, PTO_OK, &w));
    RCHECK(r, w == NULL);
    if (r->rank == 0)
        sync_threads(r);
}

TEST(comm_shm_a_barrier_timeout_breaks_the_group)
{
    ShmTmp tmp;
    REQUIRE(shm_tmp_make(&tmp));
    ShmRank ranks[2];
    ShmTeam *t = new_team(2, tmp.path, 300, NULL);
    REQUIRE(t != NULL);
    shm_run(t, ranks, 3u, 0, script_barrier_timeout);
    SHM_CHECK_JOINED(ranks, 2);
    SHM_REPORT(ranks, 2);
    CHECK_EQ_INT(ranks[0].rc[0], PTO_ERR_TIMEOUT);
    CHECK(ranks[0].ns[0] >= 300000000u); /* it did wait out the timeout */
    check_names_rank(ranks[0].msg[0], 1);
    CHECK_CONTAINS(ranks[0].msg[0], "300 ms");
    /* every later call of either rank fails at once with the same code and message */
    for (int r = 0; r < 2; r++)
        for (int i = 0; i < 3; i++) {
            CHECK_EQ_INT(ranks[r].rc[i], PTO_ERR_TIMEOUT);
            CHECK(strcmp(ranks[r].msg[i], ranks[0].msg[0]) == 0);
        }
    CHECK(ranks[1].ns[0] < 250000000u); /* no wait: one load of the broken word */
    CHECK_EQ_INT(shm_names_left(), 0);
    CHECK_EQ_INT(rmdir(tmp.dir), 0);
    free(t);
}

/* ---- a peer gone ------------------------------------------------------------------- */

typedef struct Reaper {
    pthread_t thread;
    pid_t child;
    int status;
} Reaper;

static void *reap(void *arg)
{
    Reaper *r = arg;
    if (waitpid(r->child, &r->status, 0) != r->child)
        r->status = -1;
    return NULL;
}

/* A forked rank 1 joins and exits without leaving; rank 0's barrier finds its
 * process gone — reaped before the barrier, or while the barrier waits. */
TEST(comm_shm_a_peer_whose_process_exited_fails_the_barrier_naming_it)
{
    for (int during = 0; during < 2; during++) {
        ShmTmp tmp;
        REQUIRE(shm_tmp_make(&tmp));
        pid_t child = fork();
        REQUIRE(child >= 0);
        if (child == 0) {
            ShmGroup *g = NULL;
            _exit(shm_group_join(1, 2, tmp.path, 20000, &g) == PTO_OK ? 0 : 1);
        }
        ShmGroup *g = NULL;
        int rc = shm_group_join(0, 2, tmp.path, 20000, &g);
        CHECK_EQ_INT(rc, PTO_OK);
        Reaper reaper = { .child = child, .status = -1 };
        if (during)
            REQUIRE(pthread_create(&reaper.thread, NULL, reap, &reaper) == 0);
        else
            reap(&reaper);
        if (rc == PTO_OK) {
            uint64_t t0 = shm_now_ns();
            CHECK_EQ_INT(shm_group_barrier(g), PTO_ERR_DEVICE);
            CHECK(shm_now_ns() - t0 < 10000000000u); /* detected, not timed out */
            check_names_rank(pto_last_error(), 1);
            CHECK_CONTAINS(pto_last_error(), "its process exited");
            CHECK_EQ_INT(shm_group_barrier(g), PTO_ERR_DEVICE); /* broken */
            CHECK_CONTAINS(pto_last_error(), "its process exited");
            shm_group_leave(g);
        }
        if (during)
            pthread_join(reaper.thread, NULL);
        CHECK(WIFEXITED(reaper.status) && WEXITSTATUS(reaper.status) == 0);
        CHECK_EQ_INT(test_dir_entries(tmp.dir), 0);
        CHECK_EQ_INT(rmdir(tmp.dir), 0);
        CHECK_EQ_INT(shm_names_left(), 0);
    }
}

/* Every rank allocates a window, meets; then `gone` marks itself lost or
 * leaves (its windows still allocated), the threads' barrier orders the
 * others after it: they see its PID words gone, their barrier fails naming it. */
static void script_gone(ShmRank *r)
{
    const int *how = r->team->test; /* [0] the rank, [1] 1: lost, 0: left */
    const uint32_t ALL[3] = { 0, 1, 2 };
    ShmWindows *w = NULL;
    RCHECK(r, shm_group_alloc_windows(r->g, 1, ALL, 3, 128, PTO_OK, &w) == PTO_OK);
    RCHECK(r, shm_group_barrier(r->g) == PTO_OK);
    if (w == NULL)
        return;
    if (r->rank == how[0]) {
        if (how[1]) {
            shm_group_mark_lost(r->g);
            RCHECK(r, shm_windows_signals(w, 2)[PTO_COMM_SIG_PID] == PTO_COMM_PID_GONE);
            sync_threads(r);
            record(r, 0, shm_group_barrier(r->g));
            record(r, 1, shm_group_meet(r->g, &ALL[2], 1));
            ShmWindows *v = NULL;
            record(r, 2, shm_group_alloc_windows(r->g, 2, &ALL[2], 1, 64, PTO_OK, &v));
            shm_windows_free(r->g, w);
        } else {
            shm_group_leave(r->g); /* frees w */
            r->g = NULL;
            sync_threads(r);
        }
        return;
    }
    sync_threads(r);
    RCHECK(r, shm_windows_signals(w, (size_t)how[0])[PTO_COMM_SIG_PID] == PTO_COMM_PID_GONE);
    RCHECK(r, shm_windows_signals(w, (size_t)r->rank)[PTO_COMM_SIG_PID] == (uint32_t)getpid());
    RCHECK(r, shm_windows_signals(w, (size_t)r->rank)[PTO_COMM_SIG_DOORBELL] >= 1);
    record(r, 0, shm_group_barrier(r->g));
    shm_windows_free(r->g, w);
}

TEST(comm_shm_a_rank_marked_lost_or_left_fails_its_peers_naming_it)
{
    for (int lost = 1; lost >= 0; lost--) {
        ShmTmp tmp;
        REQUIRE(shm_tmp_make(&tmp));
        ShmRank ranks[3];
        int how[2] = { lost ? 2 : 1, lost };
        ShmTeam *t = new_team(3, tmp.path, 20000, how);
        REQUIRE(t != NULL);
        shm_run(t, ranks, 7u, 0, script_gone);
        SHM_CHECK_JOINED(ranks, 3);
        SHM_REPORT(ranks, 3);
        for (int r = 0; r < 3; r++) {
            if (r == how[0])
                continue;
            CHECK_EQ_INT(ranks[r].rc[0], PTO_ERR_DEVICE);
            check_names_rank(ranks[r].msg[0], how[0]);
            CHECK_CONTAINS(ranks[r].msg[0], lost ? "it was lost" : "it left");
        }
        if (lost)
            for (int i = 0; i < 3; i++) {
                CHECK_EQ_INT(ranks[2].rc[i], PTO_ERR_DEVICE);
                CHECK_CONTAINS(ranks[2].msg[i], "rank 2 was lost");
            }
        CHECK_EQ_INT(shm_names_left(), 0);
        CHECK_EQ_INT(rmdir(tmp.dir), 0);
        free(t);
    }
}

/* Rank 0 frees its view while rank 1 still maps it. */
static void script_free(ShmRank *r)
{
    const uint32_t BOTH[2] = { 0, 1 };
    ShmWindows *w = NULL;
    RCHECK(r, shm_group_alloc_windows(r->g, 5, BOTH, 2, 256, PTO_OK, &w) == PTO_OK);
    if (w == NULL)
        return;
    shm_fill(shm_windows_base(w, (size_t)r->rank), 256, (uint32_t)r->rank, 5);
    uint32_t bells[2] = { shm_windows_signals(w, 0)[PTO_COMM_SIG_DOORBELL],
                          shm_windows_signals(w, 1)[PTO_COMM_SIG_DOORBELL] };
    RCHECK(r, shm_group_barrier(r->g) == PTO_OK);
    if (r->rank == 0)
        shm_windows_free(r->g, w);
    RCHECK(r, shm_group_barrier(r->g) == PTO_OK);
    if (r->rank == 1) {
        const uint32_t *s0 = shm_windows_signals(w, 0), *s1 = shm_windows_signals(w, 1);
        RCHECK(r, s0[PTO_COMM_SIG_PID] == PTO_COMM_PID_GONE);
        RCHECK(r, s1[PTO_COMM_SIG_PID] == (uint32_t)getpid());
        RCHECK(r, s0[PTO_COMM_SIG_DOORBELL] > bells[0]);
        RCHECK(r, s1[PTO_COMM_SIG_DOORBELL] > bells[1]);
        RCHECK(r, s0[PTO_COMM_SIG_BROKEN] == 0 && s1[PTO_COMM_SIG_BROKEN] == 0);
        RCHECK(r, shm_matches(shm_windows_base(w, 0), 256, 0, 5)); /* lives on while mapped */
        shm_windows_free(r->g, w);
    }
    shm_windows_free(r->g, NULL);
    shm_group_leave(NULL);
}

TEST(comm_shm_freeing_windows_says_gone_and_rings_the_doorbells)
{
    ShmTmp tmp;
    REQUIRE(shm_tmp_make(&tmp));
    ShmRank ranks[2];
    ShmTeam *t = new_team(2, tmp.path, 20000, NULL);
    REQUIRE(t != NULL);
    shm_run(t, ranks, 3u, 0, script_free);
    SHM_CHECK_JOINED(ranks, 2);
    SHM_REPORT(ranks, 2);
    CHECK_EQ_INT(shm_names_left(), 0);
    CHECK_EQ_INT(rmdir(tmp.dir), 0);
    free(t);
}

/* ---- stale root info ------------------------------------------------------------------ */

/* A control segment under this process's prefix, as a group that is not
 * gathering 2 ranks would leave it. */
static ShmControl *fake_segment(const char *name, uint32_t nranks, uint32_t state)
{
    int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0)
        return NULL;
    ShmControl *c = NULL;
    if (ftruncate(fd, sizeof *c) == 0) {
        c = mmap(NULL, sizeof *c, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        c = c == MAP_FAILED ? NULL : c;
    }
    close(fd);
    if (c != NULL) {
        c->magic = SHM_MAGIC;
        c->nranks = nranks;
        c->state = state;
        c->rank_state[0] = SHM_RANK_ALIVE;
        c->pid[0] = getpid();
    }
    return c;
}

static int write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (f == NULL)
        return 0;
    int ok = fputs(text, f) >= 0;
    return fclose(f) == 0 && ok;
}

static void script_barrier(ShmRank *r)
{
    RCHECK(r, shm_checked_meet(r, 0, NULL, 0) == PTO_OK);
}

TEST(comm_shm_a_stale_root_info_is_not_joined)
{
    ShmTmp tmp;
    REQUIRE(shm_tmp_make(&tmp));
    char name[80], line[160];
    snprintf(name, sizeof name, "/ptorun-comm-%d-stale", (int)getpid());
    const struct { uint32_t nranks, state; int line_nranks; } FAKES[] = {
        { 0, 0, -1 },                     /* garbage */
        { 0, 0, 2 },                      /* a segment that does not exist */
        { 2, SHM_ABANDONED, 2 },          /* a group that gave up */
        { 2, SHM_READY, 2 },              /* a group formed */
        { 3, SHM_JOINING, 2 },            /* a group gathering 3, the line says 2 */
        { 3, SHM_JOINING, 3 },            /* a group gathering 3 */
    };
    ShmRank ranks[2];
    ShmTeam *t = new_team(2, tmp.path, 150, NULL);
    REQUIRE(t != NULL);
    for (size_t f = 0; f < sizeof FAKES / sizeof FAKES[0]; f++) {
        ShmControl *c = FAKES[f].state != 0 ? fake_segment(name, FAKES[f].nranks, FAKES[f].state) : NULL;
        CHECK(FAKES[f].state == 0 || c != NULL);
        if (FAKES[f].line_nranks < 0)
            snprintf(line, sizeof line, "garbage \001\002 ptorun-comm 1\n");
        else
            snprintf(line, sizeof line, "ptorun-comm 1 %d %s\n", FAKES[f].line_nranks, name);
        REQUIRE(write_file(tmp.path, line));
        /* rank 1 alone does not take it for its group's */
        t->timeout_ms = 150;
        shm_run(t, ranks, 1u << 1, 0, NULL);
        CHECK_EQ_INT(ranks[1].rc_join, PTO_ERR_TIMEOUT);
        check_names_rank(ranks[1].join_message, 0);
        CHECK(access(tmp.path, F_OK) == 0);
        if (c != NULL)
            CHECK(c->rank_state[1] == SHM_RANK_ABSENT && c->pid[1] == 0 && c->seq == 0);
        /* rank 1 started first, the stale file in place: the group forms once rank 0 comes */
        t->timeout_ms = 20000;
        shm_run(t, ranks, 3u, 1, script_barrier);
        SHM_CHECK_JOINED(ranks, 2);
        SHM_REPORT(ranks, 2);
        CHECK_EQ_INT(test_dir_entries(tmp.dir), 0);
        if (c != NULL) {
            CHECK(c->rank_state[1] == SHM_RANK_ABSENT && c->pid[1] == 0);
            munmap(c, sizeof *c);
            CHECK_EQ_INT(shm_unlink(name), 0);
        }
    }
    /* two groups in sequence at the same path */
    for (int i = 0; i < 2; i++) {
        shm_run(t, ranks, 3u, i, script_barrier);
        SHM_CHECK_JOINED(ranks, 2);
        SHM_REPORT(ranks, 2);
    }
    CHECK_EQ_INT(shm_names_left(), 0);
    CHECK_EQ_INT(rmdir(tmp.dir), 0);
    free(t);
}

/* A root info whose rank 0 died before its group formed (its process gone,
 * its segment still named, gathering ranks): no rank joins it, the first to
 * find it unlinks its segment, and a new group forms at the same path. */
TEST(comm_shm_a_root_info_whose_rank_0_died_is_not_joined_and_its_segment_goes)
{
    ShmTmp tmp;
    REQUIRE(shm_tmp_make(&tmp));
    char name[80], line[160];
    snprintf(name, sizeof name, "/ptorun-comm-%d-orphan", (int)getpid());
    pid_t dead = fork();
    REQUIRE(dead >= 0);
    if (dead == 0)
        _exit(0);
    int status;
    REQUIRE(waitpid(dead, &status, 0) == dead);
    ShmControl *c = fake_segment(name, 2, SHM_JOINING);
    REQUIRE(c != NULL);
    c->pid[0] = dead;
    munmap(c, sizeof *c);
    snprintf(line, sizeof line, "ptorun-comm 1 2 %s\n", name);
    REQUIRE(write_file(tmp.path, line));
    ShmRank ranks[2];
    ShmTeam *t = new_team(2, tmp.path, 150, NULL);
    REQUIRE(t != NULL);
    shm_run(t, ranks, 1u << 1, 0, NULL);
    CHECK_EQ_INT(ranks[1].rc_join, PTO_ERR_TIMEOUT);
    int fd = shm_open(name, O_RDWR, 0);
    CHECK(fd < 0); /* unlinked by the rank that found it orphaned */
    if (fd >= 0) {
        close(fd);
        shm_unlink(name);
    }
    t->timeout_ms = 20000;
    REQUIRE(write_file(tmp.path, line));
    shm_run(t, ranks, 3u, 1, script_barrier);
    SHM_CHECK_JOINED(ranks, 2);
    SHM_REPORT(ranks, 2);
    CHECK_EQ_INT(test_dir_entries(tmp.dir), 0);
    CHECK_EQ_INT(shm_names_left(), 0);
    CHECK_EQ_INT(rmdir(tmp.dir), 0);
    free(t);
}

/* ---- allocations that fail ------------------------------------------------------------ */

typedef struct AllocFail {
    int names_after_failure;
} AllocFail;

/* Allocates over members, checks every window, frees: PTO_OK or the first failure. */
static int alloc_check_free(ShmRank *r, uint64_t key, const uint32_t *members, size_t count, size_t bytes)
{
    ShmWindows *w = NULL;
    int rc = shm_group_alloc_windows(r->g, key, members, count, bytes, PTO_OK, &w);
    if (rc != PTO_OK)
        return rc;
    size_t self = 0;
    while (members[self] != (uint32_t)r->rank)
        self++;
    shm_fill(shm_windows_base(w, self), bytes, (uint32_t)r->rank, (uint32_t)key);
    rc = shm_group_meet(r->g, members, count);
    for (size_t i = 0; rc == PTO_OK && i < count; i++)
        if (!shm_matches(shm_windows_base(w, i), bytes, members[i], (uint32_t)key))
            rc = PTO_ERR_FAILED;
    shm_windows_free(r->g, w);
    return rc;
}

static void script_alloc_failures(ShmRank *r)
{
    AllocFail *af = r->team->test;
    const uint32_t ALL[3] = { 0, 1, 2 }, DOWN[3] = { 2, 1, 0 };
    ShmWindows *w = NULL;
    record(r, 0, shm_group_alloc_windows(r->g, 1, ALL, 3, 4096, r->rank == 1 ? PTO_ERR_OUT_OF_MEMORY : PTO_OK, &w));
    RCHECK(r, w == NULL);
    sync_threads(r);
    if (r->rank == 0)
        af->names_after_failure = shm_names_left();
    sync_threads(r);
    record(r, 1, shm_group_alloc_windows(r->g, 2, ALL, 3, 100, r->rank == 2 ? PTO_ERR_FAILED : PTO_OK, &w));
    /* two ranks fail: every member names the first of them in the list */
    record(r, 2, shm_group_alloc_windows(r->g, 3, DOWN, 3, 100, r->rank != 1 ? PTO_ERR_OUT_OF_MEMORY : PTO_OK, &w));
    RCHECK(r, w == NULL);
    /* the group is still usable, the failed keys free */
    RCHECK(r, alloc_check_free(r, 4, ALL, 3, 3000) == PTO_OK);
    RCHECK(r, alloc_check_free(r, 1, DOWN, 3, 10) == PTO_OK);
    RCHECK(r, shm_group_alloc_windows(r->g, 1, ALL, 3, 64, PTO_OK, &w) == PTO_OK);
    ShmWindows *v = NULL;
    record(r, 3, shm_group_alloc_windows(r->g, 1, ALL, 3, 64, PTO_OK, &v)); /* key in use */
    RCHECK(r, v == NULL);
    RCHECK(r, shm_checked_meet(r, 0, NULL, 0) == PTO_OK);
    shm_windows_free(r->g, w);
}

TEST(comm_shm_an_allocation_failing_on_one_rank_fails_on_every_rank_naming_it)
{
    ShmTmp tmp;
    REQUIRE(shm_tmp_make(&tmp));
    ShmRank ranks[3];
    AllocFail af = { -1 };
    ShmTeam *t = new_team(3, tmp.path, 20000, &af);
    REQUIRE(t != NULL);
    shm_run(t, ranks, 7u, 0, script_alloc_failures);
    SHM_CHECK_JOINED(ranks, 3);
    SHM_REPORT(ranks, 3);
    CHECK_EQ_INT(af.names_after_failure, 0);
    for (int r = 0; r < 3; r++) {
        CHECK_EQ_INT(ranks[r].rc[0], PTO_ERR_OUT_OF_MEMORY);
        check_names_rank(ranks[r].msg[0], 1);
        CHECK_EQ_INT(ranks[r].rc[1], PTO_ERR_FAILED);
        check_names_rank(ranks[r].msg[1], 2);
        CHECK_EQ_INT(ranks[r].rc[2], PTO_ERR_OUT_OF_MEMORY);
        check_names_rank(ranks[r].msg[2], 2);
        CHECK_EQ_INT(ranks[r].rc[3], PTO_ERR_INVALID_ARGUMENT);
        CHECK_CONTAINS(ranks[r].msg[3], "key 1 is in use");
    }
    CHECK_EQ_INT(shm_names_left(), 0);
    CHECK_EQ_INT(rmdir(tmp.dir), 0);
    free(t);
}

/* An allocation failing on one rank, retried at once with the same key, many
 * times: the retry must not lose a name to the failure's clean-up. */
static void script_retry_same_key(ShmRank *r)
{
    const uint32_t ALL[3] = { 0, 1, 2 };
    for (int i = 0; i < 200 && r->failures == 0; i++) {
        ShmWindows *w = NULL;
        int local = r->rank == i % 3 ? PTO_ERR_OUT_OF_MEMORY : PTO_OK;
        RCHECK(r, shm_group_alloc_windows(r->g, 9, ALL, 3, 64, local, &w) == PTO_ERR_OUT_OF_MEMORY);
        RCHECK(r, alloc_check_free(r, 9, ALL, 3, 64) == PTO_OK);
    }
}

TEST(comm_shm_an_allocation_retried_with_the_same_key_after_a_failure_succeeds)
{
    ShmTmp tmp;
    REQUIRE(shm_tmp_make(&tmp));
    ShmRank ranks[3];
    ShmTeam *t = new_team(3, tmp.path, 20000, NULL);
    REQUIRE(t != NULL);
    shm_run(t, ranks, 7u, 0, script_retry_same_key);
    SHM_CHECK_JOINED(ranks, 3);
    SHM_REPORT(ranks, 3);
    CHECK_EQ_INT(shm_names_left(), 0);
    CHECK_EQ_INT(rmdir(tmp.dir), 0);
    free(t);
}

/* Windows of different sizes: refused on every member with one code and one
 * message naming the odd member first; nothing named; the group usable. */
typedef struct SizeFail {
    int names_after_failure;
} SizeFail;

static void script_sizes_differ(ShmRank *r)
{
    SizeFail *sf = r->team->test;
    const uint32_t ALL[3] = { 0, 1, 2 }, DOWN[3] = { 2, 1, 0 }, PAIR[2] = { 0, 2 };
    ShmWindows *w = NULL;
    record(r, 0, shm_group_alloc_windows(r->g, 1, ALL, 3, r->rank == 1 ? 65536 : 4096, PTO_OK, &w));
    RCHECK(r, w == NULL);
    sync_threads(r);
    if (r->rank == 0)
        sf->names_after_failure = shm_names_left();
    sync_threads(r);
    /* a size mismatch outranks a member's failure to create */
    record(r, 1, shm_group_alloc_windows(r->g, 2, DOWN, 3, r->rank == 0 ? 100 : 200,
                                         r->rank == 2 ? PTO_ERR_OUT_OF_MEMORY : PTO_OK, &w));
    RCHECK(r, w == NULL);
    /* two members, two sizes: the tie goes to the first member's size */
    if (r->rank != 1)
        record(r, 2, shm_group_alloc_windows(r->g, 3, PAIR, 2, r->rank == 0 ? 8192 : 4096, PTO_OK, &w));
    RCHECK(r, w == NULL);
    /* every rank differs: the first member's size is the others' */
    record(r, 3, shm_group_alloc_windows(r->g, 4, ALL, 3, 1000u * (size_t)(r->rank + 1), PTO_OK, &w));
    /* the same keys, equal sizes: the group is usable */
    RCHECK(r, alloc_check_free(r, 1, ALL, 3, 4096) == PTO_OK);
    RCHECK(r, alloc_check_free(r, 2, DOWN, 3, 200) == PTO_OK);
    RCHECK(r, shm_checked_meet(r, 0, NULL, 0) == PTO_OK);
}

TEST(comm_shm_windows_of_different_sizes_are_refused_alike_naming_the_odd_rank)
{
    ShmTmp tmp;
    REQUIRE(shm_tmp_make(&tmp));
    ShmRank ranks[3];
    SizeFail sf = { -1 };
    ShmTeam *t = new_team(3, tmp.path, 20000, &sf);
    REQUIRE(t != NULL);
    shm_run(t, ranks, 7u, 0, script_sizes_differ);
    SHM_CHECK_JOINED(ranks, 3);
    SHM_REPORT(ranks, 3);
    CHECK_EQ_INT(sf.names_after_failure, 0);
    for (int r = 0; r < 3; r++) {
        CHECK_EQ_INT(ranks[r].rc[0], PTO_ERR_RANKS_DISAGREE);
        CHECK_CONTAINS(ranks[r].msg[0],
                       "comm: the ranks disagree on the window size: rank 1 asked for 65536 bytes, the others for 4096");
        CHECK(strcmp(ranks[r].msg[0], ranks[0].msg[0]) == 0);
        CHECK_EQ_INT(ranks[r].rc[1], PTO_ERR_RANKS_DISAGREE);
        CHECK_CONTAINS(ranks[r].msg[1], "rank 0 asked for 100 bytes, the others for 200");
        CHECK_EQ_INT(ranks[r].rc[3], PTO_ERR_RANKS_DISAGREE);
        CHECK_CONTAINS(ranks[r].msg[3], "rank 1 asked for 2000 bytes, rank 2 asked for 3000 bytes, the others for 1000");
    }
    for (int r = 0; r < 3; r += 2) {
        CHECK_EQ_INT(ranks[r].rc[2], PTO_ERR_RANKS_DISAGREE);
        CHECK_CONTAINS(ranks[r].msg[2], "rank 2 asked for 4096 bytes, the others for 8192");
    }
    CHECK_EQ_INT(shm_names_left(), 0);
    CHECK_EQ_INT(rmdir(tmp.dir), 0);
    free(t);
}

/* Every rank passes every bad list to meet and alloc; then the group works. */
static void script_bad_members(ShmRank *r)
{
    const uint32_t me = (uint32_t)r->rank, other1 = (me + 1) % 3, other2 = (me + 2) % 3;
    const struct { uint32_t ranks[4]; size_t count; const char *why; } BAD[] = {
        { { me, other1, other2, 0 }, 0, "0 ranks listed" },
        { { me, other1, other2, me }, 4, "4 ranks listed" },
        { { me, me }, 2, "listed twice" },
        { { other1, me, other1 }, 3, "listed twice" },
        { { other1, other2 }, 2, "not among the ranks" },
        { { me, 3 }, 2, "not a rank of the group" },
        { { 0xffffffffu, me }, 2, "not a rank of the group" },
    };
    ShmWindows *w = NULL;
    for (size_t b = 0; b < sizeof BAD / sizeof BAD[0]; b++) {
        RCHECK(r, shm_group_meet(r->g, BAD[b].ranks, BAD[b].count) == PTO_ERR_INVALID_ARGUMENT);
        RCHECK(r, strstr(pto_last_error(), BAD[b].why) != NULL);
        RCHECK(r, shm_group_alloc_windows(r->g, 1, BAD[b].ranks, BAD[b].count, 64, PTO_OK, &w) ==
                      PTO_ERR_INVALID_ARGUMENT);
        RCHECK(r, strstr(pto_last_error(), BAD[b].why) != NULL);
    }
    RCHECK(r, shm_group_meet(r->g, NULL, 1) == PTO_ERR_INVALID_ARGUMENT);
    RCHECK(r, shm_group_alloc_windows(r->g, 1, NULL, 1, 64, PTO_OK, &w) == PTO_ERR_INVALID_ARGUMENT);
    RCHECK(r, shm_group_alloc_windows(r->g, 1, &me, 1, SIZE_MAX, PTO_OK, &w) == PTO_ERR_INVALID_ARGUMENT);
    RCHECK(r, w == NULL);
    /* nothing changed: the group meets, allocates, meets over a subset */
    RCHECK(r, shm_checked_meet(r, 0, NULL, 0) == PTO_OK);
    const uint32_t ALL[3] = { 0, 1, 2 }, PAIR[2] = { 2, 0 };
    RCHECK(r, alloc_check_free(r, 1, ALL, 3, 512) == PTO_OK);
    if (me != 1)
        RCHECK(r, shm_checked_meet(r, 1, PAIR, 2) == PTO_OK);
    RCHECK(r, shm_checked_meet(r, 2, NULL, 0) == PTO_OK);
}

TEST(comm_shm_bad_member_lists_are_refused_and_change_nothing)
{
    ShmTmp tmp;
    REQUIRE(shm_tmp_make(&tmp));
    ShmRank ranks[3];
    ShmTeam *t = new_team(3, tmp.path, 20000, NULL);
    REQUIRE(t != NULL);
    shm_run(t, ranks, 7u, 0, script_bad_members);
    SHM_CHECK_JOINED(ranks, 3);
    SHM_REPORT(ranks, 3);
    CHECK_EQ_INT(shm_names_left(), 0);
    CHECK_EQ_INT(rmdir(tmp.dir), 0);
    free(t);
}

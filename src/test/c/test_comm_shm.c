/*
 * The shared-memory group (util/comm_shm.h) directly: ranks as threads of this
 * process (1 to 16 of them) and as forked processes join through a root-info
 * file in a fresh directory, meet over every rank and over overlapping
 * subsets, allocate windows over every rank and over a subset, and read each
 * other's windows byte by byte; a seeded random script races all of it. A
 * meeting is checked to have waited for its members (each marks its step
 * entered before it meets). Faults are in test_comm_shm_faults.c; the
 * helpers both files use are here (test_comm_shm.h).
 */
#include "test_comm_shm.h"

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ptest.h"
#include "test_util.h"
#include "util/last_error.h"

/* ---- helpers ------------------------------------------------------------------ */

uint64_t shm_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void shm_rank_fail(ShmRank *r, int line, const char *what)
{
    if (r->failures++ == 0)
        snprintf(r->first_failure, sizeof r->first_failure, "rank %d, line %d: %s (last error: %s)", r->rank, line,
                 what, pto_last_error());
}

static void *rank_main(void *arg)
{
    ShmRank *r = arg;
    ShmTeam *t = r->team;
    r->rc_join = shm_group_join(r->rank, t->nranks, t->path, t->timeout_ms, &r->g);
    snprintf(r->join_message, sizeof r->join_message, "%s", r->rc_join == PTO_OK ? "" : pto_last_error());
    if (r->rc_join == PTO_OK && r->script != NULL)
        r->script(r);
    shm_group_leave(r->g);
    r->g = NULL;
    return NULL;
}

void shm_run(ShmTeam *team, ShmRank *ranks, uint32_t mask, int descending, ShmScript script)
{
    int n = team->nranks, running = 0;
    for (int i = 0; i < n; i++)
        running += (mask >> i) & 1u;
    pthread_barrier_init(&team->sync, NULL, (unsigned)(running > 0 ? running : 1));
    for (int k = 0; k < n; k++) {
        int i = descending ? n - 1 - k : k;
        memset(&ranks[i], 0, sizeof ranks[i]);
        ranks[i].rank = i;
        ranks[i].team = team;
        ranks[i].script = script;
        ranks[i].rc_join = 1; /* not run */
        if ((mask >> i) & 1u)
            pthread_create(&ranks[i].thread, NULL, rank_main, &ranks[i]);
    }
    for (int i = 0; i < n; i++)
        if ((mask >> i) & 1u)
            pthread_join(ranks[i].thread, NULL);
    pthread_barrier_destroy(&team->sync);
}

void shm_report(const ShmRank *ranks, int n, const char *file, int line)
{
    for (int i = 0; i < n; i++)
        if (ranks[i].failures != 0) {
            char m[400];
            snprintf(m, sizeof m, "%d failed checks, the first: %s", ranks[i].failures, ranks[i].first_failure);
            ptest_record_failure(file, line, m);
        }
}

void shm_check_joined(const ShmRank *ranks, int n, const char *file, int line)
{
    for (int i = 0; i < n; i++)
        if (ranks[i].rc_join != PTO_OK) {
            char m[400];
            snprintf(m, sizeof m, "rank %d did not join: %d %s", i, ranks[i].rc_join, ranks[i].join_message);
            ptest_record_failure(file, line, m);
        }
}

void shm_enter(ShmRank *r, int step)
{
    __atomic_store_n(&r->team->entered[step][r->rank], 1, __ATOMIC_SEQ_CST);
}

int shm_all_entered(ShmRank *r, int step, const uint32_t *ranks, size_t count)
{
    int all = 1;
    for (size_t i = 0; i < count; i++)
        all &= __atomic_load_n(&r->team->entered[step][ranks[i]], __ATOMIC_SEQ_CST) == 1;
    return all;
}

/* A meeting over ranks (a barrier when NULL) that must return PTO_OK after every member entered it. */
int shm_checked_meet(ShmRank *r, int step, const uint32_t *ranks, size_t count)
{
    uint32_t all[SHM_MAX];
    for (int i = 0; i < r->team->nranks; i++)
        all[i] = (uint32_t)i;
    shm_enter(r, step);
    int rc = ranks == NULL ? shm_group_barrier(r->g) : shm_group_meet(r->g, ranks, count);
    if (rc != PTO_OK)
        return rc;
    if (ranks == NULL) {
        ranks = all;
        count = (size_t)r->team->nranks;
    }
    return shm_all_entered(r, step, ranks, count) ? PTO_OK : PTO_ERR_FAILED;
}

int shm_names_left(void)
{
    char prefix[64];
    snprintf(prefix, sizeof prefix, "ptorun-comm-%d-", (int)getpid());
    DIR *d = opendir("/dev/shm");
    int n = 0;
    for (struct dirent *e; d != NULL && (e = readdir(d)) != NULL;)
        n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    if (d != NULL)
        closedir(d);
    return n;
}

int shm_tmp_make(ShmTmp *t)
{
    snprintf(t->dir, sizeof t->dir, "/tmp/ptorun-comm-shm-XXXXXX");
    if (mkdtemp(t->dir) == NULL)
        return 0;
    snprintf(t->path, sizeof t->path, "%s/rootinfo", t->dir);
    return 1;
}

void shm_fill(void *base, size_t bytes, uint32_t rank, uint32_t tag)
{
    unsigned char *p = base;
    for (size_t i = 0; i < bytes; i++)
        p[i] = shm_pattern(rank, tag, i);
}

int shm_matches(const void *base, size_t bytes, uint32_t rank, uint32_t tag)
{
    const unsigned char *p = base;
    for (size_t i = 0; i < bytes; i++)
        if (p[i] != shm_pattern(rank, tag, i))
            return 0;
    return 1;
}

int shm_signals_fresh(const ShmWindows *w, size_t i, uint32_t pid)
{
    const uint32_t *s = shm_windows_signals(w, i);
    int ok = 1;
    for (uint32_t k = 0; k < PTO_COMM_SIGNAL_WORDS; k++)
        ok &= __atomic_load_n(&s[k], __ATOMIC_SEQ_CST) == (k == PTO_COMM_SIG_PID ? pid : 0u);
    return ok;
}

static size_t page_bytes(void)
{
    return (size_t)sysconf(_SC_PAGESIZE);
}

static int page_aligned(const void *p)
{
    return p != NULL && (uintptr_t)p % page_bytes() == 0;
}

/* Checks an allocation as handed out: its shape, its members' windows and
 * signal blocks page aligned and apart from each other, the signal blocks
 * fresh (no member can have freed it yet: that needs a meeting with us). */
static void check_allocation(ShmRank *r, const ShmWindows *w, uint64_t key, size_t count, size_t bytes)
{
    RCHECK(r, shm_windows_count(w) == count);
    RCHECK(r, shm_windows_bytes(w) == bytes);
    RCHECK(r, shm_windows_key(w) == key);
    for (size_t i = 0; i < count; i++) {
        const unsigned char *base = shm_windows_base(w, i);
        const unsigned char *sig = (const unsigned char *)shm_windows_signals(w, i);
        RCHECK(r, page_aligned(base) && page_aligned(sig));
        RCHECK(r, sig >= base + bytes);
        RCHECK(r, shm_signals_fresh(w, i, (uint32_t)getpid()));
        for (size_t j = 0; j < i; j++)
            RCHECK(r, shm_windows_base(w, j) != base);
    }
}

/* ---- ranks as threads ------------------------------------------------------------ */

typedef struct Subset {
    size_t count;
    uint32_t r[4];
} Subset;

/* Overlapping subsets, issued in this order by their members; those naming a
 * rank the group lacks are skipped by everyone. */
static const Subset SUBSETS[] = {
    { 2, { 0, 1 } }, { 2, { 1, 2 } }, { 3, { 0, 1, 2 } }, { 2, { 2, 3 } }, { 2, { 3, 0 } }, { 3, { 3, 1, 0 } },
    { 2, { 1, 2 } }, { 1, { 1 } },    { 2, { 0, 1 } },
};

static int member_index(const uint32_t *ranks, size_t count, uint32_t rank)
{
    for (size_t i = 0; i < count; i++)
        if (ranks[i] == rank)
            return (int)i;
    return -1;
}

static void script_basic(ShmRank *r)
{
    const int n = r->team->nranks;
    const uint32_t me = (uint32_t)r->rank;
    RCHECK(r, shm_group_rank(r->g) == r->rank && shm_group_nranks(r->g) == n);
    RCHECK(r, shm_group_timeout_ms(r->g) == r->team->timeout_ms);
    int step = 0;
    for (int b = 0; b < 3; b++, step++)
        RCHECK(r, shm_checked_meet(r, step, NULL, 0) == PTO_OK);
    for (size_t s = 0; s < sizeof SUBSETS / sizeof SUBSETS[0]; s++, step++) {
        const Subset *sub = &SUBSETS[s];
        int fits = 1;
        for (size_t i = 0; i < sub->count; i++)
            fits &= sub->r[i] < (uint32_t)n;
        if (fits && member_index(sub->r, sub->count, me) >= 0)
            RCHECK(r, shm_checked_meet(r, step, sub->r, sub->count) == PTO_OK);
    }

    /* three allocations live at once: every rank, a subset listed out of order, signals only */
    uint32_t all[SHM_MAX], sub[2] = { (uint32_t)n - 1, 0 };
    for (int i = 0; i < n; i++)
        all[i] = (uint32_t)i;
    const struct { uint64_t key; const uint32_t *ranks; size_t count, bytes; } a[3] = {
        { 0x100, all, (size_t)n, 3 * page_bytes() + 123 },
        { 0xabcdef0123456789ull, sub, n > 1 ? 2u : 1u, 1000 },
        { 7, all, (size_t)n, 0 },
    };
    ShmWindows *w[3] = { NULL, NULL, NULL };
    for (int k = 0; k < 3; k++) {
        int self = member_index(a[k].ranks, a[k].count, me);
        if (self < 0)
            continue;
        int rc = shm_group_alloc_windows(r->g, a[k].key, a[k].ranks, a[k].count, a[k].bytes, PTO_OK, &w[k]);
        RCHECK(r, rc == PTO_OK);
        if (rc != PTO_OK)
            return;
        check_allocation(r, w[k], a[k].key, a[k].count, a[k].bytes);
        shm_fill(shm_windows_base(w[k], (size_t)self), a[k].bytes, me, (uint32_t)k);
    }
    RCHECK(r, shm_checked_meet(r, step++, NULL, 0) == PTO_OK);
    for (int k = 0; k < 3; k++) {
        if (w[k] == NULL)
            continue;
        for (size_t i = 0; i < a[k].count; i++) {
            RCHECK(r, shm_matches(shm_windows_base(w[k], i), a[k].bytes, a[k].ranks[i], (uint32_t)k));
            RCHECK(r, shm_signals_fresh(w[k], i, (uint32_t)getpid()));
        }
        for (int j = 0; j < k; j++)
            RCHECK(r, w[j] == NULL || shm_windows_base(w[j], 0) != shm_windows_base(w[k], 0));
    }
    RCHECK(r, shm_checked_meet(r, step++, NULL, 0) == PTO_OK); /* nobody frees before every member read */
    for (int k = 2; k >= 0; k--)
        shm_windows_free(r->g, w[k]);
}

TEST(comm_shm_ranks_as_threads_meet_and_read_each_others_windows)
{
    static const int SIZES[] = { 1, 2, 3, 4, 16 };
    for (size_t s = 0; s < sizeof SIZES / sizeof SIZES[0]; s++) {
        ShmTmp tmp;
        REQUIRE(shm_tmp_make(&tmp));
        ShmTeam *team = calloc(1, sizeof *team);
        ShmRank *ranks = calloc(SHM_MAX, sizeof *ranks);
        REQUIRE(team != NULL && ranks != NULL);
        *team = (ShmTeam){ .nranks = SIZES[s], .path = tmp.path, .timeout_ms = 20000 };
        shm_run(team, ranks, (1u << SIZES[s]) - 1, 0, script_basic);
        SHM_CHECK_JOINED(ranks, SIZES[s]);
        SHM_REPORT(ranks, SIZES[s]);
        CHECK_EQ_INT(test_dir_entries(tmp.dir), 0); /* the root info and its temporary name are gone */
        CHECK_EQ_INT(rmdir(tmp.dir), 0);
        CHECK_EQ_INT(shm_names_left(), 0);
        free(ranks);
        free(team);
    }
}

/* ---- ranks as processes ------------------------------------------------------------ */

/* One rank of 4, in any process: 0 when every step held, else the step that
 * failed (a forked child's exit status). The group is named by root's pid. */
static int process_rank(int rank, const char *path, pid_t root)
{
    enum { N = 4, BYTES = 5000 };
    static const uint32_t ALL[N] = { 0, 1, 2, 3 }, SUB[2] = { 3, 1 };
    ShmGroup *g = NULL;
    if (shm_group_join(rank, N, path, 20000, &g) != PTO_OK)
        return 10;
    int fail = 0;
    ShmWindows *w = NULL, *v = NULL;
    if (shm_group_alloc_windows(g, 1, ALL, N, BYTES, PTO_OK, &w) != PTO_OK) {
        fail = 11;
        goto out;
    }
    for (size_t i = 0; i < N; i++) {
        uint32_t pid = shm_windows_signals(w, i)[PTO_COMM_SIG_PID];
        if (!page_aligned(shm_windows_base(w, i)) || pid == 0 || pid == PTO_COMM_PID_GONE ||
            (i == 0 && pid != (uint32_t)root) || (i == (size_t)rank && pid != (uint32_t)getpid()) ||
            (i != (size_t)rank && pid == (uint32_t)getpid()))
            fail = fail ? fail : 12;
    }
    shm_fill(shm_windows_base(w, (size_t)rank), BYTES, (uint32_t)rank, 1);
    if (shm_group_barrier(g) != PTO_OK) {
        fail = 13;
        goto out;
    }
    for (size_t i = 0; i < N; i++)
        if (!shm_matches(shm_windows_base(w, i), BYTES, (uint32_t)i, 1))
            fail = fail ? fail : 14;
    int self = member_index(SUB, 2, (uint32_t)rank);
    if (self >= 0) {
        if (shm_group_alloc_windows(g, 2, SUB, 2, 64, PTO_OK, &v) != PTO_OK) {
            fail = 15;
            goto out;
        }
        shm_fill(shm_windows_base(v, (size_t)self), 64, (uint32_t)rank, 2);
        if (shm_group_meet(g, SUB, 2) != PTO_OK) {
            fail = 16;
            goto out;
        }
        for (size_t i = 0; i < 2; i++)
            if (!shm_matches(shm_windows_base(v, i), 64, SUB[i], 2))
                fail = fail ? fail : 17;
    }
    if (shm_group_barrier(g) != PTO_OK)
        fail = fail ? fail : 18;
out:
    shm_windows_free(g, v);
    shm_windows_free(g, w);
    shm_group_leave(g);
    return fail;
}

TEST(comm_shm_ranks_as_processes_meet_and_read_each_others_windows)
{
    ShmTmp tmp;
    REQUIRE(shm_tmp_make(&tmp));
    pid_t root = getpid(), child[3] = { -1, -1, -1 };
    for (int i = 0; i < 3; i++) {
        child[i] = fork();
        if (child[i] == 0)
            _exit(process_rank(i + 1, tmp.path, root));
        CHECK(child[i] > 0);
    }
    int all_forked = child[0] > 0 && child[1] > 0 && child[2] > 0;
    if (all_forked)
        CHECK_EQ_INT(process_rank(0, tmp.path, root), 0);
    for (int i = 0; i < 3; i++) {
        if (child[i] <= 0)
            continue;
        if (!all_forked)
            kill(child[i], SIGKILL);
        int status = -1;
        CHECK(waitpid(child[i], &status, 0) == child[i]);
        CHECK(WIFEXITED(status));
        if (all_forked)
            CHECK_EQ_INT(WEXITSTATUS(status), 0);
    }
    CHECK_EQ_INT(test_dir_entries(tmp.dir), 0);
    CHECK_EQ_INT(rmdir(tmp.dir), 0);
    CHECK_EQ_INT(shm_names_left(), 0);
}

/* ---- a random script raced by 4 ranks ---------------------------------------------- */

enum { RACE_N = 4, RACE_STEPS = 300, RACE_KEPT = 8 };

typedef struct Race {
    uint64_t seed;
    int allocations; /* atomics: allocations rank 0 saw succeed */
} Race;

static uint64_t next_random(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

typedef struct Kept {
    ShmWindows *w;
    uint32_t ranks[RACE_N];
    size_t count, bytes;
    uint32_t tag;
} Kept;

static void check_windows(ShmRank *r, const Kept *k)
{
    for (size_t i = 0; i < k->count; i++)
        RCHECK(r, shm_matches(shm_windows_base(k->w, i), k->bytes, k->ranks[i], k->tag));
}

/* Every rank draws the same script from the seed (every draw is made by every
 * rank, member or not): 0 barrier, 1 a meeting over a random subset, 2 windows
 * over a random subset freed at once, 3 kept until the next step 4. */
static void script_race(ShmRank *r)
{
    Race *race = r->team->test;
    uint64_t rng = race->seed * 0x9E3779B97F4A7C15ull + 1;
    const uint32_t me = (uint32_t)r->rank;
    Kept kept[RACE_KEPT];
    size_t nkept = 0;
    static const size_t SIZES[] = { 0, 1, 64, 4096, 4097, 20000 };
    for (int step = 0; step < RACE_STEPS && r->failures == 0; step++) {
        int op = (int)(next_random(&rng) % 5);
        uint32_t mask = (uint32_t)(next_random(&rng) % ((1u << RACE_N) - 1)) + 1;
        Kept k = { .count = 0, .tag = (uint32_t)step };
        for (uint32_t i = 0; i < RACE_N; i++)
            if ((mask >> i) & 1u)
                k.ranks[k.count++] = i;
        for (size_t i = k.count; i > 1; i--) { /* members listed in a random order */
            size_t j = (size_t)(next_random(&rng) % i);
            uint32_t t = k.ranks[i - 1];
            k.ranks[i - 1] = k.ranks[j];
            k.ranks[j] = t;
        }
        k.bytes = SIZES[next_random(&rng) % (sizeof SIZES / sizeof SIZES[0])];
        if (op == 3 && nkept == RACE_KEPT)
            op = 2; /* the same collective; only what this rank does after differs */
        int self = member_index(k.ranks, k.count, me);
        if (op == 0) {
            RCHECK(r, shm_checked_meet(r, step, NULL, 0) == PTO_OK);
        } else if (op == 1) {
            if (self >= 0)
                RCHECK(r, shm_checked_meet(r, step, k.ranks, k.count) == PTO_OK);
        } else if (op == 4) {
            for (size_t i = 0; i < nkept; i++) {
                check_windows(r, &kept[i]); /* nothing later overwrote them */
                shm_windows_free(r->g, kept[i].w);
            }
            nkept = 0;
        } else if (self >= 0) {
            uint64_t key = race->seed << 32 | (uint64_t)step;
            int rc = shm_group_alloc_windows(r->g, key, k.ranks, k.count, k.bytes, PTO_OK, &k.w);
            RCHECK(r, rc == PTO_OK);
            if (rc != PTO_OK)
                break;
            if (me == 0)
                __atomic_add_fetch(&race->allocations, 1, __ATOMIC_SEQ_CST);
            check_allocation(r, k.w, key, k.count, k.bytes);
            shm_fill(shm_windows_base(k.w, (size_t)self), k.bytes, me, k.tag);
            RCHECK(r, shm_checked_meet(r, step, k.ranks, k.count) == PTO_OK);
            check_windows(r, &k);
            if (op == 3)
                kept[nkept++] = k;
            else
                shm_windows_free(r->g, k.w);
        }
    }
    for (size_t i = 0; i < nkept; i++)
        shm_windows_free(r->g, kept[i].w);
}

TEST(comm_shm_a_random_script_raced_by_four_ranks)
{
    static const uint64_t SEEDS[] = { 1, 2, 0x5eed };
    for (size_t s = 0; s < sizeof SEEDS / sizeof SEEDS[0]; s++) {
        ShmTmp tmp;
        REQUIRE(shm_tmp_make(&tmp));
        ShmTeam *team = calloc(1, sizeof *team);
        ShmRank ranks[RACE_N];
        REQUIRE(team != NULL);
        Race race = { .seed = SEEDS[s] };
        *team = (ShmTeam){ .nranks = RACE_N, .path = tmp.path, .timeout_ms = 20000, .test = &race };
        shm_run(team, ranks, (1u << RACE_N) - 1, 0, script_race);
        SHM_CHECK_JOINED(ranks, RACE_N);
        SHM_REPORT(ranks, RACE_N);
        CHECK(race.allocations > 20); /* the script did allocate */
        CHECK_EQ_INT(rmdir(tmp.dir), 0);
        CHECK_EQ_INT(shm_names_left(), 0);
        free(team);
    }
}

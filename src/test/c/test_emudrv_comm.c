/*
 * The emulated driver's communication entries (driver ABI 2) through its table
 * only: ranks as threads on their own emulated devices join through a root-info
 * file, allocate windows every member's device reaches with its copies, meet
 * at barriers; an allocation failing on one rank fails on every rank naming
 * it; a peer lost (PEER_LOST) fails its peers naming it; a device closed with
 * its rank still in a group takes the rank out. The driver's accounting and
 * /dev/shm are back to where they were after each scenario.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ptest.h"
#include "ptorun/pto_comm.h"
#include "test_comm_shm.h"
#include "test_emudrv.h"

#define MAX_RANKS 4
#define WINDOW 8192

typedef struct Rank {
    pthread_t thread;
    int rank, nranks;
    const char *path;
    uint32_t timeout_ms;
    PtoDrvDevice *dev;
    PtoDrvComm *comm;
    int rc_join, rc_alloc, rc_barrier;
    char message[256];
    int (*script)(struct Rank *);
} Rank;

static void *rank_main(void *arg)
{
    Rank *r = arg;
    r->rc_join = API->comm_join(r->dev, r->rank, r->nranks, r->path, r->timeout_ms, &r->comm);
    if (r->rc_join != PTO_DRV_OK) {
        snprintf(r->message, sizeof r->message, "%s", API->comm_last_message());
        return NULL;
    }
    r->script(r);
    return NULL;
}

static void run_ranks(Rank *ranks, int n, const char *path, uint32_t timeout_ms, int (*script)(Rank *))
{
    unlink(path);
    for (int i = 0; i < n; i++) {
        ranks[i].rank = i;
        ranks[i].nranks = n;
        ranks[i].path = path;
        ranks[i].timeout_ms = timeout_ms;
        ranks[i].script = script;
        ranks[i].dev = open_dev(i);
        pthread_create(&ranks[i].thread, NULL, rank_main, &ranks[i]);
    }
    for (int i = 0; i < n; i++)
        pthread_join(ranks[i].thread, NULL);
}

static void close_ranks(Rank *ranks, int n)
{
    for (int i = 0; i < n; i++) {
        if (ranks[i].comm != NULL)
            CHECK_EQ_INT(API->comm_leave(ranks[i].comm), PTO_DRV_OK);
        CHECK_EQ_INT(API->close_device(ranks[i].dev), PTO_DRV_OK);
    }
}

static const uint32_t ALL[MAX_RANKS] = { 0, 1, 2, 3 };

/* Every rank writes its id into its window with its device's copy, then reads
 * every peer's window through its own device. */
static int script_windows(Rank *r)
{
    PtoDrvWindows *w = NULL;
    r->rc_alloc = API->comm_window_alloc(r->comm, 1, ALL, (size_t)r->nranks, WINDOW, &w);
    if (r->rc_alloc != PTO_DRV_OK) {
        snprintf(r->message, sizeof r->message, "%s", API->comm_last_message());
        return r->rc_alloc;
    }
    uint64_t mine = 0, signals = 0;
    CHECK_EQ_INT(API->comm_window_addrs(w, (size_t)r->rank, &mine, &signals), PTO_DRV_OK);
    const uint32_t *sig = (const uint32_t *)(uintptr_t)signals;
    CHECK(sig[PTO_COMM_SIG_PID] == (uint32_t)getpid() && sig[PTO_COMM_SIG_BROKEN] == 0 &&
          sig[PTO_COMM_SIG_COUNTERS] == 0);
    unsigned char pattern[WINDOW];
    memset(pattern, 0x10 + r->rank, sizeof pattern);
    CHECK_EQ_INT(API->memcpy_h2d(r->dev, mine, pattern, sizeof pattern), PTO_DRV_OK);
    r->rc_barrier = API->comm_barrier(r->comm);
    for (int p = 0; p < r->nranks; p++) {
        uint64_t peer = 0, peer_signals = 0;
        CHECK_EQ_INT(API->comm_window_addrs(w, (size_t)p, &peer, &peer_signals), PTO_DRV_OK);
        unsigned char got[WINDOW];
        CHECK_EQ_INT(API->memcpy_d2h(r->dev, got, peer, sizeof got), PTO_DRV_OK);
        int same = 1;
        for (size_t i = 0; i < sizeof got; i++)
            same &= got[i] == 0x10 + p;
        CHECK(same);
    }
    CHECK_EQ_INT(API->comm_window_addrs(w, (size_t)r->nranks, &mine, &signals), PTO_DRV_ERR_INVALID);
    CHECK_EQ_INT(API->comm_barrier(r->comm), PTO_DRV_OK); /* nobody frees before everyone read */
    CHECK_EQ_INT(API->comm_window_free(r->comm, w), PTO_DRV_OK);
    CHECK_EQ_INT(API->comm_window_free(r->comm, w), PTO_DRV_ERR_INVALID);
    return PTO_DRV_OK;
}

TEST(emudrv_comm_ranks_address_each_others_windows_and_meet)
{
    PtoEmuStats before = stats_now();
    for (int n = 1; n <= MAX_RANKS; n++) {
        Rank ranks[MAX_RANKS] = { 0 };
        run_ranks(ranks, n, "/tmp/ptorun-emudrv-comm-rootinfo", 20000, script_windows);
        for (int i = 0; i < n; i++) {
            CHECK_EQ_INT(ranks[i].rc_join, PTO_DRV_OK);
            CHECK_EQ_INT(ranks[i].rc_alloc, PTO_DRV_OK);
            CHECK_EQ_INT(ranks[i].rc_barrier, PTO_DRV_OK);
        }
        PtoEmuStats during = stats_now();
        CHECK(during.comm_ranks == before.comm_ranks + (uint64_t)n && during.comm_window_sets == before.comm_window_sets);
        close_ranks(ranks, n);
    }
    CHECK_STATS(stats_now(), before);
    CHECK_EQ_INT(shm_names_left(), 0);
    CHECK(access("/tmp/ptorun-emudrv-comm-rootinfo", F_OK) != 0);
}

TEST(emudrv_comm_an_allocation_failing_on_one_rank_fails_on_every_rank_naming_it)
{
    PtoEmuStats before = stats_now();
    CHECK_EQ_INT(emudrv()->inject(PTO_EMU_FAULT_ALLOC, 0), 0);
    Rank ranks[3] = { 0 };
    run_ranks(ranks, 3, "/tmp/ptorun-emudrv-comm-rootinfo", 20000, script_windows);
    int named = -1;
    for (int i = 0; i < 3; i++) {
        CHECK_EQ_INT(ranks[i].rc_alloc, PTO_DRV_ERR_OUT_OF_MEMORY);
        const char *at = strstr(ranks[i].message, "rank ");
        CHECK(at != NULL);
        if (at != NULL) {
            int r = atoi(at + 5);
            named = named < 0 ? r : named;
            CHECK_EQ_INT(r, named);
        }
    }
    CHECK_EQ_INT(stats_now().comm_window_sets, before.comm_window_sets);
    CHECK_EQ_INT(shm_names_left(), 0);
    close_ranks(ranks, 3);
    CHECK_STATS(stats_now(), before);
}

/* Rank 1 asks for a window 16 times the others', then all ask alike. */
static int script_sizes_differ(Rank *r)
{
    PtoDrvWindows *w = NULL;
    r->rc_alloc = API->comm_window_alloc(r->comm, 1, ALL, (size_t)r->nranks, r->rank == 1 ? 65536 : 4096, &w);
    snprintf(r->message, sizeof r->message, "%s", API->comm_last_message());
    CHECK(w == NULL);
    r->rc_barrier = API->comm_window_alloc(r->comm, 1, ALL, (size_t)r->nranks, 4096, &w);
    if (r->rc_barrier == PTO_DRV_OK)
        CHECK_EQ_INT(API->comm_window_free(r->comm, w), PTO_DRV_OK);
    return r->rc_alloc;
}

TEST(emudrv_comm_windows_of_different_sizes_are_refused_alike_naming_the_odd_rank)
{
    PtoEmuStats before = stats_now();
    Rank ranks[3] = { 0 };
    run_ranks(ranks, 3, "/tmp/ptorun-emudrv-comm-rootinfo", 20000, script_sizes_differ);
    for (int i = 0; i < 3; i++) {
        CHECK_EQ_INT(ranks[i].rc_alloc, PTO_DRV_ERR_MISMATCH);
        CHECK_CONTAINS(ranks[i].message, "the ranks disagree on the window size: rank 1 asked for 65536 bytes, the "
                                         "others for 4096");
        const char *at = strstr(ranks[i].message, "rank ");
        CHECK(at != NULL && atoi(at + 5) == 1);
        CHECK_EQ_INT(ranks[i].rc_barrier, PTO_DRV_OK); /* the equal allocation after it */
    }
    CHECK_EQ_INT(stats_now().comm_window_sets, before.comm_window_sets);
    CHECK_EQ_INT(shm_names_left(), 0);
    close_ranks(ranks, 3);
    CHECK_STATS(stats_now(), before);
}

static int script_barrier(Rank *r)
{
    r->rc_barrier = API->comm_barrier(r->comm);
    snprintf(r->message, sizeof r->message, "%s", API->comm_last_message());
    return r->rc_barrier;
}

TEST(emudrv_comm_a_peer_lost_fails_its_peers_barriers_naming_it)
{
    PtoEmuStats before = stats_now();
    CHECK_EQ_INT(emudrv()->inject(PTO_EMU_FAULT_PEER_LOST, 0), 0);
    Rank ranks[3] = { 0 };
    run_ranks(ranks, 3, "/tmp/ptorun-emudrv-comm-rootinfo", 20000, script_barrier);
    int lost = -1;
    for (int i = 0; i < 3; i++) {
        if (ranks[i].rc_barrier == PTO_DRV_ERR_DEVICE_LOST) {
            CHECK(lost < 0);
            lost = i;
        }
    }
    CHECK(lost >= 0);
    for (int i = 0; i < 3; i++) {
        if (i == lost)
            continue;
        CHECK_EQ_INT(ranks[i].rc_barrier, PTO_DRV_ERR_PEER_LOST);
        char expect[32];
        snprintf(expect, sizeof expect, "rank %d", lost);
        CHECK_CONTAINS(ranks[i].message, expect);
    }
    close_ranks(ranks, 3);
    CHECK_STATS(stats_now(), before);
    CHECK_EQ_INT(shm_names_left(), 0);
}

static int script_stay(Rank *r)
{
    (void)r;
    return PTO_DRV_OK;
}

TEST(emudrv_comm_join_times_out_and_closing_a_device_takes_its_rank_out)
{
    PtoEmuStats before = stats_now();
    Rank alone[1] = { 0 };
    alone[0].nranks = 2;
    alone[0].rank = 0;
    alone[0].path = "/tmp/ptorun-emudrv-comm-rootinfo";
    alone[0].timeout_ms = 200;
    alone[0].script = script_stay;
    alone[0].dev = open_dev(0);
    unlink(alone[0].path);
    rank_main(&alone[0]);
    CHECK_EQ_INT(alone[0].rc_join, PTO_DRV_ERR_TIMEOUT);
    CHECK(access(alone[0].path, F_OK) != 0);
    CHECK_EQ_INT(API->close_device(alone[0].dev), PTO_DRV_OK);

    Rank ranks[2] = { 0 };
    run_ranks(ranks, 2, "/tmp/ptorun-emudrv-comm-rootinfo", 20000, script_stay);
    CHECK_EQ_INT(stats_now().comm_ranks, before.comm_ranks + 2);
    for (int i = 0; i < 2; i++) { /* close with the ranks still in the group */
        CHECK_EQ_INT(API->close_device(ranks[i].dev), PTO_DRV_OK);
        CHECK_EQ_INT(API->comm_barrier(ranks[i].comm), PTO_DRV_ERR_INVALID);
        CHECK_EQ_INT(API->comm_leave(ranks[i].comm), PTO_DRV_ERR_INVALID);
    }
    CHECK_STATS(stats_now(), before);
    CHECK_EQ_INT(shm_names_left(), 0);
}

/* The last rank breaks the domain naming itself (ABI 3): every member's signal block
 * then holds BROKEN = 1 + that rank; a second break naming another rank changes
 * nothing (the first culprit wins); bad arguments are refused. */
static int script_break(Rank *r)
{
    PtoDrvWindows *w = NULL;
    r->rc_alloc = API->comm_window_alloc(r->comm, 3, ALL, (size_t)r->nranks, 0, &w);
    if (r->rc_alloc != PTO_DRV_OK)
        return r->rc_alloc;
    const int breaker = r->nranks - 1;
    if (r->rank == breaker) {
        CHECK_EQ_INT(API->comm_window_break(r->comm, w, (uint32_t)r->nranks), PTO_DRV_ERR_INVALID);
        CHECK_EQ_INT(API->comm_window_break(r->comm, NULL, 0), PTO_DRV_ERR_INVALID);
        CHECK_EQ_INT(API->comm_window_break(NULL, w, 0), PTO_DRV_ERR_INVALID);
        CHECK_EQ_INT(API->comm_window_break(r->comm, w, (uint32_t)breaker), PTO_DRV_OK);
        CHECK_EQ_INT(API->comm_window_break(r->comm, w, 0), PTO_DRV_OK);
    }
    r->rc_barrier = API->comm_barrier(r->comm);
    uint64_t window = 0, signals = 0;
    CHECK_EQ_INT(API->comm_window_addrs(w, (size_t)r->rank, &window, &signals), PTO_DRV_OK);
    CHECK_EQ_INT((int)((const uint32_t *)(uintptr_t)signals)[PTO_COMM_SIG_BROKEN], 1 + breaker);
    PtoCommSpan span;
    CHECK_EQ_INT(API->comm_window_span(w, &span), 0); /* one host: no span */
    CHECK_EQ_INT(API->comm_window_span(NULL, &span), PTO_DRV_ERR_INVALID);
    CHECK_EQ_INT(API->comm_window_span(w, NULL), PTO_DRV_ERR_INVALID);
    CHECK_EQ_INT(API->comm_barrier(r->comm), PTO_DRV_OK);
    CHECK_EQ_INT(API->comm_window_free(r->comm, w), PTO_DRV_OK);
    return PTO_DRV_OK;
}

/* Three ranks run `script`, each joining, allocating and meeting at its barrier;
   then nothing of them is left. */
static void three_ranks_run(const char *rootinfo, int (*script)(Rank *))
{
    PtoEmuStats before = stats_now();
    Rank ranks[MAX_RANKS] = { 0 };
    run_ranks(ranks, 3, rootinfo, 20000, script);
    for (int i = 0; i < 3; i++) {
        CHECK_EQ_INT(ranks[i].rc_join, PTO_DRV_OK);
        CHECK_EQ_INT(ranks[i].rc_alloc, PTO_DRV_OK);
        CHECK_EQ_INT(ranks[i].rc_barrier, PTO_DRV_OK);
    }
    close_ranks(ranks, 3);
    CHECK_STATS(stats_now(), before);
    CHECK_EQ_INT(shm_names_left(), 0);
    unlink(rootinfo);
}

TEST(emudrv_comm_window_break_marks_every_member_with_the_first_culprit)
{
    three_ranks_run("/tmp/ptorun-emudrv-comm-break-rootinfo", script_break);
}

/* A slice (ABI 5) of the group's windows over ranks {1, 2}: its windows are the
 * group's from the offset, its signal blocks fresh and zeroed, one host so no
 * span; a slice of a set that is not over every rank, or leaving the window, is
 * refused without a collective. */
static int script_slice(Rank *r)
{
    enum { SLICE_WINDOW = 64 * 1024, SLICE_OFFSET = 4096, SLICE_BYTES = 8192 };
    PtoDrvWindows *group = NULL, *pair = NULL, *slice = NULL;
    r->rc_alloc = API->comm_window_alloc(r->comm, 5, ALL, (size_t)r->nranks, SLICE_WINDOW, &group);
    if (r->rc_alloc != PTO_DRV_OK)
        return r->rc_alloc;
    CHECK_EQ_INT(API->comm_window_slice(r->comm, 6, ALL, 2, NULL, SLICE_OFFSET, SLICE_BYTES, &slice), PTO_DRV_ERR_INVALID);
    CHECK_EQ_INT(API->comm_window_slice(r->comm, 6, ALL, 2, group, SLICE_WINDOW - 4096, SLICE_BYTES, &slice),
                 PTO_DRV_ERR_INVALID);
    CHECK_EQ_INT(API->comm_window_slice(r->comm, 6, ALL, 2, group, SLICE_OFFSET, 0, &slice), PTO_DRV_ERR_INVALID);
    static const uint32_t members[2] = { 1, 2 };
    if (r->rank == 1 || r->rank == 2) {
        CHECK_EQ_INT(API->comm_window_alloc(r->comm, 7, members, 2, SLICE_WINDOW, &pair), PTO_DRV_OK);
        CHECK_EQ_INT(API->comm_window_slice(r->comm, 8, members, 2, pair, SLICE_OFFSET, SLICE_BYTES, &slice),
                     PTO_DRV_ERR_INVALID);
        CHECK_EQ_INT(API->comm_window_slice(r->comm, 9, members, 2, group, SLICE_OFFSET, SLICE_BYTES, &slice), PTO_DRV_OK);
        for (size_t i = 0; i < 2; i++) {
            uint64_t gw = 0, gs = 0, sw = 0, ss = 0;
            CHECK_EQ_INT(API->comm_window_addrs(group, members[i], &gw, &gs), PTO_DRV_OK);
            CHECK_EQ_INT(API->comm_window_addrs(slice, i, &sw, &ss), PTO_DRV_OK);
            CHECK(sw == gw + SLICE_OFFSET);
            CHECK(ss != 0 && ss != gs);
            const uint32_t *block = (const uint32_t *)(uintptr_t)ss;
            /* (but its owner's pid, and the doorbell a peer freeing its slice first rings) */
            for (uint32_t k = 0; k < PTO_COMM_SIGNAL_WORDS; k++)
                if (k != PTO_COMM_SIG_PID && k != PTO_COMM_SIG_DOORBELL)
                    CHECK_EQ_INT(block[k], 0);
        }
        PtoCommSpan span;
        CHECK_EQ_INT(API->comm_window_span(slice, &span), 0);
        CHECK_EQ_INT(API->comm_window_free(r->comm, slice), PTO_DRV_OK);
        CHECK_EQ_INT(API->comm_window_free(r->comm, pair), PTO_DRV_OK);
    }
    r->rc_barrier = API->comm_barrier(r->comm);
    CHECK_EQ_INT(API->comm_window_free(r->comm, group), PTO_DRV_OK);
    return PTO_DRV_OK;
}

TEST(emudrv_comm_window_slice_addresses_the_groups_windows_with_fresh_signals)
{
    three_ranks_run("/tmp/ptorun-emudrv-comm-slice-rootinfo", script_slice);
}

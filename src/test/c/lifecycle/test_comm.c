/* The exported comm calls (common/comm.c) against the fake device and its
 * one-rank comm backend (fake_comm.c): every argument check, the phase rules
 * (windows once, queries after them), and the pins between a group and its
 * device context — a run outstanding refuses comm_destroy and
 * comm_release_domain_windows, a live group refuses finalize_device. */
#include "fixture.h"

#include <stdio.h>

#include "ptorun/pto_comm.h"

extern int fake_comm_windows_registered;

static const uint32_t RANK0[1] = { 0 };

static void *join_one(Fixture *f)
{
    void *comm = comm_init(f->ctx, 0, 1, "/tmp/ptorun-lifecycle-rootinfo", 1000);
    CHECK(comm != NULL);
    return comm;
}

TEST(comm_init_refuses_every_bad_argument_with_its_code_leading_the_message)
{
    Fixture f;
    fix_setup(&f);
    CHECK(comm_init(NULL, 0, 1, "/tmp/x", 0) == NULL);
    CHECK_CONTAINS(simpler_last_error(), "(-3) ");
    CHECK(comm_init(f.ctx, 0, 0, "/tmp/x", 0) == NULL);
    CHECK_CONTAINS(simpler_last_error(), "(-3) comm_init: nranks 0; 1..16 allowed");
    CHECK(comm_init(f.ctx, 0, 17, "/tmp/x", 0) == NULL);
    CHECK_CONTAINS(simpler_last_error(), "nranks 17");
    CHECK(comm_init(f.ctx, 2, 2, "/tmp/x", 0) == NULL);
    CHECK_CONTAINS(simpler_last_error(), "rank 2 is not in [0, 2)");
    CHECK(comm_init(f.ctx, -1, 2, "/tmp/x", 0) == NULL);
    CHECK_CONTAINS(simpler_last_error(), "rank -1");
    CHECK(comm_init(f.ctx, 0, 1, NULL, 0) == NULL);
    CHECK_CONTAINS(simpler_last_error(), "rootinfo_path is NULL");
    CHECK(comm_init(f.ctx, 0, 1, "", 0) == NULL);
    CHECK_CONTAINS(simpler_last_error(), "rootinfo_path is empty");
    /* the backend's refusal keeps its code */
    CHECK(comm_init(f.ctx, 0, 2, "/tmp/x", 10) == NULL);
    CHECK_CONTAINS(simpler_last_error(), "(-11) comm: rank 1 did not arrive");
    fix_teardown(&f);
}

TEST(comm_init_needs_an_initialized_context)
{
    void *ctx = create_device_context();
    CHECK(comm_init(ctx, 0, 1, "/tmp/x", 0) == NULL);
    CHECK_CONTAINS(simpler_last_error(), "(-5) comm_init: the device context is not initialized");
    destroy_device_context(ctx);
}

TEST(windows_are_allocated_once_and_queried_after)
{
    Fixture f;
    fix_setup(&f);
    void *comm = join_one(&f);
    uint64_t base = 0, ctx_dev = 0;
    size_t size = 0;
    CHECK_EQ_INT(comm_get_local_window_base(comm, &base), PTO_ERR_WRONG_PHASE);
    CHECK_CONTAINS(simpler_last_error(), "no windows yet");
    CHECK_EQ_INT(comm_get_window_size(comm, &size), PTO_ERR_WRONG_PHASE);
    CHECK_EQ_INT(comm_derive_context(comm, RANK0, 1, 0, 0, 8, &ctx_dev), PTO_ERR_WRONG_PHASE);
    CHECK_EQ_INT(comm_alloc_windows(comm, 0, &ctx_dev), PTO_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(simpler_last_error(), "win_size 0");
    CHECK_EQ_INT(comm_alloc_windows(comm, 64, NULL), PTO_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(simpler_last_error(), "device_ctx_out is NULL");
    CHECK_EQ_INT(comm_alloc_windows(comm, 4096, &ctx_dev), PTO_OK);
    CHECK_EQ_INT(fake_comm_windows_registered, 1);
    CHECK_EQ_INT(comm_alloc_windows(comm, 4096, &ctx_dev), PTO_ERR_WRONG_PHASE);
    CHECK_CONTAINS(simpler_last_error(), "already allocated");
    CHECK_EQ_INT(comm_get_local_window_base(comm, &base), PTO_OK);
    CHECK_EQ_INT(comm_get_window_size(comm, &size), PTO_OK);
    CHECK(size == 4096);
    CHECK_EQ_INT(comm_get_local_window_base(comm, NULL), PTO_ERR_INVALID_ARGUMENT);
    /* the descriptor says what the queries say */
    PtoCommDeviceContext d;
    memcpy(&d, (const void *)(uintptr_t)ctx_dev, sizeof d);
    CHECK(d.magic == PTO_COMM_CTX_MAGIC && d.rank == 0 && d.nranks == 1 && d.timeout_ms == 1000);
    CHECK(d.window_size == 4096 && d.windows[0] == base && d.signals[0] != 0 && d.windows[1] == 0);
    CHECK_EQ_INT(comm_barrier(comm), PTO_OK);
    CHECK_EQ_INT(comm_destroy(comm), PTO_OK);
    CHECK_EQ_INT(fake_comm_windows_registered, 0);
    fix_teardown(&f);
}

TEST(derived_contexts_and_domain_windows_check_every_argument)
{
    Fixture f;
    fix_setup(&f);
    void *comm = join_one(&f);
    uint64_t ctx_dev = 0, base = 0, local = 0;
    CHECK_EQ_INT(comm_alloc_windows(comm, 1024, &ctx_dev), PTO_OK);
    CHECK_EQ_INT(comm_get_local_window_base(comm, &base), PTO_OK);
    const uint32_t other[1] = { 1 }, twice[2] = { 0, 0 };
    CHECK_EQ_INT(comm_derive_context(comm, RANK0, 1, 0, 1000, 100, &ctx_dev), PTO_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(simpler_last_error(), "leaves the window of 1024 bytes");
    CHECK_EQ_INT(comm_derive_context(comm, RANK0, 1, 0, 0, 0, &ctx_dev), PTO_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(comm_derive_context(comm, other, 1, 0, 0, 8, &ctx_dev), PTO_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(simpler_last_error(), "rank_ids[0] = 1 is not a rank of the group of 1");
    CHECK_EQ_INT(comm_derive_context(comm, twice, 2, 0, 0, 8, &ctx_dev), PTO_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(simpler_last_error(), "rank_count 2; 1..1 allowed");
    CHECK_EQ_INT(comm_derive_context(comm, RANK0, 1, 1, 0, 8, &ctx_dev), PTO_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(simpler_last_error(), "domain_rank 1 is not below rank_count 1");
    CHECK_EQ_INT(comm_derive_context(comm, NULL, 1, 0, 0, 8, &ctx_dev), PTO_ERR_INVALID_ARGUMENT);
    uint64_t derived = 0;
    CHECK_EQ_INT(comm_derive_context(comm, RANK0, 1, 0, 256, 512, &derived), PTO_OK);
    PtoCommDeviceContext d;
    memcpy(&d, (const void *)(uintptr_t)derived, sizeof d);
    CHECK(d.windows[0] == base + 256 && d.window_size == 512);
    CHECK_EQ_INT(comm_derive_context(comm, RANK0, 1, 0, 256, 512, &derived), PTO_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(simpler_last_error(), "derived already");

    CHECK_EQ_INT(comm_alloc_domain_windows(comm, 1ull << 62, RANK0, 1, 0, 64, &ctx_dev, &local),
                 PTO_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(simpler_last_error(), "is not below 2^62");
    CHECK_EQ_INT(comm_alloc_domain_windows(comm, 7, RANK0, 1, 0, 0, &ctx_dev, &local), PTO_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(comm_alloc_domain_windows(comm, 7, RANK0, 1, 0, 64, &ctx_dev, NULL), PTO_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(comm_alloc_domain_windows(comm, 7, RANK0, 1, 0, 64, &ctx_dev, &local), PTO_OK);
    CHECK_EQ_INT(fake_comm_windows_registered, 2);
    CHECK_EQ_INT(comm_alloc_domain_windows(comm, 7, RANK0, 1, 0, 64, &ctx_dev, &local), PTO_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(simpler_last_error(), "allocation_id 7 is in use");
    CHECK_EQ_INT(comm_release_domain_windows(comm, 8, 1, 0), PTO_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(simpler_last_error(), "no domain windows with allocation_id 8");
    CHECK_EQ_INT(comm_release_domain_windows(comm, 7, 2, 0), PTO_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(simpler_last_error(), "has 1 ranks with this one at 0, not 2 and 0");
    CHECK_EQ_INT(comm_release_domain_windows(comm, 7, 1, 0), PTO_OK);
    CHECK_EQ_INT(fake_comm_windows_registered, 1);
    CHECK_EQ_INT(comm_release_domain_windows(comm, 7, 1, 0), PTO_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(comm_destroy(comm), PTO_OK);
    CHECK_EQ_INT(fake_comm_windows_registered, 0);
    fix_teardown(&f);
}

TEST(a_run_outstanding_refuses_destroy_and_release_and_a_live_group_refuses_finalize)
{
    Fixture f;
    fix_setup(&f);
    void *comm = join_one(&f);
    uint64_t ctx_dev = 0, local = 0;
    CHECK_EQ_INT(comm_alloc_windows(comm, 1024, &ctx_dev), PTO_OK);
    CHECK_EQ_INT(comm_alloc_domain_windows(comm, 3, RANK0, 1, 0, 64, &ctx_dev, &local), PTO_OK);
    CHECK_EQ_INT(fix_prepare(&f, 0, 0, 0), PTO_OK);
    CHECK_EQ_INT(comm_destroy(comm), PTO_ERR_BUSY);
    CHECK_CONTAINS(simpler_last_error(), "1 native run(s) outstanding");
    CHECK_EQ_INT(comm_release_domain_windows(comm, 3, 1, 0), PTO_ERR_BUSY);
    CHECK_EQ_INT(simpler_finalize_run(f.ctx, f.storage[0]), PTO_OK);
    CHECK_EQ_INT(finalize_device(f.ctx), PTO_ERR_BUSY);
    CHECK_CONTAINS(simpler_last_error(), "1 comm group(s) alive over this context");
    CHECK_EQ_INT(comm_barrier(comm), PTO_OK); /* the refusals changed nothing */
    CHECK_EQ_INT(comm_destroy(comm), PTO_OK);
    /* a stale handle is refused, NULL tolerated */
    CHECK_EQ_INT(comm_barrier(comm), PTO_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(simpler_last_error(), "is not a live comm handle");
    CHECK_EQ_INT(comm_destroy(comm), PTO_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(comm_destroy(NULL), PTO_OK);
    fix_teardown(&f);
}

/* ---- the handle registry under races ---------------------------------------- */

typedef struct Hammer {
    pthread_t thread;
    void *comm;
    pthread_barrier_t *start;
    int ok, stale, other;
} Hammer;

static void *hammer_body(void *arg)
{
    Hammer *h = arg;
    pthread_barrier_wait(h->start);
    for (int i = 0; i < 2000; i++) {
        size_t size = 0;
        int rc = (i & 1) ? comm_barrier(h->comm) : comm_get_window_size(h->comm, &size);
        if (rc == PTO_OK && ((i & 1) || size == 4096))
            h->ok++;
        else if (rc == PTO_ERR_INVALID_ARGUMENT && (strstr(simpler_last_error(), "not a live comm handle") != NULL ||
                                                    strstr(simpler_last_error(), "was destroyed") != NULL))
            h->stale++;
        else
            h->other++;
    }
    return NULL;
}

/* Calls on a handle race its comm_destroy: each either runs whole on the live
 * handle or is refused as stale; none touches a freed handle (TSan/ASan runs),
 * and once destroy returned every call is refused. */
TEST(calls_racing_comm_destroy_run_whole_or_are_refused_as_stale)
{
    for (int round = 0; round < 20; round++) {
        Fixture f;
        fix_setup(&f);
        void *comm = join_one(&f);
        uint64_t ctx_dev = 0;
        CHECK_EQ_INT(comm_alloc_windows(comm, 4096, &ctx_dev), PTO_OK);
        pthread_barrier_t start;
        pthread_barrier_init(&start, NULL, 4);
        Hammer h[3];
        for (int i = 0; i < 3; i++) {
            h[i] = (Hammer){ .comm = comm, .start = &start };
            pthread_create(&h[i].thread, NULL, hammer_body, &h[i]);
        }
        pthread_barrier_wait(&start);
        CHECK_EQ_INT(comm_destroy(comm), PTO_OK);
        size_t size = 0;
        CHECK_EQ_INT(comm_get_window_size(comm, &size), PTO_ERR_INVALID_ARGUMENT);
        for (int i = 0; i < 3; i++) {
            pthread_join(h[i].thread, NULL);
            CHECK_EQ_INT(h[i].other, 0);
            CHECK_EQ_INT(h[i].ok + h[i].stale, 2000);
        }
        pthread_barrier_destroy(&start);
        CHECK_EQ_INT(fake_comm_windows_registered, 0);
        fix_teardown(&f);
    }
}

/* comm_break_domain: checked arguments; on a live domain it writes BROKEN = 1 + this
 * rank into the signal block (one rank: its own) and leaves the error clear. */
TEST(comm_break_domain_breaks_a_live_domain_of_the_handle_and_checks_its_arguments)
{
    Fixture f;
    fix_setup(&f);
    void *comm = join_one(&f);
    uint64_t ctx_dev = 0;
    CHECK_EQ_INT(comm_alloc_windows(comm, 4096, &ctx_dev), PTO_OK);
    CHECK_EQ_INT(comm_break_domain(NULL, ctx_dev), PTO_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(simpler_last_error(), "comm_break_domain: NULL is not a live comm handle");
    CHECK_EQ_INT(comm_break_domain(comm, ctx_dev + 8), PTO_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(simpler_last_error(), "is no live domain descriptor of this rank");
    CHECK_EQ_INT(comm_break_domain(comm, ctx_dev), PTO_OK);
    CHECK_EQ_INT((int)strlen(simpler_last_error()), 0);
    PtoCommDeviceContext d;
    memcpy(&d, (const void *)(uintptr_t)ctx_dev, sizeof d);
    CHECK_EQ_INT((int)((const uint32_t *)(uintptr_t)d.signals[0])[PTO_COMM_SIG_BROKEN], 1);
    CHECK_EQ_INT(comm_destroy(comm), PTO_OK);
    CHECK_EQ_INT(comm_break_domain(comm, ctx_dev), PTO_ERR_INVALID_ARGUMENT);
    fix_teardown(&f);
}

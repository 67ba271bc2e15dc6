/* A failed run breaks the communication domains its scalars name (common/comm_run.h),
 * through the exported contract of every built library: three ranks of one group,
 * each a device context of the same library; rank 1's allreduce is refused at prepare
 * (a tensor view larger than its tensor) or, onboard, on a poisoned context, and the
 * other ranks' allreduce fails with the kernel's PEER_LOST code naming rank 1. The
 * group timeout is 60 s, so a peer that waited for it would hang the suite instead of
 * passing: only the fail-fast passes; nothing here measures time. A run naming no
 * domain breaks nothing, and comm_break_domain breaks one on request. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ptest.h"
#include "ptorun/pto_emudrv.h"
#include "test_callable.h"
#include "test_sim.h"
#include "test_util.h"

enum { RANKS = 3, BAD = 1, COUNT = 64, ALLREDUCE = 5, GROUP_TIMEOUT_MS = 60000 };

#define BROKE_BY_1 "rank 1 is gone or broke the communication domain"

typedef struct Api {
    TestRunApi base; /* the blocking run path */
    void *(*comm_init)(void *, int, int, const char *, uint32_t);
    int (*comm_alloc_windows)(void *, size_t, uint64_t *);
    int (*comm_get_local_window_base)(void *, uint64_t *);
    int (*comm_break_domain)(void *, uint64_t);
    int (*comm_destroy)(void *);
} Api;

#define SYM(f, name) (*(void **)&a->f = dlsym(a->base.lib.handle, name))
static int load_api(const char *variant, Api *a)
{
    if (test_load_run_api(variant, &a->base) != 0)
        return -1;
    return SYM(comm_init, "comm_init") && SYM(comm_alloc_windows, "comm_alloc_windows") &&
                   SYM(comm_get_local_window_base, "comm_get_local_window_base") &&
                   SYM(comm_break_domain, "comm_break_domain") && SYM(comm_destroy, "comm_destroy")
               ? 0
               : -1;
}
#undef SYM

typedef struct Rank {
    Api *api;
    const char *variant;
    const char *rootinfo;
    int rank;
    void *ctx, *comm, *storage;
    uint64_t device_ctx, window;
    ChipStorageTaskArgs *args;
    CallConfig cfg;
    int rc;
    char message[400];
    pthread_t thread;
} Rank;

/* INOUT x (COUNT floats), SCALAR comm: allreduce_sum(x, comm). */
static uint8_t *allreduce_callable(void)
{
    TestCallableBuilder b;
    tcb_init(&b);
    const uint8_t sig[] = { PTO_ARG_INOUT, PTO_ARG_SCALAR };
    tcb_signature(&b, sig, 2);
    tcb_child(&b, 0, PTO_CORE_AIV, "allreduce_sum");
    PtoProgramParam p[] = { tcb_tensor(0, PTO_ARG_INOUT, 0, COUNT * 4), tcb_scalar_arg(0) };
    tcb_submit(&b, 0, p, 2);
    uint32_t size;
    uint8_t *bytes = tcb_build(&b, &size);
    tcb_free(&b);
    return bytes;
}

/* Joins and allocates the group's windows: collective, one thread per rank. */
static void *join_main(void *arg)
{
    Rank *r = arg;
    r->rc = PTO_ERR_FAILED;
    r->comm = r->api->comm_init(r->ctx, r->rank, RANKS, r->rootinfo, GROUP_TIMEOUT_MS);
    if (r->comm != NULL && r->api->comm_alloc_windows(r->comm, COUNT * 4, &r->device_ctx) == PTO_OK &&
        r->api->comm_get_local_window_base(r->comm, &r->window) == PTO_OK)
        r->rc = PTO_OK;
    else
        snprintf(r->message, sizeof r->message, "%s", r->api->base.lib.last_error());
    return NULL;
}

/* The rank's allreduce over its window, or (x_bytes != COUNT * 4) a view larger than its tensor. */
static void set_args(Rank *r, uint64_t x_bytes, uint64_t comm_scalar)
{
    memset(r->args, 0, sizeof *r->args);
    r->args->tensor_count = 1;
    r->args->scalar_count = 1;
    ChipTensor *t = &r->args->tensors[0];
    t->addr = r->window;
    t->size = x_bytes;
    t->ndims = 1;
    t->dtype = PTO_DTYPE_F32;
    t->is_contiguous = 1;
    t->child_memory = 1;
    t->shapes[0] = COUNT;
    t->strides[0] = 1;
    r->args->scalars[0] = comm_scalar;
}

static void *run_main(void *arg)
{
    Rank *r = arg;
    NativeRunDescriptor d = { .run_id = 7 };
    r->rc = r->api->base.run(r->ctx, r->storage, ALLREDUCE, r->args, &r->cfg, &d);
    snprintf(r->message, sizeof r->message, "%s", r->rc == PTO_OK ? "" : r->api->base.lib.last_error());
    return NULL;
}

/* Runs every rank in `ranks` (a bit mask) at once, each on its thread, and waits. */
static void run_ranks(Rank *rs, unsigned ranks)
{
    for (int i = 0; i < RANKS; i++)
        if (ranks >> i & 1u)
            pthread_create(&rs[i].thread, NULL, run_main, &rs[i]);
    for (int i = 0; i < RANKS; i++)
        if (ranks >> i & 1u)
            pthread_join(rs[i].thread, NULL);
}

static int open_group(const char *variant, Api *api, Rank *rs, const uint8_t *callable, char *rootinfo, size_t n)
{
    static int groups;
    snprintf(rootinfo, n, "/tmp/ptorun-run-break-%d-%d-%s", (int)getpid(), groups++, variant);
    unlink(rootinfo);
    const DeviceImages *img = test_images_of(strncmp(variant, "a5", 2) == 0 ? "a5" : "a2a3");
    size_t bytes = (api->base.size() + 63) / 64 * 64;
    for (int i = 0; i < RANKS; i++) {
        Rank *r = &rs[i];
        memset(r, 0, sizeof *r);
        r->api = api;
        r->variant = variant;
        r->rootinfo = rootinfo;
        r->rank = i;
        r->ctx = api->base.lib.create();
        if (r->ctx == NULL ||
            api->base.init(r->ctx, i, img->aicpu, img->aicpu_size, img->aicore, img->aicore_size, NULL, 0, NULL) != PTO_OK ||
            api->base.register_(r->ctx, ALLREDUCE, callable) != PTO_OK) {
            fprintf(stderr, "%s: %s\n", variant, api->base.lib.last_error());
            return -1;
        }
        r->storage = aligned_alloc(64, bytes);
        memset(r->storage, 0, bytes);
        r->args = test_args();
        r->cfg = test_config(GROUP_TIMEOUT_MS);
    }
    for (int i = 0; i < RANKS; i++)
        pthread_create(&rs[i].thread, NULL, join_main, &rs[i]);
    int rc = 0;
    for (int i = 0; i < RANKS; i++) {
        pthread_join(rs[i].thread, NULL);
        if (rs[i].rc != PTO_OK) {
            fprintf(stderr, "%s rank %d: %s\n", variant, i, rs[i].message);
            rc = -1;
        }
    }
    for (int i = 0; i < RANKS && rc == 0; i++)
        set_args(&rs[i], COUNT * 4, rs[i].device_ctx);
    return rc;
}

static void close_group(Rank *rs, const char *rootinfo)
{
    for (int i = 0; i < RANKS; i++) {
        if (rs[i].comm != NULL)
            CHECK_EQ_INT(rs[i].api->comm_destroy(rs[i].comm), PTO_OK);
        if (rs[i].ctx != NULL)
            rs[i].api->base.lib.destroy(rs[i].ctx);
        free(rs[i].storage);
        free(rs[i].args);
    }
    unlink(rootinfo);
}

/* Ranks 0 and 2 failed their allreduce with the kernel's code naming rank 1. */
static void check_peers_name_rank_1(const char *variant, const Rank *rs)
{
    for (int i = 0; i < RANKS; i++) {
        if (i == BAD)
            continue;
        if (rs[i].rc != PTO_ERR_KERNEL_FAULT || strstr(rs[i].message, BROKE_BY_1) == NULL)
            fprintf(stderr, "  %s rank %d: %d %s\n", variant, i, rs[i].rc, rs[i].message);
        CHECK_EQ_INT(rs[i].rc, PTO_ERR_KERNEL_FAULT);
        CHECK_CONTAINS(rs[i].message, BROKE_BY_1);
    }
}

static void bad_view_breaks(const char *variant, const uint8_t *callable)
{
    Api api;
    REQUIRE(load_api(variant, &api) == 0);
    Rank rs[RANKS];
    char rootinfo[256];
    REQUIRE(open_group(variant, &api, rs, callable, rootinfo, sizeof rootinfo) == 0);
    run_ranks(rs, 7u); /* golden: the group works */
    for (int i = 0; i < RANKS; i++)
        CHECK_EQ_INT(rs[i].rc, PTO_OK);

    /* a refused run naming no domain breaks nothing */
    set_args(&rs[BAD], COUNT * 2, 0);
    run_ranks(rs, 1u << BAD);
    CHECK_EQ_INT(rs[BAD].rc, PTO_ERR_BAD_CALLABLE);
    set_args(&rs[BAD], COUNT * 4, rs[BAD].device_ctx);
    run_ranks(rs, 7u);
    for (int i = 0; i < RANKS; i++)
        CHECK_EQ_INT(rs[i].rc, PTO_OK);

    /* rank 1's view is larger than its tensor: refused at prepare, before its kernel */
    set_args(&rs[BAD], COUNT * 2, rs[BAD].device_ctx);
    run_ranks(rs, 1u << BAD);
    CHECK_EQ_INT(rs[BAD].rc, PTO_ERR_BAD_CALLABLE);
    CHECK_CONTAINS(rs[BAD].message, "reach");
    run_ranks(rs, 7u & ~(1u << BAD));
    check_peers_name_rank_1(variant, rs);
    close_group(rs, rootinfo);
    test_unload_lib(&api.base.lib);
}

TEST(a_run_refused_at_prepare_breaks_its_domain_so_its_peers_fail_naming_it)
{
    uint8_t *callable = allreduce_callable();
    for (int v = 0; v < 8; v++)
        bad_view_breaks(TEST_ALL_VARIANTS[v], callable);
    free(callable);
}

/* Onboard: a launch refused by the driver poisons rank 1's context (that run names no
   domain: nothing breaks); its collective is then refused at prepare as poisoned. */
static void poisoned_breaks(const char *variant, const uint8_t *callable, int (*inject)(int, int))
{
    Api api;
    REQUIRE(load_api(variant, &api) == 0);
    Rank rs[RANKS];
    char rootinfo[256];
    REQUIRE(open_group(variant, &api, rs, callable, rootinfo, sizeof rootinfo) == 0);
    set_args(&rs[BAD], COUNT * 4, 0);
    CHECK_EQ_INT(inject(PTO_EMU_FAULT_LAUNCH, 0), 0);
    run_ranks(rs, 1u << BAD);
    CHECK_EQ_INT(rs[BAD].rc, PTO_ERR_DEVICE);
    set_args(&rs[BAD], COUNT * 4, rs[BAD].device_ctx);
    run_ranks(rs, 1u << BAD);
    CHECK_EQ_INT(rs[BAD].rc, PTO_ERR_POISONED);
    run_ranks(rs, 7u & ~(1u << BAD));
    check_peers_name_rank_1(variant, rs);
    close_group(rs, rootinfo);
    test_unload_lib(&api.base.lib);
}

TEST(a_run_refused_on_a_poisoned_context_breaks_its_domain)
{
    const char *dir = getenv("PTORUN_LIB_DIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/libptorun_emudrv.so", dir ? dir : ".");
    void *drv = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    REQUIRE(drv != NULL);
    int (*inject)(int, int);
    *(void **)&inject = dlsym(drv, "ptorun_emudrv_inject");
    REQUIRE(inject != NULL);
    uint8_t *callable = allreduce_callable();
    for (int v = 4; v < 8; v++) {
        poisoned_breaks(TEST_ALL_VARIANTS[v], callable, inject);
        inject(PTO_EMU_FAULT_NONE, 0);
    }
    free(callable);
    dlclose(drv);
}

/* comm_break_domain: what a caller refusing a run itself calls; checked arguments. */
static void break_on_request(const char *variant, const uint8_t *callable)
{
    Api api;
    REQUIRE(load_api(variant, &api) == 0);
    Rank rs[RANKS];
    char rootinfo[256];
    REQUIRE(open_group(variant, &api, rs, callable, rootinfo, sizeof rootinfo) == 0);
    CHECK_EQ_INT(api.comm_break_domain(NULL, rs[BAD].device_ctx), PTO_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(api.comm_break_domain(rs[BAD].comm, rs[BAD].device_ctx + 8), PTO_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(api.base.lib.last_error(), "no live domain descriptor");
    CHECK_EQ_INT(api.comm_break_domain(rs[BAD].comm, rs[BAD].device_ctx), PTO_OK);
    run_ranks(rs, 7u & ~(1u << BAD));
    check_peers_name_rank_1(variant, rs);
    close_group(rs, rootinfo);
    test_unload_lib(&api.base.lib);
}

TEST(comm_break_domain_breaks_a_domain_naming_this_rank)
{
    uint8_t *callable = allreduce_callable();
    break_on_request(TEST_ALL_VARIANTS[0], callable);
    break_on_request(TEST_ALL_VARIANTS[7], callable);
    free(callable);
}

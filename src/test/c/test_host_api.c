/* HostApi binding (services/host_api.c): every call reaches its own runner with
 * its own slot and bank, whatever thread makes it; the library's table is
 * complete and fails closed on a NULL runner. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "services/host_api.h"
#include "util/last_error.h"
#include "platform/runner.h"
#include "ptest.h"
#include "ptorun/pto_runtime_c_api.h"

/* ---- a recording fake ops table ------------------------------------------ */

typedef struct FakeRunner {
    uint32_t slot;                 /* what its HostApi is bound to */
    uint32_t bank;
    atomic_int runner_calls;       /* every entry counts here */
    atomic_int slot_calls;
    atomic_int bank_calls;
    atomic_int wrong_slot;
    atomic_int wrong_bank;
} FakeRunner;

static FakeRunner *rec(void *runner)
{
    FakeRunner *r = runner;
    atomic_fetch_add(&r->runner_calls, 1);
    return r;
}

static void rec_slot(void *runner, uint32_t slot)
{
    FakeRunner *r = rec(runner);
    atomic_fetch_add(&r->slot_calls, 1);
    if (slot != r->slot)
        atomic_fetch_add(&r->wrong_slot, 1);
}

static void rec_bank(void *runner, uint32_t bank)
{
    FakeRunner *r = rec(runner);
    atomic_fetch_add(&r->bank_calls, 1);
    if (bank != r->bank)
        atomic_fetch_add(&r->wrong_bank, 1);
}

static void *r_malloc(void *r, size_t n) { (void)n; rec(r); return r; }
static int r_free(void *r, void *d) { (void)d; rec(r); return 0; }
static int r_h2d(void *r, void *d, const void *h, size_t n) { (void)d, (void)h, (void)n; rec(r); return 0; }
static int r_d2h(void *r, void *h, const void *d, size_t n) { (void)d, (void)h, (void)n; rec(r); return 0; }
static void *r_reg(void *r, void *d, size_t n) { (void)n; rec(r); return d; }
static int r_unreg(void *r, void *d) { (void)d; rec(r); return 0; }
static int r_memset(void *r, void *d, int v, size_t n) { (void)d, (void)v, (void)n; rec(r); return 0; }
static int r_get_tmp(void *r, uint32_t s, void **d, size_t *n) { rec_slot(r, s); *d = NULL; *n = 0; return 0; }
static int r_set_tmp(void *r, uint32_t s, void *d, size_t n) { (void)d, (void)n; rec_slot(r, s); return 0; }
static int r_arena(void *r, uint32_t b, size_t a, size_t c, size_t d) { (void)a, (void)c, (void)d; rec_bank(r, b); return 0; }
static void *r_heap(void *r, uint32_t b, size_t *n) { rec_bank(r, b); *n = 0; return NULL; }
static void *r_sm(void *r, uint32_t b, size_t *n) { rec_bank(r, b); *n = 0; return NULL; }
static void *r_rt(void *r, uint32_t b, size_t *n) { rec_bank(r, b); *n = 0; return NULL; }
static int r_lookup(void *r, uint32_t b, uint64_t h, const void *k, size_t ks, void **img)
{
    (void)h, (void)k, (void)ks;
    rec_bank(r, b);
    *img = NULL;
    return 0;
}
static int r_mark(void *r, uint32_t b, uint64_t h, const void *k, size_t ks, void *img)
{
    (void)h, (void)k, (void)ks, (void)img;
    rec_bank(r, b);
    return 0;
}
static int r_upload(void *r, const void *c, size_t n, uint64_t h, void **d) { (void)c, (void)n, (void)h; rec(r); *d = NULL; return 0; }
static int r_release(void *r, void *d) { (void)d; rec(r); return 0; }
static int r_load_lib(void *r, const void *i, size_t n, void **h) { (void)i, (void)n; rec(r); *h = NULL; return 0; }
static int r_release_lib(void *r, void *h) { (void)h; rec(r); return 0; }

static const HostApiOps recording_ops = {
    r_malloc, r_free, r_h2d, r_d2h, r_reg, r_unreg, r_memset, r_get_tmp, r_set_tmp, r_arena,
    r_heap, r_sm, r_rt, r_lookup, r_mark, r_upload, r_release, r_load_lib, r_release_lib,
};

enum { ENTRIES = 19, SLOT_ENTRIES = 2, BANK_ENTRIES = 6, ITERATIONS = 300 };

/* Every entry once, through the HostApi forwarders. */
static void call_every_entry(const HostApi *api)
{
    char buf[8];
    void *dev;
    size_t size;
    host_api_device_malloc(api, 8);
    host_api_device_free(api, buf);
    host_api_copy_to_device(api, buf, buf, 1);
    host_api_copy_from_device(api, buf, buf, 1);
    host_api_register_device_memory_to_host(api, buf, 8);
    host_api_unregister_device_memory_from_host(api, buf);
    host_api_device_memset(api, buf, 0, 8);
    host_api_get_retained_temp_buffer(api, &dev, &size);
    host_api_set_retained_temp_buffer(api, buf, 8);
    host_api_setup_static_arena(api, 64, 64, 0);
    host_api_acquire_pooled_gm_heap(api, &size);
    host_api_acquire_pooled_gm_sm(api, &size);
    host_api_acquire_pooled_runtime_arena(api, &size);
    host_api_lookup_prebuilt_runtime_arena_cache(api, 1, buf, 8, &dev);
    host_api_mark_prebuilt_runtime_arena_cached(api, 1, buf, 8, buf);
    host_api_upload_chip_callable_buffer(api, buf, 8, 1, &dev);
    host_api_release_chip_callable_buffer(api, buf);
    host_api_load_host_library(api, buf, 8, &dev);
    host_api_release_host_library(api, buf);
}

typedef struct Crossing {
    pthread_barrier_t *start;
    const HostApi *first;
    const HostApi *second;
} Crossing;

static void *cross_calls(void *arg)
{
    Crossing *c = arg;
    pthread_barrier_wait(c->start);
    for (int i = 0; i < ITERATIONS; i++) {
        call_every_entry(c->first);
        call_every_entry(c->second);
    }
    return NULL;
}

TEST(host_api_binding_survives_concurrent_crossed_calls)
{
    /* slots and banks beyond the real maximum on purpose: the binding is pure data */
    FakeRunner ra = { .slot = 1, .bank = 3 }, rb = { .slot = 7, .bank = 5 };
    HostApi a = host_api_bind(&ra, 1, 3, &recording_ops);
    HostApi b = host_api_bind(&rb, 7, 5, &recording_ops);
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, 2);
    Crossing c1 = { &start, &a, &b }, c2 = { &start, &b, &a };
    pthread_t t1, t2;
    pthread_create(&t1, NULL, cross_calls, &c1);
    pthread_create(&t2, NULL, cross_calls, &c2);
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    pthread_barrier_destroy(&start);

    FakeRunner *runners[] = { &ra, &rb };
    for (int i = 0; i < 2; i++) {
        FakeRunner *r = runners[i];
        CHECK_EQ_INT(atomic_load(&r->runner_calls), 2 * ITERATIONS * ENTRIES);
        CHECK_EQ_INT(atomic_load(&r->slot_calls), 2 * ITERATIONS * SLOT_ENTRIES);
        CHECK_EQ_INT(atomic_load(&r->bank_calls), 2 * ITERATIONS * BANK_ENTRIES);
        CHECK_EQ_INT(atomic_load(&r->wrong_slot), 0);
        CHECK_EQ_INT(atomic_load(&r->wrong_bank), 0);
    }
}

TEST(host_api_ops_is_complete)
{
    enum { N = sizeof(HostApiOps) / sizeof(void (*)(void)) };
    _Static_assert(sizeof(HostApiOps) % sizeof(void (*)(void)) == 0, "HostApiOps holds function pointers only");
    CHECK_EQ_INT(N, ENTRIES);
    for (size_t i = 0; i < N; i++) {
        void (*entry)(void);
        memcpy(&entry, (const char *)&host_api_ops + i * sizeof entry, sizeof entry);
        CHECK(entry != NULL);
    }
}

TEST(host_api_ops_fail_closed_on_a_null_runner)
{
    const HostApiOps *o = &host_api_ops;
    char buf[8];
    void *dev = buf;
    size_t size = 99;

    CHECK(o->device_malloc(NULL, 8) == NULL);
    CHECK_CONTAINS(pto_last_error(), "device_malloc");
    CHECK(o->device_free(NULL, buf) < 0);
    CHECK(o->copy_to_device(NULL, buf, buf, 1) < 0);
    CHECK(o->copy_from_device(NULL, buf, buf, 1) < 0);
    CHECK(o->register_device_memory_to_host(NULL, buf, 8) == NULL);
    CHECK(o->unregister_device_memory_from_host(NULL, buf) < 0);
    CHECK(o->device_memset(NULL, buf, 0, 8) < 0);
    CHECK(o->get_retained_temp_buffer(NULL, 0, &dev, &size) < 0);
    CHECK(dev == NULL && size == 0); /* out-parameters read "nothing" */
    CHECK(o->set_retained_temp_buffer(NULL, 0, buf, 8) < 0);
    CHECK(o->setup_static_arena(NULL, 0, 64, 64, 0) < 0);
    size = 99;
    CHECK(o->acquire_pooled_gm_heap(NULL, 0, &size) == NULL);
    CHECK_EQ_INT(size, 0);
    CHECK(o->acquire_pooled_gm_sm(NULL, 0, &size) == NULL);
    CHECK(o->acquire_pooled_runtime_arena(NULL, 0, NULL) == NULL); /* the size is optional */
    dev = buf;
    CHECK(o->lookup_prebuilt_runtime_arena_cache(NULL, 0, 1, buf, 8, &dev) < 0);
    CHECK(dev == NULL);
    CHECK(o->mark_prebuilt_runtime_arena_cached(NULL, 0, 1, buf, 8, buf) < 0);
    dev = buf;
    CHECK(o->upload_chip_callable_buffer(NULL, buf, 8, 1, &dev) < 0);
    CHECK(dev == NULL);
    CHECK(o->release_chip_callable_buffer(NULL, buf) < 0);
    CHECK_CONTAINS(pto_last_error(), "release_chip_callable_buffer");
    dev = buf;
    CHECK(o->load_host_library(NULL, buf, 8, &dev) < 0);
    CHECK(dev == NULL);
    CHECK(o->release_host_library(NULL, buf) < 0);
    CHECK_CONTAINS(pto_last_error(), "release_host_library");
}

TEST(host_api_ops_refuse_null_pointers_and_free_null_is_a_no_op)
{
    Runner *runner = runner_create();
    CHECK(runner != NULL);
    const HostApiOps *o = &host_api_ops;
    char buf[8];
    void *dev;
    CHECK_EQ_INT(o->device_free(runner, NULL), PTO_OK);
    CHECK(o->copy_to_device(runner, NULL, buf, 1) < 0);
    CHECK(o->copy_from_device(runner, NULL, buf, 1) < 0);
    CHECK(o->copy_to_device(runner, buf, NULL, 1) < 0);
    CHECK(o->get_retained_temp_buffer(runner, 0, NULL, NULL) < 0);
    CHECK(o->lookup_prebuilt_runtime_arena_cache(runner, 0, 1, NULL, 8, &dev) < 0);
    CHECK(o->mark_prebuilt_runtime_arena_cached(runner, 0, 1, buf, 8, NULL) < 0);
    CHECK(o->upload_chip_callable_buffer(runner, NULL, 8, 1, &dev) < 0);
    CHECK(o->load_host_library(runner, NULL, 8, &dev) < 0);
    CHECK(o->load_host_library(runner, buf, 8, NULL) < 0);
    CHECK(o->release_host_library(runner, NULL) < 0);
    runner_destroy(runner);
}

TEST(host_api_forwarders_refuse_an_unbound_api)
{
    void *dev = (void *)1;
    size_t size = 9;
    CHECK(host_api_device_malloc(NULL, 8) == NULL);
    CHECK(host_api_copy_to_device(NULL, &dev, &dev, 1) < 0);
    CHECK_CONTAINS(pto_last_error(), "no HostApi bound");
    HostApi unbound = host_api_bind((void *)1, 0, 0, NULL);
    CHECK(host_api_get_retained_temp_buffer(&unbound, &dev, &size) < 0);
    CHECK(dev == NULL && size == 0);
    CHECK(host_api_acquire_pooled_gm_heap(&unbound, &size) == NULL);
    CHECK(host_api_setup_static_arena(&unbound, 1, 1, 1) < 0);
}

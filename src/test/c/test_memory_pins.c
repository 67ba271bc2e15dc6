/*
 * Frees wait for the copies in flight (util/alloc_table.h's pins):
 *   - the table itself: a pin holds its range, a removal (or drain) refuses new
 *     pins at once and returns only after the pins are gone, a pin stays valid
 *     while other ranges come and go;
 *   - every built library through its exported contract (onboard ones over the
 *     emulated driver): threads copy to and from a buffer while the main thread
 *     frees it, and into a communication window while the rank destroys its
 *     group. Every copy returns PTO_OK with the right bytes or the precise
 *     refusal; none touches memory that is gone (ASan / valgrind see it when one
 *     does, a plain run may crash).
 * Threads meet on condition variables; nothing sleeps.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ptest.h"
#include "ptorun/pto_runtime_c_api.h"
#include "test_sim.h"
#include "test_util.h"
#include "util/alloc_table.h"

/* ---- the table ------------------------------------------------------------------ */

static void add_range(AllocTable *t, uintptr_t base, size_t size)
{
    CHECK_EQ_INT(alloc_table_reserve(t, size), PTO_OK);
    CHECK_EQ_INT(alloc_table_insert(t, base, size), PTO_OK);
}

TEST(alloc_table_pins_the_range_holding_an_address_and_only_a_live_one)
{
    AllocTable t;
    REQUIRE(alloc_table_init(&t, 0) == PTO_OK);
    add_range(&t, 5000, 100);
    AllocPin pin, second, other;
    CHECK_EQ_INT(alloc_table_pin(&t, 5000, 100, &pin), PTO_OK);
    CHECK(pin.table == &t && pin.base == 5000);
    CHECK_EQ_INT(alloc_table_pin(&t, 5050, 0, &second), PTO_OK); /* a second pin, by an interior address */
    CHECK(second.base == 5000);
    CHECK_EQ_INT(alloc_table_pin(&t, 5050, 51, &other), PTO_ERR_INVALID_ARGUMENT); /* past the end */
    CHECK_EQ_INT(alloc_table_pin(&t, 4999, 1, &other), PTO_ERR_INVALID_ARGUMENT);
    /* other ranges inserted below and removed around it shift its index: the pin still finds it */
    for (uintptr_t b = 100; b < 4000; b += 200)
        add_range(&t, b, 100);
    size_t size;
    CHECK_EQ_INT(alloc_table_remove(&t, 300, &size), PTO_OK);
    alloc_table_unpin(&pin);
    alloc_table_unpin(&second);
    CHECK_EQ_INT(alloc_table_remove(&t, 5000, &size), PTO_OK); /* no pin left: no wait */
    CHECK_EQ_INT(size, 100);
    CHECK_EQ_INT(alloc_table_pin(&t, 5000, 1, &other), PTO_ERR_INVALID_ARGUMENT);
    alloc_table_destroy(&t);
}

/* A thread removing (or draining) a range; it says when it starts and when the
 * call returned, and whether the main thread had given its pin back by then. */
typedef struct Remover {
    AllocTable *t;
    int drain;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int started, returned, rc;
    int unpinned; /* the main thread's pin is gone (written under lock) */
    int unpinned_at_return;
    size_t released;
} Remover;

static void count_release(uintptr_t base, size_t size, void *arg)
{
    (void)base;
    *(size_t *)arg += size;
}

static void *remover_main(void *arg)
{
    Remover *r = arg;
    pthread_mutex_lock(&r->lock);
    r->started = 1;
    pthread_cond_broadcast(&r->cond);
    pthread_mutex_unlock(&r->lock);
    size_t size = 0;
    int rc = PTO_OK;
    if (r->drain)
        alloc_table_drain(r->t, count_release, &r->released);
    else
        rc = alloc_table_remove(r->t, 5000, &size);
    pthread_mutex_lock(&r->lock);
    r->rc = rc;
    r->returned = 1;
    r->unpinned_at_return = r->unpinned;
    pthread_mutex_unlock(&r->lock);
    return NULL;
}

/* The removal began: the range refuses pins. Yields until then (the remover
 * needs one lock round trip); no sleep, no timing assumption. */
static void await_refusal(AllocTable *t)
{
    while (alloc_table_contains(t, 5000, 1))
        sched_yield();
}

static void check_free_waits_for_pin(int drain)
{
    AllocTable t;
    REQUIRE(alloc_table_init(&t, 0) == PTO_OK);
    add_range(&t, 5000, 100);
    add_range(&t, 9000, 100);
    AllocPin pin;
    REQUIRE(alloc_table_pin(&t, 5010, 10, &pin) == PTO_OK);

    Remover r = { .t = &t, .drain = drain };
    pthread_mutex_init(&r.lock, NULL);
    pthread_cond_init(&r.cond, NULL);
    pthread_t thread;
    REQUIRE(pthread_create(&thread, NULL, remover_main, &r) == 0);
    pthread_mutex_lock(&r.lock);
    while (!r.started)
        pthread_cond_wait(&r.cond, &r.lock);
    pthread_mutex_unlock(&r.lock);
    await_refusal(&t);

    /* the removal began and waits: the range is still there, a new pin is refused */
    AllocPin refused;
    CHECK_EQ_INT(alloc_table_pin(&t, 5000, 1, &refused), PTO_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(alloc_table_count(&t), 2);
    size_t size;
    if (!drain)
        CHECK_EQ_INT(alloc_table_remove(&t, 5000, &size), PTO_ERR_INVALID_ARGUMENT); /* freeing twice */
    pthread_mutex_lock(&r.lock);
    CHECK_EQ_INT(r.returned, 0);
    r.unpinned = 1;
    pthread_mutex_unlock(&r.lock);
    alloc_table_unpin(&pin);
    pthread_join(thread, NULL);

    CHECK_EQ_INT(r.returned, 1);
    CHECK_EQ_INT(r.unpinned_at_return, 1); /* it returned only after the pin was gone */
    CHECK_EQ_INT(r.rc, PTO_OK);
    CHECK_EQ_INT(alloc_table_count(&t), drain ? 0 : 1);
    CHECK_EQ_INT(alloc_table_committed(&t), drain ? 0 : 100);
    if (drain)
        CHECK_EQ_INT(r.released, 200);
    pthread_cond_destroy(&r.cond);
    pthread_mutex_destroy(&r.lock);
    alloc_table_destroy(&t);
}

TEST(alloc_table_remove_refuses_new_pins_and_waits_for_held_ones)
{
    check_free_waits_for_pin(0);
}

TEST(alloc_table_drain_waits_for_held_pins)
{
    check_free_waits_for_pin(1);
}

/* ---- the exported contract of every library --------------------------------------- */

/* A copier copies BURST round trips at most, racing the free; then one more,
 * after the free returned, which must be refused. */
enum { COPIERS = 2, SLICE_MAX = 16384, BURST = 24 };

typedef struct Api {
    LoadedLib lib;
    int (*init)(void *, int, const uint8_t *, size_t, const uint8_t *, size_t, const uint8_t *, size_t,
                const CallConfig *);
    void *(*comm_init)(void *, int, int, const char *, uint32_t);
    int (*comm_alloc_windows)(void *, size_t, uint64_t *);
    int (*comm_window_base)(void *, uint64_t *);
    int (*comm_destroy)(void *);
    void *ctx;
} Api;

static int open_api(const char *variant, Api *a)
{
    memset(a, 0, sizeof *a);
    if (test_load_lib(variant, &a->lib) != 0)
        return -1;
    *(void **)&a->init = dlsym(a->lib.handle, "simpler_init");
    *(void **)&a->comm_init = dlsym(a->lib.handle, "comm_init");
    *(void **)&a->comm_alloc_windows = dlsym(a->lib.handle, "comm_alloc_windows");
    *(void **)&a->comm_window_base = dlsym(a->lib.handle, "comm_get_local_window_base");
    *(void **)&a->comm_destroy = dlsym(a->lib.handle, "comm_destroy");
    if (!a->init || !a->comm_init || !a->comm_alloc_windows || !a->comm_window_base || !a->comm_destroy)
        return -1;
    const DeviceImages *img = test_images_of(strncmp(variant, "a5", 2) == 0 ? "a5" : "a2a3");
    a->ctx = a->lib.create();
    if (a->ctx == NULL ||
        a->init(a->ctx, 0, img->aicpu, img->aicpu_size, img->aicore, img->aicore_size, NULL, 0, NULL) != PTO_OK) {
        fprintf(stderr, "%s: %s\n", variant, a->lib.last_error());
        return -1;
    }
    return 0;
}

static void close_api(Api *a)
{
    if (a->ctx != NULL)
        a->lib.destroy(a->ctx);
    test_unload_lib(&a->lib);
}

/* The round protocol: the main thread publishes a target (a buffer or a window)
 * and waits until every copier began on it, then frees it, says so, and waits
 * until every copier saw its copies refused. Counters are written under the
 * lock. */
typedef struct Race {
    Api *api;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    uint8_t *target;
    size_t slice;
    unsigned round;
    int freed; /* this round's free returned */
    int stop;
    unsigned started, done;
    unsigned long copies_ok, refusals, wrong;
    char wrong_message[256];
} Race;

typedef struct Copier {
    Race *race;
    unsigned index;
    pthread_t thread;
    uint8_t in[SLICE_MAX], out[SLICE_MAX];
} Copier;

/* PTO_OK, or the refusal of a copy after the free began; anything else is wrong. */
static int refused(Race *race, int rc, unsigned long *wrong, char *why, size_t why_size)
{
    if (rc == PTO_OK)
        return 0;
    const char *msg = race->api->lib.last_error();
    if (rc != PTO_ERR_INVALID_ARGUMENT || strstr(msg, "is not inside one live allocation") == NULL) {
        (*wrong)++;
        snprintf(why, why_size, "rc %d: %s", rc, msg);
    }
    return 1;
}

/* One round trip through its slice of `dev`: 1 when a copy was refused. */
static int round_trip(Copier *c, uint8_t *dev, size_t n, unsigned k, unsigned long *ok, unsigned long *wrong, char *why,
                      size_t why_size)
{
    Race *race = c->race;
    LoadedLib *lib = &race->api->lib;
    memset(c->in, (int)(c->index * 16 + k % 16 + 1), n);
    if (refused(race, lib->copy_to(race->api->ctx, dev, c->in, n), wrong, why, why_size))
        return 1;
    memset(c->out, 0, n);
    if (refused(race, lib->copy_from(race->api->ctx, c->out, dev, n), wrong, why, why_size))
        return 1;
    if (memcmp(c->in, c->out, n) != 0) {
        (*wrong)++;
        snprintf(why, why_size, "round trip %u read back other bytes", k);
    }
    (*ok)++;
    return 0;
}

/* Round trips racing the free until one is refused; after BURST, waits for the
 * free to return: the next one must be refused. */
static void copy_until_refused(Copier *c, uint8_t *dev, size_t n, unsigned long *ok, unsigned long *wrong, char *why,
                               size_t why_size)
{
    Race *race = c->race;
    for (unsigned k = 0; k < BURST; k++)
        if (round_trip(c, dev, n, k, ok, wrong, why, why_size))
            return;
    pthread_mutex_lock(&race->lock);
    while (!race->freed)
        pthread_cond_wait(&race->cond, &race->lock);
    pthread_mutex_unlock(&race->lock);
    if (!round_trip(c, dev, n, BURST, ok, wrong, why, why_size)) {
        (*wrong)++;
        snprintf(why, why_size, "a copy after the free returned was not refused");
    }
}

static void *copier_main(void *arg)
{
    Copier *c = arg;
    Race *race = c->race;
    unsigned seen = 0;
    pthread_mutex_lock(&race->lock);
    for (;;) {
        while (!race->stop && race->round == seen)
            pthread_cond_wait(&race->cond, &race->lock);
        if (race->stop)
            break;
        seen = race->round;
        uint8_t *dev = race->target + c->index * race->slice;
        size_t n = race->slice;
        race->started++;
        pthread_cond_broadcast(&race->cond);
        pthread_mutex_unlock(&race->lock);

        unsigned long ok = 0, wrong = 0;
        char why[256] = "";
        copy_until_refused(c, dev, n, &ok, &wrong, why, sizeof why);

        pthread_mutex_lock(&race->lock);
        race->copies_ok += ok;
        race->refusals++;
        race->wrong += wrong;
        if (wrong > 0)
            snprintf(race->wrong_message, sizeof race->wrong_message, "%s", why);
        race->done++;
        pthread_cond_broadcast(&race->cond);
    }
    pthread_mutex_unlock(&race->lock);
    return NULL;
}

static void race_start(Race *race, Api *api, Copier *copiers)
{
    memset(race, 0, sizeof *race);
    race->api = api;
    pthread_mutex_init(&race->lock, NULL);
    pthread_cond_init(&race->cond, NULL);
    for (unsigned i = 0; i < COPIERS; i++) {
        copiers[i].race = race;
        copiers[i].index = i;
        CHECK(pthread_create(&copiers[i].thread, NULL, copier_main, &copiers[i]) == 0);
    }
}

/* Publishes the target and returns once every copier began on it. */
static void race_publish(Race *race, uint8_t *target, size_t slice)
{
    pthread_mutex_lock(&race->lock);
    race->target = target;
    race->slice = slice;
    race->started = race->done = 0;
    race->freed = 0;
    race->round++;
    pthread_cond_broadcast(&race->cond);
    while (race->started < COPIERS)
        pthread_cond_wait(&race->cond, &race->lock);
    pthread_mutex_unlock(&race->lock);
}

/* The free returned: says so, and returns once every copier was refused. */
static void race_await_round(Race *race)
{
    pthread_mutex_lock(&race->lock);
    race->freed = 1;
    pthread_cond_broadcast(&race->cond);
    while (race->done < COPIERS)
        pthread_cond_wait(&race->cond, &race->lock);
    pthread_mutex_unlock(&race->lock);
}

static void race_stop(Race *race, Copier *copiers, const char *variant, unsigned rounds)
{
    pthread_mutex_lock(&race->lock);
    race->stop = 1;
    pthread_cond_broadcast(&race->cond);
    pthread_mutex_unlock(&race->lock);
    for (unsigned i = 0; i < COPIERS; i++)
        pthread_join(copiers[i].thread, NULL);
    if (race->wrong > 0)
        fprintf(stderr, "%s: %lu wrong outcomes, last: %s\n", variant, race->wrong, race->wrong_message);
    CHECK_EQ_INT(race->wrong, 0);
    CHECK_EQ_INT(race->refusals, (unsigned long)rounds * COPIERS); /* every copier ended each round refused */
    CHECK(race->copies_ok > 0);                                    /* and copied while the target lived */
    pthread_cond_destroy(&race->cond);
    pthread_mutex_destroy(&race->lock);
}

static size_t random_slice(unsigned *seed)
{
    return 64 + (size_t)(rand_r(seed) % (SLICE_MAX - 64));
}

static void race_buffer_frees(const char *variant, unsigned rounds)
{
    Api api;
    REQUIRE(open_api(variant, &api) == 0);
    Race race;
    static Copier copiers[COPIERS];
    race_start(&race, &api, copiers);
    unsigned seed = 17;
    unsigned done = 0;
    for (; done < rounds; done++) {
        size_t slice = random_slice(&seed);
        uint8_t *buf = api.lib.malloc_(api.ctx, slice * COPIERS);
        if (buf == NULL) {
            CHECK(buf != NULL);
            fprintf(stderr, "%s: %s\n", variant, api.lib.last_error());
            break;
        }
        race_publish(&race, buf, slice);
        api.lib.free_(api.ctx, buf);
        CHECK(strcmp(api.lib.last_error(), "") == 0);
        race_await_round(&race);
        CHECK_EQ_INT(api.lib.committed(api.ctx), 0);
    }
    race_stop(&race, copiers, variant, done);
    close_api(&api);
}

TEST(copies_racing_device_free_copy_whole_or_are_refused_on_every_library)
{
    for (int v = 0; v < 8; v++)
        race_buffer_frees(TEST_ALL_VARIANTS[v], 400);
}

static void race_window_frees(const char *variant, unsigned rounds)
{
    Api api;
    REQUIRE(open_api(variant, &api) == 0);
    char path[128];
    snprintf(path, sizeof path, "/tmp/ptorun-pins-rootinfo-%d", (int)getpid());
    Race race;
    static Copier copiers[COPIERS];
    race_start(&race, &api, copiers);
    unsigned seed = 29;
    unsigned done = 0;
    for (; done < rounds; done++) {
        size_t slice = random_slice(&seed);
        unlink(path);
        void *comm = api.comm_init(api.ctx, 0, 1, path, 10000);
        uint64_t desc = 0, base = 0;
        if (comm == NULL || api.comm_alloc_windows(comm, slice * COPIERS, &desc) != PTO_OK ||
            api.comm_window_base(comm, &base) != PTO_OK) {
            fprintf(stderr, "%s: %s\n", variant, api.lib.last_error());
            CHECK(!"a one-rank group with a window");
            if (comm != NULL)
                api.comm_destroy(comm);
            break;
        }
        race_publish(&race, (uint8_t *)(uintptr_t)base, slice);
        CHECK_EQ_INT(api.comm_destroy(comm), PTO_OK);
        race_await_round(&race);
        CHECK_EQ_INT(api.lib.committed(api.ctx), 0); /* the descriptor went with the group */
    }
    unlink(path);
    race_stop(&race, copiers, variant, done);
    close_api(&api);
}

TEST(copies_racing_comm_destroy_copy_whole_or_are_refused_on_every_library)
{
    for (int v = 0; v < 8; v++)
        race_window_frees(TEST_ALL_VARIANTS[v], 60);
}

/* Helpers of lifecycle_tests: an initialized device context with a registered
 * callable, zeroed run storages, descriptors, and running a call on another
 * thread. Everything goes through the exported functions. */
#ifndef PTORUN_TEST_LIFECYCLE_FIXTURE_H
#define PTORUN_TEST_LIFECYCLE_FIXTURE_H

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "fake_device.h"
#include "ptest.h"
#include "ptorun/pto_runtime_c_api.h"

#define FIX_CALLABLE_ID 5

typedef struct Fixture {
    void *ctx;
    void *storage[3];
    FakeCallable callable;
    ChipStorageTaskArgs *args;
    CallConfig cfg;
    volatile int32_t word[3];      /* acceptance sinks, one per storage */
} Fixture;

static inline void *fix_new_storage(void)
{
    void *s = aligned_alloc(get_runtime_alignment(), get_runtime_size());
    memset(s, 0, get_runtime_size());
    return s;
}

static inline uint64_t fix_tag(const void *storage)
{
    uint64_t tag;
    memcpy(&tag, storage, sizeof tag);
    return tag;
}

static const uint8_t fix_image[16] = { 1 };

/* Resets the fakes and builds an initialized context with callable FIX_CALLABLE_ID. */
static inline void fix_setup(Fixture *f)
{
    fake_reset();
    memset(f, 0, sizeof *f);
    f->ctx = create_device_context();
    CHECK(f->ctx != NULL);
    CHECK_EQ_INT(simpler_init(f->ctx, 0, fix_image, sizeof fix_image, fix_image, sizeof fix_image, NULL, 0, NULL),
                 PTO_OK);
    CHECK_EQ_INT(simpler_register_callable(f->ctx, FIX_CALLABLE_ID, &f->callable), PTO_OK);
    for (int i = 0; i < 3; i++)
        f->storage[i] = fix_new_storage();
    f->args = aligned_alloc(64, sizeof *f->args);
    memset(f->args, 0, sizeof *f->args);
}

static inline void fix_teardown(Fixture *f)
{
    fake_release_enqueue();
    fake_release_drain();
    CHECK_EQ_INT(finalize_device(f->ctx), PTO_OK);
    destroy_device_context(f->ctx);
    CHECK(strcmp(simpler_last_error(), "") == 0);
    for (int i = 0; i < 3; i++)
        free(f->storage[i]);
    free(f->args);
}

/* A descriptor for storage i on (slot, bank) with its own acceptance word. */
static inline NativeRunDescriptor fix_desc(Fixture *f, int i, uint32_t slot, uint32_t bank)
{
    f->word[i] = -1;
    NativeRunDescriptor d = {
        .pipeline_slot = slot,
        .arena_bank = bank,
        .run_id = 100 + (uint64_t)i,
        .generation = 7,
        .dispatch_id = 40 + (uint64_t)i,
        .run_epoch = 1000 + (uint64_t)i,
        .accepted_state = &f->word[i],
        .accepted_value = 17 + i,
    };
    return d;
}

static inline int fix_prepare(Fixture *f, int i, uint32_t slot, uint32_t bank)
{
    NativeRunDescriptor d = fix_desc(f, i, slot, bank);
    return simpler_prepare_run(f->ctx, f->storage[i], FIX_CALLABLE_ID, f->args, &f->cfg, &d);
}

static inline int32_t fix_word(Fixture *f, int i)
{
    return __atomic_load_n(&f->word[i], __ATOMIC_ACQUIRE);
}

/* ---- one exported phase call on another thread ---------------------------- */

typedef int (*PhaseFn)(void *ctx, void *storage);

typedef struct PhaseCall {
    pthread_t thread;
    PhaseFn fn;
    void *ctx;
    void *storage;
    int rc;
    char message[384]; /* fits a CHECK_CONTAINS report */
} PhaseCall;

static inline void *phase_call_body(void *arg)
{
    PhaseCall *c = arg;
    c->rc = c->fn(c->ctx, c->storage);
    snprintf(c->message, sizeof c->message, "%s", simpler_last_error());
    return NULL;
}

static inline void phase_call_start(PhaseCall *c, PhaseFn fn, void *ctx, void *storage)
{
    c->fn = fn;
    c->ctx = ctx;
    c->storage = storage;
    c->rc = 12345;
    c->message[0] = '\0';
    pthread_create(&c->thread, NULL, phase_call_body, c);
}

static inline int phase_call_join(PhaseCall *c)
{
    pthread_join(c->thread, NULL);
    return c->rc;
}

/* Runs fn on a fresh thread and returns its result (message in c->message). */
static inline int on_other_thread(PhaseCall *c, PhaseFn fn, void *ctx, void *storage)
{
    phase_call_start(c, fn, ctx, storage);
    return phase_call_join(c);
}

#endif

/* Orchestration handles are tokens of one orchestration call
 * (orch/orch_session.h), and failed calls are sticky the same way on both
 * runtimes. Compiled into native_tests (hbg, a2a3) and into trb_tests_<arch>:
 * the same cases, below the exported API, on the runtime of the binary. The
 * misbehaving user library is fixtures/fixture_stash.c: it keeps its handle in
 * a static and presents it to every api entry in a later run, and reports what
 * each call returned into the test's memory. Every entry adds 1 to y with its
 * own handle, so y + 1 exactly proves nothing else reached y. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch/arch.h"
#include "services/host_api.h"
#include "util/last_error.h"
#include "fixtures/fixture_stash.h"
#include "ptest.h"
#include "test_callable.h"
#include "test_sim.h"

#define YN 16
#define FORGED 0x5eed00000000beefull

static Runner *handle_runner(void)
{
    const DeviceImages *images = test_images_of(PTO_ARCH_NAME);
    Runner *r = runner_create();
    if (images == NULL || r == NULL || runner_init(r, 0, images) != PTO_OK) {
        fprintf(stderr, "handle_runner: cannot bring up a sim runner: %s\n", pto_last_error());
        runner_destroy(r);
        return NULL;
    }
    return r;
}

/* A callable whose orchestration is `entry` of the stash library. */
static RuntimeCallable *stash_callable(Runner *r, const char *entry)
{
    uint32_t image_size;
    const uint8_t *image = test_fixture("stash", &image_size);
    if (image == NULL)
        return NULL;
    TestCallableBuilder b;
    tcb_init(&b);
    const uint8_t sig[] = { PTO_ARG_INOUT, PTO_ARG_SCALAR, PTO_ARG_SCALAR, PTO_ARG_SCALAR, PTO_ARG_SCALAR };
    tcb_signature(&b, sig, sizeof sig);
    tcb_child(&b, 1, PTO_CORE_AIV, "vadds");
    tcb_orchestration_library(&b, image, image_size, entry);
    uint32_t size;
    uint8_t *bytes = tcb_build(&b, &size);
    tcb_free(&b);
    HostApi api = host_api_bind(r, 0, 0, &host_api_ops);
    RuntimeCallable *c = NULL;
    if (runtime_register_callable(&api, bytes, &c) != PTO_OK)
        fprintf(stderr, "register %s: %s\n", entry, pto_last_error());
    free(bytes);
    return c;
}

static void release(Runner *r, RuntimeCallable *c)
{
    HostApi api = host_api_bind(r, 0, 0, &host_api_ops);
    runtime_release_callable(&api, c);
}

typedef struct StashRun {
    float y[YN];
    int32_t report[R_STASH_REPORT];
    ChipStorageTaskArgs *args;
} StashRun;

static void stash_init(StashRun *s, float start, StashHook hook, void *hook_arg, uint64_t handle)
{
    for (int i = 0; i < YN; i++)
        s->y[i] = start;
    for (int i = 0; i < R_STASH_REPORT; i++)
        s->report[i] = 777; /* what no call returns */
    s->args = test_args();
    s->args->tensor_count = 1;
    s->args->tensors[0] = test_f32_tensor(s->y, YN);
    s->args->scalar_count = 4;
    s->args->scalars[0] = (uint64_t)(uintptr_t)hook;
    s->args->scalars[1] = (uint64_t)(uintptr_t)s->report;
    s->args->scalars[2] = handle;
    s->args->scalars[3] = (uint64_t)(uintptr_t)hook_arg;
}

static int stash_run(Runner *r, RuntimeCallable *c, StashRun *s)
{
    CallConfig cfg = test_config(20000);
    return test_run(r, c, 0, s->args, &cfg, NULL);
}

static int y_all(const StashRun *s, float v)
{
    for (int i = 0; i < YN; i++)
        if (s->y[i] != v)
            return 0;
    return 1;
}

/* Every entry refused the handle, and the run's own task went through. */
static void check_refused(const int32_t *r, int line)
{
    static const int codes[] = { R_SUBMIT, R_SCOPE_BEGIN, R_SCOPE_END, R_READ, R_WRITE, R_READ0, R_WRITE0 };
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
        if (r[codes[i]] != PTO_ERR_INVALID_ARGUMENT) {
            char m[96];
            snprintf(m, sizeof m, "report[%d] == %d, expected PTO_ERR_INVALID_ARGUMENT", codes[i], r[codes[i]]);
            ptest_record_failure(__FILE__, line, m);
        }
    if (r[R_ALLOC_NONZERO] != 0 || r[R_READ_UNTOUCHED] != 1 || r[R_OWN] != PTO_OK)
        ptest_record_failure(__FILE__, line, "alloc_tensor gave memory, read_tensor wrote, or the own submit failed");
}

/* A gate a thread waits at until the test releases it; it can carry a handle. */
typedef struct Park {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int arrived, released;
    const PtoOrchApi *api;
    void *handle;
} Park;

static void park_init(Park *p)
{
    memset(p, 0, sizeof *p);
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->cond, NULL);
}

static void park_destroy(Park *p)
{
    pthread_cond_destroy(&p->cond);
    pthread_mutex_destroy(&p->lock);
}

static void park_here(Park *p, const PtoOrchApi *api, void *handle)
{
    pthread_mutex_lock(&p->lock);
    p->api = api;
    p->handle = handle;
    p->arrived = 1;
    pthread_cond_broadcast(&p->cond);
    while (!p->released)
        pthread_cond_wait(&p->cond, &p->lock);
    pthread_mutex_unlock(&p->lock);
}

static void park_await(Park *p)
{
    pthread_mutex_lock(&p->lock);
    while (!p->arrived)
        pthread_cond_wait(&p->cond, &p->lock);
    pthread_mutex_unlock(&p->lock);
}

static void park_release(Park *p)
{
    pthread_mutex_lock(&p->lock);
    p->released = 1;
    pthread_cond_broadcast(&p->cond);
    pthread_mutex_unlock(&p->lock);
}

/* The hook of fx_stash_keep: parks the run inside its orchestration. */
static void park_hook(void *arg, const PtoOrchApi *api, void *handle)
{
    park_here(arg, api, handle);
}

/* A thread running one fx_stash_keep run, then optionally parking. */
typedef struct KeepThread {
    pthread_t thread;
    Runner *r;
    RuntimeCallable *c;
    StashRun run;
    int rc;
    Park *after; /* parks here after the run when not NULL */
} KeepThread;

static void *keep_body(void *arg)
{
    KeepThread *k = arg;
    k->rc = stash_run(k->r, k->c, &k->run);
    if (k->after != NULL)
        park_here(k->after, NULL, NULL);
    return NULL;
}

static void keep_start(KeepThread *k, Runner *r, RuntimeCallable *c, StashHook hook, void *hook_arg, Park *after)
{
    k->r = r;
    k->c = c;
    k->rc = 12345;
    k->after = after;
    stash_init(&k->run, 0.0f, hook, hook_arg, 0);
    pthread_create(&k->thread, NULL, keep_body, k);
}

static void keep_join(KeepThread *k)
{
    pthread_join(k->thread, NULL);
    CHECK_EQ_INT(k->rc, PTO_OK);
    CHECK(y_all(&k->run, 1.0f));
    free(k->run.args);
}

/* Runs fx_stash_use presenting `handle` (0: the kept one) and checks that
   everything it presented was refused and y is exactly y + 1. */
static void use_and_check(Runner *r, RuntimeCallable *use, uint64_t handle, int line)
{
    StashRun s;
    stash_init(&s, 5.0f, NULL, NULL, handle);
    int rc = stash_run(r, use, &s);
    if (rc != PTO_OK)
        fprintf(stderr, "use run: %s\n", pto_last_error());
    CHECK_EQ_INT(rc, PTO_OK);
    check_refused(s.report, line);
    if (!y_all(&s, 6.0f))
        ptest_record_failure(__FILE__, line, "the later run's y is not y + 1");
    free(s.args);
}

TEST(a_handle_kept_past_its_run_is_refused_on_the_same_thread)
{
    Runner *r = handle_runner();
    RuntimeCallable *keep = stash_callable(r, "fx_stash_keep"), *use = stash_callable(r, "fx_stash_use");
    REQUIRE(keep != NULL && use != NULL);
    CHECK(keep != NULL && use != NULL);
    StashRun s;
    stash_init(&s, 0.0f, NULL, NULL, 0);
    CHECK_EQ_INT(stash_run(r, keep, &s), PTO_OK);
    CHECK(y_all(&s, 1.0f));
    free(s.args);
    use_and_check(r, use, 0, __LINE__);
    use_and_check(r, use, 0, __LINE__); /* and again: never valid again */
    release(r, keep);
    release(r, use);
    runner_destroy(r);
}

TEST(a_handle_of_a_thread_that_has_ended_is_refused)
{
    Runner *r = handle_runner();
    RuntimeCallable *keep = stash_callable(r, "fx_stash_keep"), *use = stash_callable(r, "fx_stash_use");
    REQUIRE(keep != NULL && use != NULL);
    KeepThread k;
    keep_start(&k, r, keep, NULL, NULL, NULL);
    keep_join(&k);
    use_and_check(r, use, 0, __LINE__);
    release(r, keep);
    release(r, use);
    runner_destroy(r);
}

/* hbg's old handle pointed into the preparing thread's stack: a parked thread
   keeps that frame mapped, so following it would read stale memory. */
TEST(a_handle_of_a_parked_thread_is_refused)
{
    Runner *r = handle_runner();
    RuntimeCallable *keep = stash_callable(r, "fx_stash_keep"), *use = stash_callable(r, "fx_stash_use");
    REQUIRE(keep != NULL && use != NULL);
    Park after;
    park_init(&after);
    KeepThread k;
    keep_start(&k, r, keep, NULL, NULL, &after);
    park_await(&after); /* its run is over, its thread alive and waiting */
    use_and_check(r, use, 0, __LINE__);
    park_release(&after);
    keep_join(&k);
    park_destroy(&after);
    release(r, keep);
    release(r, use);
    runner_destroy(r);
}

/* A run parked inside its orchestration: its handle is live, yet refused by
   another run's orchestration (another device context, another thread), and
   by a thread running no orchestration; the parked run then completes. */
TEST(a_live_handle_is_refused_during_another_run_and_off_its_thread)
{
    Runner *r1 = handle_runner(), *r2 = handle_runner();
    RuntimeCallable *keep = stash_callable(r1, "fx_stash_keep"), *use = stash_callable(r2, "fx_stash_use");
    REQUIRE(keep != NULL && use != NULL);
    Park inside;
    park_init(&inside);
    KeepThread k;
    keep_start(&k, r1, keep, park_hook, &inside, NULL);
    park_await(&inside);
    CHECK(inside.handle != NULL && inside.api != NULL);
    use_and_check(r2, use, (uint64_t)(uintptr_t)inside.handle, __LINE__);
    /* from this thread, which runs no orchestration */
    const PtoOrchApi *api = inside.api;
    CHECK_EQ_INT(api->scope_begin(inside.handle), PTO_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(api->alloc_tensor(inside.handle, 64), 0);
    float v = 3.0f;
    CHECK_EQ_INT(api->write_tensor(inside.handle, (uint64_t)(uintptr_t)k.run.y, &v, sizeof v), PTO_ERR_INVALID_ARGUMENT);
#ifdef PTO_RUNTIME_HBG /* trb's messages are in the AICPU image's own buffer */
    CHECK_CONTAINS(pto_last_error(), "write_tensor: handle");
    CHECK_CONTAINS(pto_last_error(), "no orchestration runs on this thread");
#endif
    park_release(&inside);
    keep_join(&k); /* y + 1: the refused calls changed nothing, and its scope count is 0 */
    park_destroy(&inside);
    release(r1, keep);
    release(r2, use);
    runner_destroy(r1);
    runner_destroy(r2);
}

TEST(a_live_handle_is_refused_on_another_thread_of_its_own_orchestration)
{
    Runner *r = handle_runner();
    RuntimeCallable *c = stash_callable(r, "fx_stash_other_thread");
    REQUIRE(c != NULL);
    StashRun s;
    stash_init(&s, 5.0f, NULL, NULL, 0);
    CHECK_EQ_INT(stash_run(r, c, &s), PTO_OK);
    check_refused(s.report, __LINE__);
    CHECK(y_all(&s, 6.0f));
    free(s.args);
    release(r, c);
    runner_destroy(r);
}

TEST(forged_handles_are_refused)
{
    Runner *r = handle_runner();
    RuntimeCallable *use = stash_callable(r, "fx_stash_use");
    REQUIRE(use != NULL);
    StashRun decoy;
    stash_init(&decoy, 0.0f, NULL, NULL, 0);
    use_and_check(r, use, FORGED, __LINE__);
    use_and_check(r, use, (uint64_t)(uintptr_t)&decoy, __LINE__); /* a real pointer, as handles used to be */
    use_and_check(r, use, 1, __LINE__);                           /* the first session number */
    free(decoy.args);
    release(r, use);
    runner_destroy(r);
}

/* The sticky rule: a failed submit / alloc_tensor / scope call fails the run
   with its code even when ignored, and every later such call is refused with
   that code; read_tensor still works. */
TEST(a_failed_submit_is_sticky)
{
    Runner *r = handle_runner();
    RuntimeCallable *c = stash_callable(r, "fx_sticky_submit");
    REQUIRE(c != NULL);
    StashRun s;
    stash_init(&s, 5.0f, NULL, NULL, 0);
    CHECK_EQ_INT(stash_run(r, c, &s), PTO_ERR_ORCHESTRATION);
    CHECK_CONTAINS(pto_last_error(),
                   "orchestration 'fx_sticky_submit' returned 0 after a failed call: submit: func_id 9 is not a child");
    CHECK_EQ_INT(s.report[R_SUBMIT], PTO_ERR_ORCHESTRATION);
    CHECK_EQ_INT(s.report[R_ALLOC_NONZERO], 0);
    CHECK_EQ_INT(s.report[R_SCOPE_BEGIN], PTO_ERR_ORCHESTRATION);
    CHECK_EQ_INT(s.report[R_SCOPE_END], PTO_ERR_ORCHESTRATION);
    CHECK_EQ_INT(s.report[R_READ], PTO_OK);
    CHECK_EQ_INT(s.report[R_READ_UNTOUCHED], 0); /* it read y */
    CHECK(y_all(&s, 5.0f));                      /* nothing launched, nothing copied back */
    free(s.args);
    release(r, c);
    runner_destroy(r);
}

/* ... while a refused read_tensor / write_tensor is only the caller's, and a
   zero-length access outside every tensor is refused as well. */
TEST(a_refused_tensor_access_is_not_sticky_and_zero_bytes_outside_are_refused)
{
    Runner *r = handle_runner();
    RuntimeCallable *c = stash_callable(r, "fx_sticky_read");
    REQUIRE(c != NULL);
    StashRun s;
    stash_init(&s, 5.0f, NULL, NULL, 0);
    CHECK_EQ_INT(stash_run(r, c, &s), PTO_OK);
    CHECK_EQ_INT(s.report[R_READ], PTO_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(s.report[R_READ_UNTOUCHED], 1);
    CHECK_EQ_INT(s.report[R_WRITE], PTO_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(s.report[R_READ0], PTO_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(s.report[R_WRITE0], PTO_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(s.report[R_READ0_INSIDE], PTO_OK);
    CHECK_EQ_INT(s.report[R_WRITE0_AT_END], PTO_OK);
    CHECK_EQ_INT(s.report[R_OWN], PTO_OK);
    CHECK(y_all(&s, 6.0f));
    free(s.args);
    release(r, c);
    runner_destroy(r);
}

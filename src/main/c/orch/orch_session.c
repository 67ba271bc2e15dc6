/* Orchestration sessions (orch_session.h). */
#include "orch/orch_session.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/random.h>
#include <time.h>

#include "util/last_error.h"
#include "ptorun/pto_runtime_c_api.h"

/* Session numbers of this library copy: first_session, first_session + 1, ...
   Every image that runs orchestrations carries its own copy of this file (one
   per host library, one per loaded AICPU image, i.e. per trb device context),
   so a counter starting at 1 in each would mint the same numbers in every
   copy: a handle kept from one device context's run would then equal the
   session of a run of another, and be taken for that run's own. Each copy
   therefore starts at a random point of [1, 2^62): copies' ranges do not meet
   (2^62 numbers apart on average, a copy mints one per run), and 0 is never a
   session, so a NULL handle is none. */
static uint64_t first_session;
static _Atomic uint64_t next_session;
static pthread_once_t seeded = PTHREAD_ONCE_INIT;

static void seed(void)
{
    uint64_t r = 0;
    if (getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r) {
        /* no entropy yet: the kernel's per-process random bytes, this copy's
           address and the time still differ between copies */
        const void *at_random = (const void *)getauxval(AT_RANDOM);
        if (at_random != NULL)
            memcpy(&r, at_random, sizeof r);
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        r ^= (uint64_t)(uintptr_t)&first_session * 0x9E3779B97F4A7C15ull;
        r ^= ((uint64_t)t.tv_sec << 30) ^ (uint64_t)t.tv_nsec;
    }
    first_session = (r >> 2) | 1u;
    atomic_store_explicit(&next_session, first_session, memory_order_relaxed);
}

/* The calling thread's innermost open session, NULL when no orchestration
   runs on it. Only its own thread reads or writes it. */
static _Thread_local OrchSession *current;

void *orch_session_open(OrchSession *s, void *run)
{
    return orch_session_open_kind(s, run, ORCH_SESSION_RUN);
}

void *orch_session_open_kind(OrchSession *s, void *run, uint32_t kind)
{
    pthread_once(&seeded, seed);
    s->id = atomic_fetch_add_explicit(&next_session, 1, memory_order_relaxed);
    s->kind = kind;
    s->run = run;
    s->outer = current;
    current = s;
    return (void *)(uintptr_t)s->id;
}

void orch_session_close(OrchSession *s)
{
    if (current == s)
        current = s->outer;
    s->run = NULL;
}

void *orch_session_resolve(void *handle, const char *fn)
{
    return orch_session_resolve_kind(handle, ORCH_SESSION_RUN, fn);
}

void *orch_session_resolve_kind(void *handle, uint32_t kind, const char *fn)
{
    uint64_t id = (uint64_t)(uintptr_t)handle;
    if (current != NULL && id == current->id) {
        if (current->kind == kind)
            return current->run;
        pto_fail(PTO_ERR_INVALID_ARGUMENT,
                 kind == ORCH_SESSION_RUN
                     ? "%s: handle %#llx is a sub-graph body's; inside a body, call the api the body was given"
                     : "%s: handle %#llx is the run's, not the sub-graph body's; a body calls the api it was given "
                       "with the handle it was given",
                 fn, (unsigned long long)id);
        return NULL;
    }
    /* opened a session, so seed() has run and first_session is set (once) */
    uint64_t minted = current != NULL ? atomic_load_explicit(&next_session, memory_order_relaxed) : 0;
    const char *what = current != NULL && id >= first_session && id < minted
                           ? "is the handle of another orchestration call (a finished run's, or another run's or "
                             "thread's)"
                           : "is not the handle of an orchestration running here";
    if (current == NULL)
        pto_fail(PTO_ERR_INVALID_ARGUMENT,
                 "%s: handle %#llx %s, and no orchestration runs on this thread; a handle is valid only on the thread "
                 "its orchestration function was called on, while that call lasts",
                 fn, (unsigned long long)id, what);
    else
        pto_fail(PTO_ERR_INVALID_ARGUMENT,
                 "%s: handle %#llx %s, not the one of the orchestration running on this thread; a handle is valid "
                 "only during the call it was given to",
                 fn, (unsigned long long)id, what);
    return NULL;
}

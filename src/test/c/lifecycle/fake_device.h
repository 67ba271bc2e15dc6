/*
 * A test-only platform (every function of platform/runner.h) and runtime
 * (every function of runtime/runtime.h), linked with the common/ objects into
 * lifecycle_tests so the real exported functions of common/c_api.c can be
 * driven through whole runs before the real platform and runtime exist.
 *
 * The script below is process-global; fake_reset() restores the defaults at
 * the start of each test. The gates let a test hold a run at a chosen point:
 * before the launch marker, or after it with the drain blocked.
 */
#ifndef PTORUN_TEST_FAKE_DEVICE_H
#define PTORUN_TEST_FAKE_DEVICE_H

#include <stdint.h>

#include "ptorun/pto_runtime_c_api.h"
#include "runtime/runtime.h"

typedef enum FakeEnqueueMode {
    FAKE_ENQUEUE_PUBLISH,          /* publish the marker and return 0 */
    FAKE_ENQUEUE_FAIL_BEFORE_MARKER, /* return enqueue_fail_code, never publish */
} FakeEnqueueMode;

/* What the test controls. */
typedef struct FakeScript {
    /* platform */
    int init_fail_code;            /* runner_init returns it when non-zero */
    int poisoned;                  /* runner_poisoned */
    FakeEnqueueMode enqueue_mode;
    int enqueue_fail_code;
    int drain_result;              /* runner_await_device returns it (message "fake device fault") */
    int query_error;               /* runner_query returns it when non-zero */
    int abandon_fail_code;         /* runner_abandon_slot returns it when non-zero */
    /* runtime */
    uint32_t pipeline_depth;       /* the contract's depth */
    int concurrent_prepare;        /* runtime_supports_overlap */
    int shared_bank;               /* depth 2 with one shared copy of the arenas (DEVICE_SCRATCH), as trb's */
    int bind_fail_code;
    int collect_fail_code;         /* runtime_collect_results refuses with it */
    uint64_t device_bytes;         /* runtime_run_device_bytes of a bound run */
    /* called inside runtime_bind before it reaches the runner, as hbg runs a
       user orchestration there: the caller's code runs during prepare */
    void (*bind_hook)(void *arg);
    void *bind_hook_arg;
    int bind_fail_after_hook;      /* bind_fail_code refuses after the hook instead of before it */
} FakeScript;

/* What the fakes observed. */
typedef struct FakeRecord {
    int init_calls, finalize_calls, prewarm_calls;
    int enqueue_calls, drain_calls, query_calls;
    uint32_t enqueue_slot;
    uint64_t enqueue_args_dev;     /* DeviceLaunch.args_dev seen by enqueue */
    int register_calls, release_calls, live_callables;
    int bind_calls, collect_calls, unbind_calls;
    int collect_execution_rc;
    int live_scratches;            /* slot scratches created and not yet destroyed */
    const RuntimeSlotScratch *bind_scratch[PTO_PIPELINE_MAX_DEPTH]; /* the last one bind got, per slot */
    uint32_t bind_retained_slot;   /* the slot/bank the run's HostApi reached the runner with */
    uint32_t bind_arena_bank;
    int bind_overlaps;             /* RuntimeRun.overlaps the last bind saw */
    uint32_t prepare_slot;         /* runner_prepare_slot's, runner_abandon_slot's last slot */
    uint32_t abandon_slot;
    uint64_t device_end_ns;        /* CLOCK_MONOTONIC when the fake's await passed its gate (0: never) */
    int noted;                     /* runner_note_failure calls: the device failures exported calls returned */
    int last_noted;                /* ... the last one's code */
} FakeRecord;

extern FakeScript fake_script;
extern FakeRecord fake_record;

void fake_reset(void);

/* Gate before the marker: while held, enqueue blocks before publishing. */
void fake_hold_enqueue(void);
void fake_release_enqueue(void);
/* Gate in the drain: while held, drain blocks after the marker. */
void fake_hold_drain(void);
void fake_release_drain(void);
/* The device side of the run reports it ended (runner_query -> COMPLETE, the
 * ABI's spelling of "ended") even though drain may still be held. */
void fake_set_device_ended(int ended);
/* Blocks until enqueue reached the held gate / the drain reached its gate. */
void fake_await_enqueue_blocked(void);
void fake_await_drain_blocked(void);

/* The callable bytes handed to simpler_register_callable in these tests. */
typedef struct FakeCallable {
    int register_fail_code;        /* runtime_register_callable refuses with it */
    int tag;
} FakeCallable;

#define FAKE_ARGS_DEV 0xA11CEull

#endif

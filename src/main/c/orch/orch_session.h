/*
 * Orchestration sessions: what the `void *orch` handle of a PtoOrchestrationFn
 * is. A runtime opens a session around each call of a run's orchestration
 * function and passes the session's handle instead of a pointer to its own
 * state; every PtoOrchApi entry resolves the handle first.
 *
 * A handle is a session number (a never-reused 64-bit counter of this library
 * copy, starting at a random point so that copies do not mint the same
 * numbers) encoded in the pointer, so nothing ever dereferences what a caller
 * hands back. It resolves only on the thread that opened its
 * session and only while that session is open, i.e. during the orchestration
 * call it was given to: the live-session table is one entry per thread (the
 * innermost open session), touched only by its own thread, so it needs no
 * lock. A handle kept past its run, passed to another thread, used during
 * another run or forged resolves to nothing and the call is refused with
 * PTO_ERR_INVALID_ARGUMENT; it reaches no run's memory and changes no run.
 *
 * Every image that runs orchestrations compiles this file: the host libraries
 * (hbg) and the AICPU image (trb), each with its own counter. Whatever handle
 * a call presents, an accepted one is the calling thread's open session, so a
 * call can only ever act on the run whose orchestration is executing it.
 */
#ifndef PTORUN_ORCH_SESSION_H
#define PTORUN_ORCH_SESSION_H

#include <stdint.h>

typedef struct OrchSession {
    uint64_t id;
    void *run;                   /* the runtime's orchestration state */
    struct OrchSession *outer;   /* the thread's session around this one (an orchestration calling prepare) */
} OrchSession;

/* Opens `s` (the caller's, kept alive until orch_session_close) for `run` on
 * the calling thread and returns its handle. */
void *orch_session_open(OrchSession *s, void *run);

/* Closes `s`, the calling thread's innermost session: its handle is refused
 * from now on, everywhere. */
void orch_session_close(OrchSession *s);

/* The run of `handle` when it is the calling thread's open session; otherwise
 * NULL with PTO_ERR_INVALID_ARGUMENT's message recorded, naming `fn`. */
void *orch_session_resolve(void *handle, const char *fn);

#endif

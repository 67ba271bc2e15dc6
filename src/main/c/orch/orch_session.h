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

/* What a session's handle stands for: a run's orchestration (the runtimes'
   PtoOrchApi) or a sub-graph body being recorded (orch/subgraph.h's own api).
   Each api resolves only its own kind, so a body's handle given to the run's
   api, or the reverse, is refused, never taken for the other's state. */
enum { ORCH_SESSION_RUN = 0, ORCH_SESSION_SUBGRAPH_BODY = 1 };

typedef struct OrchSession {
    uint64_t id;
    uint32_t kind;               /* ORCH_SESSION_* */
    void *run;                   /* the runtime's orchestration state (or the sub-graph recorder) */
    struct OrchSession *outer;   /* the thread's session around this one (an orchestration calling prepare) */
} OrchSession;

/* Opens `s` (the caller's, kept alive until orch_session_close) for `run` on
 * the calling thread and returns its handle. */
void *orch_session_open(OrchSession *s, void *run);

/* orch_session_open of another kind (ORCH_SESSION_*). */
void *orch_session_open_kind(OrchSession *s, void *run, uint32_t kind);

/* Closes `s`, the calling thread's innermost session: its handle is refused
 * from now on, everywhere. */
void orch_session_close(OrchSession *s);

/* The run of `handle` when it is the calling thread's open session; otherwise
 * NULL with PTO_ERR_INVALID_ARGUMENT's message recorded, naming `fn`. */
void *orch_session_resolve(void *handle, const char *fn);

/* orch_session_resolve for a session of `kind`: one of another kind is refused
   (PTO_ERR_INVALID_ARGUMENT naming `fn`). orch_session_resolve is this for
   ORCH_SESSION_RUN. */
void *orch_session_resolve_kind(void *handle, uint32_t kind, const char *fn);

#endif

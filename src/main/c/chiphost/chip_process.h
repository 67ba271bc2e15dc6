/*
 * The parent's side of one chip host (docs/isolation.md): a child process,
 * the executable ptorun-chiphost, reached through a chip channel
 * (chiphost/chip_channel.h) whose memfd it inherits. The child is tied to the
 * parent's life: it dies with the thread that started it (PR_SET_PDEATHSIG
 * follows the creating thread, not the process), so start it from a thread
 * that outlives it.
 *
 * Once the child is gone (any signal, an abort, SIGKILL, an exit) the call in
 * flight and every later call fail with PTO_ERR_CHIP_CRASHED; the message
 * names the signal (strsignal) or the exit status and the pid. The parent
 * collects the child as soon as it finds it dead: no zombie stays.
 *
 * Calls may come from many threads at once, each on a lane of its own
 * (chip_process_call_on; chip_process_call is lane 0, the fd-3 channel): the
 * death detection (collecting the child, `gone`, `death`) is under a mutex.
 * Start and stop are not concurrent with any call. Functions returning int
 * return PTO_OK or a PTO_ERR_* code with a pto_fail message.
 */
#ifndef PTORUN_CHIP_PROCESS_H
#define PTORUN_CHIP_PROCESS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "chiphost/chip_arena.h"
#include "chiphost/chip_channel.h"

/* How long chip_process_stop waits for the child to honour CHIP_OP_EXIT
   before it kills it. */
#define CHIP_PROCESS_STOP_GRACE_MS 1000u

typedef struct ChipProcess {
    pid_t pid;          /* the child's; kept after it is collected, for messages */
    int pidfd;          /* -1 once closed, or without pidfd_open (e.g. valgrind): waitpid(WNOHANG) then */
    _Atomic int gone;   /* the child is dead and collected: every call fails with `death`
                           (written under lock, after death; read without) */
    ChipChannel channel; /* lane 0 */
    char death[192];    /* why the child is gone; fixed once gone is set */
    pthread_mutex_t lock; /* collecting the child and signalling it */
} ChipProcess;

/* What a chip host starts with beyond its channel; a zeroed one is "nothing". */
typedef struct ChipProcessConfig {
    /* The caller's arena (chiphost/chip_arena.h), mapped by the child at its
       address; NULL: none. The caller keeps it and closes it after the stop. */
    const ChipArena *arena;
    /* Tests only: the child maps a page of its own at the arena's base before
       it attaches the arena, so the start fails as a real clash would. */
    int test_arena_taken;
    /* With share_driver_state, driver_state_fd is the emulated driver's state memfd
       (ptorun/pto_emudrv.h, ptorun_emudrv_state_fd) for the child's driver to share:
       the child finds it at CHIP_PROCESS_DRIVER_STATE_FD, named by
       PTO_EMUDRV_STATE_FD_ENV in its environment only. The caller keeps its fd. */
    int share_driver_state;
    int driver_state_fd;
} ChipProcessConfig;

/* The fd number a child finds the driver state at (3: channel, 4: arena). */
#define CHIP_PROCESS_DRIVER_STATE_FD 5


/* Starts the executable `exe` (a ptorun-chiphost) with a fresh channel, and
 * returns once it runs (the first ping answered): PTO_ERR_INVALID_ARGUMENT
 * (exe missing or not executable), PTO_ERR_CHIP_CRASHED (it died before it
 * answered), PTO_ERR_OUT_OF_MEMORY or PTO_ERR_FAILED (a system call failed).
 * On failure nothing is left: no process, no fd. */
int chip_process_start(const char *exe, ChipProcess *out);

/* chip_process_start with a configuration (cfg may be NULL). With an arena,
 * the start fails too when the child cannot map it at the parent's address:
 * PTO_ERR_BUSY, the child's message naming the range (chip_arena_attach). */
int chip_process_start_with(const char *exe, const ChipProcessConfig *cfg, ChipProcess *out);

/* One request (chip_channel_call): PTO_ERR_CHIP_CRASHED once the child is
 * gone, PTO_ERR_TIMEOUT after timeout_ms (0: no bound) without an answer. */
int chip_process_call(ChipProcess *p, uint32_t op, const void *payload, size_t len, void *reply, size_t reply_cap,
                      size_t *reply_len, uint32_t timeout_ms);

/* chip_process_call on a lane of the caller's (a control block in the arena
 * the child serves, CHIP_OP_OPEN_LANE); one thread at a time per lane. */
int chip_process_call_on(ChipProcess *p, ChipChannel *lane, uint32_t op, const void *payload, size_t len,
                         void *reply, size_t reply_cap, size_t *reply_len, uint32_t timeout_ms);

/* Sends signal sig to the child unless it is gone (never to a reaped pid:
 * pidfd_send_signal with a pidfd, else kill(2) while not collected, under the
 * lock). PTO_OK, PTO_ERR_CHIP_CRASHED (gone, with its death), or PTO_ERR_FAILED.
 * Any thread. */
int chip_process_kill(ChipProcess *p, int sig);

/* Whether the child is gone (collects it when it died); any thread. */
int chip_process_gone(ChipProcess *p);

/* Asks the child to exit (CHIP_OP_EXIT), waits at most grace_ms for it,
 * then kills it (SIGKILL); collects it and closes every fd of it. Never
 * fails; tolerates a process that never started or is gone already. */
void chip_process_stop(ChipProcess *p, uint32_t grace_ms);

#endif

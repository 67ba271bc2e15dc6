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
 * One thread at a time per ChipProcess (its caller serializes the calls);
 * reading pid from another thread is fine. Functions returning int return
 * PTO_OK or a PTO_ERR_* code with a pto_fail message.
 */
#ifndef PTORUN_CHIP_PROCESS_H
#define PTORUN_CHIP_PROCESS_H

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
    int gone;           /* the child is dead and collected: every call fails with `death` */
    ChipChannel channel;
    char death[192];    /* why the child is gone */
} ChipProcess;

/* What a chip host starts with beyond its channel; a zeroed one is "nothing". */
typedef struct ChipProcessConfig {
    /* The caller's arena (chiphost/chip_arena.h), mapped by the child at its
       address; NULL: none. The caller keeps it and closes it after the stop. */
    const ChipArena *arena;
    /* Tests only: the child maps a page of its own at the arena's base before
       it attaches the arena, so the start fails as a real clash would. */
    int test_arena_taken;
} ChipProcessConfig;

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

/* Asks the child to exit (CHIP_OP_EXIT), waits at most grace_ms for it,
 * then kills it (SIGKILL); collects it and closes every fd of it. Never
 * fails; tolerates a process that never started or is gone already. */
void chip_process_stop(ChipProcess *p, uint32_t grace_ms);

#endif

/*
 * The parent's side of a chip host (chiphost/chip_process.h): spawning the
 * child with its channel, telling its death, collecting it.
 */
#include "chiphost/chip_process.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "chiphost/chip_ops.h"
#include "ptorun/pto_emudrv.h"
#include "ptorun/pto_runtime_c_api.h"
#include "util/last_error.h"
#include "util/spin_wait.h"

/* The fd numbers the child finds its channel and its arena at (passed in its argv too). */
#define CHILD_CHANNEL_FD 3
#define CHILD_ARENA_FD 4
#define CHILD_STATE_FD CHIP_PROCESS_DRIVER_STATE_FD
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424 /* Linux >= 5.1; older C library headers lack it */
#endif
/* How long a fresh child may take to answer its first ping. */
#define START_TIMEOUT_MS 10000u

extern char **environ;

static int sys_fail(const char *what, int err)
{
    return pto_fail(err == ENOMEM ? PTO_ERR_OUT_OF_MEMORY : PTO_ERR_FAILED, "chip host: %s failed: %s", what,
                    strerror(err));
}

/* ---- the child's death ------------------------------------------------------------ */

static void describe_death(ChipProcess *p, pid_t got, int status, int err)
{
    if (got != p->pid) /* e.g. SIGCHLD ignored: the kernel collected it */
        snprintf(p->death, sizeof p->death, "chip host pid %d is gone (its status is lost: %s)", (int)p->pid,
                 strerror(err));
    else if (WIFSIGNALED(status))
        snprintf(p->death, sizeof p->death, "chip host pid %d was killed by signal %d (%s)", (int)p->pid,
                 WTERMSIG(status), strsignal(WTERMSIG(status)));
    else
        snprintf(p->death, sizeof p->death, "chip host pid %d exited with status %d", (int)p->pid,
                 WEXITSTATUS(status));
}

/* Collects the child when it is dead, or blocking when `wait` is set;
 * returns whether it is gone. With a pidfd, the child is dead once the pidfd
 * turns readable; without (pidfd_open unsupported, e.g. under valgrind),
 * waitpid(WNOHANG) tells. The collection is under the lock: many lanes' calls
 * check at once, and chip_process_kill must never signal a collected pid. */
static int collect(ChipProcess *p, int wait)
{
    if (atomic_load(&p->gone))
        return 1;
    struct pollfd pfd = { .fd = p->pidfd, .events = POLLIN };
    if (!wait && p->pidfd >= 0 && poll(&pfd, 1, 0) <= 0)
        return 0;
    pthread_mutex_lock(&p->lock);
    if (!atomic_load(&p->gone)) {
        int status = 0;
        pid_t got;
        do
            got = waitpid(p->pid, &status, wait || p->pidfd >= 0 ? 0 : WNOHANG);
        while (got < 0 && errno == EINTR);
        if (got != 0) {
            describe_death(p, got, status, errno);
            atomic_store(&p->gone, 1); /* after death: a reader that sees gone reads the whole message */
        }
    }
    int gone = atomic_load(&p->gone);
    pthread_mutex_unlock(&p->lock);
    return gone;
}

/* Waits at most ms for the child to die (without collecting it unless it has
   no pidfd); returns whether it did. */
static int await_death(ChipProcess *p, uint32_t ms)
{
    if (p->pidfd >= 0) {
        struct pollfd pfd = { .fd = p->pidfd, .events = POLLIN };
        return poll(&pfd, 1, (int)ms) == 1;
    }
    uint64_t end = pto_monotonic_ns() + (uint64_t)ms * 1000000u;
    struct timespec slice = { 0, 1000000 };
    while (!collect(p, 0) && pto_monotonic_ns() < end)
        nanosleep(&slice, NULL);
    return p->gone;
}

static int peer_check(void *arg)
{
    ChipProcess *p = arg;
    return collect(p, 0) ? pto_fail(PTO_ERR_CHIP_CRASHED, "%s", p->death) : PTO_OK;
}

/* ---- start ----------------------------------------------------------------------- */

/* The channel's fd must not sit at CHILD_CHANNEL_FD already: a dup2 onto
   itself keeps close-on-exec on some C libraries, and the child would lose it. */
static int move_off_child_fd(ChipChannel *ch)
{
    if (ch->fd != CHILD_CHANNEL_FD)
        return PTO_OK;
    int fd = fcntl(ch->fd, F_DUPFD_CLOEXEC, CHILD_CHANNEL_FD + 1);
    if (fd < 0)
        return sys_fail("fcntl(F_DUPFD_CLOEXEC)", errno);
    close(ch->fd);
    ch->fd = fd;
    return PTO_OK;
}

/* The child gets the channel at CHILD_CHANNEL_FD, the arena (arena_fd >= 0)
   at CHILD_ARENA_FD, the driver state (state_fd >= 0) at CHILD_STATE_FD, and
   no other inherited fd beyond stdio (an fd the parent left inheritable, e.g. a
   JVM's, stays behind); default signal dispositions and an empty mask, whatever
   the parent set for itself. The actions run in order: arena_fd is above
   CHILD_ARENA_FD and state_fd above CHILD_STATE_FD, so no dup2 clobbers a later
   one's source. Returns 0 or an errno value, naming the call in *what. */
static int spawn_setup(posix_spawn_file_actions_t *fa, posix_spawnattr_t *attr, int fd, int arena_fd,
                       int state_fd, const char **what)
{
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    int err;
    int first_closed = state_fd >= 0 ? CHILD_STATE_FD + 1 : arena_fd >= 0 ? CHILD_ARENA_FD + 1 : CHILD_CHANNEL_FD + 1;
    if ((err = posix_spawn_file_actions_adddup2(fa, fd, CHILD_CHANNEL_FD)) != 0 ||
        (arena_fd >= 0 && (err = posix_spawn_file_actions_adddup2(fa, arena_fd, CHILD_ARENA_FD)) != 0) ||
        (state_fd >= 0 && (err = posix_spawn_file_actions_adddup2(fa, state_fd, CHILD_STATE_FD)) != 0))
        *what = "posix_spawn_file_actions_adddup2";
    else if ((err = posix_spawn_file_actions_addclosefrom_np(fa, first_closed)) != 0)
        *what = "posix_spawn_file_actions_addclosefrom_np";
    else if ((err = posix_spawnattr_setflags(attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF)) != 0 ||
             (err = posix_spawnattr_setsigmask(attr, &none)) != 0 ||
             (err = posix_spawnattr_setsigdefault(attr, &all)) != 0)
        *what = "posix_spawnattr_set*";
    return err;
}

/* The child's environment: the parent's (environ, read, never changed) without any
   PTO_EMUDRV_STATE_FD_ENV of its own, plus that variable naming CHILD_STATE_FD when
   the child gets the driver state. A malloc'ed array of the parent's strings and
   `entry`; NULL when out of memory. */
static char **child_environment(int state_fd, char *entry, size_t entry_cap)
{
    static const char name[] = PTO_EMUDRV_STATE_FD_ENV "=";
    size_t n = 0;
    while (environ != NULL && environ[n] != NULL)
        n++;
    char **envp = malloc((n + 2) * sizeof *envp);
    if (envp == NULL)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], name, sizeof name - 1) != 0)
            envp[k++] = environ[i];
    if (state_fd >= 0) {
        snprintf(entry, entry_cap, "%s%d", name, CHILD_STATE_FD);
        envp[k++] = entry;
    }
    envp[k] = NULL;
    return envp;
}

/* ptorun-chiphost <channel fd> <parent pid> [<arena fd> <arena base> <arena bytes> [test-arena-taken]] */
static int spawn(const char *exe, const ChipProcessConfig *cfg, int arena_fd, int state_fd, ChipProcess *p)
{
    char fd_arg[16], ppid_arg[24], arena_fd_arg[16], base_arg[24], bytes_arg[24];
    snprintf(fd_arg, sizeof fd_arg, "%d", CHILD_CHANNEL_FD);
    snprintf(ppid_arg, sizeof ppid_arg, "%d", (int)getpid());
    char *argv[8] = { (char *)exe, fd_arg, ppid_arg, NULL };
    if (arena_fd >= 0) {
        snprintf(arena_fd_arg, sizeof arena_fd_arg, "%d", CHILD_ARENA_FD);
        snprintf(base_arg, sizeof base_arg, "0x%llx", (unsigned long long)(uintptr_t)cfg->arena->base);
        snprintf(bytes_arg, sizeof bytes_arg, "%zu", cfg->arena->bytes);
        argv[3] = arena_fd_arg;
        argv[4] = base_arg;
        argv[5] = bytes_arg;
        argv[6] = cfg->test_arena_taken ? "test-arena-taken" : NULL;
    }
    char state_entry[64];
    char **envp = child_environment(state_fd, state_entry, sizeof state_entry);
    if (envp == NULL)
        return sys_fail("malloc (the child's environment)", ENOMEM);
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    const char *what = "posix_spawn_file_actions_init";
    int err = posix_spawn_file_actions_init(&fa);
    if (err != 0) {
        free(envp);
        return sys_fail(what, err);
    }
    what = "posix_spawnattr_init";
    if ((err = posix_spawnattr_init(&attr)) == 0) {
        if ((err = spawn_setup(&fa, &attr, p->channel.fd, arena_fd, state_fd, &what)) == 0) {
            what = "posix_spawn";
            err = posix_spawn(&p->pid, exe, &fa, &attr, argv, envp);
        }
        posix_spawnattr_destroy(&attr);
    }
    posix_spawn_file_actions_destroy(&fa);
    free(envp);
    if (err == 0)
        return PTO_OK;
    p->pid = 0;
    return err == ENOENT || err == EACCES || err == ENOEXEC
               ? pto_fail(PTO_ERR_INVALID_ARGUMENT, "chip host: cannot run %s: %s", exe, strerror(err))
               : sys_fail(what, err);
}

/* The arena's fd for the child, above CHILD_ARENA_FD (spawn_setup's order
   needs it there); a close-on-exec duplicate of the caller's when its own is
   not, which the start closes after the spawn: the caller's arena stays as it is. */
static int arena_fd_for_child(const ChipProcessConfig *cfg, int *fd, int *dup_fd)
{
    *fd = *dup_fd = -1;
    if (cfg == NULL || cfg->arena == NULL)
        return PTO_OK;
    if (cfg->arena->base == NULL || cfg->arena->fd < 0)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "chip host: the arena is closed");
    *fd = cfg->arena->fd;
    if (*fd > CHILD_ARENA_FD)
        return PTO_OK;
    if ((*dup_fd = fcntl(*fd, F_DUPFD_CLOEXEC, CHILD_ARENA_FD + 1)) < 0)
        return sys_fail("fcntl(F_DUPFD_CLOEXEC)", errno);
    *fd = *dup_fd;
    return PTO_OK;
}

/* The driver state's fd for the child, above CHILD_STATE_FD (spawn_setup's order
   needs it there): the caller's, or a close-on-exec duplicate the start closes
   after the spawn. -1 without one. */
static int state_fd_for_child(const ChipProcessConfig *cfg, int *fd, int *dup_fd)
{
    *fd = *dup_fd = -1;
    if (cfg == NULL || !cfg->share_driver_state)
        return PTO_OK;
    if (cfg->driver_state_fd < 0 || fcntl(cfg->driver_state_fd, F_GETFD) < 0)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "chip host: driver state fd %d is no open file descriptor",
                        cfg->driver_state_fd);
    *fd = cfg->driver_state_fd;
    if (*fd > CHILD_STATE_FD)
        return PTO_OK;
    if ((*dup_fd = fcntl(*fd, F_DUPFD_CLOEXEC, CHILD_STATE_FD + 1)) < 0)
        return sys_fail("fcntl(F_DUPFD_CLOEXEC)", errno);
    *fd = *dup_fd;
    return PTO_OK;
}

int chip_process_start(const char *exe, ChipProcess *out)
{
    return chip_process_start_with(exe, NULL, out);
}

int chip_process_start_with(const char *exe, const ChipProcessConfig *cfg, ChipProcess *out)
{
    *out = (ChipProcess){ .pidfd = -1, .channel = { .fd = -1 } };
    pthread_mutex_init(&out->lock, NULL);
    if (exe == NULL || access(exe, X_OK) != 0)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "chip host: %s is no executable: %s", exe ? exe : "(null)",
                        strerror(exe ? errno : EINVAL));
    int arena_fd, arena_dup, state_fd = -1, state_dup = -1;
    int rc = arena_fd_for_child(cfg, &arena_fd, &arena_dup);
    if (rc == PTO_OK)
        rc = state_fd_for_child(cfg, &state_fd, &state_dup);
    if (rc == PTO_OK)
        rc = chip_channel_create(&out->channel);
    if (rc == PTO_OK)
        rc = move_off_child_fd(&out->channel);
    if (rc == PTO_OK)
        rc = spawn(exe, cfg, arena_fd, state_fd, out);
    if (arena_dup >= 0) /* the child has its own copy now (or none: the spawn failed) */
        close(arena_dup);
    if (state_dup >= 0)
        close(state_dup);
    if (rc == PTO_OK) {
        out->pidfd = (int)syscall(SYS_pidfd_open, out->pid, 0); /* always close-on-exec */
        if (out->pidfd < 0 && errno != ENOSYS) /* ENOSYS: collect() falls back to waitpid */
            rc = sys_fail("pidfd_open", errno);
    }
    if (rc == PTO_OK) /* it runs once it answers: its arena and channel mapped, its life tied to ours;
                         a child that could not map its arena answers with why */
        rc = chip_process_call(out, CHIP_OP_PING, NULL, 0, NULL, 0, NULL, START_TIMEOUT_MS);
    if (rc == PTO_OK)
        return PTO_OK;

    /* unwind in reverse: the child (killed and collected), its pidfd, the channel */
    if (out->pid > 0 && !out->gone) {
        kill(out->pid, SIGKILL); /* not collected yet: the pid is still ours */
        while (waitpid(out->pid, NULL, 0) < 0 && errno == EINTR) {
        }
    }
    if (out->pidfd >= 0)
        close(out->pidfd);
    chip_channel_close(&out->channel);
    *out = (ChipProcess){ .pidfd = -1, .channel = { .fd = -1 } };
    pthread_mutex_init(&out->lock, NULL);
    return rc;
}

/* ---- calls and stop ----------------------------------------------------------------- */

int chip_process_call_on(ChipProcess *p, ChipChannel *lane, uint32_t op, const void *payload, size_t len,
                         void *reply, size_t reply_cap, size_t *reply_len, uint32_t timeout_ms)
{
    if (p == NULL || p->pid <= 0)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "chip host: no process started");
    if (atomic_load(&p->gone))
        return pto_fail(PTO_ERR_CHIP_CRASHED, "%s", p->death);
    return chip_channel_call(lane, op, payload, len, reply, reply_cap, reply_len, timeout_ms, peer_check, p);
}

int chip_process_call(ChipProcess *p, uint32_t op, const void *payload, size_t len, void *reply, size_t reply_cap,
                      size_t *reply_len, uint32_t timeout_ms)
{
    return chip_process_call_on(p, p == NULL ? NULL : &p->channel, op, payload, len, reply, reply_cap, reply_len,
                                timeout_ms);
}

int chip_process_gone(ChipProcess *p)
{
    return collect(p, 0);
}

int chip_process_kill(ChipProcess *p, int sig)
{
    if (p == NULL || p->pid <= 0)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "chip host: no process started");
    pthread_mutex_lock(&p->lock);
    int err = 0, was_gone = atomic_load(&p->gone);
    if (!was_gone) {
        /* under the lock, not collected: the pid is still ours (the pidfd is anyway) */
        long rc = p->pidfd >= 0 ? syscall(SYS_pidfd_send_signal, p->pidfd, sig, NULL, 0) : kill(p->pid, sig);
        err = rc == 0 ? 0 : errno;
    }
    pthread_mutex_unlock(&p->lock);
    if (was_gone || (err == ESRCH && collect(p, 1))) /* ESRCH: dead, not collected yet */
        return pto_fail(PTO_ERR_CHIP_CRASHED, "%s", p->death);
    if (err != 0)
        return pto_fail(err == EINVAL ? PTO_ERR_INVALID_ARGUMENT : PTO_ERR_FAILED,
                        "chip host: signal %d to pid %d failed: %s", sig, (int)p->pid, strerror(err));
    return PTO_OK;
}

void chip_process_stop(ChipProcess *p, uint32_t grace_ms)
{
    if (p == NULL)
        return;
    if (p->pid > 0 && !p->gone) {
        /* stop never fails, and leaves the caller's last error as it was */
        char saved[PTO_ERROR_MESSAGE_BYTES];
        int saved_code = pto_last_error_code();
        snprintf(saved, sizeof saved, "%s", pto_last_error());
        uint64_t deadline = pto_monotonic_ns() + (uint64_t)grace_ms * 1000000u;
        if (grace_ms > 0 &&
            chip_process_call(p, CHIP_OP_EXIT, NULL, 0, NULL, 0, NULL, grace_ms) == PTO_OK) {
            uint64_t now = pto_monotonic_ns();
            if (now < deadline)
                (void)await_death(p, (uint32_t)((deadline - now + 999999u) / 1000000u));
        }
        if (!collect(p, 0)) {
            kill(p->pid, SIGKILL); /* not collected yet: the pid is still ours */
            (void)collect(p, 1);
        }
        if (saved_code != 0)
            (void)pto_fail(saved_code, "%s", saved);
        else
            pto_clear_error();
    }
    if (p->pidfd >= 0)
        close(p->pidfd);
    chip_channel_close(&p->channel);
    p->pidfd = -1;
}

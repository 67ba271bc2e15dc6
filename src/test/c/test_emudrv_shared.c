/*
 * The emulated driver's state page shared by two processes (pto_emudrv.h,
 * ptorun_emudrv_state_fd): this process spawns itself (its executable) as a
 * child that inherits the page at fd 5 and finds it through
 * PTORUN_EMUDRV_STATE_FD in its environment only, as a chip host does. A fault
 * armed in one process fires once, in the other; the stats count both; the
 * child's counts are given back when it closes its device. A page that is no
 * state (a pipe at fd 5) is refused for a private one, with a warning.
 *
 * The child is this executable: a constructor sees PTO_TEST_EMUDRV_CHILD, runs
 * the child's part and _exits with 0, or the number of the step that failed
 * (its diagnostics on stderr). Parent and child step in turn over two pipes
 * (fds 6: child -> parent, 7: parent -> child).
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ptest.h"
#include "ptorun/pto_driver.h"
#include "ptorun/pto_emudrv.h"
#include "test_emudrv.h"

#define CHILD_ENV "PTO_TEST_EMUDRV_CHILD"
#define TO_PARENT_FD 6
#define FROM_PARENT_FD 7
#define BYTES 4096

extern char **environ;

/* ---- the child ------------------------------------------------------------------------ */

static int child_step(int ok, int step, const char *what)
{
    if (!ok)
        fprintf(stderr, "emudrv child: step %d failed: %s (errno %s)\n", step, what, strerror(errno));
    return ok ? 0 : step;
}

static int tell_parent(void)
{
    char c = 'r';
    return write(TO_PARENT_FD, &c, 1) == 1;
}

static int await_parent(void)
{
    char c;
    return read(FROM_PARENT_FD, &c, 1) == 1;
}

/* share: the parent armed ALLOC; the child's first allocation suffers it, the
   second holds BYTES while the parent looks at the stats; then the child arms
   ALLOC for the parent, gives everything back and exits. */
static int child_share(const Emudrv *d, int (*state_fd)(void), const char *(*warning)(void))
{
    int rc;
    if ((rc = child_step(warning() == NULL, 1, "the inherited page was refused")) != 0 ||
        (rc = child_step(state_fd() == 5, 2, "the state is not the inherited fd 5")) != 0)
        return rc;
    PtoDrvDevice *dev = NULL;
    uint64_t addr = 0;
    if ((rc = child_step(d->api->open_device(0, &dev) == PTO_DRV_OK, 3, "open_device")) != 0)
        return rc;
    if ((rc = child_step(d->api->mem_alloc(dev, BYTES, &addr) == PTO_DRV_ERR_OUT_OF_MEMORY, 4,
                         "the parent's fault did not fire here")) != 0 ||
        (rc = child_step(d->api->mem_alloc(dev, BYTES, &addr) == PTO_DRV_OK, 5, "it fired twice")) != 0 ||
        (rc = child_step(tell_parent() && await_parent(), 6, "the parent went away")) != 0 ||
        (rc = child_step(d->api->mem_free(dev, addr) == PTO_DRV_OK, 7, "mem_free")) != 0 ||
        (rc = child_step(d->inject(PTO_EMU_FAULT_ALLOC, 0) == 0, 8, "inject")) != 0 ||
        (rc = child_step(d->api->close_device(dev) == PTO_DRV_OK, 9, "close_device")) != 0)
        return rc;
    return 0;
}

/* refused: fd 5 is a pipe; the child runs on a private page: the parent's fault does
   not reach it, and the warning says why, once. */
static int child_refused(const Emudrv *d, int (*state_fd)(void), const char *(*warning)(void))
{
    int rc;
    const char *why = warning();
    if ((rc = child_step(why != NULL && strstr(why, PTO_EMUDRV_STATE_FD_ENV) != NULL, 1, "no warning")) != 0 ||
        (rc = child_step(warning() == NULL, 2, "the warning came twice")) != 0 ||
        (rc = child_step(state_fd() >= 0 && state_fd() != 5, 3, "no private page of its own")) != 0)
        return rc;
    PtoDrvDevice *dev = NULL;
    uint64_t addr = 0;
    if ((rc = child_step(d->api->open_device(0, &dev) == PTO_DRV_OK, 4, "open_device")) != 0 ||
        (rc = child_step(d->api->mem_alloc(dev, BYTES, &addr) == PTO_DRV_OK, 5, "the parent's fault fired here")) !=
            0 ||
        (rc = child_step(d->api->mem_free(dev, addr) == PTO_DRV_OK, 6, "mem_free")) != 0 ||
        (rc = child_step(d->api->close_device(dev) == PTO_DRV_OK, 7, "close_device")) != 0)
        return rc;
    return 0;
}

/* hold: a device and an allocation, held until the parent kills the child. */
static int child_hold(const Emudrv *d)
{
    PtoDrvDevice *dev = NULL;
    uint64_t addr = 0;
    int rc;
    if ((rc = child_step(d->api->open_device(0, &dev) == PTO_DRV_OK, 1, "open_device")) != 0 ||
        (rc = child_step(d->api->mem_alloc(dev, BYTES, &addr) == PTO_DRV_OK, 2, "mem_alloc")) != 0 ||
        (rc = child_step(tell_parent(), 3, "the parent went away")) != 0)
        return rc;
    (void)await_parent(); /* killed here */
    return 4;
}

__attribute__((constructor)) static void emudrv_child_main(void)
{
    const char *mode = getenv(CHILD_ENV);
    if (mode == NULL)
        return;
    const Emudrv *d = emudrv();
    int (*state_fd)(void);
    const char *(*warning)(void);
    *(void **)&state_fd = dlsym(d->handle, "ptorun_emudrv_state_fd");
    *(void **)&warning = dlsym(d->handle, "ptorun_emudrv_state_warning");
    int rc = state_fd == NULL || warning == NULL ? 99
             : strcmp(mode, "share") == 0     ? child_share(d, state_fd, warning)
             : strcmp(mode, "hold") == 0      ? child_hold(d)
                                              : child_refused(d, state_fd, warning);
    _exit(rc);
}

/* ---- the parent ----------------------------------------------------------------------- */

typedef struct Child {
    pid_t pid;
    int from_child, to_child;
} Child;

/* Spawns this executable as the child in `mode`, with state_fd at fd 5 and its number in
   the child's environment only; -1 on failure. */
static int spawn_child(const char *mode, int state_fd, Child *c)
{
    int up[2], down[2];
    if (pipe2(up, O_CLOEXEC) != 0 || pipe2(down, O_CLOEXEC) != 0)
        return -1;
    size_t n = 0;
    while (environ[n] != NULL)
        n++;
    char **envp = calloc(n + 3, sizeof *envp);
    if (envp == NULL)
        abort();
    char mode_entry[64], fd_entry[64];
    snprintf(mode_entry, sizeof mode_entry, "%s=%s", CHILD_ENV, mode);
    snprintf(fd_entry, sizeof fd_entry, "%s=5", PTO_EMUDRV_STATE_FD_ENV);
    memcpy(envp, environ, n * sizeof *envp);
    envp[n] = mode_entry;
    envp[n + 1] = fd_entry;
    /* the sources sit above 7, so no dup2 clobbers a later one's */
    int src_state = fcntl(state_fd, F_DUPFD_CLOEXEC, 10), src_up = fcntl(up[1], F_DUPFD_CLOEXEC, 10),
        src_down = fcntl(down[0], F_DUPFD_CLOEXEC, 10);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, src_state, 5);
    posix_spawn_file_actions_adddup2(&fa, src_up, TO_PARENT_FD);
    posix_spawn_file_actions_adddup2(&fa, src_down, FROM_PARENT_FD);
    /* this executable's path (under valgrind /proc/self/exe itself would name valgrind's tool) */
    char self[4096];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    self[len > 0 ? len : 0] = '\0';
    char *argv[] = { "emudrv-child", NULL };
    int err = len > 0 ? posix_spawn(&c->pid, self, &fa, NULL, argv, envp) : ENOENT;
    posix_spawn_file_actions_destroy(&fa);
    free(envp);
    close(src_state);
    close(src_up);
    close(src_down);
    close(up[1]);
    close(down[0]);
    c->from_child = up[0];
    c->to_child = down[1];
    if (err != 0) {
        close(up[0]);
        close(down[1]);
        return -1;
    }
    return 0;
}

/* The child's exit status (its failed step), or -1 when it did not exit. */
static int reap(Child *c)
{
    close(c->from_child);
    close(c->to_child);
    int status = 0;
    while (waitpid(c->pid, &status, 0) < 0 && errno == EINTR) {
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int (*state_fd_fn(void))(void)
{
    int (*fn)(void);
    *(void **)&fn = dlsym(emudrv()->handle, "ptorun_emudrv_state_fd");
    return fn;
}

TEST(emudrv_state_is_shared_with_a_child_process)
{
    int (*state_fd)(void) = state_fd_fn();
    REQUIRE(state_fd != NULL);
    int fd = state_fd();
    REQUIRE(fd >= 0);
    CHECK_EQ_INT(fcntl(fd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
    PtoEmuStats base = stats_now();
    PtoDrvDevice *dev = open_dev(0);
    REQUIRE(dev != NULL);
    PtoEmuStats mine = stats_now();
    CHECK_EQ_INT(emudrv()->inject(PTO_EMU_FAULT_ALLOC, 0), 0);
    Child c;
    REQUIRE(spawn_child("share", fd, &c) == 0);
    char ready;
    int stepped = read(c.from_child, &ready, 1) == 1;
    CHECK(stepped);
    if (stepped) {
        /* the child holds a device and one allocation of BYTES: counted here */
        PtoEmuStats now = stats_now();
        CHECK_EQ_INT(now.devices_open, mine.devices_open + 1);
        CHECK_EQ_INT(now.allocations, mine.allocations + 1);
        CHECK_EQ_INT(now.memory_committed, mine.memory_committed + BYTES);
        /* the fault fired there, once: it is disarmed here too */
        uint64_t addr = 0;
        CHECK_EQ_INT(API->mem_alloc(dev, BYTES, &addr), PTO_DRV_OK);
        CHECK_EQ_INT(API->mem_free(dev, addr), PTO_DRV_OK);
        char go = 'g';
        CHECK(write(c.to_child, &go, 1) == 1);
    }
    CHECK_EQ_INT(reap(&c), 0);
    /* the child gave back what it counted, and armed ALLOC for us */
    CHECK_STATS(stats_now(), mine);
    uint64_t addr = 0;
    CHECK_EQ_INT(API->mem_alloc(dev, BYTES, &addr), PTO_DRV_ERR_OUT_OF_MEMORY);
    CHECK_EQ_INT(API->mem_alloc(dev, BYTES, &addr), PTO_DRV_OK);
    CHECK_EQ_INT(API->mem_free(dev, addr), PTO_DRV_OK);
    CHECK_EQ_INT(API->close_device(dev), PTO_DRV_OK);
    emudrv()->inject(PTO_EMU_FAULT_NONE, 0);
    CHECK_STATS(stats_now(), base);
}

TEST(emudrv_state_refuses_an_fd_that_is_no_state_page)
{
    int p[2];
    REQUIRE(pipe2(p, O_CLOEXEC) == 0);
    PtoEmuStats base = stats_now();
    CHECK_EQ_INT(emudrv()->inject(PTO_EMU_FAULT_ALLOC, 0), 0);
    Child c;
    int spawned = spawn_child("refused", p[0], &c) == 0;
    close(p[0]);
    close(p[1]);
    REQUIRE(spawned);
    CHECK_EQ_INT(reap(&c), 0);
    /* the child's private page counted its device, not ours; our fault is still armed */
    CHECK_STATS(stats_now(), base);
    PtoDrvDevice *dev = open_dev(0);
    REQUIRE(dev != NULL);
    uint64_t addr = 0;
    CHECK_EQ_INT(API->mem_alloc(dev, BYTES, &addr), PTO_DRV_ERR_OUT_OF_MEMORY);
    CHECK_EQ_INT(API->close_device(dev), PTO_DRV_OK);
    emudrv()->inject(PTO_EMU_FAULT_NONE, 0);
    CHECK_STATS(stats_now(), base);
}

TEST(emudrv_state_drops_a_killed_child_once_it_is_collected)
{
    int (*state_fd)(void) = state_fd_fn();
    REQUIRE(state_fd != NULL && state_fd() >= 0);
    PtoEmuStats base = stats_now();
    Child c;
    REQUIRE(spawn_child("hold", state_fd(), &c) == 0);
    char ready;
    int stepped = read(c.from_child, &ready, 1) == 1;
    CHECK(stepped);
    if (stepped) {
        PtoEmuStats now = stats_now();
        CHECK_EQ_INT(now.devices_open, base.devices_open + 1);
        CHECK_EQ_INT(now.allocations, base.allocations + 1);
    }
    kill(c.pid, SIGKILL);
    CHECK_EQ_INT(reap(&c), -1); /* killed: collected, its pid gone */
    CHECK_STATS(stats_now(), base);
}

/* A memfd of the state's size that holds no state (zeros: no magic) is refused as well. */
TEST(emudrv_state_refuses_a_page_without_its_magic)
{
    int fd = memfd_create("not-a-state", MFD_CLOEXEC);
    REQUIRE(fd >= 0);
    REQUIRE(ftruncate(fd, 16384) == 0);
    PtoEmuStats base = stats_now();
    CHECK_EQ_INT(emudrv()->inject(PTO_EMU_FAULT_ALLOC, 0), 0);
    Child c;
    int spawned = spawn_child("refused", fd, &c) == 0;
    close(fd);
    REQUIRE(spawned);
    CHECK_EQ_INT(reap(&c), 0);
    CHECK_STATS(stats_now(), base);
    emudrv()->inject(PTO_EMU_FAULT_NONE, 0);
}

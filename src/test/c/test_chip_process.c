/*
 * The chip host transport (docs/isolation.md): chiphost/chip_channel.h in
 * one process (a thread serves), and chiphost/chip_process.h with the real
 * ptorun-chiphost (PTO_CHIPHOST_EXE, set by the Makefile): round trips,
 * a thousand calls in order, deaths by signal, by SIGKILL while a call
 * waits and by exit, a timeout on a hung child, what stop leaves behind
 * (no child, no fd), an idle child's CPU time, and the child dying with its
 * parent. Waits are on events (the child took the request, a pidfd); no
 * test asserts on timing.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "chiphost/chip_channel.h"
#include "chiphost/chip_ops.h"
#include "chiphost/chip_process.h"
#include "ptest.h"
#include "test_util.h"
#include "util/comm_shm_internal.h"
#include "ptorun/pto_runtime_c_api.h"
#include "util/futex_word.h"
#include "util/last_error.h"
#include "util/spin_wait.h"

#ifndef PTO_CHIPHOST_EXE
#error "PTO_CHIPHOST_EXE: the path of ptorun-chiphost (src/test/c/Makefile sets it)"
#endif

/* Bounds for waits that should end at once; reached only when something is broken. */
#define CALL_BOUND_MS 10000u
#define GONE_BOUND_MS 10000

/* utime + stime of process pid, in clock ticks; -1 when unreadable. */
static long cpu_ticks(pid_t pid)
{
    char path[64], stat[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "re");
    if (f == NULL)
        return -1;
    size_t n = fread(stat, 1, sizeof stat - 1, f);
    fclose(f);
    stat[n] = '\0';
    const char *close = strrchr(stat, ')'); /* the fields follow the command name */
    unsigned long utime, stime;
    if (close == NULL ||
        sscanf(close + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime, &stime) != 2)
        return -1;
    return (long)(utime + stime);
}

/* Blocks this thread for ms without burning CPU: a futex wait on a word nobody wakes. */
static void park_ms(uint32_t ms)
{
    uint32_t never = 0;
    uint64_t end = pto_monotonic_ns() + (uint64_t)ms * 1000000u;
    for (uint64_t now = pto_monotonic_ns(); now < end; now = pto_monotonic_ns())
        pto_futex_wait_ns(&never, 0, end - now);
}

/* Whether process pid is gone within GONE_BOUND_MS: its pidfd turns readable,
   or (no pidfd_open, e.g. under valgrind) /proc says so, looked at every 2 ms. */
static int gone_soon(pid_t pid)
{
    int fd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (fd < 0 && errno == ESRCH)
        return 1;
    if (fd < 0) {
        for (int waited = 0; waited < GONE_BOUND_MS; waited += 2) {
            if (shm_process_exited(pid))
                return 1;
            park_ms(2);
        }
        return shm_process_exited(pid);
    }
    struct pollfd pfd = { .fd = fd, .events = POLLIN };
    int ready = poll(&pfd, 1, GONE_BOUND_MS);
    close(fd);
    return ready == 1;
}

static int not_our_child(pid_t pid)
{
    return waitpid(pid, NULL, WNOHANG) == -1 && errno == ECHILD;
}

static int ping(ChipProcess *p, uint64_t value)
{
    uint64_t back = ~value;
    size_t len = 0;
    int rc = chip_process_call(p, CHIP_OP_PING, &value, sizeof value, &back, sizeof back, &len, CALL_BOUND_MS);
    return rc != PTO_OK ? rc : len == sizeof back && back == value ? PTO_OK : PTO_ERR_FAILED;
}

static int crash_with(ChipProcess *p, int32_t sig)
{
    return chip_process_call(p, CHIP_OP_CRASH, &sig, sizeof sig, NULL, 0, NULL, CALL_BOUND_MS);
}

/* ---- the channel alone: a thread of this process serves ------------------------ */

typedef struct Server {
    ChipChannel ch;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int released;       /* the first request's handler may answer */
    uint32_t served;
} Server;

/* PING with the payload; the first request answers "late" only once released. */
static int32_t server_handle(void *arg, uint32_t op, const void *in, size_t in_len, void *out, size_t *out_len)
{
    Server *s = arg;
    if (s->served++ == 0) {
        pthread_mutex_lock(&s->lock);
        while (!s->released)
            pthread_cond_wait(&s->cond, &s->lock);
        pthread_mutex_unlock(&s->lock);
        memcpy(out, "late", 4);
        *out_len = 4;
        return PTO_OK;
    }
    if (op == CHIP_OP_PING) {
        memcpy(out, in, in_len);
        *out_len = in_len;
    }
    return PTO_OK;
}

static void *server_main(void *arg)
{
    Server *s = arg;
    while (chip_channel_serve_next(&s->ch, server_handle, s) != CHIP_OP_EXIT) {
    }
    return NULL;
}

/* As the peer check of the second call: it runs once that call's request is
   posted, so the first request's answer comes after it, stale. */
static int release_late_answer(void *arg)
{
    Server *s = arg;
    pthread_mutex_lock(&s->lock);
    s->released = 1;
    pthread_cond_signal(&s->cond);
    pthread_mutex_unlock(&s->lock);
    return PTO_OK;
}

TEST(chiphost_channel_ignores_a_stale_answer)
{
    Server s = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };
    ChipChannel parent;
    REQUIRE(chip_channel_create(&parent) == PTO_OK);
    /* the serving side maps the region through its own fd, as the child would */
    int fd = dup(parent.fd);
    REQUIRE(fd >= 0);
    REQUIRE(chip_channel_attach(fd, &s.ch) == PTO_OK);
    REQUIRE(pthread_create(&s.thread, NULL, server_main, &s) == 0);

    char reply[16] = { 0 };
    size_t len = 0;
    CHECK_EQ_INT(chip_channel_call(&parent, CHIP_OP_PING, "one", 3, reply, sizeof reply, &len, 50, NULL, NULL),
                 PTO_ERR_TIMEOUT);
    CHECK_CONTAINS(pto_last_error(), "within 50 ms");
    CHECK_EQ_INT(chip_channel_call(&parent, CHIP_OP_PING, "two", 3, reply, sizeof reply, &len, 0,
                                   release_late_answer, &s),
                 PTO_OK);
    CHECK_EQ_INT(len, 3);
    CHECK(memcmp(reply, "two", 3) == 0);
    /* an answer longer than the buffer: its head, and CAPACITY */
    CHECK_EQ_INT(chip_channel_call(&parent, CHIP_OP_PING, "three", 5, reply, 2, &len, 0, NULL, NULL),
                 PTO_ERR_CAPACITY);
    CHECK_EQ_INT(len, 5);
    CHECK(memcmp(reply, "th", 2) == 0);
    char big[CHIP_CHANNEL_PAYLOAD_BYTES + 1] = { 0 };
    CHECK_EQ_INT(chip_channel_call(&parent, CHIP_OP_PING, big, sizeof big, NULL, 0, NULL, 0, NULL, NULL),
                 PTO_ERR_INVALID_ARGUMENT);

    CHECK_EQ_INT(chip_channel_call(&parent, CHIP_OP_EXIT, NULL, 0, NULL, 0, NULL, 0, NULL, NULL), PTO_OK);
    pthread_join(s.thread, NULL);
    CHECK_EQ_INT(s.served, 4);
    chip_channel_close(&s.ch);
    chip_channel_close(&parent);
}

/* ---- the child process ------------------------------------------------------------ */

TEST(chiphost_ping_round_trip)
{
    ChipProcess p;
    REQUIRE(chip_process_start(PTO_CHIPHOST_EXE, &p) == PTO_OK);
    static unsigned char payload[CHIP_CHANNEL_PAYLOAD_BYTES], reply[CHIP_CHANNEL_PAYLOAD_BYTES];
    for (size_t i = 0; i < sizeof payload; i++)
        payload[i] = (unsigned char)(i * 31u + 7u);
    size_t len = 0;
    CHECK_EQ_INT(chip_process_call(&p, CHIP_OP_PING, payload, sizeof payload, reply, sizeof reply, &len,
                                   CALL_BOUND_MS),
                 PTO_OK);
    CHECK_EQ_INT(len, sizeof payload);
    CHECK(memcmp(reply, payload, sizeof payload) == 0);
    CHECK_EQ_INT(chip_process_call(&p, CHIP_OP_PING, "hi", 2, reply, sizeof reply, &len, CALL_BOUND_MS), PTO_OK);
    CHECK_EQ_INT(len, 2);
    CHECK(memcmp(reply, "hi", 2) == 0);
    CHECK_EQ_INT(chip_process_call(&p, 999, NULL, 0, NULL, 0, NULL, CALL_BOUND_MS), PTO_RUNTIME_ERR_UNSUPPORTED);
    CHECK_EQ_INT(ping(&p, 5), PTO_OK); /* an op it refused leaves it serving */
    chip_process_stop(&p, CHIP_PROCESS_STOP_GRACE_MS);
}

TEST(chiphost_thousand_calls_answered_in_order)
{
    ChipProcess p;
    REQUIRE(chip_process_start(PTO_CHIPHOST_EXE, &p) == PTO_OK);
    int wrong = 0;
    for (uint64_t i = 0; i < 1000; i++)
        if (ping(&p, i * 0x9E3779B97F4A7C15ull + 1) != PTO_OK)
            wrong++;
    CHECK_EQ_INT(wrong, 0);
    CHECK_EQ_INT(p.channel.last_seq, 1001); /* the start's ping, then ours */
    chip_process_stop(&p, CHIP_PROCESS_STOP_GRACE_MS);
}

static void crash_case(int32_t sig)
{
    ChipProcess p;
    REQUIRE(chip_process_start(PTO_CHIPHOST_EXE, &p) == PTO_OK);
    pid_t pid = p.pid;
    char pid_text[32];
    snprintf(pid_text, sizeof pid_text, "pid %d ", (int)pid);
    CHECK_EQ_INT(ping(&p, 1), PTO_OK);
    CHECK_EQ_INT(crash_with(&p, sig), PTO_ERR_CHIP_CRASHED);
    CHECK_CONTAINS(pto_last_error(), strsignal(sig));
    CHECK_CONTAINS(pto_last_error(), pid_text);
    CHECK(not_our_child(pid)); /* collected when found dead */
    CHECK_EQ_INT(ping(&p, 2), PTO_ERR_CHIP_CRASHED);
    CHECK_CONTAINS(pto_last_error(), strsignal(sig));
    CHECK_CONTAINS(pto_last_error(), pid_text);
    chip_process_stop(&p, CHIP_PROCESS_STOP_GRACE_MS);
    CHECK_EQ_INT(ping(&p, 3), PTO_ERR_CHIP_CRASHED);
}

TEST(chiphost_crash_sigsegv_fails_calls)
{
    crash_case(SIGSEGV);
}

TEST(chiphost_crash_sigabrt_fails_calls)
{
    crash_case(SIGABRT);
}

TEST(chiphost_exit_then_calls_fail)
{
    ChipProcess p;
    REQUIRE(chip_process_start(PTO_CHIPHOST_EXE, &p) == PTO_OK);
    CHECK_EQ_INT(chip_process_call(&p, CHIP_OP_EXIT, NULL, 0, NULL, 0, NULL, CALL_BOUND_MS), PTO_OK);
    CHECK(gone_soon(p.pid));
    CHECK_EQ_INT(ping(&p, 1), PTO_ERR_CHIP_CRASHED);
    CHECK_CONTAINS(pto_last_error(), "exited with status 0");
    chip_process_stop(&p, CHIP_PROCESS_STOP_GRACE_MS);
}

typedef struct HungCall {
    ChipProcess *p;
    int rc;
    char message[256];
} HungCall;

static void *hung_call_main(void *arg)
{
    HungCall *h = arg;
    h->rc = chip_process_call(h->p, CHIP_OP_HANG, NULL, 0, NULL, 0, NULL, 0);
    snprintf(h->message, sizeof h->message, "%s", pto_last_error());
    return NULL;
}

TEST(chiphost_killed_while_a_call_waits)
{
    ChipProcess p;
    REQUIRE(chip_process_start(PTO_CHIPHOST_EXE, &p) == PTO_OK);
    HungCall h = { .p = &p, .rc = 1 };
    pthread_t t;
    REQUIRE(pthread_create(&t, NULL, hung_call_main, &h) == 0);
    /* the child holds the HANG request: the call is in flight */
    CHECK_EQ_INT(chip_channel_await_taken(&p.channel, CALL_BOUND_MS), PTO_OK);
    CHECK_EQ_INT(kill(p.pid, SIGKILL), 0);
    pthread_join(t, NULL);
    CHECK_EQ_INT(h.rc, PTO_ERR_CHIP_CRASHED);
    CHECK_CONTAINS(h.message, strsignal(SIGKILL));
    CHECK_EQ_INT(ping(&p, 1), PTO_ERR_CHIP_CRASHED);
    CHECK_CONTAINS(pto_last_error(), strsignal(SIGKILL));
    chip_process_stop(&p, CHIP_PROCESS_STOP_GRACE_MS);
}

TEST(chiphost_timeout_on_a_hung_child)
{
    int fds = test_dir_entries("/proc/self/fd");
    ChipProcess p;
    REQUIRE(chip_process_start(PTO_CHIPHOST_EXE, &p) == PTO_OK);
    pid_t pid = p.pid;
    CHECK_EQ_INT(chip_process_call(&p, CHIP_OP_HANG, NULL, 0, NULL, 0, NULL, 50), PTO_ERR_TIMEOUT);
    CHECK_EQ_INT(chip_process_call(&p, CHIP_OP_PING, NULL, 0, NULL, 0, NULL, 50), PTO_ERR_TIMEOUT);
    /* stop asks, finds no answer within its grace, kills, collects */
    chip_process_stop(&p, 50);
    CHECK(not_our_child(pid));
    CHECK_EQ_INT(test_dir_entries("/proc/self/fd"), fds);
}

TEST(chiphost_stop_collects_the_child_and_its_fds)
{
    int fds = test_dir_entries("/proc/self/fd");
    ChipProcess p;
    REQUIRE(chip_process_start(PTO_CHIPHOST_EXE, &p) == PTO_OK);
    pid_t pid = p.pid;
    CHECK_EQ_INT(ping(&p, 42), PTO_OK);
    CHECK(test_dir_entries("/proc/self/fd") > fds);
    chip_process_stop(&p, CHIP_PROCESS_STOP_GRACE_MS);
    CHECK(not_our_child(pid));
    CHECK_EQ_INT(test_dir_entries("/proc/self/fd"), fds);
    chip_process_stop(&p, CHIP_PROCESS_STOP_GRACE_MS); /* twice is harmless */

    /* a start that fails leaves nothing either */
    CHECK_EQ_INT(chip_process_start("/nonexistent/ptorun-chiphost", &p), PTO_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(chip_process_start("/dev/null", &p), PTO_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(test_dir_entries("/proc/self/fd"), fds);
}

TEST(chiphost_idle_child_burns_no_cpu)
{
    ChipProcess p;
    REQUIRE(chip_process_start(PTO_CHIPHOST_EXE, &p) == PTO_OK);
    CHECK_EQ_INT(ping(&p, 7), PTO_OK);
    long before = cpu_ticks(p.pid);
    park_ms(200);
    long after = cpu_ticks(p.pid);
    CHECK(before >= 0);
    CHECK(after >= before && after - before <= 1);
    CHECK_EQ_INT(ping(&p, 8), PTO_OK);
    chip_process_stop(&p, CHIP_PROCESS_STOP_GRACE_MS);
}

TEST(chiphost_dies_with_its_parent)
{
    int pipefd[2];
    REQUIRE(pipe2(pipefd, O_CLOEXEC) == 0);
    pid_t helper = fork();
    REQUIRE(helper >= 0);
    if (helper == 0) {
        /* the parent of the chip host: starts it, reports its pid, dies at once */
        ChipProcess p;
        pid_t pid = chip_process_start(PTO_CHIPHOST_EXE, &p) == PTO_OK ? p.pid : -1;
        ssize_t n = write(pipefd[1], &pid, sizeof pid);
        _exit(n == (ssize_t)sizeof pid ? 0 : 1);
    }
    close(pipefd[1]);
    pid_t grandchild = -1;
    ssize_t n = read(pipefd[0], &grandchild, sizeof grandchild);
    close(pipefd[0]);
    int status = 0;
    CHECK_EQ_INT(waitpid(helper, &status, 0), helper);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    REQUIRE(n == (ssize_t)sizeof grandchild && grandchild > 0);
    CHECK(gone_soon(grandchild));
}

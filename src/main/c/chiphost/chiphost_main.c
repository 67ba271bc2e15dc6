/*
 * ptorun-chiphost: the child process one chip runs in (docs/isolation.md).
 *
 *   ptorun-chiphost <channel fd> <parent pid>
 *
 * Ties its life to the parent's, maps the chip channel it inherited
 * (chiphost/chip_channel.h) and serves the ops of chiphost/chip_ops.h until
 * CHIP_OP_EXIT. It never prints: a failure to start is its exit status only
 * (StartFailure), which the parent reports.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "chiphost/chip_channel.h"
#include "chiphost/chip_ops.h"
#include "ptorun/pto_runtime_c_api.h"
#include "util/futex_word.h"

/* Exit statuses of a child that could not start serving. */
enum StartFailure {
    START_USAGE = 64,       /* wrong arguments */
    START_LIFE_TIE = 65,    /* prctl(PR_SET_PDEATHSIG) failed */
    START_ORPHAN = 66,      /* the parent died before the tie held */
    START_NO_CHANNEL = 67   /* the fd holds no chip channel */
};

static int parse_int(const char *s, long *out)
{
    char *end;
    errno = 0;
    *out = strtol(s, &end, 10);
    return errno == 0 && end != s && *end == '\0' && *out > 0 && *out <= INT_MAX;
}

/* CHIP_OP_CRASH: dies of the signal asked for, without a core file (a crash on
   request is no bug to keep evidence of). Returns only when the signal did not
   kill (not a valid signal). */
static int32_t crash(const void *in, size_t len)
{
    int32_t sig = 0;
    if (len < sizeof sig)
        return PTO_ERR_INVALID_ARGUMENT;
    memcpy(&sig, in, sizeof sig);
    struct rlimit none = { 0, 0 };
    (void)setrlimit(RLIMIT_CORE, &none);
    sigset_t one;
    sigemptyset(&one);
    if (sigaddset(&one, sig) != 0)
        return PTO_ERR_INVALID_ARGUMENT;
    signal(sig, SIG_DFL);
    sigprocmask(SIG_UNBLOCK, &one, NULL);
    raise(sig);
    return PTO_ERR_INVALID_ARGUMENT;
}

/* CHIP_OP_HANG: parks forever on a word nobody wakes (no CPU burnt). */
static _Noreturn void hang(void)
{
    static uint32_t never;
    for (;;)
        pto_futex_wait(&never, 0);
}

static int32_t serve(void *arg, uint32_t op, const void *in, size_t in_len, void *out, size_t *out_len)
{
    (void)arg;
    switch (op) {
    case CHIP_OP_PING:
        memcpy(out, in, in_len);
        *out_len = in_len;
        return PTO_OK;
    case CHIP_OP_CRASH:
        return crash(in, in_len);
    case CHIP_OP_HANG:
        hang();
    case CHIP_OP_EXIT:
        return PTO_OK;
    default:
        return PTO_RUNTIME_ERR_UNSUPPORTED;
    }
}

int main(int argc, char **argv)
{
    long fd, parent;
    if (argc != 3 || !parse_int(argv[1], &fd) || !parse_int(argv[2], &parent))
        return START_USAGE;
    /* die with the parent; then close the race of a parent that died before
       the tie was made (we were reparented already: getppid differs) */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
        return START_LIFE_TIE;
    if (getppid() != (pid_t)parent)
        return START_ORPHAN;
    ChipChannel ch;
    if (chip_channel_attach((int)fd, &ch) != PTO_OK)
        return START_NO_CHANNEL;
    while (chip_channel_serve_next(&ch, serve, NULL) != CHIP_OP_EXIT) {
    }
    chip_channel_close(&ch);
    return 0;
}

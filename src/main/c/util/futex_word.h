/* Futex calls on a process-shared 32-bit word (no FUTEX_PRIVATE_FLAG: the
 * word may live in memory another process maps). The caller's protocol is the
 * usual one: read the word, re-check its condition, then wait on the value it
 * read, so a wake between the check and the wait makes the wait return at
 * once. Every wait may return early (a wake, a signal, a spurious return):
 * callers re-check in a loop. */
#ifndef PTORUN_FUTEX_WORD_H
#define PTORUN_FUTEX_WORD_H

#include <limits.h>
#include <linux/futex.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Waits while *word == seen, at most ns nanoseconds. */
static inline void pto_futex_wait_ns(uint32_t *word, uint32_t seen, uint64_t ns)
{
    struct timespec ts = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };
    (void)syscall(SYS_futex, word, FUTEX_WAIT, seen, &ts, NULL, 0);
}

/* Waits while *word == seen, without a bound: the waiter costs no CPU until woken. */
static inline void pto_futex_wait(uint32_t *word, uint32_t seen)
{
    (void)syscall(SYS_futex, word, FUTEX_WAIT, seen, NULL, NULL, 0);
}

static inline void pto_futex_wake(uint32_t *word)
{
    (void)syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

#endif

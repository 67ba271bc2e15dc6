/*
 * Shared by the libFuzzer targets (src/test/fuzz/fuzz_*.c, docs/hardening.md).
 *
 * A target checks invariants, not only "no crash": a broken invariant prints
 * what broke and abort()s, which libFuzzer reports as a crash with the input
 * saved as an artifact.
 *
 * PTORUN_FUZZ_EXPECT=accept|refuse: each input must be accepted (refused) by the
 * target's main validation. The Makefile runs every corpus file named valid-*
 * with accept and invalid-* with refuse before fuzzing, so a seed that silently
 * stopped meaning what its name says (an encoder or a decoder changed) fails the
 * run instead of quietly weakening the corpus.
 */
#ifndef PTORUN_FUZZ_COMMON_H
#define PTORUN_FUZZ_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptorun/pto_runtime_c_api.h"

#define FUZZ_CHECK(cond, ...)                                                                  \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            fprintf(stderr, "\nfuzz invariant broken at %s:%d: %s\n  ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                                      \
            fputc('\n', stderr);                                                               \
            abort();                                                                           \
        }                                                                                      \
    } while (0)

/* 0: no expectation, 1: accept, 2: refuse (read once per process). */
static inline int fuzz_expectation(void)
{
    static int expect = -1;
    if (expect < 0) {
        const char *e = getenv("PTORUN_FUZZ_EXPECT");
        expect = e == NULL ? 0 : strcmp(e, "accept") == 0 ? 1 : strcmp(e, "refuse") == 0 ? 2 : 0;
    }
    return expect;
}

/* Applies PTORUN_FUZZ_EXPECT to the outcome of the main validation. */
static inline void fuzz_expect(int accepted, const char *what, const char *message)
{
    int e = fuzz_expectation();
    FUZZ_CHECK(e != 1 || accepted, "PTORUN_FUZZ_EXPECT=accept but %s refused the input: %s", what, message);
    FUZZ_CHECK(e != 2 || !accepted, "PTORUN_FUZZ_EXPECT=refuse but %s accepted the input", what);
}

/* The codes docs/abi.md documents (0 and -1..-15). */
static inline int fuzz_documented_code(int rc)
{
    return rc <= PTO_OK && rc >= PTO_ERR_POISONED;
}

/* Little-endian field readers over the fuzz input (absent bytes read as 0). */
static inline uint64_t fuzz_read_le(const uint8_t *data, size_t size, size_t at, size_t bytes)
{
    uint64_t v = 0;
    for (size_t i = 0; i < bytes; i++)
        if (at + i < size)
            v |= (uint64_t)data[at + i] << (8 * i);
    return v;
}

/* A NUL-terminated, non-empty message within its buffer. */
static inline int fuzz_message_ok(const char *msg, size_t capacity)
{
    return msg[0] != '\0' && memchr(msg, '\0', capacity) != NULL;
}

#endif

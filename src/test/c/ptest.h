/* A tiny native unit-test runner: TEST(name) { ... } registers a test; CHECK*
 * record failures and carry on; the runner prints "N passed, N failed" and exits
 * non-zero when anything failed, which fails the Maven build. */
#ifndef PTORUN_PTEST_H
#define PTORUN_PTEST_H

#include <stdio.h>
#include <string.h>

typedef void (*ptest_fn)(void);
void ptest_register(const char *name, ptest_fn fn);
void ptest_record_failure(const char *file, int line, const char *what);

#define TEST(name)                                                            \
    static void name(void);                                                   \
    __attribute__((constructor)) static void ptest_reg_##name(void)           \
    {                                                                         \
        ptest_register(#name, name);                                          \
    }                                                                         \
    static void name(void)

#define CHECK(cond)                                                           \
    do {                                                                      \
        if (!(cond))                                                          \
            ptest_record_failure(__FILE__, __LINE__, #cond);                  \
    } while (0)

/* A precondition: when it fails the test stops here (what it would go on to wait
   for may never happen). */
#define REQUIRE(cond)                                                         \
    do {                                                                      \
        if (!(cond)) {                                                        \
            ptest_record_failure(__FILE__, __LINE__, "required: " #cond);     \
            return;                                                           \
        }                                                                     \
    } while (0)

#define CHECK_EQ_INT(actual, expected)                                        \
    do {                                                                      \
        long long a_ = (long long)(actual), e_ = (long long)(expected);       \
        if (a_ != e_) {                                                       \
            char m_[256];                                                     \
            snprintf(m_, sizeof m_, "%s == %lld, expected %lld", #actual, a_, e_); \
            ptest_record_failure(__FILE__, __LINE__, m_);                     \
        }                                                                     \
    } while (0)

#define CHECK_CONTAINS(haystack, needle)                                      \
    do {                                                                      \
        const char *h_ = (haystack);                                          \
        if (h_ == NULL || strstr(h_, (needle)) == NULL) {                     \
            char m_[512];                                                     \
            snprintf(m_, sizeof m_, "\"%s\" does not contain \"%s\"", h_ ? h_ : "(null)", (needle)); \
            ptest_record_failure(__FILE__, __LINE__, m_);                     \
        }                                                                     \
    } while (0)

#endif

/* The native log ring (services/native_log.c): oldest first, bounded with
 * drop-oldest and a dropped notice, truncation, and concurrent writers. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "services/native_log.h"
#include "ptest.h"
#include "ptorun/pto_runtime_c_api.h"

TEST(native_log_returns_records_oldest_first)
{
    native_log_reset();
    char buf[NATIVE_LOG_TEXT_BYTES];
    CHECK_EQ_INT(ptorun_log_pending(), 0);
    CHECK_EQ_INT(ptorun_log_next(buf, sizeof buf), 0);
    native_log(PTO_LOG_INFO, "first %d", 1);
    native_log(PTO_LOG_WARN, "second");
    native_log(99, "clamped to trace");
    CHECK_EQ_INT(ptorun_log_pending(), 3);
    CHECK_EQ_INT(ptorun_log_next(buf, sizeof buf), PTO_LOG_INFO);
    CHECK(strcmp(buf, "first 1") == 0);
    CHECK_EQ_INT(ptorun_log_next(buf, sizeof buf), PTO_LOG_WARN);
    CHECK(strcmp(buf, "second") == 0);
    CHECK_EQ_INT(ptorun_log_next(buf, sizeof buf), PTO_LOG_TRACE);
    CHECK_EQ_INT(ptorun_log_pending(), 0);
    CHECK_EQ_INT(ptorun_log_next(buf, sizeof buf), 0);
    CHECK_EQ_INT(ptorun_log_next(NULL, 8), PTO_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(ptorun_log_next(buf, 0), PTO_ERR_INVALID_ARGUMENT);
}

TEST(native_log_truncates_to_the_callers_buffer)
{
    native_log_reset();
    char big[NATIVE_LOG_TEXT_BYTES * 2];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    native_log(PTO_LOG_ERROR, "%s", big);
    native_log(PTO_LOG_ERROR, "abcdef");
    char buf[NATIVE_LOG_TEXT_BYTES];
    CHECK_EQ_INT(ptorun_log_next(buf, sizeof buf), PTO_LOG_ERROR);
    CHECK_EQ_INT(strlen(buf), NATIVE_LOG_TEXT_BYTES - 1);
    char small[4];
    CHECK_EQ_INT(ptorun_log_next(small, sizeof small), PTO_LOG_ERROR);
    CHECK(strcmp(small, "abc") == 0);
}

TEST(native_log_wraps_around_dropping_the_oldest)
{
    native_log_reset();
    char buf[NATIVE_LOG_TEXT_BYTES];
    /* a partial drain first, so head and tail are off the slot boundary */
    for (int i = 0; i < 10; i++)
        native_log(PTO_LOG_INFO, "warmup %d", i);
    for (int i = 0; i < 7; i++)
        CHECK_EQ_INT(ptorun_log_next(buf, sizeof buf), PTO_LOG_INFO);
    const int extra = 45;
    for (int i = 0; i < NATIVE_LOG_RECORDS + extra; i++)
        native_log(PTO_LOG_DEBUG, "record %d", i);
    /* 3 warmups left + 256 + 45 written into 256 places: 48 dropped, plus the notice */
    CHECK_EQ_INT(native_log_dropped_total(), extra + 3);
    CHECK_EQ_INT(ptorun_log_pending(), NATIVE_LOG_RECORDS + 1);
    CHECK_EQ_INT(ptorun_log_next(buf, sizeof buf), PTO_LOG_WARN);
    CHECK(strstr(buf, "48 older records were dropped") != NULL);
    for (int i = 0; i < NATIVE_LOG_RECORDS; i++) {
        char want[32];
        snprintf(want, sizeof want, "record %d", i + extra);
        CHECK_EQ_INT(ptorun_log_next(buf, sizeof buf), PTO_LOG_DEBUG);
        CHECK(strcmp(buf, want) == 0);
    }
    CHECK_EQ_INT(ptorun_log_pending(), 0);
    CHECK_EQ_INT(ptorun_log_next(buf, sizeof buf), 0);
    /* the notice is given once; the total stays */
    native_log(PTO_LOG_INFO, "after");
    CHECK_EQ_INT(ptorun_log_next(buf, sizeof buf), PTO_LOG_INFO);
    CHECK(strcmp(buf, "after") == 0);
    CHECK_EQ_INT(native_log_dropped_total(), extra + 3);
}

#define WRITERS 4
#define PER_WRITER 20000

static void *writer(void *arg)
{
    int id = (int)(intptr_t)arg;
    for (int i = 0; i < PER_WRITER; i++)
        native_log(PTO_LOG_INFO, "w%d %d", id, i);
    return NULL;
}

typedef struct {
    volatile int stop;
    long seen;
    long notices;
    long dropped;
    int bad;
} Reader;

static int read_one(Reader *rd, int last[WRITERS])
{
    char buf[NATIVE_LOG_TEXT_BYTES];
    int level = ptorun_log_next(buf, sizeof buf);
    if (level == 0)
        return 0;
    unsigned long long n;
    int id, i;
    if (level == PTO_LOG_WARN && sscanf(buf, "native log full: %llu", &n) == 1) {
        rd->notices++;
        rd->dropped += (long)n;
    } else if (level == PTO_LOG_INFO && sscanf(buf, "w%d %d", &id, &i) == 2 && id >= 0 && id < WRITERS) {
        if (i <= last[id])
            rd->bad++; /* each writer's records come out in order, never twice */
        last[id] = i;
        rd->seen++;
    } else {
        rd->bad++;
    }
    return 1;
}

static void *reader(void *arg)
{
    Reader *rd = arg;
    int last[WRITERS] = {-1, -1, -1, -1};
    while (!__atomic_load_n(&rd->stop, __ATOMIC_ACQUIRE))
        read_one(rd, last);
    while (read_one(rd, last))
        ;
    return NULL;
}

TEST(native_log_survives_concurrent_writers_and_a_reader)
{
    native_log_reset();
    Reader rd = {0};
    pthread_t r, w[WRITERS];
    CHECK_EQ_INT(pthread_create(&r, NULL, reader, &rd), 0);
    for (int i = 0; i < WRITERS; i++)
        CHECK_EQ_INT(pthread_create(&w[i], NULL, writer, (void *)(intptr_t)i), 0);
    for (int i = 0; i < WRITERS; i++)
        pthread_join(w[i], NULL);
    __atomic_store_n(&rd.stop, 1, __ATOMIC_RELEASE);
    pthread_join(r, NULL);
    CHECK_EQ_INT(rd.bad, 0);
    /* every record was either read or counted as dropped, exactly once */
    CHECK_EQ_INT(rd.seen + rd.dropped, (long)WRITERS * PER_WRITER);
    CHECK_EQ_INT(native_log_dropped_total(), rd.dropped);
    CHECK_EQ_INT(ptorun_log_pending(), 0);
}

#include "native_log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

typedef struct {
    int32_t level;
    char text[NATIVE_LOG_TEXT_BYTES];
} LogRecord;

static struct {
    pthread_mutex_t lock;
    LogRecord records[NATIVE_LOG_RECORDS];
    uint64_t head;          /* records read, ever */
    uint64_t tail;          /* records written, ever */
    uint64_t dropped;       /* dropped since the last notice */
    uint64_t dropped_total; /* dropped ever */
    uint64_t pending;       /* tail - head + (dropped > 0); read without the lock */
} ring = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void publish_pending(void)
{
    __atomic_store_n(&ring.pending, ring.tail - ring.head + (ring.dropped > 0), __ATOMIC_RELEASE);
}

void native_log(int level, const char *fmt, ...)
{
    if (level < PTO_LOG_ERROR)
        level = PTO_LOG_ERROR;
    if (level > PTO_LOG_TRACE)
        level = PTO_LOG_TRACE;
    char text[NATIVE_LOG_TEXT_BYTES];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);

    pthread_mutex_lock(&ring.lock);
    if (ring.tail - ring.head == NATIVE_LOG_RECORDS) {
        ring.head++;
        ring.dropped++;
        ring.dropped_total++;
    }
    LogRecord *r = &ring.records[ring.tail % NATIVE_LOG_RECORDS];
    r->level = level;
    memcpy(r->text, text, sizeof text);
    ring.tail++;
    publish_pending();
    pthread_mutex_unlock(&ring.lock);
}

uint64_t native_log_pending(void)
{
    return __atomic_load_n(&ring.pending, __ATOMIC_ACQUIRE);
}

int native_log_next(char *buf, size_t cap)
{
    if (buf == NULL || cap == 0)
        return PTO_ERR_INVALID_ARGUMENT;
    if (native_log_pending() == 0)
        return 0;
    int level = 0;
    pthread_mutex_lock(&ring.lock);
    if (ring.dropped > 0) {
        snprintf(buf, cap, "native log full: %llu older records were dropped",
                 (unsigned long long)ring.dropped);
        ring.dropped = 0;
        level = PTO_LOG_WARN;
    } else if (ring.head != ring.tail) {
        const LogRecord *r = &ring.records[ring.head % NATIVE_LOG_RECORDS];
        size_t n = strnlen(r->text, sizeof r->text);
        if (n >= cap)
            n = cap - 1;
        memcpy(buf, r->text, n);
        buf[n] = '\0';
        level = r->level;
        ring.head++;
    }
    publish_pending();
    pthread_mutex_unlock(&ring.lock);
    return level;
}

uint64_t native_log_dropped_total(void)
{
    pthread_mutex_lock(&ring.lock);
    uint64_t n = ring.dropped_total;
    pthread_mutex_unlock(&ring.lock);
    return n;
}

void native_log_reset(void)
{
    pthread_mutex_lock(&ring.lock);
    ring.head = ring.tail;
    ring.dropped = 0;
    ring.dropped_total = 0;
    publish_pending();
    pthread_mutex_unlock(&ring.lock);
}

/* The native log: a bounded, thread-safe ring of (level, text) records the Java
 * side drains into SLF4J (logger org.ptorun.native) after each native call. Native
 * code never writes to stdout or stderr; it records here instead.
 *
 * Fixed storage, no allocation: a writer formats into its own stack buffer, then
 * copies the record in under a short lock. When the ring is full the oldest record
 * is dropped and counted; the next drain first yields one WARN record saying how
 * many were dropped. Any thread may write (device threads included): nothing here
 * calls back into Java. */
#ifndef PTORUN_NATIVE_LOG_H
#define PTORUN_NATIVE_LOG_H

#include <stddef.h>
#include <stdint.h>

#include "ptorun/pto_runtime_c_api.h"

/* Records the ring holds before it drops the oldest, and the text bytes of one
 * record (NUL included; longer text is truncated). */
#define NATIVE_LOG_RECORDS 256
#define NATIVE_LOG_TEXT_BYTES 256

/* Records one message at level PTO_LOG_ERROR..PTO_LOG_TRACE. */
void native_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Records waiting to be drained, plus one while a dropped notice is due. */
uint64_t native_log_pending(void);

/* Moves the oldest record into buf (NUL-terminated, truncated to cap) and returns
 * its level; 0 when there is none; PTO_ERR_INVALID_ARGUMENT for a NULL buf or cap 0. */
int native_log_next(char *buf, size_t cap);

/* Records dropped since the process started (the notice resets only its own count). */
uint64_t native_log_dropped_total(void);

/* Empties the ring and forgets the dropped count (tests only). */
void native_log_reset(void);

#endif

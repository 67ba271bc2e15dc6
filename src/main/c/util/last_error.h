/* Per-thread diagnostic message behind simpler_last_error(). Diagnostics only:
 * never used to select resources. */
#ifndef PTORUN_LAST_ERROR_H
#define PTORUN_LAST_ERROR_H

/* Capacity of one message, terminator included (longer ones are truncated). */
#define PTO_ERROR_MESSAGE_BYTES 512

/* Records a formatted message for the calling thread and returns `code`, so a
 * failure path reads `return pto_fail(PTO_ERR_..., "...", ...);`. The current
 * message (pto_last_error()) may itself be one of the arguments. */
int pto_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Clears the calling thread's message (called on entry of every exported call). */
void pto_clear_error(void);

/* The code the calling thread's last pto_fail returned; 0 when none. For the
 * calls whose return cannot carry a code (device_malloc_ctx). */
int pto_last_error_code(void);

/* The calling thread's message; "" when none. */
const char *pto_last_error(void);

#endif

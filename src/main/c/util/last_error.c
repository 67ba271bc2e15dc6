#include "util/last_error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char last_error[PTO_ERROR_MESSAGE_BYTES];
static _Thread_local int last_code;

/* Formats into a local buffer first, so a caller may pass the current message
 * as an argument (e.g. to prefix it with the run's identity). */
int pto_fail(int code, const char *fmt, ...)
{
    char message[PTO_ERROR_MESSAGE_BYTES];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    memcpy(last_error, message, sizeof message);
    last_code = code;
    return code;
}

void pto_clear_error(void)
{
    last_error[0] = '\0';
    last_code = 0;
}

int pto_last_error_code(void)
{
    return last_code;
}

const char *pto_last_error(void)
{
    return last_error;
}

#include "last_error.h"

#include <stdarg.h>
#include <stdio.h>

#define PTO_LAST_ERROR_BYTES 512

static _Thread_local char last_error[PTO_LAST_ERROR_BYTES];

int pto_fail(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return code;
}

void pto_clear_error(void)
{
    last_error[0] = '\0';
}

const char *pto_last_error(void)
{
    return last_error;
}

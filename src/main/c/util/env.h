/* Reading configuration from the environment. */
#ifndef PTORUN_ENV_H
#define PTORUN_ENV_H

#include <stddef.h>

/* The value of `name` as a byte count (decimal, optional K/M/G suffix), or
 * `fallback` when unset or malformed. */
size_t pto_env_size(const char *name, size_t fallback);

#endif

#include "util/env.h"

#include <errno.h>
#include <stdlib.h>

size_t pto_env_size(const char *name, size_t fallback)
{
    const char *text = getenv(name);
    if (text == NULL || *text == '\0')
        return fallback;
    char *end = NULL;
    errno = 0;
    unsigned long long value = strtoull(text, &end, 10);
    if (errno != 0 || end == text)
        return fallback;
    unsigned shift = 0;
    switch (*end) {
    case 'K': case 'k': shift = 10; end++; break;
    case 'M': case 'm': shift = 20; end++; break;
    case 'G': case 'g': shift = 30; end++; break;
    default: break;
    }
    if (*end != '\0' || value > (~0ull >> shift))
        return fallback;
    return (size_t)(value << shift);
}

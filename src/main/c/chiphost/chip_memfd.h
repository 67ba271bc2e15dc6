/*
 * A fresh shared-memory region for a chip host (docs/isolation.md): an
 * anonymous memfd (close-on-exec, no name in the file system), sized and
 * mapped read-write in this process. The channel and the arena both start
 * from one.
 */
#ifndef PTORUN_CHIP_MEMFD_H
#define PTORUN_CHIP_MEMFD_H

#include <stddef.h>

/* `bytes` of zeros mapped at *base, backed by *fd; `what` names the region in
   the PTO_ERR_OUT_OF_MEMORY message of a failure (nothing is left open then). */
int chip_memfd_map(const char *what, const char *name, size_t bytes, int *fd, void **base);

#endif

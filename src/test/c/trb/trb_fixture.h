/* Helpers for the trb native tests: a sim runner of this test binary's arch,
 * callables with a library orchestration (libtrb_test_orch.so) or a program,
 * registration through the trb runtime. */
#ifndef PTORUN_TRB_FIXTURE_H
#define PTORUN_TRB_FIXTURE_H

#include <stdint.h>

#include "platform/runner.h"
#include "runtime/runtime.h"
#include "test_callable.h"

/* The children every test callable has (built-ins). */
enum { FN_VADD = 1, FN_VADDS = 2, FN_VMUL = 3, FN_VCOPY = 4, FN_VFILL = 5, FN_NOOP = 6 };

/* A sim runner with this arch's device images (NULL, message printed, on failure). */
Runner *trb_runner(void);

/* Adds the six children above to a builder. */
void trb_children(TestCallableBuilder *b);

/* A callable with the signature, the six children and the library orchestration
 * `entry` of libtrb_test_orch.so (malloc'd; free() it). */
uint8_t *trb_library_callable(const uint8_t *signature, uint32_t n, const char *entry, uint32_t *size);

/* The bytes of libtrb_test_orch.so (read once, kept). */
const uint8_t *trb_test_orch(uint32_t *size);

/* The bytes of libtrb_test_kernels.so (read once, kept). */
const uint8_t *trb_test_kernels(uint32_t *size);

RuntimeCallable *trb_register(Runner *r, const uint8_t *bytes);
void trb_release(Runner *r, RuntimeCallable *c);

/* Builds the callable `b` holds (freeing the builder) and registers it. */
RuntimeCallable *trb_register_built(Runner *r, TestCallableBuilder *b);

/* n reproducible values in about [-10, 10] (seeded). */
void trb_fill(float *x, uint32_t n, uint32_t seed);

#endif

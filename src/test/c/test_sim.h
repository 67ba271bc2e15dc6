/* Helpers for the native tests of the sim platform and the hbg runtime: the
 * device images built by make, an initialized sim Runner, run plumbing. */
#ifndef PTORUN_TEST_SIM_H
#define PTORUN_TEST_SIM_H

#include <stddef.h>
#include <stdint.h>

#include "services/host_api.h"
#include "platform/runner.h"
#include "ptorun/pto_runtime_c_api.h"
#include "runtime/runtime.h"

/* The a2a3 device images from $PTORUN_LIB_DIR (read once, kept). */
const DeviceImages *test_images(void);

/* The device images of `arch` ("a2a3" or "a5"), read once and kept. */
const DeviceImages *test_images_of(const char *arch);

/* A sim Runner initialized with test_images(); NULL (message printed) on failure. */
Runner *test_sim_runner(void);

/* A zeroed, 64-aligned args block; free() it. */
ChipStorageTaskArgs *test_args(void);

/* A 1-D f32 tensor over a host buffer of n floats. */
ChipTensor test_f32_tensor(float *host, uint32_t n);

/* A zeroed CallConfig with a timeout. */
CallConfig test_config(int32_t timeout_ms);

/* The runtime scratch of `runner`'s `slot` (created on first use, kept), as a
 * device context owns one per slot: test_run binds with it. */
RuntimeSlotScratch *test_slot_scratch(const void *runner, uint32_t slot);

/* bind, submit (with a real LaunchSignal), await the device, collect, unbind. Returns
 * the first error; *exec_rc (if not NULL) gets what the await returned. */
int test_run(Runner *r, const RuntimeCallable *c, uint32_t bank, const ChipStorageTaskArgs *args,
             const CallConfig *cfg, int *exec_rc);

/* test_run with the run's descriptor (NULL = none). */
int test_run_desc(Runner *r, const RuntimeCallable *c, uint32_t bank, const ChipStorageTaskArgs *args,
                  const CallConfig *cfg, const NativeRunDescriptor *desc, int *exec_rc);

/* test_run_desc of a run bound as if prepared beside an executing one
 * (RuntimeRun.overlaps): a refused bind's code is returned as is. */
int test_run_beside(Runner *r, const RuntimeCallable *c, uint32_t bank, const ChipStorageTaskArgs *args,
                    const CallConfig *cfg, int *exec_rc);

/* The bytes of a fixture library ($PTORUN_FIXTURE_DIR/libptorun_fixture_<name>.so),
 * read once and kept; NULL (message printed) when missing. */
const uint8_t *test_fixture(const char *name, uint32_t *size);

/* The process's CPU time (user + system) in microseconds. */
long long test_process_cpu_us(void);

#endif

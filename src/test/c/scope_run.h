/* Runs of a fixture orchestration library (fixtures/fixture_<name>.c) on the
 * runtime of the test binary: native_tests (hbg, a2a3) and trb_tests_<arch>
 * (trb) compile the same cases against it, so one expected dependency-graph
 * text checks both runtimes. The callable's signature: IN x (f32[64]), INOUT y
 * (f32[128]), INOUT j (f32[64]), SCALAR n, SCALAR case, SCALAR report (an
 * int32_t * in the test's memory, sim only); its children: 1 vcopy, 2 tile_add,
 * 3 vadds, 4 noop. */
#ifndef PTORUN_TEST_SCOPE_RUN_H
#define PTORUN_TEST_SCOPE_RUN_H

#include <stdint.h>

#include "platform/runner.h"
#include "runtime/runtime.h"
#include "services/call_config.h"

enum { XN = 64, YN = 128, JN = 64, TILE_FLOATS = 16 };

typedef struct ScopeRun {
    Runner *runner;
    RuntimeCallable *callable;
    float x[XN], y[YN], j[JN];
    int32_t report[2];
    ChipStorageTaskArgs *args;
    CallConfig cfg;
    char dir[64];
} ScopeRun;

/* Registers `entry` of the fixture library with x[i] = i % 4 and scalars n, which. */
void scope_open_fixture(ScopeRun *s, const char *fixture, const char *entry, uint64_t n, uint64_t which);

/* Collects the dependency graph of the next run into a fresh directory. */
void scope_graph(ScopeRun *s);

/* trb: rings of 4 slots, 1 KiB heaps and 4 dependency nodes. */
void tiny_rings(ScopeRun *s);

/* One run (run id 7, epoch 8); its code. */
int scope_run(ScopeRun *s);

/* The run's graph file equals `expected` (then removed with its directory). */
void check_graph(ScopeRun *s, const char *expected, int line);

void scope_close(ScopeRun *s);

/* The local (hbg) / ring 1 (trb) heap high-water mark of slot 0's last run. */
uint64_t heap_peak(ScopeRun *s);

/* Whether t[i] == times * x[i] + plus over a tile. */
int tile_is(const float *t, const float *x, float times, float plus);

#endif

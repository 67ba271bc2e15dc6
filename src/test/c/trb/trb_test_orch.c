/* Orchestration library for the trb native tests (libtrb_test_orch.so): each
 * entry drives the device PtoOrchApi the way a user orchestration would. The
 * func_ids are the tests' (trb_fixture.h). */
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "ptorun/chip_callable.h"
#include "ptorun/pto_orchestration.h"
#include "ptorun/pto_runtime_c_api.h"

#define EXPORT __attribute__((visibility("default")))

enum { FN_VADD = 1, FN_VADDS = 2, FN_VMUL = 3, FN_VCOPY = 4, FN_VFILL = 5, FN_NOOP = 6 };

static PtoTaskParam in(uint64_t addr, uint64_t bytes)
{
    return (PtoTaskParam){ .direction = PTO_ARG_IN, .value = addr, .bytes = bytes };
}

static PtoTaskParam out(uint64_t addr, uint64_t bytes)
{
    return (PtoTaskParam){ .direction = PTO_ARG_OUT, .value = addr, .bytes = bytes };
}

static PtoTaskParam f32(float v)
{
    uint32_t bits;
    memcpy(&bits, &v, sizeof bits);
    return (PtoTaskParam){ .direction = PTO_ARG_SCALAR, .value = bits };
}

static uint64_t addr_of(const ChipStorageTaskArgs *a, int i)
{
    return a->tensors[i].addr;
}

/* The vector chain over (a, b, s, p, q, r, f): f = (a+b+1)*(a+b+2)+(a+b). */
EXPORT int trb_orch_chain(const PtoOrchApi *api, void *orch, const ChipStorageTaskArgs *args)
{
    uint64_t n = args->tensors[0].size;
    uint64_t a = addr_of(args, 0), b = addr_of(args, 1), s = addr_of(args, 2), p = addr_of(args, 3),
             q = addr_of(args, 4), r = addr_of(args, 5), f = addr_of(args, 6);
    PtoTaskParam t0[] = { in(a, n), in(b, n), out(s, n) };
    PtoTaskParam t1[] = { in(s, n), out(p, n), f32(1.0f) };
    PtoTaskParam t2[] = { in(s, n), out(q, n), f32(2.0f) };
    PtoTaskParam t3[] = { in(p, n), in(q, n), out(r, n) };
    PtoTaskParam t4[] = { in(r, n), in(s, n), out(f, n) };
    int rc;
    if ((rc = api->submit(orch, FN_VADD, t0, 3)) != 0 || (rc = api->submit(orch, FN_VADDS, t1, 3)) != 0 ||
        (rc = api->submit(orch, FN_VADDS, t2, 3)) != 0 || (rc = api->submit(orch, FN_VMUL, t3, 3)) != 0 ||
        (rc = api->submit(orch, FN_VADD, t4, 3)) != 0)
        return rc;
    return 0;
}

/* Tensor 0 = x, T tiles of scalar[1] bytes; scalar[0] = iterations. Each
 * iteration adds 1 to tile (i % T): in place (scalar[2] == 0), or through a
 * local of the tile's size inside a scope (copy in, add back). */
EXPORT int trb_orch_tiles(const PtoOrchApi *api, void *orch, const ChipStorageTaskArgs *args)
{
    uint64_t iterations = args->scalars[0], tile = args->scalars[1], scoped = args->scalars[2];
    uint64_t x = addr_of(args, 0), tiles = args->tensors[0].size / tile;
    for (uint64_t i = 0; i < iterations; i++) {
        uint64_t at = x + (i % tiles) * tile;
        int rc;
        if (!scoped) {
            PtoTaskParam t[] = { in(at, tile), out(at, tile), f32(1.0f) };
            if ((rc = api->submit(orch, FN_VADDS, t, 3)) != 0)
                return rc;
            continue;
        }
        if ((rc = api->scope_begin(orch)) != 0)
            return rc;
        uint64_t local = api->alloc_tensor(orch, tile);
        if (local == 0)
            return PTO_ERR_OUT_OF_MEMORY;
        PtoTaskParam copy[] = { in(at, tile), out(local, tile) };
        PtoTaskParam add[] = { in(local, tile), out(at, tile), f32(1.0f) };
        if ((rc = api->submit(orch, FN_VCOPY, copy, 2)) != 0 || (rc = api->submit(orch, FN_VADDS, add, 3)) != 0 ||
            (rc = api->scope_end(orch)) != 0)
            return rc;
    }
    return 0;
}

/* Tensor 0 = an int32 count (read on the device), tensor 1 = x: count tasks
 * each add 1 to all of x. */
EXPORT int trb_orch_read_control(const PtoOrchApi *api, void *orch, const ChipStorageTaskArgs *args)
{
    int32_t count = 0;
    int rc = api->read_tensor(orch, addr_of(args, 0), &count, sizeof count);
    if (rc != 0)
        return rc;
    uint64_t x = addr_of(args, 1), n = args->tensors[1].size;
    for (int32_t i = 0; i < count; i++) {
        PtoTaskParam t[] = { in(x, n), out(x, n), f32(1.0f) };
        if ((rc = api->submit(orch, FN_VADDS, t, 3)) != 0)
            return rc;
    }
    return 0;
}

/* Tensor 0 = x, tensor 1 = y (8 bytes at least each): fills x with 7, reads
 * x[0] (waiting for the fill), fills y with what it read plus 1, then writes 3
 * into x[1] directly. */
EXPORT int trb_orch_read_after_write(const PtoOrchApi *api, void *orch, const ChipStorageTaskArgs *args)
{
    uint64_t x = addr_of(args, 0), y = addr_of(args, 1);
    PtoTaskParam fill[] = { out(x, args->tensors[0].size), f32(7.0f) };
    int rc = api->submit(orch, FN_VFILL, fill, 2);
    if (rc != 0)
        return rc;
    float seen = 0;
    if ((rc = api->read_tensor(orch, x, &seen, sizeof seen)) != 0)
        return rc;
    PtoTaskParam fill_y[] = { out(y, args->tensors[1].size), f32(seen + 1.0f) };
    if ((rc = api->submit(orch, FN_VFILL, fill_y, 2)) != 0)
        return rc;
    float three = 3.0f;
    return api->write_tensor(orch, x + sizeof(float), &three, sizeof three);
}

/* scalar[0] = k: k tasks fill one f32 each of x, then one task copies all k
 * of them to y (k producers). */
EXPORT int trb_orch_fan_in(const PtoOrchApi *api, void *orch, const ChipStorageTaskArgs *args)
{
    uint64_t k = args->scalars[0], x = addr_of(args, 0), y = addr_of(args, 1);
    int rc;
    for (uint64_t i = 0; i < k; i++) {
        PtoTaskParam t[] = { out(x + 4 * i, 4), f32((float)i) };
        if ((rc = api->submit(orch, FN_VFILL, t, 2)) != 0)
            return rc;
    }
    PtoTaskParam c[] = { in(x, 4 * k), out(y, 4 * k) };
    return api->submit(orch, FN_VCOPY, c, 2);
}

/* alloc_tensor(scalar[0]) inside scalar[1] nested scopes; returns its failure
   unless scalar[2] says to ignore it. */
EXPORT int trb_orch_alloc(const PtoOrchApi *api, void *orch, const ChipStorageTaskArgs *args)
{
    int rc;
    for (uint64_t d = 0; d < args->scalars[1]; d++)
        if ((rc = api->scope_begin(orch)) != 0)
            return rc;
    if (api->alloc_tensor(orch, args->scalars[0]) == 0 && !args->scalars[2])
        return PTO_ERR_OUT_OF_MEMORY;
    for (uint64_t d = 0; d < args->scalars[1]; d++)
        if ((rc = api->scope_end(orch)) != 0 && !args->scalars[2])
            return rc;
    return 0;
}

/* scalar[0] noop tasks, no parameters. */
EXPORT int trb_orch_noops(const PtoOrchApi *api, void *orch, const ChipStorageTaskArgs *args)
{
    for (uint64_t i = 0; i < args->scalars[0]; i++) {
        int rc = api->submit(orch, FN_NOOP, NULL, 0);
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* Fills x, then a vadds whose input view is smaller than its output (the
 * kernel refuses: fault), then keeps submitting until submit fails. */
EXPORT int trb_orch_fault(const PtoOrchApi *api, void *orch, const ChipStorageTaskArgs *args)
{
    uint64_t x = addr_of(args, 0), y = addr_of(args, 1), n = args->tensors[0].size;
    PtoTaskParam fill[] = { out(x, n), f32(1.0f) };
    PtoTaskParam bad[] = { in(x, 4), out(y, n), f32(1.0f) };
    int rc;
    if ((rc = api->submit(orch, FN_VFILL, fill, 2)) != 0 || (rc = api->submit(orch, FN_VADDS, bad, 3)) != 0)
        return rc;
    for (int i = 0; i < 100000; i++) {
        PtoTaskParam after[] = { in(y, n), out(y, n), f32(1.0f) };
        if ((rc = api->submit(orch, FN_VADDS, after, 3)) != 0)
            return rc;
    }
    return 0;
}

EXPORT int trb_orch_nothing(const PtoOrchApi *api, void *orch, const ChipStorageTaskArgs *args)
{
    (void)api, (void)orch, (void)args;
    return 0;
}

EXPORT int trb_orch_returns_7(const PtoOrchApi *api, void *orch, const ChipStorageTaskArgs *args)
{
    (void)api, (void)orch, (void)args;
    return 7;
}

EXPORT int trb_orch_unbalanced(const PtoOrchApi *api, void *orch, const ChipStorageTaskArgs *args)
{
    (void)args;
    return api->scope_begin(orch);
}

/* A view of memory that is no run tensor: refused. */
EXPORT int trb_orch_stray_view(const PtoOrchApi *api, void *orch, const ChipStorageTaskArgs *args)
{
    (void)args;
    static float elsewhere[16];
    PtoTaskParam t[] = { out((uint64_t)(uintptr_t)elsewhere, sizeof elsewhere), f32(1.0f) };
    return api->submit(orch, FN_VFILL, t, 2);
}

/* The orchestrator's thread, as trb_thread_id reports a kernel's. */
static uint32_t this_thread(void)
{
    return (uint32_t)syscall(SYS_gettid);
}

enum { FN_THREAD_ID = 21, FN_MEET = 22 };

/* Tensors (OUT kernel, OUT orchestrator), 4 bytes each; scalars (code, ms).
 * Writes its own thread id into the second, submits one trb_thread_id task
 * (returning `code`) writing the first, then keeps orchestrating (sleeps) for
 * ms milliseconds without another api call. */
EXPORT int trb_orch_lone(const PtoOrchApi *api, void *orch, const ChipStorageTaskArgs *args)
{
    uint32_t me = this_thread();
    int rc = api->write_tensor(orch, addr_of(args, 1), &me, sizeof me);
    PtoTaskParam p[] = { out(addr_of(args, 0), 4), { .direction = PTO_ARG_SCALAR, .value = args->scalars[0] } };
    if (rc != 0 || (rc = api->submit(orch, FN_THREAD_ID, p, 2)) != 0)
        return rc;
    struct timespec t = { (time_t)(args->scalars[1] / 1000), (long)(args->scalars[1] % 1000) * 1000000L };
    while (nanosleep(&t, &t) != 0)
        ;
    return 0;
}

/* Tensor (OUT ids, 4 bytes per task); scalars (group, n): n independent
 * trb_meet tasks of the group, all ready at once, that return only when all n
 * run at the same time. */
EXPORT int trb_orch_meet(const PtoOrchApi *api, void *orch, const ChipStorageTaskArgs *args)
{
    for (uint64_t i = 0; i < args->scalars[1]; i++) {
        PtoTaskParam p[] = { out(addr_of(args, 0) + 4 * i, 4), { .direction = PTO_ARG_SCALAR, .value = args->scalars[0] },
                             { .direction = PTO_ARG_SCALAR, .value = args->scalars[1] } };
        int rc = api->submit(orch, FN_MEET, p, 3);
        if (rc != 0)
            return rc;
    }
    return 0;
}

/*
 * Fault injection and accounting of the emulated driver (pto_emudrv.h).
 * Each fault kind has its own one-shot arming: a countdown of calls that could
 * suffer it; the call that finds the countdown at zero suffers it and disarms
 * it. The fast path (nothing armed) is one relaxed atomic load.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "emudrv/emudrv.h"
#include "ptorun/pto_export.h"

#define FAULT_KINDS (PTO_EMU_FAULT_PEER_LOST + 1)

EmuCounters emu_counters;

static pthread_mutex_t fault_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int faults_armed;             /* how many kinds are armed */
static int armed[FAULT_KINDS];              /* fault_lock */
static int calls_left[FAULT_KINDS];         /* fault_lock: calls to let pass first */

int emu_fault_hit(PtoEmuFault kind)
{
    if (atomic_load_explicit(&faults_armed, memory_order_relaxed) == 0)
        return 0;
    int hit = 0;
    pthread_mutex_lock(&fault_lock);
    if (armed[kind]) {
        if (calls_left[kind] == 0) {
            armed[kind] = 0;
            atomic_fetch_sub(&faults_armed, 1);
            hit = 1;
        } else {
            calls_left[kind]--;
        }
    }
    pthread_mutex_unlock(&fault_lock);
    return hit;
}

PTO_EXPORT int ptorun_emudrv_inject(int kind, int after_n_calls)
{
    if (kind < PTO_EMU_FAULT_NONE || kind > PTO_EMU_FAULT_PEER_LOST || after_n_calls < 0)
        return -1;
    pthread_mutex_lock(&fault_lock);
    if (kind == PTO_EMU_FAULT_NONE) {
        for (int k = 0; k < FAULT_KINDS; k++)
            armed[k] = 0;
        atomic_store(&faults_armed, 0);
    } else {
        if (!armed[kind])
            atomic_fetch_add(&faults_armed, 1);
        armed[kind] = 1;
        calls_left[kind] = after_n_calls;
    }
    pthread_mutex_unlock(&fault_lock);
    return 0;
}

PTO_EXPORT void ptorun_emudrv_stats(PtoEmuStats *out)
{
    if (out == NULL)
        return;
    out->devices_open = atomic_load(&emu_counters.devices_open);
    out->memory_committed = atomic_load(&emu_counters.memory_committed);
    out->allocations = atomic_load(&emu_counters.allocations);
    out->streams = atomic_load(&emu_counters.streams);
    out->images = atomic_load(&emu_counters.images);
    out->host_registrations = atomic_load(&emu_counters.host_registrations);
    out->threads = atomic_load(&emu_counters.threads);
    out->comm_ranks = atomic_load(&emu_counters.comm_ranks);
    out->comm_window_sets = atomic_load(&emu_counters.comm_window_sets);
}

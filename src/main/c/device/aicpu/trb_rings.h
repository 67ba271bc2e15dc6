/*
 * The trb rings (one per scope depth; depth > 3 uses ring 3), each sized by
 * the run's CallConfig and laid out in the shared runtime image
 * (device/pto_trb_abi.h):
 *  - the task window: a task takes the next slot of its ring; slots retire in
 *    order as their tasks finish;
 *  - the dependency pool: one node per (producer still running, consumer)
 *    edge, in the consumer's ring, freed when the producer finishes;
 *  - the heap: alloc_tensor carves the current scope's ring heap; a scope's
 *    allocations are freed when it ends and every task submitted while it was
 *    open has finished (deeper scopes on ring 3 free with their depth-3 scope);
 *  - the view pool: the kernel views of the tasks that keep theirs, one block
 *    of arg_count views per such task, taken in submission order and freed as
 *    the tasks retire (a ring buffer: a block never wraps, the pool's tail end
 *    is skipped instead).
 *
 * A ring is guarded by aicpu_device.lock, except retire_local and view_tail,
 * which the orchestrator reads unlocked (published with release ordering), and
 * a slot's `state` (below).
 */
#ifndef PTORUN_TRB_RINGS_H
#define PTORUN_TRB_RINGS_H

#include <stdint.h>

#include "device/pto_trb_abi.h"

#define TRB_RELEASE_RECORDS 64u

enum { TASK_PENDING = 0, TASK_READY = 1, TASK_RUNNING = 2, TASK_COMPLETED = 3 };

/* The heap a scope holds on its ring, freed once it has ended and every task
   submitted while it was open has finished. */
typedef struct TrbRelease {
    uint64_t bytes;           /* heap bytes it consumed, wrap-around skips included */
    uint64_t pending;         /* tasks submitted while it was open, not finished */
    int ended;
} TrbRelease;

typedef struct TrbRing {
    PtoTrbSlot *slots;
    uint64_t window;          /* power of two */
    PtoTrbDepNode *nodes;
    uint64_t node_count, node_fresh, node_free_head, nodes_in_use;
    uint8_t *heap;
    uint64_t heap_bytes, heap_top, heap_used;
    uint64_t heap_peak;       /* the highest heap_used of the run (PtoTrbWork.heap_peak) */
    PtoTensorView *views;
    uint64_t view_pool;       /* views the pool holds */
    uint64_t view_head;       /* positions taken (monotonic; index = position % view_pool) */
    uint64_t view_tail;       /* positions freed; read unlocked by the orchestrator */
    uint64_t next_local;      /* tasks submitted to the ring */
    uint64_t retire_local;    /* oldest task not finished; read unlocked by the orchestrator */
    TrbRelease releases[TRB_RELEASE_RECORDS];
    uint32_t release_head, release_count;
    int32_t open_release;     /* the open scope's record, -1 none */
} TrbRing;

/* A task's state is written under the lock and read without it by the
   orchestrator: COMPLETED is published with release ordering, so a reader that
   sees it also sees the kernel's writes. */
static inline uint32_t trb_task_state(const PtoTrbSlot *s)
{
    return __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
}

static inline void trb_set_task_state(PtoTrbSlot *s, uint32_t state)
{
    __atomic_store_n(&s->state, state, __ATOMIC_RELEASE);
}

static inline uint32_t trb_ring_of_depth(uint32_t depth)
{
    return depth < PTO_TRB_RINGS ? depth : PTO_TRB_RINGS - 1;
}

/* Whether `count` elements of `elem` bytes at `offset` (8-aligned) lie inside `limit` bytes. */
int trb_region_fits(uint64_t offset, uint64_t count, uint64_t elem, uint64_t limit);

/* Checks a ring's layout against the image and points r at it (empty). */
int trb_ring_bind(TrbRing *r, const PtoTrbRingLayout *l, const PtoTrbImage *img);

/* Whether the task window has a free slot (unlocked: the orchestrator's view). */
int trb_ring_window_has_room(const TrbRing *r);

/* Advances retire_local past the leading finished tasks (freeing their views). */
void trb_ring_retire(TrbRing *r);

/* A dependency node: ((ring << 32) | index + 1). */
uint64_t trb_ring_take_node(TrbRing *r, uint32_t ring);
void trb_ring_free_node(TrbRing *r, uint64_t node_ref);
PtoTrbDepNode *trb_ring_node(TrbRing *r, uint64_t node_ref);

/* Whether a block of n (<= PTO_MAX_TASK_PARAMS) views fits the view pool now
   (unlocked: the orchestrator's view); taking it: its first index. */
int trb_ring_views_fit(const TrbRing *r, uint32_t n);
uint64_t trb_ring_take_views(TrbRing *r, uint32_t n);

uint64_t trb_ring_heap_addr(const TrbRing *r, uint64_t offset);

/* The largest piece the heap can offer while only `kept` bytes (the newest,
   ending at heap_top) stay allocated. */
uint64_t trb_ring_largest_piece(const TrbRing *r, uint64_t kept);

/* Carves `bytes` (aligned) from the heap; returns the bytes consumed
   (wrap-around skip included) or 0 when it does not fit now. */
uint64_t trb_ring_heap_take(TrbRing *r, uint64_t bytes, uint64_t *offset);

/* Frees the heap of every leading record that has ended with all its tasks finished. */
void trb_ring_release_heap(TrbRing *r);

#endif

/*
 * The trb rings' accounting (trb_rings.h): task window, dependency pool, heap
 * and its scope release records.
 */
#include "device/aicpu/trb_rings.h"

int trb_region_fits(uint64_t offset, uint64_t count, uint64_t elem, uint64_t limit)
{
    return offset % 8 == 0 && offset <= limit && count <= (limit - offset) / elem;
}

int trb_ring_bind(TrbRing *r, const PtoTrbRingLayout *l, const PtoTrbImage *img)
{
    if (l->task_window < 4 || (l->task_window & (l->task_window - 1)) != 0 || l->dep_pool < 1 ||
        l->dep_pool > UINT32_MAX || l->heap_bytes < PTO_TRB_HEAP_ALIGN || l->view_pool < pto_trb_min_view_pool() ||
        l->view_pool >= UINT32_MAX || !trb_region_fits(l->views_offset, l->view_pool, sizeof(PtoTensorView), img->sm_bytes) ||
        !trb_region_fits(l->slots_offset, l->task_window, sizeof(PtoTrbSlot), img->sm_bytes) ||
        !trb_region_fits(l->nodes_offset, l->dep_pool, sizeof(PtoTrbDepNode), img->sm_bytes) ||
        l->heap_offset % PTO_TRB_HEAP_ALIGN != 0 || l->heap_offset > img->heap_bytes ||
        l->heap_bytes > img->heap_bytes - l->heap_offset)
        return 0;
    uint8_t *sm = (uint8_t *)(uintptr_t)img->sm_dev;
    uint8_t *heap = (uint8_t *)(uintptr_t)img->heap_dev;
    *r = (TrbRing){
        .slots = (PtoTrbSlot *)(sm + l->slots_offset),
        .window = l->task_window,
        .nodes = (PtoTrbDepNode *)(sm + l->nodes_offset),
        .node_count = l->dep_pool,
        .heap = heap + l->heap_offset,
        .heap_bytes = l->heap_bytes,
        .views = (PtoTensorView *)(sm + l->views_offset),
        .view_pool = l->view_pool,
        .open_release = -1,
    };
    return 1;
}

/* ---- task window -------------------------------------------------------------------- */

int trb_ring_window_has_room(const TrbRing *r)
{
    return r->next_local - __atomic_load_n(&r->retire_local, __ATOMIC_ACQUIRE) < r->window;
}

void trb_ring_retire(TrbRing *r)
{
    uint64_t local = r->retire_local, view_tail = r->view_tail;
    for (; local < r->next_local; local++) {
        const PtoTrbSlot *s = &r->slots[local & (r->window - 1)];
        if (trb_task_state(s) != TASK_COMPLETED)
            break;
        view_tail = s->view_end;
    }
    __atomic_store_n(&r->view_tail, view_tail, __ATOMIC_RELEASE);
    __atomic_store_n(&r->retire_local, local, __ATOMIC_RELEASE);
}

/* ---- view pool ---------------------------------------------------------------------- */

/* Positions a block of n views starting at `head` skips so it does not wrap. */
static uint64_t view_skip(const TrbRing *r, uint64_t head, uint32_t n)
{
    uint64_t at = head % r->view_pool;
    return at + n > r->view_pool ? r->view_pool - at : 0;
}

int trb_ring_views_fit(const TrbRing *r, uint32_t n)
{
    uint64_t tail = __atomic_load_n(&r->view_tail, __ATOMIC_ACQUIRE);
    return r->view_head + view_skip(r, r->view_head, n) + n - tail <= r->view_pool;
}

uint64_t trb_ring_take_views(TrbRing *r, uint32_t n)
{
    r->view_head += view_skip(r, r->view_head, n);
    uint64_t first = r->view_head % r->view_pool;
    r->view_head += n;
    return first;
}

/* ---- dependency pool ---------------------------------------------------------------- */

PtoTrbDepNode *trb_ring_node(TrbRing *r, uint64_t node_ref)
{
    return &r->nodes[(node_ref & UINT32_MAX) - 1];
}

uint64_t trb_ring_take_node(TrbRing *r, uint32_t ring)
{
    uint64_t ref;
    if (r->node_free_head != 0) {
        ref = r->node_free_head;
        r->node_free_head = trb_ring_node(r, ref)->next;
    } else {
        ref = ((uint64_t)ring << 32) | ++r->node_fresh;
    }
    r->nodes_in_use++;
    return ref;
}

void trb_ring_free_node(TrbRing *r, uint64_t node_ref)
{
    trb_ring_node(r, node_ref)->next = r->node_free_head;
    r->node_free_head = node_ref;
    r->nodes_in_use--;
}

/* ---- heap --------------------------------------------------------------------------- */

uint64_t trb_ring_heap_addr(const TrbRing *r, uint64_t offset)
{
    return (uint64_t)(uintptr_t)r->heap + offset;
}

uint64_t trb_ring_largest_piece(const TrbRing *r, uint64_t kept)
{
    if (kept == 0)
        return r->heap_bytes;
    if (kept <= r->heap_top) {
        uint64_t tail = r->heap_top - kept;
        uint64_t end = r->heap_bytes - r->heap_top;
        return end > tail ? end : tail;
    }
    return r->heap_bytes - kept;
}

/* Carves and books the high-water mark. */
static uint64_t heap_take(TrbRing *r, uint64_t bytes, uint64_t *offset);

uint64_t trb_ring_heap_take(TrbRing *r, uint64_t bytes, uint64_t *offset)
{
    uint64_t consumed = heap_take(r, bytes, offset);
    if (r->heap_used > r->heap_peak)
        r->heap_peak = r->heap_used;
    return consumed;
}

static uint64_t heap_take(TrbRing *r, uint64_t bytes, uint64_t *offset)
{
    uint64_t h = r->heap_bytes;
    if (r->heap_used == 0)
        r->heap_top = 0;
    if (r->heap_used <= r->heap_top) { /* live bytes [top - used, top) */
        if (h - r->heap_top >= bytes) {
            *offset = r->heap_top;
            r->heap_top += bytes;
            r->heap_used += bytes;
            return bytes;
        }
        if (r->heap_top - r->heap_used >= bytes) {
            uint64_t consumed = h - r->heap_top + bytes;
            *offset = 0;
            r->heap_top = bytes;
            r->heap_used += consumed;
            return consumed;
        }
        return 0;
    }
    if (h - r->heap_used >= bytes) { /* live bytes wrap: free is [top, top + h - used) */
        *offset = r->heap_top;
        r->heap_top += bytes;
        r->heap_used += bytes;
        return bytes;
    }
    return 0;
}

void trb_ring_release_heap(TrbRing *r)
{
    while (r->release_count > 0) {
        TrbRelease *rec = &r->releases[r->release_head];
        if (!rec->ended || rec->pending > 0)
            return;
        r->heap_used -= rec->bytes;
        r->release_head = (r->release_head + 1) % TRB_RELEASE_RECORDS;
        r->release_count--;
    }
}

/*
 * The trb runtime image: bank 0's three arenas hold it. The runtime arena
 * holds the PtoTrbImage header (the layout, with the other two arenas'
 * device addresses wired in); GM shared memory holds the rings' task slots and
 * dependency pools, the ready queues, the tensor map and the orchestrator's
 * scratch; the GM heap holds one heap per ring. The device resets whatever it
 * uses at the start of every run, so the image depends on the sizing alone and
 * is built once per sizing: the prebuilt cache remembers the last one.
 *
 * While a run executes the device writes all of GM shared memory's regions and
 * the ring heaps (the header alone is only read), so nothing may rebuild the
 * image under it: a successor prepared meanwhile (may_build 0) uses the image
 * as it is when its sizing is the cached one, and is refused with
 * PTO_ERR_OVERLAP_NOT_NOW otherwise. Its own launch comes after the
 * predecessor is finalized, and the device resets what it uses then.
 */
#include "runtime/trb/trb_image.h"

#include <stdio.h>
#include <string.h>

#include "services/call_config.h"
#include "format/chip_callable.h"
#include "util/last_error.h"

#define ALIGN64(x) (((x) + 63u) & ~(uint64_t)63u)
/* An arena no bigger than this: sizes stay far from size_t overflow. */
#define TRB_MAX_ARENA_BYTES ((uint64_t)1 << 46)

void trb_sizing_of(const CallConfig *cfg, TrbSizing *s)
{
    static const CallConfig defaults;
    if (cfg == NULL)
        cfg = &defaults;
    for (int r = 0; r < PTO_TRB_RINGS; r++) {
        s->task_window[r] = call_config_ring_task_window(cfg, r);
        s->heap[r] = call_config_ring_heap(cfg, r);
        s->dep_pool[r] = call_config_ring_dep_pool(cfg, r);
    }
}

static void sizing_key(const TrbSizing *s, uint8_t key[TRB_SIZING_KEY_BYTES])
{
    for (int r = 0; r < PTO_TRB_RINGS; r++) {
        uint64_t triple[3] = { s->task_window[r], s->heap[r], s->dep_pool[r] };
        for (int f = 0; f < 3; f++)
            for (int b = 0; b < 8; b++)
                key[(r * 3 + f) * 8 + b] = (uint8_t)(triple[f] >> (8 * b));
    }
}

/* Reserves `count` elements of `elem` bytes at *offset (64-aligned); 0 on overflow. */
static int reserve(uint64_t *offset, uint64_t count, uint64_t elem, uint64_t *at)
{
    uint64_t bytes;
    if (__builtin_mul_overflow(count, elem, &bytes) || bytes > TRB_MAX_ARENA_BYTES ||
        *offset > TRB_MAX_ARENA_BYTES - bytes)
        return 0;
    *at = *offset;
    *offset = ALIGN64(*offset + bytes);
    return 1;
}

/* The layout of `s` (without the arenas' addresses) and the arena sizes. */
static int lay_out(const TrbSizing *s, PtoTrbImage *img)
{
    memset(img, 0, sizeof *img);
    img->magic = PTO_TRB_IMAGE_MAGIC;
    img->version = PTO_TRB_IMAGE_VERSION;
    uint64_t sm = 0, heap = 0, windows = 0, max_pool = 0;
    for (int r = 0; r < PTO_TRB_RINGS; r++) {
        PtoTrbRingLayout *l = &img->rings[r];
        l->task_window = s->task_window[r];
        l->heap_bytes = s->heap[r];
        l->dep_pool = s->dep_pool[r];
        /* two kernel views per task slot: a task keeping its views takes one per
           parameter, so a window of strided tasks waits for the pool (back-pressure)
           instead of every slot carrying 32 views (3 KiB) it rarely uses */
        l->view_pool = 2 * l->task_window > pto_trb_min_view_pool() ? 2 * l->task_window : pto_trb_min_view_pool();
        if (!reserve(&sm, l->task_window, sizeof(PtoTrbSlot), &l->slots_offset) ||
            !reserve(&sm, l->dep_pool, sizeof(PtoTrbDepNode), &l->nodes_offset) ||
            !reserve(&sm, l->view_pool, sizeof(PtoTensorView), &l->views_offset) ||
            !reserve(&heap, l->heap_bytes, 1, &l->heap_offset))
            return 0;
        windows += l->task_window;
        max_pool = l->dep_pool > max_pool ? l->dep_pool : max_pool;
    }
    /* every live task fits a ready queue; the tensor map holds a few accesses
       per live task; the scratch holds one task's producers (task id, ref) */
    img->ready_capacity = windows;
    img->map_entries = 4 * windows > PTO_TRB_MIN_TENSOR_MAP ? 4 * windows : PTO_TRB_MIN_TENSOR_MAP;
    if (img->map_entries > UINT32_MAX - 1)
        img->map_entries = UINT32_MAX - 1;
    img->scratch_entries = 2 * (max_pool + 1);
    /* flat accesses need no view record: one per four entries for strided ones */
    img->map_views = img->map_entries / 4;
    if (!reserve(&sm, 2 * img->ready_capacity, sizeof(uint64_t), &img->ready_offset) ||
        !reserve(&sm, img->map_entries, sizeof(PtoTrbAccess), &img->map_offset) ||
        !reserve(&sm, img->map_views, sizeof(PtoTensorView), &img->map_views_offset) ||
        !reserve(&sm, img->scratch_entries, sizeof(uint64_t), &img->scratch_offset))
        return 0;
    img->sm_bytes = sm;
    img->heap_bytes = heap;
    return 1;
}

static int build(const HostApi *bank0, const TrbSizing *s, uint64_t hash, const uint8_t *key, uint64_t *image_dev)
{
    PtoTrbImage img;
    if (!lay_out(s, &img))
        return pto_fail(PTO_ERR_CAPACITY, "trb: the ring sizing (task windows, heaps, dependency pools) needs more "
                                          "device memory than an arena can hold");
    img.sizing_hash = hash;
    int rc = host_api_setup_static_arena(bank0, img.heap_bytes, img.sm_bytes, sizeof img);
    if (rc != PTO_OK)
        return rc;
    size_t heap_size, sm_size, arena_size;
    void *heap = host_api_acquire_pooled_gm_heap(bank0, &heap_size);
    void *sm = host_api_acquire_pooled_gm_sm(bank0, &sm_size);
    void *arena = host_api_acquire_pooled_runtime_arena(bank0, &arena_size);
    if (heap == NULL || sm == NULL || arena == NULL)
        return PTO_ERR_OUT_OF_MEMORY;
    img.heap_dev = (uint64_t)(uintptr_t)heap;
    img.sm_dev = (uint64_t)(uintptr_t)sm;
    if ((rc = host_api_copy_to_device(bank0, arena, &img, sizeof img)) != PTO_OK)
        return rc;
    /* a backend whose cache is a no-op still works: the run uses `arena` directly */
    if ((rc = host_api_mark_prebuilt_runtime_arena_cached(bank0, hash, key, TRB_SIZING_KEY_BYTES, arena)) != PTO_OK)
        return rc;
    *image_dev = (uint64_t)(uintptr_t)arena;
    return PTO_OK;
}

/* The fields where `s` differs from the image bank 0 holds, at most three named:
   "ring 0 task window 16 (image 1024), ring 2 heap 2048 (image 1048576) and 1 more". */
static void describe_difference(const TrbSizing *s, const PtoTrbImage *img, char *out, size_t n)
{
    static const char *const names[3] = { "task window", "heap", "dependency pool" };
    size_t used = 0;
    int differ = 0;
    out[0] = '\0';
    for (int r = 0; r < PTO_TRB_RINGS; r++) {
        const uint64_t want[3] = { s->task_window[r], s->heap[r], s->dep_pool[r] };
        const uint64_t have[3] = { img->rings[r].task_window, img->rings[r].heap_bytes, img->rings[r].dep_pool };
        for (int f = 0; f < 3; f++) {
            if (want[f] == have[f])
                continue;
            if (++differ <= 3 && used < n)
                used += (size_t)snprintf(out + used, n - used, "%sring %d %s %llu (image %llu)", differ > 1 ? ", " : "",
                                         r, names[f], (unsigned long long)want[f], (unsigned long long)have[f]);
        }
    }
    if (differ > 3 && used < n)
        snprintf(out + used, n - used, " and %d more", differ - 3);
}

/* Refuses to rebuild the image under the run that uses it, naming the sizes that differ. */
static int not_now(const HostApi *bank0, const TrbSizing *s)
{
    size_t size = 0;
    void *arena = host_api_acquire_pooled_runtime_arena(bank0, &size);
    PtoTrbImage img;
    char diff[200];
    if (arena == NULL || size < sizeof img || host_api_copy_from_device(bank0, &img, arena, sizeof img) != PTO_OK ||
        img.magic != PTO_TRB_IMAGE_MAGIC)
        return pto_fail(PTO_ERR_OVERLAP_NOT_NOW, "bank 0 holds no runtime image of this run's ring sizing, and "
                                                 "building one would rewrite the one that run uses");
    describe_difference(s, &img, diff, sizeof diff);
    if (diff[0] == '\0') /* the same sizes, yet not the cached image: building would still rewrite it */
        snprintf(diff, sizeof diff, "the image of these sizes is not the one recorded as built");
    return pto_fail(PTO_ERR_OVERLAP_NOT_NOW,
                    "this run's ring sizing differs from the runtime image that run uses (bank 0, rewritten by a "
                    "rebuild): %s",
                    diff);
}

int trb_image_ensure(const HostApi *bank0, const TrbSizing *s, int may_build, uint64_t *image_dev, int *built)
{
    uint8_t key[TRB_SIZING_KEY_BYTES];
    sizing_key(s, key);
    uint64_t hash = pto_fnv1a64(key, sizeof key);
    void *cached = NULL;
    *built = 0;
    int hit = host_api_lookup_prebuilt_runtime_arena_cache(bank0, hash, key, sizeof key, &cached);
    if (hit < 0)
        return hit;
    if (hit == 1 && cached != NULL) {
        *image_dev = (uint64_t)(uintptr_t)cached;
        return PTO_OK;
    }
    if (!may_build)
        return not_now(bank0, s);
    *built = 1;
    return build(bank0, s, hash, key, image_dev);
}

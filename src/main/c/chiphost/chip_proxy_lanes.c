/*
 * The proxy's lane pool (chiphost/chip_proxy_chip.h): a call takes a free
 * lane; when none is free it opens one (CHIP_OP_OPEN_LANE over lane 0), up to
 * CHIP_PROXY_MAX_LANES, beyond which it waits parked on a condition variable
 * until a lane is given back. Never a busy wait.
 */
#include <stdint.h>

#include "chiphost/chip_ops.h"
#include "chiphost/chip_proxy_chip.h"
#include "ptorun/pto_runtime_c_api.h"
#include "util/last_error.h"

/* Lays lane idx out in the arena and has the child serve it. */
static int open_lane(ProxyChip *c, unsigned idx)
{
    size_t bytes = chip_channel_bytes();
    void *mem = chip_arena_alloc(&c->arena, bytes, 64);
    if (mem == NULL)
        return pto_last_error_code();
    int rc = chip_channel_init_at(mem, bytes, &c->lanes[idx]);
    if (rc == PTO_OK) {
        uint64_t addr = (uint64_t)(uintptr_t)mem;
        pthread_mutex_lock(&c->manage);
        rc = chip_process_call(&c->proc, CHIP_OP_OPEN_LANE, &addr, sizeof addr, NULL, 0, NULL, 0);
        pthread_mutex_unlock(&c->manage);
    }
    if (rc != PTO_OK) {
        chip_channel_close(&c->lanes[idx]);
        chip_arena_free(&c->arena, mem);
        return rc;
    }
    c->lane_mem[idx] = mem;
    return PTO_OK;
}

static int take_lane(ProxyChip *c, unsigned *lane)
{
    pthread_mutex_lock(&c->lanes_lock);
    for (;;) {
        if (c->free_count > 0) {
            *lane = c->free_lanes[--c->free_count];
            pthread_mutex_unlock(&c->lanes_lock);
            return PTO_OK;
        }
        if (!c->opening && c->lane_count < CHIP_PROXY_MAX_LANES) {
            unsigned idx = c->lane_count;
            c->opening = 1;
            pthread_mutex_unlock(&c->lanes_lock);
            int rc = open_lane(c, idx);
            pthread_mutex_lock(&c->lanes_lock);
            c->opening = 0;
            if (rc == PTO_OK)
                c->lane_count++;
            pthread_cond_broadcast(&c->lanes_changed); /* waiters for the opening may open the next */
            pthread_mutex_unlock(&c->lanes_lock);
            *lane = idx;
            return rc;
        }
        pthread_cond_wait(&c->lanes_changed, &c->lanes_lock);
    }
}

static void give_lane(ProxyChip *c, unsigned lane)
{
    pthread_mutex_lock(&c->lanes_lock);
    c->free_lanes[c->free_count++] = lane;
    pthread_cond_signal(&c->lanes_changed);
    pthread_mutex_unlock(&c->lanes_lock);
}

int proxy_lanes_open_first(ProxyChip *c)
{
    unsigned lane;
    int rc = take_lane(c, &lane);
    if (rc == PTO_OK)
        give_lane(c, lane);
    return rc;
}

int proxy_call(ProxyChip *c, uint32_t op, const void *payload, size_t len, void *reply, size_t reply_cap,
               size_t *reply_len)
{
    if (chip_process_gone(&c->proc))
        return pto_fail(PTO_ERR_CHIP_CRASHED, "%s", c->proc.death);
    unsigned lane;
    int rc = take_lane(c, &lane);
    if (rc != PTO_OK)
        return rc;
    rc = chip_process_call_on(&c->proc, &c->lanes[lane], op, payload, len, reply, reply_cap, reply_len, 0);
    give_lane(c, lane);
    return rc;
}

/*
 * One chip of the proxy library (chiphost/chip_proxy.h), inside the library:
 * the child process, its arena, its lanes (chip_proxy_lanes.c), the library's
 * description and the log ring.
 */
#ifndef PTORUN_CHIP_PROXY_CHIP_H
#define PTORUN_CHIP_PROXY_CHIP_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "chiphost/chip_arena.h"
#include "chiphost/chip_channel.h"
#include "chiphost/chip_contract_ops.h"
#include "chiphost/chip_log_ring.h"
#include "chiphost/chip_process.h"
#include "chiphost/chip_proxy.h"

typedef struct ProxyChip {
    ChipArena arena;
    ChipProcess proc;             /* its channel is lane 0: management only (opening lanes, EXIT) */
    pthread_mutex_t manage;       /* one management call at a time on lane 0 */
    pthread_mutex_t lanes_lock;
    pthread_cond_t lanes_changed; /* a lane freed, or an opening ended */
    ChipChannel lanes[CHIP_PROXY_MAX_LANES]; /* the contract's lanes, in the arena */
    void *lane_mem[CHIP_PROXY_MAX_LANES];
    unsigned free_lanes[CHIP_PROXY_MAX_LANES];
    unsigned free_count, lane_count;
    int opening;                  /* one lane is being opened (they open one at a time) */
    ChipDescription desc;
    ChipLogRing *log;
    pthread_mutex_t log_lock;     /* one reader of the ring at a time */
    uint64_t log_dropped_seen;
} ProxyChip;

/* Opens the first lane (at start). */
int proxy_lanes_open_first(ProxyChip *c);

/* One contract call on a free lane (one is opened, or waited for, when none is
   free); chip_process_call_on's result, without a timeout. */
int proxy_call(ProxyChip *c, uint32_t op, const void *payload, size_t len, void *reply, size_t reply_cap,
               size_t *reply_len);

#endif

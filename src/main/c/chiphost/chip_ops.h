/* The operations ptorun-chiphost serves (chiphost_main.c), one request each
 * over its chip channel (chiphost/chip_channel.h). Only the transport's own
 * ops exist yet; the library calls proxied through the child come later
 * (docs/isolation.md). */
#ifndef PTORUN_CHIP_OPS_H
#define PTORUN_CHIP_OPS_H

enum {
    CHIP_OP_PING = 1,  /* answers PTO_OK with the request's payload */
    CHIP_OP_CRASH = 2, /* raises the signal number held in the payload's first 4 bytes (tests) */
    CHIP_OP_HANG = 3,  /* never answers: parks forever on a word nobody wakes (tests) */
    CHIP_OP_EXIT = 4   /* answers PTO_OK, then the child exits with status 0 */
};

#endif

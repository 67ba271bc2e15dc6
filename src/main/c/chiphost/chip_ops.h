/* The operations ptorun-chiphost serves (chiphost_main.c), one request each
 * over its chip channel (chiphost/chip_channel.h). A failing op answers its
 * status with its message as payload (the parent's pto_last_error). The
 * library calls proxied through the child are chiphost/chip_contract_ops.h
 * (docs/isolation.md). */
#ifndef PTORUN_CHIP_OPS_H
#define PTORUN_CHIP_OPS_H

enum {
    CHIP_OP_PING = 1,  /* answers PTO_OK with the request's payload */
    CHIP_OP_CRASH = 2, /* raises the signal number held in the payload's first 4 bytes (tests) */
    CHIP_OP_HANG = 3,  /* never answers: parks forever on a word nobody wakes (tests) */
    CHIP_OP_EXIT = 4,  /* answers PTO_OK, then the child exits with status 0 */
    /* payload: address u64, length u32 (at most CHIP_CHANNEL_PAYLOAD_BYTES); answers the
       bytes the child reads there. Refused (PTO_ERR_INVALID_ARGUMENT) outside the arena. */
    CHIP_OP_ARENA_PEEK = 5,
    /* payload: address u64, then the bytes the child writes there. Refused outside the arena. */
    CHIP_OP_ARENA_POKE = 6,
    /* payload: a library's path (no NUL); the child loads it (chiphost/chip_library.h)
       and answers a ChipLibraryInfo. Once per child: a second is PTO_ERR_WRONG_PHASE. */
    CHIP_OP_LOAD = 7,
    /* payload: u64, the arena address of a control block the parent laid out
       (chip_channel_init_at, chip_channel_bytes() bytes); the child serves it as
       a lane from a thread of its own and answers once that thread runs.
       Refused (PTO_ERR_INVALID_ARGUMENT) outside the arena. */
    CHIP_OP_OPEN_LANE = 8,
    /* payload: ChipDescribeRequest (the log ring, chiphost/chip_contract_ops.h);
       answers a ChipDescription of the loaded library. After LOAD. */
    CHIP_OP_DESCRIBE = 9
    /* the contract's calls: chiphost/chip_contract_ops.h, from CHIP_OP_CONTRACT_BASE */
};

/* Where the fields of a PEEK and POKE payload sit (byte offsets; host byte order). */
#define CHIP_OP_ADDRESS_AT 0u
#define CHIP_OP_PEEK_LENGTH_AT 8u
#define CHIP_OP_PEEK_BYTES 12u
#define CHIP_OP_POKE_DATA_AT 8u

#endif

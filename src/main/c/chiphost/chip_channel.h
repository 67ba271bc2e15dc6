/*
 * A request/response channel between a parent process and one child process
 * (its chip host, docs/isolation.md) over one shared-memory region. The region
 * is an anonymous memfd: nothing of it ever has a name in the file system; the
 * child inherits the fd across exec and maps it too.
 *
 * The region holds one control block: a request frame (written by the parent
 * only), a response frame (written by the child only), each an op code, a
 * status, a sequence number and a payload of up to CHIP_CHANNEL_PAYLOAD_BYTES,
 * and two futex words, one per direction. A frame is published seqlock-style:
 * its sequence number is zeroed, the frame written, then the number stored;
 * a reader copies the frame and accepts it only if it read the same non-zero
 * number before and after. Every request has a fresh number and its response
 * carries it, so a late answer to an earlier request (one whose call timed
 * out) is never taken for the current one.
 *
 * Waiting, on both sides: the bounded spin of util/spin_wait.h (yielding the
 * core between its rounds from the start), then a FUTEX_WAIT on the direction's
 * word, bumped after every frame and woken only when the other side counted
 * itself as parked there.
 * The child waits without a bound (an idle child costs no CPU); the parent
 * waits in slices of CHIP_CHANNEL_LIVENESS_MS, asking its peer check between
 * slices whether the child still lives, so a dead child fails a call within
 * one slice.
 *
 * A control block may also sit in memory its creator owns (a lane in the
 * chip arena, chip_channel_init_at / chip_channel_attach_at): the channel then
 * never unmaps it (its fd is -1).
 *
 * One thread at a time per side and channel (the parent's calls are
 * serialized by their caller; a parent calling from many threads uses one
 * channel, a lane, per thread). Functions returning int return PTO_OK or a
 * PTO_ERR_* code with a pto_fail message.
 */
#ifndef PTORUN_CHIP_CHANNEL_H
#define PTORUN_CHIP_CHANNEL_H

#include <stddef.h>
#include <stdint.h>

#define CHIP_CHANNEL_PAYLOAD_BYTES 4096u
/* Or'ed into a call's op: the parent parks at once instead of spinning for the answer.
   For calls that hand work to another thread of the child (a launch wakes an executor):
   on a machine with few cores that thread may be queued on the parent's own core, behind
   its spin (docs/performance.md, P15). The frame carries the op without it. */
#define CHIP_CHANNEL_PARK 0x80000000u
#define CHIP_CHANNEL_LIVENESS_MS 20u

typedef struct ChipControl ChipControl;

typedef struct ChipChannel {
    ChipControl *ctl;
    int fd;             /* the memfd; -1 once closed, or when the block sits in memory the channel does not own */
    uint64_t last_seq;  /* parent: the last request's number; child: the last request taken */
} ChipChannel;

/* PTO_OK while the peer lives; otherwise the code (and pto_fail message) a
 * call waiting on it fails with. Called between waiting slices. */
typedef int (*ChipPeerCheck)(void *arg);

/* Serves one request in the child: reads in[0..in_len), writes at most
 * CHIP_CHANNEL_PAYLOAD_BYTES to out and its length to *out_len (0 before the
 * call), returns the status the parent's call returns. With a failing status,
 * out holds the failure's message (text, no NUL needed) or nothing. */
typedef int32_t (*ChipHandler)(void *arg, uint32_t op, const void *in, size_t in_len, void *out, size_t *out_len);

/* Parent: a fresh region (memfd, close-on-exec). */
int chip_channel_create(ChipChannel *out);

/* Child: maps the region of an inherited fd (the channel owns it from now
 * on); PTO_ERR_INVALID_ARGUMENT when it is not a chip channel. */
int chip_channel_attach(int fd, ChipChannel *out);

/* The bytes one control block takes (chip_channel_init_at). */
size_t chip_channel_bytes(void);

/* Parent: lays a fresh control block out at mem (bytes >= chip_channel_bytes(),
 * 8-byte aligned), in memory the caller owns and keeps mapped while the channel
 * is used (a lane in the chip arena). PTO_ERR_INVALID_ARGUMENT otherwise. */
int chip_channel_init_at(void *mem, size_t bytes, ChipChannel *out);

/* Child: a control block the parent laid out at mem (its magic and size
 * checked); PTO_ERR_INVALID_ARGUMENT when none is there. */
int chip_channel_attach_at(void *mem, size_t bytes, ChipChannel *out);

/* Unmaps and closes what the channel owns (nothing of a block at an address);
 * tolerates a zeroed or closed channel. */
void chip_channel_close(ChipChannel *ch);

/* Parent: sends `op` with payload[0..len) and waits for its answer, at most
 * timeout_ms (0: no bound). The answer's payload goes to reply (up to
 * reply_cap; reply may be NULL when reply_cap is 0), its length to *reply_len
 * (may be NULL). Returns the child's status (PTO_OK or its code), or:
 * A failing status comes with the child's message when its answer has a
 * payload (the handler's convention: a failure's payload is its message text):
 * that text becomes the pto_fail message; *reply_len is 0 then and reply's
 * content unspecified. Or:
 * PTO_ERR_INVALID_ARGUMENT (len above CHIP_CHANNEL_PAYLOAD_BYTES),
 * PTO_ERR_TIMEOUT (no answer in time; the request stays posted, its late
 * answer is ignored), PTO_ERR_CAPACITY (the answer is longer than reply_cap;
 * reply holds its first reply_cap bytes), or what `check` returned (it may be
 * NULL: no liveness check). */
int chip_channel_call(ChipChannel *ch, uint32_t op, const void *payload, size_t len, void *reply, size_t reply_cap,
                      size_t *reply_len, uint32_t timeout_ms, ChipPeerCheck check, void *check_arg);

/* Parent: waits until the child has taken the last request and not answered
 * it yet (it is working on it), at most timeout_ms (> 0): PTO_OK, or
 * PTO_ERR_TIMEOUT. For watchdogs and tests; any thread. */
int chip_channel_await_taken(ChipChannel *ch, uint32_t timeout_ms);

/* Child: waits for the next request (no bound), has `handler` serve it and
 * publishes the answer. Returns the op it served. */
uint32_t chip_channel_serve_next(ChipChannel *ch, ChipHandler handler, void *arg);

#endif

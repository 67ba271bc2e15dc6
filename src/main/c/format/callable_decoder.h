/*
 * The callable decoder's internals, shared by its two files: chip_callable.c
 * (header, signature, children, names) and program_decode.c (the program).
 * Not part of format/chip_callable.h's interface.
 */
#ifndef PTORUN_FORMAT_CALLABLE_DECODER_H
#define PTORUN_FORMAT_CALLABLE_DECODER_H

#include <stddef.h>
#include <stdint.h>

#include "format/chip_callable.h"

/* Where the decoder is and what it writes to. */
typedef struct CallableDecoder {
    const uint8_t *bytes;
    uint32_t total;
    char *msg;
    size_t msg_size;
    ChipCallableView *view;
    uint32_t body;                /* decoding the body of sub-graph body - 1; 0: the program itself */
} CallableDecoder;

/* Writes the refusal into d->msg; returns PTO_ERR_BAD_CALLABLE. */
__attribute__((format(printf, 2, 3))) int decoder_fail(CallableDecoder *d, const char *fmt, ...);

/* A blob lies inside [sizeof header, total) and is `align`-aligned; {0,0} is an absent blob. */
int decoder_check_blob(CallableDecoder *d, PtoBlobRef ref, const char *what, uint32_t align);

const char *decoder_direction_name(uint32_t direction);

/* Decodes and checks d->view's program orchestration (the header's orchestration blob). */
int decoder_program(CallableDecoder *d);

#endif

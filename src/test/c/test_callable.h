/* Building ChipCallables in C for the native tests: a builder that lays out
 * header, signature, children, names and a program the way the format
 * requires (include/ptorun/chip_callable.h), so tests can then corrupt exactly
 * one thing. */
#ifndef PTORUN_TEST_CALLABLE_H
#define PTORUN_TEST_CALLABLE_H

#include <stddef.h>
#include <stdint.h>

#include "ptorun/chip_callable.h"

#define TCB_MAX_CHILDREN 80
#define TCB_MAX_PROGRAM (8u << 20)

typedef struct TestChild {
    uint32_t func_id;
    uint8_t core_type;
    uint8_t source_kind;
    const char *name;           /* built-in name or library entry symbol */
    const uint8_t *image;       /* kernel library image (source_kind LIBRARY) */
    uint32_t image_size;
} TestChild;

typedef struct TestCallableBuilder {
    uint8_t signature[PTO_CALLABLE_MAX_SIGNATURE + 16];
    uint32_t signature_length;
    TestChild children[TCB_MAX_CHILDREN];
    uint32_t child_count;
    uint8_t *program;          /* instructions after the program header */
    uint32_t program_bytes;
    uint32_t instruction_count;
    uint32_t local_count;
    const uint8_t *orch_image;  /* non-NULL: a library orchestration instead of the program */
    uint32_t orch_image_size;
    const char *orch_entry;
} TestCallableBuilder;

void tcb_init(TestCallableBuilder *b);
void tcb_free(TestCallableBuilder *b);
void tcb_signature(TestCallableBuilder *b, const uint8_t *dirs, uint32_t n);
void tcb_child(TestCallableBuilder *b, uint32_t func_id, uint8_t core_type, const char *builtin);
/* A child whose kernel is `symbol` in the kernel library image[0..size). */
void tcb_library_child(TestCallableBuilder *b, uint32_t func_id, uint8_t core_type, const uint8_t *image,
                       uint32_t size, const char *symbol);
/* The orchestration is `entry` in the library image[0..size) (no program). */
void tcb_orchestration_library(TestCallableBuilder *b, const uint8_t *image, uint32_t size, const char *entry);

/* Parameters. */
PtoProgramParam tcb_tensor(uint32_t arg, uint8_t direction, int64_t offset, int64_t size);
/* A 2-D strided view of a row-major rows x cols tensor (kind ARG_TENSOR or
   LOCAL_TENSOR): rows [row0, row0 + nrows), columns [col0, col0 + ncols); the
   caller may add loop coefficients and clamps to its dims. */
PtoProgramParam tcb_view2(uint32_t kind, uint32_t index, uint8_t direction, uint8_t dtype, int64_t rows,
                          int64_t cols, int64_t row0, int64_t col0, int64_t nrows, int64_t ncols);
PtoProgramParam tcb_imm(uint64_t value);
PtoProgramParam tcb_scalar_arg(uint32_t index);
PtoProgramParam tcb_f32(float value);
PtoProgramParam tcb_local(uint32_t local, uint8_t direction, int64_t offset, int64_t size);

void tcb_submit(TestCallableBuilder *b, uint32_t func_id, const PtoProgramParam *params, uint32_t n);
/* A SUBMIT waiting for the tasks whose ordinals `after` gives (inside a SCOPE_BEGIN_MANUAL). */
void tcb_submit_after(TestCallableBuilder *b, uint32_t func_id, const PtoProgramParam *params, uint32_t n,
                      const PtoAffine *after, uint32_t n_after);
void tcb_insn(TestCallableBuilder *b, uint16_t opcode);                 /* head-only instructions */
void tcb_loop(TestCallableBuilder *b, uint64_t count);
void tcb_alloc(TestCallableBuilder *b, uint32_t local_id, uint64_t bytes);
void tcb_raw(TestCallableBuilder *b, const void *bytes, uint32_t n);     /* anything, counted as one instruction */
/* SUBGRAPH id: the boundary directions dirs[0..n) and, as its body, the program
   `body` holds (its instructions and local_count; the rest of `body` is unused). */
void tcb_subgraph(TestCallableBuilder *b, uint32_t id, const uint8_t *dirs, uint32_t n, const TestCallableBuilder *body);
/* INVOKE id with these params. */
void tcb_invoke(TestCallableBuilder *b, uint32_t id, const PtoProgramParam *params, uint32_t n);

/* The callable bytes (malloc'd, free() them) and their size. */
uint8_t *tcb_build(const TestCallableBuilder *b, uint32_t *size);

/* Offsets inside a built callable, for corrupting it. */
ChipCallableHeader *tcb_header(uint8_t *callable);
ChipCallableChild *tcb_children(uint8_t *callable);
uint8_t *tcb_program(uint8_t *callable);   /* the PtoProgramHeader */

/* The decoder tests' base: signature IN a, IN b, OUT c, SCALAR s; children
   1 = vadd, 2 = vadds; SUBMIT 1 (c = a + b), SUBMIT 2 (c = c + s). */
void tcb_base_program(TestCallableBuilder *b);
/* It built (malloc'ed, *size bytes). */
uint8_t *tcb_base_callable(uint32_t *size);
/* chip_callable_decode into a scratch view; the message in msg (CHIP_CALLABLE_MESSAGE_BYTES). */
int tcb_decode(const void *c, char *msg);

#endif

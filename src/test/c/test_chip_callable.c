/* The callable decoder: a valid callable is accepted with the right view; a
 * table of malformed ones is each refused with PTO_ERR_BAD_CALLABLE and a
 * message naming its defect, without reading past the bytes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/chip_callable.h"
#include "util/last_error.h"
#include "ptest.h"
#include "ptorun/pto_runtime_c_api.h"
#include "test_callable.h"

/* signature IN a, IN b, OUT c, SCALAR s; children 1 = vadd, 2 = vadds;
   c = a + b; c = c + s */
static void base_builder(TestCallableBuilder *b)
{
    tcb_init(b);
    const uint8_t sig[] = { PTO_ARG_IN, PTO_ARG_IN, PTO_ARG_OUT, PTO_ARG_SCALAR };
    tcb_signature(b, sig, sizeof sig);
    tcb_child(b, 1, PTO_CORE_AIV, "vadd");
    tcb_child(b, 2, PTO_CORE_AIV, "vadds");
    PtoProgramParam add[] = { tcb_tensor(0, PTO_ARG_IN, 0, 64), tcb_tensor(1, PTO_ARG_IN, 0, 64),
                              tcb_tensor(2, PTO_ARG_OUT, 0, 64) };
    tcb_submit(b, 1, add, 3);
    PtoProgramParam adds[] = { tcb_tensor(2, PTO_ARG_IN, 0, 64), tcb_tensor(2, PTO_ARG_OUT, 0, 64),
                               tcb_scalar_arg(0) };
    tcb_submit(b, 2, adds, 3);
}

static uint8_t *base_callable(uint32_t *size)
{
    TestCallableBuilder b;
    base_builder(&b);
    uint8_t *c = tcb_build(&b, size);
    tcb_free(&b);
    return c;
}

static int decode(const void *c, char *msg)
{
    ChipCallableView v;
    return chip_callable_decode(c, &v, msg, CHIP_CALLABLE_MESSAGE_BYTES);
}

TEST(decoder_accepts_a_valid_callable_and_describes_it)
{
    uint32_t size;
    uint8_t *c = base_callable(&size);
    ChipCallableView v;
    char msg[CHIP_CALLABLE_MESSAGE_BYTES];
    CHECK_EQ_INT(chip_callable_decode(c, &v, msg, sizeof msg), PTO_OK);
    CHECK_EQ_INT(v.header.total_size, size);
    CHECK_EQ_INT(v.tensor_count, 3);
    CHECK_EQ_INT(v.scalar_count, 1);
    CHECK_EQ_INT(v.submit_count, 2);
    CHECK_EQ_INT(v.opcodes_used, 1u << PTO_OP_SUBMIT);
    CHECK_EQ_INT(chip_callable_child_of(&v, 2), 1);
    CHECK_EQ_INT(chip_callable_child_of(&v, 3), -1);
    PtoProgramCursor cur = { 0, 0 };
    PtoProgramInsn in;
    int n = 0;
    while (chip_program_next(&v, &cur, &in)) {
        CHECK_EQ_INT(in.head.opcode, PTO_OP_SUBMIT);
        CHECK_EQ_INT(in.u.submit.func_id, n + 1);
        PtoProgramParam p;
        chip_program_param(&v, &in, 2, &p);
        CHECK_EQ_INT(p.kind, n == 0 ? PTO_PARAM_ARG_TENSOR : PTO_PARAM_SCALAR_ARG);
        n++;
    }
    CHECK_EQ_INT(n, 2);
    free(c);
}

TEST(decoder_accepts_loops_scopes_and_locals_in_the_format)
{
    TestCallableBuilder b;
    base_builder(&b);
    b.local_count = 1;
    tcb_alloc(&b, 0, 256);
    tcb_insn(&b, PTO_OP_SCOPE_BEGIN);
    tcb_loop(&b, 4);
    PtoProgramParam p[] = { tcb_tensor(0, PTO_ARG_IN, 0, 16), tcb_tensor(1, PTO_ARG_IN, 0, 16),
                            { .kind = PTO_PARAM_LOCAL_TENSOR, .direction = PTO_ARG_OUT, .index = 0 } };
    p[2].offset.coef[0] = 16;
    p[2].size.base = 16;
    tcb_submit(&b, 1, p, 3);
    tcb_insn(&b, PTO_OP_END_LOOP);
    tcb_insn(&b, PTO_OP_SCOPE_END);
    uint32_t size;
    uint8_t *c = tcb_build(&b, &size);
    char msg[CHIP_CALLABLE_MESSAGE_BYTES];
    ChipCallableView v;
    CHECK_EQ_INT(chip_callable_decode(c, &v, msg, sizeof msg), PTO_OK);
    CHECK_EQ_INT(v.opcodes_used, (1u << PTO_OP_SUBMIT) | (1u << PTO_OP_ALLOC_TENSOR) | (1u << PTO_OP_LOOP) |
                                     (1u << PTO_OP_END_LOOP) | (1u << PTO_OP_SCOPE_BEGIN) | (1u << PTO_OP_SCOPE_END));
    free(c);
    tcb_free(&b);
}

TEST(decoder_refuses_a_null_pointer)
{
    char msg[CHIP_CALLABLE_MESSAGE_BYTES];
    CHECK_EQ_INT(decode(NULL, msg), PTO_ERR_BAD_CALLABLE);
    CHECK_CONTAINS(msg, "NULL");
}

TEST(decoder_never_reads_past_a_lone_header_claiming_a_huge_size)
{
    /* exactly the header's bytes on the heap: ASan catches any read beyond */
    uint8_t *h = malloc(sizeof(ChipCallableHeader));
    uint32_t size;
    uint8_t *c = base_callable(&size);
    memcpy(h, c, sizeof(ChipCallableHeader));
    tcb_header(h)->total_size = 0xFFFFFFF0u;
    char msg[CHIP_CALLABLE_MESSAGE_BYTES];
    CHECK_EQ_INT(decode(h, msg), PTO_ERR_BAD_CALLABLE);
    CHECK_CONTAINS(msg, "exceeds the limit");
    free(h);
    free(c);
}

/* ---- the table ------------------------------------------------------------ */

typedef struct Defect {
    const char *what;
    void (*corrupt)(uint8_t *c, uint32_t size);
    const char *message;
} Defect;

static PtoProgramParam *param_at(uint8_t *c, uint32_t insn_offset_in_program, uint32_t i)
{
    return (PtoProgramParam *)(tcb_program(c) + insn_offset_in_program + sizeof(PtoSubmitInsn) +
                               i * sizeof(PtoProgramParam));
}

/* offsets of the two SUBMITs in the base program */
#define FIRST_SUBMIT ((uint32_t)sizeof(PtoProgramHeader))
#define SECOND_SUBMIT (FIRST_SUBMIT + (uint32_t)(sizeof(PtoSubmitInsn) + 3 * sizeof(PtoProgramParam)))

static void bad_magic(uint8_t *c, uint32_t n) { (void)n; tcb_header(c)->magic = 0x12345678; }
static void bad_version(uint8_t *c, uint32_t n) { (void)n; tcb_header(c)->format_version = 1; /* the previous version: exactly one is accepted */ }
static void tiny_total(uint8_t *c, uint32_t n) { (void)n; tcb_header(c)->total_size = 20; }
static void huge_total(uint8_t *c, uint32_t n) { (void)n; tcb_header(c)->total_size = PTO_CALLABLE_MAX_BYTES + 1; }
static void truncated(uint8_t *c, uint32_t n) { tcb_header(c)->total_size = n - 8; }
static void header_reserved(uint8_t *c, uint32_t n) { (void)n; tcb_header(c)->reserved = 1; }
static void bad_orch_kind(uint8_t *c, uint32_t n) { (void)n; tcb_header(c)->orchestration_kind = 7; }
static void too_many_children(uint8_t *c, uint32_t n) { (void)n; tcb_header(c)->child_count = 65; }
static void long_signature(uint8_t *c, uint32_t n) { (void)n; tcb_header(c)->signature_length = 385; }
static void signature_outside(uint8_t *c, uint32_t n) { tcb_header(c)->signature.offset = n - 2; }
static void signature_in_header(uint8_t *c, uint32_t n) { (void)n; tcb_header(c)->signature.offset = 8; }
static void signature_wraps(uint8_t *c, uint32_t n)
{
    (void)n;
    tcb_header(c)->signature.offset = 0xFFFFFFFEu;
}
static void signature_size_mismatch(uint8_t *c, uint32_t n) { (void)n; tcb_header(c)->signature.size = 3; }
static void bad_direction(uint8_t *c, uint32_t n) { (void)n; c[tcb_header(c)->signature.offset] = 9; }
static void tensor_after_scalar(uint8_t *c, uint32_t n)
{
    (void)n;
    c[tcb_header(c)->signature.offset + 2] = PTO_ARG_SCALAR;
    c[tcb_header(c)->signature.offset + 3] = PTO_ARG_IN;
}
static void children_misaligned(uint8_t *c, uint32_t n) { (void)n; tcb_header(c)->children.offset += 4; }
static void children_size_mismatch(uint8_t *c, uint32_t n) { (void)n; tcb_header(c)->children.size = 40; }
static void unknown_kernel(uint8_t *c, uint32_t n)
{
    (void)n;
    memcpy(c + tcb_children(c)[0].name.offset, "vnop", 4);
}
static void duplicate_func_id(uint8_t *c, uint32_t n) { (void)n; tcb_children(c)[1].func_id = 1; }
static void func_id_too_big(uint8_t *c, uint32_t n) { (void)n; tcb_children(c)[1].func_id = 4096; }
static void bad_core_type(uint8_t *c, uint32_t n) { (void)n; tcb_children(c)[0].core_type = 3; }
static void bad_source_kind(uint8_t *c, uint32_t n) { (void)n; tcb_children(c)[0].source_kind = 5; }
static void child_reserved(uint8_t *c, uint32_t n) { (void)n; tcb_children(c)[0].reserved = 2; }
static void resolved_addr_set(uint8_t *c, uint32_t n) { (void)n; tcb_children(c)[0].resolved_addr = 0x1000; }
static void empty_name(uint8_t *c, uint32_t n) { (void)n; tcb_children(c)[0].name.size = 0; }
static void name_outside(uint8_t *c, uint32_t n) { tcb_children(c)[0].name.offset = n - 1; }
static void name_with_space(uint8_t *c, uint32_t n)
{
    (void)n;
    c[tcb_children(c)[0].name.offset + 1] = ' ';
}
static void name_non_printable(uint8_t *c, uint32_t n)
{
    (void)n;
    c[tcb_children(c)[0].name.offset] = 0x07;
}
static void builtin_with_image(uint8_t *c, uint32_t n)
{
    (void)n;
    tcb_children(c)[0].image = tcb_children(c)[0].name;
}
static void library_without_image(uint8_t *c, uint32_t n)
{
    (void)n;
    tcb_children(c)[0].source_kind = PTO_KERNEL_LIBRARY;
}
static void program_entry_set(uint8_t *c, uint32_t n)
{
    (void)n;
    tcb_header(c)->orchestration_entry = tcb_children(c)[0].name;
}
static void program_too_small(uint8_t *c, uint32_t n) { (void)n; tcb_header(c)->orchestration.size = 8; }
static void program_bad_magic(uint8_t *c, uint32_t n) { (void)n; ((PtoProgramHeader *)tcb_program(c))->magic = 1; }
static void program_reserved(uint8_t *c, uint32_t n) { (void)n; ((PtoProgramHeader *)tcb_program(c))->reserved = 1; }
static void too_many_locals(uint8_t *c, uint32_t n) { (void)n; ((PtoProgramHeader *)tcb_program(c))->local_count = 257; }
static void too_many_insns(uint8_t *c, uint32_t n)
{
    (void)n;
    ((PtoProgramHeader *)tcb_program(c))->instruction_count = PTO_PROGRAM_MAX_INSNS + 1;
}
static void count_past_end(uint8_t *c, uint32_t n) { (void)n; ((PtoProgramHeader *)tcb_program(c))->instruction_count = 3; }
static void trailing_bytes(uint8_t *c, uint32_t n) { (void)n; ((PtoProgramHeader *)tcb_program(c))->instruction_count = 1; }
static void insn_size_odd(uint8_t *c, uint32_t n)
{
    (void)n;
    ((PtoInsnHead *)(tcb_program(c) + FIRST_SUBMIT))->size_bytes = 12;
}
static void insn_size_zero(uint8_t *c, uint32_t n)
{
    (void)n;
    ((PtoInsnHead *)(tcb_program(c) + FIRST_SUBMIT))->size_bytes = 0;
}
static void insn_past_program(uint8_t *c, uint32_t n)
{
    (void)n;
    ((PtoInsnHead *)(tcb_program(c) + SECOND_SUBMIT))->size_bytes = 4096;
}
static void unknown_opcode(uint8_t *c, uint32_t n)
{
    (void)n;
    ((PtoInsnHead *)(tcb_program(c) + FIRST_SUBMIT))->opcode = 9;
}
static void submit_unknown_func(uint8_t *c, uint32_t n)
{
    (void)n;
    ((PtoSubmitInsn *)(tcb_program(c) + SECOND_SUBMIT))->func_id = 7;
}
static void submit_too_many_params(uint8_t *c, uint32_t n)
{
    (void)n;
    ((PtoInsnHead *)(tcb_program(c) + FIRST_SUBMIT))->param_count = 33;
}
static void submit_size_mismatch(uint8_t *c, uint32_t n)
{
    (void)n;
    ((PtoInsnHead *)(tcb_program(c) + FIRST_SUBMIT))->param_count = 2;
}
static void submit_reserved(uint8_t *c, uint32_t n)
{
    (void)n;
    ((PtoSubmitInsn *)(tcb_program(c) + FIRST_SUBMIT))->reserved = 1;
}
static void param_bad_kind(uint8_t *c, uint32_t n) { (void)n; param_at(c, FIRST_SUBMIT, 1)->kind = 9; }
static void param_tensor_as_scalar(uint8_t *c, uint32_t n) { (void)n; param_at(c, FIRST_SUBMIT, 1)->direction = PTO_ARG_SCALAR; }
static void param_scalar_as_in(uint8_t *c, uint32_t n) { (void)n; param_at(c, SECOND_SUBMIT, 2)->direction = PTO_ARG_IN; }
static void param_bad_direction(uint8_t *c, uint32_t n) { (void)n; param_at(c, FIRST_SUBMIT, 0)->direction = 6; }
static void param_tensor_index(uint8_t *c, uint32_t n) { (void)n; param_at(c, FIRST_SUBMIT, 2)->index = 3; }
static void param_scalar_index(uint8_t *c, uint32_t n) { (void)n; param_at(c, SECOND_SUBMIT, 2)->index = 1; }
static void param_dtype_without_dims(uint8_t *c, uint32_t n) { (void)n; param_at(c, FIRST_SUBMIT, 0)->dtype = 1; }
static void param_scalar_with_dims(uint8_t *c, uint32_t n) { (void)n; param_at(c, SECOND_SUBMIT, 2)->ndims = 1; }
static void param_flat_clamped(uint8_t *c, uint32_t n)
{
    (void)n;
    param_at(c, FIRST_SUBMIT, 0)->size.clamp = PTO_AFFINE_HAS_HI;
    param_at(c, FIRST_SUBMIT, 0)->size.hi = 8;
}
static void param_loop_var_outside_loop(uint8_t *c, uint32_t n) { (void)n; param_at(c, FIRST_SUBMIT, 0)->offset.coef[0] = 4; }
static void param_local_out_of_range(uint8_t *c, uint32_t n)
{
    (void)n;
    param_at(c, FIRST_SUBMIT, 2)->kind = PTO_PARAM_LOCAL_TENSOR;
    param_at(c, FIRST_SUBMIT, 2)->index = 0;
}

static const Defect defects[] = {
    { "bad magic", bad_magic, "bad magic 0x12345678" },
    { "format version", bad_version, "format version 1 is not supported (expected 2)" },
    { "total_size below the header", tiny_total, "smaller than the 56-byte header" },
    { "total_size huge", huge_total, "exceeds the limit" },
    { "truncated", truncated, "outside the callable's total_size" },
    { "header reserved", header_reserved, "header reserved field is 1" },
    { "orchestration kind", bad_orch_kind, "unknown orchestration kind 7" },
    { "child_count", too_many_children, "child_count 65 exceeds the limit of 64" },
    { "signature_length", long_signature, "signature_length 385 exceeds the limit of 384" },
    { "signature outside", signature_outside, "signature blob" },
    { "signature in the header", signature_in_header, "overlaps the 56-byte header" },
    { "signature offset wraps", signature_wraps, "outside the callable's total_size" },
    { "signature size", signature_size_mismatch, "signature blob is 3 bytes for a signature_length of 4" },
    { "signature direction", bad_direction, "signature entry 0 has invalid direction 9" },
    { "tensor after scalar", tensor_after_scalar, "signature entry 3 is a tensor (IN) after a scalar" },
    { "children misaligned", children_misaligned, "children blob offset" },
    { "children size", children_size_mismatch, "children blob is 40 bytes for 2 children" },
    { "unknown kernel", unknown_kernel, "child 0 (func_id 1): 'vnop' is not a built-in kernel" },
    { "duplicate func_id", duplicate_func_id, "func_id 1 is used by child 0 and child 1" },
    { "func_id too big", func_id_too_big, "func_id 4096 exceeds the limit of 4095" },
    { "core type", bad_core_type, "invalid core type 3" },
    { "source kind", bad_source_kind, "invalid source kind 5" },
    { "child reserved", child_reserved, "child 0 reserved field is 2" },
    { "resolved_addr", resolved_addr_set, "resolved_addr is set" },
    { "empty name", empty_name, "name is empty" },
    { "name outside", name_outside, "outside the callable's total_size" },
    { "name with a space", name_with_space, "has byte 0x20 at position 1" },
    { "name non-printable", name_non_printable, "has byte 0x07 at position 0" },
    { "built-in with an image", builtin_with_image, "carries a library image" },
    { "library without an image", library_without_image, "kernel library without an image" },
    { "program entry set", program_entry_set, "carries no entry symbol" },
    { "program too small", program_too_small, "smaller than its 16-byte header" },
    { "program magic", program_bad_magic, "program has bad magic" },
    { "program reserved", program_reserved, "program header reserved field is 1" },
    { "too many locals", too_many_locals, "257 local tensors" },
    { "too many instructions", too_many_insns, "instructions, the limit is" },
    { "instruction count past the end", count_past_end, "instruction 2 at program byte" },
    { "trailing bytes", trailing_bytes, "bytes after its last instruction" },
    { "instruction size not a multiple of 8", insn_size_odd, "has size 12" },
    { "instruction size 0", insn_size_zero, "has size 0" },
    { "instruction past the program", insn_past_program, "runs past the program's" },
    { "unknown opcode", unknown_opcode, "instruction 0 has unknown opcode 9" },
    { "SUBMIT of an unknown func_id", submit_unknown_func, "submits func_id 7, which is not a child" },
    { "SUBMIT param count", submit_too_many_params, "has 33 params, the limit is 32" },
    { "SUBMIT size", submit_size_mismatch, "2 params and 0 predecessors need" },
    { "SUBMIT reserved", submit_reserved, "(SUBMIT) reserved field is 1" },
    { "param kind", param_bad_kind, "param 1 has invalid kind 9" },
    { "tensor with SCALAR direction", param_tensor_as_scalar, "needs direction IN, OUT or INOUT, not SCALAR" },
    { "scalar with IN direction", param_scalar_as_in, "a scalar needs direction SCALAR, not IN" },
    { "param direction", param_bad_direction, "not invalid (6)" },
    { "tensor index", param_tensor_index, "names argument tensor 3 but the signature has 3 tensor(s)" },
    { "scalar index", param_scalar_index, "names argument scalar 1 but the signature has 1 scalar(s)" },
    { "param dtype without dims", param_dtype_without_dims, "param 0: dtype and dims are set but ndims is 0" },
    { "scalar with dims", param_scalar_with_dims, "param 2: a scalar has ndims 0, not 1" },
    { "flat view clamped", param_flat_clamped, "param 0: a flat view's size takes no min/max clamp" },
    { "loop variable outside a loop", param_loop_var_outside_loop, "uses loop variable 0 but only 0 loop(s)" },
    { "local tensor out of range", param_local_out_of_range, "names local tensor 0 but local_count is 0" },
};

TEST(decoder_refuses_every_malformed_callable_naming_the_defect)
{
    for (size_t i = 0; i < sizeof defects / sizeof defects[0]; i++) {
        uint32_t size;
        uint8_t *c = base_callable(&size);
        defects[i].corrupt(c, size);
        char msg[CHIP_CALLABLE_MESSAGE_BYTES];
        int rc = decode(c, msg);
        if (rc != PTO_ERR_BAD_CALLABLE || strstr(msg, defects[i].message) == NULL) {
            char what[512];
            snprintf(what, sizeof what, "%s: rc %d, message \"%s\", expected \"%s\"", defects[i].what, rc, msg,
                     defects[i].message);
            ptest_record_failure(__FILE__, __LINE__, what);
        }
        free(c);
    }
}

/* ---- program structure --------------------------------------------------------- */

static int decode_program(void (*shape)(TestCallableBuilder *), char *msg)
{
    TestCallableBuilder b;
    base_builder(&b);
    shape(&b);
    uint32_t size;
    uint8_t *c = tcb_build(&b, &size);
    int rc = decode(c, msg);
    free(c);
    tcb_free(&b);
    return rc;
}

static void loop_left_open(TestCallableBuilder *b) { tcb_loop(b, 2); }
static void end_loop_alone(TestCallableBuilder *b) { tcb_insn(b, PTO_OP_END_LOOP); }
static void scope_left_open(TestCallableBuilder *b) { tcb_insn(b, PTO_OP_SCOPE_BEGIN); }
static void scope_end_alone(TestCallableBuilder *b) { tcb_insn(b, PTO_OP_SCOPE_END); }
static void crossed(TestCallableBuilder *b)
{
    tcb_loop(b, 2);
    tcb_insn(b, PTO_OP_SCOPE_BEGIN);
    tcb_insn(b, PTO_OP_END_LOOP);
}
static void five_loops(TestCallableBuilder *b)
{
    for (int i = 0; i < 5; i++)
        tcb_loop(b, 1);
    for (int i = 0; i < 5; i++)
        tcb_insn(b, PTO_OP_END_LOOP);
}
static void five_scopes(TestCallableBuilder *b)
{
    for (int i = 0; i < 5; i++)
        tcb_insn(b, PTO_OP_SCOPE_BEGIN);
    for (int i = 0; i < 5; i++)
        tcb_insn(b, PTO_OP_SCOPE_END);
}
static void four_of_each(TestCallableBuilder *b)
{
    for (int i = 0; i < 4; i++) {
        tcb_insn(b, PTO_OP_SCOPE_BEGIN);
        tcb_loop(b, 1);
    }
    for (int i = 0; i < 4; i++) {
        tcb_insn(b, PTO_OP_END_LOOP);
        tcb_insn(b, PTO_OP_SCOPE_END);
    }
}
static void local_used_before_alloc(TestCallableBuilder *b)
{
    b->local_count = 1;
    PtoProgramParam p[] = { { .kind = PTO_PARAM_LOCAL_TENSOR, .direction = PTO_ARG_OUT, .index = 0 } };
    tcb_submit(b, 1, p, 1);
    tcb_alloc(b, 0, 64);
}
static void local_allocated_twice(TestCallableBuilder *b)
{
    b->local_count = 1;
    tcb_alloc(b, 0, 64);
    tcb_alloc(b, 0, 64);
}
static void alloc_out_of_range(TestCallableBuilder *b)
{
    b->local_count = 1;
    tcb_alloc(b, 1, 64);
}
static PtoProgramParam looped_view(uint32_t kind, uint32_t index, uint8_t dir, int64_t off, int64_t coef, int64_t size)
{
    PtoProgramParam p = tcb_tensor(index, dir, off, size);
    p.kind = (uint8_t)kind;
    p.offset.coef[0] = coef;
    return p;
}
static void writes_in_tensor(TestCallableBuilder *b)
{
    PtoProgramParam p[] = { tcb_tensor(0, PTO_ARG_OUT, 0, 4) };
    tcb_submit(b, 1, p, 1);
}
static void negative_view_in_loop(TestCallableBuilder *b)
{
    tcb_loop(b, 3);
    PtoProgramParam p[] = { looped_view(PTO_PARAM_ARG_TENSOR, 0, PTO_ARG_IN, 8, -8, 4) };
    tcb_submit(b, 1, p, 1);
    tcb_insn(b, PTO_OP_END_LOOP);
}
static void negative_size(TestCallableBuilder *b)
{
    PtoProgramParam p[] = { tcb_tensor(0, PTO_ARG_IN, 0, -4) };
    tcb_submit(b, 1, p, 1);
}
static void negative_view_never_runs(TestCallableBuilder *b)
{
    tcb_loop(b, 0);
    PtoProgramParam p[] = { looped_view(PTO_PARAM_ARG_TENSOR, 0, PTO_ARG_IN, -8, 0, -4) };
    tcb_submit(b, 1, p, 1);
    tcb_insn(b, PTO_OP_END_LOOP);
}
static void local_view_past_alloc(TestCallableBuilder *b)
{
    b->local_count = 1;
    tcb_alloc(b, 0, 64);
    tcb_loop(b, 4);
    PtoProgramParam p[] = { looped_view(PTO_PARAM_LOCAL_TENSOR, 0, PTO_ARG_OUT, 0, 16, 20) };
    tcb_submit(b, 1, p, 1);
    tcb_insn(b, PTO_OP_END_LOOP);
}
static void local_view_tiles_its_alloc(TestCallableBuilder *b)
{
    b->local_count = 1;
    tcb_alloc(b, 0, 64);
    tcb_loop(b, 4);
    PtoProgramParam p[] = { looped_view(PTO_PARAM_LOCAL_TENSOR, 0, PTO_ARG_OUT, 0, 16, 16) };
    tcb_submit(b, 1, p, 1);
    tcb_insn(b, PTO_OP_END_LOOP);
}
static void loop_count_too_large(TestCallableBuilder *b)
{
    tcb_loop(b, (uint64_t)INT64_MAX + 1);
    tcb_insn(b, PTO_OP_END_LOOP);
}
static void scalar_leaves_int64(TestCallableBuilder *b)
{
    tcb_loop(b, (uint64_t)INT64_MAX);
    PtoProgramParam p[] = { { .kind = PTO_PARAM_SCALAR_AFFINE, .direction = PTO_ARG_SCALAR } };
    p[0].offset.coef[0] = 2;
    tcb_submit(b, 1, p, 1);
    tcb_insn(b, PTO_OP_END_LOOP);
}
static void offset_leaves_int64(TestCallableBuilder *b)
{
    tcb_loop(b, 1ull << 62);
    PtoProgramParam p[] = { looped_view(PTO_PARAM_ARG_TENSOR, 0, PTO_ARG_IN, 0, 4, 4) };
    tcb_submit(b, 1, p, 1);
    tcb_insn(b, PTO_OP_END_LOOP);
}
static void alloc_in_a_repeated_scope(TestCallableBuilder *b)
{
    b->local_count = 1;
    tcb_loop(b, 2);
    tcb_insn(b, PTO_OP_SCOPE_BEGIN);
    tcb_alloc(b, 0, 64);
    PtoProgramParam p[] = { tcb_local(0, PTO_ARG_OUT, 0, 64) };
    tcb_submit(b, 1, p, 1);
    tcb_insn(b, PTO_OP_SCOPE_END);
    tcb_insn(b, PTO_OP_END_LOOP);
}
/* 11 x 37 f32 rows tiled 8 x 8 (2 x 5 tiles), the last tile of each dim clamped */
static PtoProgramParam clamped_tile(uint32_t kind, uint32_t index, uint8_t direction, int64_t rows, int64_t cols)
{
    PtoProgramParam p = tcb_view2(kind, index, direction, PTO_DTYPE_F32, rows, cols, 0, 0, 0, 0);
    for (int d = 0; d < 2; d++) {
        p.dims[d].offset.coef[d] = 8;
        p.dims[d].extent.base = d == 0 ? rows : cols;
        p.dims[d].extent.coef[d] = -8;
        p.dims[d].extent.clamp = PTO_AFFINE_HAS_HI;
        p.dims[d].extent.hi = 8;
    }
    return p;
}
static void tiles_with_clamped_tails(TestCallableBuilder *b)
{
    tcb_loop(b, 2);
    tcb_loop(b, 5);
    PtoProgramParam p[] = { clamped_tile(PTO_PARAM_ARG_TENSOR, 0, PTO_ARG_IN, 11, 37) };
    tcb_submit(b, 1, p, 1);
    tcb_insn(b, PTO_OP_END_LOOP);
    tcb_insn(b, PTO_OP_END_LOOP);
}
static void tiles_overhanging_a_row(TestCallableBuilder *b)
{
    tcb_loop(b, 2);
    tcb_loop(b, 5);
    PtoProgramParam p[] = { clamped_tile(PTO_PARAM_ARG_TENSOR, 0, PTO_ARG_IN, 11, 37) };
    p[0].dims[1].extent.clamp = 0; /* no tail clamp: the last column tile is 8 wide */
    p[0].dims[1].extent.hi = 0;
    p[0].dims[1].extent.base = 8;
    p[0].dims[1].extent.coef[1] = 0;
    tcb_submit(b, 1, p, 1);
    tcb_insn(b, PTO_OP_END_LOOP);
    tcb_insn(b, PTO_OP_END_LOOP);
}
static void overhang_in_a_long_loop(TestCallableBuilder *b)
{
    tcb_loop(b, 1u << 20); /* beyond the iterations registration enumerates: ranges prove it */
    PtoProgramParam p[] = { tcb_view2(PTO_PARAM_ARG_TENSOR, 0, PTO_ARG_IN, PTO_DTYPE_F32, 11, 37, 0, 32, 1, 8) };
    p[0].dims[0].offset.coef[0] = 0;
    tcb_submit(b, 1, p, 1);
    tcb_insn(b, PTO_OP_END_LOOP);
}
static void strided_local_past_alloc(TestCallableBuilder *b)
{
    b->local_count = 1;
    tcb_alloc(b, 0, 4 * 4 * 4 - 4); /* one f32 short of 4 x 4 */
    PtoProgramParam p[] = { tcb_view2(PTO_PARAM_LOCAL_TENSOR, 0, PTO_ARG_OUT, PTO_DTYPE_F32, 4, 4, 0, 0, 4, 4) };
    tcb_submit(b, 1, p, 1);
}
static void strided_bad_dtype(TestCallableBuilder *b)
{
    PtoProgramParam p[] = { tcb_view2(PTO_PARAM_ARG_TENSOR, 0, PTO_ARG_IN, 77, 4, 4, 0, 0, 4, 4) };
    tcb_submit(b, 1, p, 1);
}
static void strided_selected_with_extent(TestCallableBuilder *b)
{
    PtoProgramParam p[] = { tcb_view2(PTO_PARAM_ARG_TENSOR, 0, PTO_ARG_IN, PTO_DTYPE_F32, 4, 4, 1, 0, 1, 4) };
    p[0].dims[0].flags = PTO_VIEW_DIM_SELECTED;
    tcb_submit(b, 1, p, 1);
}
static void strided_clamp_inverted(TestCallableBuilder *b)
{
    PtoProgramParam p[] = { tcb_view2(PTO_PARAM_ARG_TENSOR, 0, PTO_ARG_IN, PTO_DTYPE_F32, 4, 4, 0, 0, 4, 4) };
    p[0].dims[1].extent.clamp = PTO_AFFINE_HAS_LO | PTO_AFFINE_HAS_HI;
    p[0].dims[1].extent.lo = 3;
    p[0].dims[1].extent.hi = 2;
    tcb_submit(b, 1, p, 1);
}
static void local_used_after_its_scope(TestCallableBuilder *b)
{
    b->local_count = 1;
    tcb_insn(b, PTO_OP_SCOPE_BEGIN);
    tcb_alloc(b, 0, 64);
    tcb_insn(b, PTO_OP_SCOPE_END);
    PtoProgramParam p[] = { tcb_local(0, PTO_ARG_OUT, 0, 64) };
    tcb_submit(b, 1, p, 1);
}
static void local_of_a_scope_reused_by_an_inner_loop(TestCallableBuilder *b)
{
    b->local_count = 1;
    tcb_insn(b, PTO_OP_SCOPE_BEGIN);
    tcb_loop(b, 3);
    tcb_alloc(b, 0, 64);
    tcb_insn(b, PTO_OP_SCOPE_BEGIN);
    PtoProgramParam p[] = { tcb_local(0, PTO_ARG_OUT, 0, 64) };
    tcb_submit(b, 1, p, 1);
    tcb_insn(b, PTO_OP_SCOPE_END);
    tcb_insn(b, PTO_OP_END_LOOP);
    tcb_insn(b, PTO_OP_SCOPE_END);
}
static void loop_with_params(TestCallableBuilder *b)
{
    PtoLoopInsn l = { .head = { PTO_OP_LOOP, 1, sizeof l }, .count = 1 };
    tcb_raw(b, &l, sizeof l);
}

TEST(decoder_checks_program_nesting_and_locals)
{
    struct { void (*shape)(TestCallableBuilder *); int ok; const char *message; } cases[] = {
        { loop_left_open, 0, "the LOOP at instruction 2 is never closed" },
        { end_loop_alone, 0, "instruction 2 (END_LOOP) closes nothing" },
        { scope_left_open, 0, "the SCOPE_BEGIN at instruction 2 is never closed" },
        { scope_end_alone, 0, "instruction 2 (SCOPE_END) closes nothing" },
        { crossed, 0, "instruction 4 (END_LOOP) would close the SCOPE_BEGIN opened at instruction 3" },
        { five_loops, 0, "instruction 6 (LOOP) nests loops deeper than 4" },
        { five_scopes, 0, "instruction 6 (SCOPE_BEGIN) nests scopes deeper than 4" },
        { four_of_each, 1, "" },
        { local_used_before_alloc, 0, "uses local tensor 0 before its ALLOC_TENSOR" },
        { local_allocated_twice, 0, "allocates local 0 a second time" },
        { alloc_out_of_range, 0, "allocates local 1 but local_count is 1" },
        { loop_with_params, 0, "(LOOP) has param_count 1, must be 0" },
        { writes_in_tensor, 0, "instruction 2 param 0 (OUT) writes argument tensor 0, which the signature declares IN" },
        { negative_view_in_loop, 0, "instruction 3 param 0: the view offset reaches -8; a view lies inside its tensor" },
        { negative_size, 0, "instruction 2 param 0: the view size reaches -4" },
        { negative_view_never_runs, 1, "" },
        { local_view_past_alloc, 0, "instruction 4 param 0: the view reaches byte 68 of local tensor 0, which has 64 bytes" },
        { local_view_tiles_its_alloc, 1, "" },
        { loop_count_too_large, 0, "instruction 2 (LOOP) count 9223372036854775808 exceeds 9223372036854775807" },
        { scalar_leaves_int64, 0, "instruction 3 param 0: the scalar value leaves the 64-bit range in some iteration" },
        { alloc_in_a_repeated_scope, 1, "" },
        { tiles_with_clamped_tails, 1, "" },
        { tiles_overhanging_a_row, 0,
          "instruction 4 param 0 (IN argument tensor 0): dim 1: elements [32, 32 + 8) leave its bound of 37 at i0=0, "
          "i1=4" },
        { strided_local_past_alloc, 0,
          "instruction 3 param 0 (OUT local tensor 0): its last element ends at byte 64 of a 60-byte tensor at "
          "outside any loop" },
        { overhang_in_a_long_loop, 0, "instruction 3 param 0: dim 1 reaches element 40 of its bound of 37 in some "
                                      "iteration" },
        { strided_bad_dtype, 0, "instruction 2 param 0: dtype 77 is not a PtoDataType" },
        { strided_selected_with_extent, 0, "instruction 2 param 0: dim 0 is SELECTED (extent 1) but carries an extent" },
        { strided_clamp_inverted, 0, "instruction 2 param 0: dim 1 has a malformed clamp" },
        { local_used_after_its_scope, 0,
          "instruction 5 param 0 uses local tensor 0 after the scope that frees it (SCOPE_BEGIN at instruction 2) has "
          "ended" },
        { local_of_a_scope_reused_by_an_inner_loop, 1, "" },
        { offset_leaves_int64, 0, "instruction 3 param 0: the view's offset leaves the 64-bit range in some iteration" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char msg[CHIP_CALLABLE_MESSAGE_BYTES];
        int rc = decode_program(cases[i].shape, msg);
        if (cases[i].ok) {
            CHECK_EQ_INT(rc, PTO_OK);
        } else {
            CHECK_EQ_INT(rc, PTO_ERR_BAD_CALLABLE);
            CHECK_CONTAINS(msg, cases[i].message);
        }
    }
}

/* Found by fuzz_chip_callable's differential invariant (registration accepts
   => the interpreter runs the program): a local allocated only inside a LOOP of
   count 0 and used after it was accepted, and every run then refused it ("uses
   local tensor 0 before its ALLOC_TENSOR has executed"). Registration now
   refuses it, as the Java Program builder does; a use that never runs either
   stays fine. Regression input: corpus/chip_callable/regress-local-allocated-in-zero-trip-loop. */
static void local_allocated_only_in_a_zero_trip_loop(TestCallableBuilder *b)
{
    b->local_count = 1;
    tcb_loop(b, 0);
    tcb_alloc(b, 0, 64);
    tcb_insn(b, PTO_OP_END_LOOP);
    PtoProgramParam p[] = { tcb_local(0, PTO_ARG_OUT, 0, 64) };
    tcb_submit(b, 1, p, 1);
}
static void local_of_a_zero_trip_loop_used_only_inside_it(TestCallableBuilder *b)
{
    b->local_count = 1;
    tcb_loop(b, 0);
    tcb_alloc(b, 0, 64);
    PtoProgramParam p[] = { tcb_local(0, PTO_ARG_OUT, 0, 64) };
    tcb_submit(b, 1, p, 1);
    tcb_insn(b, PTO_OP_END_LOOP);
}
static void local_of_a_zero_trip_loop_used_in_another(TestCallableBuilder *b)
{
    b->local_count = 1;
    tcb_loop(b, 0);
    tcb_alloc(b, 0, 64);
    tcb_insn(b, PTO_OP_END_LOOP);
    tcb_loop(b, 5);
    tcb_loop(b, 0);
    PtoProgramParam p[] = { tcb_local(0, PTO_ARG_OUT, 0, 64) };
    tcb_submit(b, 1, p, 1);
    tcb_insn(b, PTO_OP_END_LOOP);
    tcb_insn(b, PTO_OP_END_LOOP);
}
static void local_of_a_running_loop_used_after_it(TestCallableBuilder *b)
{
    b->local_count = 1;
    tcb_loop(b, 2);
    tcb_alloc(b, 0, 64);
    tcb_insn(b, PTO_OP_END_LOOP);
    PtoProgramParam p[] = { tcb_local(0, PTO_ARG_OUT, 0, 64) };
    tcb_submit(b, 1, p, 1);
}

TEST(decoder_refuses_a_local_whose_alloc_never_runs_before_a_use_that_does)
{
    char msg[CHIP_CALLABLE_MESSAGE_BYTES];
    CHECK_EQ_INT(decode_program(local_allocated_only_in_a_zero_trip_loop, msg), PTO_ERR_BAD_CALLABLE);
    CHECK_CONTAINS(msg, "instruction 5 param 0 uses local tensor 0, whose ALLOC_TENSOR (instruction 3) is inside a "
                        "LOOP of count 0 and never runs");
    CHECK_EQ_INT(decode_program(local_of_a_zero_trip_loop_used_only_inside_it, msg), PTO_OK);
    CHECK_EQ_INT(decode_program(local_of_a_zero_trip_loop_used_in_another, msg), PTO_OK);
    CHECK_EQ_INT(decode_program(local_of_a_running_loop_used_after_it, msg), PTO_OK);
}

TEST(decoder_limits_names_to_128_bytes)
{
    TestCallableBuilder b;
    tcb_init(&b);
    char name[130];
    memset(name, 'k', 129);
    name[129] = '\0';
    tcb_child(&b, 1, PTO_CORE_AIV, name);
    uint32_t size;
    uint8_t *c = tcb_build(&b, &size);
    char msg[CHIP_CALLABLE_MESSAGE_BYTES];
    CHECK_EQ_INT(decode(c, msg), PTO_ERR_BAD_CALLABLE);
    CHECK_CONTAINS(msg, "name is 129 bytes long, the limit is 128");
    free(c);
    tcb_free(&b);
}

TEST(fnv1a64_matches_the_reference_vectors)
{
    CHECK(pto_fnv1a64("", 0) == 0xcbf29ce484222325ull);
    CHECK(pto_fnv1a64("a", 1) == 0xaf63dc4c8601ec8cull);
    CHECK(pto_fnv1a64("foobar", 6) == 0x85944171f73967e8ull);
}

TEST(builtin_kernel_names_are_known_exactly)
{
    CHECK(pto_builtin_kernel_known("vadd", 4));
    CHECK(pto_builtin_kernel_known("noop", 4));
    CHECK(!pto_builtin_kernel_known("vad", 3));
    CHECK(!pto_builtin_kernel_known("vaddx", 5));
    CHECK(!pto_builtin_kernel_known("malloc", 6));
}

/* Found by the fuzz target (src/test/fuzz, docs/hardening.md): a caller that
   grows the header's total_size between registration's validation and its
   private copy made the decoder trust the new size and read past the copy,
   which holds only the validated bytes (a heap overflow under the asan target).
   Here the changed header also moves the program past those bytes. The copy
   must be refused for its changed total_size before it is decoded. The
   regression input is corpus/chip_callable/regress-private-copy-total-size-grew. */
TEST(private_copy_refuses_a_total_size_changed_after_validation)
{
    uint32_t size;
    uint8_t *valid = base_callable(&size);
    ChipCallableView v;
    char msg[CHIP_CALLABLE_MESSAGE_BYTES];
    CHECK_EQ_INT(chip_callable_decode(valid, &v, msg, sizeof msg), PTO_OK);

    uint8_t *changed = malloc(size); /* exactly the validated bytes, as the caller holds them */
    memcpy(changed, valid, size);
    ChipCallableHeader h;
    memcpy(&h, changed, sizeof h);
    h.orchestration.offset = (size + 7u) & ~7u;
    h.orchestration.size = 64;
    h.total_size = h.orchestration.offset + h.orchestration.size;
    memcpy(changed, &h, sizeof h);

    uint8_t *copy = changed; /* must come back NULL */
    ChipCallableView copy_view;
    CHECK_EQ_INT(chip_callable_private_copy(changed, size, &copy, &copy_view), PTO_ERR_BAD_CALLABLE);
    CHECK(copy == NULL);
    CHECK_EQ_INT(copy_view.header.total_size, 0);
    CHECK_CONTAINS(pto_last_error(), "total_size changed");

    /* the unchanged bytes still copy */
    CHECK_EQ_INT(chip_callable_private_copy(valid, size, &copy, &copy_view), PTO_OK);
    CHECK(copy != NULL && memcmp(copy, valid, size) == 0);
    CHECK_EQ_INT(copy_view.header.total_size, size);
    free(copy);
    /* too few bytes for a header: refused without reading any */
    CHECK_EQ_INT(chip_callable_private_copy(valid, 8, &copy, &copy_view), PTO_ERR_BAD_CALLABLE);
    CHECK(copy == NULL);
    free(changed);
    free(valid);
}

/* ---- the static task count ------------------------------------------------- */

static uint64_t task_count_of(TestCallableBuilder *b)
{
    uint32_t size;
    uint8_t *c = tcb_build(b, &size);
    tcb_free(b);
    char msg[CHIP_CALLABLE_MESSAGE_BYTES];
    ChipCallableView v;
    uint64_t tasks = 0xBAD;
    if (chip_callable_decode(c, &v, msg, sizeof msg) == PTO_OK)
        tasks = chip_program_task_count(&v);
    else
        fprintf(stderr, "decode: %s\n", msg);
    free(c);
    return tasks;
}

static void submit_adds(TestCallableBuilder *b)
{
    PtoProgramParam adds[] = { tcb_tensor(2, PTO_ARG_IN, 0, 64), tcb_tensor(2, PTO_ARG_OUT, 0, 64),
                               tcb_scalar_arg(0) };
    tcb_submit(b, 2, adds, 3);
}

TEST(program_task_count_is_each_submit_times_its_loops_trip_counts)
{
    TestCallableBuilder b;
    base_builder(&b); /* two SUBMITs */
    CHECK_EQ_INT(task_count_of(&b), 2);

    /* 2 + 5 * (1 + 0 * 1 + 3 * 2) = 37 */
    base_builder(&b);
    tcb_loop(&b, 5);
    submit_adds(&b);
    tcb_loop(&b, 0);
    submit_adds(&b);
    tcb_insn(&b, PTO_OP_END_LOOP);
    tcb_loop(&b, 3);
    submit_adds(&b);
    submit_adds(&b);
    tcb_insn(&b, PTO_OP_END_LOOP);
    tcb_insn(&b, PTO_OP_END_LOOP);
    CHECK_EQ_INT(task_count_of(&b), 37);

    /* four loops of 2^16 around one SUBMIT: 2^64 does not fit, it saturates */
    base_builder(&b);
    for (int d = 0; d < 4; d++)
        tcb_loop(&b, 1ull << 16);
    submit_adds(&b);
    for (int d = 0; d < 4; d++)
        tcb_insn(&b, PTO_OP_END_LOOP);
    CHECK(task_count_of(&b) == UINT64_MAX);

    /* ... but a loop of count 0 inside zeroes what the outer loops multiplied */
    base_builder(&b);
    tcb_loop(&b, (uint64_t)INT64_MAX);
    tcb_loop(&b, (uint64_t)INT64_MAX);
    tcb_loop(&b, 0);
    submit_adds(&b);
    tcb_insn(&b, PTO_OP_END_LOOP);
    tcb_insn(&b, PTO_OP_END_LOOP);
    tcb_insn(&b, PTO_OP_END_LOOP);
    CHECK_EQ_INT(task_count_of(&b), 2);

    /* a sum that overflows saturates too, and loops around nothing add nothing */
    base_builder(&b);
    tcb_loop(&b, (uint64_t)INT64_MAX);
    submit_adds(&b);
    submit_adds(&b);
    submit_adds(&b);
    tcb_insn(&b, PTO_OP_END_LOOP);
    CHECK(task_count_of(&b) == UINT64_MAX);
    base_builder(&b);
    tcb_loop(&b, (uint64_t)INT64_MAX);
    tcb_insn(&b, PTO_OP_END_LOOP);
    CHECK_EQ_INT(task_count_of(&b), 2);
}

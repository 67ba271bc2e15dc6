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

TEST(decoder_accepts_a_valid_callable_and_describes_it)
{
    uint32_t size;
    uint8_t *c = tcb_base_callable(&size);
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
    tcb_base_program(&b);
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
    CHECK_EQ_INT(tcb_decode(NULL, msg), PTO_ERR_BAD_CALLABLE);
    CHECK_CONTAINS(msg, "NULL");
}

TEST(decoder_never_reads_past_a_lone_header_claiming_a_huge_size)
{
    /* exactly the header's bytes on the heap: ASan catches any read beyond */
    uint8_t *h = malloc(sizeof(ChipCallableHeader));
    uint32_t size;
    uint8_t *c = tcb_base_callable(&size);
    memcpy(h, c, sizeof(ChipCallableHeader));
    tcb_header(h)->total_size = 0xFFFFFFF0u;
    char msg[CHIP_CALLABLE_MESSAGE_BYTES];
    CHECK_EQ_INT(tcb_decode(h, msg), PTO_ERR_BAD_CALLABLE);
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
    ((PtoInsnHead *)(tcb_program(c) + FIRST_SUBMIT))->opcode = 10;
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
    { "unknown opcode", unknown_opcode, "instruction 0 has unknown opcode 10" },
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
        uint8_t *c = tcb_base_callable(&size);
        defects[i].corrupt(c, size);
        char msg[CHIP_CALLABLE_MESSAGE_BYTES];
        int rc = tcb_decode(c, msg);
        if (rc != PTO_ERR_BAD_CALLABLE || strstr(msg, defects[i].message) == NULL) {
            char what[512];
            snprintf(what, sizeof what, "%s: rc %d, message \"%s\", expected \"%s\"", defects[i].what, rc, msg,
                     defects[i].message);
            ptest_record_failure(__FILE__, __LINE__, what);
        }
        free(c);
    }
}

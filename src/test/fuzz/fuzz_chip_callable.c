/*
 * Fuzz target: the ChipCallable decoder (format/chip_callable.c), its private
 * copy, and — for an accepted program — the program interpreter run against it.
 *
 * Input: the callable's bytes. The decoder is handed exactly the bytes its
 * caller vouches for (ASan catches one byte more): max(56, total_size) when the
 * header's total_size fits in 1 MiB (the input zero-padded up to it), else the
 * input with total_size rewritten to the input's length (a total_size above the
 * format's limit is kept: only the header may be read then).
 *
 * Invariants, beyond "no crash, no leak, no UB":
 *  - a refusal is PTO_ERR_BAD_CALLABLE with a non-empty message and a zeroed
 *    view; the same bytes at an odd address, decoded again, with no message
 *    buffer or a tiny one, give the same code (and the same message);
 *  - an accepted callable decodes to a view that lies inside its bytes: every
 *    blob inside [56, total_size), the signature tensors-first and within the
 *    limits, every child well-formed and found by chip_callable_child_of, the
 *    func_id table sorted and unique, the program walk (chip_program_next)
 *    covering exactly the program's bytes with the counted SUBMITs and opcodes;
 *    it decodes to the identical view again, at an odd address, and through
 *    chip_callable_private_copy;
 *  - chip_callable_private_copy of bytes that are no longer a callable of the
 *    vouched size (the caller changed them after validation) refuses, reading
 *    nothing past that size;
 *  - an accepted program, run by the interpreter over argument tensors large
 *    enough for any view and an api that never fails, submits only views inside
 *    its tensors and locals and only children's func_ids, and returns PTO_OK (or
 *    the fake's budget code unchanged): registration accepted it, so the run
 *    refuses nothing the text alone decides.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "format/chip_callable.h"
#include "util/last_error.h"
#include "orch/program_orchestration.h"
#include "fuzz_common.h"
#include "fuzz_orch.h"
#include "ptorun/pto_runtime_c_api.h"

#define HEADER_BYTES ((uint32_t)sizeof(ChipCallableHeader))
#define PADDED_LIMIT (1u << 20)
#define SUBMIT_BUDGET 4096u

/* ---- helpers ------------------------------------------------------------------ */

static uint32_t le32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* Offset of p inside view->bytes, or -1 for NULL: pointers compared across copies. */
static int64_t rel(const ChipCallableView *v, const uint8_t *p)
{
    return p == NULL ? -1 : (int64_t)(p - v->bytes);
}

static void expect_same_view(const ChipCallableView *a, const ChipCallableView *b, const char *what)
{
    FUZZ_CHECK(memcmp(&a->header, &b->header, sizeof a->header) == 0, "%s: headers differ", what);
    FUZZ_CHECK(rel(a, a->signature) == rel(b, b->signature), "%s: signature offsets differ", what);
    FUZZ_CHECK(rel(a, a->children) == rel(b, b->children), "%s: children offsets differ", what);
    FUZZ_CHECK(rel(a, a->program) == rel(b, b->program), "%s: program offsets differ", what);
    FUZZ_CHECK(a->tensor_count == b->tensor_count && a->scalar_count == b->scalar_count, "%s: counts differ", what);
    FUZZ_CHECK(a->library_children == b->library_children, "%s: library_children differ", what);
    FUZZ_CHECK(a->program_size == b->program_size, "%s: program_size differs", what);
    FUZZ_CHECK(memcmp(&a->program_header, &b->program_header, sizeof a->program_header) == 0,
               "%s: program headers differ", what);
    FUZZ_CHECK(a->opcodes_used == b->opcodes_used && a->submit_count == b->submit_count, "%s: program stats differ",
               what);
    FUZZ_CHECK(memcmp(a->sorted_func_ids, b->sorted_func_ids, sizeof a->sorted_func_ids) == 0 &&
                   memcmp(a->sorted_child, b->sorted_child, sizeof a->sorted_child) == 0,
               "%s: func_id tables differ", what);
}

static int all_zero(const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++)
        if (b[i] != 0)
            return 0;
    return 1;
}

/* A blob is absent ({0,0}) or inside [header, total). */
static void expect_blob_inside(PtoBlobRef ref, uint32_t total, const char *what)
{
    if (ref.offset == 0 && ref.size == 0)
        return;
    FUZZ_CHECK(ref.offset >= HEADER_BYTES && (uint64_t)ref.offset + ref.size <= total,
               "%s blob [%u, +%u) outside [%u, %u)", what, ref.offset, ref.size, HEADER_BYTES, total);
}

static void expect_name(const ChipCallableView *v, PtoBlobRef ref, const char *what)
{
    expect_blob_inside(ref, v->header.total_size, what);
    FUZZ_CHECK(ref.size >= 1 && ref.size <= PTO_CALLABLE_MAX_NAME, "%s is %u bytes", what, ref.size);
    for (uint32_t i = 0; i < ref.size; i++) {
        uint8_t c = v->bytes[ref.offset + i];
        FUZZ_CHECK(c > 0x20 && c < 0x7f, "%s byte %u is 0x%02x", what, i, c);
    }
}

/* ---- an accepted callable --------------------------------------------------------- */

static void expect_signature(const ChipCallableView *v)
{
    const ChipCallableHeader *h = &v->header;
    FUZZ_CHECK(h->signature_length <= PTO_CALLABLE_MAX_SIGNATURE, "signature_length %u", h->signature_length);
    expect_blob_inside(h->signature, h->total_size, "signature");
    FUZZ_CHECK(h->signature.size == h->signature_length, "signature blob %u bytes for %u entries",
               h->signature.size, h->signature_length);
    FUZZ_CHECK(v->signature == v->bytes + h->signature.offset, "signature pointer off its blob%s", "");
    FUZZ_CHECK(v->tensor_count + v->scalar_count == h->signature_length, "%u tensors + %u scalars != %u",
               v->tensor_count, v->scalar_count, h->signature_length);
    FUZZ_CHECK(v->tensor_count <= PTO_MAX_TENSOR_ARGS && v->scalar_count <= PTO_MAX_SCALAR_ARGS,
               "%u tensors, %u scalars", v->tensor_count, v->scalar_count);
    for (uint32_t i = 0; i < h->signature_length; i++) {
        uint8_t d = v->signature[i];
        FUZZ_CHECK(d <= PTO_ARG_INOUT, "signature entry %u is %u", i, d);
        FUZZ_CHECK((i < v->tensor_count) == (d != PTO_ARG_SCALAR), "signature entry %u (%u) out of order", i, d);
    }
}

static void expect_children(const ChipCallableView *v)
{
    const ChipCallableHeader *h = &v->header;
    FUZZ_CHECK(h->child_count <= PTO_CALLABLE_MAX_CHILDREN, "child_count %u", h->child_count);
    expect_blob_inside(h->children, h->total_size, "children");
    FUZZ_CHECK(h->children.size == h->child_count * sizeof(ChipCallableChild), "children blob %u bytes for %u",
               h->children.size, h->child_count);
    FUZZ_CHECK(h->children.offset % 8 == 0, "children at %u", h->children.offset);
    FUZZ_CHECK(v->children == v->bytes + h->children.offset, "children pointer off its blob%s", "");
    uint32_t libraries = 0;
    for (uint32_t i = 0; i < h->child_count; i++) {
        ChipCallableChild c;
        chip_callable_child(v, i, &c);
        FUZZ_CHECK(c.reserved == 0 && c.resolved_addr == 0, "child %u reserved %u resolved 0x%llx", i, c.reserved,
                   (unsigned long long)c.resolved_addr);
        FUZZ_CHECK(c.func_id <= PTO_CALLABLE_MAX_FUNC_ID, "child %u func_id %u", i, c.func_id);
        FUZZ_CHECK(c.core_type == PTO_CORE_AIC || c.core_type == PTO_CORE_AIV, "child %u core %u", i, c.core_type);
        expect_name(v, c.name, "child name");
        if (c.source_kind == PTO_KERNEL_BUILTIN) {
            FUZZ_CHECK(c.image.offset == 0 && c.image.size == 0, "built-in child %u has an image", i);
            FUZZ_CHECK(pto_builtin_kernel_known(chip_callable_blob(v, c.name), c.name.size),
                       "child %u names no built-in kernel", i);
        } else {
            FUZZ_CHECK(c.source_kind == PTO_KERNEL_LIBRARY, "child %u source %u", i, c.source_kind);
            expect_blob_inside(c.image, h->total_size, "child image");
            FUZZ_CHECK(c.image.size > 0, "library child %u without an image", i);
            libraries++;
        }
        FUZZ_CHECK(chip_callable_child_of(v, c.func_id) == (int)i, "child_of(%u) is %d, not %u", c.func_id,
                   chip_callable_child_of(v, c.func_id), i);
        uint32_t at = chip_callable_resolved_addr_offset(v, i);
        FUZZ_CHECK((uint64_t)at + sizeof(uint64_t) <= h->total_size, "resolved_addr of child %u at %u", i, at);
        FUZZ_CHECK(all_zero(v->bytes + at, sizeof(uint64_t)), "resolved_addr of child %u not at its field", i);
    }
    FUZZ_CHECK(libraries == v->library_children, "%u library children counted as %u", libraries,
               v->library_children);
    for (uint32_t k = 0; k < h->child_count; k++) {
        FUZZ_CHECK(k == 0 || v->sorted_func_ids[k - 1] < v->sorted_func_ids[k], "func_id table unsorted at %u", k);
        FUZZ_CHECK(v->sorted_child[k] < h->child_count, "func_id table names child %u", v->sorted_child[k]);
        ChipCallableChild c;
        chip_callable_child(v, v->sorted_child[k], &c);
        FUZZ_CHECK(c.func_id == v->sorted_func_ids[k], "func_id table entry %u is %u, its child has %u", k,
                   v->sorted_func_ids[k], c.func_id);
    }
    FUZZ_CHECK(chip_callable_child_of(v, PTO_CALLABLE_MAX_FUNC_ID + 1) == -1, "child_of finds func_id 4096%s", "");
}

static void expect_param(const ChipCallableView *v, const PtoProgramParam *p, uint32_t insn, uint32_t i)
{
    FUZZ_CHECK(p->kind <= PTO_PARAM_SCALAR_AFFINE && p->ndims <= PTO_VIEW_MAX_DIMS,
               "insn %u param %u kind %u ndims %u", insn, i, p->kind, p->ndims);
    if (p->ndims == 0)
        FUZZ_CHECK(p->dtype == 0, "insn %u param %u: a flat view or scalar with dtype %u", insn, i, p->dtype);
    else
        FUZZ_CHECK(p->kind <= PTO_PARAM_LOCAL_TENSOR && pto_dtype_bytes(p->dtype) != 0,
                   "insn %u param %u: a strided view of kind %u, dtype %u", insn, i, p->kind, p->dtype);
    if (p->kind == PTO_PARAM_ARG_TENSOR || p->kind == PTO_PARAM_LOCAL_TENSOR) {
        FUZZ_CHECK(p->direction >= PTO_ARG_IN && p->direction <= PTO_ARG_INOUT, "insn %u param %u direction %u", insn,
                   i, p->direction);
        uint32_t limit = p->kind == PTO_PARAM_ARG_TENSOR ? v->tensor_count : v->program_header.local_count;
        FUZZ_CHECK(p->index < limit, "insn %u param %u index %u of %u", insn, i, p->index, limit);
        if (p->kind == PTO_PARAM_ARG_TENSOR && v->signature[p->index] == PTO_ARG_IN)
            FUZZ_CHECK(p->direction == PTO_ARG_IN, "insn %u param %u writes IN tensor %u", insn, i, p->index);
    } else {
        FUZZ_CHECK(p->direction == PTO_ARG_SCALAR, "insn %u scalar param %u direction %u", insn, i, p->direction);
        if (p->kind == PTO_PARAM_SCALAR_ARG)
            FUZZ_CHECK(p->index < v->scalar_count, "insn %u param %u scalar %u of %u", insn, i, p->index,
                       v->scalar_count);
    }
}

static void expect_text(const ChipCallableView *v, uint32_t *submits, uint32_t *opcodes);

static void expect_program(const ChipCallableView *v)
{
    const ChipCallableHeader *h = &v->header;
    expect_blob_inside(h->orchestration, h->total_size, "program");
    FUZZ_CHECK(h->orchestration.offset % 8 == 0, "program at %u", h->orchestration.offset);
    FUZZ_CHECK(h->orchestration_entry.offset == 0 && h->orchestration_entry.size == 0, "program with an entry%s", "");
    FUZZ_CHECK(v->program == v->bytes + h->orchestration.offset && v->program_size == h->orchestration.size,
               "program pointer off its blob%s", "");
    FUZZ_CHECK(v->program_size >= sizeof(PtoProgramHeader), "program of %u bytes", v->program_size);
    FUZZ_CHECK(memcmp(&v->program_header, v->program, sizeof v->program_header) == 0, "program header copy differs%s",
               "");
    uint32_t submits = 0, opcodes = 0;
    expect_text(v, &submits, &opcodes);
    FUZZ_CHECK(submits == v->submit_count && opcodes == v->opcodes_used, "%u SUBMITs, opcodes 0x%x; view says %u, 0x%x",
               submits, opcodes, v->submit_count, v->opcodes_used);
}

/* A decoded program's text, or a sub-graph's body: every instruction inside it,
   SUBMITs and opcodes counted (bodies included). */
static void expect_text(const ChipCallableView *v, uint32_t *submits, uint32_t *opcodes)
{
    FUZZ_CHECK(v->program_header.magic == PTO_PROGRAM_MAGIC && v->program_header.reserved == 0 &&
                   v->program_header.local_count <= PTO_PROGRAM_MAX_LOCALS,
               "program header magic 0x%x locals %u", v->program_header.magic, v->program_header.local_count);

    PtoProgramCursor cursor = { 0, 0 };
    PtoProgramInsn in;
    uint32_t count = 0, end = sizeof(PtoProgramHeader);
    while (chip_program_next(v, &cursor, &in)) {
        FUZZ_CHECK(in.offset == end, "insn %u at %u, the previous ended at %u", count, in.offset, end);
        FUZZ_CHECK(in.head.size_bytes >= sizeof(PtoInsnHead) && in.head.size_bytes % 8 == 0 &&
                       (uint64_t)in.offset + in.head.size_bytes <= v->program_size,
                   "insn %u [%u, +%u) in a %u-byte program", count, in.offset, in.head.size_bytes, v->program_size);
        FUZZ_CHECK(in.head.opcode >= PTO_OP_SUBMIT && in.head.opcode <= PTO_OP_INVOKE, "insn %u opcode %u", count,
                   in.head.opcode);
        *opcodes |= 1u << in.head.opcode;
        if (in.head.opcode == PTO_OP_SUBMIT) {
            FUZZ_CHECK(in.head.param_count <= PTO_MAX_TASK_PARAMS && in.u.submit.after_count <= PTO_PROGRAM_MAX_AFTER &&
                           in.head.size_bytes == chip_program_submit_size(in.head.param_count, in.u.submit.after_count),
                       "SUBMIT %u: %u params, %u predecessors in %u bytes", count, in.head.param_count,
                       in.u.submit.after_count, in.head.size_bytes);
            FUZZ_CHECK(chip_callable_child_of(v, in.u.submit.func_id) >= 0, "SUBMIT %u of func_id %u", count,
                       in.u.submit.func_id);
            for (uint32_t i = 0; i < in.head.param_count; i++) {
                PtoProgramParam p;
                chip_program_param(v, &in, i, &p);
                expect_param(v, &p, count, i);
            }
            (*submits)++;
        } else if (in.head.opcode == PTO_OP_SUBGRAPH) {
            ChipCallableView body;
            FUZZ_CHECK(in.u.subgraph.subgraph_id < PTO_PROGRAM_MAX_SUBGRAPHS && in.u.subgraph.boundary_count >= 1 &&
                           in.u.subgraph.boundary_count <= PTO_MAX_TASK_PARAMS &&
                           in.head.size_bytes >= chip_program_subgraph_body_offset(in.u.subgraph.boundary_count) +
                                                     sizeof(PtoProgramHeader),
                       "SUBGRAPH %u: id %u, %u boundary params in %u bytes", count, in.u.subgraph.subgraph_id,
                       in.u.subgraph.boundary_count, in.head.size_bytes);
            chip_program_subgraph_body(v, &in, &body);
            FUZZ_CHECK(body.tensor_count + body.scalar_count == in.u.subgraph.boundary_count, "SUBGRAPH %u boundary",
                       count);
            expect_text(&body, submits, opcodes);
        } else if (in.head.opcode == PTO_OP_INVOKE) {
            FUZZ_CHECK(in.head.param_count >= 1 && in.head.param_count <= PTO_MAX_TASK_PARAMS &&
                           in.head.size_bytes == chip_program_invoke_size(in.head.param_count),
                       "INVOKE %u: %u params in %u bytes", count, in.head.param_count, in.head.size_bytes);
            for (uint32_t i = 0; i < in.head.param_count; i++) {
                PtoProgramParam p;
                chip_program_param(v, &in, i, &p);
                expect_param(v, &p, count, i);
            }
        } else if (in.head.opcode == PTO_OP_ALLOC_TENSOR) {
            FUZZ_CHECK(in.u.alloc.local_id < v->program_header.local_count, "ALLOC %u of local %u", count,
                       in.u.alloc.local_id);
        }
        end = in.offset + in.head.size_bytes;
        count++;
    }
    FUZZ_CHECK(count == v->program_header.instruction_count, "walked %u of %u instructions", count,
               v->program_header.instruction_count);
    FUZZ_CHECK(end == v->program_size, "the walk ends at %u of %u bytes", end, v->program_size);
}

static void expect_library(const ChipCallableView *v)
{
    const ChipCallableHeader *h = &v->header;
    FUZZ_CHECK(v->program == NULL && v->program_size == 0 && v->submit_count == 0, "library with a program%s", "");
    expect_blob_inside(h->orchestration, h->total_size, "orchestration library");
    FUZZ_CHECK(h->orchestration.size > 0, "orchestration library without an image%s", "");
    expect_name(v, h->orchestration_entry, "orchestration entry");
}

static void expect_valid_view(const ChipCallableView *v, const uint8_t *bytes, uint32_t length)
{
    const ChipCallableHeader *h = &v->header;
    FUZZ_CHECK(v->bytes == bytes, "view over other bytes%s", "");
    FUZZ_CHECK(memcmp(h, bytes, sizeof *h) == 0, "header copy differs from the bytes%s", "");
    FUZZ_CHECK(h->magic == PTO_CALLABLE_MAGIC && h->format_version == PTO_CALLABLE_FORMAT_VERSION && h->reserved == 0,
               "header magic 0x%x version %u reserved %u", h->magic, h->format_version, h->reserved);
    FUZZ_CHECK(h->total_size >= HEADER_BYTES && h->total_size == length, "total_size %u for %u vouched bytes",
               h->total_size, length);
    expect_signature(v);
    expect_children(v);
    if (h->orchestration_kind == PTO_ORCH_PROGRAM)
        expect_program(v);
    else {
        FUZZ_CHECK(h->orchestration_kind == PTO_ORCH_LIBRARY, "orchestration kind %u", h->orchestration_kind);
        expect_library(v);
    }
}

/* The accepted program through the interpreter, with room for every view. */
static void run_program(const ChipCallableView *v)
{
    ChipStorageTaskArgs *args = aligned_alloc(_Alignof(ChipStorageTaskArgs), sizeof *args);
    FUZZ_CHECK(args != NULL, "out of memory%s", "");
    memset(args, 0, sizeof *args);
    args->tensor_count = (int32_t)v->tensor_count;
    args->scalar_count = (int32_t)v->scalar_count;
    for (uint32_t i = 0; i < v->tensor_count; i++) {
        /* registration proved every view's [offset, offset + size) within
           [0, INT64_MAX] over all iterations: tensors of INT64_MAX bytes hold any */
        args->tensors[i].addr = (uint64_t)(i + 1) << 32;
        args->tensors[i].size = INT64_MAX;
    }
    for (uint32_t i = 0; i < v->scalar_count; i++)
        args->scalars[i] = 0x5ca1a5000000ull + i;
    FuzzOrch orch;
    fuzz_orch_init(&orch, args, v, SUBMIT_BUDGET, UINT64_MAX);
    pto_clear_error();
    int rc = pto_program_orchestrate(&fuzz_orch_api, &orch, args, v->program, v->program_size, v->signature,
                                     v->header.signature_length);
    /* what registration cannot know: a run's predecessor ordinals, the views it could not prove */
    FUZZ_CHECK(rc == PTO_OK || (rc == PTO_ERR_CAPACITY && orch.budget_hit) ||
                   (rc == PTO_ERR_INVALID_ARGUMENT && orch.after_refused) ||
                   (rc == PTO_ERR_BAD_CALLABLE && v->views_unproved > 0) ||
                   (rc == PTO_ERR_ORCHESTRATION && orch.subgraph_refused) ||
                   /* a sub-graph body's own tensors past the recorder's bound: a run's limit */
                   (rc == PTO_ERR_OUT_OF_MEMORY && strstr(pto_last_error(), "subgraph_submit body: alloc_tensor") != NULL) ||
                   /* a body's views against the boundary views of an invocation: the run's to check */
                   (rc == PTO_ERR_BAD_CALLABLE && strstr(pto_last_error(), ") body: ") != NULL),
               "registration accepted the program, the interpreter returned %d: %s", rc, pto_last_error());
    FUZZ_CHECK(rc != PTO_OK || orch.scope_depth == 0, "the run ended with %u scopes open", orch.scope_depth);
    FUZZ_CHECK(orch.submitted <= v->submit_count || (v->opcodes_used & ((1u << PTO_OP_LOOP) | (1u << PTO_OP_INVOKE))) != 0,
               "%llu tasks from %u SUBMITs without a loop", (unsigned long long)orch.submitted, v->submit_count);
    fuzz_orch_finish(&orch);
    free(args);
}

/* ---- the target ------------------------------------------------------------------- */

/* The bytes the decoder may read, as described at the top; *length is their count. */
static uint8_t *vouched_bytes(const uint8_t *data, size_t size, uint32_t *length)
{
    uint8_t header[HEADER_BYTES];
    memset(header, 0, sizeof header);
    memcpy(header, data, size < sizeof header ? size : sizeof header);
    uint32_t total = le32(header + offsetof(ChipCallableHeader, total_size));
    uint32_t n;
    int rewrite = 0;
    if (total <= PADDED_LIMIT) {
        n = total < HEADER_BYTES ? HEADER_BYTES : total;
    } else if (total <= PTO_CALLABLE_MAX_BYTES) {
        n = size < HEADER_BYTES ? HEADER_BYTES : (uint32_t)size;
        rewrite = 1;
    } else {
        n = HEADER_BYTES; /* refused on the header alone */
    }
    uint8_t *bytes = calloc(1, n);
    FUZZ_CHECK(bytes != NULL, "out of memory%s", "");
    memcpy(bytes, data, size < n ? size : n);
    if (rewrite)
        memcpy(bytes + offsetof(ChipCallableHeader, total_size), &n, sizeof n);
    *length = n;
    return bytes;
}

/* The same bytes at an odd address (the format promises no alignment). */
static uint8_t *odd_copy(const uint8_t *bytes, uint32_t n, uint8_t **block)
{
    *block = malloc((size_t)n + 1);
    FUZZ_CHECK(*block != NULL, "out of memory%s", "");
    memcpy(*block + 1, bytes, n);
    return *block + 1;
}

static void check_refusal(const uint8_t *bytes, uint32_t n, int rc, const ChipCallableView *view, const char *msg)
{
    FUZZ_CHECK(rc == PTO_ERR_BAD_CALLABLE, "the decoder returned %d", rc);
    FUZZ_CHECK(fuzz_message_ok(msg, CHIP_CALLABLE_MESSAGE_BYTES), "refusal without a message%s", "");
    FUZZ_CHECK(all_zero(view, sizeof *view), "a refusal left the view filled in%s", "");

    ChipCallableView again;
    char msg2[CHIP_CALLABLE_MESSAGE_BYTES];
    FUZZ_CHECK(chip_callable_decode(bytes, &again, msg2, sizeof msg2) == rc && strcmp(msg, msg2) == 0,
               "decoding again gave another answer: %s / %s", msg, msg2);
    uint8_t *block;
    const uint8_t *odd = odd_copy(bytes, n, &block);
    FUZZ_CHECK(chip_callable_decode(odd, &again, msg2, sizeof msg2) == rc && strcmp(msg, msg2) == 0,
               "at an odd address: %s / %s", msg, msg2);
    free(block);
    FUZZ_CHECK(chip_callable_decode(bytes, &again, NULL, 0) == rc, "without a message buffer%s", "");
    char tiny[8];
    FUZZ_CHECK(chip_callable_decode(bytes, &again, tiny, sizeof tiny) == rc, "with an 8-byte message buffer%s", "");
    FUZZ_CHECK(memchr(tiny, '\0', sizeof tiny) != NULL && strncmp(tiny, msg, strlen(tiny)) == 0,
               "truncated message '%.8s' is not a prefix of '%s'", tiny, msg);
}

static void check_acceptance(const uint8_t *bytes, uint32_t n, const ChipCallableView *view)
{
    expect_valid_view(view, bytes, n);

    ChipCallableView again;
    char msg[CHIP_CALLABLE_MESSAGE_BYTES];
    FUZZ_CHECK(chip_callable_decode(bytes, &again, msg, sizeof msg) == PTO_OK, "decoding again refused: %s", msg);
    expect_same_view(view, &again, "decoded again");
    uint8_t *block;
    const uint8_t *odd = odd_copy(bytes, n, &block);
    FUZZ_CHECK(chip_callable_decode(odd, &again, msg, sizeof msg) == PTO_OK, "at an odd address refused: %s", msg);
    expect_same_view(view, &again, "at an odd address");
    free(block);

    uint8_t *copy;
    pto_clear_error();
    int rc = chip_callable_private_copy(bytes, n, &copy, &again);
    FUZZ_CHECK(rc == PTO_OK && copy != NULL, "private copy refused (%d): %s", rc, pto_last_error());
    FUZZ_CHECK(again.bytes == copy && memcmp(copy, bytes, n) == 0, "the private copy is not a copy%s", "");
    expect_same_view(view, &again, "private copy");
    free(copy);

    if (view->header.orchestration_kind == PTO_ORCH_PROGRAM)
        run_program(view);
}

/* chip_callable_private_copy(bytes, n) for bytes that need not be a callable of n
   bytes any more: it may read n bytes of them and nothing past its own copy. */
static void check_private_copy_of_changed_bytes(const uint8_t *data, size_t size)
{
    if (size == 0 || size > PADDED_LIMIT)
        return;
    uint32_t n = (uint32_t)size; /* fewer than a header's bytes must be refused unread */
    uint8_t *bytes = malloc(n);
    FUZZ_CHECK(bytes != NULL, "out of memory%s", "");
    memcpy(bytes, data, n);
    uint8_t *copy = (uint8_t *)bytes; /* any non-NULL value: must be NULL on failure */
    ChipCallableView view;
    pto_clear_error();
    int rc = chip_callable_private_copy(bytes, n, &copy, &view);
    if (rc == PTO_OK) {
        FUZZ_CHECK(copy != NULL && view.bytes == copy && view.header.total_size == n,
                   "private copy accepted %u bytes as a callable of %u", n, view.header.total_size);
        free(copy);
    } else {
        FUZZ_CHECK(rc == PTO_ERR_BAD_CALLABLE && copy == NULL, "private copy failed with %d, bytes %p", rc,
                   (void *)copy);
        FUZZ_CHECK(fuzz_message_ok(pto_last_error(), PTO_ERROR_MESSAGE_BYTES), "private copy refused silently%s", "");
    }
    free(bytes);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint32_t n;
    uint8_t *bytes = vouched_bytes(data, size, &n);
    ChipCallableView view;
    char msg[CHIP_CALLABLE_MESSAGE_BYTES];
    memset(msg, 'x', sizeof msg);
    int rc = chip_callable_decode(bytes, &view, msg, sizeof msg);
    FUZZ_CHECK(fuzz_documented_code(rc), "undocumented code %d", rc);
    fuzz_expect(rc == PTO_OK, "chip_callable_decode", msg);
    if (rc == PTO_OK)
        check_acceptance(bytes, n, &view);
    else
        check_refusal(bytes, n, rc, &view, msg);
    free(bytes);
    check_private_copy_of_changed_bytes(data, size);
    return 0;
}

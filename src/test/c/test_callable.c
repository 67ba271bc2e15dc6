#include "test_callable.h"

#include <stdlib.h>
#include <string.h>

#include "format/chip_callable.h"

#define ALIGN8(x) (((x) + 7u) & ~7u)

void tcb_init(TestCallableBuilder *b)
{
    memset(b, 0, sizeof *b);
    b->program = calloc(1, TCB_MAX_PROGRAM);
}

void tcb_free(TestCallableBuilder *b)
{
    free(b->program);
    b->program = NULL;
}

void tcb_signature(TestCallableBuilder *b, const uint8_t *dirs, uint32_t n)
{
    memcpy(b->signature, dirs, n);
    b->signature_length = n;
}

void tcb_child(TestCallableBuilder *b, uint32_t func_id, uint8_t core_type, const char *builtin)
{
    b->children[b->child_count++] = (TestChild){ func_id, core_type, PTO_KERNEL_BUILTIN, builtin, NULL, 0 };
}

void tcb_library_child(TestCallableBuilder *b, uint32_t func_id, uint8_t core_type, const uint8_t *image,
                       uint32_t size, const char *symbol)
{
    b->children[b->child_count++] = (TestChild){ func_id, core_type, PTO_KERNEL_LIBRARY, symbol, image, size };
}

void tcb_orchestration_library(TestCallableBuilder *b, const uint8_t *image, uint32_t size, const char *entry)
{
    b->orch_image = image;
    b->orch_image_size = size;
    b->orch_entry = entry;
}

PtoProgramParam tcb_local(uint32_t local, uint8_t direction, int64_t offset, int64_t size)
{
    PtoProgramParam p = tcb_tensor(local, direction, offset, size);
    p.kind = PTO_PARAM_LOCAL_TENSOR;
    return p;
}

PtoProgramParam tcb_tensor(uint32_t arg, uint8_t direction, int64_t offset, int64_t size)
{
    PtoProgramParam p = { .kind = PTO_PARAM_ARG_TENSOR, .direction = direction, .index = arg };
    p.offset.base = offset;
    p.size.base = size;
    return p;
}

PtoProgramParam tcb_view2(uint32_t kind, uint32_t index, uint8_t direction, uint8_t dtype, int64_t rows,
                          int64_t cols, int64_t row0, int64_t col0, int64_t nrows, int64_t ncols)
{
    PtoProgramParam p = { .kind = (uint8_t)kind, .direction = direction, .dtype = dtype, .ndims = 2, .index = index };
    p.dims[0].stride = cols;
    p.dims[0].bound = rows;
    p.dims[0].offset.base = row0;
    p.dims[0].extent.base = nrows;
    p.dims[1].stride = 1;
    p.dims[1].bound = cols;
    p.dims[1].offset.base = col0;
    p.dims[1].extent.base = ncols;
    return p;
}

PtoProgramParam tcb_imm(uint64_t value)
{
    return (PtoProgramParam){ .kind = PTO_PARAM_SCALAR_IMM, .direction = PTO_ARG_SCALAR, .imm = value };
}

PtoProgramParam tcb_scalar_arg(uint32_t index)
{
    return (PtoProgramParam){ .kind = PTO_PARAM_SCALAR_ARG, .direction = PTO_ARG_SCALAR, .index = index };
}

PtoProgramParam tcb_f32(float value)
{
    uint32_t bits;
    memcpy(&bits, &value, sizeof bits);
    return tcb_imm(bits);
}

static void append(TestCallableBuilder *b, const void *bytes, uint32_t n)
{
    if (n == 0)
        return; /* bytes may be NULL then, which memcpy must not see */
    memcpy(b->program + b->program_bytes, bytes, n);
    b->program_bytes += n;
}

void tcb_submit(TestCallableBuilder *b, uint32_t func_id, const PtoProgramParam *params, uint32_t n)
{
    PtoSubmitInsn s = { .head = { PTO_OP_SUBMIT, (uint16_t)n,
                                  (uint32_t)(sizeof s + n * sizeof(PtoProgramParam)) },
                        .func_id = func_id };
    append(b, &s, sizeof s);
    append(b, params, n * (uint32_t)sizeof(PtoProgramParam));
    b->instruction_count++;
}

void tcb_submit_after(TestCallableBuilder *b, uint32_t func_id, const PtoProgramParam *params, uint32_t n,
                      const PtoAffine *after, uint32_t n_after)
{
    PtoSubmitInsn s = { .head = { PTO_OP_SUBMIT, (uint16_t)n,
                                  (uint32_t)(sizeof s + n * sizeof(PtoProgramParam) + n_after * sizeof(PtoAffine)) },
                        .func_id = func_id, .after_count = (uint16_t)n_after };
    append(b, &s, sizeof s);
    append(b, params, n * (uint32_t)sizeof(PtoProgramParam));
    append(b, after, n_after * (uint32_t)sizeof(PtoAffine));
    b->instruction_count++;
}

void tcb_insn(TestCallableBuilder *b, uint16_t opcode)
{
    PtoInsnHead h = { opcode, 0, sizeof h };
    append(b, &h, sizeof h);
    b->instruction_count++;
}

void tcb_loop(TestCallableBuilder *b, uint64_t count)
{
    PtoLoopInsn l = { .head = { PTO_OP_LOOP, 0, sizeof l }, .count = count };
    append(b, &l, sizeof l);
    b->instruction_count++;
}

void tcb_alloc(TestCallableBuilder *b, uint32_t local_id, uint64_t bytes)
{
    PtoAllocInsn a = { .head = { PTO_OP_ALLOC_TENSOR, 0, sizeof a }, .local_id = local_id, .bytes = bytes };
    append(b, &a, sizeof a);
    b->instruction_count++;
}

void tcb_raw(TestCallableBuilder *b, const void *bytes, uint32_t n)
{
    append(b, bytes, n);
    b->instruction_count++;
}

void tcb_subgraph(TestCallableBuilder *b, uint32_t id, const uint8_t *dirs, uint32_t n, const TestCallableBuilder *body)
{
    uint32_t at = chip_program_subgraph_body_offset(n);
    PtoSubgraphInsn s = { .head = { PTO_OP_SUBGRAPH, 0,
                                    at + (uint32_t)sizeof(PtoProgramHeader) + body->program_bytes },
                          .subgraph_id = id, .boundary_count = (uint16_t)n };
    uint8_t padded[PTO_MAX_TASK_PARAMS + 8] = { 0 };
    memcpy(padded, dirs, n);
    PtoProgramHeader h = { PTO_PROGRAM_MAGIC, body->instruction_count, body->local_count, 0 };
    append(b, &s, sizeof s);
    append(b, padded, at - (uint32_t)sizeof s);
    append(b, &h, sizeof h);
    append(b, body->program, body->program_bytes);
    b->instruction_count++;
}

void tcb_invoke(TestCallableBuilder *b, uint32_t id, const PtoProgramParam *params, uint32_t n)
{
    PtoInvokeInsn s = { .head = { PTO_OP_INVOKE, (uint16_t)n, chip_program_invoke_size(n) }, .subgraph_id = id };
    append(b, &s, sizeof s);
    append(b, params, n * (uint32_t)sizeof(PtoProgramParam));
    b->instruction_count++;
}

uint8_t *tcb_build(const TestCallableBuilder *b, uint32_t *size)
{
    uint32_t sig_off = sizeof(ChipCallableHeader);
    uint32_t children_off = ALIGN8(sig_off + b->signature_length);
    uint32_t names_off = children_off + b->child_count * (uint32_t)sizeof(ChipCallableChild);
    uint32_t blob_end = names_off;
    for (uint32_t i = 0; i < b->child_count; i++)
        blob_end += (uint32_t)strlen(b->children[i].name);
    uint32_t images_off = ALIGN8(blob_end);
    blob_end = images_off;
    for (uint32_t i = 0; i < b->child_count; i++)
        blob_end = ALIGN8(blob_end + b->children[i].image_size);
    uint32_t orch_off = ALIGN8(blob_end);
    uint32_t orch_size = b->orch_image != NULL ? b->orch_image_size
                                               : (uint32_t)sizeof(PtoProgramHeader) + b->program_bytes;
    uint32_t entry_off = orch_off + orch_size;
    uint32_t entry_size = b->orch_image != NULL ? (uint32_t)strlen(b->orch_entry) : 0;
    uint32_t total = entry_off + entry_size;

    uint8_t *out = calloc(1, total);
    ChipCallableHeader h = {
        .magic = PTO_CALLABLE_MAGIC,
        .format_version = PTO_CALLABLE_FORMAT_VERSION,
        .orchestration_kind = b->orch_image != NULL ? PTO_ORCH_LIBRARY : PTO_ORCH_PROGRAM,
        .total_size = total,
        .child_count = b->child_count,
        .signature_length = b->signature_length,
        .signature = { b->signature_length ? sig_off : 0, b->signature_length },
        .children = { b->child_count ? children_off : 0, b->child_count * (uint32_t)sizeof(ChipCallableChild) },
        .orchestration = { orch_off, orch_size },
        .orchestration_entry = { entry_size ? entry_off : 0, entry_size },
    };
    memcpy(out, &h, sizeof h);
    memcpy(out + sig_off, b->signature, b->signature_length);
    uint32_t name_at = names_off, image_at = images_off;
    for (uint32_t i = 0; i < b->child_count; i++) {
        const TestChild *t = &b->children[i];
        uint32_t len = (uint32_t)strlen(t->name);
        ChipCallableChild c = {
            .func_id = t->func_id,
            .core_type = t->core_type,
            .source_kind = t->source_kind,
            .name = { name_at, len },
            .image = { t->image_size ? image_at : 0, t->image_size },
        };
        memcpy(out + children_off + i * sizeof c, &c, sizeof c);
        memcpy(out + name_at, t->name, len);
        name_at += len;
        if (t->image_size) {
            memcpy(out + image_at, t->image, t->image_size);
            image_at = ALIGN8(image_at + t->image_size);
        }
    }
    if (b->orch_image != NULL) {
        memcpy(out + orch_off, b->orch_image, orch_size);
        memcpy(out + entry_off, b->orch_entry, entry_size);
    } else {
        PtoProgramHeader ph = { PTO_PROGRAM_MAGIC, b->instruction_count, b->local_count, 0 };
        memcpy(out + orch_off, &ph, sizeof ph);
        memcpy(out + orch_off + sizeof ph, b->program, b->program_bytes);
    }
    *size = total;
    return out;
}

ChipCallableHeader *tcb_header(uint8_t *callable)
{
    return (ChipCallableHeader *)callable;
}

ChipCallableChild *tcb_children(uint8_t *callable)
{
    return (ChipCallableChild *)(callable + tcb_header(callable)->children.offset);
}

uint8_t *tcb_program(uint8_t *callable)
{
    return callable + tcb_header(callable)->orchestration.offset;
}

/* signature IN a, IN b, OUT c, SCALAR s; children 1 = vadd, 2 = vadds;
   c = a + b; c = c + s */
void tcb_base_program(TestCallableBuilder *b)
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

uint8_t *tcb_base_callable(uint32_t *size)
{
    TestCallableBuilder b;
    tcb_base_program(&b);
    uint8_t *c = tcb_build(&b, size);
    tcb_free(&b);
    return c;
}

int tcb_decode(const void *c, char *msg)
{
    ChipCallableView v;
    return chip_callable_decode(c, &v, msg, CHIP_CALLABLE_MESSAGE_BYTES);
}

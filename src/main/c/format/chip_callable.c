#include "format/chip_callable.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/callable_decoder.h"
#include "util/last_error.h"
#include "device/pto_builtin_kernels.h"
#include "ptorun/pto_runtime_c_api.h"

#define BUILTIN_NAME(name) #name,
static const char *const builtin_kernel_names[] = { PTO_BUILTIN_KERNELS(BUILTIN_NAME) };

int decoder_fail(CallableDecoder *d, const char *fmt, ...)
{
    if (d->msg != NULL && d->msg_size > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(d->msg, d->msg_size, fmt, ap);
        va_end(ap);
    }
    return PTO_ERR_BAD_CALLABLE;
}

const char *decoder_direction_name(uint32_t d)
{
    switch (d) {
    case PTO_ARG_SCALAR: return "SCALAR";
    case PTO_ARG_IN: return "IN";
    case PTO_ARG_OUT: return "OUT";
    case PTO_ARG_INOUT: return "INOUT";
    default: return "invalid";
    }
}

int pto_builtin_kernel_known(const char *name, size_t len)
{
    for (size_t i = 0; i < sizeof builtin_kernel_names / sizeof builtin_kernel_names[0]; i++)
        if (strlen(builtin_kernel_names[i]) == len && memcmp(builtin_kernel_names[i], name, len) == 0)
            return 1;
    return 0;
}

const char *pto_opcode_name(uint32_t opcode)
{
    switch (opcode) {
    case PTO_OP_SUBMIT: return "SUBMIT";
    case PTO_OP_ALLOC_TENSOR: return "ALLOC_TENSOR";
    case PTO_OP_LOOP: return "LOOP";
    case PTO_OP_END_LOOP: return "END_LOOP";
    case PTO_OP_SCOPE_BEGIN: return "SCOPE_BEGIN";
    case PTO_OP_SCOPE_BEGIN_MANUAL: return "SCOPE_BEGIN_MANUAL";
    case PTO_OP_SCOPE_END: return "SCOPE_END";
    case PTO_OP_SUBGRAPH: return "SUBGRAPH";
    case PTO_OP_INVOKE: return "INVOKE";
    default: return "unknown";
    }
}

/* ---- blobs and names --------------------------------------------------------- */

int decoder_check_blob(CallableDecoder *d, PtoBlobRef ref, const char *what, uint32_t align)
{
    if (ref.size == 0 && ref.offset == 0)
        return PTO_OK;
    if (ref.offset < sizeof(ChipCallableHeader))
        return decoder_fail(d, "%s blob at offset %u overlaps the %zu-byte header", what, ref.offset,
                    sizeof(ChipCallableHeader));
    if ((uint64_t)ref.offset + ref.size > d->total)
        return decoder_fail(d, "%s blob [%u, %u + %u) lies outside the callable's total_size of %u bytes", what,
                    ref.offset, ref.offset, ref.size, d->total);
    if (ref.offset % align != 0)
        return decoder_fail(d, "%s blob offset %u is not %u-byte aligned", what, ref.offset, align);
    return PTO_OK;
}

/* A kernel name or entry symbol: 1..PTO_CALLABLE_MAX_NAME printable bytes, no space. */
static int check_name(CallableDecoder *d, PtoBlobRef ref, const char *what)
{
    int rc = decoder_check_blob(d, ref, what, 1);
    if (rc != PTO_OK)
        return rc;
    if (ref.size == 0)
        return decoder_fail(d, "%s is empty", what);
    if (ref.size > PTO_CALLABLE_MAX_NAME)
        return decoder_fail(d, "%s is %u bytes long, the limit is %u", what, ref.size, PTO_CALLABLE_MAX_NAME);
    for (uint32_t i = 0; i < ref.size; i++) {
        uint8_t c = d->bytes[ref.offset + i];
        if (c <= 0x20 || c >= 0x7f)
            return decoder_fail(d, "%s has byte 0x%02x at position %u: names are printable ASCII without spaces",
                        what, c, i);
    }
    return PTO_OK;
}

/* ---- header, signature, children ------------------------------------------------ */

static int decode_header(CallableDecoder *d, const uint8_t *bytes)
{
    ChipCallableHeader *h = &d->view->header;
    memcpy(h, bytes, sizeof *h);
    if (h->magic != PTO_CALLABLE_MAGIC)
        return decoder_fail(d, "bad magic 0x%08x, expected 0x%08x (\"PTCC\")", h->magic, PTO_CALLABLE_MAGIC);
    if (h->format_version != PTO_CALLABLE_FORMAT_VERSION)
        return decoder_fail(d, "format version %u is not supported (expected %u)", h->format_version,
                    PTO_CALLABLE_FORMAT_VERSION);
    if (h->total_size < sizeof *h)
        return decoder_fail(d, "total_size %u is smaller than the %zu-byte header", h->total_size, sizeof *h);
    if (h->total_size > PTO_CALLABLE_MAX_BYTES)
        return decoder_fail(d, "total_size %u exceeds the limit of %u bytes", h->total_size, PTO_CALLABLE_MAX_BYTES);
    /* total_size is now trusted: the caller vouches for that many bytes */
    d->total = h->total_size;
    if (h->reserved != 0)
        return decoder_fail(d, "header reserved field is %u, must be 0", h->reserved);
    if (h->orchestration_kind != PTO_ORCH_PROGRAM && h->orchestration_kind != PTO_ORCH_LIBRARY)
        return decoder_fail(d, "unknown orchestration kind %u", h->orchestration_kind);
    if (h->child_count > PTO_CALLABLE_MAX_CHILDREN)
        return decoder_fail(d, "child_count %u exceeds the limit of %u", h->child_count, PTO_CALLABLE_MAX_CHILDREN);
    if (h->signature_length > PTO_CALLABLE_MAX_SIGNATURE)
        return decoder_fail(d, "signature_length %u exceeds the limit of %u", h->signature_length,
                    PTO_CALLABLE_MAX_SIGNATURE);
    return PTO_OK;
}

static int decode_signature(CallableDecoder *d)
{
    const ChipCallableHeader *h = &d->view->header;
    int rc = decoder_check_blob(d, h->signature, "signature", 1);
    if (rc != PTO_OK)
        return rc;
    if (h->signature.size != h->signature_length)
        return decoder_fail(d, "signature blob is %u bytes for a signature_length of %u", h->signature.size,
                    h->signature_length);
    const uint8_t *sig = d->bytes + h->signature.offset;
    uint32_t tensors = 0, scalars = 0;
    for (uint32_t i = 0; i < h->signature_length; i++) {
        if (sig[i] > PTO_ARG_INOUT)
            return decoder_fail(d, "signature entry %u has invalid direction %u", i, sig[i]);
        if (sig[i] == PTO_ARG_SCALAR) {
            scalars++;
        } else if (scalars > 0) {
            return decoder_fail(d, "signature entry %u is a tensor (%s) after a scalar: tensors come first", i,
                        decoder_direction_name(sig[i]));
        } else {
            tensors++;
        }
    }
    if (tensors > PTO_MAX_TENSOR_ARGS)
        return decoder_fail(d, "signature has %u tensors, the limit is %d", tensors, PTO_MAX_TENSOR_ARGS);
    if (scalars > PTO_MAX_SCALAR_ARGS)
        return decoder_fail(d, "signature has %u scalars, the limit is %d", scalars, PTO_MAX_SCALAR_ARGS);
    d->view->signature = sig;
    d->view->tensor_count = tensors;
    d->view->scalar_count = scalars;
    return PTO_OK;
}

void chip_callable_child(const ChipCallableView *view, uint32_t index, ChipCallableChild *out)
{
    memcpy(out, view->children + (size_t)index * sizeof *out, sizeof *out);
}

uint32_t chip_callable_resolved_addr_offset(const ChipCallableView *view, uint32_t index)
{
    return view->header.children.offset + index * (uint32_t)sizeof(ChipCallableChild) +
           (uint32_t)offsetof(ChipCallableChild, resolved_addr);
}

static int decode_child(CallableDecoder *d, uint32_t i, ChipCallableChild *c)
{
    chip_callable_child(d->view, i, c);
    char what[64];
    snprintf(what, sizeof what, "child %u (func_id %u) name", i, c->func_id);
    if (c->reserved != 0)
        return decoder_fail(d, "child %u reserved field is %u, must be 0", i, c->reserved);
    if (c->func_id > PTO_CALLABLE_MAX_FUNC_ID)
        return decoder_fail(d, "child %u func_id %u exceeds the limit of %u", i, c->func_id, PTO_CALLABLE_MAX_FUNC_ID);
    if (c->core_type != PTO_CORE_AIC && c->core_type != PTO_CORE_AIV)
        return decoder_fail(d, "child %u (func_id %u) has invalid core type %u", i, c->func_id, c->core_type);
    if (c->resolved_addr != 0)
        return decoder_fail(d, "child %u (func_id %u) resolved_addr is set; it must be 0 in a caller's callable", i,
                    c->func_id);
    int rc = check_name(d, c->name, what);
    if (rc != PTO_OK)
        return rc;
    const char *name = chip_callable_blob(d->view, c->name);
    int name_len = (int)c->name.size;
    switch (c->source_kind) {
    case PTO_KERNEL_BUILTIN:
        if (c->image.size != 0 || c->image.offset != 0)
            return decoder_fail(d, "child %u (func_id %u) is the built-in kernel '%.*s' but carries a library image", i,
                        c->func_id, name_len, name);
        if (!pto_builtin_kernel_known(name, c->name.size))
            return decoder_fail(d, "child %u (func_id %u): '%.*s' is not a built-in kernel", i, c->func_id, name_len,
                        name);
        return PTO_OK;
    case PTO_KERNEL_LIBRARY:
        snprintf(what, sizeof what, "child %u (func_id %u) image", i, c->func_id);
        if ((rc = decoder_check_blob(d, c->image, what, 1)) != PTO_OK)
            return rc;
        if (c->image.size == 0)
            return decoder_fail(d, "child %u (func_id %u) is a kernel library without an image", i, c->func_id);
        d->view->library_children++;
        return PTO_OK;
    default:
        return decoder_fail(d, "child %u (func_id %u) has invalid source kind %u", i, c->func_id, c->source_kind);
    }
}

static int decode_children(CallableDecoder *d)
{
    ChipCallableView *v = d->view;
    const ChipCallableHeader *h = &v->header;
    int rc = decoder_check_blob(d, h->children, "children", 8);
    if (rc != PTO_OK)
        return rc;
    if (h->children.size != h->child_count * (uint32_t)sizeof(ChipCallableChild))
        return decoder_fail(d, "children blob is %u bytes for %u children of %zu bytes", h->children.size,
                    h->child_count, sizeof(ChipCallableChild));
    v->children = d->bytes + h->children.offset;
    for (uint32_t i = 0; i < h->child_count; i++) {
        ChipCallableChild c;
        if ((rc = decode_child(d, i, &c)) != PTO_OK)
            return rc;
        /* insertion into the sorted func_id table finds duplicates on the way */
        uint32_t at = i;
        while (at > 0 && v->sorted_func_ids[at - 1] > c.func_id) {
            v->sorted_func_ids[at] = v->sorted_func_ids[at - 1];
            v->sorted_child[at] = v->sorted_child[at - 1];
            at--;
        }
        if (at > 0 && v->sorted_func_ids[at - 1] == c.func_id)
            return decoder_fail(d, "func_id %u is used by child %u and child %u", c.func_id, v->sorted_child[at - 1], i);
        v->sorted_func_ids[at] = c.func_id;
        v->sorted_child[at] = (uint8_t)i;
    }
    return PTO_OK;
}

int chip_callable_child_of(const ChipCallableView *view, uint32_t func_id)
{
    uint32_t lo = 0, hi = view->header.child_count;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (view->sorted_func_ids[mid] < func_id)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < view->header.child_count && view->sorted_func_ids[lo] == func_id)
        return view->sorted_child[lo];
    return -1;
}

static int decode_orchestration(CallableDecoder *d)
{
    const ChipCallableHeader *h = &d->view->header;
    if (h->orchestration_kind == PTO_ORCH_PROGRAM)
        return decoder_program(d);
    int rc = decoder_check_blob(d, h->orchestration, "orchestration library", 1);
    if (rc != PTO_OK)
        return rc;
    if (h->orchestration.size == 0)
        return decoder_fail(d, "orchestration library has no image");
    return check_name(d, h->orchestration_entry, "orchestration entry symbol");
}

int chip_callable_decode(const void *callable, ChipCallableView *view, char *msg, size_t msg_size)
{
    memset(view, 0, sizeof *view);
    CallableDecoder d = { .bytes = callable, .total = 0, .msg = msg, .msg_size = msg_size, .view = view };
    if (msg != NULL && msg_size > 0)
        msg[0] = '\0';
    if (callable == NULL)
        return decoder_fail(&d, "the callable pointer is NULL");
    view->bytes = callable;
    int rc;
    if ((rc = decode_header(&d, callable)) != PTO_OK || (rc = decode_signature(&d)) != PTO_OK ||
        (rc = decode_children(&d)) != PTO_OK || (rc = decode_orchestration(&d)) != PTO_OK) {
        memset(view, 0, sizeof *view);
        return rc;
    }
    return PTO_OK;
}

int chip_callable_private_copy(const void *callable, uint32_t total_size, uint8_t **bytes, ChipCallableView *view)
{
    memset(view, 0, sizeof *view);
    *bytes = NULL;
    if (total_size < sizeof(ChipCallableHeader))
        return pto_fail(PTO_ERR_BAD_CALLABLE, "register_callable: %u bytes cannot hold the %zu-byte header",
                        total_size, sizeof(ChipCallableHeader));
    *bytes = malloc(total_size);
    if (*bytes == NULL)
        return pto_fail(PTO_ERR_OUT_OF_MEMORY, "register_callable: out of host memory");
    memcpy(*bytes, callable, total_size);
    /* The decoder trusts the header's total_size. If the caller changed it after
       validation, the copy holds fewer bytes than it claims: decoding it would
       read past the copy, so such a copy is refused before it is decoded. */
    uint32_t copied_total;
    memcpy(&copied_total, *bytes + offsetof(ChipCallableHeader, total_size), sizeof copied_total);
    if (copied_total != total_size) {
        free(*bytes);
        *bytes = NULL;
        return pto_fail(PTO_ERR_BAD_CALLABLE,
                        "register_callable: the callable's total_size changed from %u to %u while it was being "
                        "registered",
                        total_size, copied_total);
    }
    char msg[CHIP_CALLABLE_MESSAGE_BYTES];
    if (chip_callable_decode(*bytes, view, msg, sizeof msg) != PTO_OK) {
        free(*bytes);
        *bytes = NULL;
        return pto_fail(PTO_ERR_BAD_CALLABLE, "register_callable: the callable changed while it was being registered");
    }
    return PTO_OK;
}

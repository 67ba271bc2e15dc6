/*
 * The child's side of the proxied contract (chiphost/chip_contract_serve.h).
 */
#include "chiphost/chip_contract_serve.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "chiphost/chip_contract_ops.h"
#include "chiphost/chip_library.h"
#include "chiphost/chip_log_ring.h"
#include "ptorun/chip_callable.h"
#include "ptorun/pto_runtime_c_api.h"
#include "util/last_error.h"

/* The log ring the parent named (CHIP_OP_DESCRIBE); lanes drain into it one at a time. */
static _Atomic(ChipLogRing *) log_ring;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

#define PTR(v) ((void *)(uintptr_t)(v))

/* PTO_OK when the pointer the child is to follow, [addr, addr + len), lies in
   the arena (0 passes: the library refuses a NULL itself); a message naming the
   call, the argument, the address and the arena's range otherwise. */
static int arena_arg(const ChipArena *a, const char *fn, const char *what, uint64_t addr, uint64_t len)
{
    if (addr == 0 || (len <= SIZE_MAX && chip_arena_holds(a, addr, (size_t)len)))
        return PTO_OK;
    uint64_t base = (uint64_t)(uintptr_t)a->base;
    return pto_fail(PTO_ERR_INVALID_ARGUMENT,
                    "%s: %s [0x%llx, +%llu) is outside the chip arena [0x%llx, 0x%llx): the chip host follows "
                    "arena pointers only",
                    fn, what, (unsigned long long)addr, (unsigned long long)len, (unsigned long long)base,
                    (unsigned long long)(base + a->bytes));
}

/* A callable's header, then its whole total_size, in the arena. */
static int callable_arg(const ChipArena *a, uint64_t addr)
{
    static const char fn[] = "simpler_register_callable";
    int rc = arena_arg(a, fn, "callable", addr, sizeof(ChipCallableHeader));
    if (rc != PTO_OK || addr == 0)
        return rc;
    uint32_t total;
    memcpy(&total, (const unsigned char *)PTR(addr) + offsetof(ChipCallableHeader, total_size), sizeof total);
    return arena_arg(a, fn, "callable", addr, total > sizeof(ChipCallableHeader) ? total : sizeof(ChipCallableHeader));
}

static int run_args(const ChipArena *a, const char *fn, const ChipCall *c, size_t storage_bytes)
{
    int rc;
    if ((rc = arena_arg(a, fn, "run storage", c->arg[0], storage_bytes)) != PTO_OK ||
        (rc = arena_arg(a, fn, "args", c->arg[2], sizeof(ChipStorageTaskArgs))) != PTO_OK ||
        (rc = arena_arg(a, fn, "cfg", c->arg[3], sizeof(CallConfig))) != PTO_OK ||
        (rc = arena_arg(a, fn, "desc", c->arg[4], sizeof(NativeRunDescriptor))) != PTO_OK)
        return rc;
    if (c->arg[4] != 0) { /* the library stores into the acceptance sink: it must be ours too */
        const NativeRunDescriptor *d = PTR(c->arg[4]);
        return arena_arg(a, fn, "desc.accepted_state", (uint64_t)(uintptr_t)d->accepted_state, sizeof(int32_t));
    }
    return PTO_OK;
}

/* A failing call's answer: the library's own message (its thread-local, this thread's). */
static int32_t library_failed(const ChipContract *f, int rc)
{
    const char *m = f->simpler_last_error();
    return pto_fail(rc, "%s", m != NULL && m[0] != '\0' ? m : "the library failed without a message");
}

/* An int call's answer: negative is the status (with the library's message), else the value. */
static int32_t int_answer(const ChipContract *f, int rc, ChipAnswer *ans)
{
    if (rc < 0)
        return library_failed(f, rc);
    ans->value = (uint64_t)rc;
    return PTO_OK;
}

static int32_t comm_init_call(const ChipContract *f, const void *in, size_t in_len, ChipAnswer *ans)
{
    ChipCommInitCall c;
    size_t head = offsetof(ChipCommInitCall, path);
    if (in_len < head)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "comm_init: a payload of %zu bytes", in_len);
    memset(&c, 0, sizeof c);
    memcpy(&c, in, in_len < sizeof c ? in_len : sizeof c);
    if (c.path_len >= sizeof c.path || head + c.path_len > in_len)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "comm_init: a rootinfo path of %u bytes", c.path_len);
    c.path[c.path_len] = '\0';
    void *comm = f->comm_init(PTR(c.ctx), c.rank, c.nranks, c.path_len == 0 ? NULL : c.path, c.timeout_ms);
    if (comm == NULL)
        return library_failed(f, PTO_ERR_FAILED);
    ans->value = (uint64_t)(uintptr_t)comm;
    return PTO_OK;
}

static int32_t comm_ranks_call(const ChipContract *f, uint32_t op, const void *in, size_t in_len, ChipAnswer *ans)
{
    ChipCommRanksCall c;
    size_t head = offsetof(ChipCommRanksCall, rank_ids);
    if (in_len < head)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "comm: a payload of %zu bytes", in_len);
    memset(&c, 0, sizeof c);
    memcpy(&c, in, in_len < sizeof c ? in_len : sizeof c);
    int has_ids = (c.flags & CHIP_RANKS_IDS) != 0;
    uint32_t outs = c.flags >> CHIP_RANKS_OUTS_SHIFT;
    if (has_ids && (c.rank_count > CHIP_COMM_MAX_RANK_IDS || head + c.rank_count * sizeof(uint32_t) > in_len))
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "comm: %llu rank ids in a payload of %zu bytes",
                        (unsigned long long)c.rank_count, in_len);
    const uint32_t *ids = has_ids ? c.rank_ids : NULL;
    uint64_t ctx_out = 0, base_out = 0;
    uint64_t *out0 = outs & CHIP_OUT_0 ? &ctx_out : NULL, *out1 = outs & CHIP_OUT_1 ? &base_out : NULL;
    int rc = op == CHIP_OP_COMM_DERIVE_CONTEXT
                 ? f->comm_derive_context(PTR(c.comm), ids, (size_t)c.rank_count, c.domain_rank,
                                          (size_t)c.window_offset, (size_t)c.window_size, out0)
                 : f->comm_alloc_domain_windows(PTR(c.comm), c.allocation_id, ids, (size_t)c.rank_count,
                                                c.domain_rank, (size_t)c.window_size, out0, out1);
    ans->out[0] = ctx_out;
    ans->out[1] = base_out;
    return int_answer(f, rc, ans);
}

static int32_t init_call(const ChipArena *a, const ChipContract *f, const void *in, size_t in_len, ChipAnswer *ans)
{
    static const char fn[] = "simpler_init";
    ChipInitCall c;
    if (in_len != sizeof c)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "%s: a payload of %zu bytes", fn, in_len);
    memcpy(&c, in, sizeof c);
    int rc;
    if ((rc = arena_arg(a, fn, "aicpu image", c.aicpu, c.aicpu_size)) != PTO_OK ||
        (rc = arena_arg(a, fn, "aicore image", c.aicore, c.aicore_size)) != PTO_OK ||
        (rc = arena_arg(a, fn, "dispatcher image", c.dispatcher, c.dispatcher_size)) != PTO_OK ||
        (rc = arena_arg(a, fn, "prewarm", c.prewarm, sizeof(CallConfig))) != PTO_OK)
        return rc;
    return int_answer(f,
                      f->simpler_init(PTR(c.ctx), (int)c.device_id, PTR(c.aicpu), (size_t)c.aicpu_size,
                                      PTR(c.aicore), (size_t)c.aicore_size, PTR(c.dispatcher),
                                      (size_t)c.dispatcher_size, PTR(c.prewarm)),
                      ans);
}

/* The ops whose payload is a ChipCall. */
static int32_t plain_call(const ChipArena *a, const ChipContract *f, uint32_t op, const ChipCall *c, ChipAnswer *ans)
{
    void *h = PTR(c->handle);
    const uint64_t *x = c->arg;
    int rc;
    switch (op) {
    case CHIP_OP_CREATE_DEVICE_CONTEXT: {
        void *ctx = f->create_device_context();
        if (ctx == NULL)
            return library_failed(f, PTO_ERR_FAILED);
        ans->value = (uint64_t)(uintptr_t)ctx;
        return PTO_OK;
    }
    case CHIP_OP_DESTROY_DEVICE_CONTEXT:
        f->destroy_device_context(h);
        return PTO_OK;
    case CHIP_OP_FINALIZE_DEVICE:
        return int_answer(f, f->finalize_device(h), ans);
    case CHIP_OP_DEVICE_MALLOC: {
        void *p = f->device_malloc_ctx(h, (size_t)x[0]);
        if (p == NULL)
            return library_failed(f, PTO_ERR_FAILED);
        ans->value = (uint64_t)(uintptr_t)p;
        return PTO_OK;
    }
    case CHIP_OP_DEVICE_FREE:
        f->device_free_ctx(h, PTR(x[0]));
        return PTO_OK;
    case CHIP_OP_COMMITTED_DEVICE_MEMORY:
        ans->value = f->committed_device_memory_ctx(h);
        return PTO_OK;
    case CHIP_OP_COPY_TO_DEVICE:
        if ((rc = arena_arg(a, "copy_to_device", "host buffer", x[1], x[2])) != PTO_OK)
            return rc;
        return int_answer(f, f->copy_to_device_ctx(h, PTR(x[0]), PTR(x[1]), (size_t)x[2]), ans);
    case CHIP_OP_COPY_FROM_DEVICE:
        if ((rc = arena_arg(a, "copy_from_device", "host buffer", x[0], x[2])) != PTO_OK)
            return rc;
        return int_answer(f, f->copy_from_device_ctx(h, PTR(x[0]), PTR(x[1]), (size_t)x[2]), ans);
    case CHIP_OP_REGISTER_CALLABLE:
        if ((rc = callable_arg(a, x[1])) != PTO_OK)
            return rc;
        return int_answer(f, f->simpler_register_callable(h, (int32_t)x[0], PTR(x[1])), ans);
    case CHIP_OP_UNREGISTER_CALLABLE:
        return int_answer(f, f->simpler_unregister_callable(h, (int32_t)x[0]), ans);
    case CHIP_OP_PREPARE_RUN:
    case CHIP_OP_RUN: {
        const char *fn = op == CHIP_OP_RUN ? "simpler_run" : "simpler_prepare_run";
        if ((rc = run_args(a, fn, c, f->get_runtime_size())) != PTO_OK)
            return rc;
        rc = (op == CHIP_OP_RUN ? f->simpler_run : f->simpler_prepare_run)(h, PTR(x[0]), (int32_t)x[1], PTR(x[2]),
                                                                           PTR(x[3]), PTR(x[4]));
        return int_answer(f, rc, ans);
    }
    case CHIP_OP_LAUNCH_RUN:
    case CHIP_OP_POLL_RUN:
    case CHIP_OP_WAIT_RUN:
    case CHIP_OP_FINALIZE_RUN: {
        static const char *const names[] = { "simpler_launch_run", "simpler_poll_run", "simpler_wait_run",
                                             "simpler_finalize_run" };
        int (*const calls[])(void *, void *) = { f->simpler_launch_run, f->simpler_poll_run, f->simpler_wait_run,
                                                 f->simpler_finalize_run };
        unsigned k = op - CHIP_OP_LAUNCH_RUN; /* the four ops are consecutive, in this order */
        if ((rc = arena_arg(a, names[k], "run storage", x[0], f->get_runtime_size())) != PTO_OK)
            return rc;
        return int_answer(f, calls[k](h, PTR(x[0])), ans);
    }
    case CHIP_OP_AICPU_DLOPEN_COUNT:
        ans->value = f->get_aicpu_dlopen_count(h);
        return PTO_OK;
    case CHIP_OP_HOST_DLOPEN_COUNT:
        ans->value = f->get_host_dlopen_count(h);
        return PTO_OK;
    case CHIP_OP_RUN_STREAM_SET_CREATE_COUNT:
        ans->value = f->get_run_stream_set_create_count(h);
        return PTO_OK;
    case CHIP_OP_SUPPORTS_CONCURRENT_PREPARE:
        return int_answer(f, f->supports_concurrent_native_prepare_ctx(h), ans);
    case CHIP_OP_ARENA_BANK_GM_HEAP_BASE:
        ans->value = f->get_arena_bank_gm_heap_base_ctx(h, (uint32_t)x[0]);
        return PTO_OK;
    case CHIP_OP_RETAINED_TEMP_ADDR:
        ans->value = f->get_retained_temp_addr_ctx(h, (uint32_t)x[0]);
        return PTO_OK;
    case CHIP_OP_DEVICE_POISONED:
        ans->value = (uint64_t)f->device_poisoned_ctx(h);
        return PTO_OK;
    case CHIP_OP_COMM_ALLOC_WINDOWS:
        rc = f->comm_alloc_windows(h, (size_t)x[0], x[CHIP_CALL_OUTS] & CHIP_OUT_0 ? &ans->out[0] : NULL);
        return int_answer(f, rc, ans);
    case CHIP_OP_COMM_GET_LOCAL_WINDOW_BASE:
        rc = f->comm_get_local_window_base(h, x[CHIP_CALL_OUTS] & CHIP_OUT_0 ? &ans->out[0] : NULL);
        return int_answer(f, rc, ans);
    case CHIP_OP_COMM_GET_WINDOW_SIZE: {
        size_t size = 0;
        rc = f->comm_get_window_size(h, x[CHIP_CALL_OUTS] & CHIP_OUT_0 ? &size : NULL);
        ans->out[0] = size;
        return int_answer(f, rc, ans);
    }
    case CHIP_OP_COMM_RELEASE_DOMAIN_WINDOWS:
        return int_answer(f, f->comm_release_domain_windows(h, x[0], (size_t)x[1], (uint32_t)x[2]), ans);
    case CHIP_OP_COMM_BARRIER:
        return int_answer(f, f->comm_barrier(h), ans);
    case CHIP_OP_COMM_BREAK_DOMAIN:
        return int_answer(f, f->comm_break_domain(h, x[0]), ans);
    case CHIP_OP_COMM_DESTROY:
        return int_answer(f, f->comm_destroy(h), ans);
    default:
        return pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, "chip host: no op %u", op);
    }
}

int32_t chip_contract_serve(const ChipArena *arena, uint32_t op, const void *in, size_t in_len, void *out,
                            size_t *out_len)
{
    const ChipContract *f = chip_library_contract();
    if (f == NULL)
        return pto_fail(PTO_ERR_WRONG_PHASE, "chip host: no library loaded (op %u)", op);
    ChipAnswer ans = { 0 };
    int32_t rc;
    if (op == CHIP_OP_INIT)
        rc = init_call(arena, f, in, in_len, &ans);
    else if (op == CHIP_OP_COMM_INIT)
        rc = comm_init_call(f, in, in_len, &ans);
    else if (op == CHIP_OP_COMM_DERIVE_CONTEXT || op == CHIP_OP_COMM_ALLOC_DOMAIN_WINDOWS)
        rc = comm_ranks_call(f, op, in, in_len, &ans);
    else if (in_len != sizeof(ChipCall))
        rc = pto_fail(PTO_ERR_INVALID_ARGUMENT, "chip host: op %u takes %zu bytes, got %zu", op, sizeof(ChipCall),
                      in_len);
    else {
        ChipCall c;
        memcpy(&c, in, sizeof c);
        rc = plain_call(arena, f, op, &c, &ans);
    }
    if (rc == PTO_OK) {
        memcpy(out, &ans, sizeof ans);
        *out_len = sizeof ans;
    }
    return rc;
}

int32_t chip_contract_describe(const ChipArena *arena, const void *in, size_t in_len, void *out, size_t *out_len)
{
    const ChipContract *f = chip_library_contract();
    if (f == NULL)
        return pto_fail(PTO_ERR_WRONG_PHASE, "chip host: DESCRIBE before LOAD");
    ChipDescribeRequest req;
    if (in_len != sizeof req)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "chip host: DESCRIBE takes %zu bytes, got %zu", sizeof req, in_len);
    memcpy(&req, in, sizeof req);
    if (req.log_ring != 0) {
        int rc = arena_arg(arena, "DESCRIBE", "log ring", req.log_ring, sizeof(ChipLogRing));
        if (rc != PTO_OK)
            return rc;
        if (req.log_ring_bytes < sizeof(ChipLogRing) || !chip_log_ring_valid(PTR(req.log_ring)))
            return pto_fail(PTO_ERR_INVALID_ARGUMENT, "chip host: no log ring at 0x%llx",
                            (unsigned long long)req.log_ring);
        atomic_store(&log_ring, (ChipLogRing *)PTR(req.log_ring));
    }
    ChipDescription d;
    memset(&d, 0, sizeof d);
    d.runtime_size = f->get_runtime_size();
    d.runtime_alignment = f->get_runtime_alignment();
    d.contract = *f->get_pipeline_contract();
    const char *v = f->ptorun_variant();
    snprintf(d.variant, sizeof d.variant, "%s", v != NULL ? v : "");
    memcpy(out, &d, sizeof d);
    *out_len = sizeof d;
    return PTO_OK;
}

void chip_contract_drain_log(void)
{
    const ChipContract *f = chip_library_contract();
    ChipLogRing *r = atomic_load(&log_ring);
    if (f == NULL || r == NULL || f->ptorun_log_pending() == 0) /* an atomic load: cheap after every op */
        return;
    char text[CHIP_LOG_TEXT_BYTES];
    pthread_mutex_lock(&log_lock);
    for (int level; (level = f->ptorun_log_next(text, sizeof text)) > 0;)
        chip_log_ring_push(r, level, text);
    pthread_mutex_unlock(&log_lock);
}

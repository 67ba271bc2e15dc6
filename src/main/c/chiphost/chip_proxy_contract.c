/*
 * The contract forwarded to a chip host (chiphost/chip_proxy.h): each call
 * encodes its payload (chiphost/chip_contract_ops.h), runs it on a lane and
 * decodes the answer; a failure's message is the calling thread's last error.
 */
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chiphost/chip_proxy_chip.h"
#include "ptorun/pto_runtime_c_api.h"
#include "util/last_error.h"
#include "util/spin_wait.h"

/* A ctx or a comm: the chip and the child's pointer value. */
typedef struct ProxyHandle {
    ProxyChip *chip;
    uint64_t remote;
    _Atomic uint64_t poll_asked_ns; /* a ctx: when a poll last asked the library (poll_from_storage) */
} ProxyHandle;

/* How long polls the run storage answers "not ready" go without asking the library:
   its query may also see a device failure before the run's job ends (onboard). */
#define POLL_ASK_EVERY_NS 1000000u

/* A copy's host side outside the arena goes through arena chunks of at most this. */
#define BOUNCE_BYTES ((size_t)8 << 20)
#define BOUNCE_MIN_BYTES ((size_t)64 << 10)

#define U64(p) ((uint64_t)(uintptr_t)(p))

static int no_handle(const char *fn)
{
    return pto_fail(PTO_ERR_INVALID_ARGUMENT, "%s: NULL handle", fn);
}

/* One call with a ChipCall payload; the answer in *ans (zeroed first). */
static int call(ProxyHandle *h, uint32_t op, const uint64_t *args, size_t n, ChipAnswer *ans)
{
    ChipCall c = { .handle = h->remote };
    if (n > 0) /* args may be NULL for a call without any */
        memcpy(c.arg, args, n * sizeof *args);
    memset(ans, 0, sizeof *ans);
    size_t got = 0;
    int rc = proxy_call(h->chip, op, &c, sizeof c, ans, sizeof *ans, &got);
    if (rc == PTO_OK && got != sizeof *ans)
        return pto_fail(PTO_ERR_FAILED, "chip proxy: op %u answered %zu bytes", op, got);
    return rc;
}

/* An int call: the library's value (>= 0), or the failure's status. */
static int int_call(void *handle, const char *fn, uint32_t op, const uint64_t *args, size_t n)
{
    pto_clear_error();
    if (handle == NULL)
        return no_handle(fn);
    ChipAnswer ans;
    int rc = call(handle, op, args, n, &ans);
    return rc != PTO_OK ? rc : (int)(int64_t)ans.value;
}

/* A call answering a value (a count, an address); 0 on failure. */
static uint64_t value_call(void *handle, const char *fn, uint32_t op, const uint64_t *args, size_t n)
{
    pto_clear_error();
    if (handle == NULL) {
        (void)no_handle(fn);
        return 0;
    }
    ChipAnswer ans;
    return call(handle, op, args, n, &ans) == PTO_OK ? ans.value : 0;
}

/* A new proxy handle for the child's pointer value v (NULL on failure, the message set). */
static void *new_handle(ProxyChip *chip, uint64_t v)
{
    ProxyHandle *h = malloc(sizeof *h);
    if (h == NULL) {
        (void)pto_fail(PTO_ERR_OUT_OF_MEMORY, "chip proxy: no memory for a handle");
        return NULL; /* the child's object stays: the process's end frees it */
    }
    h->chip = chip;
    h->remote = v;
    atomic_init(&h->poll_asked_ns, 0);
    return h;
}

/* ---- device contexts ------------------------------------------------------------ */

PTO_EXPORT void *chip_proxy_create_device_context(void *chip)
{
    pto_clear_error();
    if (chip == NULL) {
        (void)pto_fail(PTO_ERR_INVALID_ARGUMENT, "create_device_context: no chip");
        return NULL;
    }
    ProxyHandle h = { .chip = chip, .remote = 0 };
    ChipAnswer ans;
    return call(&h, CHIP_OP_CREATE_DEVICE_CONTEXT, NULL, 0, &ans) == PTO_OK ? new_handle(chip, ans.value) : NULL;
}

PTO_EXPORT void chip_proxy_destroy_device_context(void *ctx)
{
    pto_clear_error();
    if (ctx == NULL)
        return;
    ChipAnswer ans;
    (void)call(ctx, CHIP_OP_DESTROY_DEVICE_CONTEXT, NULL, 0, &ans); /* a gone chip: the handle only */
    free(ctx);
}

PTO_EXPORT int chip_proxy_init(void *ctx, int device_id, const uint8_t *aicpu, size_t aicpu_size,
                               const uint8_t *aicore, size_t aicore_size, const uint8_t *dispatcher,
                               size_t dispatcher_size, const void *prewarm)
{
    pto_clear_error();
    ProxyHandle *h = ctx;
    if (h == NULL)
        return no_handle("simpler_init");
    ChipInitCall c = { h->remote, device_id, U64(aicpu), aicpu_size, U64(aicore), aicore_size,
                       U64(dispatcher), dispatcher_size, U64(prewarm) };
    ChipAnswer ans = { 0 };
    int rc = proxy_call(h->chip, CHIP_OP_INIT, &c, sizeof c, &ans, sizeof ans, NULL);
    return rc != PTO_OK ? rc : (int)(int64_t)ans.value;
}

PTO_EXPORT int chip_proxy_finalize_device(void *ctx)
{
    return int_call(ctx, "finalize_device", CHIP_OP_FINALIZE_DEVICE, NULL, 0);
}

/* ---- device memory --------------------------------------------------------------- */

PTO_EXPORT void *chip_proxy_device_malloc(void *ctx, size_t n)
{
    uint64_t a[] = { n };
    return (void *)(uintptr_t)value_call(ctx, "device_malloc", CHIP_OP_DEVICE_MALLOC, a, 1);
}

PTO_EXPORT void chip_proxy_device_free(void *ctx, void *p)
{
    uint64_t a[] = { U64(p) };
    (void)value_call(ctx, "device_free", CHIP_OP_DEVICE_FREE, a, 1);
}

PTO_EXPORT size_t chip_proxy_committed_device_memory(void *ctx)
{
    return (size_t)value_call(ctx, "committed_device_memory", CHIP_OP_COMMITTED_DEVICE_MEMORY, NULL, 0);
}

/* A copy whose host side lies outside the arena: through arena chunks, each
   copied in (to the device) or out (from it) by the proxy. */
static int copy_bounced(ProxyHandle *h, int to_device, uint64_t dev, unsigned char *host, size_t n)
{
    size_t chunk = n < BOUNCE_BYTES ? n : BOUNCE_BYTES;
    unsigned char *buf;
    while ((buf = chip_arena_alloc(&h->chip->arena, chunk, 64)) == NULL && chunk > BOUNCE_MIN_BYTES)
        chunk /= 2; /* a fuller arena: smaller chunks */
    if (buf == NULL)
        return pto_fail(pto_last_error_code(), "%s: no arena room to bounce %zu host bytes through: %s",
                        to_device ? "copy_to_device" : "copy_from_device", n, pto_last_error());
    int rc = PTO_OK;
    for (size_t at = 0; at < n && rc == PTO_OK; at += chunk) {
        size_t len = n - at < chunk ? n - at : chunk;
        ChipAnswer ans;
        if (to_device) {
            memcpy(buf, host + at, len);
            uint64_t a[] = { dev + at, U64(buf), len };
            rc = call(h, CHIP_OP_COPY_TO_DEVICE, a, 3, &ans);
        } else {
            uint64_t a[] = { U64(buf), dev + at, len };
            rc = call(h, CHIP_OP_COPY_FROM_DEVICE, a, 3, &ans);
            if (rc == PTO_OK)
                memcpy(host + at, buf, len);
        }
        if (rc == PTO_OK && (int64_t)ans.value < 0)
            rc = (int)(int64_t)ans.value;
    }
    chip_arena_free(&h->chip->arena, buf);
    return rc;
}

static int copy(void *ctx, int to_device, void *dev, void *host, size_t n)
{
    const char *fn = to_device ? "copy_to_device" : "copy_from_device";
    pto_clear_error();
    ProxyHandle *h = ctx;
    if (h == NULL)
        return no_handle(fn);
    if (host != NULL && n > 0 && dev != NULL && !chip_arena_holds(&h->chip->arena, U64(host), n))
        return copy_bounced(h, to_device, U64(dev), host, n);
    uint64_t to[] = { U64(dev), U64(host), n }, from[] = { U64(host), U64(dev), n };
    return int_call(ctx, fn, to_device ? CHIP_OP_COPY_TO_DEVICE : CHIP_OP_COPY_FROM_DEVICE, to_device ? to : from, 3);
}

PTO_EXPORT int chip_proxy_copy_to_device(void *ctx, void *dev, const void *host, size_t n)
{
    return copy(ctx, 1, dev, (void *)(uintptr_t)host, n);
}

PTO_EXPORT int chip_proxy_copy_from_device(void *ctx, void *host, const void *dev, size_t n)
{
    return copy(ctx, 0, (void *)(uintptr_t)dev, host, n);
}

/* ---- callables and runs ------------------------------------------------------------ */

PTO_EXPORT int chip_proxy_register_callable(void *ctx, int32_t id, const void *callable)
{
    uint64_t a[] = { (uint64_t)(int64_t)id, U64(callable) };
    return int_call(ctx, "simpler_register_callable", CHIP_OP_REGISTER_CALLABLE, a, 2);
}

PTO_EXPORT int chip_proxy_unregister_callable(void *ctx, int32_t id)
{
    uint64_t a[] = { (uint64_t)(int64_t)id };
    return int_call(ctx, "simpler_unregister_callable", CHIP_OP_UNREGISTER_CALLABLE, a, 1);
}

PTO_EXPORT int chip_proxy_prepare_run(void *ctx, void *storage, int32_t id, const void *args, const void *cfg,
                                      const void *desc)
{
    uint64_t a[] = { U64(storage), (uint64_t)(int64_t)id, U64(args), U64(cfg), U64(desc) };
    return int_call(ctx, "simpler_prepare_run", CHIP_OP_PREPARE_RUN, a, 5);
}

PTO_EXPORT int chip_proxy_launch_run(void *ctx, void *storage)
{
    uint64_t a[] = { U64(storage) };
    return int_call(ctx, "simpler_launch_run", CHIP_OP_LAUNCH_RUN, a, 1);
}

/* The library's answer to a poll of a run its launch left Running, read from the run
 * storage in the arena (NativeRunReport.launched_ctx and device_ended, docs/isolation.md,
 * Polls without a call): COMPLETE once the run's work ended, NOT_READY before that but
 * for one poll a millisecond, which asks the library. -1: ask the library (anything
 * else: a run of another context, not launched, finalized, a dead chip, a storage
 * outside the arena, whose answer is the library's error). */
static int poll_from_storage(ProxyHandle *h, const void *storage)
{
    ProxyChip *c = h->chip;
    uint64_t at = U64(storage);
    size_t bytes = PTO_NATIVE_RUN_REPORT_OFFSET + sizeof(NativeRunReport);
    if (atomic_load(&c->proc.gone) || c->desc.runtime_alignment == 0 || at % c->desc.runtime_alignment != 0 ||
        !chip_arena_holds(&c->arena, at, bytes))
        return -1;
    const NativeRunReport *r = (const NativeRunReport *)(uintptr_t)(at + PTO_NATIVE_RUN_REPORT_OFFSET);
    if (__atomic_load_n((const uint64_t *)storage, __ATOMIC_ACQUIRE) != PTO_NATIVE_RUN_STORAGE_MAGIC ||
        __atomic_load_n(&r->launched_ctx, __ATOMIC_ACQUIRE) != h->remote)
        return -1;
    if (__atomic_load_n(&r->device_ended, __ATOMIC_ACQUIRE) != 0)
        return SIMPLER_NATIVE_RUN_POLL_COMPLETE;
    return pto_monotonic_ns() - atomic_load(&h->poll_asked_ns) < POLL_ASK_EVERY_NS ? SIMPLER_NATIVE_RUN_POLL_NOT_READY
                                                                                  : -1;
}

PTO_EXPORT int chip_proxy_poll_run(void *ctx, void *storage)
{
    pto_clear_error();
    ProxyHandle *h = ctx;
    if (h == NULL)
        return no_handle("simpler_poll_run");
    int local = poll_from_storage(h, storage);
    if (local >= 0)
        return local;
    atomic_store(&h->poll_asked_ns, pto_monotonic_ns());
    uint64_t a[] = { U64(storage) };
    return int_call(ctx, "simpler_poll_run", CHIP_OP_POLL_RUN, a, 1);
}

PTO_EXPORT int chip_proxy_wait_run(void *ctx, void *storage)
{
    uint64_t a[] = { U64(storage) };
    return int_call(ctx, "simpler_wait_run", CHIP_OP_WAIT_RUN | CHIP_CHANNEL_PARK, a, 1);
}

PTO_EXPORT int chip_proxy_finalize_run(void *ctx, void *storage)
{
    uint64_t a[] = { U64(storage) };
    return int_call(ctx, "simpler_finalize_run", CHIP_OP_FINALIZE_RUN, a, 1);
}

PTO_EXPORT int chip_proxy_run(void *ctx, void *storage, int32_t id, const void *args, const void *cfg,
                              const void *desc)
{
    uint64_t a[] = { U64(storage), (uint64_t)(int64_t)id, U64(args), U64(cfg), U64(desc) };
    return int_call(ctx, "simpler_run", CHIP_OP_RUN | CHIP_CHANNEL_PARK, a, 5);
}

/* ---- counters and pipeline ---------------------------------------------------------- */

PTO_EXPORT size_t chip_proxy_aicpu_dlopen_count(void *ctx)
{
    return (size_t)value_call(ctx, "get_aicpu_dlopen_count", CHIP_OP_AICPU_DLOPEN_COUNT, NULL, 0);
}

PTO_EXPORT size_t chip_proxy_host_dlopen_count(void *ctx)
{
    return (size_t)value_call(ctx, "get_host_dlopen_count", CHIP_OP_HOST_DLOPEN_COUNT, NULL, 0);
}

PTO_EXPORT size_t chip_proxy_run_stream_set_create_count(void *ctx)
{
    return (size_t)value_call(ctx, "get_run_stream_set_create_count", CHIP_OP_RUN_STREAM_SET_CREATE_COUNT, NULL, 0);
}

PTO_EXPORT int chip_proxy_supports_concurrent_native_prepare(void *ctx)
{
    return int_call(ctx, "supports_concurrent_native_prepare", CHIP_OP_SUPPORTS_CONCURRENT_PREPARE, NULL, 0);
}

PTO_EXPORT uint64_t chip_proxy_arena_bank_gm_heap_base(void *ctx, uint32_t bank)
{
    uint64_t a[] = { bank };
    return value_call(ctx, "get_arena_bank_gm_heap_base", CHIP_OP_ARENA_BANK_GM_HEAP_BASE, a, 1);
}

PTO_EXPORT uint64_t chip_proxy_retained_temp_addr(void *ctx, uint32_t slot)
{
    uint64_t a[] = { slot };
    return value_call(ctx, "get_retained_temp_addr", CHIP_OP_RETAINED_TEMP_ADDR, a, 1);
}

PTO_EXPORT int chip_proxy_device_poisoned(void *ctx)
{
    ProxyHandle *h = ctx;
    if (h == NULL)
        return 0; /* as the library for NULL; and, like it, leaves the last error alone */
    char saved[PTO_ERROR_MESSAGE_BYTES];
    int saved_code = pto_last_error_code();
    snprintf(saved, sizeof saved, "%s", pto_last_error());
    ChipCall c = { .handle = h->remote };
    ChipAnswer ans = { 0 };
    int rc = proxy_call(h->chip, CHIP_OP_DEVICE_POISONED, &c, sizeof c, &ans, sizeof ans, NULL);
    if (saved_code != 0)
        (void)pto_fail(saved_code, "%s", saved);
    else
        pto_clear_error();
    return rc == PTO_ERR_CHIP_CRASHED ? 1 : rc == PTO_OK ? (int)ans.value : 0;
}

/* ---- communication ------------------------------------------------------------------- */

PTO_EXPORT void *chip_proxy_comm_init(void *ctx, int rank, int nranks, const char *rootinfo_path,
                                      uint32_t timeout_ms)
{
    pto_clear_error();
    ProxyHandle *h = ctx;
    if (h == NULL) {
        (void)no_handle("comm_init");
        return NULL;
    }
    static ChipCommInitCall proto; /* only for sizeof its path */
    size_t len = rootinfo_path == NULL ? 0 : strlen(rootinfo_path);
    if (len >= sizeof proto.path) {
        (void)pto_fail(PTO_ERR_INVALID_ARGUMENT, "comm_init: a rootinfo path of %zu bytes (a chip host takes %zu)",
                       len, sizeof proto.path - 1);
        return NULL;
    }
    ChipCommInitCall *c = calloc(1, sizeof *c); /* a whole payload: not on a caller's stack */
    if (c == NULL) {
        (void)pto_fail(PTO_ERR_OUT_OF_MEMORY, "comm_init: no memory");
        return NULL;
    }
    *c = (ChipCommInitCall){ .ctx = h->remote, .rank = rank, .nranks = nranks, .timeout_ms = timeout_ms,
                             .path_len = (uint32_t)len };
    memcpy(c->path, rootinfo_path == NULL ? "" : rootinfo_path, len);
    ChipAnswer ans = { 0 };
    int rc = proxy_call(h->chip, CHIP_OP_COMM_INIT, c, offsetof(ChipCommInitCall, path) + len, &ans, sizeof ans,
                        NULL);
    free(c);
    return rc == PTO_OK ? new_handle(h->chip, ans.value) : NULL;
}

/* An int call whose out parameters come back in ans.out: stored where given. */
static int out_call(void *comm, const char *fn, uint32_t op, uint64_t arg0, void *out0, size_t out0_bytes)
{
    pto_clear_error();
    if (comm == NULL)
        return no_handle(fn);
    uint64_t a[6] = { arg0 };
    a[CHIP_CALL_OUTS] = out0 != NULL ? CHIP_OUT_0 : 0;
    ChipAnswer ans;
    int rc = call(comm, op, a, 6, &ans);
    if (rc != PTO_OK)
        return rc;
    if (out0 != NULL && out0_bytes == sizeof(uint64_t))
        *(uint64_t *)out0 = ans.out[0];
    else if (out0 != NULL)
        *(size_t *)out0 = (size_t)ans.out[0];
    return (int)(int64_t)ans.value;
}

PTO_EXPORT int chip_proxy_comm_alloc_windows(void *comm, size_t win_size, uint64_t *device_ctx_out)
{
    return out_call(comm, "comm_alloc_windows", CHIP_OP_COMM_ALLOC_WINDOWS, win_size, device_ctx_out,
                    sizeof *device_ctx_out);
}

PTO_EXPORT int chip_proxy_comm_get_local_window_base(void *comm, uint64_t *base_out)
{
    return out_call(comm, "comm_get_local_window_base", CHIP_OP_COMM_GET_LOCAL_WINDOW_BASE, 0, base_out,
                    sizeof *base_out);
}

PTO_EXPORT int chip_proxy_comm_get_window_size(void *comm, size_t *size_out)
{
    return out_call(comm, "comm_get_window_size", CHIP_OP_COMM_GET_WINDOW_SIZE, 0, size_out, sizeof *size_out);
}

/* comm_derive_context and comm_alloc_domain_windows: the rank ids in the payload. */
static int ranks_call(void *comm, const char *fn, uint32_t op, ChipCommRanksCall *c, const uint32_t *rank_ids,
                      uint64_t *out0, uint64_t *out1)
{
    pto_clear_error();
    ProxyHandle *h = comm;
    if (h == NULL)
        return no_handle(fn);
    if (rank_ids != NULL && c->rank_count > CHIP_COMM_MAX_RANK_IDS)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "%s: %llu rank ids (a chip host takes at most %zu)", fn,
                        (unsigned long long)c->rank_count, (size_t)CHIP_COMM_MAX_RANK_IDS);
    c->comm = h->remote;
    c->flags = (rank_ids != NULL ? CHIP_RANKS_IDS : 0) |
               ((out0 != NULL ? CHIP_OUT_0 : 0) | (out1 != NULL ? CHIP_OUT_1 : 0)) << CHIP_RANKS_OUTS_SHIFT;
    size_t ids = rank_ids != NULL ? (size_t)c->rank_count : 0;
    if (ids > 0)
        memcpy(c->rank_ids, rank_ids, ids * sizeof *rank_ids);
    ChipAnswer ans = { 0 };
    int rc = proxy_call(h->chip, op, c, offsetof(ChipCommRanksCall, rank_ids) + ids * sizeof(uint32_t), &ans,
                        sizeof ans, NULL);
    if (rc != PTO_OK)
        return rc;
    if (out0 != NULL)
        *out0 = ans.out[0];
    if (out1 != NULL)
        *out1 = ans.out[1];
    return (int)(int64_t)ans.value;
}

PTO_EXPORT int chip_proxy_comm_derive_context(void *comm, const uint32_t *rank_ids, size_t rank_count,
                                              uint32_t domain_rank, size_t window_offset, size_t window_size,
                                              uint64_t *device_ctx_out)
{
    ChipCommRanksCall *c = calloc(1, sizeof *c);
    if (c == NULL)
        return pto_fail(PTO_ERR_OUT_OF_MEMORY, "comm_derive_context: no memory");
    c->rank_count = rank_count;
    c->domain_rank = domain_rank;
    c->window_offset = window_offset;
    c->window_size = window_size;
    int rc = ranks_call(comm, "comm_derive_context", CHIP_OP_COMM_DERIVE_CONTEXT, c, rank_ids, device_ctx_out, NULL);
    free(c);
    return rc;
}

PTO_EXPORT int chip_proxy_comm_alloc_domain_windows(void *comm, uint64_t allocation_id, const uint32_t *rank_ids,
                                                    size_t rank_count, uint32_t domain_rank, size_t window_size,
                                                    uint64_t *device_ctx_out, uint64_t *local_window_base_out)
{
    ChipCommRanksCall *c = calloc(1, sizeof *c);
    if (c == NULL)
        return pto_fail(PTO_ERR_OUT_OF_MEMORY, "comm_alloc_domain_windows: no memory");
    c->allocation_id = allocation_id;
    c->rank_count = rank_count;
    c->domain_rank = domain_rank;
    c->window_size = window_size;
    int rc = ranks_call(comm, "comm_alloc_domain_windows", CHIP_OP_COMM_ALLOC_DOMAIN_WINDOWS, c, rank_ids,
                        device_ctx_out, local_window_base_out);
    free(c);
    return rc;
}

PTO_EXPORT int chip_proxy_comm_release_domain_windows(void *comm, uint64_t allocation_id, size_t rank_count,
                                                      uint32_t domain_rank)
{
    uint64_t a[] = { allocation_id, rank_count, domain_rank };
    return int_call(comm, "comm_release_domain_windows", CHIP_OP_COMM_RELEASE_DOMAIN_WINDOWS, a, 3);
}

PTO_EXPORT int chip_proxy_comm_barrier(void *comm)
{
    return int_call(comm, "comm_barrier", CHIP_OP_COMM_BARRIER, NULL, 0);
}

PTO_EXPORT int chip_proxy_comm_break_domain(void *comm, uint64_t device_ctx)
{
    uint64_t a[] = { device_ctx };
    return int_call(comm, "comm_break_domain", CHIP_OP_COMM_BREAK_DOMAIN, a, 1);
}

PTO_EXPORT int chip_proxy_comm_destroy(void *comm)
{
    if (comm == NULL) {
        pto_clear_error();
        return PTO_OK; /* as comm_destroy(NULL) */
    }
    int rc = int_call(comm, "comm_destroy", CHIP_OP_COMM_DESTROY, NULL, 0);
    if (rc == PTO_ERR_CHIP_CRASHED) {
        /* the rank left the group with its process: the handle is all there is to free,
           and the call succeeded (a caller keeping the handle on a failure must not
           destroy it twice) */
        pto_clear_error();
        rc = PTO_OK;
    }
    if (rc == PTO_OK)
        free(comm);
    return rc;
}

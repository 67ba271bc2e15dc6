/*
 * Fuzz target: a run's CallConfig (services/call_config.c, call_config_validate
 * and the resolvers prepare reads after it). Built for a2a3.
 *
 * Input: the packed CallConfig (1144 bytes); shorter inputs are zero-padded.
 *
 * Invariants, beyond "no crash, no UB":
 *  - the verdict equals an independent model of the documented rules
 *    (pto_runtime_c_api.h, call_config.h): aicpu_thread_num 0 or 2..arch max,
 *    block_dim 0 or 1..arch max, timeout_ms >= 0, each ring's task window 0 or
 *    a power of two in [4, 2^31), heap 0 or >= 1024, dep pool 0 or in [4, 2^31),
 *    output_prefix NUL-terminated and non-empty when a diagnostic is on;
 *  - a refusal is PTO_ERR_INVALID_ARGUMENT whose message names a field the
 *    model finds invalid ("CallConfig.<field>");
 *  - after acceptance every resolver returns a usable value: threads
 *    2..arch max, blocks 1..arch max, a positive timeout, ring sizes within the
 *    rules (the defaults included).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "arch/arch.h"
#include "services/call_config.h"
#include "util/last_error.h"
#include "fuzz_common.h"
#include "ptorun/pto_runtime_c_api.h"

#define MAX_FIELDS 32

/* The fields the model finds invalid, as the message would name them. */
typedef struct Verdict {
    int count;
    char field[MAX_FIELDS][40];
} Verdict;

static void bad(Verdict *v, const char *name, int ring)
{
    if (v->count == MAX_FIELDS)
        return;
    if (ring < 0)
        snprintf(v->field[v->count++], sizeof v->field[0], "%s", name);
    else
        snprintf(v->field[v->count++], sizeof v->field[0], "%s[%d]", name, ring);
}

static int power_of_two(uint64_t x)
{
    return x != 0 && (x & (x - 1)) == 0;
}

static void model(const CallConfig *c, Verdict *v)
{
    memset(v, 0, sizeof *v);
    if (c->aicpu_thread_num != 0 && (c->aicpu_thread_num < 2 || c->aicpu_thread_num > PTO_ARCH_AICPU_THREADS_MAX))
        bad(v, "aicpu_thread_num", -1);
    if (c->block_dim != 0 && (c->block_dim < 1 || c->block_dim > PTO_ARCH_MAX_BLOCKS))
        bad(v, "block_dim", -1);
    if (c->timeout_ms < 0)
        bad(v, "timeout_ms", -1);
    for (int r = 0; r < PTO_TRB_RING_COUNT; r++) {
        uint64_t w = c->ring_task_window[r], h = c->ring_heap[r], d = c->ring_dep_pool[r];
        if (w != 0 && (!power_of_two(w) || w < 4 || w >= (1ull << 31)))
            bad(v, "ring_task_window", r);
        if (h != 0 && h < 1024)
            bad(v, "ring_heap", r);
        if (d != 0 && (d < 4 || d >= (1ull << 31)))
            bad(v, "ring_dep_pool", r);
    }
    int terminated = memchr(c->output_prefix, '\0', sizeof c->output_prefix) != NULL;
    int diagnostics = c->enable_trace != 0 || c->enable_dump_args != 0 || c->enable_dep_graph != 0;
    if (!terminated || (diagnostics && c->output_prefix[0] == '\0'))
        bad(v, "output_prefix", -1);
}

/* The message names "CallConfig.<field>" followed by a space. */
static int names_invalid_field(const char *msg, const Verdict *v)
{
    static const char prefix[] = "CallConfig.";
    if (strncmp(msg, prefix, sizeof prefix - 1) != 0)
        return 0;
    const char *name = msg + sizeof prefix - 1;
    for (int i = 0; i < v->count; i++) {
        size_t n = strlen(v->field[i]);
        if (strncmp(name, v->field[i], n) == 0 && name[n] == ' ')
            return 1;
    }
    return 0;
}

static void expect_resolved(const CallConfig *c)
{
    uint32_t threads = call_config_aicpu_threads(c), blocks = call_config_block_dim(c);
    FUZZ_CHECK(threads >= 2 && threads <= PTO_ARCH_AICPU_THREADS_MAX, "%u AICPU threads", threads);
    FUZZ_CHECK(blocks >= 1 && blocks <= PTO_ARCH_MAX_BLOCKS, "block_dim %u", blocks);
    FUZZ_CHECK(call_config_timeout_ms(c) > 0 && call_config_timeout_ms(c) <= INT32_MAX, "timeout %u",
               call_config_timeout_ms(c));
    FUZZ_CHECK(call_config_timeout_ms(c) == (c->timeout_ms == 0 ? PTO_DEFAULT_TIMEOUT_MS : (uint32_t)c->timeout_ms),
               "timeout %u for %d", call_config_timeout_ms(c), c->timeout_ms);
    for (int r = 0; r < PTO_TRB_RING_COUNT; r++) {
        uint64_t w = call_config_ring_task_window(c, r), h = call_config_ring_heap(c, r),
                 d = call_config_ring_dep_pool(c, r);
        FUZZ_CHECK(power_of_two(w) && w >= 4 && w < (1ull << 31), "ring %d window %llu", r, (unsigned long long)w);
        FUZZ_CHECK(h >= 1024, "ring %d heap %llu", r, (unsigned long long)h);
        FUZZ_CHECK(d >= 4 && d < (1ull << 31), "ring %d dep pool %llu", r, (unsigned long long)d);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    CallConfig cfg;
    memset(&cfg, 0, sizeof cfg);
    memcpy(&cfg, data, size < sizeof cfg ? size : sizeof cfg);
    Verdict verdict;
    model(&cfg, &verdict);

    pto_clear_error();
    int rc = call_config_validate(&cfg);
    const char *msg = pto_last_error();
    FUZZ_CHECK(fuzz_documented_code(rc), "undocumented code %d", rc);
    fuzz_expect(rc == PTO_OK, "call_config_validate", msg);
    FUZZ_CHECK((rc == PTO_OK) == (verdict.count == 0), "call_config_validate returned %d (%s); the model finds %d "
               "invalid field(s)%s%s", rc, msg, verdict.count, verdict.count ? ", first " : "",
               verdict.count ? verdict.field[0] : "");
    if (rc == PTO_OK) {
        expect_resolved(&cfg);
        FUZZ_CHECK(call_config_has_diagnostics(&cfg) ==
                       (cfg.enable_trace != 0 || cfg.enable_dump_args != 0 || cfg.enable_dep_graph != 0),
                   "has_diagnostics disagrees%s", "");
    } else {
        FUZZ_CHECK(rc == PTO_ERR_INVALID_ARGUMENT, "refused with %d: %s", rc, msg);
        FUZZ_CHECK(fuzz_message_ok(msg, PTO_ERROR_MESSAGE_BYTES) && names_invalid_field(msg, &verdict),
                   "the message names no invalid field: %s", msg);
    }
    return 0;
}

/*
 * The proxy library libptorun_chipproxy.so (docs/isolation.md), dlopen'ed from
 * PTORUN_LIB_DIR as the Java side will, driving the real ptorun-chiphost
 * (PTO_CHIPHOST_EXE) with real variant libraries: whole runs (sim, onboard,
 * trb) with every pointer in the arena; two threads at once (a wait_run held
 * by a gate kernel while other calls complete, on a second lane); pointers
 * refused outside the arena; a library's message travelling back; copies
 * bounced through the arena; a SIGKILL during a wait; the native log read from
 * the arena ring (after the death too); nothing left after stop. Waits are on
 * events (the gate, the lane count); no test asserts on timing.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "chiphost/chip_proxy.h"
#include "ptest.h"
#include "ptorun/pto_runtime_c_api.h"
#include "test_callable.h"
#include "test_emudrv.h"
#include "test_sim.h"
#include "test_util.h"
#include "util/futex_word.h"

#ifndef PTO_CHIPHOST_EXE
#error "PTO_CHIPHOST_EXE: the path of ptorun-chiphost (src/test/c/Makefile sets it)"
#endif

#define ARENA_BYTES ((uint64_t)64 << 20)
enum { N = 1024, ADD = 1, GATE = 2 };

/* Every export of chiphost/chip_proxy.h: all must resolve by name. */
#define PROXY_API(X)                                                                                               \
    X(chip_proxy_start) X(chip_proxy_start_with_driver_state) X(chip_proxy_stop) X(chip_proxy_kill) X(chip_proxy_pid) X(chip_proxy_alive)                \
    X(chip_proxy_death) X(chip_proxy_last_error) X(chip_proxy_variant) X(chip_proxy_runtime_size)                  \
    X(chip_proxy_runtime_alignment) X(chip_proxy_pipeline_contract) X(chip_proxy_arena_alloc)                      \
    X(chip_proxy_arena_free) X(chip_proxy_in_arena) X(chip_proxy_log_pending) X(chip_proxy_log_next)               \
    X(chip_proxy_lane_count) X(chip_proxy_create_device_context) X(chip_proxy_destroy_device_context)              \
    X(chip_proxy_init) X(chip_proxy_finalize_device) X(chip_proxy_device_malloc) X(chip_proxy_device_free)         \
    X(chip_proxy_committed_device_memory) X(chip_proxy_copy_to_device) X(chip_proxy_copy_from_device)              \
    X(chip_proxy_register_callable) X(chip_proxy_unregister_callable) X(chip_proxy_prepare_run)                    \
    X(chip_proxy_launch_run) X(chip_proxy_poll_run) X(chip_proxy_wait_run) X(chip_proxy_finalize_run)              \
    X(chip_proxy_run) X(chip_proxy_aicpu_dlopen_count) X(chip_proxy_host_dlopen_count)                             \
    X(chip_proxy_run_stream_set_create_count) X(chip_proxy_supports_concurrent_native_prepare)                     \
    X(chip_proxy_arena_bank_gm_heap_base) X(chip_proxy_retained_temp_addr) X(chip_proxy_device_poisoned)           \
    X(chip_proxy_comm_init) X(chip_proxy_comm_alloc_windows) X(chip_proxy_comm_get_local_window_base)              \
    X(chip_proxy_comm_get_window_size) X(chip_proxy_comm_derive_context) X(chip_proxy_comm_alloc_domain_windows)   \
    X(chip_proxy_comm_release_domain_windows) X(chip_proxy_comm_barrier) X(chip_proxy_comm_break_domain)           \
    X(chip_proxy_comm_destroy)

typedef struct Proxy {
    void *lib;
#define PROXY_SLOT(name) __typeof__(name) *name;
    PROXY_API(PROXY_SLOT)
#undef PROXY_SLOT
} Proxy;

/* The library, opened once and kept (as a JVM keeps it); NULL when a name is missing. */
static const Proxy *proxy(void)
{
    static Proxy p;
    static int state; /* 0 untried, 1 ok, -1 failed */
    if (state != 0)
        return state > 0 ? &p : NULL;
    state = -1;
    char path[512];
    const char *dir = getenv("PTORUN_LIB_DIR");
    snprintf(path, sizeof path, "%s/libptorun_chipproxy.so", dir ? dir : ".");
    p.lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (p.lib == NULL) {
        fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
        return NULL;
    }
#define PROXY_RESOLVE(name)                                      \
    *(void **)&p.name = dlsym(p.lib, #name);                     \
    if (p.name == NULL) {                                        \
        fprintf(stderr, "%s does not export %s\n", path, #name); \
        return NULL;                                             \
    }
    PROXY_API(PROXY_RESOLVE)
#undef PROXY_RESOLVE
    state = 1;
    return &p;
}

static void lib_path(char *out, size_t cap, const char *variant)
{
    const char *dir = getenv("PTORUN_LIB_DIR");
    snprintf(out, cap, "%s/libptorun_%s.so", dir ? dir : ".", variant);
}

/* bytes of the chip's arena holding a copy of init (or zeros). */
static void *in_arena(const Proxy *px, void *chip, size_t bytes, size_t align, const void *init)
{
    void *p = (void *)(uintptr_t)px->chip_proxy_arena_alloc(chip, bytes, align);
    if (p != NULL && init != NULL)
        memcpy(p, init, bytes);
    return p;
}

/* vadd: c = a + b over N f32. */
static uint8_t *add_callable(uint32_t *size)
{
    TestCallableBuilder b;
    tcb_init(&b);
    const uint8_t sig[] = { PTO_ARG_IN, PTO_ARG_IN, PTO_ARG_OUT };
    tcb_signature(&b, sig, 3);
    tcb_child(&b, 0, PTO_CORE_AIV, "vadd");
    PtoProgramParam p[] = { tcb_tensor(0, PTO_ARG_IN, 0, N * 4), tcb_tensor(1, PTO_ARG_IN, 0, N * 4),
                            tcb_tensor(2, PTO_ARG_OUT, 0, N * 4) };
    tcb_submit(&b, 0, p, 3);
    uint8_t *bytes = tcb_build(&b, size);
    tcb_free(&b);
    return bytes;
}

/* One task of fixture kernel fx_gate on scalar 0: the run executes until the word there turns non-zero. */
static uint8_t *gate_callable(uint32_t *size)
{
    uint32_t lib_size = 0;
    const uint8_t *lib = test_fixture("kernels", &lib_size);
    if (lib == NULL)
        return NULL;
    TestCallableBuilder b;
    tcb_init(&b);
    const uint8_t sig[] = { PTO_ARG_SCALAR };
    tcb_signature(&b, sig, 1);
    tcb_library_child(&b, 1, PTO_CORE_AIV, lib, lib_size, "fx_gate");
    PtoProgramParam p[] = { tcb_scalar_arg(0) };
    tcb_submit(&b, 1, p, 1);
    uint8_t *bytes = tcb_build(&b, size);
    tcb_free(&b);
    return bytes;
}

/* A chip through the proxy: started, a context initialized with its arch's
   images, vadd (ADD) and the gate (GATE) registered; a run's storage, args,
   cfg, desc and buffers in the arena. */
typedef struct TChip {
    const Proxy *px;
    void *chip, *ctx;
    void *storage;
    ChipStorageTaskArgs *args;
    CallConfig *cfg;
    NativeRunDescriptor *desc;
    float *a, *b, *c;
    uint32_t *gate;
    void *gate_storage;
    ChipStorageTaskArgs *gate_args;
} TChip;

/* open_chip, the child sharing the emulated driver state at driver_state_fd (-1: none). */
static int open_chip_sharing(const char *variant, int driver_state_fd, TChip *t)
{
    memset(t, 0, sizeof *t);
    const Proxy *px = t->px = proxy();
    if (px == NULL)
        return -1;
    char path[512];
    lib_path(path, sizeof path, variant);
    t->chip = driver_state_fd < 0
                  ? px->chip_proxy_start(PTO_CHIPHOST_EXE, path, ARENA_BYTES)
                  : px->chip_proxy_start_with_driver_state(PTO_CHIPHOST_EXE, path, ARENA_BYTES, driver_state_fd);
    if (t->chip == NULL) {
        fprintf(stderr, "chip_proxy_start %s: %s\n", variant, px->chip_proxy_last_error());
        return -1;
    }
    const DeviceImages *img = test_images_of(strncmp(variant, "a5", 2) == 0 ? "a5" : "a2a3");
    uint32_t add_size = 0, gate_size = 0;
    uint8_t *add = add_callable(&add_size), *gate = gate_callable(&gate_size);
    void *aicpu = img == NULL ? NULL : in_arena(px, t->chip, img->aicpu_size, 64, img->aicpu);
    void *aicore = img == NULL ? NULL : in_arena(px, t->chip, img->aicore_size, 64, img->aicore);
    void *add_c = add == NULL ? NULL : in_arena(px, t->chip, add_size, 64, add);
    void *gate_c = gate == NULL ? NULL : in_arena(px, t->chip, gate_size, 64, gate);
    free(add);
    free(gate);
    t->ctx = px->chip_proxy_create_device_context(t->chip);
    int rc = -1;
    if (t->ctx != NULL && aicpu != NULL && aicore != NULL && add_c != NULL && gate_c != NULL &&
        px->chip_proxy_init(t->ctx, 0, aicpu, img->aicpu_size, aicore, img->aicore_size, NULL, 0, NULL) == PTO_OK &&
        px->chip_proxy_register_callable(t->ctx, ADD, add_c) == PTO_OK &&
        px->chip_proxy_register_callable(t->ctx, GATE, gate_c) == PTO_OK)
        rc = 0;
    else
        fprintf(stderr, "%s through the proxy: %s\n", variant, px->chip_proxy_last_error());
    /* the library keeps its own copies of images and callables */
    px->chip_proxy_arena_free(t->chip, (uintptr_t)aicpu);
    px->chip_proxy_arena_free(t->chip, (uintptr_t)aicore);
    px->chip_proxy_arena_free(t->chip, (uintptr_t)add_c);
    px->chip_proxy_arena_free(t->chip, (uintptr_t)gate_c);
    if (rc != 0)
        return -1;
    uint64_t size = px->chip_proxy_runtime_size(t->chip), align = px->chip_proxy_runtime_alignment(t->chip);
    t->storage = in_arena(px, t->chip, size, align, NULL);
    t->gate_storage = in_arena(px, t->chip, size, align, NULL);
    t->args = in_arena(px, t->chip, sizeof *t->args, 64, NULL);
    t->gate_args = in_arena(px, t->chip, sizeof *t->gate_args, 64, NULL);
    CallConfig cfg = test_config(20000);
    t->cfg = in_arena(px, t->chip, sizeof cfg, 64, &cfg);
    t->desc = in_arena(px, t->chip, sizeof *t->desc, 64, NULL);
    t->a = in_arena(px, t->chip, N * sizeof(float), 64, NULL);
    t->b = in_arena(px, t->chip, N * sizeof(float), 64, NULL);
    t->c = in_arena(px, t->chip, N * sizeof(float), 64, NULL);
    t->gate = in_arena(px, t->chip, sizeof(uint32_t), 64, NULL);
    if (t->storage == NULL || t->gate_storage == NULL || t->args == NULL || t->gate_args == NULL || t->cfg == NULL ||
        t->desc == NULL || t->a == NULL || t->b == NULL || t->c == NULL || t->gate == NULL)
        return -1;
    for (int i = 0; i < N; i++) {
        t->a[i] = (float)i * 0.5f;
        t->b[i] = (float)(i % 13) - 6.0f;
        t->c[i] = -1.0f;
    }
    t->args->tensor_count = 3;
    t->args->tensors[0] = test_f32_tensor(t->a, N);
    t->args->tensors[1] = test_f32_tensor(t->b, N);
    t->args->tensors[2] = test_f32_tensor(t->c, N);
    t->gate_args->scalar_count = 1;
    t->gate_args->scalars[0] = (uint64_t)(uintptr_t)t->gate;
    *t->desc = (NativeRunDescriptor){ .run_id = 7, .run_epoch = 9 };
    return 0;
}

static int open_chip(const char *variant, TChip *t)
{
    return open_chip_sharing(variant, -1, t);
}

static void close_chip(TChip *t)
{
    if (t->px == NULL || t->chip == NULL)
        return;
    t->px->chip_proxy_destroy_device_context(t->ctx);
    t->px->chip_proxy_stop(t->chip);
    t->chip = NULL;
}

static int sums_right(const TChip *t)
{
    for (int i = 0; i < N; i++)
        if (t->c[i] != t->a[i] + t->b[i])
            return 0;
    return 1;
}

/* prepare, launch, wait, finalize of vadd; the sums checked. */
static void whole_run(const char *variant)
{
    TChip t;
    REQUIRE(open_chip(variant, &t) == 0);
    const Proxy *px = t.px;
    char want[64];
    snprintf(want, sizeof want, "%s", variant);
    for (char *s = want; *s; s++)
        *s = *s == '_' ? '/' : *s;
    CHECK(strcmp(px->chip_proxy_variant(t.chip), want) == 0);
    const PipelineContract *pc = px->chip_proxy_pipeline_contract(t.chip);
    CHECK(pc != NULL && pc->abi_version == PTO_PIPELINE_CONTRACT_ABI_VERSION);
    CHECK(px->chip_proxy_runtime_size(t.chip) >= PTO_NATIVE_RUN_REPORT_OFFSET + sizeof(NativeRunReport));
    CHECK_EQ_INT(px->chip_proxy_prepare_run(t.ctx, t.storage, ADD, t.args, t.cfg, t.desc), PTO_OK);
    CHECK_EQ_INT(px->chip_proxy_launch_run(t.ctx, t.storage), PTO_OK);
    CHECK_EQ_INT(px->chip_proxy_wait_run(t.ctx, t.storage), PTO_OK);
    CHECK_EQ_INT(px->chip_proxy_poll_run(t.ctx, t.storage), SIMPLER_NATIVE_RUN_POLL_COMPLETE);
    CHECK_EQ_INT(px->chip_proxy_finalize_run(t.ctx, t.storage), PTO_OK);
    CHECK(sums_right(&t));
    const NativeRunReport *report = (const void *)((const char *)t.storage + PTO_NATIVE_RUN_REPORT_OFFSET);
    CHECK(report->execution_end_ns != 0); /* the child wrote the report where we read it */
    /* a blocking run of the same storage, and the output copied back through the device */
    for (int i = 0; i < N; i++)
        t.c[i] = 0.0f;
    CHECK_EQ_INT(px->chip_proxy_run(t.ctx, t.storage, ADD, t.args, t.cfg, t.desc), PTO_OK);
    CHECK(sums_right(&t));
    float *dev = px->chip_proxy_device_malloc(t.ctx, N * sizeof(float));
    CHECK(dev != NULL);
    float *back = in_arena(px, t.chip, N * sizeof(float), 64, NULL);
    CHECK_EQ_INT(px->chip_proxy_copy_to_device(t.ctx, dev, t.c, N * sizeof(float)), PTO_OK);
    CHECK_EQ_INT(px->chip_proxy_copy_from_device(t.ctx, back, dev, N * sizeof(float)), PTO_OK);
    CHECK(back != NULL && memcmp(back, t.c, N * sizeof(float)) == 0);
    CHECK(px->chip_proxy_committed_device_memory(t.ctx) >= N * sizeof(float));
    px->chip_proxy_device_free(t.ctx, dev);
    CHECK_EQ_INT(px->chip_proxy_device_poisoned(t.ctx), 0);
    CHECK_EQ_INT(px->chip_proxy_unregister_callable(t.ctx, ADD), PTO_OK);
    CHECK_EQ_INT(px->chip_proxy_finalize_device(t.ctx), PTO_OK);
    CHECK(px->chip_proxy_alive(t.chip));
    CHECK(strcmp(px->chip_proxy_death(t.chip), "") == 0);
    close_chip(&t);
}

TEST(chiphost_proxy_exports_the_api)
{
    CHECK(proxy() != NULL);
}

TEST(chiphost_proxy_runs_vadd_on_sim_hbg)
{
    whole_run("a2a3_sim_hbg");
}

TEST(chiphost_proxy_runs_vadd_on_onboard_hbg)
{
    whole_run("a2a3_onboard_hbg");
}

TEST(chiphost_proxy_runs_vadd_on_sim_trb)
{
    whole_run("a2a3_sim_trb");
}

/* ---- two threads at once ---------------------------------------------------------- */

typedef struct Waiter {
    TChip *t;
    _Atomic int returned;
    int rc;
    char message[256];
} Waiter;

static void *wait_gate(void *arg)
{
    Waiter *w = arg;
    w->rc = w->t->px->chip_proxy_wait_run(w->t->ctx, w->t->gate_storage);
    snprintf(w->message, sizeof w->message, "%s", w->t->px->chip_proxy_last_error());
    atomic_store(&w->returned, 1);
    return NULL;
}

/* Launches the gate run and has a thread block in its wait_run; returns once
   that wait is in flight: a call of ours then needs a second lane (the wait
   holds the first), which the lane count shows. Each round is a real call. */
static int start_gated_wait(TChip *t, Waiter *w, pthread_t *thread)
{
    const Proxy *px = t->px;
    *t->gate = 0;
    memset(w, 0, sizeof *w);
    w->t = t;
    if (px->chip_proxy_prepare_run(t->ctx, t->gate_storage, GATE, t->gate_args, t->cfg, t->desc) != PTO_OK ||
        px->chip_proxy_launch_run(t->ctx, t->gate_storage) != PTO_OK) {
        fprintf(stderr, "gate run: %s\n", px->chip_proxy_last_error());
        return -1;
    }
    CHECK_EQ_INT(px->chip_proxy_lane_count(t->chip), 1); /* one caller so far: one lane */
    if (pthread_create(thread, NULL, wait_gate, w) != 0)
        return -1;
    while (px->chip_proxy_lane_count(t->chip) < 2 && !atomic_load(&w->returned))
        (void)px->chip_proxy_committed_device_memory(t->ctx);
    return atomic_load(&w->returned) ? -1 : 0;
}

static void open_gate(uint32_t *gate)
{
    __atomic_store_n(gate, 1, __ATOMIC_RELEASE);
    pto_futex_wake(gate);
}

TEST(chiphost_proxy_serves_other_calls_while_a_wait_blocks)
{
    TChip t;
    REQUIRE(open_chip("a2a3_sim_hbg", &t) == 0);
    const Proxy *px = t.px;
    Waiter w;
    pthread_t thread;
    REQUIRE(start_gated_wait(&t, &w, &thread) == 0);
    /* the wait blocks (the gate is shut) while these complete on another lane */
    CHECK_EQ_INT(px->chip_proxy_lane_count(t.chip), 2);
    CHECK_EQ_INT(px->chip_proxy_poll_run(t.ctx, t.gate_storage), SIMPLER_NATIVE_RUN_POLL_NOT_READY);
    float *dev = px->chip_proxy_device_malloc(t.ctx, N * sizeof(float));
    CHECK(dev != NULL);
    CHECK_EQ_INT(px->chip_proxy_copy_to_device(t.ctx, dev, t.a, N * sizeof(float)), PTO_OK);
    CHECK_EQ_INT(px->chip_proxy_copy_from_device(t.ctx, t.c, dev, N * sizeof(float)), PTO_OK);
    CHECK(memcmp(t.c, t.a, N * sizeof(float)) == 0);
    CHECK(px->chip_proxy_committed_device_memory(t.ctx) >= N * sizeof(float));
    CHECK_EQ_INT(px->chip_proxy_supports_concurrent_native_prepare(t.ctx), 1);
    CHECK(!atomic_load(&w.returned)); /* the gate is still shut */
    open_gate(t.gate);
    pthread_join(thread, NULL);
    CHECK_EQ_INT(w.rc, PTO_OK);
    CHECK_EQ_INT(px->chip_proxy_finalize_run(t.ctx, t.gate_storage), PTO_OK);
    CHECK_EQ_INT(px->chip_proxy_lane_count(t.chip), 2); /* the lanes are reused, not reopened */
    px->chip_proxy_device_free(t.ctx, dev);
    close_chip(&t);
}

/* A poll of a run whose work ended is answered from its storage in the arena, without a
   request: it still answers after the chip host died unseen (a request would find the death). */
TEST(chiphost_proxy_answers_an_ended_runs_poll_from_its_storage)
{
    TChip t;
    REQUIRE(open_chip("a2a3_sim_hbg", &t) == 0);
    const Proxy *px = t.px;
    *t.gate = 0;
    REQUIRE(px->chip_proxy_prepare_run(t.ctx, t.gate_storage, GATE, t.gate_args, t.cfg, t.desc) == PTO_OK);
    REQUIRE(px->chip_proxy_launch_run(t.ctx, t.gate_storage) == PTO_OK);
    const NativeRunReport *report = (const NativeRunReport *)((const char *)t.gate_storage + PTO_NATIVE_RUN_REPORT_OFFSET);
    CHECK(__atomic_load_n(&report->launched_ctx, __ATOMIC_ACQUIRE) != 0);
    CHECK_EQ_INT(__atomic_load_n(&report->device_ended, __ATOMIC_ACQUIRE), 0);
    open_gate(t.gate);
    CHECK_EQ_INT(px->chip_proxy_wait_run(t.ctx, t.gate_storage), PTO_OK);
    CHECK_EQ_INT(__atomic_load_n(&report->device_ended, __ATOMIC_ACQUIRE), 1);
    pid_t pid = (pid_t)px->chip_proxy_pid(t.chip);
    CHECK_EQ_INT(kill(pid, SIGKILL), 0); /* behind the proxy's back: nothing has seen the death yet */
    siginfo_t info;
    CHECK_EQ_INT(waitid(P_PID, (id_t)pid, &info, WEXITED | WNOWAIT), 0);
    CHECK_EQ_INT(px->chip_proxy_poll_run(t.ctx, t.gate_storage), SIMPLER_NATIVE_RUN_POLL_COMPLETE);
    CHECK_EQ_INT(px->chip_proxy_finalize_run(t.ctx, t.gate_storage), PTO_ERR_CHIP_CRASHED);
    close_chip(&t);
}

/* The storage answers only for the context whose launch returned, from then until finalize:
   every other poll is the library's, with its error. */
TEST(chiphost_proxy_leaves_every_other_poll_to_the_library)
{
    TChip t;
    REQUIRE(open_chip("a2a3_sim_hbg", &t) == 0);
    const Proxy *px = t.px;
    CHECK_EQ_INT(px->chip_proxy_prepare_run(t.ctx, t.storage, ADD, t.args, t.cfg, t.desc), PTO_OK);
    CHECK_EQ_INT(px->chip_proxy_poll_run(t.ctx, t.storage), PTO_ERR_WRONG_PHASE);
    CHECK_EQ_INT(px->chip_proxy_launch_run(t.ctx, t.storage), PTO_OK);
    CHECK_EQ_INT(px->chip_proxy_wait_run(t.ctx, t.storage), PTO_OK);
    void *other = px->chip_proxy_create_device_context(t.chip);
    REQUIRE(other != NULL);
    CHECK_EQ_INT(px->chip_proxy_poll_run(other, t.storage), PTO_ERR_BAD_STORAGE); /* another context's run */
    CHECK_EQ_INT(px->chip_proxy_poll_run(t.ctx, t.storage), SIMPLER_NATIVE_RUN_POLL_COMPLETE);
    CHECK_EQ_INT(px->chip_proxy_poll_run(t.ctx, (char *)t.storage + 8), PTO_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(px->chip_proxy_finalize_run(t.ctx, t.storage), PTO_OK);
    CHECK(sums_right(&t));
    CHECK_EQ_INT(px->chip_proxy_poll_run(t.ctx, t.storage), PTO_ERR_BAD_STORAGE);
    px->chip_proxy_destroy_device_context(other);
    close_chip(&t);
}

/* ---- errors ---------------------------------------------------------------------------- */

TEST(chiphost_proxy_refuses_pointers_outside_the_arena)
{
    TChip t;
    REQUIRE(open_chip("a2a3_sim_hbg", &t) == 0);
    const Proxy *px = t.px;
    size_t bytes = px->chip_proxy_runtime_size(t.chip);
    void *outside = aligned_alloc(64, (bytes + 63) / 64 * 64);
    REQUIRE(outside != NULL);
    memset(outside, 0, bytes);
    char addr[32];
    snprintf(addr, sizeof addr, "[0x%llx, +", (unsigned long long)(uintptr_t)outside);
    CHECK_EQ_INT(px->chip_proxy_prepare_run(t.ctx, outside, ADD, t.args, t.cfg, t.desc), PTO_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(px->chip_proxy_last_error(), "simpler_prepare_run: run storage");
    CHECK_CONTAINS(px->chip_proxy_last_error(), addr);
    CHECK_CONTAINS(px->chip_proxy_last_error(), "outside the chip arena [0x");
    CHECK_EQ_INT(px->chip_proxy_prepare_run(t.ctx, t.storage, ADD, outside, t.cfg, t.desc), PTO_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(px->chip_proxy_last_error(), "args");
    CHECK_EQ_INT(px->chip_proxy_wait_run(t.ctx, outside), PTO_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(px->chip_proxy_last_error(), "simpler_wait_run: run storage");
    CHECK_EQ_INT(px->chip_proxy_register_callable(t.ctx, 3, outside), PTO_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(px->chip_proxy_last_error(), "callable");
    CHECK(px->chip_proxy_in_arena(t.chip, (uintptr_t)t.storage, bytes));
    CHECK(!px->chip_proxy_in_arena(t.chip, (uintptr_t)outside, 1));
    /* nothing was followed: the storage outside is untouched, the chip fine */
    CHECK(((uint64_t *)outside)[0] == 0);
    CHECK(px->chip_proxy_alive(t.chip));
    CHECK_EQ_INT(px->chip_proxy_run(t.ctx, t.storage, ADD, t.args, t.cfg, t.desc), PTO_OK);
    CHECK(sums_right(&t));
    free(outside);
    close_chip(&t);
}

TEST(chiphost_proxy_brings_the_librarys_message_back)
{
    TChip t;
    REQUIRE(open_chip("a2a3_sim_hbg", &t) == 0);
    const Proxy *px = t.px;
    CHECK_EQ_INT(px->chip_proxy_register_callable(t.ctx, 64, t.args), PTO_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(px->chip_proxy_last_error(), "callable id 64 is outside 0..63");
    CHECK_EQ_INT(px->chip_proxy_launch_run(t.ctx, t.storage), PTO_ERR_BAD_STORAGE);
    CHECK_CONTAINS(px->chip_proxy_last_error(), "does not hold a prepared run");
    CHECK_EQ_INT(px->chip_proxy_copy_to_device(t.ctx, NULL, t.a, 16), PTO_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(px->chip_proxy_last_error(), "copy_to_device: NULL device pointer");
    CHECK(px->chip_proxy_arena_alloc(t.chip, ARENA_BYTES * 2, 64) == 0);
    CHECK_CONTAINS(px->chip_proxy_last_error(), "chip arena");
    /* a success clears the thread's message */
    (void)px->chip_proxy_committed_device_memory(t.ctx);
    CHECK(strcmp(px->chip_proxy_last_error(), "") == 0);
    close_chip(&t);
}

TEST(chiphost_proxy_bounces_copies_of_host_memory_outside_the_arena)
{
    TChip t;
    REQUIRE(open_chip("a2a3_sim_hbg", &t) == 0);
    const Proxy *px = t.px;
    const size_t bytes = (size_t)12 << 20; /* two bounce chunks, the second partial */
    unsigned char *host = malloc(bytes), *back = malloc(bytes);
    REQUIRE(host != NULL && back != NULL);
    for (size_t i = 0; i < bytes; i++)
        host[i] = (unsigned char)(i * 2654435761u >> 13);
    memset(back, 0, bytes);
    CHECK(!px->chip_proxy_in_arena(t.chip, (uintptr_t)host, bytes));
    void *dev = px->chip_proxy_device_malloc(t.ctx, bytes);
    REQUIRE(dev != NULL);
    CHECK_EQ_INT(px->chip_proxy_copy_to_device(t.ctx, dev, host, bytes), PTO_OK);
    CHECK_EQ_INT(px->chip_proxy_copy_from_device(t.ctx, back, dev, bytes), PTO_OK);
    CHECK(memcmp(host, back, bytes) == 0);
    /* a small out-block, as the Java side copies results */
    uint32_t word = 0;
    CHECK_EQ_INT(px->chip_proxy_copy_from_device(t.ctx, &word, (unsigned char *)dev + 4, sizeof word), PTO_OK);
    CHECK(memcmp(&word, host + 4, sizeof word) == 0);
    /* the bounce gave its chunks back: the arena has its big range again */
    uint64_t big = px->chip_proxy_arena_alloc(t.chip, (size_t)32 << 20, 4096);
    CHECK(big != 0);
    px->chip_proxy_arena_free(t.chip, big);
    px->chip_proxy_device_free(t.ctx, dev);
    free(host);
    free(back);
    close_chip(&t);
}

/* ---- death, log, stop ------------------------------------------------------------------ */

/* The records of the chip's log ring, concatenated as "level:text\n". */
static void drain_log(const Proxy *px, void *chip, char *out, size_t cap)
{
    char line[512];
    size_t at = 0;
    out[0] = '\0';
    for (int level; (level = px->chip_proxy_log_next(chip, line, sizeof line)) > 0;)
        at += (size_t)snprintf(out + at, at < cap ? cap - at : 0, "%d:%s\n", level, line);
}

TEST(chiphost_proxy_log_records_arrive_in_order)
{
    TChip t;
    REQUIRE(open_chip("a2a3_onboard_hbg", &t) == 0); /* the onboard runner logs its driver at init */
    const Proxy *px = t.px;
    void *second = px->chip_proxy_create_device_context(t.chip);
    REQUIRE(second != NULL);
    const DeviceImages *img = test_images_of("a2a3");
    void *aicpu = in_arena(px, t.chip, img->aicpu_size, 64, img->aicpu);
    void *aicore = in_arena(px, t.chip, img->aicore_size, 64, img->aicore);
    CHECK_EQ_INT(px->chip_proxy_init(second, 1, aicpu, img->aicpu_size, aicore, img->aicore_size, NULL, 0, NULL),
                 PTO_OK);
    CHECK_EQ_INT(px->chip_proxy_log_pending(t.chip), 2);
    char log[4096];
    drain_log(px, t.chip, log, sizeof log);
    const char *first = strstr(log, "device 0 uses driver"), *then = strstr(log, "device 1 uses driver");
    CHECK(first != NULL && then != NULL && first < then);
    CHECK(strncmp(log, "3:onboard a2a3 device 0", 23) == 0);
    CHECK_EQ_INT(px->chip_proxy_log_pending(t.chip), 0);
    char buf[8];
    CHECK_EQ_INT(px->chip_proxy_log_next(t.chip, buf, sizeof buf), 0);
    CHECK_EQ_INT(px->chip_proxy_log_next(t.chip, NULL, 8), PTO_ERR_INVALID_ARGUMENT);
    px->chip_proxy_destroy_device_context(second);
    px->chip_proxy_arena_free(t.chip, (uintptr_t)aicpu);
    px->chip_proxy_arena_free(t.chip, (uintptr_t)aicore);
    close_chip(&t);
}

TEST(chiphost_proxy_kill_during_a_wait_fails_every_call_with_the_death)
{
    TChip t;
    REQUIRE(open_chip("a2a3_onboard_hbg", &t) == 0);
    const Proxy *px = t.px;
    pid_t pid = (pid_t)px->chip_proxy_pid(t.chip);
    CHECK(pid > 0);
    Waiter w;
    pthread_t thread;
    REQUIRE(start_gated_wait(&t, &w, &thread) == 0);
    CHECK_EQ_INT(px->chip_proxy_kill(t.chip, SIGKILL), PTO_OK);
    pthread_join(thread, NULL);
    char death[128];
    snprintf(death, sizeof death, "chip host pid %d was killed by signal %d", (int)pid, SIGKILL);
    CHECK_EQ_INT(w.rc, PTO_ERR_CHIP_CRASHED);
    CHECK_CONTAINS(w.message, death);
    CHECK_EQ_INT(px->chip_proxy_alive(t.chip), 0);
    CHECK_CONTAINS(px->chip_proxy_death(t.chip), death);
    CHECK_EQ_INT(px->chip_proxy_poll_run(t.ctx, t.gate_storage), PTO_ERR_CHIP_CRASHED);
    CHECK_CONTAINS(px->chip_proxy_last_error(), death);
    CHECK_EQ_INT(px->chip_proxy_run(t.ctx, t.storage, ADD, t.args, t.cfg, t.desc), PTO_ERR_CHIP_CRASHED);
    CHECK(px->chip_proxy_device_malloc(t.ctx, 64) == NULL);
    CHECK_CONTAINS(px->chip_proxy_last_error(), death);
    CHECK(px->chip_proxy_create_device_context(t.chip) == NULL);
    CHECK_EQ_INT(px->chip_proxy_committed_device_memory(t.ctx), 0);
    CHECK_EQ_INT(px->chip_proxy_device_poisoned(t.ctx), 1);
    CHECK(px->chip_proxy_comm_init(t.ctx, 0, 1, "/nonexistent", 10) == NULL);
    CHECK_EQ_INT(px->chip_proxy_kill(t.chip, SIGKILL), PTO_ERR_CHIP_CRASHED);
    /* the child was collected: it is no child of ours any more, no zombie */
    CHECK(waitpid(pid, NULL, WNOHANG) == -1 && errno == ECHILD);
    /* what it logged before it died is still there, in the arena */
    char log[4096];
    drain_log(px, t.chip, log, sizeof log);
    CHECK(strstr(log, "3:onboard a2a3 device 0 uses driver") != NULL);
    close_chip(&t); /* destroy of the context frees the handle only */
}

TEST(chiphost_proxy_stop_leaves_nothing_behind)
{
    int fds = test_dir_entries("/proc/self/fd");
    TChip t;
    REQUIRE(open_chip("a2a3_sim_hbg", &t) == 0);
    pid_t pid = (pid_t)t.px->chip_proxy_pid(t.chip);
    CHECK_EQ_INT(t.px->chip_proxy_run(t.ctx, t.storage, ADD, t.args, t.cfg, t.desc), PTO_OK);
    close_chip(&t);
    CHECK(waitpid(pid, NULL, WNOHANG) == -1 && errno == ECHILD);
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/%d", (int)pid);
    CHECK(access(proc, F_OK) != 0);
    CHECK_EQ_INT(test_dir_entries("/proc/self/fd"), fds);
    t.px->chip_proxy_stop(NULL); /* tolerated */

    /* a start that fails leaves nothing either, and says why */
    const Proxy *px = proxy();
    CHECK(px->chip_proxy_start(PTO_CHIPHOST_EXE, "/nonexistent/libptorun_x.so", ARENA_BYTES) == NULL);
    CHECK_CONTAINS(px->chip_proxy_last_error(), "/nonexistent/libptorun_x.so");
    CHECK(px->chip_proxy_start("/nonexistent/ptorun-chiphost", "/x.so", ARENA_BYTES) == NULL);
    CHECK_CONTAINS(px->chip_proxy_last_error(), "no executable");
    CHECK(waitpid(-1, NULL, WNOHANG) <= 0);
    CHECK_EQ_INT(test_dir_entries("/proc/self/fd"), fds);
}

/* The onboard chip's driver shares this process's emulated driver state: a fault armed
   here fires in the child, once; the stats count the child's device and give it back
   when the chip stops cleanly. */
TEST(chiphost_proxy_shares_the_emulated_driver_state_with_an_onboard_chip)
{
    int (*state_fd)(void);
    *(void **)&state_fd = dlsym(emudrv()->handle, "ptorun_emudrv_state_fd");
    REQUIRE(state_fd != NULL && state_fd() >= 0);
    PtoEmuStats base = stats_now();
    TChip t;
    REQUIRE(open_chip_sharing("a2a3_onboard_hbg", state_fd(), &t) == 0);
    const Proxy *px = t.px;
    CHECK(stats_now().devices_open == base.devices_open + 1);
    PtoEmuStats open = stats_now();
    CHECK_EQ_INT(emudrv()->inject(PTO_EMU_FAULT_ALLOC, 0), 0);
    void *dev = px->chip_proxy_device_malloc(t.ctx, 4096);
    CHECK(dev == NULL);
    dev = px->chip_proxy_device_malloc(t.ctx, 4096);
    CHECK(dev != NULL);
    CHECK_EQ_INT(stats_now().allocations, open.allocations + 1);
    px->chip_proxy_device_free(t.ctx, dev);
    CHECK_STATS(stats_now(), open);
    /* and a run still works: the fault fired once */
    CHECK_EQ_INT(px->chip_proxy_run(t.ctx, t.storage, ADD, t.args, t.cfg, t.desc), PTO_OK);
    CHECK(sums_right(&t));
    close_chip(&t);
    CHECK_STATS(stats_now(), base);
    emudrv()->inject(PTO_EMU_FAULT_NONE, 0);
}

/* Without the state, the child's driver counts on a private page: the parent's stats do not move. */
TEST(chiphost_proxy_without_the_driver_state_keeps_the_child_apart)
{
    PtoEmuStats base = stats_now();
    TChip t;
    REQUIRE(open_chip("a2a3_onboard_hbg", &t) == 0);
    CHECK_STATS(stats_now(), base);
    close_chip(&t);
}

/* A driver state fd that is no state page (a pipe): the child's driver runs on a private
   page, and the onboard runner says so in the chip's native log, once. */
TEST(chiphost_proxy_logs_a_refused_driver_state)
{
    int p[2];
    REQUIRE(pipe2(p, O_CLOEXEC) == 0);
    TChip t;
    int opened = open_chip_sharing("a2a3_onboard_hbg", p[0], &t) == 0;
    close(p[0]);
    close(p[1]);
    REQUIRE(opened);
    char log[4096];
    drain_log(t.px, t.chip, log, sizeof log);
    const char *warn = strstr(log, "private state");
    CHECK(warn != NULL && strstr(log, "2:onboard driver") != NULL && strstr(log, "PTORUN_EMUDRV_STATE_FD=5") != NULL);
    CHECK(warn == NULL || strstr(warn + 1, "private state") == NULL);
    close_chip(&t);
}

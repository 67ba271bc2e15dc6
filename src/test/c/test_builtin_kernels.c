/* The built-in kernels of the AICore image, called directly through their
 * exported symbols: every result equals a plain sequential C reference bit for
 * bit (the order docs/kernels.md fixes), and every refusal has its own code and
 * writes nothing. */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/pto_builtin_kernels.h"
#include "ptest.h"
#include "ptorun/chip_callable.h"
#include "ptorun/pto_kernel.h"

static void *aicore_image(void)
{
    static void *handle;
    if (handle == NULL) {
        const char *dir = getenv("PTORUN_LIB_DIR");
        char path[4096];
        snprintf(path, sizeof path, "%s/libptorun_aicore_a2a3.so", dir ? dir : ".");
        handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (handle == NULL)
            fprintf(stderr, "cannot load %s: %s\n", path, dlerror());
    }
    return handle;
}

static PtoKernelFn kernel(const char *name)
{
    char symbol[128];
    snprintf(symbol, sizeof symbol, "pto_kernel_%s", name);
    void *h = aicore_image();
    return h == NULL ? NULL : (PtoKernelFn)dlsym(h, symbol);
}

/* Calls `name` with up to 8 parameters: pointers (or raw scalars) and view sizes. */
static int32_t call(const char *name, uint32_t core_type, uint32_t n, const uint64_t *args, const uint64_t *sizes)
{
    PtoKernelFn fn = kernel(name);
    if (fn == NULL)
        return -1000;
    PtoKernelContext k = { .core_type = core_type, .core_id = 0, .block_idx = 0, .block_dim = 1, .task_id = 0,
                           .arg_sizes = sizes };
    return fn(args, n, &k);
}

#define P(ptr) ((uint64_t)(uintptr_t)(ptr))

static uint32_t bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* Inputs that exercise rounding: wide magnitudes, negative values, zeros of both signs. */
static void fill(float *x, uint32_t n, uint32_t seed)
{
    uint32_t s = seed * 2654435761u + 1;
    for (uint32_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        x[i] = (float)((int32_t)(s >> 8) % 200001 - 100000) / (float)(1 + (s & 1023));
    }
    if (n > 3) {
        x[1] = 0.0f;
        x[2] = -0.0f;
    }
}

static int same_bits(const float *a, const float *b, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (bits(a[i]) != bits(b[i])) {
            fprintf(stderr, "  element %u: %a (0x%08x) != expected %a (0x%08x)\n", i, (double)a[i], bits(a[i]),
                    (double)b[i], bits(b[i]));
            return 0;
        }
    return 1;
}

TEST(kernels_every_listed_builtin_is_exported)
{
#define CHECK_EXPORTED(name) CHECK(kernel(#name) != NULL);
    PTO_BUILTIN_KERNELS(CHECK_EXPORTED)
#undef CHECK_EXPORTED
}

/* ---- elementwise ---------------------------------------------------------------- */

static float ref_max(float a, float b)
{
    if (isnan(a))
        return a;
    if (a == 0.0f && b == 0.0f && signbit(a))
        return b;
    return a >= b ? a : b;
}

TEST(kernels_binary_ops_match_the_reference_bit_for_bit)
{
    enum { N = 1027 };
    float a[N], b[N], c[N], want[N];
    fill(a, N, 1);
    fill(b, N, 2);
    b[7] = 0.0f; /* a division by zero: inf or nan, the same in both */
    const char *names[] = { "vadd", "vsub", "vmul", "vdiv", "vmax" };
    for (int op = 0; op < 5; op++) {
        for (uint32_t i = 0; i < N; i++) {
            switch (op) {
            case 0: want[i] = a[i] + b[i]; break;
            case 1: want[i] = a[i] - b[i]; break;
            case 2: want[i] = a[i] * b[i]; break;
            case 3: want[i] = a[i] / b[i]; break;
            default: want[i] = ref_max(a[i], b[i]); break;
            }
        }
        memset(c, 0xff, sizeof c);
        uint64_t args[] = { P(a), P(b), P(c) }, sizes[] = { sizeof a, sizeof b, sizeof c };
        CHECK_EQ_INT(call(names[op], PTO_CORE_AIV, 3, args, sizes), PTO_KERNEL_OK);
        CHECK(same_bits(c, want, N));
    }
}

TEST(kernels_vmax_follows_java_math_max_for_nan_and_signed_zero)
{
    float a[4] = { NAN, 1.0f, -0.0f, 0.0f }, b[4] = { 1.0f, NAN, 0.0f, -0.0f }, c[4];
    uint64_t args[] = { P(a), P(b), P(c) }, sizes[] = { 16, 16, 16 };
    CHECK_EQ_INT(call("vmax", PTO_CORE_AIV, 3, args, sizes), 0);
    CHECK(isnan(c[0]) && isnan(c[1]));
    CHECK_EQ_INT(bits(c[2]), bits(0.0f));
    CHECK_EQ_INT(bits(c[3]), bits(0.0f));
}

TEST(kernels_unary_maps_match_the_reference_bit_for_bit)
{
    enum { N = 515 };
    float a[N], c[N], want[N];
    fill(a, N, 3);
    for (uint32_t i = 0; i < N; i++)
        a[i] = a[i] / 97.0f; /* keep exp mostly finite */
    a[5] = NAN;
    a[6] = -1.5f;
    for (uint32_t i = 0; i < N; i++)
        want[i] = (float)exp((double)a[i]);
    uint64_t args[] = { P(a), P(c) }, sizes[] = { sizeof a, sizeof c };
    CHECK_EQ_INT(call("vexp", PTO_CORE_AIV, 2, args, sizes), 0);
    CHECK(same_bits(c, want, N));

    for (uint32_t i = 0; i < N; i++)
        want[i] = ref_max(a[i], 0.0f);
    CHECK_EQ_INT(call("vrelu", PTO_CORE_AIV, 2, args, sizes), 0);
    CHECK(same_bits(c, want, N));
    CHECK(isnan(c[5]));
    CHECK_EQ_INT(bits(c[6]), bits(0.0f));
    CHECK_EQ_INT(bits(c[2]), bits(0.0f)); /* -0 -> +0 */
}

TEST(kernels_tile_add_accumulates_in_place)
{
    enum { N = 300 };
    float a[N], c[N], want[N];
    fill(a, N, 4);
    fill(c, N, 5);
    for (uint32_t i = 0; i < N; i++)
        want[i] = c[i] + a[i];
    uint64_t args[] = { P(a), P(c) }, sizes[] = { sizeof a, sizeof c };
    CHECK_EQ_INT(call("tile_add", PTO_CORE_AIV, 2, args, sizes), 0);
    CHECK(same_bits(c, want, N));
}

/* ---- reductions ------------------------------------------------------------------- */

TEST(kernels_reduce_sum_adds_left_to_right_in_f32)
{
    enum { N = 10001 };
    float *a = malloc(N * sizeof(float));
    fill(a, N, 6);
    float want = a[0];
    for (uint32_t i = 1; i < N; i++)
        want = want + a[i];
    float c[2] = { -1.0f, -2.0f };
    uint64_t args[] = { P(a), P(c) }, sizes[] = { N * sizeof(float), sizeof(float) };
    CHECK_EQ_INT(call("reduce_sum", PTO_CORE_AIV, 2, args, sizes), 0);
    CHECK_EQ_INT(bits(c[0]), bits(want));
    CHECK_EQ_INT(bits(c[1]), bits(-2.0f)); /* only c[0] is written */

    /* a single -0 stays -0; no elements give +0 */
    float z = -0.0f;
    uint64_t zargs[] = { P(&z), P(c) }, zsizes[] = { 4, 4 };
    CHECK_EQ_INT(call("reduce_sum", PTO_CORE_AIV, 2, zargs, zsizes), 0);
    CHECK_EQ_INT(bits(c[0]), bits(-0.0f));
    zsizes[0] = 0;
    CHECK_EQ_INT(call("reduce_sum", PTO_CORE_AIV, 2, zargs, zsizes), 0);
    CHECK_EQ_INT(bits(c[0]), bits(0.0f));
    free(a);
}

static void ref_softmax(const float *a, float *c, uint32_t rows, uint32_t cols)
{
    for (uint32_t r = 0; r < rows; r++) {
        const float *x = a + r * cols;
        float *y = c + r * cols;
        float m = x[0];
        for (uint32_t i = 1; i < cols; i++)
            if (x[i] > m)
                m = x[i];
        float s = 0.0f;
        for (uint32_t i = 0; i < cols; i++) {
            y[i] = (float)exp((double)(x[i] - m));
            s = i == 0 ? y[i] : s + y[i];
        }
        for (uint32_t i = 0; i < cols; i++)
            y[i] = y[i] / s;
    }
}

TEST(kernels_softmax_rows_matches_the_reference_and_works_in_place)
{
    enum { ROWS = 7, COLS = 33 };
    float a[ROWS * COLS], c[ROWS * COLS], want[ROWS * COLS];
    fill(a, ROWS * COLS, 7);
    for (uint32_t i = 0; i < ROWS * COLS; i++)
        a[i] = a[i] / 31.0f;
    ref_softmax(a, want, ROWS, COLS);
    uint64_t args[] = { P(a), P(c), COLS }, sizes[] = { sizeof a, sizeof c, 0 };
    CHECK_EQ_INT(call("softmax_rows", PTO_CORE_AIV, 3, args, sizes), 0);
    CHECK(same_bits(c, want, ROWS * COLS));
    /* in place: c is a */
    uint64_t in_place[] = { P(a), P(a), COLS };
    CHECK_EQ_INT(call("softmax_rows", PTO_CORE_AIV, 3, in_place, sizes), 0);
    CHECK(same_bits(a, want, ROWS * COLS));
}

/* ---- gemm ------------------------------------------------------------------------- */

static void ref_gemm(const float *a, const float *b, float *c, uint32_t m, uint32_t k, uint32_t n)
{
    for (uint32_t i = 0; i < m; i++)
        for (uint32_t j = 0; j < n; j++) {
            float acc = c[i * n + j];
            for (uint32_t p = 0; p < k; p++)
                acc = acc + a[i * k + p] * b[p * n + j];
            c[i * n + j] = acc;
        }
}

TEST(kernels_gemm_tile_accumulates_each_element_in_ascending_k)
{
    static const uint32_t shapes[][3] = { { 1, 1, 1 }, { 16, 16, 16 }, { 5, 17, 3 }, { 32, 8, 40 }, { 3, 0, 4 } };
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        uint32_t m = shapes[s][0], k = shapes[s][1], n = shapes[s][2];
        float *a = malloc(sizeof(float) * (m * k + 1)), *b = malloc(sizeof(float) * (k * n + 1));
        float *c = malloc(sizeof(float) * m * n), *want = malloc(sizeof(float) * m * n);
        fill(a, m * k, 8 + (uint32_t)s);
        fill(b, k * n, 9 + (uint32_t)s);
        fill(c, m * n, 10 + (uint32_t)s);
        memcpy(want, c, sizeof(float) * m * n);
        ref_gemm(a, b, want, m, k, n);
        uint64_t args[] = { P(a), P(b), P(c), m, k, n };
        uint64_t sizes[] = { 4ull * m * k, 4ull * k * n, 4ull * m * n, 0, 0, 0 };
        CHECK_EQ_INT(call("gemm_tile", PTO_CORE_AIC, 6, args, sizes), 0);
        CHECK(same_bits(c, want, m * n));
        free(a);
        free(b);
        free(c);
        free(want);
    }
}

/* ---- refusals --------------------------------------------------------------------- */

/* Runs a refused call and checks that the output kept its sentinel bytes. */
static void check_refused(const char *name, uint32_t core_type, uint32_t nargs, const uint64_t *args,
                          const uint64_t *sizes, int32_t code, const float *out, uint32_t out_n)
{
    int32_t rc = call(name, core_type, nargs, args, sizes);
    if (rc != code)
        fprintf(stderr, "  %s returned %d, expected %d\n", name, rc, code);
    CHECK_EQ_INT(rc, code);
    for (uint32_t i = 0; i < out_n; i++)
        CHECK_EQ_INT(bits(out[i]), bits(-9.0f));
}

TEST(kernels_refuse_bad_tasks_with_distinct_codes_and_write_nothing)
{
    float in[64] = { 0 }, out[64];
    for (int i = 0; i < 64; i++)
        out[i] = -9.0f;
    /* wrong parameter counts */
    uint64_t a3[] = { P(in), P(in), P(out) }, s3[] = { 256, 256, 256 };
    const char *binary[] = { "vsub", "vdiv", "vmax" };
    for (int i = 0; i < 3; i++) {
        check_refused(binary[i], PTO_CORE_AIV, 2, a3, s3, PTO_KERNEL_ERR_PARAM_COUNT, out, 64);
        uint64_t small[] = { 256, 128, 256 };
        check_refused(binary[i], PTO_CORE_AIV, 3, a3, small, PTO_KERNEL_ERR_VIEW_TOO_SMALL, out, 64);
        uint64_t odd[] = { 256, 256, 255 };
        check_refused(binary[i], PTO_CORE_AIV, 3, a3, odd, PTO_KERNEL_ERR_BAD_SIZE, out, 64);
        uint64_t mis[] = { P(in) + 1, P(in), P(out) };
        uint64_t s4[] = { 252, 252, 252 };
        check_refused(binary[i], PTO_CORE_AIV, 3, mis, s4, PTO_KERNEL_ERR_MISALIGNED, out, 64);
    }
    uint64_t a2[] = { P(in), P(out) };
    const char *unary[] = { "vexp", "vrelu", "tile_add" };
    for (int i = 0; i < 3; i++) {
        check_refused(unary[i], PTO_CORE_AIV, 3, a3, s3, PTO_KERNEL_ERR_PARAM_COUNT, out, 64);
        uint64_t small[] = { 128, 256 };
        check_refused(unary[i], PTO_CORE_AIV, 2, a2, small, PTO_KERNEL_ERR_VIEW_TOO_SMALL, out, 64);
        uint64_t odd[] = { 256, 6 };
        check_refused(unary[i], PTO_CORE_AIV, 2, a2, odd, PTO_KERNEL_ERR_BAD_SIZE, out, 64);
    }
    /* reduce_sum: no room for c[0], input not whole f32s */
    uint64_t rs_small[] = { 256, 2 }, rs_odd[] = { 255, 4 };
    check_refused("reduce_sum", PTO_CORE_AIV, 3, a3, s3, PTO_KERNEL_ERR_PARAM_COUNT, out, 64);
    check_refused("reduce_sum", PTO_CORE_AIV, 2, a2, rs_small, PTO_KERNEL_ERR_BAD_SIZE, out, 64);
    check_refused("reduce_sum", PTO_CORE_AIV, 2, a2, (uint64_t[]){ 256, 0 }, PTO_KERNEL_ERR_VIEW_TOO_SMALL, out, 64);
    check_refused("reduce_sum", PTO_CORE_AIV, 2, a2, rs_odd, PTO_KERNEL_ERR_BAD_SIZE, out, 64);
    /* softmax_rows: 0 columns, columns not dividing the output, short input, overflowing columns */
    uint64_t sm0[] = { P(in), P(out), 0 }, sm5[] = { P(in), P(out), 5 }, smbig[] = { P(in), P(out), UINT64_MAX / 2 };
    uint64_t sms[] = { 256, 256, 0 };
    check_refused("softmax_rows", PTO_CORE_AIV, 2, sm5, sms, PTO_KERNEL_ERR_PARAM_COUNT, out, 64);
    check_refused("softmax_rows", PTO_CORE_AIV, 3, sm0, sms, PTO_KERNEL_ERR_BAD_SCALAR, out, 64);
    check_refused("softmax_rows", PTO_CORE_AIV, 3, smbig, sms, PTO_KERNEL_ERR_BAD_SCALAR, out, 64);
    check_refused("softmax_rows", PTO_CORE_AIV, 3, sm5, sms, PTO_KERNEL_ERR_BAD_SIZE, out, 64);
    check_refused("softmax_rows", PTO_CORE_AIV, 3, sm5, (uint64_t[]){ 20, 40, 0 }, PTO_KERNEL_ERR_VIEW_TOO_SMALL,
                  out, 64);
    /* gemm_tile: on an AIV core, views too small for M, K, N, sizes that overflow */
    uint64_t g[] = { P(in), P(in), P(out), 4, 4, 4 }, gs[] = { 64, 64, 64, 0, 0, 0 };
    check_refused("gemm_tile", PTO_CORE_AIC, 5, g, gs, PTO_KERNEL_ERR_PARAM_COUNT, out, 64);
    check_refused("gemm_tile", PTO_CORE_AIV, 6, g, gs, PTO_KERNEL_ERR_CORE_TYPE, out, 64);
    uint64_t gsmall[] = { 64, 60, 64, 0, 0, 0 };
    check_refused("gemm_tile", PTO_CORE_AIC, 6, g, gsmall, PTO_KERNEL_ERR_VIEW_TOO_SMALL, out, 64);
    uint64_t gbig[] = { P(in), P(in), P(out), 1ull << 40, 1ull << 40, 4 };
    check_refused("gemm_tile", PTO_CORE_AIC, 6, gbig, gs, PTO_KERNEL_ERR_BAD_SCALAR, out, 64);
    uint64_t gmis[] = { P(in), P(in), P(out) + 2, 2, 2, 2 };
    check_refused("gemm_tile", PTO_CORE_AIC, 6, gmis, gs, PTO_KERNEL_ERR_MISALIGNED, out, 64);
}

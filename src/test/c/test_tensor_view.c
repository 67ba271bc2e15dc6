/* util/tensor_view.c against the definition itself: random small views
 * (random dtypes, extents including 0, strides including 0, transposed dim
 * orders, offsets) whose byte sets are enumerated element by element; the
 * conflict and covers answers must equal the byte-set intersection and subset.
 * Then hand-written cases of tiles of one matrix. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ptest.h"
#include "ptorun/pto_runtime_c_api.h"
#include "util/tensor_view.h"

#define SEED 0x7e45042du
#define BASE 0x10000u
#define WINDOW 768u
#define CASES 20000u

static uint64_t rng;

static uint32_t rnd(uint32_t n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng % n);
}

/* Marks the bytes of v (inside [BASE, BASE + WINDOW)) in set. */
static void bytes_of(const PtoTensorView *v, uint8_t *set)
{
    memset(set, 0, WINDOW);
    uint64_t esz = pto_dtype_bytes(v->dtype);
    uint64_t total = 1;
    for (uint32_t d = 0; d < v->ndims; d++)
        total *= v->shape[d];
    for (uint64_t e = 0; e < total; e++) {
        uint64_t rest = e, off = 0;
        for (uint32_t d = v->ndims; d-- > 0;) {
            off += (rest % v->shape[d]) * v->strides[d];
            rest /= v->shape[d];
        }
        for (uint64_t b = 0; b < esz; b++)
            set[v->addr - BASE + off * esz + b] = 1;
    }
}

/* A random valid view lying in the window. */
static PtoTensorView random_view(void)
{
    for (;;) {
        PtoTensorView v = { 0 };
        if (rnd(8) == 0) { /* a flat parameter */
            uint32_t len = rnd(96);
            return tensor_view_flat(BASE + rnd(WINDOW - len), len);
        }
        v.dtype = rnd(PTO_DTYPE_COUNT);
        v.ndims = 1 + rnd(rnd(2) ? 3 : PTO_VIEW_MAX_DIMS);
        for (uint32_t d = 0; d < v.ndims; d++) {
            v.shape[d] = rnd(24) == 0 ? 0 : 1 + rnd(4);
            v.strides[d] = rnd(6) == 0 ? 0 : 1 + rnd(rnd(2) ? 3 : 12);
        }
        if (rnd(3) == 0 && v.ndims >= 2) { /* row-major strides, maybe transposed */
            uint64_t s = 1;
            for (uint32_t d = v.ndims; d-- > 0;) {
                v.strides[d] = s;
                s *= v.shape[d] + rnd(3);
            }
            if (rnd(2)) {
                uint32_t x = rnd(v.ndims), y = rnd(v.ndims);
                uint64_t t = v.shape[x];
                v.shape[x] = v.shape[y], v.shape[y] = t;
                t = v.strides[x], v.strides[x] = v.strides[y], v.strides[y] = t;
            }
        }
        v.addr = 0;
        uint64_t span;
        if (tensor_view_check(&v, &span) != NULL || span > WINDOW)
            continue;
        v.addr = BASE + rnd(WINDOW - (uint32_t)span + 1);
        return v;
    }
}

static void describe(const char *what, const PtoTensorView *v)
{
    fprintf(stderr, "  %s: addr +%llu dtype %u ndims %u shape", what, (unsigned long long)(v->addr - BASE), v->dtype,
            v->ndims);
    for (uint32_t d = 0; d < v->ndims; d++)
        fprintf(stderr, " %llu", (unsigned long long)v->shape[d]);
    fprintf(stderr, " strides");
    for (uint32_t d = 0; d < v->ndims; d++)
        fprintf(stderr, " %llu", (unsigned long long)v->strides[d]);
    fprintf(stderr, "\n");
}

TEST(tensor_view_conflict_and_covers_equal_the_byte_sets_of_random_views)
{
    rng = SEED;
    static uint8_t sa[WINDOW], sb[WINDOW];
    uint32_t conflicts = 0, covered = 0, failures = 0;
    for (uint32_t c = 0; c < CASES && failures < 5; c++) {
        PtoTensorView a = random_view(), b = random_view();
        if (rnd(10) == 0)
            b = a; /* the same view: covers both ways */
        bytes_of(&a, sa);
        bytes_of(&b, sb);
        int meet = 0, a_in_b = 1, b_in_a = 1;
        for (uint32_t i = 0; i < WINDOW; i++) {
            meet |= sa[i] && sb[i];
            a_in_b &= !sa[i] || sb[i];
            b_in_a &= !sb[i] || sa[i];
        }
        conflicts += meet;
        covered += a_in_b;
        int got_meet = tensor_view_conflict(&a, &b), got_meet_rev = tensor_view_conflict(&b, &a);
        int got_a_in_b = tensor_view_covers(&b, &a), got_b_in_a = tensor_view_covers(&a, &b);
        uint64_t span;
        CHECK(tensor_view_check(&a, &span) == NULL && span == tensor_view_span(&a));
        if (got_meet != meet || got_meet_rev != meet || got_a_in_b != a_in_b || got_b_in_a != b_in_a) {
            failures++;
            char m[200];
            snprintf(m, sizeof m,
                     "seed 0x%x case %u: conflict %d/%d covers(b,a) %d covers(a,b) %d, byte sets say %d %d %d", SEED, c,
                     got_meet, got_meet_rev, got_a_in_b, got_b_in_a, meet, a_in_b, b_in_a);
            ptest_record_failure(__FILE__, __LINE__, m);
            describe("a", &a);
            describe("b", &b);
        }
    }
    /* the random views exercise both answers of both questions */
    CHECK(conflicts > CASES / 10 && conflicts < CASES - CASES / 10);
    CHECK(covered > CASES / 20);
}

static PtoTensorView mat(uint64_t base, uint32_t dtype, uint64_t rows, uint64_t cols, uint64_t ld)
{
    return (PtoTensorView){ .addr = base, .dtype = dtype, .ndims = 2, .shape = { rows, cols }, .strides = { ld, 1 } };
}

TEST(tensor_view_tiles_of_one_matrix)
{
    /* a 64 x 64 row-major f32 matrix at 0x100000 */
    const uint64_t m = 0x100000, ld = 64, row = ld * 4;
    PtoTensorView whole = mat(m, PTO_DTYPE_F32, 64, 64, ld);
    PtoTensorView left = mat(m, PTO_DTYPE_F32, 64, 16, ld), right = mat(m + 16 * 4, PTO_DTYPE_F32, 64, 16, ld);
    PtoTensorView next = mat(m + 32 * 4, PTO_DTYPE_F32, 64, 16, ld);
    uint64_t span;
    CHECK(tensor_view_check(&left, &span) == NULL && span == 63 * row + 16 * 4);
    /* column tiles of the same rows: their spans overlap, their bytes do not */
    CHECK(!tensor_view_conflict(&left, &right));
    CHECK(!tensor_view_conflict(&right, &next));
    CHECK(tensor_view_conflict(&left, &whole) && tensor_view_covers(&whole, &left) && !tensor_view_covers(&left, &whole));
    /* a tile one element wider touches its neighbour's first column only */
    PtoTensorView wide = mat(m, PTO_DTYPE_F32, 64, 17, ld);
    CHECK(tensor_view_conflict(&wide, &right) && tensor_view_covers(&wide, &left) && !tensor_view_covers(&wide, &right));
    /* row tiles: disjoint, and two of them cover the flat rows they span */
    PtoTensorView top = mat(m, PTO_DTYPE_F32, 8, 64, ld), below = mat(m + 8 * row, PTO_DTYPE_F32, 8, 64, ld);
    PtoTensorView rows = tensor_view_flat(m, 8 * row);
    CHECK(!tensor_view_conflict(&top, &below));
    CHECK(tensor_view_covers(&rows, &top) && tensor_view_covers(&top, &rows));
    /* the transposed view of the matrix (shape swapped, strides swapped) is the same bytes */
    PtoTensorView t = { .addr = m, .dtype = PTO_DTYPE_F32, .ndims = 2, .shape = { 64, 64 }, .strides = { 1, ld } };
    CHECK(tensor_view_covers(&t, &whole) && tensor_view_covers(&whole, &t));
    PtoTensorView tleft = { .addr = m, .dtype = PTO_DTYPE_F32, .ndims = 2, .shape = { 16, 64 }, .strides = { 1, ld } };
    CHECK(tensor_view_covers(&tleft, &left) && tensor_view_covers(&left, &tleft) && !tensor_view_conflict(&tleft, &right));
    /* an overhanging view: past the last column of a row it reads the next row's start */
    PtoTensorView hang = mat(m + 60 * 4, PTO_DTYPE_F32, 2, 8, ld);
    CHECK(tensor_view_conflict(&hang, &left) && !tensor_view_conflict(&hang, &right));
    PtoTensorView elem = tensor_view_flat(m + row + 3 * 4, 4);
    CHECK(tensor_view_covers(&hang, &elem) && tensor_view_covers(&left, &elem));
    /* an f16 view of the same bytes as an f32 tile */
    PtoTensorView half = { .addr = m + 16 * 4, .dtype = PTO_DTYPE_F16, .ndims = 2, .shape = { 64, 32 },
                           .strides = { 2 * ld, 1 } };
    CHECK(tensor_view_covers(&half, &right) && tensor_view_covers(&right, &half) && !tensor_view_conflict(&half, &left));
    /* a broadcast (stride 0) row read against the rows it repeats */
    PtoTensorView bcast = { .addr = m, .dtype = PTO_DTYPE_F32, .ndims = 2, .shape = { 64, 64 }, .strides = { 0, 1 } };
    CHECK(tensor_view_conflict(&bcast, &top) && !tensor_view_conflict(&bcast, &below) &&
          tensor_view_covers(&top, &bcast));
    /* empty views share nothing, and anything covers them */
    PtoTensorView none = mat(m, PTO_DTYPE_F32, 0, 64, ld);
    CHECK(tensor_view_check(&none, &span) == NULL && span == 0);
    CHECK(!tensor_view_conflict(&none, &whole) && tensor_view_covers(&left, &none) && !tensor_view_covers(&none, &left));
}

TEST(tensor_view_check_refuses_what_is_no_view)
{
    uint64_t span;
    PtoTensorView v = mat(0x1000, 77, 4, 4, 4);
    CHECK_CONTAINS(tensor_view_check(&v, &span), "dtype");
    v = mat(0x1000, PTO_DTYPE_F32, 4, 4, 4);
    v.ndims = 6;
    CHECK_CONTAINS(tensor_view_check(&v, &span), "ndims");
    v.ndims = 0;
    CHECK_CONTAINS(tensor_view_check(&v, &span), "ndims");
    v = mat(0x1000, PTO_DTYPE_F32, 2, 4, UINT64_MAX / 2);
    CHECK_CONTAINS(tensor_view_check(&v, &span), "overflows");
    v = mat(UINT64_MAX - 8, PTO_DTYPE_F32, 2, 4, 4);
    CHECK_CONTAINS(tensor_view_check(&v, &span), "wraps");
}

/* Dense views reduce to one run each and tiles to their rows: a million-element
   matrix against its own tiles answers without walking elements. */
TEST(tensor_view_large_views_answer_by_rows)
{
    const uint64_t m = 0x40000000, n = 4096;
    PtoTensorView whole = mat(m, PTO_DTYPE_F32, n, n, n);
    PtoTensorView a = mat(m + 8, PTO_DTYPE_F32, n, 1, n), b = mat(m + 12, PTO_DTYPE_F32, n, 1, n);
    for (int i = 0; i < 200; i++) {
        CHECK(tensor_view_covers(&whole, &a));
        CHECK(!tensor_view_conflict(&a, &b));
        CHECK(!tensor_view_covers(&a, &whole));
    }
}

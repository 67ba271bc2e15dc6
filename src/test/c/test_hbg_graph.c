/* hbg's dependency inference (runtime/hbg/hbg_graph.c) against the rule itself:
 * random tasks over overlapping views of one tensor, the producers of each task
 * compared with a plain quadratic model of "a view depends on the earlier
 * writes it overlaps (and, when it writes, on the earlier reads), a write
 * superseding every access it covers". */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ptest.h"
#include "ptorun/chip_callable.h"
#include "ptorun/pto_orchestration.h"
#include "ptorun/pto_runtime_c_api.h"
#include "runtime/hbg/hbg_graph.h"
#include "util/last_error.h"

#define BASE 0x10000u
#define SPAN 512u
#define TASKS 400u

typedef struct ModelAccess {
    uint64_t lo, hi;
    uint32_t task;
    int write;
    int live;
} ModelAccess;

static ModelAccess model[TASKS * 3];
static uint32_t model_count;

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(uint32_t n)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state % n);
}

/* The producers of a task with these params, as a bitmap over earlier tasks;
 * then records its accesses. */
static void model_submit(const PtoTaskParam *p, uint32_t n, uint32_t task, uint8_t *producer)
{
    memset(producer, 0, TASKS);
    for (uint32_t i = 0; i < n; i++) {
        uint64_t lo = p[i].value, hi = lo + p[i].bytes;
        int writes = p[i].direction != PTO_ARG_IN;
        for (uint32_t a = 0; a < model_count; a++) {
            const ModelAccess *m = &model[a];
            if (m->live && m->lo < hi && lo < m->hi && (m->write || writes))
                producer[m->task] = 1;
        }
    }
    for (uint32_t i = 0; i < n; i++) {
        uint64_t lo = p[i].value, hi = lo + p[i].bytes;
        int writes = p[i].direction != PTO_ARG_IN;
        if (writes)
            for (uint32_t a = 0; a < model_count; a++)
                if (model[a].lo >= lo && model[a].hi <= hi)
                    model[a].live = 0;
        model[model_count++] = (ModelAccess){ lo, hi, task, writes, 1 };
    }
}

static void random_view(PtoTaskParam *p, int wide)
{
    static const uint32_t dirs[3] = { PTO_ARG_IN, PTO_ARG_OUT, PTO_ARG_INOUT };
    uint32_t len = wide ? 1 + rnd(SPAN) : 1 + rnd(24);
    uint32_t lo = rnd(SPAN - len + 1);
    *p = (PtoTaskParam){ .direction = dirs[rnd(3)], .value = BASE + lo, .bytes = len };
}

TEST(hbg_dependencies_match_the_quadratic_model_on_random_overlapping_views)
{
    for (int round = 0; round < 6; round++) {
        HbgGraph g;
        hbg_graph_init(&g);
        CHECK_EQ_INT(hbg_graph_add_range(&g, BASE, BASE + SPAN), PTO_OK);
        hbg_graph_seal_classes(&g);
        model_count = 0;
        static uint8_t expected[TASKS], actual[TASKS];
        uint32_t edge_seen = 0;
        for (uint32_t t = 0; t < TASKS; t++) {
            PtoTaskParam p[3];
            uint32_t n = 1 + rnd(3);
            for (uint32_t i = 0; i < n; i++)
                random_view(&p[i], round % 2 == 0 && rnd(8) == 0);
            CHECK_EQ_INT(hbg_graph_submit(&g, 0x1234, 1, PTO_CORE_AIV, p, n), PTO_OK);
            model_submit(p, n, t, expected);
            /* this task's edges are the ones appended by its submit */
            memset(actual, 0, sizeof actual);
            for (; edge_seen < g.edge_count; edge_seen++) {
                CHECK_EQ_INT(g.edges[2 * edge_seen + 1], t);
                actual[g.edges[2 * edge_seen]] = 1;
            }
            if (memcmp(actual, expected, TASKS) != 0) {
                CHECK(!"the producers differ from the model");
                break;
            }
        }
        hbg_graph_destroy(&g);
    }
}

/* ---- strided views: the same model over byte sets ------------------------------------- */

#define SET_BYTES (SPAN / 8)

typedef struct SetAccess {
    uint8_t set[SET_BYTES];
    uint32_t task;
    int write;
    int live;
} SetAccess;

static SetAccess set_model[TASKS * 3];
static uint32_t set_count;

static void set_of(const PtoTaskParam *p, uint8_t *set)
{
    memset(set, 0, SET_BYTES);
    if (p->view.ndims == 0) {
        for (uint64_t b = p->value; b < p->value + p->bytes; b++)
            set[(b - BASE) / 8] |= (uint8_t)(1u << ((b - BASE) % 8));
        return;
    }
    const PtoTensorView *v = &p->view;
    uint64_t esz = pto_dtype_bytes(v->dtype), total = 1;
    for (uint32_t d = 0; d < v->ndims; d++)
        total *= v->shape[d];
    for (uint64_t e = 0; e < total; e++) {
        uint64_t rest = e, off = 0;
        for (uint32_t d = v->ndims; d-- > 0;) {
            off += rest % v->shape[d] * v->strides[d];
            rest /= v->shape[d];
        }
        for (uint64_t b = 0; b < esz; b++) {
            uint64_t at = v->addr + off * esz + b - BASE;
            set[at / 8] |= (uint8_t)(1u << (at % 8));
        }
    }
}

static void set_model_submit(const PtoTaskParam *p, uint32_t n, uint32_t task, uint8_t *producer)
{
    uint8_t sets[3][SET_BYTES];
    memset(producer, 0, TASKS);
    for (uint32_t i = 0; i < n; i++) {
        set_of(&p[i], sets[i]);
        int writes = p[i].direction != PTO_ARG_IN;
        for (uint32_t a = 0; a < set_count; a++) {
            const SetAccess *m = &set_model[a];
            int meet = 0;
            for (uint32_t b = 0; b < SET_BYTES; b++)
                meet |= (m->set[b] & sets[i][b]) != 0;
            if (m->live && meet && (m->write || writes))
                producer[m->task] = 1;
        }
    }
    for (uint32_t i = 0; i < n; i++) {
        int writes = p[i].direction != PTO_ARG_IN;
        for (uint32_t a = 0; writes && a < set_count; a++) {
            int inside = 1;
            for (uint32_t b = 0; b < SET_BYTES; b++)
                inside &= (set_model[a].set[b] & ~sets[i][b]) == 0;
            if (inside)
                set_model[a].live = 0;
        }
        SetAccess *m = &set_model[set_count++];
        memcpy(m->set, sets[i], SET_BYTES);
        m->task = task;
        m->write = writes;
        m->live = 1;
    }
}

/* Tiles and transposes of small row-major matrices inside the tensor, or flat views. */
static void random_strided_view(PtoTaskParam *p)
{
    static const uint32_t dirs[3] = { PTO_ARG_IN, PTO_ARG_OUT, PTO_ARG_INOUT };
    static const uint32_t dtypes[3] = { PTO_DTYPE_U8, PTO_DTYPE_F16, PTO_DTYPE_F32 };
    if (rnd(4) == 0) {
        random_view(p, 0);
        return;
    }
    uint32_t dt = dtypes[rnd(3)], esz = pto_dtype_bytes(dt);
    uint64_t rows = 1 + rnd(6), cols = 1 + rnd(6), ld = cols + rnd(8);
    *p = (PtoTaskParam){ .direction = dirs[rnd(3)] };
    p->view = (PtoTensorView){ .dtype = dt, .ndims = 2, .shape = { rows, cols }, .strides = { ld, 1 } };
    if (rnd(3) == 0) {
        p->view.shape[0] = cols, p->view.shape[1] = rows;
        p->view.strides[0] = 1, p->view.strides[1] = ld;
    }
    p->bytes = ((rows - 1) * ld + cols) * esz;
    p->value = p->view.addr = BASE + rnd((uint32_t)(SPAN - p->bytes) / esz + 1) * esz;
}

TEST(hbg_dependencies_match_the_byte_set_model_on_random_strided_views)
{
    for (int round = 0; round < 3; round++) {
        HbgGraph g;
        hbg_graph_init(&g);
        CHECK_EQ_INT(hbg_graph_add_range(&g, BASE, BASE + SPAN), PTO_OK);
        hbg_graph_seal_classes(&g);
        set_count = 0;
        static uint8_t expected[TASKS], actual[TASKS];
        uint32_t edge_seen = 0;
        for (uint32_t t = 0; t < TASKS; t++) {
            PtoTaskParam p[3];
            uint32_t n = 1 + rnd(3);
            for (uint32_t i = 0; i < n; i++)
                random_strided_view(&p[i]);
            CHECK_EQ_INT(hbg_graph_submit(&g, 0x1234, 1, PTO_CORE_AIV, p, n), PTO_OK);
            set_model_submit(p, n, t, expected);
            memset(actual, 0, sizeof actual);
            for (; edge_seen < g.edge_count; edge_seen++)
                actual[g.edges[2 * edge_seen]] = 1;
            if (memcmp(actual, expected, TASKS) != 0) {
                CHECK(!"the producers differ from the byte-set model");
                break;
            }
            /* a task with a strided view keeps one view per parameter */
            int strided = 0;
            for (uint32_t i = 0; i < n; i++)
                strided |= p[i].view.ndims != 0;
            CHECK(strided ? g.tasks[t].view_index != 0 : g.tasks[t].view_index == 0);
        }
        hbg_graph_destroy(&g);
    }
}

TEST(hbg_submit_refuses_a_malformed_strided_view)
{
    HbgGraph g;
    hbg_graph_init(&g);
    CHECK_EQ_INT(hbg_graph_add_range(&g, BASE, BASE + SPAN), PTO_OK);
    hbg_graph_seal_classes(&g);
    PtoTaskParam p = { .direction = PTO_ARG_IN, .value = BASE, .bytes = 64 };
    p.view = (PtoTensorView){ .addr = BASE, .dtype = PTO_DTYPE_F32, .ndims = 2, .shape = { 4, 4 }, .strides = { 8, 1 } };
    CHECK_EQ_INT(hbg_graph_submit(&g, 0x1234, 1, PTO_CORE_AIV, &p, 1), PTO_ERR_ORCHESTRATION);
    CHECK_CONTAINS(pto_last_error(), "param 0 strided view at 0x10000: bytes is not the view's byte span");
    p.bytes = (3 * 8 + 4) * 4;
    p.view.addr = BASE + 4;
    CHECK_EQ_INT(hbg_graph_submit(&g, 0x1234, 1, PTO_CORE_AIV, &p, 1), PTO_ERR_ORCHESTRATION);
    CHECK_CONTAINS(pto_last_error(), "view.addr is not the parameter's value");
    p.view.addr = BASE;
    p.view.dtype = 99;
    CHECK_EQ_INT(hbg_graph_submit(&g, 0x1234, 1, PTO_CORE_AIV, &p, 1), PTO_ERR_ORCHESTRATION);
    CHECK_CONTAINS(pto_last_error(), "unknown dtype");
    p.view.dtype = PTO_DTYPE_F32;
    CHECK_EQ_INT(hbg_graph_submit(&g, 0x1234, 1, PTO_CORE_AIV, &p, 1), PTO_OK);
    hbg_graph_destroy(&g);
}

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

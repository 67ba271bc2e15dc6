/* The graph recorder (runtime/graph_recorder.h): geometry matching, and a
 * randomized race of prepares taking, making and giving back recordings that
 * checks every answer: a taken recording is of the asked geometry and alive, a
 * held one is never destroyed, every recording made is destroyed exactly once. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "ptest.h"
#include "runtime/graph_recorder.h"

typedef struct TestRecording {
    GraphRecording base;
    uint32_t geometry;        /* which test geometry it was made for */
    atomic_int destroyed;
} TestRecording;

static atomic_int made, destroyed, destroyed_while_held, destroyed_twice;

static void test_destroy(GraphRecording *base, const HostApi *api)
{
    (void)api;
    TestRecording *t = (TestRecording *)base;
    if (base->holders != 0)
        atomic_fetch_add(&destroyed_while_held, 1);
    if (atomic_exchange(&t->destroyed, 1) != 0)
        atomic_fetch_add(&destroyed_twice, 1);
    atomic_fetch_add(&destroyed, 1);
    graph_recording_forget_geometry(base);
    /* kept (leaked on purpose until the test ends) so a late reader sees the flag */
}

/* Geometry g: tensor sizes, a staged one, and for g >= 2 two device tensors that
   overlap (g 2 and 3 at different offsets). */
static void geometry(uint32_t g, RunTensorTable *t)
{
    memset(t, 0, sizeof *t);
    t->count = 3;
    t->entries[0] = (RunTensor){ .dev = 0x10000, .size = 256 * (1 + (g & 1)), .staged = 1 };
    t->entries[1] = (RunTensor){ .dev = 0x20000, .size = 512 };
    t->entries[2] = (RunTensor){ .dev = g < 2 ? 0x30000 : 0x20000 + 64 * (g - 1), .size = 512 };
}

TEST(graph_recorder_matches_geometry_exactly)
{
    GraphRecorder *r = graph_recorder_create();
    REQUIRE(r != NULL);
    RunTensorTable t;
    geometry(2, &t);
    CHECK(graph_recorder_take(r, &t, 1) == NULL);
    TestRecording *rec = calloc(1, sizeof *rec);
    rec->base.destroy = test_destroy;
    CHECK_EQ_INT(graph_recording_keep_geometry(&rec->base, &t, 1), 0);
    CHECK_EQ_INT(rec->base.overlap_count, 1);
    CHECK_EQ_INT(graph_recorder_publish(r, &rec->base, NULL), 1);
    graph_recorder_give_back(r, &rec->base);
    CHECK(graph_recorder_take(r, &t, 2) == NULL);      /* another scalar count */
    t.entries[2].dev += 8;
    CHECK(graph_recorder_take(r, &t, 1) == NULL);      /* another overlap */
    t.entries[2].dev -= 8;
    t.entries[0].dev += 4096;                           /* addresses alone do not matter */
    t.entries[1].dev += 4096, t.entries[2].dev += 4096;
    CHECK(graph_recorder_take(r, &t, 1) == &rec->base);
    /* a held recording is not replaced */
    TestRecording *other = calloc(1, sizeof *other);
    other->base.destroy = test_destroy;
    geometry(0, &t);
    CHECK_EQ_INT(graph_recording_keep_geometry(&other->base, &t, 1), 0);
    CHECK_EQ_INT(graph_recorder_publish(r, &other->base, NULL), 0);
    graph_recorder_give_back(r, &rec->base);
    CHECK_EQ_INT(graph_recorder_publish(r, &other->base, NULL), 1);
    CHECK_EQ_INT(atomic_load(&rec->destroyed), 1);
    graph_recorder_give_back(r, &other->base);
    graph_recorder_destroy(r, NULL);
    CHECK_EQ_INT(atomic_load(&other->destroyed), 1);
    free(rec);
    free(other);
}

#define RACE_THREADS 4
#define RACE_ROUNDS 20000
#define RACE_GEOMETRIES 4

typedef struct RaceArg {
    GraphRecorder *r;
    uint32_t seed;
    int wrong;                /* answers that broke the contract */
    TestRecording **mine;     /* every recording this thread made */
    uint32_t mine_count;
} RaceArg;

static void *race(void *p)
{
    RaceArg *a = p;
    for (uint32_t k = 0; k < RACE_ROUNDS; k++) {
        uint32_t g = (uint32_t)rand_r(&a->seed) % RACE_GEOMETRIES;
        RunTensorTable t;
        geometry(g, &t);
        TestRecording *held = (TestRecording *)graph_recorder_take(a->r, &t, g);
        if (held == NULL) {
            TestRecording *rec = calloc(1, sizeof *rec);
            rec->base.destroy = test_destroy;
            rec->geometry = g;
            a->mine[a->mine_count++] = rec;
            atomic_fetch_add(&made, 1);
            if (graph_recording_keep_geometry(&rec->base, &t, g) != 0)
                a->wrong++;
            if (graph_recorder_publish(a->r, &rec->base, NULL))
                held = rec;
            else
                test_destroy(&rec->base, NULL); /* dropped: this run goes unrecorded */
        }
        if (held != NULL) {
            if (held->geometry != g || atomic_load(&held->destroyed))
                a->wrong++;
            if ((rand_r(&a->seed) & 7) == 0)
                sched_yield(); /* hold it a while: others must not replace it */
            if (atomic_load(&held->destroyed))
                a->wrong++;
            graph_recorder_give_back(a->r, &held->base);
        }
    }
    return NULL;
}

TEST(graph_recorder_race_of_takes_makes_and_give_backs_keeps_every_rule)
{
    atomic_store(&made, 0);
    atomic_store(&destroyed, 0);
    atomic_store(&destroyed_while_held, 0);
    atomic_store(&destroyed_twice, 0);
    GraphRecorder *r = graph_recorder_create();
    REQUIRE(r != NULL);
    pthread_t threads[RACE_THREADS];
    RaceArg args[RACE_THREADS];
    for (int i = 0; i < RACE_THREADS; i++) {
        args[i] = (RaceArg){ .r = r, .seed = 977u * (uint32_t)(i + 1) };
        args[i].mine = calloc(RACE_ROUNDS, sizeof *args[i].mine);
        REQUIRE(args[i].mine != NULL);
        REQUIRE(pthread_create(&threads[i], NULL, race, &args[i]) == 0);
    }
    for (int i = 0; i < RACE_THREADS; i++)
        pthread_join(threads[i], NULL);
    graph_recorder_destroy(r, NULL);
    int wrong = 0;
    uint32_t total = 0;
    for (int i = 0; i < RACE_THREADS; i++) {
        wrong += args[i].wrong;
        total += args[i].mine_count;
        for (uint32_t k = 0; k < args[i].mine_count; k++)
            free(args[i].mine[k]);
        free(args[i].mine);
    }
    CHECK_EQ_INT(wrong, 0);
    CHECK_EQ_INT(atomic_load(&destroyed_while_held), 0);
    CHECK_EQ_INT(atomic_load(&destroyed_twice), 0);
    CHECK_EQ_INT(atomic_load(&made), total);
    CHECK_EQ_INT(atomic_load(&destroyed), total); /* every one, once: dropped, replaced or at the end */
    CHECK(total > RACE_GEOMETRIES);               /* geometries did change hands */
}

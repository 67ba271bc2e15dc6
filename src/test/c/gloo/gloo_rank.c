/*
 * One rank of the multi-host plugin's test (run_netns_test.sh):
 *
 *   gloo_rank <rootinfo> <rank> <nranks> <bind_addr> <count> [<mode>]
 *
 * dlopens $PTORUN_LIB_DIR/libptorun_gloo.so, opens the group and, plain, runs
 * allreduce, reduce_scatter, allgather, broadcast (root 1) and barrier on
 * deterministic inputs whose sums round differently in another order; every
 * result must equal, byte for byte, the reference computed here in rank order.
 * Exit 0: all equal; 1: a call failed or a result differs (stderr says which).
 *
 * fault: rank nranks-1 kills itself after the open; every other rank's
 * allreduce must then fail (PTO_ERR_DEVICE or PTO_ERR_TIMEOUT) within the
 * timeout: exit 10 (EXIT_FAILED_AS_EXPECTED), 1 when it succeeded, 2 when it
 * failed too late. The killed rank dies of SIGKILL.
 * partition: after the open every rank writes a line into the FIFO
 * $GLOO_RANK_SYNC_DIR/ready and opens the FIFO $GLOO_RANK_SYNC_DIR/go for
 * reading, which returns once the script, having read four lines and cut the
 * link between the hosts, opens it for writing; then like fault: exit 10 when
 * the allreduce failed within the timeout.
 * open-timeout: rank 0 never opens (no store is served); every other rank's
 * open must fail with PTO_ERR_TIMEOUT naming the store within the timeout:
 * exit 10 (rank 0 too).
 * open-disagree: the ranks but 0 open the group id with its last digit
 * changed: they must be refused by rank 0's store (PTO_ERR_RANKS_DISAGREE),
 * and rank 0's open must time out naming rank 1, the first that never came: exit 10.
 * disagree: rank nranks-1 calls the allreduce with count+1 floats: every
 * rank's call must fail with PTO_ERR_RANKS_DISAGREE (not abort, not hang):
 * exit 10.
 * sub (nranks 4): opens the subgroups {0,2} ("leaders", one rank per host)
 * and {1,3} at once on different ranks; then one thread runs collectives on
 * that pair while the main thread opens {0,1,2,3} (another tag) and a group
 * of one; then on each group (the parent too) every collective of plain,
 * allgatherv with unequal sizes (one of 0 bytes, one of 3 MiB) and with all
 * sizes 0, and allreduce_sum_i32 of sums that overflow, checked against the
 * wrapping sums in rank order; last, two threads open two subgroups of all
 * four at once (in each rank) and check them; then ranks 0, 1 and 3 open the
 * subgroup {0,1,3} and check every collective on it, and allreduce_sum_f32 of
 * 3 * 262144 + 2 and of 2 floats (fewer than ranks). Exit 0.
 * sub-disagree (nranks 4): every rank opens a subgroup of all four, but rank
 * 3 passes {0,1,3}: every open must fail with PTO_ERR_RANKS_DISAGREE and the
 * parent stay usable (a barrier): exit 10.
 * sub-fault (nranks 4): ranks 0, 2 and 3 open the subgroup {0,2,3}, rank 3
 * kills itself; the allreduce of 0 and 2 on it must fail within the timeout
 * naming rank 3 (the parent's numbering; it is the subgroup's rank 2): exit 10;
 * rank 1, no member, exits 0.
 * disagree-v (nranks 4): on the subgroup of all four, every rank calls
 * allgatherv with the sizes {10, 20, 30, 40} but rank 2, which passes rank
 * 3's as 41: every rank's call must fail with PTO_ERR_RANKS_DISAGREE: exit 10.
 * bench: one warm-up allreduce of count floats, then GLOO_RANK_ITERS (3) timed
 * ones between barriers; rank 0 prints "allreduce_seconds <mean>" on stdout.
 *
 * GLOO_RANK_TIMEOUT_MS: the group's timeout (default 30000).
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ptorun/pto_gloo.h"
#include "ptorun/pto_runtime_c_api.h"

#define EXIT_FAILED_AS_EXPECTED 10
#define EXIT_FAILED_LATE 2

static struct {
  int (*open)(const char *, int, int, const char *, uint32_t, PtoGlooGroup **);
  int (*allreduce)(PtoGlooGroup *, float *, size_t);
  int (*allgather)(PtoGlooGroup *, const void *, void *, size_t);
  int (*allgatherv)(PtoGlooGroup *, const void *, void *, const size_t *);
  int (*allreduce_i32)(PtoGlooGroup *, int32_t *, size_t);
  int (*open_subgroup)(PtoGlooGroup *, const char *, const int *, size_t, PtoGlooGroup **);
  int (*reduce_scatter)(PtoGlooGroup *, const float *, float *, size_t);
  int (*broadcast)(PtoGlooGroup *, void *, size_t, int);
  int (*barrier)(PtoGlooGroup *);
  void (*close)(PtoGlooGroup *);
  const char *(*last_error)(void);
} api;

static int g_rank;

static void die(const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "gloo_rank %d: ", g_rank);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  exit(1);
}

static void *sym(void *lib, const char *name) {
  void *p = dlsym(lib, name);
  if (!p) die("no symbol %s: %s", name, dlerror());
  return p;
}

static void load(void) {
  const char *dir = getenv("PTORUN_LIB_DIR");
  if (!dir) die("PTORUN_LIB_DIR is not set");
  char path[4096];
  snprintf(path, sizeof path, "%s/libptorun_gloo.so", dir);
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) die("dlopen %s: %s", path, dlerror());
  *(void **)&api.open = sym(lib, "ptorun_gloo_open");
  *(void **)&api.allreduce = sym(lib, "ptorun_gloo_allreduce_sum_f32");
  *(void **)&api.allgather = sym(lib, "ptorun_gloo_allgather");
  *(void **)&api.allgatherv = sym(lib, "ptorun_gloo_allgatherv");
  *(void **)&api.allreduce_i32 = sym(lib, "ptorun_gloo_allreduce_sum_i32");
  *(void **)&api.open_subgroup = sym(lib, "ptorun_gloo_open_subgroup");
  *(void **)&api.reduce_scatter = sym(lib, "ptorun_gloo_reduce_scatter_sum_f32");
  *(void **)&api.broadcast = sym(lib, "ptorun_gloo_broadcast");
  *(void **)&api.barrier = sym(lib, "ptorun_gloo_barrier");
  *(void **)&api.close = sym(lib, "ptorun_gloo_close");
  *(void **)&api.last_error = sym(lib, "ptorun_gloo_last_error");
}

/* Rank r's element i: values in [-500, 500) on a 1e-3 grid, so sums of a few
 * of them round differently in another order. */
static float x(int r, size_t i) {
  uint32_t h = (uint32_t)i * 2654435761u + (uint32_t)r * 40503u;
  return (float)(h % 1000003u) * 1e-3f - 500.0f;
}

static void *alloc(size_t bytes) {
  void *p = malloc(bytes ? bytes : 1);
  if (!p) die("out of memory (%zu bytes)", bytes);
  return p;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void check(int rc, const char *what) {
  if (rc != PTO_OK) die("%s failed (%d): %s", what, rc, api.last_error());
}

static void expect_same(const void *got, const void *want, size_t bytes, const char *what) {
  if (memcmp(got, want, bytes) == 0) return;
  const unsigned char *a = got, *b = want;
  size_t at = 0;
  while (a[at] == b[at]) at++;
  die("%s differs from the rank-order reference at byte %zu of %zu", what, at, bytes);
}

static void run_all(PtoGlooGroup *g, int rank, int n, size_t count) {
  /* allreduce */
  float *data = alloc(count * sizeof(float));
  float *ref = alloc(count * sizeof(float));
  for (size_t i = 0; i < count; i++) {
    data[i] = x(rank, i);
    float s = x(0, i);
    for (int k = 1; k < n; k++) s += x(k, i);
    ref[i] = s;
  }
  check(api.allreduce(g, data, count), "allreduce");
  expect_same(data, ref, count * sizeof(float), "allreduce");

  /* reduce_scatter: count/n (at least 1) floats per rank */
  size_t c = count / (size_t)n ? count / (size_t)n : 1;
  float *in = alloc((size_t)n * c * sizeof(float));
  float *out = alloc(c * sizeof(float));
  float *rs_ref = alloc(c * sizeof(float));
  for (size_t j = 0; j < (size_t)n * c; j++) in[j] = x(rank, j);
  for (size_t i = 0; i < c; i++) {
    size_t j = (size_t)rank * c + i;
    float s = x(0, j);
    for (int k = 1; k < n; k++) s += x(k, j);
    rs_ref[i] = s;
  }
  check(api.reduce_scatter(g, in, out, c), "reduce_scatter");
  expect_same(out, rs_ref, c * sizeof(float), "reduce_scatter");
  free(in);
  free(out);
  free(rs_ref);

  /* allgather of every rank's x_r */
  for (size_t i = 0; i < count; i++) data[i] = x(rank, i);
  float *all = alloc((size_t)n * count * sizeof(float));
  float *all_ref = alloc((size_t)n * count * sizeof(float));
  for (int k = 0; k < n; k++)
    for (size_t i = 0; i < count; i++) all_ref[(size_t)k * count + i] = x(k, i);
  check(api.allgather(g, data, all, count * sizeof(float)), "allgather");
  expect_same(all, all_ref, (size_t)n * count * sizeof(float), "allgather");
  free(all);
  free(all_ref);

  /* broadcast from rank 1 */
  int root = n > 1 ? 1 : 0;
  for (size_t i = 0; i < count; i++) {
    data[i] = x(rank, i);
    ref[i] = x(root, i);
  }
  check(api.broadcast(g, data, count * sizeof(float), root), "broadcast");
  expect_same(data, ref, count * sizeof(float), "broadcast");

  check(api.barrier(g), "barrier");
  free(data);
  free(ref);
}

/* ---- subgroups (sub, sub-disagree, sub-fault) ---- */

/* A group and which parent ranks it holds (members[k]: its rank k). */
typedef struct {
  PtoGlooGroup *g;
  const char *name;
  int n;
  int me;
  int members[4];
} Group;

/* Byte i of the contribution of parent rank `who` to call `salt`. */
static uint8_t pattern(int who, int salt, size_t i) {
  uint32_t h = (uint32_t)i * 2654435761u ^ (uint32_t)who * 0x9e3779b9u ^ (uint32_t)salt * 0x85ebca6bu;
  return (uint8_t)(h ^ (h >> 13) ^ (h >> 24));
}

/* allgatherv with unequal sizes: one rank 3 MiB and a little, one 0 bytes
 * (which ones turn with salt), the others some KiB; then all sizes 0. */
static void check_allgatherv(const Group *s, int salt) {
  size_t sizes[4], total = 0, off = 0;
  for (int k = 0; k < s->n; k++) {
    int turn = (k + salt) % s->n;
    sizes[k] = turn == 0 ? (3u << 20) + 5 + (size_t)salt : turn == 1 ? 0 : 40000 * (size_t)turn + (size_t)salt;
    total += sizes[k];
  }
  uint8_t *in = alloc(sizes[s->me]);
  uint8_t *out = alloc(total);
  uint8_t *want = alloc(total);
  for (size_t i = 0; i < sizes[s->me]; i++) in[i] = pattern(s->members[s->me], salt, i);
  for (int k = 0; k < s->n; k++) {
    for (size_t i = 0; i < sizes[k]; i++) want[off + i] = pattern(s->members[k], salt, i);
    off += sizes[k];
  }
  memset(out, 0xee, total);
  char what[96];
  snprintf(what, sizeof what, "allgatherv on %s", s->name);
  check(api.allgatherv(s->g, sizes[s->me] ? in : NULL, out, sizes), what);
  expect_same(out, want, total, what);
  size_t zeros[4] = {0, 0, 0, 0};
  snprintf(what, sizeof what, "allgatherv of 0 bytes on %s", s->name);
  check(api.allgatherv(s->g, NULL, NULL, zeros), what);
  free(in);
  free(out);
  free(want);
}

/* Parent rank who's element i: near INT32_MAX or INT32_MIN, so sums wrap. */
static int32_t v32(int who, size_t i) {
  uint32_t u = 0x7ff00000u + (uint32_t)who * 0x3c6ef372u + (uint32_t)i * 2654435761u;
  int32_t v;
  memcpy(&v, &u, sizeof v);
  return v;
}

static void check_allreduce_i32(const Group *s, size_t count) {
  int32_t *data = alloc(count * sizeof(int32_t));
  int32_t *want = alloc(count * sizeof(int32_t));
  for (size_t i = 0; i < count; i++) {
    uint32_t sum = 0; /* unsigned: wraps like two's complement */
    for (int k = 0; k < s->n; k++) sum += (uint32_t)v32(s->members[k], i);
    memcpy(&want[i], &sum, sizeof sum);
    data[i] = v32(s->members[s->me], i);
  }
  char what[96];
  snprintf(what, sizeof what, "allreduce_sum_i32 of %zu on %s", count, s->name);
  check(api.allreduce_i32(s->g, data, count), what);
  expect_same(data, want, count * sizeof(int32_t), what);
  free(data);
  free(want);
}

/* allreduce_sum_f32 of count floats, each member contributing x(its parent
 * rank, i): the result must be the sum in the group's rank order. */
static void check_allreduce_f32(const Group *s, size_t count) {
  float *data = alloc(count * sizeof(float));
  float *want = alloc(count * sizeof(float));
  for (size_t i = 0; i < count; i++) {
    float sum = x(s->members[0], i);
    for (int k = 1; k < s->n; k++) sum += x(s->members[k], i);
    want[i] = sum;
    data[i] = x(s->members[s->me], i);
  }
  char what[96];
  snprintf(what, sizeof what, "allreduce_sum_f32 of %zu on %s", count, s->name);
  check(api.allreduce(s->g, data, count), what);
  expect_same(data, want, count * sizeof(float), what);
  free(data);
  free(want);
}

static void check_group(const Group *s, size_t count) {
  run_all(s->g, s->me, s->n, count);
  check_allgatherv(s, 1);
  check_allgatherv(s, 2);
  check_allreduce_i32(s, count);
  check_allreduce_i32(s, 1);
  check_allreduce_i32(s, 0);
}

static Group open_sub(PtoGlooGroup *parent, int rank, const char *tag, const int *members, int n) {
  Group s = {NULL, tag, n, -1, {0, 0, 0, 0}};
  for (int k = 0; k < n; k++) {
    s.members[k] = members[k];
    if (members[k] == rank) s.me = k;
  }
  char what[96];
  snprintf(what, sizeof what, "open_subgroup %s", tag);
  check(api.open_subgroup(parent, tag, members, (size_t)n, &s.g), what);
  return s;
}

/* The pair's thread: collectives on the pair from before the main thread
 * starts opening the group of four (it waits for the first one, an event)
 * until both of the pair's main threads have opened it (each round ends with
 * an allreduce of the "opened" flags, so both ranks stop after the same
 * round): the open runs while the thread's collectives do. */
typedef struct {
  Group *pair;
  atomic_int opened;
  int rounds;
  pthread_mutex_t lock;
  pthread_cond_t started_cv;
  int started; /* guarded by lock */
} PairWork;

static void *pair_thread(void *arg) {
  PairWork *w = arg;
  for (;;) {
    check_allgatherv(w->pair, 3);
    if (w->rounds == 0) {
      pthread_mutex_lock(&w->lock);
      w->started = 1;
      pthread_cond_signal(&w->started_cv);
      pthread_mutex_unlock(&w->lock);
    }
    check_allreduce_i32(w->pair, 100003);
    w->rounds++;
    int32_t both = atomic_load(&w->opened);
    check(api.allreduce_i32(w->pair->g, &both, 1), "allreduce of the opened flags");
    if (both == w->pair->n) return NULL;
  }
}

/* One of two threads that open a subgroup of all four each at once: with the
 * opens' waits on one shared store connection, one rank's thread "a" could
 * hold it waiting for "a" of a rank whose thread "b" holds its own. */
typedef struct {
  PtoGlooGroup *parent;
  int rank;
  const char *tag;
  Group s;
} TwinWork;

static void *open_twin(void *arg) {
  static const int all[4] = {0, 1, 2, 3};
  TwinWork *w = arg;
  w->s = open_sub(w->parent, w->rank, w->tag, all, 4);
  check_allgatherv(&w->s, 4);
  check_allreduce_i32(&w->s, 100003);
  return NULL;
}

static int run_sub(PtoGlooGroup *parent, int rank, int n, size_t count) {
  if (n != 4) die("sub needs 4 ranks");
  static const int evens[2] = {0, 2}, odds[2] = {1, 3}, all[4] = {0, 1, 2, 3};
  /* one rank per host, like leaders; the even and odd pairs open at once */
  Group pair = rank % 2 == 0 ? open_sub(parent, rank, "leaders", evens, 2) : open_sub(parent, rank, "followers", odds, 2);
  PairWork work = {&pair, 0, 0, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
  pthread_t t;
  if (pthread_create(&t, NULL, pair_thread, &work) != 0) die("pthread_create failed");
  pthread_mutex_lock(&work.lock);
  while (!work.started) pthread_cond_wait(&work.started_cv, &work.lock);
  pthread_mutex_unlock(&work.lock);
  Group world = open_sub(parent, rank, "world", all, 4);
  atomic_store(&work.opened, 1);
  if (pthread_join(t, NULL) != 0) die("pthread_join failed");
  fprintf(stderr, "gloo_rank %d: %d round(s) on %s while the group of four opened\n", rank, work.rounds, pair.name);

  char solo_tag[16];
  snprintf(solo_tag, sizeof solo_tag, "solo-%d", rank);
  int me[1] = {rank};
  Group solo = open_sub(parent, rank, solo_tag, me, 1);
  Group top = {parent, "the parent", 4, rank, {0, 1, 2, 3}};

  check_group(&world, count);
  check_group(&pair, count);
  check_group(&solo, count);
  check_group(&top, count);
  api.close(solo.g);
  api.close(pair.g);
  api.close(world.g);

  TwinWork twins[2] = {{parent, rank, "twin-a", {0}}, {parent, rank, "twin-b", {0}}};
  pthread_t tt[2];
  for (int i = 0; i < 2; i++)
    if (pthread_create(&tt[i], NULL, open_twin, &twins[i]) != 0) die("pthread_create failed");
  for (int i = 0; i < 2; i++)
    if (pthread_join(tt[i], NULL) != 0) die("pthread_join failed");
  for (int i = 0; i < 2; i++) api.close(twins[i].s.g);

  /* a group of three (rank 2 stays out): chunks of unequal lengths, one
   * segment more in some than in others (the allreduce moves 1 MiB segments) */
  static const int trio_ranks[3] = {0, 1, 3};
  if (rank != 2) {
    Group trio = open_sub(parent, rank, "trio", trio_ranks, 3);
    check_group(&trio, count);
    check_allreduce_f32(&trio, 3 * 262144 + 2);
    check_allreduce_f32(&trio, 2);
    api.close(trio.g);
  }
  /* nobody closes the parent (rank 0: the store) while another still opens */
  check(api.barrier(parent), "barrier on the parent after closing the subgroups");
  return 0;
}

static int run_sub_disagree(PtoGlooGroup *parent, int rank) {
  static const int all[4] = {0, 1, 2, 3}, other[3] = {0, 1, 3};
  PtoGlooGroup *s = NULL;
  int rc = rank == 3 ? api.open_subgroup(parent, "mixed", other, 3, &s) : api.open_subgroup(parent, "mixed", all, 4, &s);
  fprintf(stderr, "gloo_rank %d: open_subgroup: %d %s\n", rank, rc, rc ? api.last_error() : "");
  if (rc == PTO_OK) api.close(s);
  if (rc != PTO_ERR_RANKS_DISAGREE || s != NULL) return 1;
  check(api.barrier(parent), "barrier on the parent after the failed open");
  return EXIT_FAILED_AS_EXPECTED;
}

static int run_disagree_v(PtoGlooGroup *parent, int rank) {
  static const int all[4] = {0, 1, 2, 3};
  Group s = open_sub(parent, rank, "all", all, 4);
  size_t sizes[4] = {10, 20, 30, rank == 2 ? 41 : 40};
  uint8_t in[40] = {0}, out[101];
  int got = api.allgatherv(s.g, in, out, sizes);
  fprintf(stderr, "gloo_rank %d: allgatherv: %d %s\n", rank, got, got ? api.last_error() : "");
  api.close(s.g);
  return got == PTO_ERR_RANKS_DISAGREE ? EXIT_FAILED_AS_EXPECTED : 1;
}

/* fault / partition: the allreduce must fail, within the timeout. */
/* named: what the message must name (NULL: anything) */
static int expect_failure(PtoGlooGroup *g, int rank, size_t count, uint32_t timeout_ms, const char *named) {
  float *data = alloc(count * sizeof(float));
  for (size_t i = 0; i < count; i++) data[i] = x(rank, i);
  double t0 = now_s();
  int rc = api.allreduce(g, data, count);
  double took = now_s() - t0;
  free(data);
  if (rc == PTO_OK) {
    fprintf(stderr, "gloo_rank %d: allreduce succeeded without a peer\n", rank);
    return 1;
  }
  fprintf(stderr, "gloo_rank %d: allreduce failed (%d) after %.3f s: %s\n", rank, rc, took, api.last_error());
  if (rc != PTO_ERR_DEVICE && rc != PTO_ERR_TIMEOUT) return 1;
  if (named != NULL && strstr(api.last_error(), named) == NULL) {
    fprintf(stderr, "gloo_rank %d: the failure does not name %s\n", rank, named);
    return 1;
  }
  if (took > timeout_ms / 1000.0 + 2.0) return EXIT_FAILED_LATE;
  return EXIT_FAILED_AS_EXPECTED;
}

/* open-timeout / open-disagree: the open must fail with `want`, in time,
 * and name what it should. */
static int expect_open_failure(const char *rootinfo, int rank, int n, const char *bind_addr, uint32_t timeout_ms,
                               int want, const char *named) {
  PtoGlooGroup *g = NULL;
  double t0 = now_s();
  int rc = api.open(rootinfo, rank, n, bind_addr, timeout_ms, &g);
  double took = now_s() - t0;
  if (rc == PTO_OK) {
    fprintf(stderr, "gloo_rank %d: open succeeded\n", rank);
    api.close(g);
    return 1;
  }
  fprintf(stderr, "gloo_rank %d: open failed (%d) after %.3f s: %s\n", rank, rc, took, api.last_error());
  if (rc != want || g != NULL || strstr(api.last_error(), named) == NULL) return 1;
  if (took > timeout_ms / 1000.0 + 2.0) return EXIT_FAILED_LATE;
  return EXIT_FAILED_AS_EXPECTED;
}

/* Events, not polling: the script holds "ready" open for reading (so this
   open never blocks; a line of fewer than PIPE_BUF bytes is written whole), and
   an open of "go" for reading blocks until the script opens it for writing. */
static void wait_go(int rank) {
  const char *dir = getenv("GLOO_RANK_SYNC_DIR");
  if (!dir) die("partition needs GLOO_RANK_SYNC_DIR");
  char path[4096], line[32];
  snprintf(path, sizeof path, "%s/ready", dir);
  int fd = open(path, O_WRONLY);
  if (fd < 0) die("cannot open %s: %s", path, strerror(errno));
  int len = snprintf(line, sizeof line, "%d\n", rank);
  if (write(fd, line, (size_t)len) != len) die("cannot write %s: %s", path, strerror(errno));
  close(fd);
  snprintf(path, sizeof path, "%s/go", dir);
  fd = open(path, O_RDONLY);
  if (fd < 0) die("cannot open %s: %s", path, strerror(errno));
  close(fd);
}

static void bench(PtoGlooGroup *g, int rank, size_t count) {
  const char *it = getenv("GLOO_RANK_ITERS");
  int iters = it ? atoi(it) : 3;
  if (iters < 1) iters = 1;
  float *data = alloc(count * sizeof(float));
  for (size_t i = 0; i < count; i++) data[i] = x(rank, i);
  check(api.allreduce(g, data, count), "warm-up allreduce");
  check(api.barrier(g), "barrier");
  double t0 = now_s();
  for (int k = 0; k < iters; k++) check(api.allreduce(g, data, count), "allreduce");
  check(api.barrier(g), "barrier");
  double took = (now_s() - t0) / iters;
  if (rank == 0) printf("allreduce_seconds %.6f\n", took);
  free(data);
}

int main(int argc, char **argv) {
  if (argc < 6 || argc > 7) {
    fprintf(stderr, "usage: gloo_rank <rootinfo> <rank> <nranks> <bind_addr> <count> [fault|partition|bench]\n");
    return 1;
  }
  const char *rootinfo = argv[1];
  int rank = atoi(argv[2]);
  int n = atoi(argv[3]);
  const char *bind_addr = argv[4];
  size_t count = strtoull(argv[5], NULL, 10);
  const char *mode = argc == 7 ? argv[6] : "";
  g_rank = rank;
  const char *t = getenv("GLOO_RANK_TIMEOUT_MS");
  uint32_t timeout_ms = t ? (uint32_t)strtoul(t, NULL, 10) : 30000;
  load();

  if (strcmp(mode, "open-timeout") == 0) {
    if (rank == 0) return EXIT_FAILED_AS_EXPECTED;
    const char *store = strstr(rootinfo, "store=");
    char where[64] = "";
    if (store) snprintf(where, sizeof where, "%.*s", (int)strcspn(store + 6, ";"), store + 6);
    return expect_open_failure(rootinfo, rank, n, bind_addr, timeout_ms, PTO_ERR_TIMEOUT, where);
  }
  if (strcmp(mode, "open-disagree") == 0) {
    if (rank == 0)
      return expect_open_failure(rootinfo, rank, n, bind_addr, timeout_ms, PTO_ERR_TIMEOUT, "rank 1 did not arrive");
    char other[512];
    snprintf(other, sizeof other, "%s", rootinfo);
    size_t len = strlen(other);
    other[len - 1] = other[len - 1] == '0' ? '1' : '0';
    return expect_open_failure(other, rank, n, bind_addr, timeout_ms, PTO_ERR_RANKS_DISAGREE, "another group");
  }

  PtoGlooGroup *g = NULL;
  check(api.open(rootinfo, rank, n, bind_addr, timeout_ms, &g), "open");
  int rc = 0;
  if (strcmp(mode, "fault") == 0) {
    if (rank == n - 1) raise(SIGKILL);
    /* the dead rank, named by the store: not a survivor that failed and closed first */
    rc = expect_failure(g, rank, count, timeout_ms, "lost peer rank 3 ");
  } else if (strcmp(mode, "partition") == 0) {
    wait_go(rank);
    rc = expect_failure(g, rank, count, timeout_ms, NULL);
  } else if (strcmp(mode, "disagree") == 0) {
    size_t mine = rank == n - 1 ? count + 1 : count;
    float *data = alloc(mine * sizeof(float));
    for (size_t i = 0; i < mine; i++) data[i] = x(rank, i);
    int got = api.allreduce(g, data, mine);
    fprintf(stderr, "gloo_rank %d: allreduce of %zu floats: %d %s\n", rank, mine, got, got ? api.last_error() : "");
    rc = got == PTO_ERR_RANKS_DISAGREE ? EXIT_FAILED_AS_EXPECTED : 1;
    free(data);
  } else if (strcmp(mode, "sub") == 0) {
    rc = run_sub(g, rank, n, count);
  } else if (strcmp(mode, "disagree-v") == 0) {
    rc = run_disagree_v(g, rank);
  } else if (strcmp(mode, "sub-disagree") == 0) {
    rc = run_sub_disagree(g, rank);
  } else if (strcmp(mode, "sub-fault") == 0) {
    static const int trio[3] = {0, 2, 3};
    if (rank != 1) {
      Group s = open_sub(g, rank, "trio", trio, 3);
      if (rank == 3) raise(SIGKILL);
      /* rank 3 is the subgroup's rank 2: the message must use the parent's numbering */
      rc = expect_failure(s.g, rank, count, timeout_ms, "lost peer rank 3 ");
      api.close(s.g);
    }
  } else if (strcmp(mode, "bench") == 0) {
    bench(g, rank, count);
  } else if (mode[0] == '\0') {
    run_all(g, rank, n, count);
  } else {
    die("unknown mode '%s'", mode);
  }
  api.close(g);
  return rc;
}

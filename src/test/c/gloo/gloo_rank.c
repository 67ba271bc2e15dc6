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
 * and rank 0's open must time out, nobody having joined: exit 10.
 * disagree: rank nranks-1 calls the allreduce with count+1 floats: every
 * rank's call must fail with PTO_ERR_RANKS_DISAGREE (not abort, not hang):
 * exit 10.
 * bench: one warm-up allreduce of count floats, then GLOO_RANK_ITERS (3) timed
 * ones between barriers; rank 0 prints "allreduce_seconds <mean>" on stdout.
 *
 * GLOO_RANK_TIMEOUT_MS: the group's timeout (default 30000).
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
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
    if (rank == 0) return expect_open_failure(rootinfo, rank, n, bind_addr, timeout_ms, PTO_ERR_TIMEOUT, "never joined");
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

#include "dep_graph.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "orch/subgraph.h"
#include "util/last_error.h"

int dep_graph_path(char *out, size_t size, const char *output_prefix, const NativeRunDescriptor *desc)
{
    int n = snprintf(out, size, "%s/dep_graph_%" PRIu64 "_%" PRIu64 ".dot", output_prefix, desc->run_id,
                     desc->run_epoch);
    if (n < 0 || (size_t)n >= size)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "dep graph: the path under output_prefix '%s' is too long",
                        output_prefix);
    return PTO_OK;
}

int diagnostic_make_directories(const char *dir, const char *what)
{
    char path[PTO_OUTPUT_PREFIX_BYTES];
    size_t len = strlen(dir);
    if (len == 0 || len >= sizeof path)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "%s: output_prefix is empty or too long", what);
    memcpy(path, dir, len + 1);
    for (size_t i = 1; i <= len; i++) {
        if (path[i] != '/' && path[i] != '\0')
            continue;
        char keep = path[i];
        path[i] = '\0';
        if (mkdir(path, 0777) != 0 && errno != EEXIST)
            return pto_fail(PTO_ERR_FAILED, "%s: cannot create directory '%s': %s", what, path, strerror(errno));
        path[i] = keep;
    }
    return PTO_OK;
}

static int by_value(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Edges as (consumer << 32 | producer), sorted: the file's order. */
static int sorted_edges(uint32_t task_count, const uint32_t *producer, const uint32_t *consumer, uint32_t count,
                        uint64_t **out)
{
    *out = NULL;
    if (count == 0)
        return PTO_OK;
    uint64_t *keys = malloc((size_t)count * sizeof *keys);
    if (keys == NULL)
        return pto_fail(PTO_ERR_OUT_OF_MEMORY, "dep graph: out of host memory for %u edges", count);
    for (uint32_t i = 0; i < count; i++) {
        if (producer[i] >= consumer[i] || consumer[i] >= task_count) {
            free(keys);
            return pto_fail(PTO_ERR_INVALID_ARGUMENT, "dep graph: edge %u (t%u -> t%u) is not a forward edge of %u tasks",
                            i, producer[i], consumer[i], task_count);
        }
        keys[i] = (uint64_t)consumer[i] << 32 | producer[i];
    }
    qsort(keys, count, sizeof *keys, by_value);
    *out = keys;
    return PTO_OK;
}

static int write_dot(FILE *f, uint32_t task_count, const uint32_t *func_ids, const uint64_t *edges, uint32_t count)
{
    fputs("digraph ptorun_run {\n", f);
    for (uint32_t t = 0; t < task_count; t++) {
        if (func_ids[t] == SUBGRAPH_BOUNDARY_FUNC) /* a sub-graph invocation's entry or exit */
            fprintf(f, "  t%u [label=\"%u subgraph\"];\n", t, t);
        else
            fprintf(f, "  t%u [label=\"%u f%u\"];\n", t, t, func_ids[t]);
    }
    for (uint32_t i = 0; i < count; i++) {
        if (i > 0 && edges[i] == edges[i - 1])
            continue;
        fprintf(f, "  t%u -> t%u;\n", (uint32_t)edges[i], (uint32_t)(edges[i] >> 32));
    }
    fputs("}\n", f);
    return ferror(f) ? -1 : 0;
}

typedef struct DotFile {
    uint32_t task_count;
    const uint32_t *func_ids;
    const uint64_t *edges;
    uint32_t edge_count;
} DotFile;

static int write_dot_file(FILE *f, const void *ctx)
{
    const DotFile *d = ctx;
    return write_dot(f, d->task_count, d->func_ids, d->edges, d->edge_count);
}

int diagnostic_write_file(const char *path, const char *what, int (*write)(FILE *f, const void *ctx),
                          const void *ctx)
{
    char tmp[PTO_OUTPUT_PREFIX_BYTES + 96];
    if (snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid()) >= (int)sizeof tmp)
        return pto_fail(PTO_ERR_FAILED, "%s: the path '%s' is too long", what, path);
    FILE *f = fopen(tmp, "w");
    if (f == NULL)
        return pto_fail(PTO_ERR_FAILED, "%s: cannot create '%s': %s", what, tmp, strerror(errno));
    int werr = write(f, ctx);
    if (fclose(f) != 0 || werr != 0) {
        int rc = pto_fail(PTO_ERR_FAILED, "%s: writing '%s' failed: %s", what, tmp, strerror(errno));
        unlink(tmp);
        return rc;
    }
    if (rename(tmp, path) != 0) {
        int rc = pto_fail(PTO_ERR_FAILED, "%s: cannot rename '%s' to '%s': %s", what, tmp, path, strerror(errno));
        unlink(tmp);
        return rc;
    }
    return PTO_OK;
}

void diagnostic_record(NativeRunReport *report, const char *path)
{
    if (report == NULL || report->output_file_count >= PTO_RUN_REPORT_MAX_FILES)
        return;
    size_t n = strlen(path);
    if (n >= sizeof report->output_files[0])
        return;
    memcpy(report->output_files[report->output_file_count], path, n + 1);
    report->output_file_count++;
}

int dep_graph_write(const char *output_prefix, const NativeRunDescriptor *desc, uint32_t task_count,
                    const uint32_t *func_ids, const uint32_t *edge_producer, const uint32_t *edge_consumer,
                    uint32_t edge_count, NativeRunReport *report)
{
    if (output_prefix == NULL || desc == NULL || (task_count > 0 && func_ids == NULL) ||
        (edge_count > 0 && (edge_producer == NULL || edge_consumer == NULL)))
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "dep graph: NULL output_prefix, descriptor, func_ids or edges");
    char path[PTO_RUN_REPORT_PATH_BYTES];
    int rc;
    if ((rc = dep_graph_path(path, sizeof path, output_prefix, desc)) != PTO_OK ||
        (rc = diagnostic_make_directories(output_prefix, "dep graph")) != PTO_OK)
        return rc;
    uint64_t *edges;
    if ((rc = sorted_edges(task_count, edge_producer, edge_consumer, edge_count, &edges)) != PTO_OK)
        return rc;
    DotFile dot = { task_count, func_ids, edges, edge_count };
    rc = diagnostic_write_file(path, "dep graph", write_dot_file, &dot);
    free(edges);
    if (rc == PTO_OK)
        diagnostic_record(report, path);
    return rc;
}

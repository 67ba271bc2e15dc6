/*
 * The dependency-graph diagnostic (CallConfig.enable_dep_graph): a run's task
 * graph as a DOT file, written at finalize of a successful run to
 * <output_prefix>/dep_graph_<run_id>_<run_epoch>.dot by both runtimes, so the
 * same graph gives byte-identical files on hbg and trb:
 *
 *   digraph ptorun_run {
 *     t0 [label="0 f<func_id>"];        one line per task, in id order
 *     t0 -> t3;                         one line per edge, sorted by (consumer, producer)
 *   }
 *
 * Two-space indent, '\n' line ends. Task ids are submission order.
 */
#ifndef PTORUN_DEP_GRAPH_H
#define PTORUN_DEP_GRAPH_H

#include <stdio.h>
#include <stdint.h>

#include "ptorun/pto_runtime_c_api.h"

/* Writes the file (creating output_prefix and its parents when missing, via a
 * temporary file renamed into place) and records its path in `report` (NULL:
 * nowhere; diagnostic_record). Edges come in any order, duplicates allowed
 * (written once); every id must be < task_count. PTO_OK, or
 * PTO_ERR_INVALID_ARGUMENT (bad arguments, an edge naming no task, a producer
 * not before its consumer) / PTO_ERR_FAILED (file system) / PTO_ERR_OUT_OF_MEMORY,
 * with a message naming the path. */
int dep_graph_write(const char *output_prefix, const NativeRunDescriptor *desc, uint32_t task_count,
                    const uint32_t *func_ids, const uint32_t *edge_producer, const uint32_t *edge_consumer,
                    uint32_t edge_count, NativeRunReport *report);

/* The file's path for a run: "<output_prefix>/dep_graph_<run_id>_<run_epoch>.dot".
 * PTO_OK, or PTO_ERR_INVALID_ARGUMENT when it does not fit `size` bytes. */
int dep_graph_path(char *out, size_t size, const char *output_prefix, const NativeRunDescriptor *desc);

/* mkdir -p for a diagnostic file's directory (the dependency graph, the trace);
 * `what` starts the error message. PTO_OK, or PTO_ERR_INVALID_ARGUMENT /
 * PTO_ERR_FAILED. */
int diagnostic_make_directories(const char *dir, const char *what);

/* Appends the path of a diagnostic file the run wrote to its report's
 * output_files (report NULL: no-op). The writers build their paths in
 * PTO_RUN_REPORT_PATH_BYTES, so every one fits; a third file is not recorded. */
void diagnostic_record(NativeRunReport *report, const char *path);

/* Writes a diagnostic file atomically: `write(f, ctx)` fills a temporary file next
 * to `path` (non-zero: failed), which is then renamed to `path`; nothing is left
 * behind on failure. `what` starts the error message. PTO_OK or PTO_ERR_FAILED. */
int diagnostic_write_file(const char *path, const char *what, int (*write)(FILE *f, const void *ctx),
                          const void *ctx);

#endif

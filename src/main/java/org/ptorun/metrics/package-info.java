/**
 * Micrometer metrics of a {@link org.ptorun.worker.Worker}: {@link org.ptorun.metrics.WorkerMetrics}.
 * The only package that references Micrometer, an optional dependency: a program that
 * does not use it needs no Micrometer on its class path. The meters: docs/operations.md.
 */
package org.ptorun.metrics;

/*
 * A trb run that walks its program's recorded graph (PTO_TRB_WALK,
 * docs/recorded-graphs.md, trb): the host compiled the recording into a
 * relocatable graph image once, and such a run orchestrates nothing — it
 * writes its base table (the argument tensors' addresses and scalars, the
 * locals' block at the GM heap's start), checks and binds the image, and the
 * participations schedule the graph as hbg's executor does (graph_run.h):
 * no program, no tensor map, no rings.
 */
#ifndef PTORUN_TRB_WALK_H
#define PTORUN_TRB_WALK_H

#include "device/aicpu/trb_run.h"

/* In place of the orchestration (the orchestrator's own state, unlocked):
   binds the run's graph and fills the dependency graph being collected. 0, or
   the run's error with its message set: PTO_ERR_DEVICE for an image that does
   not check, PTO_ERR_CAPACITY for a graph the dependency-graph buffer cannot
   hold. */
int trb_walk_bind(TrbRun *t);

#endif

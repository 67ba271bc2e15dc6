/*
 * The work kinds of the AICPU image (PtoDeviceWorkKind). The entry calls
 * *_start once per run (a new argument block) and *_participate for every
 * participation, both with aicpu_device.lock held; *_participate returns
 * PTO_AICPU_IDLE or PTO_AICPU_DONE with the lock held.
 */
#ifndef PTORUN_AICPU_WORK_H
#define PTORUN_AICPU_WORK_H

#include <stdint.h>

#include "device/aicpu/aicpu_device.h"

/* PTO_DEVICE_WORK_GRAPH (hbg): a prebuilt task graph (graph_executor.c). */
void graph_start(AicpuDevice *d, PtoAicpuArgs *args);
int32_t graph_participate(AicpuDevice *d, uint32_t thread_count, const PtoAicpuHooks *hooks);

/* PTO_DEVICE_WORK_TRB: orchestration on the device over rings (trb_executor.c). */
void trb_start(AicpuDevice *d, PtoAicpuArgs *args);
int32_t trb_participate(AicpuDevice *d, uint32_t thread_count, const PtoAicpuHooks *hooks);

#endif

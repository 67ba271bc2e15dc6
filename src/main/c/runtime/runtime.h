/* The runtime half of a library (hbg or trb). Exactly one implementation is
 * linked into each library; common/ reaches it only through these functions. */
#ifndef PTORUN_RUNTIME_H
#define PTORUN_RUNTIME_H

#include "ptorun/pto_runtime_c_api.h"

/* This variant's pipeline contract (design/device-model.md): static, immutable. */
const PipelineContract *runtime_pipeline_contract(void);

#endif

/* trb contract. a2a3: two slots sharing one device-resident runtime image on
 * bank 0 (DEVICE_SCRATCH), each with its own task-argument staging and streams;
 * a successor is prepared while its predecessor executes when its ring sizing
 * fits the image bound.
 * a5: a single slot and no declared resources. */
#include "arch/arch.h"
#include "runtime/runtime.h"

#ifdef PTO_ARCH_A2A3
static const PipelineContract trb_contract = {
    .abi_version = PTO_PIPELINE_CONTRACT_ABI_VERSION,
    .resource_count = 6,
    .pipeline_depth = 2,
    .resources = {
        { PTO_PIPELINE_TASK_ARGS, PTO_PIPELINE_HOST_PER_RUN, 0 },
        { PTO_PIPELINE_GM_HEAP, PTO_PIPELINE_DEVICE_SCRATCH, 0 },
        { PTO_PIPELINE_GM_SM, PTO_PIPELINE_DEVICE_SCRATCH, 0 },
        { PTO_PIPELINE_RUNTIME_IMAGE, PTO_PIPELINE_DEVICE_SCRATCH, 0 },
        { PTO_PIPELINE_AICPU_STREAM, PTO_PIPELINE_EXEC_HANDLE, 0 },
        { PTO_PIPELINE_AICORE_STREAM, PTO_PIPELINE_EXEC_HANDLE, 0 },
    },
};
#else
static const PipelineContract trb_contract = {
    .abi_version = PTO_PIPELINE_CONTRACT_ABI_VERSION,
    .resource_count = 0,
    .pipeline_depth = 1,
};
#endif

const PipelineContract *runtime_pipeline_contract(void)
{
    return &trb_contract;
}

/* Every run shares bank 0's device-resident image, which the device writes while
 * a run executes; a successor whose ring sizing matches the image bound (the
 * prebuilt cache's) rewrites none of it, so it may be prepared meanwhile — one
 * that would rebuild it is refused with PTO_ERR_OVERLAP_NOT_NOW (trb_runtime.c).
 * Depth 1 (a5) has no second slot to prepare in. */
int runtime_supports_overlap(void)
{
    return trb_contract.pipeline_depth > 1;
}

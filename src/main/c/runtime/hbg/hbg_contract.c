/* hbg contract, both arches: every slot has its own bank (GM heap, GM shared
 * memory, runtime image carry the run's own content) and its own streams. */
#include "runtime/runtime.h"

static const PipelineContract hbg_contract = {
    .abi_version = PTO_PIPELINE_CONTRACT_ABI_VERSION,
    .resource_count = 5,
    .pipeline_depth = 2,
    .resources = {
        { PTO_PIPELINE_GM_HEAP, PTO_PIPELINE_HOST_PER_RUN, 0 },
        { PTO_PIPELINE_GM_SM, PTO_PIPELINE_HOST_PER_RUN, 0 },
        { PTO_PIPELINE_RUNTIME_IMAGE, PTO_PIPELINE_HOST_PER_RUN, 0 },
        { PTO_PIPELINE_AICPU_STREAM, PTO_PIPELINE_EXEC_HANDLE, 0 },
        { PTO_PIPELINE_AICORE_STREAM, PTO_PIPELINE_EXEC_HANDLE, 0 },
    },
};

const PipelineContract *runtime_pipeline_contract(void)
{
    return &hbg_contract;
}

/* Everything a bind writes is its own slot's scratch and its own bank's. */
int runtime_supports_overlap(void)
{
    return 1;
}

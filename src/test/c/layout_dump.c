/* Prints every contract struct's size and field offsets as the C compiler sees
 * them, as name=value lines; the Java layout test compares them with
 * org.ptorun.internal.Layouts. */
#include <stdalign.h>
#include <stdio.h>

#include "ptorun/pto_runtime_c_api.h"

#define SIZE(t) printf("%s.sizeof=%zu\n%s.alignof=%zu\n", #t, sizeof(t), #t, alignof(t))
#define OFF(t, f) printf("%s.%s=%zu\n", #t, #f, offsetof(t, f))
/* error codes are signed: printed under "error.", compared with org.ptorun.PtoError */
#define CODE(c) printf("error.%s=%d\n", #c, (c))

int main(void)
{
    SIZE(NativeRunDescriptor);
    OFF(NativeRunDescriptor, pipeline_slot);
    OFF(NativeRunDescriptor, arena_bank);
    OFF(NativeRunDescriptor, run_id);
    OFF(NativeRunDescriptor, generation);
    OFF(NativeRunDescriptor, dispatch_id);
    OFF(NativeRunDescriptor, run_epoch);
    OFF(NativeRunDescriptor, accepted_state);
    OFF(NativeRunDescriptor, accepted_value);
    SIZE(PipelineResource);
    OFF(PipelineResource, kind);
    OFF(PipelineResource, resource_class);
    OFF(PipelineResource, bytes_per_copy);
    SIZE(PipelineContract);
    OFF(PipelineContract, abi_version);
    OFF(PipelineContract, resource_count);
    OFF(PipelineContract, pipeline_depth);
    OFF(PipelineContract, resources);
    SIZE(PipelineSlotLease);
    OFF(PipelineSlotLease, slot_id);
    OFF(PipelineSlotLease, reserved);
    OFF(PipelineSlotLease, generation);
    SIZE(CallConfig);
    OFF(CallConfig, aicpu_thread_num);
    OFF(CallConfig, block_dim);
    OFF(CallConfig, enable_trace);
    OFF(CallConfig, enable_dump_args);
    OFF(CallConfig, enable_dep_graph);
    OFF(CallConfig, timeout_ms);
    OFF(CallConfig, ring_task_window);
    OFF(CallConfig, ring_heap);
    OFF(CallConfig, ring_dep_pool);
    OFF(CallConfig, output_prefix);
    SIZE(ChipTensor);
    OFF(ChipTensor, addr);
    OFF(ChipTensor, size);
    OFF(ChipTensor, owner_task_id);
    OFF(ChipTensor, start_offset);
    OFF(ChipTensor, version);
    OFF(ChipTensor, ndims);
    OFF(ChipTensor, dtype);
    OFF(ChipTensor, manual_dep);
    OFF(ChipTensor, is_contiguous);
    OFF(ChipTensor, child_memory);
    OFF(ChipTensor, shapes);
    OFF(ChipTensor, strides);
    SIZE(ChipStorageTaskArgs);
    OFF(ChipStorageTaskArgs, tensors);
    OFF(ChipStorageTaskArgs, scalars);
    OFF(ChipStorageTaskArgs, tensor_count);
    OFF(ChipStorageTaskArgs, scalar_count);
    printf("CallConfig.ring_count=%d\n", PTO_TRB_RING_COUNT);
    printf("CallConfig.output_prefix_bytes=%d\n", PTO_OUTPUT_PREFIX_BYTES);
    printf("ChipTensor.max_dims=%d\n", PTO_MAX_TENSOR_DIMS);
    printf("ChipStorageTaskArgs.max_tensors=%d\n", PTO_MAX_TENSOR_ARGS);
    printf("ChipStorageTaskArgs.max_scalars=%d\n", PTO_MAX_SCALAR_ARGS);
    printf("PTO_NATIVE_RUN_STORAGE_MAGIC=%llu\n", (unsigned long long)PTO_NATIVE_RUN_STORAGE_MAGIC);
    CODE(PTO_OK);
    CODE(PTO_ERR_FAILED);
    CODE(PTO_RUNTIME_ERR_UNSUPPORTED);
    CODE(PTO_ERR_INVALID_ARGUMENT);
    CODE(PTO_ERR_BAD_STORAGE);
    CODE(PTO_ERR_WRONG_PHASE);
    CODE(PTO_ERR_BUSY);
    CODE(PTO_ERR_NOT_REGISTERED);
    CODE(PTO_ERR_OUT_OF_MEMORY);
    CODE(PTO_ERR_DEVICE);
    CODE(PTO_ERR_KERNEL_FAULT);
    CODE(PTO_ERR_TIMEOUT);
    CODE(PTO_ERR_BAD_CALLABLE);
    CODE(PTO_ERR_CAPACITY);
    CODE(PTO_ERR_ORCHESTRATION);
    CODE(PTO_ERR_POISONED);
    return 0;
}

/* Prints every contract struct's size and field offsets as the C compiler sees
 * them, as name=value lines; the Java layout test compares them with
 * org.ptorun.internal.Layouts. */
#include <stdalign.h>
#include <stdio.h>

#include "ptorun/chip_callable.h"
#include "ptorun/pto_comm.h"
#include "ptorun/pto_runtime_c_api.h"

#define SIZE(t) printf("%s.sizeof=%zu\n%s.alignof=%zu\n", #t, sizeof(t), #t, alignof(t))
#define OFF(t, f) printf("%s.%s=%zu\n", #t, #f, offsetof(t, f))
/* the callable format: compared with org.ptorun.internal.CallableLayouts */
#define CSIZE(t) printf("callable.%s.sizeof=%zu\n", #t, sizeof(t))
#define COFF(t, f) printf("callable.%s.%s=%zu\n", #t, #f, offsetof(t, f))
#define CCONST(c) printf("callable.%s=%lld\n", #c, (long long)(c))
/* error codes are signed: printed under "error.", compared with org.ptorun.PtoError */
#define CODE(c) printf("error.%s=%d\n", #c, (c))

static void dump_callable_format(void)
{
    CCONST(PTO_CALLABLE_MAGIC);
    CCONST(PTO_CALLABLE_FORMAT_VERSION);
    CCONST(PTO_CALLABLE_MAX_BYTES);
    CCONST(PTO_CALLABLE_MAX_CHILDREN);
    CCONST(PTO_CALLABLE_MAX_SIGNATURE);
    CCONST(PTO_CALLABLE_MAX_NAME);
    CCONST(PTO_CALLABLE_MAX_FUNC_ID);
    CCONST(PTO_PROGRAM_MAGIC);
    CCONST(PTO_PROGRAM_MAX_LOOP_DEPTH);
    CCONST(PTO_PROGRAM_MAX_SCOPE_DEPTH);
    CCONST(PTO_PROGRAM_MAX_LOCALS);
    CCONST(PTO_PROGRAM_MAX_INSNS);
    CCONST(PTO_MAX_TASK_PARAMS);
    CCONST(PTO_OP_SUBMIT);
    CCONST(PTO_OP_ALLOC_TENSOR);
    CCONST(PTO_OP_LOOP);
    CCONST(PTO_OP_END_LOOP);
    CCONST(PTO_OP_SCOPE_BEGIN);
    CCONST(PTO_OP_SCOPE_END);
    CCONST(PTO_OP_SCOPE_BEGIN_MANUAL);
    CCONST(PTO_PROGRAM_MAX_AFTER);
    CCONST(PTO_OP_SUBGRAPH);
    CCONST(PTO_OP_INVOKE);
    CCONST(PTO_PROGRAM_MAX_SUBGRAPHS);
    CCONST(PTO_SUBGRAPH_LOCAL_ALIGN);
    CCONST(PTO_PARAM_ARG_TENSOR);
    CCONST(PTO_PARAM_LOCAL_TENSOR);
    CCONST(PTO_PARAM_SCALAR_IMM);
    CCONST(PTO_PARAM_SCALAR_ARG);
    CCONST(PTO_PARAM_SCALAR_AFFINE);
    CCONST(PTO_KERNEL_BUILTIN);
    CCONST(PTO_KERNEL_LIBRARY);
    CCONST(PTO_ORCH_PROGRAM);
    CCONST(PTO_ORCH_LIBRARY);
    CCONST(PTO_AFFINE_HAS_LO);
    CCONST(PTO_AFFINE_HAS_HI);
    CCONST(PTO_VIEW_DIM_SELECTED);
    CCONST(PTO_VIEW_MAX_DIMS);
    CSIZE(PtoBlobRef);
    COFF(PtoBlobRef, offset);
    COFF(PtoBlobRef, size);
    CSIZE(ChipCallableHeader);
    COFF(ChipCallableHeader, magic);
    COFF(ChipCallableHeader, format_version);
    COFF(ChipCallableHeader, orchestration_kind);
    COFF(ChipCallableHeader, total_size);
    COFF(ChipCallableHeader, child_count);
    COFF(ChipCallableHeader, signature_length);
    COFF(ChipCallableHeader, reserved);
    COFF(ChipCallableHeader, signature);
    COFF(ChipCallableHeader, children);
    COFF(ChipCallableHeader, orchestration);
    COFF(ChipCallableHeader, orchestration_entry);
    CSIZE(ChipCallableChild);
    COFF(ChipCallableChild, func_id);
    COFF(ChipCallableChild, core_type);
    COFF(ChipCallableChild, source_kind);
    COFF(ChipCallableChild, reserved);
    COFF(ChipCallableChild, name);
    COFF(ChipCallableChild, image);
    COFF(ChipCallableChild, resolved_addr);
    CSIZE(PtoProgramHeader);
    COFF(PtoProgramHeader, magic);
    COFF(PtoProgramHeader, instruction_count);
    COFF(PtoProgramHeader, local_count);
    COFF(PtoProgramHeader, reserved);
    CSIZE(PtoInsnHead);
    COFF(PtoInsnHead, opcode);
    COFF(PtoInsnHead, param_count);
    COFF(PtoInsnHead, size_bytes);
    CSIZE(PtoSubmitInsn);
    COFF(PtoSubmitInsn, head);
    COFF(PtoSubmitInsn, func_id);
    COFF(PtoSubmitInsn, after_count);
    COFF(PtoSubmitInsn, reserved);
    CSIZE(PtoSubgraphInsn);
    COFF(PtoSubgraphInsn, head);
    COFF(PtoSubgraphInsn, subgraph_id);
    COFF(PtoSubgraphInsn, boundary_count);
    COFF(PtoSubgraphInsn, reserved);
    CSIZE(PtoInvokeInsn);
    COFF(PtoInvokeInsn, head);
    COFF(PtoInvokeInsn, subgraph_id);
    COFF(PtoInvokeInsn, reserved);
    CSIZE(PtoAllocInsn);
    COFF(PtoAllocInsn, head);
    COFF(PtoAllocInsn, local_id);
    COFF(PtoAllocInsn, reserved);
    COFF(PtoAllocInsn, bytes);
    CSIZE(PtoLoopInsn);
    COFF(PtoLoopInsn, head);
    COFF(PtoLoopInsn, count);
    CSIZE(PtoAffine);
    COFF(PtoAffine, base);
    COFF(PtoAffine, coef);
    COFF(PtoAffine, lo);
    COFF(PtoAffine, hi);
    COFF(PtoAffine, clamp);
    COFF(PtoAffine, reserved);
    CSIZE(PtoViewDim);
    COFF(PtoViewDim, stride);
    COFF(PtoViewDim, bound);
    COFF(PtoViewDim, offset);
    COFF(PtoViewDim, extent);
    COFF(PtoViewDim, flags);
    COFF(PtoViewDim, reserved);
    CSIZE(PtoProgramParam);
    COFF(PtoProgramParam, kind);
    COFF(PtoProgramParam, direction);
    COFF(PtoProgramParam, dtype);
    COFF(PtoProgramParam, ndims);
    COFF(PtoProgramParam, index);
    COFF(PtoProgramParam, imm);
    COFF(PtoProgramParam, offset);
    COFF(PtoProgramParam, size);
    COFF(PtoProgramParam, dims);
}

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
    SIZE(PtoCommDeviceContext);
    OFF(PtoCommDeviceContext, magic);
    OFF(PtoCommDeviceContext, rank);
    OFF(PtoCommDeviceContext, nranks);
    OFF(PtoCommDeviceContext, timeout_ms);
    OFF(PtoCommDeviceContext, window_size);
    OFF(PtoCommDeviceContext, windows);
    OFF(PtoCommDeviceContext, signals);
    OFF(PtoCommDeviceContext, span);
    SIZE(NativeRunReport);
    OFF(NativeRunReport, execution_end_ns);
    OFF(NativeRunReport, peak_device_memory);
    OFF(NativeRunReport, output_file_count);
    OFF(NativeRunReport, graph_source);
    OFF(NativeRunReport, output_files);
    OFF(NativeRunReport, orchestration_ns);
    OFF(NativeRunReport, launched_ctx);
    OFF(NativeRunReport, device_ended);
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
    printf("NativeRunReport.max_files=%d\n", PTO_RUN_REPORT_MAX_FILES);
    printf("NativeRunReport.path_bytes=%d\n", PTO_RUN_REPORT_PATH_BYTES);
    printf("PTO_NATIVE_RUN_STORAGE_MAGIC=%llu\n", (unsigned long long)PTO_NATIVE_RUN_STORAGE_MAGIC);
    printf("PTO_NATIVE_RUN_REPORT_OFFSET=%d\n", PTO_NATIVE_RUN_REPORT_OFFSET);
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
    CODE(PTO_ERR_RANKS_DISAGREE);
    CODE(PTO_ERR_OVERLAP_NOT_NOW);
    CODE(PTO_ERR_CHIP_CRASHED);
    dump_callable_format();
    return 0;
}

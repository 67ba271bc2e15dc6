package org.ptorun.internal;

import java.util.List;

/**
 * The exported contract of one host-runtime library (include/ptorun/pto_runtime_c_api.h),
 * with primitive signatures only: {@code long} for pointers, sizes and u64, {@code int}
 * for codes, ids and u32. Each method calls the C function named in its comment. One
 * implementation per loaded variant, bound by JNA direct mapping ({@link LibraryLoader}).
 */
public interface NativeApi {

    /** Every symbol the contract requires, in header order. */
    List<String> SYMBOLS = List.of(
            "ptorun_variant", "simpler_last_error", "create_device_context",
            "destroy_device_context", "simpler_init", "finalize_device",
            "get_runtime_size", "get_runtime_alignment", "device_malloc_ctx",
            "device_free_ctx", "committed_device_memory_ctx", "copy_to_device_ctx",
            "copy_from_device_ctx", "simpler_register_callable", "simpler_unregister_callable",
            "simpler_prepare_run", "simpler_launch_run", "simpler_poll_run",
            "simpler_wait_run", "simpler_finalize_run", "simpler_run",
            "get_aicpu_dlopen_count", "get_host_dlopen_count", "get_run_stream_set_create_count",
            "get_pipeline_contract", "supports_concurrent_native_prepare_ctx", "get_arena_bank_gm_heap_base_ctx",
            "get_retained_temp_addr_ctx", "comm_init", "comm_alloc_windows", "comm_get_local_window_base",
            "comm_get_window_size", "comm_derive_context", "comm_alloc_domain_windows", "comm_release_domain_windows",
            "comm_barrier", "comm_break_domain", "comm_destroy", "ptorun_log_pending", "ptorun_log_next");

    /** {@code ptorun_variant} */
    long variant();

    /** {@code simpler_last_error} */
    long lastError();

    /** {@code create_device_context} */
    long createDeviceContext();

    /** {@code destroy_device_context} */
    void destroyDeviceContext(long ctx);

    /** {@code simpler_init} */
    int init(long ctx, int deviceId, long aicpu, long aicpuSize, long aicore, long aicoreSize, long dispatcher, long dispatcherSize, long prewarm);

    /** {@code finalize_device} */
    int finalizeDevice(long ctx);

    /** {@code get_runtime_size} */
    long runtimeSize();

    /** {@code get_runtime_alignment} */
    long runtimeAlignment();

    /** {@code device_malloc_ctx} */
    long deviceMalloc(long ctx, long n);

    /** {@code device_free_ctx} */
    void deviceFree(long ctx, long p);

    /** {@code committed_device_memory_ctx} */
    long committedDeviceMemory(long ctx);

    /** {@code copy_to_device_ctx} */
    int copyToDevice(long ctx, long dev, long host, long n);

    /** {@code copy_from_device_ctx} */
    int copyFromDevice(long ctx, long host, long dev, long n);

    /** {@code simpler_register_callable} */
    int registerCallable(long ctx, int id, long callable);

    /** {@code simpler_unregister_callable} */
    int unregisterCallable(long ctx, int id);

    /** {@code simpler_prepare_run} */
    int prepareRun(long ctx, long storage, int id, long args, long cfg, long desc);

    /** {@code simpler_launch_run} */
    int launchRun(long ctx, long storage);

    /** {@code simpler_poll_run} */
    int pollRun(long ctx, long storage);

    /** {@code simpler_wait_run} */
    int waitRun(long ctx, long storage);

    /** {@code simpler_finalize_run} */
    int finalizeRun(long ctx, long storage);

    /** {@code simpler_run} */
    int run(long ctx, long storage, int id, long args, long cfg, long desc);

    /** {@code get_aicpu_dlopen_count} */
    long aicpuDlopenCount(long ctx);

    /** {@code get_host_dlopen_count} */
    long hostDlopenCount(long ctx);

    /** {@code get_run_stream_set_create_count} */
    long runStreamSetCreateCount(long ctx);

    /** {@code get_pipeline_contract} */
    long pipelineContract();

    /** {@code supports_concurrent_native_prepare_ctx} */
    int supportsConcurrentNativePrepare(long ctx);

    /** {@code get_arena_bank_gm_heap_base_ctx} */
    long arenaBankGmHeapBase(long ctx, int bank);

    /** {@code get_retained_temp_addr_ctx} */
    long retainedTempAddr(long ctx, int slot);

    /** {@code ptorun_log_pending}: native log records waiting to be drained (an atomic load). */
    long logPending();

    /**
     * {@code ptorun_log_next}: moves the oldest native log record's text into {@code buf}
     * ({@code cap} bytes, NUL-terminated) and returns its level (1 ERROR … 5 TRACE); 0 when none.
     */
    int logNext(long buf, long cap);

    /** {@code comm_init}: {@code rootinfoPath} is the address of a NUL-terminated path; 0 on failure */
    long commInit(long ctx, int rank, int nranks, long rootinfoPath, int timeoutMs);

    /** {@code comm_alloc_windows} */
    int commAllocWindows(long comm, long winSize, long deviceCtxOut);

    /** {@code comm_get_local_window_base} */
    int commLocalWindowBase(long comm, long baseOut);

    /** {@code comm_get_window_size} */
    int commWindowSize(long comm, long sizeOut);

    /** {@code comm_derive_context} */
    int commDeriveContext(long comm, long rankIds, long rankCount, int domainRank, long windowOffset, long windowSize, long deviceCtxOut);

    /** {@code comm_alloc_domain_windows} */
    int commAllocDomainWindows(long comm, long allocationId, long rankIds, long rankCount, int domainRank, long windowSize, long deviceCtxOut, long localWindowBaseOut);

    /** {@code comm_release_domain_windows} */
    int commReleaseDomainWindows(long comm, long allocationId, long rankCount, int domainRank);

    /** {@code comm_barrier} */
    int commBarrier(long comm);

    /** {@code comm_break_domain} */
    int commBreakDomain(long comm, long deviceCtx);

    /** {@code comm_destroy} */
    int commDestroy(long comm);
}

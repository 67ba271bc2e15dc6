package org.ptorun.internal;

/**
 * JNA direct mapping of one library: static natives named after the C symbols, and
 * {@link NativeApi} forwarding to them. JNA binds a class's natives to exactly one
 * library, so {@link LibraryLoader} defines a fresh copy of this class per variant in a
 * class loader of its own and registers that copy. The class must stay public with a
 * public no-argument constructor and use nothing package-private: its copies live in
 * other runtime packages.
 */
public final class DirectBindings implements NativeApi {

    public DirectBindings() {
    }

    private static native long ptorun_variant();

    @Override
    public long variant() {
        return ptorun_variant();
    }

    private static native long simpler_last_error();

    @Override
    public long lastError() {
        return simpler_last_error();
    }

    private static native long create_device_context();

    @Override
    public long createDeviceContext() {
        return create_device_context();
    }

    private static native void destroy_device_context(long ctx);

    @Override
    public void destroyDeviceContext(long ctx) {
        destroy_device_context(ctx);
    }

    private static native int simpler_init(long ctx, int deviceId, long aicpu, long aicpuSize, long aicore, long aicoreSize, long dispatcher, long dispatcherSize, long prewarm);

    @Override
    public int init(long ctx, int deviceId, long aicpu, long aicpuSize, long aicore, long aicoreSize, long dispatcher, long dispatcherSize, long prewarm) {
        return simpler_init(ctx, deviceId, aicpu, aicpuSize, aicore, aicoreSize, dispatcher, dispatcherSize, prewarm);
    }

    private static native int finalize_device(long ctx);

    @Override
    public int finalizeDevice(long ctx) {
        return finalize_device(ctx);
    }

    private static native long get_runtime_size();

    @Override
    public long runtimeSize() {
        return get_runtime_size();
    }

    private static native long get_runtime_alignment();

    @Override
    public long runtimeAlignment() {
        return get_runtime_alignment();
    }

    private static native long device_malloc_ctx(long ctx, long n);

    @Override
    public long deviceMalloc(long ctx, long n) {
        return device_malloc_ctx(ctx, n);
    }

    private static native void device_free_ctx(long ctx, long p);

    @Override
    public void deviceFree(long ctx, long p) {
        device_free_ctx(ctx, p);
    }

    private static native long committed_device_memory_ctx(long ctx);

    @Override
    public long committedDeviceMemory(long ctx) {
        return committed_device_memory_ctx(ctx);
    }

    private static native int copy_to_device_ctx(long ctx, long dev, long host, long n);

    @Override
    public int copyToDevice(long ctx, long dev, long host, long n) {
        return copy_to_device_ctx(ctx, dev, host, n);
    }

    private static native int copy_from_device_ctx(long ctx, long host, long dev, long n);

    @Override
    public int copyFromDevice(long ctx, long host, long dev, long n) {
        return copy_from_device_ctx(ctx, host, dev, n);
    }

    private static native int simpler_register_callable(long ctx, int id, long callable);

    @Override
    public int registerCallable(long ctx, int id, long callable) {
        return simpler_register_callable(ctx, id, callable);
    }

    private static native int simpler_unregister_callable(long ctx, int id);

    @Override
    public int unregisterCallable(long ctx, int id) {
        return simpler_unregister_callable(ctx, id);
    }

    private static native int simpler_prepare_run(long ctx, long storage, int id, long args, long cfg, long desc);

    @Override
    public int prepareRun(long ctx, long storage, int id, long args, long cfg, long desc) {
        return simpler_prepare_run(ctx, storage, id, args, cfg, desc);
    }

    private static native int simpler_launch_run(long ctx, long storage);

    @Override
    public int launchRun(long ctx, long storage) {
        return simpler_launch_run(ctx, storage);
    }

    private static native int simpler_poll_run(long ctx, long storage);

    @Override
    public int pollRun(long ctx, long storage) {
        return simpler_poll_run(ctx, storage);
    }

    private static native int simpler_wait_run(long ctx, long storage);

    @Override
    public int waitRun(long ctx, long storage) {
        return simpler_wait_run(ctx, storage);
    }

    private static native int simpler_finalize_run(long ctx, long storage);

    @Override
    public int finalizeRun(long ctx, long storage) {
        return simpler_finalize_run(ctx, storage);
    }

    private static native int simpler_run(long ctx, long storage, int id, long args, long cfg, long desc);

    @Override
    public int run(long ctx, long storage, int id, long args, long cfg, long desc) {
        return simpler_run(ctx, storage, id, args, cfg, desc);
    }

    private static native long get_aicpu_dlopen_count(long ctx);

    @Override
    public long aicpuDlopenCount(long ctx) {
        return get_aicpu_dlopen_count(ctx);
    }

    private static native long get_host_dlopen_count(long ctx);

    @Override
    public long hostDlopenCount(long ctx) {
        return get_host_dlopen_count(ctx);
    }

    private static native long get_run_stream_set_create_count(long ctx);

    @Override
    public long runStreamSetCreateCount(long ctx) {
        return get_run_stream_set_create_count(ctx);
    }

    private static native long get_pipeline_contract();

    @Override
    public long pipelineContract() {
        return get_pipeline_contract();
    }

    private static native int supports_concurrent_native_prepare_ctx(long ctx);

    @Override
    public int supportsConcurrentNativePrepare(long ctx) {
        return supports_concurrent_native_prepare_ctx(ctx);
    }

    private static native long get_arena_bank_gm_heap_base_ctx(long ctx, int bank);

    @Override
    public long arenaBankGmHeapBase(long ctx, int bank) {
        return get_arena_bank_gm_heap_base_ctx(ctx, bank);
    }

    private static native long get_retained_temp_addr_ctx(long ctx, int slot);

    @Override
    public long retainedTempAddr(long ctx, int slot) {
        return get_retained_temp_addr_ctx(ctx, slot);
    }

    private static native long ptorun_log_pending();

    @Override
    public long logPending() {
        return ptorun_log_pending();
    }

    private static native int ptorun_log_next(long buf, long cap);

    @Override
    public int logNext(long buf, long cap) {
        return ptorun_log_next(buf, cap);
    }

    private static native long comm_init(long ctx, int rank, int nranks, long rootinfoPath, int timeoutMs);

    @Override
    public long commInit(long ctx, int rank, int nranks, long rootinfoPath, int timeoutMs) {
        return comm_init(ctx, rank, nranks, rootinfoPath, timeoutMs);
    }

    private static native int comm_alloc_windows(long comm, long winSize, long deviceCtxOut);

    @Override
    public int commAllocWindows(long comm, long winSize, long deviceCtxOut) {
        return comm_alloc_windows(comm, winSize, deviceCtxOut);
    }

    private static native int comm_get_local_window_base(long comm, long baseOut);

    @Override
    public int commLocalWindowBase(long comm, long baseOut) {
        return comm_get_local_window_base(comm, baseOut);
    }

    private static native int comm_get_window_size(long comm, long sizeOut);

    @Override
    public int commWindowSize(long comm, long sizeOut) {
        return comm_get_window_size(comm, sizeOut);
    }

    private static native int comm_derive_context(long comm, long rankIds, long rankCount, int domainRank, long windowOffset, long windowSize, long deviceCtxOut);

    @Override
    public int commDeriveContext(long comm, long rankIds, long rankCount, int domainRank, long windowOffset, long windowSize, long deviceCtxOut) {
        return comm_derive_context(comm, rankIds, rankCount, domainRank, windowOffset, windowSize, deviceCtxOut);
    }

    private static native int comm_alloc_domain_windows(long comm, long allocationId, long rankIds, long rankCount, int domainRank, long windowSize, long deviceCtxOut, long localWindowBaseOut);

    @Override
    public int commAllocDomainWindows(long comm, long allocationId, long rankIds, long rankCount, int domainRank, long windowSize, long deviceCtxOut, long localWindowBaseOut) {
        return comm_alloc_domain_windows(comm, allocationId, rankIds, rankCount, domainRank, windowSize, deviceCtxOut, localWindowBaseOut);
    }

    private static native int comm_release_domain_windows(long comm, long allocationId, long rankCount, int domainRank);

    @Override
    public int commReleaseDomainWindows(long comm, long allocationId, long rankCount, int domainRank) {
        return comm_release_domain_windows(comm, allocationId, rankCount, domainRank);
    }

    private static native int comm_barrier(long comm);

    @Override
    public int commBarrier(long comm) {
        return comm_barrier(comm);
    }

    private static native int comm_break_domain(long comm, long deviceCtx);

    @Override
    public int commBreakDomain(long comm, long deviceCtx) {
        return comm_break_domain(comm, deviceCtx);
    }

    private static native int comm_destroy(long comm);

    @Override
    public int commDestroy(long comm) {
        return comm_destroy(comm);
    }
}

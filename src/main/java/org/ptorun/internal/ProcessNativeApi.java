package org.ptorun.internal;

/**
 * The contract of a chip in a process of its own (docs/isolation.md): every call goes
 * through {@code libptorun_chipproxy.so} to the chip host, which calls the variant library
 * it loaded. The calls without a device context (identity, sizing, the log) answer for
 * this one chip; the device contexts and comm handles are the proxy's. Once the chip host
 * is gone every call fails with {@code PTO_ERR_CHIP_CRASHED} and the death's message.
 */
final class ProcessNativeApi implements NativeApi {

    private final long chip;

    ProcessNativeApi(long chip) {
        this.chip = chip;
    }

    @Override
    public long variant() {
        return ChipProxy.chip_proxy_variant(chip);
    }

    @Override
    public long lastError() {
        return ChipProxy.chip_proxy_last_error();
    }

    @Override
    public long createDeviceContext() {
        return ChipProxy.chip_proxy_create_device_context(chip);
    }

    @Override
    public void destroyDeviceContext(long ctx) {
        ChipProxy.chip_proxy_destroy_device_context(ctx);
    }

    @Override
    public int init(long ctx, int deviceId, long aicpu, long aicpuSize, long aicore, long aicoreSize,
                    long dispatcher, long dispatcherSize, long prewarm) {
        return ChipProxy.chip_proxy_init(ctx, deviceId, aicpu, aicpuSize, aicore, aicoreSize, dispatcher,
                dispatcherSize, prewarm);
    }

    @Override
    public int finalizeDevice(long ctx) {
        return ChipProxy.chip_proxy_finalize_device(ctx);
    }

    @Override
    public long runtimeSize() {
        return ChipProxy.chip_proxy_runtime_size(chip);
    }

    @Override
    public long runtimeAlignment() {
        return ChipProxy.chip_proxy_runtime_alignment(chip);
    }

    @Override
    public long deviceMalloc(long ctx, long n) {
        return ChipProxy.chip_proxy_device_malloc(ctx, n);
    }

    @Override
    public void deviceFree(long ctx, long p) {
        ChipProxy.chip_proxy_device_free(ctx, p);
    }

    @Override
    public long committedDeviceMemory(long ctx) {
        return ChipProxy.chip_proxy_committed_device_memory(ctx);
    }

    @Override
    public int copyToDevice(long ctx, long dev, long host, long n) {
        return ChipProxy.chip_proxy_copy_to_device(ctx, dev, host, n);
    }

    @Override
    public int copyFromDevice(long ctx, long host, long dev, long n) {
        return ChipProxy.chip_proxy_copy_from_device(ctx, host, dev, n);
    }

    @Override
    public int registerCallable(long ctx, int id, long callable) {
        return ChipProxy.chip_proxy_register_callable(ctx, id, callable);
    }

    @Override
    public int unregisterCallable(long ctx, int id) {
        return ChipProxy.chip_proxy_unregister_callable(ctx, id);
    }

    @Override
    public int prepareRun(long ctx, long storage, int id, long args, long cfg, long desc) {
        return ChipProxy.chip_proxy_prepare_run(ctx, storage, id, args, cfg, desc);
    }

    @Override
    public int launchRun(long ctx, long storage) {
        return ChipProxy.chip_proxy_launch_run(ctx, storage);
    }

    @Override
    public int pollRun(long ctx, long storage) {
        return ChipProxy.chip_proxy_poll_run(ctx, storage);
    }

    @Override
    public int waitRun(long ctx, long storage) {
        return ChipProxy.chip_proxy_wait_run(ctx, storage);
    }

    @Override
    public int finalizeRun(long ctx, long storage) {
        return ChipProxy.chip_proxy_finalize_run(ctx, storage);
    }

    @Override
    public int run(long ctx, long storage, int id, long args, long cfg, long desc) {
        return ChipProxy.chip_proxy_run(ctx, storage, id, args, cfg, desc);
    }

    @Override
    public long aicpuDlopenCount(long ctx) {
        return ChipProxy.chip_proxy_aicpu_dlopen_count(ctx);
    }

    @Override
    public long hostDlopenCount(long ctx) {
        return ChipProxy.chip_proxy_host_dlopen_count(ctx);
    }

    @Override
    public long runStreamSetCreateCount(long ctx) {
        return ChipProxy.chip_proxy_run_stream_set_create_count(ctx);
    }

    @Override
    public long pipelineContract() {
        return ChipProxy.chip_proxy_pipeline_contract(chip);
    }

    @Override
    public int supportsConcurrentNativePrepare(long ctx) {
        return ChipProxy.chip_proxy_supports_concurrent_native_prepare(ctx);
    }

    @Override
    public long arenaBankGmHeapBase(long ctx, int bank) {
        return ChipProxy.chip_proxy_arena_bank_gm_heap_base(ctx, bank);
    }

    @Override
    public long retainedTempAddr(long ctx, int slot) {
        return ChipProxy.chip_proxy_retained_temp_addr(ctx, slot);
    }

    @Override
    public int devicePoisoned(long ctx) {
        return ChipProxy.chip_proxy_device_poisoned(ctx);
    }

    @Override
    public long commInit(long ctx, int rank, int nranks, long rootinfoPath, int timeoutMs) {
        return ChipProxy.chip_proxy_comm_init(ctx, rank, nranks, rootinfoPath, timeoutMs);
    }

    @Override
    public int commAllocWindows(long comm, long winSize, long deviceCtxOut) {
        return ChipProxy.chip_proxy_comm_alloc_windows(comm, winSize, deviceCtxOut);
    }

    @Override
    public int commGetLocalWindowBase(long comm, long baseOut) {
        return ChipProxy.chip_proxy_comm_get_local_window_base(comm, baseOut);
    }

    @Override
    public int commGetWindowSize(long comm, long sizeOut) {
        return ChipProxy.chip_proxy_comm_get_window_size(comm, sizeOut);
    }

    @Override
    public int commDeriveContext(long comm, long rankIds, long rankCount, int domainRank, long windowOffset,
                                 long windowSize, long deviceCtxOut) {
        return ChipProxy.chip_proxy_comm_derive_context(comm, rankIds, rankCount, domainRank, windowOffset,
                windowSize, deviceCtxOut);
    }

    @Override
    public int commAllocDomainWindows(long comm, long allocationId, long rankIds, long rankCount, int domainRank,
                                      long windowSize, long deviceCtxOut, long localWindowBaseOut) {
        return ChipProxy.chip_proxy_comm_alloc_domain_windows(comm, allocationId, rankIds, rankCount, domainRank,
                windowSize, deviceCtxOut, localWindowBaseOut);
    }

    @Override
    public int commReleaseDomainWindows(long comm, long allocationId, long rankCount, int domainRank) {
        return ChipProxy.chip_proxy_comm_release_domain_windows(comm, allocationId, rankCount, domainRank);
    }

    @Override
    public int commBarrier(long comm) {
        return ChipProxy.chip_proxy_comm_barrier(comm);
    }

    @Override
    public int commBreakDomain(long comm, long deviceCtx) {
        return ChipProxy.chip_proxy_comm_break_domain(comm, deviceCtx);
    }

    @Override
    public int commDestroy(long comm) {
        return ChipProxy.chip_proxy_comm_destroy(comm);
    }

    @Override
    public long logPending() {
        return ChipProxy.chip_proxy_log_pending(chip);
    }

    @Override
    public int logNext(long buf, long cap) {
        return ChipProxy.chip_proxy_log_next(chip, buf, cap);
    }
}

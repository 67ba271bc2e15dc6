package org.ptorun.internal;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * A {@link NativeApi} that drains the library's native log ({@link NativeLog}) after
 * every call that may record: one atomic-count check when nothing was recorded. The run
 * phases (prepare, launch, poll, wait, finalize) are the hot path: they drain after a
 * failed call, and a successful finalize drains every {@value #FINALIZES_PER_DRAIN}th
 * time — so a record made during a successful run reaches SLF4J within that many runs,
 * or at the chip's next call of any other kind, and a successful trivial cycle makes no
 * native call beyond its phases (docs/performance.md, P1). The drain runs on the
 * calling thread at the end of the call, never from a device thread, and leaves
 * {@code simpler_last_error} alone, so a failed call's message is still there.
 */
public final class DrainingNativeApi implements NativeApi {

    /** Successful finalizes, across the library's chips, between two drains of the log. */
    public static final int FINALIZES_PER_DRAIN = 64;

    private final NativeApi api;
    private final NativeLog log;
    private final AtomicInteger finalizes = new AtomicInteger();

    /** Wraps {@code api}; records go to {@code log}. */
    public DrainingNativeApi(NativeApi api, NativeLog log) {
        this.api = api;
        this.log = log;
    }

    /** The log this api drains. */
    public NativeLog log() {
        return log;
    }

    @Override
    public long variant() {
        return api.variant();
    }

    @Override
    public long lastError() {
        return api.lastError();
    }

    @Override
    public long createDeviceContext() {
        try {
            return api.createDeviceContext();
        } finally {
            log.drain();
        }
    }

    @Override
    public void destroyDeviceContext(long ctx) {
        try {
            api.destroyDeviceContext(ctx);
        } finally {
            log.drain();
        }
    }

    @Override
    public int init(long ctx, int deviceId, long aicpu, long aicpuSize, long aicore, long aicoreSize, long dispatcher, long dispatcherSize, long prewarm) {
        try {
            return api.init(ctx, deviceId, aicpu, aicpuSize, aicore, aicoreSize, dispatcher, dispatcherSize, prewarm);
        } finally {
            log.drain();
        }
    }

    @Override
    public int finalizeDevice(long ctx) {
        try {
            return api.finalizeDevice(ctx);
        } finally {
            log.drain();
        }
    }

    @Override
    public long runtimeSize() {
        return api.runtimeSize();
    }

    @Override
    public long runtimeAlignment() {
        return api.runtimeAlignment();
    }

    @Override
    public long deviceMalloc(long ctx, long n) {
        try {
            return api.deviceMalloc(ctx, n);
        } finally {
            log.drain();
        }
    }

    @Override
    public void deviceFree(long ctx, long p) {
        try {
            api.deviceFree(ctx, p);
        } finally {
            log.drain();
        }
    }

    @Override
    public long committedDeviceMemory(long ctx) {
        try {
            return api.committedDeviceMemory(ctx);
        } finally {
            log.drain();
        }
    }

    @Override
    public int copyToDevice(long ctx, long dev, long host, long n) {
        try {
            return api.copyToDevice(ctx, dev, host, n);
        } finally {
            log.drain();
        }
    }

    @Override
    public int copyFromDevice(long ctx, long host, long dev, long n) {
        try {
            return api.copyFromDevice(ctx, host, dev, n);
        } finally {
            log.drain();
        }
    }

    @Override
    public int registerCallable(long ctx, int id, long callable) {
        try {
            return api.registerCallable(ctx, id, callable);
        } finally {
            log.drain();
        }
    }

    @Override
    public int unregisterCallable(long ctx, int id) {
        try {
            return api.unregisterCallable(ctx, id);
        } finally {
            log.drain();
        }
    }

    @Override
    public int prepareRun(long ctx, long storage, int id, long args, long cfg, long desc) {
        return drainedIfFailed(api.prepareRun(ctx, storage, id, args, cfg, desc));
    }

    @Override
    public int launchRun(long ctx, long storage) {
        return drainedIfFailed(api.launchRun(ctx, storage));
    }

    @Override
    public int pollRun(long ctx, long storage) {
        return drainedIfFailed(api.pollRun(ctx, storage));
    }

    @Override
    public int waitRun(long ctx, long storage) {
        return drainedIfFailed(api.waitRun(ctx, storage));
    }

    @Override
    public int finalizeRun(long ctx, long storage) {
        int rc = api.finalizeRun(ctx, storage);
        if (rc != 0 || finalizes.incrementAndGet() % FINALIZES_PER_DRAIN == 0) {
            log.drain();
        }
        return rc;
    }

    /** A run phase's result: drains the log first when the call failed (its records say why). */
    private int drainedIfFailed(int rc) {
        if (rc < 0) {
            log.drain();
        }
        return rc;
    }

    @Override
    public int run(long ctx, long storage, int id, long args, long cfg, long desc) {
        try {
            return api.run(ctx, storage, id, args, cfg, desc);
        } finally {
            log.drain();
        }
    }

    @Override
    public long aicpuDlopenCount(long ctx) {
        try {
            return api.aicpuDlopenCount(ctx);
        } finally {
            log.drain();
        }
    }

    @Override
    public long hostDlopenCount(long ctx) {
        try {
            return api.hostDlopenCount(ctx);
        } finally {
            log.drain();
        }
    }

    @Override
    public long runStreamSetCreateCount(long ctx) {
        try {
            return api.runStreamSetCreateCount(ctx);
        } finally {
            log.drain();
        }
    }

    @Override
    public long pipelineContract() {
        return api.pipelineContract();
    }

    @Override
    public int supportsConcurrentNativePrepare(long ctx) {
        try {
            return api.supportsConcurrentNativePrepare(ctx);
        } finally {
            log.drain();
        }
    }

    @Override
    public long arenaBankGmHeapBase(long ctx, int bank) {
        try {
            return api.arenaBankGmHeapBase(ctx, bank);
        } finally {
            log.drain();
        }
    }

    @Override
    public long retainedTempAddr(long ctx, int slot) {
        try {
            return api.retainedTempAddr(ctx, slot);
        } finally {
            log.drain();
        }
    }

    @Override
    public long logPending() {
        return api.logPending();
    }

    @Override
    public int logNext(long buf, long cap) {
        return api.logNext(buf, cap);
    }

    @Override
    public long commInit(long ctx, int rank, int nranks, long rootinfoPath, int timeoutMs) {
        try {
            return api.commInit(ctx, rank, nranks, rootinfoPath, timeoutMs);
        } finally {
            log.drain();
        }
    }

    @Override
    public int commAllocWindows(long comm, long winSize, long deviceCtxOut) {
        try {
            return api.commAllocWindows(comm, winSize, deviceCtxOut);
        } finally {
            log.drain();
        }
    }

    @Override
    public int commLocalWindowBase(long comm, long baseOut) {
        try {
            return api.commLocalWindowBase(comm, baseOut);
        } finally {
            log.drain();
        }
    }

    @Override
    public int commWindowSize(long comm, long sizeOut) {
        try {
            return api.commWindowSize(comm, sizeOut);
        } finally {
            log.drain();
        }
    }

    @Override
    public int commDeriveContext(long comm, long rankIds, long rankCount, int domainRank, long windowOffset, long windowSize, long deviceCtxOut) {
        try {
            return api.commDeriveContext(comm, rankIds, rankCount, domainRank, windowOffset, windowSize, deviceCtxOut);
        } finally {
            log.drain();
        }
    }

    @Override
    public int commAllocDomainWindows(long comm, long allocationId, long rankIds, long rankCount, int domainRank, long windowSize, long deviceCtxOut, long localWindowBaseOut) {
        try {
            return api.commAllocDomainWindows(comm, allocationId, rankIds, rankCount, domainRank, windowSize, deviceCtxOut, localWindowBaseOut);
        } finally {
            log.drain();
        }
    }

    @Override
    public int commReleaseDomainWindows(long comm, long allocationId, long rankCount, int domainRank) {
        try {
            return api.commReleaseDomainWindows(comm, allocationId, rankCount, domainRank);
        } finally {
            log.drain();
        }
    }

    @Override
    public int commBarrier(long comm) {
        try {
            return api.commBarrier(comm);
        } finally {
            log.drain();
        }
    }

    @Override
    public int commBreakDomain(long comm, long deviceCtx) {
        try {
            return api.commBreakDomain(comm, deviceCtx);
        } finally {
            log.drain();
        }
    }

    @Override
    public int commDestroy(long comm) {
        try {
            return api.commDestroy(comm);
        } finally {
            log.drain();
        }
    }
}

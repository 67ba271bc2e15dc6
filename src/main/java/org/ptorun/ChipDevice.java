package org.ptorun;

import java.util.Objects;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.LongSupplier;
import org.ptorun.internal.ChipHost;
import org.ptorun.internal.EmulatedDriverLibrary;
import org.ptorun.internal.HostMemory;
import org.ptorun.internal.NativeApi;
import org.ptorun.internal.NativeFolder;
import org.ptorun.internal.NativeMemory;
import org.ptorun.internal.OffHeapBlock;

/**
 * One device context of the library: created and brought up at open, finalized and
 * destroyed at close; the native failures of its calls (and whether the library says
 * they poisoned it);
 * and the device lock that orders the calls not about a run (memory, copies,
 * callables, queries: read side) before device teardown (write side).
 */
final class ChipDevice {

    /** How every refusal of platform/onboard/onboard_driver.c to load the driver begins. */
    static final String DRIVER_LOAD_PREFIX = "onboard driver";

    final NativeApi api;
    final Variant variant;
    final int deviceId;
    final long ctx;
    /** Where the host memory the library touches comes from (the chip host's arena in process isolation). */
    final HostMemory hostMemory;
    /** The process the chip runs in; null in process. */
    final ChipHost host;
    private final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();
    /** Comm handles of ranks on this device ({@link CommRank}): they pin the context, so release leaves them first. */
    private final java.util.Set<Long> commHandles = java.util.concurrent.ConcurrentHashMap.newKeySet();
    /** The live domain descriptors of those ranks (a collective's comm scalar), each with its rank's handle. */
    private final java.util.Map<Long, Long> commDomains = new java.util.concurrent.ConcurrentHashMap<>();
    private volatile boolean poisoned;
    /** Set under the write side once finalize_device ran (or the context was leaked). */
    private boolean released;

    /** Creates the device context and brings the device up with the images (copied off-heap for the call). */
    ChipDevice(NativeApi api, Variant variant, int deviceId, byte[] aicpuImage, byte[] aicoreImage, ChipHost host) {
        this.api = Objects.requireNonNull(api, "api");
        this.variant = Objects.requireNonNull(variant, "variant");
        this.deviceId = deviceId;
        this.host = host;
        this.hostMemory = host == null ? HostMemory.JVM : host.memory();
        long context = api.createDeviceContext();
        if (context == 0) {
            throw failure("create_device_context", PtoError.OUT_OF_MEMORY.code(), lastError(), null);
        }
        boolean up = false;
        try {
            init(context, aicpuImage, aicoreImage);
            up = true;
        } finally {
            if (!up) {
                api.destroyDeviceContext(context);
            }
        }
        this.ctx = context;
    }

    private void init(long context, byte[] aicpuImage, byte[] aicoreImage) {
        try (OffHeapBlock aicpu = copyOffHeap(aicpuImage); OffHeapBlock aicore = copyOffHeap(aicoreImage)) {
            int rc = api.init(context, deviceId, aicpu.address(), aicpuImage.length, aicore.address(),
                    aicoreImage.length, 0, 0, 0);
            if (rc == 0) {
                return;
            }
            String message = lastError();
            if (rc == PtoError.DEVICE.code() && message.startsWith(DRIVER_LOAD_PREFIX)) {
                /* onboard_driver.c: every refusal to load the driver starts so */
                throw new LibraryLoadException(describe() + ": cannot open the device, its driver does not load: "
                        + message + " (an onboard library loads -D" + NativeFolder.DRIVER_PROPERTY
                        + " when set, else the file named by PTORUN_DRIVER, else "
                        + EmulatedDriverLibrary.BUNDLED_FILE_NAME + " next to itself; docs/java.md, Loading)",
                        NativeErrors.fromNative("simpler_init on device " + deviceId, rc, message, null));
            }
            throw failure("simpler_init on device " + deviceId, rc, message, null);
        }
    }

    /** What a run's call into a chip host may take beyond the run's timeout before the host is killed. */
    static final long HANG_GRACE_MS = 2_000;

    private static final Runnable NO_WATCH = () -> { };
    private static final int SIGKILL = 9;

    /**
     * In process isolation, bounds a call of a run by the run's timeout plus
     * {@link #HANG_GRACE_MS}: a chip host that makes no progress past it is killed, and the
     * call fails with {@link ChipCrashedException} (docs/isolation.md). Run the result when
     * the call returned. In process nothing.
     */
    Runnable watch(RunBinding b, String call) {
        return host == null ? NO_WATCH : host.watch(b.timeoutMs() + HANG_GRACE_MS, call);
    }

    /** The bytes in host memory the library can read. */
    OffHeapBlock copyOffHeap(byte[] bytes) {
        OffHeapBlock block = hostMemory.allocate(bytes.length, 64);
        block.buffer().put(0, bytes);
        return block;
    }

    String describe() {
        return host == null ? "chip " + variant + " device " + deviceId
                : "chip " + variant + " device " + deviceId + " (process " + host.pid() + ")";
    }

    Variant variant() {
        return variant;
    }

    int deviceId() {
        return deviceId;
    }

    boolean isPoisoned() {
        return poisoned;
    }

    String lastError() {
        return NativeMemory.cString(api.lastError());
    }

    /**
     * The exception for a failed native call. Whether the failure poisoned the device
     * context is the library's answer, not a rule of ours (device_poisoned_ctx; the rule
     * is runner_note_failure's, docs/reliability.md section 4): asked right after the
     * failure, so the chip is unhealthy as the exception is thrown, and only after a
     * failure, so a successful call costs nothing more.
     */
    PtoRunException failure(String operation, int code, String nativeMessage, NativeRun run) {
        if (code == PtoError.CHIP_CRASHED.code() && host != null) {
            poisoned = true; // a chip whose process is gone takes nothing more
            return NativeErrors.fromNative(operation + " on " + describe(), code, nativeMessage, run,
                    host.lastLogLines());
        }
        if (libraryPoisoned()) {
            poisoned = true;
        }
        return NativeErrors.fromNative(operation, code, nativeMessage, run);
    }

    /** device_poisoned_ctx, under the read side: never on a context already finalized and destroyed. */
    private boolean libraryPoisoned() {
        if (ctx == 0) {
            return false; // create or init failed: this chip has no context yet
        }
        lock.readLock().lock(); // re-entrant for a caller already inside
        try {
            return !released && api.devicePoisoned(ctx) != 0;
        } finally {
            lock.readLock().unlock();
        }
    }

    // ---- the device lock ------------------------------------------------------------------

    /** Read side: a call not about a run; refused ({@link IllegalStateException}) once the device is released. */
    void enter(SlotTable table) {
        lock.readLock().lock();
        try {
            table.ensureOpen();
        } catch (RuntimeException e) {
            lock.readLock().unlock();
            throw e;
        }
    }

    void exit() {
        lock.readLock().unlock();
    }

    /** A query under the read side. */
    long query(SlotTable table, LongSupplier q) {
        enter(table);
        try {
            return q.getAsLong();
        } finally {
            exit();
        }
    }

    void commJoined(long handle) {
        commHandles.add(handle);
    }

    void commLeft(long handle) {
        commHandles.remove(handle);
        commDomains.values().removeIf(h -> h == handle);
    }

    void commDomainOpened(long handle, long deviceContext) {
        commDomains.put(deviceContext, handle);
    }

    void commDomainClosed(long deviceContext) {
        commDomains.remove(deviceContext);
    }

    /**
     * A run of this chip was refused before it reached the library: breaks every live
     * domain its scalars name, naming this chip's rank, so the peers' collectives fail at
     * once instead of waiting for the group timeout (the library does the same for the
     * runs it refuses or that fail; docs/communication.md, Fault model). Best effort,
     * never throws: the refusal is what the caller reports.
     */
    void breakDomainsNamedBy(TaskArgs args) {
        if (commDomains.isEmpty() || args == null) {
            return; // the usual run: no domain on this chip
        }
        lock.readLock().lock();
        try {
            for (int i = 0; i < args.scalarCount() && !released; i++) {
                long scalar = args.scalarAt(i);
                Long handle = commDomains.get(scalar);
                if (handle != null) {
                    api.commBreakDomain(handle, scalar); // a stale handle is refused, harmlessly
                }
            }
        } finally {
            lock.readLock().unlock();
        }
    }

    /** Frees device memory; a no-op once the device released everything. */
    void free(long address) {
        lock.readLock().lock();
        try {
            if (!released) {
                api.deviceFree(ctx, address);
            }
        } finally {
            lock.readLock().unlock();
        }
    }

    /**
     * Write side: finalize_device then destroy_device_context, unless a call is still
     * inside the library or the library refuses (a run it holds): then the context is
     * leaked rather than freed under it.
     *
     * @param leak true when a call is still in flight
     * @return true when the context was destroyed (its storages may be freed)
     */
    boolean release(boolean leak, java.util.function.Consumer<String> warn) {
        lock.writeLock().lock();
        // a chip host that turned unhealthy goes whole: its process is killed, nothing in it
        // is finalized (a kernel may still hang there); the calls below only free the proxy's
        // handles. A healthy one is finalized, bounded like a run's call.
        boolean dropped = host != null && (poisoned || !host.alive());
        if (dropped) {
            host.kill(SIGKILL);
        }
        Runnable watched = host == null || dropped ? NO_WATCH
                : host.watch(ChipLifecycle.CLOSE_GRACE_MS, "finalize_device of " + describe());
        try {
            released = true;
            if (leak) {
                return false;
            }
            for (long handle : commHandles) {
                int left = api.commDestroy(handle);
                warn.accept("closed with a comm rank still in its group: the rank left it ("
                        + (left == 0 ? "its peers see it gone" : PtoError.nameOf(left) + ": " + lastError()) + ")");
            }
            commHandles.clear();
            commDomains.clear();
            int rc = api.finalizeDevice(ctx);
            if (rc == PtoError.BUSY.code() && !dropped) {
                warn.accept("finalize_device refused (" + lastError() + "); leaking the device context and every"
                        + " run storage");
                return false;
            }
            if (rc != 0 && !dropped) {
                warn.accept("finalize_device failed: " + PtoError.nameOf(rc) + " (" + lastError() + ")");
            }
            api.destroyDeviceContext(ctx);
            return true;
        } finally {
            watched.run();
            lock.writeLock().unlock();
        }
    }
}

package org.ptorun;

import java.util.Objects;
import org.ptorun.internal.ChipHost;
import org.ptorun.internal.HostMemory;
import org.ptorun.internal.Layouts;
import org.ptorun.internal.NativeApi;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The chip's open and close, and the parts it opens: the device context, one
 * {@link RunBinding} per pipeline slot, the {@link SlotTable}, the device memory, the
 * callable registry. Kept apart from {@link ChipWorker}, which drives the runs, so the
 * leak net can close a forgotten chip without keeping the ChipWorker reachable.
 */
final class ChipLifecycle {

    private static final Logger LOG = LoggerFactory.getLogger(ChipWorker.class);

    /** How long past a run's timeout close waits for a call of that run to return. */
    static final long CLOSE_GRACE_MS = 5_000;
    private static final int SIGKILL = 9;

    final ChipDevice device;
    final SlotTable table;
    final RunBinding[] bindings;
    final DeviceMemory memory;
    final CallableRegistry callables;
    /** A run may be prepared in another slot while one executes (depth > 1 and the library supports it). */
    final boolean overlap;
    private final Object closeMonitor = new Object();

    /** Opens a device: allocates every slot's blocks, then creates the device context and brings it up. */
    ChipLifecycle(NativeApi api, Variant variant, PipelineContract contract, long storageSize, long storageAlignment,
                  int deviceId, byte[] aicpuImage, byte[] aicoreImage, ChipHost host) {
        Objects.requireNonNull(api, "api");
        Objects.requireNonNull(variant, "variant");
        Objects.requireNonNull(contract, "contract");
        Objects.requireNonNull(aicpuImage, "aicpuImage");
        Objects.requireNonNull(aicoreImage, "aicoreImage");
        if (deviceId < 0) {
            throw new IllegalArgumentException("device id " + deviceId + " is negative");
        }
        if (aicpuImage.length == 0 || aicoreImage.length == 0) {
            throw new IllegalArgumentException("device images must not be empty (AICPU " + aicpuImage.length
                    + " bytes, AICore " + aicoreImage.length + " bytes)");
        }
        if (storageSize < Layouts.MIN_RUN_STORAGE || storageSize > Integer.MAX_VALUE || storageAlignment < 8
                || Long.bitCount(storageAlignment) != 1) {
            throw new IllegalArgumentException("run storage of " + storageSize + " bytes aligned "
                    + storageAlignment + " violates the contract (size >= " + Layouts.MIN_RUN_STORAGE
                    + ": the tag and the run's report; alignment a power of two >= 8)");
        }
        RunBinding[] made = new RunBinding[contract.pipelineDepth()];
        ChipDevice opened = null;
        try {
            for (int i = 0; i < made.length; i++) {
                made[i] = new RunBinding(i, contract.bankOfSlot(i), storageSize, storageAlignment,
                        host == null ? HostMemory.JVM : host.memory());
            }
            opened = new ChipDevice(api, variant, deviceId, aicpuImage, aicoreImage, host);
        } finally {
            if (opened == null) {
                for (RunBinding b : made) {
                    if (b != null) {
                        b.free();
                    }
                }
            }
        }
        this.device = opened;
        this.bindings = made;
        this.table = new SlotTable(made.length, device.describe());
        this.memory = new DeviceMemory(device, table);
        this.callables = new CallableRegistry(device, table);
        this.overlap = made.length > 1 && api.supportsConcurrentNativePrepare(device.ctx) > 0;
        if (LOG.isInfoEnabled()) {
            LOG.info("opened {} ({})", device.describe(), inFlight(made.length, overlap));
        }
        LOG.debug("opened {}: {} pipeline slot(s) {}, run storage {} bytes aligned {}, concurrent prepare {}",
                device.describe(), made.length, contract, storageSize, storageAlignment, overlap);
    }

    /** The open line's plain words for how many runs a chip holds at once. */
    static String inFlight(int depth, boolean overlap) {
        if (overlap) {
            return depth + " runs in flight at most: the next run is prepared while one executes";
        }
        return depth > 1 ? "one run at a time: this library does not prepare a run while another executes"
                : "one run at a time: this library's pipeline has depth 1";
    }

    /**
     * Stops new calls, waits for the calls inside the library to return (each bounded by
     * its run's timeout plus {@link #CLOSE_GRACE_MS}), finalizes every run that is
     * PREPARED, RUNNING or ENDED (errors logged), then finalize_device,
     * destroy_device_context and frees the blocks. Only a call that outlives its bound (a
     * kernel that never returns on sim) is left behind: the device context and that
     * slot's blocks are leaked with an ERROR naming the run, rather than freed under it.
     * Idempotent; a concurrent caller returns once the first is done.
     */
    void close() {
        synchronized (closeMonitor) {
            SlotTable.Closing closing = table.beginClose(CLOSE_GRACE_MS);
            if (closing == null) {
                return;
            }
            for (SlotTable.Finalizing f : closing.outstanding()) {
                try {
                    ChipWorker.finalizeBegun(this, f);
                    LOG.info("close of {} finalized the outstanding run {}", device.describe(), f.run().identity());
                } catch (RuntimeException e) {
                    LOG.warn("close of {}: finalizing the outstanding run {} failed: {}", device.describe(),
                            f.run().identity(), e.getMessage());
                }
            }
            boolean midCall = release(closing);
            table.closed();
            stopHost(midCall);
        }
    }

    /**
     * The chip host goes with the chip. While a call is still inside it, it is killed
     * instead: the call fails at once, and the arena (the call's lane, the slot's blocks)
     * stays mapped rather than unmapped under it.
     */
    private void stopHost(boolean midCall) {
        if (device.host == null) {
            return;
        }
        if (midCall) {
            device.host.kill(SIGKILL);
            LOG.error("close of {}: killed its chip host, a call was still inside it; its arena stays mapped",
                    device.describe());
            return;
        }
        device.host.close();
    }

    /** Releases the device and frees the blocks; true when a call was still inside the library. */
    private boolean release(SlotTable.Closing closing) {
        try {
            boolean leak = !closing.midCall().isEmpty();
            for (SlotTable.MidCall m : closing.midCall()) {
                LOG.error("close of {}: the {} call of {} in slot {} did not return within its timeout of {} ms"
                        + " + {} ms; leaking the device context and the slot's run storage rather than freeing"
                        + " them under a live call", device.describe(), m.phase(), m.run() == null ? "no run"
                        : m.run().identity(), m.slot(), m.timeoutMs(), CLOSE_GRACE_MS);
            }
            boolean destroyed = device.release(leak, w -> LOG.warn("close of {}: {}", device.describe(), w));
            if (leak) {
                // a call is inside the library: neither the context nor that slot's blocks may go
                for (RunBinding b : bindings) {
                    if (closing.midCall().stream().noneMatch(m -> m.slot() == b.slot)) {
                        b.free();
                    }
                }
                return true;
            }
            if (!destroyed) {
                return false; // the library still holds a run we do not know of: free nothing it may use
            }
            for (RunBinding b : bindings) {
                b.free();
            }
            callables.freeAll();
            return false;
        } finally {
            LOG.info("closed {}", device.describe());
        }
    }
}

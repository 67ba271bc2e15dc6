package org.ptorun;

import java.lang.ref.Reference;
import java.util.Objects;
import org.ptorun.callable.Direction;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The phase calls of a chip's native runs (lifecycle.md §4): prepare, launch, poll,
 * await, finalize and the blocking run. Each call begins a transition in the
 * {@link SlotTable}, calls the library without any lock but the callable lock's read
 * side (prepare, blocking run), and ends the transition with the result. A failed
 * launch's outcome is decided from its code ({@link SlotTable#launchFailed}); finalize
 * makes one native call, which waits for a running run itself.
 */
final class NativeRuns {

    private static final Logger LOG = LoggerFactory.getLogger(ChipWorker.class);
    private static final int POLL_NOT_READY = 0;
    private static final int POLL_COMPLETE = 1;

    private final ChipDevice device;
    private final SlotTable table;
    private final RunBinding[] bindings;
    private final CallableRegistry callables;
    private final DeviceMemory memory;
    private final boolean concurrentPrepare;

    NativeRuns(ChipDevice device, SlotTable table, RunBinding[] bindings, CallableRegistry callables,
               DeviceMemory memory, boolean concurrentPrepare) {
        this.device = device;
        this.table = table;
        this.bindings = bindings;
        this.callables = callables;
        this.memory = memory;
        this.concurrentPrepare = concurrentPrepare;
    }

    boolean supportsConcurrentPrepare() {
        return concurrentPrepare;
    }

    NativeRun prepare(int callableId, TaskArgs args, CallConfig config, PipelineSlotLease lease, long runId,
                      long dispatchId, AcceptanceWord acceptance) {
        checkRunArguments(callableId, args, config, acceptance);
        checkLeaseShape(lease);
        NativeRun run = new NativeRun(lease.slotId(), lease.generation(), RunEpochs.next(), runId, dispatchId);
        RunBinding b = bindings[run.slot()];
        int rc = PtoError.FAILED.code();
        String message = null;
        callables.beginUse();
        try {
            Direction[] directions = callables.directionsOf(callableId);
            RunBinding.checkArgs(args, directions, memory);
            RunEvents.Prepare event = RunEvents.beginPrepare();
            table.admit(run, noOverlap(config), true, timeoutOf(config));
            try {
                b.bind(run, args, config, acceptance, directions);
                rc = device.api.prepareRun(device.ctx, b.storage(), callableId, b.args(), b.config(), b.descriptor());
                if (rc != 0) {
                    message = device.lastError();
                }
            } finally {
                Reference.reachabilityFence(args);
                Reference.reachabilityFence(acceptance);
                if (event != null) {
                    event.callableId = callableId;
                    event.commitFor(device, run, rc);
                }
                if (rc == 0) {
                    table.prepared(run.slot());
                } else {
                    b.release();
                    table.emptied(run.slot());
                }
            }
        } finally {
            callables.endUse();
        }
        if (rc != 0) {
            throw device.failure("prepare of callable " + callableId, rc, message, run);
        }
        if (LOG.isDebugEnabled()) {
            LOG.debug("prepared {} on {}", run.identity(), device.describe());
        }
        return run;
    }

    void launch(NativeRun run) {
        table.beginLaunch(run);
        RunBinding b = bindings[run.slot()];
        RunEvents.Launch event = RunEvents.beginLaunch();
        int rc;
        try {
            rc = device.api.launchRun(device.ctx, b.storage());
            b.launchedAt = System.nanoTime();
            RunEvents.commit(event, device, run, rc);
        } catch (RuntimeException | Error e) {
            table.launchAborted(run.slot());
            throw e;
        }
        if (rc == 0) {
            table.launched(run.slot());
            if (LOG.isDebugEnabled()) {
                LOG.debug("launched {}", run.identity());
            }
            return;
        }
        String message = device.lastError();
        boolean ended = table.launchFailed(run.slot(), rc, message);
        if (ended) {
            completed(b, run, rc);
        }
        if (LOG.isDebugEnabled()) {
            LOG.debug("launch of {} failed with {}; the run {}", run.identity(), PtoError.nameOf(rc),
                    ended ? "ended (COMPLETE)" : "stays PREPARED");
        }
        throw device.failure("launch", rc, message, run);
    }

    boolean poll(NativeRun run) {
        if (!table.beginObserve(run, "poll")) {
            return true;
        }
        RunBinding b = bindings[run.slot()];
        int rc = PtoError.FAILED.code();
        String message = null;
        try {
            rc = device.api.pollRun(device.ctx, b.storage());
            if (rc < 0) {
                message = device.lastError();
            }
        } finally {
            table.polled(run.slot(), rc == POLL_COMPLETE);
        }
        if (rc == POLL_COMPLETE) {
            completed(b, run, 0);
            return true;
        }
        if (rc == POLL_NOT_READY) {
            return false;
        }
        throw device.failure("poll", rc, message, run);
    }

    void await(NativeRun run) {
        if (!table.beginObserve(run, "await")) {
            return;
        }
        RunBinding b = bindings[run.slot()];
        int rc = PtoError.FAILED.code();
        String message = null;
        try {
            rc = device.api.waitRun(device.ctx, b.storage());
            if (rc != 0) {
                message = device.lastError();
            }
        } finally {
            table.awaited(run.slot(), rc, message);
        }
        completed(b, run, rc);
    }

    void finalizeRun(NativeRun run) {
        finalizeBegun(table.beginFinalize(run));
    }

    /**
     * Drains and releases the run whose finalize began (its slot is FINALIZING, in this
     * thread's call); the slot is EMPTY afterwards whatever happens. One native call:
     * simpler_finalize_run waits for a running run itself.
     */
    void finalizeBegun(SlotTable.Finalizing f) {
        NativeRun run = f.run();
        RunBinding b = bindings[run.slot()];
        int rc = PtoError.FAILED.code();
        String message = null;
        RunEvents.Finalize event = RunEvents.beginFinalize();
        try {
            rc = device.api.finalizeRun(device.ctx, b.storage());
            if (rc != 0) {
                message = device.lastError();
            } else if (f.waitResult() == 0 && f.previous() != SlotTable.Phase.PREPARED) {
                // only a launched run that succeeded produced anything to copy back
                b.copyBack();
            }
        } finally {
            if (f.previous() == SlotTable.Phase.RUNNING) {
                completed(b, run, rc);
            }
            b.release();
            table.emptied(run.slot());
            RunEvents.commit(event, device, run, rc != 0 ? rc : f.waitResult());
        }
        if (LOG.isDebugEnabled()) {
            LOG.debug("finalized {}: {}", run.identity(), PtoError.nameOf(rc != 0 ? rc : f.waitResult()));
        }
        if (rc != 0) {
            throw device.failure("finalize", rc, message, run);
        }
        if (f.waitResult() != 0) {
            throw device.failure("run", f.waitResult(), f.waitMessage(), run);
        }
    }

    /**
     * The blocking composition on a lease's slot, or slot 0 unleased (epoch 0, no
     * generation filter). A registration on this chip waits until it returned.
     */
    void run(int callableId, TaskArgs args, CallConfig config, PipelineSlotLease lease, long runId, long dispatchId,
             AcceptanceWord acceptance) {
        checkRunArguments(callableId, args, config, acceptance);
        if (lease != null) {
            checkLeaseShape(lease);
        }
        NativeRun run = lease == null
                ? new NativeRun(0, 0, 0, runId, dispatchId)
                : new NativeRun(lease.slotId(), lease.generation(), RunEpochs.next(), runId, dispatchId);
        RunBinding b = bindings[run.slot()];
        int rc = PtoError.FAILED.code();
        String message = null;
        callables.beginUse();
        try {
            Direction[] directions = callables.directionsOf(callableId);
            RunBinding.checkArgs(args, directions, memory);
            table.admit(run, noOverlap(config), lease != null, timeoutOf(config));
            try {
                b.bind(run, args, config, acceptance, directions);
                rc = device.api.run(device.ctx, b.storage(), callableId, b.args(), b.config(), b.descriptor());
                if (rc != 0) {
                    message = device.lastError();
                } else {
                    b.copyBack();
                }
            } finally {
                Reference.reachabilityFence(args);
                Reference.reachabilityFence(acceptance);
                b.release();
                table.emptied(run.slot());
            }
        } finally {
            callables.endUse();
        }
        if (LOG.isDebugEnabled()) {
            LOG.debug("ran {}: {}", run.identity(), PtoError.nameOf(rc));
        }
        if (rc != 0) {
            throw device.failure("run of callable " + callableId, rc, message, run);
        }
    }

    /** The run was seen complete: its Completion event. */
    private void completed(RunBinding b, NativeRun run, int code) {
        RunEvents.Completion event = RunEvents.completion();
        if (event != null) {
            event.sinceLaunch = System.nanoTime() - b.launchedAt;
            event.commitFor(device, run, code);
        }
    }

    // ---- argument checks -----------------------------------------------------------------------

    private void checkLeaseShape(PipelineSlotLease lease) {
        Objects.requireNonNull(lease, "lease");
        int depth = bindings.length;
        if (lease.reserved() != 0 || lease.generation() == 0 || lease.slotId() < 0 || lease.slotId() >= depth) {
            throw new IllegalArgumentException(SlotTable.OUTSIDE_CONTRACT + ": " + lease + " (pipeline depth " + depth
                    + "; reserved must be 0 and generation non-zero)");
        }
    }

    /** Why a run may not overlap another, or null: only where the library supports it and no diagnostic is on. */
    private String noOverlap(CallConfig config) {
        if (!concurrentPrepare) {
            return device.variant() + " cannot prepare while a run executes";
        }
        return config.hasDiagnostics() ? "this run has a diagnostic on" : null;
    }

    private static int timeoutOf(CallConfig config) {
        return config.timeoutMs() == 0 ? CallConfig.DEFAULT_TIMEOUT_MS : config.timeoutMs();
    }

    /** What prepare and run refuse before any native call or lock. */
    private void checkRunArguments(int callableId, TaskArgs args, CallConfig config, AcceptanceWord acceptance) {
        Objects.requireNonNull(args, "args");
        Objects.requireNonNull(config, "config");
        CallableRegistry.checkCallableId(callableId);
        config.validateFor(device.variant().arch());
        if (acceptance != null && acceptance.isCaptured()) {
            throw new IllegalArgumentException("the acceptance word is captured by an unfinalized run");
        }
    }
}

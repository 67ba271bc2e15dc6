package org.ptorun;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.TimeUnit;

/**
 * The phase table of one chip (lifecycle.md §4): per pipeline slot the phase of the run
 * it holds, its epoch and lease generation, and whether a call on it is inside the
 * library; the chip's open state; and the lease-generation filter. Pure transitions: no
 * native call, no I/O, one monitor.
 *
 * <p>Invariants, all under the table's monitor (which no caller holds across a native
 * call): a slot is {@link Phase#EMPTY} exactly when it holds no run (epoch 0, no run);
 * a slot whose call is <em>in flight</em> ({@code PREPARING}, {@code LAUNCHING},
 * {@code FINALIZING}, or a poll or await under way) belongs to the one thread that began
 * the call, and every other transition on it is refused until that thread ends the
 * call; a call is begun only while the chip is open, and ending one wakes a closing
 * chip; the newest lease generation a slot has seen never decreases. Phases follow C's
 * {@code NativeRunPhase} (PREPARED, LAUNCHING, RUNNING, COMPLETE) with the three Java
 * adds: EMPTY, PREPARING and FINALIZING.
 */
final class SlotTable {

    enum Phase { EMPTY, PREPARING, PREPARED, LAUNCHING, RUNNING, COMPLETE, FINALIZING }

    private enum State { OPEN, CLOSING, CLOSED }

    static final String OUTSIDE_CONTRACT = "lease is outside the runtime PipelineContract";
    static final String SLOT_OCCUPIED = "slot already owns an unfinished native run";
    static final String NO_PREDECESSOR = "requires an active predecessor before staging a successor";
    static final String STALE_GENERATION = "lease generation is stale";
    static final String WRONG_PHASE = "stale or used in the wrong phase";
    static final String ALREADY_FINALIZED = "stale or already finalized";

    /** A run whose finalize has begun: what the finalizing thread needs of its row. */
    record Finalizing(NativeRun run, Phase previous, int waitResult, String waitMessage) {
    }

    /** A call still inside the library when close gave up waiting for it. */
    record MidCall(int slot, Phase phase, NativeRun run, int timeoutMs) {
    }

    /** What close found once the calls in flight ended (or their bound passed). */
    record Closing(List<Finalizing> outstanding, List<MidCall> midCall) {
    }

    private static final class Row {
        Phase phase = Phase.EMPTY;
        boolean inCall;
        long runEpoch;
        long newestGeneration; // the generation filter's mark: never decreases
        NativeRun run;
        boolean permitsSuccessor;
        int timeoutMs;
        int waitResult;
        String waitMessage;

        void empty() {
            phase = Phase.EMPTY;
            inCall = false;
            runEpoch = 0;
            run = null;
            permitsSuccessor = false;
            waitResult = 0;
            waitMessage = null;
        }
    }

    private final String chip;
    private final Row[] rows;
    private State state = State.OPEN;
    /** Tests: runs (under the monitor) when close starts waiting for calls in flight. */
    private volatile Runnable closeWaitsHook;

    /** @param chip the chip's description, for the messages */
    SlotTable(int depth, String chip) {
        this.chip = Objects.requireNonNull(chip, "chip");
        this.rows = new Row[depth];
        for (int i = 0; i < depth; i++) {
            rows[i] = new Row();
        }
    }

    int depth() {
        return rows.length;
    }

    synchronized boolean isOpen() {
        return state == State.OPEN;
    }

    synchronized Phase phaseOf(int slot) {
        return rows[slot].phase;
    }

    /** The newest generation a slot has seen (0: none). */
    synchronized long newestGeneration(int slot) {
        return rows[slot].newestGeneration;
    }

    synchronized void ensureOpen() {
        if (state != State.OPEN) {
            throw new IllegalStateException(chip + " is closed");
        }
    }

    // ---- prepare (and the blocking run) ----------------------------------------------------

    /**
     * Admits a run into its slot, which becomes PREPARING with the call in flight: the
     * slot is empty, every other occupied slot is an admissible predecessor (RUNNING or
     * COMPLETE, admitting successors, and this run admits overlap), and — if
     * {@code filtered} — the lease generation is not older than the slot's newest.
     *
     * @param noOverlap why this run may not overlap another, or null when it may
     */
    synchronized void admit(NativeRun run, String noOverlap, boolean filtered, int timeoutMs) {
        ensureOpen();
        Row row = rows[run.slot()];
        if (row.phase != Phase.EMPTY) {
            throw new ChipBusyException("prepare refused: " + SLOT_OCCUPIED + " (slot " + run.slot()
                    + " holds run_epoch=" + Long.toUnsignedString(row.runEpoch) + " in phase " + row.phase + ")",
                    PtoError.BUSY.code(), "", run);
        }
        for (int i = 0; i < rows.length; i++) {
            Row other = rows[i];
            if (other == row || other.phase == Phase.EMPTY) {
                continue;
            }
            boolean active = other.phase == Phase.RUNNING || other.phase == Phase.COMPLETE;
            if (noOverlap != null || !other.permitsSuccessor || !active) {
                throw new ChipBusyException("prepare refused: the run in slot " + run.slot() + " " + NO_PREDECESSOR
                        + " (slot " + i + " is " + other.phase
                        + (other.permitsSuccessor ? "" : ", admits no successor")
                        + (noOverlap == null ? "" : ", " + noOverlap) + ")", PtoError.BUSY.code(), "", run);
            }
        }
        if (filtered) {
            if (Long.compareUnsigned(run.generation(), row.newestGeneration) < 0) {
                throw new LeaseRejectedException("prepare refused: " + STALE_GENERATION + " (slot " + run.slot()
                        + " has seen generation " + Long.toUnsignedString(row.newestGeneration) + ")",
                        PtoError.INVALID_ARGUMENT.code(), "", run);
            }
            row.newestGeneration = run.generation();
        }
        row.phase = Phase.PREPARING;
        row.inCall = true;
        row.run = run;
        row.runEpoch = run.runEpoch();
        row.permitsSuccessor = noOverlap == null;
        row.timeoutMs = timeoutMs;
        row.waitResult = 0;
        row.waitMessage = null;
    }

    /** The native prepare succeeded: PREPARING → PREPARED. */
    synchronized void prepared(int slot) {
        Row row = inCall(slot, Phase.PREPARING);
        row.phase = Phase.PREPARED;
        endCall(row);
    }

    /** The run in flight is gone (prepare failed, blocking run returned, finalize returned): → EMPTY. */
    synchronized void emptied(int slot) {
        Row row = rows[slot];
        if (!row.inCall) {
            throw new IllegalStateException("slot " + slot + " has no call in flight (" + row.phase + ")");
        }
        row.empty();
        endCall(row);
    }

    // ---- launch --------------------------------------------------------------------------------

    /** PREPARED → LAUNCHING, call in flight. */
    synchronized void beginLaunch(NativeRun run) {
        Row row = gate(run, "launch", WRONG_PHASE, Phase.PREPARED, Phase.PREPARED, Phase.PREPARED);
        row.phase = Phase.LAUNCHING;
        row.inCall = true;
    }

    /** Launch returned 0: the run crossed its launch marker. LAUNCHING → RUNNING. */
    synchronized void launched(int slot) {
        Row row = inCall(slot, Phase.LAUNCHING);
        row.phase = Phase.RUNNING;
        endCall(row);
    }

    /**
     * Launch failed with {@code code}. BUSY and POISONED refuse before the run starts
     * (native_run_context.c: the claim or the poisoned runner): back to PREPARED, the
     * same token may launch again or be finalized. Any other code is the run's end:
     * COMPLETE with that result.
     *
     * @return true when the run ended (COMPLETE), false when it stays PREPARED
     */
    synchronized boolean launchFailed(int slot, int code, String message) {
        Row row = inCall(slot, Phase.LAUNCHING);
        boolean ended = !leavesPrepared(code);
        if (ended) {
            row.phase = Phase.COMPLETE;
            row.waitResult = code;
            row.waitMessage = message;
        } else {
            row.phase = Phase.PREPARED;
        }
        endCall(row);
        return ended;
    }

    /** The launch call itself threw (not a native code): the run never left PREPARED. */
    synchronized void launchAborted(int slot) {
        Row row = inCall(slot, Phase.LAUNCHING);
        row.phase = Phase.PREPARED;
        endCall(row);
    }

    /** The launch codes that leave a run PREPARED. */
    static boolean leavesPrepared(int code) {
        return code == PtoError.BUSY.code() || code == PtoError.POISONED.code();
    }

    // ---- poll and await --------------------------------------------------------------------------

    /**
     * Begins a poll or an await of a RUNNING or COMPLETE run.
     *
     * @return true when a native call is needed (the call is in flight), false when the
     *         run is already COMPLETE (nothing changes)
     */
    synchronized boolean beginObserve(NativeRun run, String operation) {
        Row row = gate(run, operation, WRONG_PHASE, Phase.RUNNING, Phase.COMPLETE, Phase.COMPLETE);
        if (row.phase == Phase.COMPLETE) {
            return false;
        }
        row.inCall = true;
        return true;
    }

    /** A poll returned: COMPLETE when it said so, else the run stays RUNNING. */
    synchronized void polled(int slot, boolean complete) {
        Row row = inCall(slot, Phase.RUNNING);
        if (complete) {
            row.phase = Phase.COMPLETE;
        }
        endCall(row);
    }

    /** A wait returned with the run's result: RUNNING → COMPLETE. */
    synchronized void awaited(int slot, int result, String message) {
        Row row = inCall(slot, Phase.RUNNING);
        row.phase = Phase.COMPLETE;
        row.waitResult = result;
        row.waitMessage = message;
        endCall(row);
    }

    // ---- finalize and close ----------------------------------------------------------------------

    /** PREPARED, RUNNING or COMPLETE → FINALIZING, call in flight; end it with {@link #emptied}. */
    synchronized Finalizing beginFinalize(NativeRun run) {
        Row row = gate(run, "finalize", ALREADY_FINALIZED, Phase.PREPARED, Phase.RUNNING, Phase.COMPLETE);
        return finalizing(row);
    }

    private static Finalizing finalizing(Row row) {
        Finalizing f = new Finalizing(row.run, row.phase, row.waitResult, row.waitMessage);
        row.phase = Phase.FINALIZING;
        row.inCall = true;
        return f;
    }

    /**
     * Refuses every new call (the chip is CLOSING), waits until no call is in flight or
     * the longest bound of those in flight (timeout + {@code graceMs}) passed, then
     * begins the finalize of every run left PREPARED, RUNNING or COMPLETE. An interrupt
     * does not cut the wait short (the device must not be freed under a live call); it
     * is restored afterwards.
     *
     * @return null when the chip was already closing or closed
     */
    synchronized Closing beginClose(long graceMs) {
        if (state != State.OPEN) {
            return null;
        }
        state = State.CLOSING;
        awaitCallsInFlight(graceMs);
        List<Finalizing> outstanding = new ArrayList<>(rows.length);
        List<MidCall> midCall = new ArrayList<>(0);
        for (int i = 0; i < rows.length; i++) {
            Row row = rows[i];
            if (row.inCall) {
                midCall.add(new MidCall(i, row.phase, row.run, row.timeoutMs));
            } else if (row.phase == Phase.PREPARED || row.phase == Phase.RUNNING || row.phase == Phase.COMPLETE) {
                outstanding.add(finalizing(row));
            }
        }
        return new Closing(List.copyOf(outstanding), List.copyOf(midCall));
    }

    /** The device is released: CLOSING → CLOSED. */
    synchronized void closed() {
        state = State.CLOSED;
    }

    void onCloseWaits(Runnable hook) {
        this.closeWaitsHook = hook;
    }

    private void awaitCallsInFlight(long graceMs) {
        long boundMs = -1;
        for (Row row : rows) {
            if (row.inCall) {
                boundMs = Math.max(boundMs, row.timeoutMs + graceMs);
            }
        }
        if (boundMs < 0) {
            return;
        }
        Runnable hook = closeWaitsHook;
        if (hook != null) {
            hook.run();
        }
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(boundMs);
        boolean interrupted = false;
        while (anyInCall()) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                break;
            }
            try {
                TimeUnit.NANOSECONDS.timedWait(this, left);
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    private boolean anyInCall() {
        for (Row row : rows) {
            if (row.inCall) {
                return true;
            }
        }
        return false;
    }

    // ---- the gate ------------------------------------------------------------------------------

    /** The call on {@code row} returned from the library; a closing chip re-checks. */
    private void endCall(Row row) {
        row.inCall = false;
        if (state != State.OPEN) {
            notifyAll();
        }
    }

    /** The row of a call in flight, which must be in {@code expected}. */
    private Row inCall(int slot, Phase expected) {
        Row row = rows[slot];
        if (!row.inCall || row.phase != expected) {
            throw new IllegalStateException("slot " + slot + " is " + row.phase + (row.inCall ? "" : " with no call")
                    + ", expected a call in flight in " + expected);
        }
        return row;
    }

    /**
     * The row a token names, if it still holds that run (same epoch), is in one of the
     * allowed phases and no other call on it is in flight.
     */
    private Row gate(NativeRun run, String operation, String refusal, Phase a, Phase b, Phase c) {
        Objects.requireNonNull(run, "run");
        ensureOpen();
        if (run.slot() < 0 || run.slot() >= rows.length || run.runEpoch() == 0) {
            throw stale(operation, refusal, run, "no slot " + run.slot() + " holds run_epoch="
                    + Long.toUnsignedString(run.runEpoch()) + " on " + chip);
        }
        Row row = rows[run.slot()];
        if (row.runEpoch != run.runEpoch()) {
            throw stale(operation, refusal, run, row.phase == Phase.EMPTY
                    ? "slot " + run.slot() + " holds no run"
                    : "slot " + run.slot() + " holds run_epoch=" + Long.toUnsignedString(row.runEpoch));
        }
        if (row.inCall) {
            throw stale(operation, refusal, run, "another call on this run is in progress (phase " + row.phase + ")");
        }
        if (row.phase != a && row.phase != b && row.phase != c) {
            throw stale(operation, refusal, run, "the run is " + row.phase);
        }
        return row;
    }

    private static StaleRunException stale(String operation, String refusal, NativeRun run, String detail) {
        return new StaleRunException(operation + " refused: the token is " + refusal + " (" + detail + ")",
                PtoError.WRONG_PHASE.code(), "", run);
    }
}

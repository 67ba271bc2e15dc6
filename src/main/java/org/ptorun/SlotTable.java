package org.ptorun;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.TimeUnit;

/**
 * The phase table of one chip (lifecycle.md §4): per pipeline slot the phase of the run
 * it holds, its epoch and lease generation, and whether a call on it is inside the
 * library; the chip's open state; and the lease-generation filter. Pure transitions: no
 * native call, no I/O.
 *
 * <p>Invariants: a slot is {@link Phase#EMPTY} exactly when it holds no run (epoch 0, no
 * run); a slot whose call is <em>in flight</em> ({@code PREPARING}, {@code LAUNCHING},
 * {@code FINALIZING}, or a poll or await under way) belongs to the one thread that began
 * the call, and every other transition on it is refused until that thread ends the
 * call; a call is begun only while the chip is open, and ending one wakes a closing
 * chip; the newest lease generation a slot has seen never decreases. Phases follow C's
 * {@code NativeRunPhase} (PREPARED, LAUNCHING, RUNNING, COMPLETE) with the three Java
 * adds: EMPTY, PREPARING and FINALIZING.
 *
 * <p>How (a trivial run makes eight transitions, so each is one atomic step on one
 * word): each slot's phase, in-flight bit and successor permission live in one
 * {@code word}, with the count of runs the slot admitted, so a word never repeats.
 * A call begins with a compare-and-set of that word (the token's epoch read in between:
 * a slot that admitted another run since has another word) and ends with a plain
 * volatile store by the thread that holds it; the fields beside the word are written
 * only by that thread, before the store that publishes them. Admission and close take
 * the table's monitor, so they exclude each other; admission reads the other slots'
 * words, each read one consistent snapshot of its slot. A call begun as close starts
 * sees the chip closing right after its compare-and-set and gives the slot back; close
 * waits (on the monitor) for every call in flight, and an ending call that sees the chip
 * closing wakes it.
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

    // a row's word: bits 0-2 the phase, bit 3 a call in flight, bit 4 admits a successor, the rest admissions
    private static final long PHASE_MASK = 0x7;
    private static final long IN_CALL = 1L << 3;
    private static final long PERMITS_SUCCESSOR = 1L << 4;
    private static final int ADMISSIONS_SHIFT = 5;
    private static final Phase[] PHASES = Phase.values();

    private static Phase phase(long word) {
        return PHASES[(int) (word & PHASE_MASK)];
    }

    private static boolean inCall(long word) {
        return (word & IN_CALL) != 0;
    }

    /** The word with its phase replaced and the call flag as given. */
    private static long with(long word, Phase phase, boolean inCall) {
        return (word & ~(PHASE_MASK | IN_CALL)) | phase.ordinal() | (inCall ? IN_CALL : 0);
    }

    private static final VarHandle WORD;

    static {
        try {
            WORD = MethodHandles.lookup().findVarHandle(Row.class, "word", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private static final class Row {
        volatile long word;       // EMPTY, no call, no admission yet
        volatile long runEpoch;   // read by any thread's gate before its compare-and-set
        // written by the thread holding the row's call, published by the store that ends it
        NativeRun run;
        int timeoutMs;
        int waitResult;
        String waitMessage;
        long newestGeneration;    // the generation filter's mark (under the monitor): never decreases

        boolean tryBegin(long seen, long next) {
            return WORD.compareAndSet(this, seen, next);
        }
    }

    private final String chip;
    private final Row[] rows;
    private volatile State state = State.OPEN;
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

    boolean isOpen() {
        return state == State.OPEN;
    }

    Phase phaseOf(int slot) {
        return phase(rows[slot].word);
    }

    /** The newest generation a slot has seen (0: none). */
    synchronized long newestGeneration(int slot) {
        return rows[slot].newestGeneration;
    }

    void ensureOpen() {
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
        long word = row.word;
        if (phase(word) != Phase.EMPTY) {
            throw new ChipBusyException("prepare refused: " + SLOT_OCCUPIED + " (slot " + run.slot()
                    + " holds run_epoch=" + Long.toUnsignedString(row.runEpoch) + " in phase " + phase(word) + ")",
                    PtoError.BUSY.code(), "", run);
        }
        for (int i = 0; i < rows.length; i++) {
            long other = rows[i].word;
            Phase phase = phase(other);
            if (rows[i] == row || phase == Phase.EMPTY) {
                continue;
            }
            boolean active = phase == Phase.RUNNING || phase == Phase.COMPLETE;
            boolean permits = (other & PERMITS_SUCCESSOR) != 0;
            if (noOverlap != null || !permits || !active) {
                throw new ChipBusyException("prepare refused: the run in slot " + run.slot() + " " + NO_PREDECESSOR
                        + " (slot " + i + " is " + phase + (permits ? "" : ", admits no successor")
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
        row.run = run;
        row.runEpoch = run.runEpoch();
        row.timeoutMs = timeoutMs;
        row.waitResult = 0;
        row.waitMessage = null;
        // only admission (under this monitor) moves a row out of EMPTY, and no call begins on an EMPTY row
        long admitted = ((word >>> ADMISSIONS_SHIFT) + 1) << ADMISSIONS_SHIFT;
        row.word = admitted | Phase.PREPARING.ordinal() | IN_CALL | (noOverlap == null ? PERMITS_SUCCESSOR : 0);
    }

    /** The native prepare succeeded: PREPARING → PREPARED. */
    void prepared(int slot) {
        end(heldRow(slot, Phase.PREPARING), Phase.PREPARED);
    }

    /** The run in flight is gone (prepare failed, blocking run returned, finalize returned): → EMPTY. */
    void emptied(int slot) {
        Row row = rows[slot];
        if (!inCall(row.word)) {
            throw new IllegalStateException("slot " + slot + " has no call in flight (" + phase(row.word) + ")");
        }
        row.run = null;
        row.runEpoch = 0;
        row.waitResult = 0;
        row.waitMessage = null;
        end(row, Phase.EMPTY);
    }

    // ---- launch --------------------------------------------------------------------------------

    /** PREPARED → LAUNCHING, call in flight. */
    void beginLaunch(NativeRun run) {
        begin(run, "launch", WRONG_PHASE, Call.LAUNCH);
    }

    /** Launch returned 0: the run crossed its launch marker. LAUNCHING → RUNNING. */
    void launched(int slot) {
        end(heldRow(slot, Phase.LAUNCHING), Phase.RUNNING);
    }

    /**
     * Launch failed with {@code code}. BUSY and POISONED refuse before the run starts
     * (native_run_context.c: the claim or the poisoned runner): back to PREPARED, the
     * same token may launch again or be finalized. Any other code is the run's end:
     * COMPLETE with that result.
     *
     * @return true when the run ended (COMPLETE), false when it stays PREPARED
     */
    boolean launchFailed(int slot, int code, String message) {
        Row row = heldRow(slot, Phase.LAUNCHING);
        boolean ended = !leavesPrepared(code);
        if (ended) {
            row.waitResult = code;
            row.waitMessage = message;
        }
        end(row, ended ? Phase.COMPLETE : Phase.PREPARED);
        return ended;
    }

    /** The launch call itself threw (not a native code): the run never left PREPARED. */
    void launchAborted(int slot) {
        end(heldRow(slot, Phase.LAUNCHING), Phase.PREPARED);
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
    boolean beginObserve(NativeRun run, String operation) {
        return phase(begin(run, operation, WRONG_PHASE, Call.OBSERVE)) == Phase.RUNNING;
    }

    /** A poll returned: COMPLETE when it said so, else the run stays RUNNING. */
    void polled(int slot, boolean complete) {
        end(heldRow(slot, Phase.RUNNING), complete ? Phase.COMPLETE : Phase.RUNNING);
    }

    /** A wait returned with the run's result: RUNNING → COMPLETE. */
    void awaited(int slot, int result, String message) {
        Row row = heldRow(slot, Phase.RUNNING);
        row.waitResult = result;
        row.waitMessage = message;
        end(row, Phase.COMPLETE);
    }

    // ---- finalize and close ----------------------------------------------------------------------

    /** PREPARED, RUNNING or COMPLETE → FINALIZING, call in flight; end it with {@link #emptied}. */
    Finalizing beginFinalize(NativeRun run) {
        Phase previous = phase(begin(run, "finalize", ALREADY_FINALIZED, Call.FINALIZE));
        return finalizing(rows[run.slot()], previous);
    }

    /** What the thread that began a row's finalize needs of it. */
    private static Finalizing finalizing(Row row, Phase previous) {
        return new Finalizing(row.run, previous, row.waitResult, row.waitMessage);
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
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(boundOfCallsInFlight(graceMs));
        boolean waited = false;
        boolean interrupted = false;
        List<Finalizing> outstanding = new ArrayList<>(rows.length);
        List<MidCall> midCall = new ArrayList<>(0);
        for (int i = 0; i < rows.length; i++) {
            Row row = rows[i];
            while (true) {
                long word = row.word;
                Phase phase = phase(word);
                if (inCall(word)) {
                    long left = deadline - System.nanoTime();
                    if (left > 0) {
                        if (!waited) {
                            waited = true;
                            Runnable hook = closeWaitsHook;
                            if (hook != null) {
                                hook.run();
                            }
                        }
                        try {
                            TimeUnit.NANOSECONDS.timedWait(this, left);
                        } catch (InterruptedException e) {
                            interrupted = true;
                        }
                        continue;
                    }
                    MidCall m = new MidCall(i, phase, row.run, row.timeoutMs);
                    if (row.word != word) {
                        continue; // the call ended while its fields were read
                    }
                    midCall.add(m);
                } else if (phase != Phase.EMPTY) {
                    if (!row.tryBegin(word, with(word, Phase.FINALIZING, true))) {
                        continue; // a call that began as close started gave the slot back
                    }
                    outstanding.add(finalizing(row, phase));
                }
                break;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
        return new Closing(List.copyOf(outstanding), List.copyOf(midCall));
    }

    /** The device is released: CLOSING → CLOSED. */
    void closed() {
        state = State.CLOSED;
    }

    void onCloseWaits(Runnable hook) {
        this.closeWaitsHook = hook;
    }

    /** How long close waits: the longest timeout + grace of the calls in flight, else the grace. */
    private long boundOfCallsInFlight(long graceMs) {
        long boundMs = graceMs;
        for (Row row : rows) {
            if (inCall(row.word)) {
                boundMs = Math.max(boundMs, row.timeoutMs + graceMs);
            }
        }
        return boundMs;
    }

    // ---- the gate ------------------------------------------------------------------------------

    /** The calls that begin on a run the token names, and the phases each begins in. */
    private enum Call {
        LAUNCH, OBSERVE, FINALIZE;

        boolean allows(Phase p) {
            switch (this) {
                case LAUNCH:
                    return p == Phase.PREPARED;
                case OBSERVE:
                    return p == Phase.RUNNING || p == Phase.COMPLETE;
                default:
                    return p == Phase.PREPARED || p == Phase.RUNNING || p == Phase.COMPLETE;
            }
        }

        /** The phase the slot is in while the call is in flight. */
        Phase during(Phase p) {
            return this == LAUNCH ? Phase.LAUNCHING : this == FINALIZE ? Phase.FINALIZING : p;
        }
    }

    /**
     * Begins {@code call} on the row the token names, if it still holds that run (same
     * epoch), is in a phase the call allows and no other call on it is in flight. An
     * observation of a COMPLETE run begins nothing.
     *
     * @return the row's word before the call began
     */
    private long begin(NativeRun run, String operation, String refusal, Call call) {
        Objects.requireNonNull(run, "run");
        ensureOpen();
        if (run.slot() < 0 || run.slot() >= rows.length || run.runEpoch() == 0) {
            throw stale(operation, refusal, run, "no slot " + run.slot() + " holds run_epoch="
                    + Long.toUnsignedString(run.runEpoch()) + " on " + chip);
        }
        Row row = rows[run.slot()];
        while (true) {
            long word = row.word;
            long epoch = row.runEpoch; // after the word: a row that admitted another run since has another word
            Phase phase = phase(word);
            if (state != State.OPEN && (epoch != run.runEpoch() || inCall(word))) {
                // close took the run since ensureOpen: that, not the emptied row, is the reason
                throw new IllegalStateException(chip + " is closed");
            }
            if (epoch != run.runEpoch()) {
                throw stale(operation, refusal, run, phase == Phase.EMPTY
                        ? "slot " + run.slot() + " holds no run"
                        : "slot " + run.slot() + " holds run_epoch=" + Long.toUnsignedString(epoch));
            }
            if (inCall(word)) {
                throw stale(operation, refusal, run, "another call on this run is in progress (phase " + phase + ")");
            }
            if (!call.allows(phase)) {
                throw stale(operation, refusal, run, "the run is " + phase);
            }
            if (call == Call.OBSERVE && phase == Phase.COMPLETE) {
                return word;
            }
            if (row.tryBegin(word, with(word, call.during(phase), true))) {
                if (state != State.OPEN) { // close began meanwhile: give the slot back
                    row.word = word;
                    wakeCloser();
                    throw new IllegalStateException(chip + " is closed");
                }
                return word;
            }
        }
    }

    /** Ends the call on {@code row} (this thread holds it): the row is in {@code phase}, no call in flight. */
    private void end(Row row, Phase phase) {
        row.word = with(row.word, phase, false);
        if (state != State.OPEN) {
            wakeCloser();
        }
    }

    private synchronized void wakeCloser() {
        notifyAll();
    }

    /** The row of the call in flight this thread holds, which must be in {@code expected}. */
    private Row heldRow(int slot, Phase expected) {
        Row row = rows[slot];
        long word = row.word;
        if (!inCall(word) || phase(word) != expected) {
            throw new IllegalStateException("slot " + slot + " is " + phase(word) + (inCall(word) ? "" : " with no call")
                    + ", expected a call in flight in " + expected);
        }
        return row;
    }

    private static StaleRunException stale(String operation, String refusal, NativeRun run, String detail) {
        return new StaleRunException(operation + " refused: the token is " + refusal + " (" + detail + ")",
                PtoError.WRONG_PHASE.code(), "", run);
    }
}

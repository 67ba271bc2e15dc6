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
 * {@code NativeRunPhase} (PREPARED, LAUNCHING, RUNNING, ENDED) with the three Java
 * adds: EMPTY, PREPARING and FINALIZING. Every path a phase takes is listed once, in
 * {@link Phase#after(Step)}, and every change of a slot's word goes through
 * {@code move}, which checks it against that table.
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

    /** Where a slot's run is (lifecycle.md §4; docs/java.md, The per-slot phase table). */
    enum Phase {
        EMPTY, PREPARING, PREPARED, LAUNCHING, RUNNING, ENDED, FINALIZING;

        /**
         * The phase {@code step} leads this one to, or null when no path leads there. Every
         * path a slot's phase takes, listed once:
         *
         * <pre>
         * EMPTY      ADMIT, ADMIT_ALONE          → PREPARING
         * PREPARING  PREPARE_OK → PREPARED       EMPTIED → EMPTY
         * PREPARED   LAUNCH → LAUNCHING          FINALIZE, CLOSE → FINALIZING
         * LAUNCHING  LAUNCH_OK → RUNNING         LAUNCH_REFUSED → PREPARED    LAUNCH_FAILED → ENDED
         * RUNNING    OBSERVE, STILL_RUNNING → RUNNING    RUN_ENDED → ENDED    FINALIZE, CLOSE → FINALIZING
         * ENDED      OBSERVE → ENDED (no call begins)    FINALIZE, CLOSE → FINALIZING
         * FINALIZING EMPTIED → EMPTY
         * </pre>
         *
         * A begin step ({@link Step#begins}) is taken only by a slot with no call in flight
         * and leaves the call in flight; an end step only by the thread holding the call,
         * and leaves none. A switch: no allocation, on every call's path.
         */
        Phase after(Step step) {
            return switch (this) {
                case EMPTY -> step == Step.ADMIT || step == Step.ADMIT_ALONE ? PREPARING : null;
                case PREPARING -> switch (step) {
                    case PREPARE_OK -> PREPARED;
                    case EMPTIED -> EMPTY;
                    default -> null;
                };
                case PREPARED -> switch (step) {
                    case LAUNCH -> LAUNCHING;
                    case FINALIZE, CLOSE -> FINALIZING;
                    default -> null;
                };
                case LAUNCHING -> switch (step) {
                    case LAUNCH_OK -> RUNNING;
                    case LAUNCH_REFUSED -> PREPARED;
                    case LAUNCH_FAILED -> ENDED;
                    default -> null;
                };
                case RUNNING -> switch (step) {
                    case OBSERVE, STILL_RUNNING -> RUNNING;
                    case RUN_ENDED -> ENDED;
                    case FINALIZE, CLOSE -> FINALIZING;
                    default -> null;
                };
                case ENDED -> switch (step) {
                    case OBSERVE -> ENDED;
                    case FINALIZE, CLOSE -> FINALIZING;
                    default -> null;
                };
                case FINALIZING -> step == Step.EMPTIED ? EMPTY : null;
            };
        }
    }

    /** What happened to a slot: each step is one call beginning or ending (see {@link Phase#after}). */
    enum Step {
        /** A run was admitted that admits a successor (prepare or a blocking run begins). */
        ADMIT(true),
        /** A run was admitted that admits no successor. */
        ADMIT_ALONE(true),
        /** A launch begins. */
        LAUNCH(true),
        /** A poll or an await begins; of an ENDED run it begins nothing (no native call is needed). */
        OBSERVE(true),
        /** The token's finalize begins. */
        FINALIZE(true),
        /** Close begins the finalize of a run no call holds. */
        CLOSE(true),
        /** The native prepare returned 0. */
        PREPARE_OK(false),
        /** The launch returned 0: the run crossed its launch marker. */
        LAUNCH_OK(false),
        /** The launch was refused before the run started (BUSY, POISONED), or the call itself threw. */
        LAUNCH_REFUSED(false),
        /** The launch returned any other code: the run ended with it. */
        LAUNCH_FAILED(false),
        /** A poll answered that the run has not ended. */
        STILL_RUNNING(false),
        /** A poll answered that the run ended, or a wait returned its result. */
        RUN_ENDED(false),
        /** The run is gone: its prepare failed, the blocking run returned, or its finalize returned. */
        EMPTIED(false);

        /** True when the step begins a call (compare-and-set), false when it ends one (volatile store). */
        final boolean begins;

        Step(boolean begins) {
            this.begins = begins;
        }
    }

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
    private static final long PERMITS_OVERLAP = 1L << 4;
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
        final int slot;
        volatile long word;       // EMPTY, no call, no admission yet; written only by move
        volatile long runEpoch;   // read by any thread's gate before its compare-and-set
        // written by the thread holding the row's call, published by the store that ends it
        NativeRun run;
        int timeoutMs;
        int waitResult;
        String waitMessage;
        long newestGeneration;    // the generation filter's mark (under the monitor): never decreases

        Row(int slot) {
            this.slot = slot;
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
            rows[i] = new Row(i);
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
     * ENDED, admitting successors, and this run admits overlap), and — if
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
            boolean active = phase == Phase.RUNNING || phase == Phase.ENDED;
            boolean permits = (other & PERMITS_OVERLAP) != 0;
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
        // the fields first: the move's store publishes them. Only admission (under this
        // monitor) moves a row out of EMPTY, and no call begins on an EMPTY row: the
        // compare-and-set cannot lose
        row.run = run;
        row.runEpoch = run.runEpoch();
        row.timeoutMs = timeoutMs;
        row.waitResult = 0;
        row.waitMessage = null;
        if (!move(row, word, noOverlap == null ? Step.ADMIT : Step.ADMIT_ALONE, 0, null)) {
            throw new IllegalStateException("slot " + run.slot() + " changed during its admission");
        }
    }

    /** The native prepare succeeded: PREPARING → PREPARED. */
    void prepared(int slot) {
        end(slot, Step.PREPARE_OK, 0, null);
    }

    /** The run in flight is gone (prepare failed, blocking run returned, finalize returned): → EMPTY. */
    void emptied(int slot) {
        end(slot, Step.EMPTIED, 0, null);
    }

    // ---- launch --------------------------------------------------------------------------------

    /** PREPARED → LAUNCHING, call in flight. */
    void beginLaunch(NativeRun run) {
        begin(run, "launch", WRONG_PHASE, Step.LAUNCH);
    }

    /** Launch returned 0: the run crossed its launch marker. LAUNCHING → RUNNING. */
    void launched(int slot) {
        end(slot, Step.LAUNCH_OK, 0, null);
    }

    /**
     * Launch failed with {@code code}. BUSY and POISONED refuse before the run starts
     * (native_run_context.c: the claim or the poisoned runner): back to PREPARED, the
     * same token may launch again or be finalized. Any other code is the run's end:
     * ENDED with that result.
     *
     * @return true when the run ended (ENDED), false when it stays PREPARED
     */
    boolean launchFailed(int slot, int code, String message) {
        boolean ended = !leavesPrepared(code);
        end(slot, ended ? Step.LAUNCH_FAILED : Step.LAUNCH_REFUSED, code, message);
        return ended;
    }

    /** The launch call itself threw (not a native code): the run never left PREPARED. */
    void launchAborted(int slot) {
        end(slot, Step.LAUNCH_REFUSED, 0, null);
    }

    /** The launch codes that leave a run PREPARED. */
    static boolean leavesPrepared(int code) {
        return code == PtoError.BUSY.code() || code == PtoError.POISONED.code();
    }

    // ---- poll and await --------------------------------------------------------------------------

    /**
     * Begins a poll or an await of a RUNNING or ENDED run.
     *
     * @return true when a native call is needed (the call is in flight), false when the
     *         run already ENDED (nothing changes)
     */
    boolean beginObserve(NativeRun run, String operation) {
        return phase(begin(run, operation, WRONG_PHASE, Step.OBSERVE)) == Phase.RUNNING;
    }

    /** A poll returned: ENDED when it said so (a poll knows no result: 0), else the run stays RUNNING. */
    void polled(int slot, boolean ended) {
        end(slot, ended ? Step.RUN_ENDED : Step.STILL_RUNNING, 0, null);
    }

    /** A wait returned with the run's result: RUNNING → ENDED. */
    void awaited(int slot, int result, String message) {
        end(slot, Step.RUN_ENDED, result, message);
    }

    // ---- finalize and close ----------------------------------------------------------------------

    /** PREPARED, RUNNING or ENDED → FINALIZING, call in flight; end it with {@link #emptied}. */
    Finalizing beginFinalize(NativeRun run) {
        Phase previous = phase(begin(run, "finalize", ALREADY_FINALIZED, Step.FINALIZE));
        return finalizing(rows[run.slot()], previous);
    }

    /** What the thread that began a row's finalize needs of it. */
    private static Finalizing finalizing(Row row, Phase previous) {
        return new Finalizing(row.run, previous, row.waitResult, row.waitMessage);
    }

    /**
     * Refuses every new call (the chip is CLOSING), waits until no call is in flight or
     * the longest bound of those in flight (timeout + {@code graceMs}) passed, then
     * begins the finalize of every run left PREPARED, RUNNING or ENDED. An interrupt
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
                    if (!move(row, word, Step.CLOSE, 0, null)) {
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

    // ---- the gate and the one transition --------------------------------------------------------

    /**
     * Begins {@code step} (LAUNCH, OBSERVE or FINALIZE) on the row the token names, if it
     * still holds that run (same epoch), is in a phase the step leaves and no other call
     * on it is in flight. An observation of an ENDED run begins nothing.
     *
     * @return the row's word before the call began
     */
    private long begin(NativeRun run, String operation, String refusal, Step step) {
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
            if (phase.after(step) == null) {
                throw stale(operation, refusal, run, "the run is " + phase);
            }
            if (move(row, word, step, 0, null)) {
                return word;
            }
        }
    }

    /** Ends the call on {@code slot} (this thread holds it) with {@code step}. */
    private void end(int slot, Step step, int result, String message) {
        Row row = rows[slot];
        move(row, row.word, step, result, message);
    }

    /**
     * The one writer of a row's word: takes {@code step} from {@code seen} (the word this
     * thread read) to the phase {@link Phase#after} gives, or refuses. A begin is one
     * compare-and-set, false when another thread changed the word first (read it again):
     * an admission's also counts the admission and sets the successor permission; an
     * observation of an ENDED run writes nothing; a begin of a token's call that sees the
     * chip no longer open afterwards gives the row back ({@code seen} again, waking close)
     * and throws "closed". An end is one volatile store by the thread holding the call,
     * after the fields it publishes: into ENDED, the run's outcome ({@code result},
     * {@code message}); into EMPTY, the run's fields cleared. A step the table does not
     * have from {@code seen}, a begin on a row with a call in flight or an end on one
     * without, is a bug of the caller: {@link IllegalStateException}, nothing written.
     */
    private boolean move(Row row, long seen, Step step, int result, String message) {
        Phase from = phase(seen);
        Phase to = from.after(step);
        if (to == null || inCall(seen) == step.begins) {
            throw refusedMove(row, seen, step);
        }
        if (step.begins) {
            if (to == Phase.ENDED) { // OBSERVE of an ENDED run, the one begin into ENDED
                return true; // the run is observed without a native call: no call begins
            }
            long next = step == Step.ADMIT || step == Step.ADMIT_ALONE
                    ? ((seen >>> ADMISSIONS_SHIFT) + 1) << ADMISSIONS_SHIFT | to.ordinal() | IN_CALL
                            | (step == Step.ADMIT ? PERMITS_OVERLAP : 0)
                    : with(seen, to, true);
            if (!WORD.compareAndSet(row, seen, next)) {
                return false;
            }
            if (step != Step.CLOSE && state != State.OPEN) { // close began meanwhile: give the slot back
                row.word = seen;
                wakeCloser();
                throw new IllegalStateException(chip + " is closed");
            }
            return true;
        }
        if (to == Phase.EMPTY) {
            row.run = null;
            row.runEpoch = 0;
            row.waitResult = 0;
            row.waitMessage = null;
        } else if (to == Phase.ENDED) {
            row.waitResult = result;
            row.waitMessage = message;
        }
        row.word = with(seen, to, false);
        if (state != State.OPEN) {
            wakeCloser();
        }
        return true;
    }

    private synchronized void wakeCloser() {
        notifyAll();
    }

    /** Why {@link #move} refused: the row's phase, whether a call holds it, and what the step needs. */
    private static IllegalStateException refusedMove(Row row, long seen, Step step) {
        StringBuilder from = new StringBuilder();
        for (Phase p : PHASES) {
            if (p.after(step) != null) {
                from.append(from.length() == 0 ? "" : " or ").append(p);
            }
        }
        return new IllegalStateException("slot " + row.slot + " is " + phase(seen)
                + (inCall(seen) ? " with a call in flight" : " with no call") + ", expected "
                + (step.begins ? "no call in flight in " : "a call in flight in ") + from + " for " + step);
    }

    private static StaleRunException stale(String operation, String refusal, NativeRun run, String detail) {
        return new StaleRunException(operation + " refused: the token is " + refusal + " (" + detail + ")",
                PtoError.WRONG_PHASE.code(), "", run);
    }
}

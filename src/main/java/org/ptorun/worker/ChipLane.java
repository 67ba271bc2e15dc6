package org.ptorun.worker;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CancellationException;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;
import org.ptorun.AcceptanceWord;
import org.ptorun.ChipBusyException;
import org.ptorun.ChipCrashedException;
import org.ptorun.ChipIsolation;
import org.ptorun.ChipPoisonedException;
import org.ptorun.ChipWorker;
import org.ptorun.OverlapNotNowException;
import org.ptorun.PipelineSlotPool;
import org.ptorun.PtoError;
import org.ptorun.RunReport;
import org.ptorun.callable.ChipCallable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One chip's lane: its {@link LaneState}, the run launched on it and the successor
 * prepared behind it.
 *
 * <p><b>The lane's rule</b> (stated here only; enforced by {@link #requireDriver}): one
 * thread at a time <em>drives</em> the lane — it holds the lane's drive, and only it
 * changes the lane's state (through {@link LaneState#on}, never directly) and makes the
 * native calls that move the lane's runs: prepare, launch, poll, finalize and
 * registration. The drive is taken, never waited for, by three kinds of thread: the
 * lane's dispatcher (background mode); an enqueuing thread that finds the lane idle
 * ({@link #driveEnqueued}: it drives its own run, so a lone short run makes no thread
 * hand-off); and, in caller-driven mode, the thread holding the Worker's drive. Only the
 * Worker's close waits for it, to close the chip. One native call is made off the drive:
 * {@link DeviceWait} waits in the library ({@code simpler_wait_run}) on the lane's
 * running run, which moves nothing and may run beside the driver's poll. A thread that
 * leaves the drive with work behind it (a running run, a queued item) or after the stop
 * posts the lane's event, so the dispatcher takes over. Other threads only admit work
 * ({@link AdmissionQueue}) and read {@link #isPoisoned()} and the memory figure.
 */
final class ChipLane {

    private static final Logger LOG = LoggerFactory.getLogger(ChipLane.class);

    /**
     * How long a driver spins (polling without blocking) before it parks: about one
     * trivial run's execution or one caller's turn-around. Spinning there saves the two
     * thread hand-offs of a park; beyond it the driver parks, so an idle lane burns no CPU.
     */
    static final long SPIN_NANOS = 50_000;

    /**
     * One turn of a bounded spin. A yield, not {@code Thread.onSpinWait()}: a run involves
     * three threads (caller, driver, the device's executor) on as few as two cores, and a
     * spinner that keeps its core delays the very thread it waits for (measured with
     * {@code ptorun bench --worker}: 27 000 runs/s yielding, 12 000–18 000 busy-spinning).
     */
    static void pause() {
        Thread.yield();
    }

    /** Replaced only by the driver's {@link #restart()}, under this (health() reads it so). */
    volatile ChipWorker chip;
    final int index;
    private final AdmissionQueue queue;
    private final DrainLedger ledger;
    final PipelineSlotPool pool;
    private final AcceptanceWord[] words;
    /** Overlap: a successor may be prepared while a run executes (depth 2 and the library supports it). */
    private final boolean overlaps;
    private DeviceWait deviceWait; // replaced with the chip
    /** Opens a fresh chip on the lane's device (process isolation); null: the lane never restarts. */
    private final Supplier<ChipWorker> reopen;
    private final RestartPolicy policy;
    /** When the restarts within the policy's window happened (driver-owned). */
    private final ArrayDeque<Long> restartTimes = new ArrayDeque<>();
    /** What the Worker registered on this chip, in order: what a restarted chip gets again (driver-owned). */
    private final Map<Integer, ChipCallable> registered = new LinkedHashMap<>();
    private volatile int restarts;
    private volatile String down = "";
    /** Held by the lane's driver (the lane's rule, above). */
    private final ReentrantLock drive = new ReentrantLock();

    // driver-owned (state is volatile for isPoisoned and for an enqueuer's look)
    private volatile LaneState state = LaneState.IDLE;
    private RunTicket active;     // launched, not finalized (LAUNCHED, LAUNCHED_ALONE, PIPELINED)
    private RunTicket successor;  // prepared, not launched (PREPARED, PIPELINED)
    private long launches;
    private long stepMark;

    private long committedAtClose; // guarded by this

    ChipLane(ChipWorker chip, int index, int requestedDepth, AdmissionQueue queue, DrainLedger ledger) {
        this(chip, index, requestedDepth, queue, ledger, null, RestartPolicy.NEVER);
    }

    ChipLane(ChipWorker chip, int index, int requestedDepth, AdmissionQueue queue, DrainLedger ledger,
             Supplier<ChipWorker> reopen, RestartPolicy policy) {
        this.chip = chip;
        this.reopen = reopen;
        this.policy = policy;
        this.index = index;
        this.queue = queue;
        this.ledger = ledger;
        int depth = Math.min(requestedDepth, chip.pipelineDepth());
        this.pool = new PipelineSlotPool(depth);
        this.words = new AcceptanceWord[depth];
        for (int i = 0; i < depth; i++) {
            words[i] = AcceptanceWord.allocate();
        }
        this.overlaps = depth == 2 && chip.supportsOverlap();
        this.deviceWait = new DeviceWait(chip, () -> queue.post(index));
    }

    boolean isPoisoned() {
        return state == LaneState.POISONED;
    }

    LaneState state() {
        return state;
    }

    /** True while a launched run is not finalized: the driver's next move waits on the device. */
    boolean holdsLaunchedRun() {
        return state.holdsLaunchedRun();
    }

    private void to(LaneState.Event e) {
        state = state.on(e);
    }

    // ---- the drive -----------------------------------------------------------------------------

    /** Takes the lane's drive if no thread holds it; never waits. */
    boolean tryDrive() {
        return drive.tryLock();
    }

    /** Gives the drive back (the caller posts the lane's event when it leaves work behind). */
    void releaseDrive() {
        drive.unlock();
    }

    /** The lane's rule: only the thread holding the drive moves the lane's runs. */
    private void requireDriver() {
        if (!drive.isHeldByCurrentThread()) {
            throw new IllegalStateException("thread \"" + Thread.currentThread().getName()
                    + "\" does not drive the lane of device " + chip.deviceId());
        }
    }

    /** True when the driver that just left must hand the lane to the dispatcher. */
    private boolean leavesWork() {
        return state != LaneState.IDLE && state != LaneState.POISONED && state != LaneState.CLOSED
                || queue.hasWork(index) || queue.isStopping();
    }

    // ---- driving -------------------------------------------------------------------------------

    /**
     * Background mode, on the thread that just admitted {@code own} (not yet announced to
     * the dispatcher): if the lane is idle and no thread drives it, drives it — prepares
     * and launches the head of the queue (normally {@code own}), polls the running run for
     * up to {@link #SPIN_NANOS} and finalizes it once ended — and then announces what it
     * leaves, if anything, to the dispatcher. Otherwise only announces {@code own}. A lone
     * short run is thus prepared, launched, finalized and completed on its enqueuing
     * thread, with no thread hand-off; a longer one goes on with the dispatcher.
     */
    void driveEnqueued(RunTicket own) {
        if (state != LaneState.IDLE || !tryDrive()) {
            queue.post(index);
            return;
        }
        try {
            long deadline = System.nanoTime() + SPIN_NANOS;
            while (true) {
                int moved = driveStep();
                // bounded even while others' runs keep coming: what is left goes to the dispatcher
                if (own.isDone() || moved == 0 && !holdsLaunchedRun() || System.nanoTime() - deadline >= 0) {
                    break;
                }
                if (moved == 0) {
                    pause();
                }
            }
        } finally {
            releaseDrive();
        }
        if (leavesWork()) {
            queue.post(index);
        }
    }

    /** {@link #step}, a driver error failing the lane instead of escaping. */
    private int driveStep() {
        try {
            return step();
        } catch (RuntimeException | Error e) {
            failLane(e);
            return 1;
        }
    }

    /**
     * Background mode: the dispatcher's life. It drives the lane whenever no other thread
     * does; it ends once admission stopped and, holding the drive, it finds the lane with
     * nothing left, or when interrupted while idle (the queue starts a new dispatcher at
     * the lane's next event).
     */
    void dispatch() {
        while (true) {
            long seen = queue.eventCount(index);
            if (tryDrive()) {
                boolean finished;
                try {
                    while (true) {
                        seen = queue.eventCount(index); // before the last look for work
                        if (driveStep() > 0) {
                            continue;
                        }
                        if (!holdsLaunchedRun()) {
                            break;
                        }
                        try {
                            waitForDevice();
                        } catch (RuntimeException | Error e) {
                            failLane(e);
                        }
                    }
                    finished = queue.isStopping() && !queue.hasWork(index);
                } finally {
                    releaseDrive();
                }
                if (finished) {
                    return;
                }
                if (spinForWork()) {
                    continue;
                }
            }
            // failing the drive: the thread holding it posts when it leaves work behind
            if (!queue.awaitEventOrEnd(index, seen)) {
                return;
            }
        }
    }

    /**
     * The dispatcher met an error the lane has no transition for (a bug, or the library
     * broke its contract): rather than die and leave drain() waiting forever, it finalizes
     * what it holds, fails those runs with the error, and serves the chip as poisoned.
     */
    private void failLane(Throwable e) {
        LOG.error("the dispatcher of device {} failed in state {}; the chip takes no more runs", chip.deviceId(),
                state, e);
        for (RunTicket t : new RunTicket[] {active, successor}) {
            if (t != null && !t.isDone()) {
                RuntimeException cause = new IllegalStateException("the dispatcher of device " + chip.deviceId()
                        + " failed while " + t + " was in flight", e);
                if (t.run != null) {
                    abandon(t, cause);
                } else {
                    complete(t, cause, false);
                }
            }
        }
        active = null;
        successor = null;
        to(LaneState.Event.FAIL);
    }

    /** A caller's next run usually comes within microseconds of its previous result: look before parking. */
    private boolean spinForWork() {
        long deadline = System.nanoTime() + SPIN_NANOS;
        do {
            if (queue.hasWork(index) || queue.isStopping()) {
                return true;
            }
            pause();
        } while (System.nanoTime() - deadline < 0);
        return false;
    }

    /**
     * Every move possible without blocking: finalizes the running run once it ended,
     * launches the prepared one, stages a successor, takes queued runs and registrations,
     * fails queued work fast on a poisoned chip.
     *
     * @return how many runs and registrations advanced (each counted once per call)
     */
    int step() {
        requireDriver();
        long mark = ++stepMark;
        int advanced = 0;
        while (true) {
            switch (state) {
                case CLOSED:
                    return advanced;
                case POISONED:
                    return advanced + failQueuedFast();
                case IDLE: {
                    if (unhealthy()) {
                        if (!restart()) {
                            poison();
                        }
                        continue;
                    }
                    Object head = queue.take(index, false);
                    if (head == null) {
                        return advanced;
                    }
                    advanced++;
                    if (head instanceof Registration r) {
                        apply(r);
                        continue;
                    }
                    RunTicket t = (RunTicket) head;
                    t.pollMark = mark;
                    if (prepare(t)) {
                        successor = t;
                        to(LaneState.Event.PREPARE);
                    }
                    continue;
                }
                case PREPARED: {
                    RunTicket p = successor;
                    successor = null;
                    advanced += mark(p, mark);
                    if (unhealthy()) {
                        abandon(p, heldFailure(p));
                        to(LaneState.Event.ABANDON);
                    } else if (ledger.cancelling()) {
                        abandon(p, null);
                        to(LaneState.Event.ABANDON);
                    } else if (launch(p)) {
                        active = p;
                        to(overlaps && !p.config.hasDiagnostics() ? LaneState.Event.LAUNCH
                                : LaneState.Event.LAUNCH_ALONE);
                    } else {
                        to(LaneState.Event.ABANDON);
                    }
                    continue;
                }
                case LAUNCHED: {
                    if (activeEnded()) {
                        advanced += mark(active, mark);
                        finalizeActive();
                        continue;
                    }
                    if (ledger.cancelling() || unhealthy()) {
                        to(LaneState.Event.STOP_STAGING);
                        continue;
                    }
                    Object next = queue.take(index, true);
                    if (next == null) {
                        return advanced;
                    }
                    if (next == AdmissionQueue.NOT_STAGEABLE) {
                        to(LaneState.Event.STOP_STAGING); // a registration or a diagnostic run waits for the finalize
                        continue;
                    }
                    RunTicket s = (RunTicket) next;
                    advanced += mark(s, mark);
                    stage(s);
                    continue;
                }
                case LAUNCHED_ALONE:
                    if (activeEnded()) {
                        advanced += mark(active, mark);
                        finalizeActive();
                        continue;
                    }
                    return advanced;
                case PIPELINED:
                    if (ledger.cancelling()) {
                        RunTicket s = successor;
                        successor = null;
                        advanced += mark(s, mark);
                        abandon(s, null);
                        to(LaneState.Event.ABANDON);
                        continue;
                    }
                    if (activeEnded()) {
                        advanced += mark(active, mark);
                        finalizeActive();
                        continue;
                    }
                    return advanced;
                default:
                    throw new IllegalStateException("lane state " + state);
            }
        }
    }

    private static int mark(RunTicket t, long mark) {
        if (t.pollMark == mark) {
            return 0;
        }
        t.pollMark = mark;
        return 1;
    }

    /**
     * The lane has a running run and nothing else to do now ({@link #step} returned 0):
     * spins up to {@link #SPIN_NANOS} polling it; then, if a successor could still be
     * staged, hands the library's wait to {@link DeviceWait} and parks on the lane's events
     * (the run's end, an admission, close); otherwise finalizes the run, which waits for it
     * itself — one wait, no separate await before the finalize.
     */
    void waitForDevice() {
        requireDriver();
        RunTicket a = active;
        if (!deviceWait.inFlight()) {
            long deadline = System.nanoTime() + SPIN_NANOS;
            do {
                if (polledEnded(a) || (state == LaneState.LAUNCHED && queue.hasWork(index))) {
                    return;
                }
                pause();
            } while (System.nanoTime() - deadline < 0);
        }
        if (state == LaneState.LAUNCHED || deviceWait.inFlight()) {
            long seen = queue.eventCount(index);
            if (!deviceWait.inFlight()) {
                deviceWait.watch(a);
            }
            if (deviceWait.ended() || (state == LaneState.LAUNCHED && queue.hasWork(index))
                    || (state == LaneState.PIPELINED && ledger.cancelling())) {
                return;
            }
            queue.awaitEvent(index, seen);
            return;
        }
        finalizeActive();
    }

    /** Has the running run's execution ended? Never blocks. */
    private boolean activeEnded() {
        if (deviceWait.inFlight()) {
            return deviceWait.takeEnded() != null;
        }
        return polledEnded(active);
    }

    private boolean polledEnded(RunTicket t) {
        try {
            return chip.poll(t.run);
        } catch (RuntimeException e) {
            return true; // finalize reports it
        }
    }

    private boolean unhealthy() {
        return !chip.isHealthy() && !chip.isClosed();
    }

    // ---- one run's phases (the driver) ------------------------------------------------------------

    private void apply(Registration r) {
        try {
            chip.registerCallable(r.id(), r.callable());
            registered.put(r.id(), r.callable());
            r.done().complete(null);
        } catch (RuntimeException e) {
            r.done().completeExceptionally(e);
        }
        ledger.registrationDone();
    }

    /** Takes a free slot and its word (reset: its previous run is finalized) and prepares; false: the run failed. */
    private boolean prepare(RunTicket t) {
        t.lease = pool.tryAcquire().orElseThrow(
                () -> new IllegalStateException("no free pipeline slot on device " + chip.deviceId()));
        AcceptanceWord word = words[t.lease.slotId()];
        word.reset();
        t.capturedWord(word);
        t.prepareStart = System.nanoTime();
        try {
            t.run = chip.prepare(t.callableId, t.args, t.chipConfig(), t.lease, t.runId(), t.dispatchId(), word);
            t.prepareEnd = System.nanoTime();
            t.args = null; // written off-heap: the Worker no longer needs it
            return true;
        } catch (ChipBusyException | OverlapNotNowException e) {
            if (state == LaneState.LAUNCHED) {
                throw e; // stage() decides
            }
            t.prepareEnd = System.nanoTime();
            complete(t, e, false);
            return false;
        } catch (RuntimeException e) {
            t.prepareEnd = System.nanoTime();
            complete(t, e, false);
            return false;
        }
    }

    /**
     * Prepares {@code t} as the successor of the running run. A chip that cannot take it
     * beside that run — busy, or "not now" ({@link OverlapNotNowException}: it does not fit
     * the working memory the running run is bound to) — gets it back at the queue's head,
     * and the lane stops staging: {@code t} is prepared on the one-at-a-time path once the
     * running run is finalized, and its future never sees the refusal.
     */
    private void stage(RunTicket t) {
        try {
            if (prepare(t)) {
                successor = t;
                to(LaneState.Event.STAGE);
            }
        } catch (ChipBusyException | OverlapNotNowException e) {
            if (LOG.isDebugEnabled()) {
                LOG.debug("{} is prepared after the running run is finalized: {}", t, e.getMessage());
            }
            // not stageable behind this run: it runs after it, in order
            pool.release(t.lease);
            t.lease = null;
            t.capturedWord(null);
            queue.pushBack(index, t);
            to(LaneState.Event.STOP_STAGING);
        }
    }

    /** Launches a prepared run; on failure the run is finalized and its future failed (false). */
    private boolean launch(RunTicket t) {
        if (t.word().isAccepted()) { // the library broke the contract: do not launch, and say so
            abandon(t, new IllegalStateException("acceptance word set before the launch of " + t.run.identity()));
            return false;
        }
        t.launchStart = System.nanoTime();
        try {
            chip.launch(t.run);
            t.launchEnd = System.nanoTime();
            t.launched = true;
            t.launchOrdinal = ++launches;
            return true;
        } catch (RuntimeException e) {
            t.launchEnd = System.nanoTime();
            abandon(t, e);
            return false;
        }
    }

    /**
     * Finalizes a run that will not (or did not) execute, completing it with {@code cause}
     * (null: cancelled by close under CANCEL_QUEUED, a {@link RunCancelledException}).
     */
    private void abandon(RunTicket t, RuntimeException cause) {
        t.finalizeStart = System.nanoTime();
        try {
            chip.finalizeRun(t.run);
        } catch (RuntimeException e) {
            if (cause != null && e != cause) {
                cause.addSuppressed(e);
            }
        }
        t.finalizeEnd = System.nanoTime();
        complete(t, cause, false);
    }

    /**
     * Finalizes the running run (waiting for it if it still executes) and completes its
     * future. Its execution ended when the library says it ended on the device (the
     * report), not when this driver noticed — a finalize that waited included.
     */
    private void finalizeActive() {
        RunTicket t = active;
        active = null;
        t.finalizeStart = System.nanoTime();
        RuntimeException failure = null;
        try {
            t.report = chip.finalizeRun(t.run);
        } catch (RuntimeException e) {
            failure = e;
        }
        t.finalizeEnd = System.nanoTime();
        to(LaneState.Event.FINALIZE);
        complete(t, failure, failure == null);
    }

    /** Completes the run's future on this thread (see WorkerFuture), gives its slot back, books it. */
    private void complete(RunTicket t, RuntimeException failure, boolean succeeded) {
        AcceptanceWord word = t.word();
        t.finish(word != null && word.isAccepted());
        if (t.lease != null) {
            pool.release(t.lease);
        }
        Throwable outcome;
        RunResult result = null;
        if (succeeded) {
            RunReport r = t.report;
            result = new RunResult(t.run, chip.deviceId(), t.launchOrdinal, new RunTimings(t.enqueuedAt,
                    t.prepareStart, t.prepareEnd, t.launchStart, t.launchEnd, r.executionEnd(), t.finalizeStart,
                    t.finalizeEnd), r.peakDeviceMemory(), r.outputFiles());
            t.future().deliver(result);
            outcome = null;
        } else if (failure == null) {
            outcome = new RunCancelledException(t, t.run != null, ShutdownPolicy.CANCEL_QUEUED, ledger.cancelReason());
            t.future().deliverFailure(outcome); // a CancellationException: the future reads as cancelled
        } else {
            queue.runFailed(t, failure);
            t.future().deliverFailure(failure);
            outcome = failure;
        }
        ledger.runFinished(index, t, result, outcome);
    }

    // ---- poisoned chip, restarts ---------------------------------------------------------------------

    private void poison() {
        to(LaneState.Event.POISON);
        if (down.isEmpty()) {
            down = chip.processDeath().orElse("poisoned");
        }
        if (chip.isolation() == ChipIsolation.IN_PROCESS) {
            LOG.warn("device {} is poisoned: its queued runs fail with ChipPoisonedException", chip.deviceId());
        } else {
            LOG.warn("device {} is down ({}): its queued runs fail with ChipPoisonedException", chip.deviceId(),
                    down);
        }
    }

    /** How often the Worker restarted this chip. */
    int restarts() {
        return restarts;
    }

    /** Why the chip stays down; "" while it is not. */
    String down() {
        return down;
    }

    /**
     * The lane holds no run and its chip, in process isolation, turned unhealthy: replaces
     * it with a fresh chip host on the same device as the policy allows (after its backoff,
     * on this driver), registering every callable again. The queued runs stay and run on
     * the new chip. False when the chip stays down ({@link #down} says why).
     */
    private boolean restart() {
        if (reopen == null || chip.isolation() != ChipIsolation.PROCESS) {
            return false;
        }
        String why = chip.processDeath().orElse("its library poisoned it");
        long now = System.nanoTime();
        long window = policy.window().toNanos();
        while (!restartTimes.isEmpty() && now - restartTimes.peekFirst() >= window) {
            restartTimes.removeFirst();
        }
        if (restartTimes.size() >= policy.maxRestarts()) {
            down = why + "; not restarted: " + restartTimes.size() + " restart(s) within " + policy.window()
                    + " already (" + policy + ")";
            return false;
        }
        long backoff = policy.backoffBefore(restartTimes.size()).toNanos();
        restartTimes.addLast(now);
        LOG.warn("device {} is unhealthy ({}): restarting it in {} ms", chip.deviceId(), why, backoff / 1_000_000);
        long until = System.nanoTime() + backoff;
        for (long left = backoff; left > 0; left = until - System.nanoTime()) {
            LockSupport.parkNanos(left);
        }
        ChipWorker old = chip;
        deviceWait.stop();
        synchronized (this) {
            try {
                old.close();
            } catch (RuntimeException e) {
                LOG.warn("closing the unhealthy device {} failed", old.deviceId(), e);
            }
        }
        ChipWorker fresh;
        try {
            fresh = reopen.get();
            for (Map.Entry<Integer, ChipCallable> r : registered.entrySet()) {
                fresh.registerCallable(r.getKey(), r.getValue());
            }
        } catch (RuntimeException e) {
            down = why + "; its restart failed: " + e.getMessage();
            LOG.error("restarting device {} failed; it stays down", old.deviceId(), e);
            return false;
        }
        synchronized (this) {
            chip = fresh;
        }
        deviceWait = new DeviceWait(fresh, () -> queue.post(index));
        restarts++;
        LOG.warn("device {} restarted ({} restart(s)); chip host pid {}", fresh.deviceId(), restarts,
                fresh.processId().orElse(0));
        return true;
    }

    private int failQueuedFast() {
        List<Object> items = new ArrayList<>();
        queue.takeAll(index, items);
        for (Object item : items) {
            failQueued(item, item instanceof RunTicket t ? poisonedFailure(t)
                    : new ChipPoisonedException("device " + chip.deviceId() + " is poisoned; registration refused",
                            PtoError.POISONED.code(), "", null));
        }
        return items.size();
    }

    /**
     * A run the chip held (prepared, not launched) when it turned unhealthy: on a chip whose
     * process died it fails with the crash, as every run the crashed chip held does
     * (docs/isolation.md, Restarts); otherwise the chip is poisoned.
     */
    private RuntimeException heldFailure(RunTicket t) {
        java.util.Optional<String> death = chip.processDeath();
        if (death.isEmpty()) {
            return poisonedFailure(t);
        }
        return new ChipCrashedException("device " + chip.deviceId() + " crashed (" + death.get() + "); run_id="
                + t.runId() + " dispatch_id=" + t.dispatchId() + " was prepared there and not launched",
                PtoError.CHIP_CRASHED.code(), death.get(), t.run);
    }

    private ChipPoisonedException poisonedFailure(RunTicket t) {
        return new ChipPoisonedException("device " + chip.deviceId() + " is poisoned; run_id=" + t.runId()
                + " dispatch_id=" + t.dispatchId() + " was not launched", PtoError.POISONED.code(), "", null);
    }

    /**
     * Completes an item that never reached the chip: cancelled ({@code cause} null) or
     * failed. Any thread (close() cancels what it took from the queue).
     */
    void failQueued(Object item, RuntimeException cause) {
        if (item instanceof Registration r) {
            RuntimeException failure = cause;
            if (failure == null) {
                failure = new CancellationException("Worker.close() under ShutdownPolicy.CANCEL_QUEUED cancelled the"
                        + " registration of callable " + r.id() + " before a chip applied it");
                failure.initCause(ledger.cancelReason());
            }
            r.done().completeExceptionally(failure);
            ledger.registrationDone();
            return;
        }
        RunTicket t = (RunTicket) item;
        t.finish(false);
        RuntimeException failure = cause != null ? cause
                : new RunCancelledException(t, false, ShutdownPolicy.CANCEL_QUEUED, ledger.cancelReason());
        if (cause != null) {
            queue.runFailed(t, cause);
        }
        t.future().deliverFailure(failure);
        ledger.runFinished(index, t, null, failure);
    }

    // ---- close ---------------------------------------------------------------------------------------

    /** Now, or as it was just before the Worker closed the chip. */
    long committedDeviceMemory() {
        synchronized (this) {
            if (chip.isClosed()) {
                return committedAtClose;
            }
            return chip.committedDeviceMemory();
        }
    }

    /**
     * Closes the chip, holding the drive for good: waits for a thread still driving (an
     * enqueuer's drive is bounded), then completes whatever a failed driver left behind.
     */
    void closeChip() {
        drive.lock(); // never released: the lane is closed
        deviceWait.stop();
        RunTicket[] held = {active, successor};
        active = null;
        successor = null;
        synchronized (this) { // health() must not query the chip while it closes
            try {
                committedAtClose = chip.isClosed() ? 0 : chip.committedDeviceMemory();
                chip.close(); // finalizes whatever a failed driver left behind
            } catch (RuntimeException e) {
                LOG.warn("closing device {} failed", chip.deviceId(), e);
            }
        }
        for (RunTicket t : held) {
            if (t != null) {
                complete(t, new IllegalStateException("the Worker closed device " + chip.deviceId()
                        + " while " + t + " was in flight"), false);
            }
        }
        to(LaneState.Event.CLOSE);
        for (AcceptanceWord w : words) {
            try {
                w.close();
            } catch (RuntimeException e) {
                LOG.warn("closing an acceptance word of device {} failed", chip.deviceId(), e);
            }
        }
    }
}

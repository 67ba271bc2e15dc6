package org.ptorun.worker;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Executor;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import org.ptorun.AcceptanceWord;
import org.ptorun.CallConfig;
import org.ptorun.ChipBusyException;
import org.ptorun.ChipPoisonedException;
import org.ptorun.ChipWorker;
import org.ptorun.HostRuntime;
import org.ptorun.PipelineSlotPool;
import org.ptorun.PtoError;
import org.ptorun.TaskArgs;
import org.ptorun.Variant;
import org.ptorun.callable.ChipCallable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Enqueue / poll / drain over one or more chips (one {@link ChipWorker} per device id).
 *
 * <pre>{@code
 * try (Worker worker = Worker.builder().variant(v).devices(0, 1).queueCapacity(64).build()) {
 *     worker.register(7, callable);
 *     RunTicket t = worker.enqueue(7, args, CallConfig.DEFAULT);
 *     t.result().thenAcceptAsync(r -> ..., executor);
 *     worker.drain();
 * }
 * }</pre>
 *
 * <p>Each run is assigned a chip at enqueue (see {@link ChipSelection}) and a dispatch id
 * (1, 2, 3, ... per Worker); a chip launches its runs strictly in dispatch order. Where
 * the chip supports a concurrent prepare (depth 2, hbg) the next run is prepared while
 * the current one executes and launched as soon as the current one is finalized.
 *
 * <p>Progress is made either by the caller ({@link #poll()}, {@link #drain()}) or by one
 * background dispatcher thread per chip ({@link Builder#background(boolean)}), which
 * parks while its chip has nothing to do. A run enqueued while its chip's driver waits in
 * the library on the executing run is prepared at once by the enqueuing thread, so that
 * it is staged during that execution. Thread-safe: any thread may call any method.
 */
public final class Worker implements AutoCloseable {

    /** At most this many failures are listed in one {@link DrainReport} (all are counted). */
    public static final int MAX_REPORTED_FAILURES = 1024;

    private static final Logger LOG = LoggerFactory.getLogger(Worker.class);

    private final Lane[] lanes;
    private final int queueCapacity;
    private final boolean background;
    private final ShutdownPolicy shutdownPolicy;
    private final ChipSelection selection;
    private final Executor callbacks;

    /** Guards admission: every lane's queue, the counters, the close state. Never held across a native call. */
    private final ReentrantLock admission = new ReentrantLock();
    private final Condition notFull = admission.newCondition();
    private final Condition idle = admission.newCondition();
    private final Condition closedCondition = admission.newCondition();
    private long nextDispatchId = 1;
    private int queued;          // runs admitted and not yet taken by their chip
    private long pending;        // runs not yet finished plus registrations not yet applied
    private int roundRobin;
    private boolean stopping;
    private boolean closed;
    /** Ids {@link #register} was called for (guarded by admission): what enqueue admits. */
    private final BitSet registeredIds = new BitSet(MAX_CALLABLES);
    private volatile boolean cancelling;
    private long succeededSinceDrain;
    private long failedSinceDrain;
    private List<DrainReport.RunFailure> failuresSinceDrain = new ArrayList<>();

    private final AtomicLong advanceSeq = new AtomicLong();

    private Worker(Builder b, List<ChipWorker> chips) {
        this.queueCapacity = b.queueCapacity;
        this.background = b.background;
        this.shutdownPolicy = b.shutdownPolicy;
        this.selection = b.selection;
        this.callbacks = b.callbacks;
        this.lanes = new Lane[chips.size()];
        for (int i = 0; i < lanes.length; i++) {
            lanes[i] = new Lane(chips.get(i), b.pipelineDepth);
        }
        if (background) {
            for (Lane lane : lanes) {
                lane.dispatcher = new Thread(lane::dispatch, "ptorun-worker-dispatcher-" + lane.chip.deviceId());
                lane.dispatcher.setDaemon(true);
                lane.dispatcher.start();
            }
        }
    }

    public static Builder builder() {
        return new Builder();
    }

    // ---- registration -----------------------------------------------------------------------

    /**
     * Registers {@code callable} under {@code id} on every healthy chip. The library refuses
     * registration while a run is outstanding, so on a chip with runs in flight the
     * registration is queued behind them (runs enqueued later see it; runs enqueued
     * earlier are not disturbed) and applied once they are finalized. In caller-driven
     * mode this call also makes progress like {@link #poll()}, so on an idle Worker the
     * returned future is complete when it returns.
     *
     * @return completes once registered on every chip; exceptionally with the first refusal
     * @throws IllegalStateException after close
     */
    public CompletableFuture<Void> register(int id, ChipCallable callable) {
        Objects.requireNonNull(callable, "callable");
        checkCallableId(id);
        List<CompletableFuture<Void>> parts = new ArrayList<>(lanes.length);
        admission.lock();
        try {
            checkOpenLocked();
            registeredIds.set(id);
            for (Lane lane : lanes) {
                if (lane.poisoned) {
                    continue;
                }
                Registration r = new Registration(id, callable, new CompletableFuture<>());
                lane.queue.add(r);
                pending++;
                parts.add(r.done);
                lane.work.signal();
            }
        } finally {
            admission.unlock();
        }
        if (!background) {
            poll();
        }
        WorkerFuture<Void> registered = new WorkerFuture<>(callbacks);
        CompletableFuture.allOf(parts.toArray(CompletableFuture[]::new)).whenComplete((v, failure) -> {
            if (failure == null) {
                registered.deliver(null);
            } else {
                registered.deliverFailure(failure instanceof CompletionException
                        && failure.getCause() != null ? failure.getCause() : failure);
            }
        });
        return registered;
    }

    // ---- admission ----------------------------------------------------------------------------

    /**
     * Enqueues a run, waiting (parked, interruptibly) while the queue is full.
     *
     * <p>The Worker reads {@code args} when it prepares the run: do not change or reuse
     * the {@code TaskArgs} until the ticket {@link RunTicket#isAccepted() is accepted} or
     * its result is complete; the tensors' data must stay untouched until the result is
     * complete.
     *
     * <p>When the chosen chip waits on its executing run and can take a successor, this
     * thread prepares the run before returning (see the class comment); a prepare failure
     * goes to the run's future, never to the caller.
     *
     * @throws InterruptedException when interrupted while waiting; nothing was admitted
     * @throws ChipPoisonedException when every chip is poisoned
     * @throws IllegalStateException after close
     */
    public RunTicket enqueue(int callableId, TaskArgs args, CallConfig config) throws InterruptedException {
        checkRunArguments(callableId, args, config);
        RunTicket t;
        admission.lockInterruptibly();
        try {
            while (true) {
                checkOpenLocked();
                if (queued < queueCapacity) {
                    t = admitLocked(callableId, args, config);
                    break;
                }
                notFull.await();
            }
        } finally {
            admission.unlock();
        }
        return admitted(t);
    }

    /**
     * Enqueues a run, waiting at most {@code timeout} while the queue is full.
     *
     * @return empty when the queue stayed full
     * @throws InterruptedException when interrupted while waiting; nothing was admitted
     */
    public Optional<RunTicket> enqueue(int callableId, TaskArgs args, CallConfig config, long timeout, TimeUnit unit)
            throws InterruptedException {
        checkRunArguments(callableId, args, config);
        long nanos = unit.toNanos(timeout);
        RunTicket t;
        admission.lockInterruptibly();
        try {
            while (true) {
                checkOpenLocked();
                if (queued < queueCapacity) {
                    t = admitLocked(callableId, args, config);
                    break;
                }
                if (nanos <= 0) {
                    return Optional.empty();
                }
                nanos = notFull.awaitNanos(nanos);
            }
        } finally {
            admission.unlock();
        }
        return Optional.of(admitted(t));
    }

    /** Enqueues a run if the queue has room; never waits. */
    public Optional<RunTicket> tryEnqueue(int callableId, TaskArgs args, CallConfig config) {
        checkRunArguments(callableId, args, config);
        RunTicket t;
        admission.lock();
        try {
            checkOpenLocked();
            if (queued >= queueCapacity) {
                return Optional.empty();
            }
            t = admitLocked(callableId, args, config);
        } finally {
            admission.unlock();
        }
        return Optional.of(admitted(t));
    }

    /**
     * After admission: when the run's chip is parked waiting on its executing run, stage
     * the new run as its successor on this thread (no lock is waited for). Otherwise the
     * chip's driver takes it; without this, a run enqueued while the dispatcher waits in
     * the library would be prepared only after the executing run completed.
     */
    private RunTicket admitted(RunTicket t) {
        Lane lane = laneOf(t);
        if (lane.awaiting && lane.drive.tryLock()) {
            try {
                if (lane.awaiting) {
                    lane.advance();
                }
            } finally {
                lane.drive.unlock();
            }
        }
        return t;
    }

    private static void checkRunArguments(int callableId, TaskArgs args, CallConfig config) {
        checkCallableId(callableId);
        Objects.requireNonNull(args, "args");
        Objects.requireNonNull(config, "config");
    }

    /** Callable ids a chip's registry holds: [0, 64). */
    private static final int MAX_CALLABLES = 64;

    private static void checkCallableId(int id) {
        if (id < 0 || id >= MAX_CALLABLES) {
            throw new IllegalArgumentException("callable id " + id + " is outside [0, " + MAX_CALLABLES + ")");
        }
    }

    private void checkOpenLocked() {
        if (stopping) {
            throw new IllegalStateException("the Worker is closed");
        }
    }

    private RunTicket admitLocked(int callableId, TaskArgs args, CallConfig config) {
        if (!registeredIds.get(callableId)) {
            throw new IllegalArgumentException("callable id " + callableId + " is not registered on this Worker"
                    + " (Worker.register it first)");
        }
        Lane lane = selectLocked();
        long dispatchId = nextDispatchId++;
        RunTicket t = new RunTicket(dispatchId, dispatchId, lane.chip.deviceId(), callableId, args, config,
                System.nanoTime(), callbacks);
        lane.queue.add(t);
        lane.outstanding++;
        queued++;
        pending++;
        lane.work.signal();
        return t;
    }

    private Lane selectLocked() {
        Lane best = null;
        if (selection == ChipSelection.ROUND_ROBIN) {
            for (int i = 0; i < lanes.length && best == null; i++) {
                Lane lane = lanes[(roundRobin + i) % lanes.length];
                if (!lane.poisoned) {
                    best = lane;
                    roundRobin = (roundRobin + i + 1) % lanes.length;
                }
            }
        } else {
            for (Lane lane : lanes) {
                if (!lane.poisoned && (best == null || lane.outstanding < best.outstanding)) {
                    best = lane;
                }
            }
        }
        if (best == null) {
            throw new ChipPoisonedException("every chip of the Worker is poisoned; close it and build a new one",
                    PtoError.POISONED.code(), "", null);
        }
        return best;
    }

    // ---- progress -------------------------------------------------------------------------------

    /**
     * Makes every progress possible without blocking: finalizes completed runs, launches
     * and prepares the next ones, applies queued registrations. A chip another thread is
     * driving is skipped.
     *
     * @return how many runs advanced (were prepared, launched or finalized)
     */
    public int poll() {
        int advanced = 0;
        for (Lane lane : lanes) {
            if (lane.drive.tryLock()) {
                try {
                    advanced += lane.advance();
                } finally {
                    lane.drive.unlock();
                }
            }
        }
        return advanced;
    }

    /**
     * Blocks until every run enqueued so far is finalized (and every queued registration
     * applied), making the progress itself in caller-driven mode. Rethrows nothing: the
     * failures are in the runs' futures and in the report.
     *
     * @return the runs finalized since the previous drain returned
     */
    public DrainReport drain() {
        if (background) {
            admission.lock();
            try {
                while (pending > 0) {
                    idle.awaitUninterruptibly();
                }
            } finally {
                admission.unlock();
            }
        } else {
            driveUntilIdle();
        }
        admission.lock();
        try {
            DrainReport report = new DrainReport(succeededSinceDrain, failedSinceDrain, failuresSinceDrain);
            succeededSinceDrain = 0;
            failedSinceDrain = 0;
            failuresSinceDrain = new ArrayList<>();
            return report;
        } finally {
            admission.unlock();
        }
    }

    /** Caller-driven: advance every chip, parking on a running run when nothing else can move. */
    private void driveUntilIdle() {
        while (pendingCount() > 0) {
            boolean moved = false;
            for (Lane lane : lanes) {
                lane.drive.lock();
                try {
                    lane.advance();
                    moved |= lane.didWork;
                } finally {
                    lane.drive.unlock();
                }
            }
            if (moved) {
                continue;
            }
            boolean waited = false;
            for (Lane lane : lanes) {
                lane.drive.lock();
                try {
                    if (lane.active != null) {
                        lane.awaitActive();
                        waited = true;
                        break;
                    }
                } finally {
                    lane.drive.unlock();
                }
            }
            if (!waited) {
                // another thread holds the last run between two of our looks: park until it reports
                admission.lock();
                try {
                    if (pending > 0) {
                        idle.awaitNanos(TimeUnit.MILLISECONDS.toNanos(1));
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                } finally {
                    admission.unlock();
                }
            }
        }
    }

    private long pendingCount() {
        admission.lock();
        try {
            return pending;
        } finally {
            admission.unlock();
        }
    }

    // ---- observation ------------------------------------------------------------------------------

    /** One entry per chip, in the order of the builder's device ids. */
    public List<ChipHealth> health() {
        long[] memory = new long[lanes.length];
        for (int i = 0; i < lanes.length; i++) {
            memory[i] = lanes[i].committedDeviceMemory(); // a native query: outside the admission lock
        }
        admission.lock();
        try {
            List<ChipHealth> out = new ArrayList<>(lanes.length);
            for (int i = 0; i < lanes.length; i++) {
                Lane lane = lanes[i];
                out.add(new ChipHealth(lane.chip.deviceId(), !lane.poisoned && lane.chip.isHealthy(),
                        lane.outstanding, lane.succeeded, lane.failed, memory[i]));
            }
            return out;
        } finally {
            admission.unlock();
        }
    }

    /** The device ids, in the builder's order. */
    public List<Integer> deviceIds() {
        List<Integer> ids = new ArrayList<>(lanes.length);
        for (Lane lane : lanes) {
            ids.add(lane.chip.deviceId());
        }
        return ids;
    }

    /** Pipeline slots each chip uses (1 or 2). */
    public int pipelineDepth() {
        return lanes[0].pool.depth();
    }

    /**
     * Bytes of device memory committed on all chips now; for a chip the Worker closed, what
     * was committed after its last run was finalized, just before the chip was closed.
     */
    public long committedDeviceMemory() {
        long sum = 0;
        for (Lane lane : lanes) {
            sum += lane.committedDeviceMemory();
        }
        return sum;
    }

    // ---- close ----------------------------------------------------------------------------------

    /**
     * Stops admission (blocked and later enqueues throw {@link IllegalStateException}),
     * then, per the {@link ShutdownPolicy}, runs or cancels the queued runs, finalizes
     * every run prepared or running, completes every future, and closes the chips.
     * Idempotent; a concurrent caller waits until the first one finished.
     */
    @Override
    public void close() {
        List<Object> cancelled = new ArrayList<>();
        admission.lock();
        try {
            if (stopping) {
                while (!closed) {
                    closedCondition.awaitUninterruptibly();
                }
                return;
            }
            stopping = true;
            notFull.signalAll();
            if (shutdownPolicy == ShutdownPolicy.CANCEL_QUEUED) {
                cancelling = true;
                for (Lane lane : lanes) {
                    takeAllLocked(lane, cancelled);
                }
            }
            for (Lane lane : lanes) {
                lane.work.signalAll();
            }
        } finally {
            admission.unlock();
        }
        for (Object item : cancelled) {
            failItem(item, null);
        }
        try {
            if (background) {
                joinDispatchers();
            } else {
                driveUntilIdle();
            }
        } finally {
            for (Lane lane : lanes) {
                lane.closeChip();
            }
            admission.lock();
            try {
                closed = true;
                closedCondition.signalAll();
            } finally {
                admission.unlock();
            }
        }
    }

    private void joinDispatchers() {
        boolean interrupted = false;
        for (Lane lane : lanes) {
            if (lane.dispatcher == Thread.currentThread()) {
                LOG.warn("Worker.close() called on the dispatcher of device {}; not waiting for it (attach"
                        + " continuations with an executor)", lane.chip.deviceId());
                continue;
            }
            while (true) {
                try {
                    lane.dispatcher.join();
                    break;
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    // ---- bookkeeping called by the lanes ----------------------------------------------------------

    private void takeAllLocked(Lane lane, List<Object> into) {
        Object item;
        while ((item = lane.queue.poll()) != null) {
            if (item instanceof RunTicket) {
                queued--;
            }
            into.add(item);
        }
        notFull.signalAll();
    }

    /** Completes a queued item that never reached its chip: cancelled (cause null) or failed. */
    private void failItem(Object item, RuntimeException cause) {
        if (item instanceof Registration r) {
            r.done.completeExceptionally(cause != null ? cause : new CancellationException("the Worker closed"));
            itemDone();
        } else {
            RunTicket t = (RunTicket) item;
            t.finish(false);
            if (cause == null) {
                t.future().deliverCancellation();
            } else {
                t.future().deliverFailure(cause);
            }
            runFinished(laneOf(t), t, cause != null ? cause : new CancellationException("the Worker closed"));
        }
    }

    private Lane laneOf(RunTicket t) {
        for (Lane lane : lanes) {
            if (lane.chip.deviceId() == t.deviceId()) {
                return lane;
            }
        }
        throw new IllegalStateException("no chip " + t.deviceId());
    }

    private void runFinished(Lane lane, RunTicket t, Throwable failure) {
        admission.lock();
        try {
            lane.outstanding--;
            if (failure == null) {
                lane.succeeded++;
                succeededSinceDrain++;
            } else {
                lane.failed++;
                failedSinceDrain++;
                if (failuresSinceDrain.size() < MAX_REPORTED_FAILURES) {
                    failuresSinceDrain.add(new DrainReport.RunFailure(t, failure));
                }
            }
            pendingDoneLocked();
        } finally {
            admission.unlock();
        }
    }

    private void itemDone() {
        admission.lock();
        try {
            pendingDoneLocked();
        } finally {
            admission.unlock();
        }
    }

    private void pendingDoneLocked() {
        if (--pending == 0) {
            idle.signalAll();
        }
    }

    /** The lane's next item, or null; a run taken leaves the queue (room for one more). */
    private Object takeHead(Lane lane, boolean successorOnly) {
        admission.lock();
        try {
            Object head = lane.queue.peek();
            if (head == null) {
                return null;
            }
            if (successorOnly && !(head instanceof RunTicket t && !t.config.hasDiagnostics())) {
                return null;
            }
            lane.queue.poll();
            if (head instanceof RunTicket) {
                queued--;
                notFull.signal();
            }
            return head;
        } finally {
            admission.unlock();
        }
    }

    /** A successor the chip refused to stage goes back to the head of its queue. */
    private void pushBack(Lane lane, RunTicket t) {
        admission.lock();
        try {
            lane.queue.addFirst(t);
            queued++;
        } finally {
            admission.unlock();
        }
    }

    private record Registration(int id, ChipCallable callable, CompletableFuture<Void> done) {
    }

    // ---- one chip -----------------------------------------------------------------------------------

    /**
     * One chip's queue and pipeline. The queue is guarded by the Worker's admission lock;
     * everything else belongs to whoever holds {@link #drive} (a dispatcher, or a thread
     * in poll/drain/close), which is the only thread making native calls for the lane.
     */
    private final class Lane {
        final ChipWorker chip;
        final PipelineSlotPool pool;
        final AcceptanceWord[] words;
        final boolean pipelined;
        final ArrayDeque<Object> queue = new ArrayDeque<>();
        final Condition work = admission.newCondition();
        final ReentrantLock drive = new ReentrantLock();
        final Condition awaitEnded = drive.newCondition();
        volatile boolean poisoned;
        /** A thread waits in the library on {@link #active} without holding drive (written holding drive). */
        volatile boolean awaiting;
        Thread dispatcher;

        // guarded by admission
        long outstanding;
        long succeeded;
        long failed;

        // guarded by drive
        RunTicket active;       // launched (or being launched), not yet finalized
        RunTicket successor;    // prepared while active executes, launched once active is finalized
        boolean stagingRefused; // the chip refused the successor: stage nothing until active is finalized
        boolean didWork;
        long launches;

        long committedAtClose; // guarded by this Lane's monitor

        Lane(ChipWorker chip, int requestedDepth) {
            this.chip = chip;
            int depth = Math.min(requestedDepth, chip.pipelineDepth());
            this.pool = new PipelineSlotPool(depth);
            this.words = new AcceptanceWord[depth];
            for (int i = 0; i < depth; i++) {
                words[i] = AcceptanceWord.allocate();
            }
            this.pipelined = depth == 2 && chip.supportsConcurrentPrepare();
        }

        /** Background mode: advance, park in the library on a running run, or park for work. */
        void dispatch() {
            while (true) {
                drive.lock();
                try {
                    advance();
                    if (didWork) {
                        continue;
                    }
                    if (active != null) {
                        awaitActive();
                        continue;
                    }
                } finally {
                    drive.unlock();
                }
                if (!waitForWork()) {
                    return;
                }
            }
        }

        /** Parks until the queue has an item; false once the Worker is stopping and the queue is empty. */
        private boolean waitForWork() {
            admission.lock();
            try {
                while (queue.isEmpty() && !stopping) {
                    work.awaitUninterruptibly();
                }
                return !queue.isEmpty();
            } finally {
                admission.unlock();
            }
        }

        /** Never blocks on device work. Holding drive. */
        int advance() {
            long seq = advanceSeq.incrementAndGet();
            int advanced = 0;
            didWork = false;
            while (true) {
                if (cancelling && successor != null) {
                    RunTicket s = successor;
                    successor = null;
                    advanced += mark(s, seq);
                    abandon(s, null);
                    continue;
                }
                if (active != null) {
                    if (awaiting || !isComplete(active)) {
                        if (successor == null && pipelined && !stagingRefused && !active.config.hasDiagnostics()
                                && !poisoned) {
                            Object next = takeHead(this, true);
                            if (next != null) {
                                RunTicket t = (RunTicket) next;
                                advanced += mark(t, seq);
                                stage(t);
                                continue;
                            }
                        }
                        return advanced;
                    }
                    RunTicket done = active;
                    active = null;
                    stagingRefused = false;
                    advanced += mark(done, seq);
                    finalizeRun(done);
                    continue;
                }
                if (successor != null) {
                    RunTicket s = successor;
                    successor = null;
                    advanced += mark(s, seq);
                    launch(s);
                    continue;
                }
                if (poisoned) {
                    failQueuedFast();
                    return advanced;
                }
                Object head = takeHead(this, false);
                if (head == null) {
                    return advanced;
                }
                didWork = true;
                if (head instanceof Registration r) {
                    apply(r);
                    continue;
                }
                RunTicket t = (RunTicket) head;
                advanced += mark(t, seq);
                if (prepare(t)) {
                    launch(t);
                }
            }
        }

        private int mark(RunTicket t, long seq) {
            didWork = true;
            if (t.pollMark == seq) {
                return 0;
            }
            t.pollMark = seq;
            return 1;
        }

        /**
         * Parks in the library until the active run's execution ended. Holding drive, which
         * is released meanwhile so that another thread can stage the successor (the active
         * run itself belongs to the awaiting thread: {@link #advance} leaves it alone). A
         * second thread arriving here waits for the first one instead of awaiting the same
         * run twice.
         */
        void awaitActive() {
            if (awaiting) {
                awaitEnded.awaitUninterruptibly();
                return;
            }
            RunTicket t = active;
            long end;
            awaiting = true;
            drive.unlock();
            try {
                chip.await(t.run);
            } catch (RuntimeException e) {
                // finalize reports the run's failure
            } finally {
                end = System.nanoTime();
                drive.lock();
                awaiting = false;
                awaitEnded.signalAll();
            }
            if (t.executionEnd == 0) {
                t.executionEnd = end;
            }
        }

        private boolean isComplete(RunTicket t) {
            boolean done;
            try {
                done = chip.poll(t.run);
            } catch (RuntimeException e) {
                done = true; // finalize reports it
            }
            if (done && t.executionEnd == 0) {
                t.executionEnd = System.nanoTime();
            }
            return done;
        }

        private void apply(Registration r) {
            try {
                chip.registerCallable(r.id(), r.callable());
                r.done().complete(null);
            } catch (RuntimeException e) {
                r.done().completeExceptionally(e);
            }
            itemDone();
        }

        /** Prepares a run in a free slot; on failure its future is complete. */
        private boolean prepare(RunTicket t) {
            t.lease = pool.tryAcquire().orElseThrow(
                    () -> new IllegalStateException("no free pipeline slot on device " + chip.deviceId()));
            AcceptanceWord word = words[t.lease.slotId()];
            word.reset(); // its previous run is finalized: a fresh 0 for this one
            t.capturedWord(word);
            t.prepareStart = System.nanoTime();
            try {
                t.run = chip.prepare(t.callableId, t.args, t.config, t.lease, t.runId(), t.dispatchId(), word);
                t.prepareEnd = System.nanoTime();
                t.args = null; // written off-heap: the Worker no longer needs it
                return true;
            } catch (RuntimeException e) {
                t.prepareEnd = System.nanoTime();
                complete(t, e);
                return false;
            }
        }

        /** Prepares the successor while the active run executes. */
        private void stage(RunTicket t) {
            t.lease = pool.tryAcquire().orElseThrow(
                    () -> new IllegalStateException("no free pipeline slot on device " + chip.deviceId()));
            AcceptanceWord word = words[t.lease.slotId()];
            word.reset();
            t.capturedWord(word);
            t.prepareStart = System.nanoTime();
            try {
                t.run = chip.prepare(t.callableId, t.args, t.config, t.lease, t.runId(), t.dispatchId(), word);
                t.prepareEnd = System.nanoTime();
                t.args = null;
                successor = t;
            } catch (ChipBusyException e) {
                // not stageable behind this predecessor: it runs after it, in order
                pool.release(t.lease);
                t.lease = null;
                t.capturedWord(null);
                stagingRefused = true;
                pushBack(this, t);
            } catch (RuntimeException e) {
                t.prepareEnd = System.nanoTime();
                complete(t, e);
            }
        }

        private void launch(RunTicket t) {
            if (t.word().isAccepted()) { // the library broke the contract: do not launch, and say so
                abandon(t, new IllegalStateException("acceptance word set before the launch of " + t.run.identity()));
                return;
            }
            t.launchStart = System.nanoTime();
            try {
                chip.launch(t.run);
                t.launchEnd = System.nanoTime();
                t.launched = true;
                t.launchOrdinal = ++launches;
                active = t;
            } catch (RuntimeException e) {
                t.launchEnd = System.nanoTime();
                t.executionEnd = t.launchEnd;
                abandon(t, e);
            }
        }

        /** Finalizes a run that will not (or did not) execute, completing it with {@code cause} (null: cancelled). */
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
            complete(t, cause);
        }

        private void finalizeRun(RunTicket t) {
            t.finalizeStart = System.nanoTime();
            RuntimeException failure = null;
            try {
                chip.finalizeRun(t.run);
            } catch (RuntimeException e) {
                failure = e;
            }
            t.finalizeEnd = System.nanoTime();
            if (failure == null) {
                complete(t, null, true);
            } else {
                complete(t, failure);
            }
        }

        private void complete(RunTicket t, RuntimeException failure) {
            complete(t, failure, false);
        }

        /** Completes the run's future, gives its slot back, and poisons the lane if the chip is. */
        private void complete(RunTicket t, RuntimeException failure, boolean succeeded) {
            AcceptanceWord word = t.word();
            t.finish(word != null && word.isAccepted());
            if (t.lease != null) {
                pool.release(t.lease);
            }
            Throwable outcome;
            if (succeeded) {
                t.future().deliver(new RunResult(t.run, chip.deviceId(), t.launchOrdinal, new RunTimings(t.enqueuedAt,
                        t.prepareStart, t.prepareEnd, t.launchStart, t.launchEnd, t.executionEnd, t.finalizeStart,
                        t.finalizeEnd)));
                outcome = null;
            } else if (failure == null) {
                t.future().deliverCancellation();
                outcome = new CancellationException("the Worker closed before the run launched");
            } else {
                t.future().deliverFailure(failure);
                outcome = failure;
            }
            runFinished(this, t, outcome);
            if (!succeeded && !poisoned && !chip.isHealthy() && !chip.isClosed()) {
                poison();
            }
        }

        /** The chip is poisoned: its staged successor and its queued runs fail fast. */
        private void poison() {
            poisoned = true;
            LOG.warn("device {} is poisoned: its queued runs fail with ChipPoisonedException", chip.deviceId());
            if (successor != null) {
                RunTicket s = successor;
                successor = null;
                abandon(s, poisonedFailure(s));
            }
        }

        private void failQueuedFast() {
            List<Object> items = new ArrayList<>();
            admission.lock();
            try {
                takeAllLocked(this, items);
            } finally {
                admission.unlock();
            }
            for (Object item : items) {
                didWork = true;
                failItem(item, item instanceof RunTicket t ? poisonedFailure(t)
                        : new ChipPoisonedException("device " + chip.deviceId() + " is poisoned; registration refused",
                                PtoError.POISONED.code(), "", null));
            }
        }

        private ChipPoisonedException poisonedFailure(RunTicket t) {
            return new ChipPoisonedException("device " + chip.deviceId() + " is poisoned; run_id=" + t.runId()
                    + " dispatch_id=" + t.dispatchId() + " was not launched", PtoError.POISONED.code(), "", null);
        }

        /** Now, or as it was just before the Worker closed the chip. */
        long committedDeviceMemory() {
            synchronized (this) {
                if (chip.isClosed()) {
                    return committedAtClose;
                }
                return chip.committedDeviceMemory();
            }
        }

        void closeChip() {
            synchronized (this) { // health() must not query the chip while it closes
                try {
                    committedAtClose = chip.isClosed() ? 0 : chip.committedDeviceMemory();
                    chip.close();
                } catch (RuntimeException e) {
                    LOG.warn("closing device {} failed", chip.deviceId(), e);
                }
            }
            for (AcceptanceWord w : words) {
                try {
                    w.close();
                } catch (RuntimeException e) {
                    LOG.warn("closing an acceptance word of device {} failed", chip.deviceId(), e);
                }
            }
        }
    }

    // ---- builder ------------------------------------------------------------------------------------

    /** Builds a {@link Worker}; {@link #variant} (or {@link #runtime}) is required. */
    public static final class Builder {
        private HostRuntime runtime;
        private Variant variant;
        private int[] devices = {0};
        private int queueCapacity = 64;
        private boolean background;
        private ShutdownPolicy shutdownPolicy = ShutdownPolicy.DRAIN;
        private ChipSelection selection = ChipSelection.LEAST_OUTSTANDING;
        private int pipelineDepth = 2;
        private Executor callbacks = ForkJoinPool.commonPool();

        private Builder() {
        }

        /**
         * Where continuations of the Worker's futures run when they were attached before
         * completion (default: {@link ForkJoinPool#commonPool()}); never the thread driving
         * a chip. See {@link RunTicket#result()}.
         */
        public Builder callbackExecutor(Executor executor) {
            this.callbacks = Objects.requireNonNull(executor, "executor");
            return this;
        }

        public Builder variant(Variant variant) {
            this.variant = Objects.requireNonNull(variant, "variant");
            return this;
        }

        public Builder runtime(HostRuntime runtime) {
            this.runtime = Objects.requireNonNull(runtime, "runtime");
            return this;
        }

        /** The chips, one {@link ChipWorker} per device id (default: device 0). */
        public Builder devices(int... deviceIds) {
            if (deviceIds.length == 0) {
                throw new IllegalArgumentException("at least one device id");
            }
            for (int i = 0; i < deviceIds.length; i++) {
                for (int j = 0; j < i; j++) {
                    if (deviceIds[i] == deviceIds[j]) {
                        throw new IllegalArgumentException("device id " + deviceIds[i] + " given twice");
                    }
                }
            }
            this.devices = deviceIds.clone();
            return this;
        }

        /** Runs admitted but not yet taken by their chip, across all chips (default 64). */
        public Builder queueCapacity(int capacity) {
            if (capacity < 1) {
                throw new IllegalArgumentException("queue capacity " + capacity + " must be at least 1");
            }
            this.queueCapacity = capacity;
            return this;
        }

        /** True: one dispatcher thread per chip makes progress; false (default): the caller does. */
        public Builder background(boolean background) {
            this.background = background;
            return this;
        }

        public Builder shutdownPolicy(ShutdownPolicy policy) {
            this.shutdownPolicy = Objects.requireNonNull(policy, "policy");
            return this;
        }

        public Builder chipSelection(ChipSelection selection) {
            this.selection = Objects.requireNonNull(selection, "selection");
            return this;
        }

        /** At most this many pipeline slots per chip, 1 or 2 (default 2; the library's contract may allow fewer). */
        public Builder pipelineDepth(int depth) {
            if (depth < 1 || depth > 2) {
                throw new IllegalArgumentException("pipeline depth " + depth + " is outside [1, 2]");
            }
            this.pipelineDepth = depth;
            return this;
        }

        /**
         * Opens the chips and (background mode) starts their dispatchers.
         *
         * @throws IllegalStateException without a variant or runtime
         */
        public Worker build() {
            HostRuntime rt = runtime;
            if (rt == null) {
                if (variant == null) {
                    throw new IllegalStateException("Worker.builder() needs a variant or a runtime");
                }
                rt = HostRuntime.load(variant);
            }
            List<ChipWorker> chips = new ArrayList<>(devices.length);
            try {
                for (int id : devices) {
                    chips.add(ChipWorker.open(rt, id));
                }
                return new Worker(this, chips);
            } catch (RuntimeException | Error e) {
                for (ChipWorker c : chips) {
                    c.close();
                }
                throw e;
            }
        }
    }
}

package org.ptorun.worker;

import java.util.ArrayDeque;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.IntFunction;
import java.util.function.IntPredicate;
import org.ptorun.CallConfig;
import org.ptorun.ChipPoisonedException;
import org.ptorun.PtoError;
import org.ptorun.TaskArgs;
import org.ptorun.callable.ChipCallable;
import org.ptorun.callable.TensorExtents;
import org.ptorun.internal.NativeConstants;

/**
 * Admission with back-pressure: one FIFO per chip of runs and registrations admitted and
 * not yet taken by the chip's lane, at most {@code capacity} runs over all chips; the
 * dispatch ids; the chip choice; and each lane's <em>event count</em>, by which its
 * driver parks without losing a wake-up (it reads the count, looks for work, and parks
 * only while the count is unchanged). Admitting, stopping, a lane's device wait ending
 * and a caller-driven lane being released each bump the count.
 *
 * <p>Admission never drives a chip: it adds to the queue and announces the item (posts
 * the lane's event) — except a run admitted in background mode, which the Worker
 * announces after the enqueuing thread had its chance to drive it ({@link
 * ChipLane#driveEnqueued}). One lock guards it all; no native call is made under it.
 */
final class AdmissionQueue {

    /** Admission returns this when the queue stayed full. */
    static final RunTicket FULL = null;

    /** {@link #take} with stageableOnly: the head is a registration or a diagnostic run. */
    static final Object NOT_STAGEABLE = new Object();

    private final ReentrantLock lock = new ReentrantLock();
    private final Condition notFull = lock.newCondition();
    private final int capacity;
    private final int[] deviceIds;
    private final ChipSelection selection;
    private final IntPredicate usable;
    private final DrainLedger ledger;
    private final Executor callbacks;
    private final ArrayDeque<Object>[] queues;
    /** Items in each lane's queue, readable without the lock (a driver's spin). */
    private final AtomicIntegerArray sizes;
    private final LaneEvents[] events;
    /** Background mode: a run admitted alone is announced by the Worker, not here. */
    private final boolean enqueuerAnnounces;

    // guarded by lock
    /**
     * By callable id, the tensor extents of the callable last given to {@code register}: what
     * every run enqueued after it is prepared with (a registration is queued behind the runs
     * enqueued before it). Null: never registered.
     */
    private final TensorExtents[] registered = new TensorExtents[NativeConstants.PTO_MAX_CALLABLES];
    /** By callable id, the callable last given to {@code register} (what a failure capture records). */
    private final ChipCallable[] registeredCallables = new ChipCallable[NativeConstants.PTO_MAX_CALLABLES];
    /** Worker.Builder.captureFailures; null when off. Set once, before any admission. */
    private FailureCapture failureCapture;
    private int queuedRuns;
    private long nextDispatchId = 1;
    private int roundRobin;
    private volatile boolean stopping;
    /** Background mode: makes lane i's dispatcher (not started); null in caller-driven mode. */
    private IntFunction<Thread> dispatcherFactory;
    /** Each lane's dispatcher; null while none runs (not started, or it ended when interrupted idle). */
    private Thread[] dispatchers;

    /** One event count and the condition its drivers park on. */
    private static final class LaneEvents {
        final Condition changed;
        volatile long count; // written under the lock

        LaneEvents(Condition changed) {
            this.changed = changed;
        }
    }

    /**
     * @param sharedEvents true (caller-driven): one event count for every lane, since any
     *        thread in drain() may drive any lane; false: one per lane (its dispatcher)
     * @param usable lane index to "may take runs" (not poisoned)
     */
    @SuppressWarnings("unchecked")
    AdmissionQueue(int capacity, int[] deviceIds, ChipSelection selection, boolean sharedEvents, IntPredicate usable,
                   DrainLedger ledger, Executor callbacks) {
        this.capacity = capacity;
        this.deviceIds = deviceIds.clone();
        this.selection = selection;
        this.usable = usable;
        this.ledger = ledger;
        this.callbacks = callbacks;
        int n = deviceIds.length;
        this.queues = new ArrayDeque[n];
        this.sizes = new AtomicIntegerArray(n);
        this.events = new LaneEvents[n];
        this.enqueuerAnnounces = !sharedEvents;
        LaneEvents shared = sharedEvents ? new LaneEvents(lock.newCondition()) : null;
        for (int i = 0; i < n; i++) {
            queues[i] = new ArrayDeque<>();
            events[i] = shared != null ? shared : new LaneEvents(lock.newCondition());
        }
    }

    // ---- admission (any thread) --------------------------------------------------------------

    /**
     * Admits a run, waiting while the queue is full: forever when {@code nanos < 0}, else at
     * most {@code nanos} (0: not at all).
     *
     * @return the ticket, or {@link #FULL}
     * @throws InterruptedException when interrupted while waiting; nothing was admitted
     */
    RunTicket admit(int callableId, TaskArgs args, CallConfig config, long nanos) throws InterruptedException {
        if (!tryLockBriefly()) {
            lock.lockInterruptibly();
        }
        try {
            while (true) {
                checkOpen();
                if (queuedRuns < capacity) {
                    return admitLocked(callableId, args, config);
                }
                if (nanos == 0) {
                    return FULL;
                }
                if (nanos < 0) {
                    notFull.await();
                } else {
                    nanos = Math.max(0, notFull.awaitNanos(nanos));
                }
            }
        } finally {
            lock.unlock();
        }
    }

    /** Admits a run if the queue has room; never waits. */
    RunTicket tryAdmit(int callableId, TaskArgs args, CallConfig config) {
        lockBriefly();
        try {
            checkOpen();
            return queuedRuns < capacity ? admitLocked(callableId, args, config) : FULL;
        } finally {
            lock.unlock();
        }
    }

    /**
     * Admits one run per lane of {@code argsPerLane} (null entries: none) at once, in lane
     * order, waiting until the queue has room for all of them: a collective step, whose runs
     * every lane must take in the same order as every other step. The tickets are indexed
     * by lane, null where no run was asked. Before any is queued, each ticket is given the
     * step's dispatch ids in the order of {@code laneOfRank} ({@link RunTicket#stepDispatchIds}),
     * so whoever observes one of its runs knows the step.
     *
     * @throws InterruptedException when interrupted while waiting; nothing was admitted
     */
    RunTicket[] admitOnLanes(int callableId, TaskArgs[] argsPerLane, int[] rankOfLane, int[] laneOfRank,
                             CallConfig config) throws InterruptedException {
        int runs = 0;
        for (TaskArgs a : argsPerLane) {
            runs += a == null ? 0 : 1;
        }
        if (runs > capacity) {
            throw new IllegalArgumentException("a step of " + runs + " runs exceeds the queue capacity " + capacity);
        }
        lock.lockInterruptibly();
        try {
            while (true) {
                checkOpen();
                if (queuedRuns + runs <= capacity) {
                    TensorExtents extents = registeredLocked(callableId);
                    for (int lane = 0; lane < argsPerLane.length; lane++) {
                        if (argsPerLane[lane] != null) {
                            checkSizes(extents, callableId, argsPerLane[lane], rankOfLane[lane]);
                        }
                    }
                    RunTicket[] out = new RunTicket[argsPerLane.length];
                    long dispatchId = nextDispatchId;
                    try {
                        for (int lane = 0; lane < argsPerLane.length; lane++) {
                            if (argsPerLane[lane] != null) {
                                out[lane] = newTicketLocked(dispatchId++, callableId, argsPerLane[lane], config,
                                        lane);
                            }
                        }
                    } catch (RuntimeException e) {
                        for (RunTicket t : out) {
                            if (t != null) {
                                t.releaseBuffers();
                            }
                        }
                        throw e;
                    }
                    long[] stepIds = new long[laneOfRank.length];
                    for (int i = 0; i < laneOfRank.length; i++) {
                        stepIds[i] = out[laneOfRank[i]].dispatchId();
                    }
                    for (RunTicket t : out) {
                        if (t != null) {
                            t.stepDispatchIds = stepIds; // published to the driver by the queue's lock
                        }
                    }
                    for (int lane = 0; lane < out.length; lane++) {
                        if (out[lane] != null) {
                            queueLocked(out[lane], lane, true);
                        }
                    }
                    return out;
                }
                notFull.await();
            }
        } finally {
            lock.unlock();
        }
    }

    private RunTicket admitLocked(int callableId, TaskArgs args, CallConfig config) {
        registeredLocked(callableId).check(callableId, args);
        return enqueueLocked(callableId, args, config, selectLocked());
    }

    /** The extents of the callable last registered under the id; refuses an id never registered. */
    private TensorExtents registeredLocked(int callableId) {
        TensorExtents extents = registered[callableId];
        if (extents == null) {
            throw new IllegalArgumentException("callable id " + callableId + " is not registered on this Worker"
                    + " (Worker.register it first)");
        }
        return extents;
    }

    /** {@link TensorExtents#check} of a collective step's rank: the message led by "rank r: ". */
    private static void checkSizes(TensorExtents extents, int callableId, TaskArgs args, int rank) {
        try {
            extents.check(callableId, args);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("rank " + rank + ": " + e.getMessage());
        }
    }

    private RunTicket enqueueLocked(int callableId, TaskArgs args, CallConfig config, int lane) {
        RunTicket t = newTicketLocked(nextDispatchId, callableId, args, config, lane);
        queueLocked(t, lane, !enqueuerAnnounces);
        return t;
    }

    /** A ticket with the next dispatch id holding its args' device buffers; not yet queued. */
    private RunTicket newTicketLocked(long dispatchId, int callableId, TaskArgs args, CallConfig config, int lane) {
        RunTicket t = new RunTicket(dispatchId, dispatchId, lane, deviceIds[lane], callableId, args, config,
                System.nanoTime(), callbacks);
        t.holdBuffers();
        if (failureCapture != null) { // costs one check per run while capture is off
            t.capture = failureCapture.take(callableId, registeredCallables[callableId], args, config);
        }
        return t;
    }

    /** Queues a ticket of {@link #newTicketLocked}: its dispatch id is taken now; announced or not. */
    private void queueLocked(RunTicket t, int lane, boolean announce) {
        nextDispatchId++;
        ledger.runAdmitted(lane);
        queuedRuns++;
        queues[lane].add(t);
        sizes.incrementAndGet(lane);
        if (announce) {
            postLocked(lane);
        }
    }

    /** Captures the inputs of every run admitted from now on (Worker.Builder.captureFailures). */
    void captureFailures(FailureCapture capture) {
        this.failureCapture = capture;
    }

    /** A run failed: writes its capture when failures are captured. */
    void runFailed(RunTicket t, Throwable failure) {
        FailureCapture c = failureCapture;
        if (c != null) {
            c.failed(t, failure);
        }
    }

    /** Queues a registration on every usable lane; {@code parts} receives one future per lane. */
    void queueRegistration(int id, ChipCallable callable, List<CompletableFuture<Void>> parts) {
        lock.lock();
        try {
            checkOpen();
            registered[id] = callable.tensorExtents();
            registeredCallables[id] = callable;
            for (int lane = 0; lane < queues.length; lane++) {
                if (usable.test(lane)) {
                    Registration r = new Registration(id, callable, new CompletableFuture<>());
                    ledger.registrationQueued();
                    parts.add(r.done());
                    addLocked(lane, r);
                }
            }
        } finally {
            lock.unlock();
        }
    }

    private void addLocked(int lane, Object item) {
        queues[lane].add(item);
        sizes.incrementAndGet(lane);
        postLocked(lane);
    }

    private int selectLocked() {
        int n = queues.length;
        if (selection == ChipSelection.ROUND_ROBIN) {
            for (int i = 0; i < n; i++) {
                int lane = (roundRobin + i) % n;
                if (usable.test(lane)) {
                    roundRobin = (lane + 1) % n;
                    return lane;
                }
            }
        } else {
            int best = -1;
            for (int lane = 0; lane < n; lane++) {
                if (usable.test(lane) && (best < 0 || ledger.outstanding(lane) < ledger.outstanding(best))) {
                    best = lane;
                }
            }
            if (best >= 0) {
                return best;
            }
        }
        throw new ChipPoisonedException("every chip of the Worker is poisoned; close it and build a new one",
                PtoError.POISONED.code(), "", null);
    }

    /**
     * The lock is held for well under a microsecond (an enqueue against the driver's take):
     * retry it for a moment before parking on it, which would cost a hand-off per run.
     */
    private boolean tryLockBriefly() {
        for (int i = 0; i < LOCK_SPINS; i++) {
            if (lock.tryLock()) {
                return true;
            }
            Thread.onSpinWait();
        }
        return false;
    }

    private void lockBriefly() {
        if (!tryLockBriefly()) {
            lock.lock();
        }
    }

    /** Tries of {@link #tryLockBriefly}: a few microseconds at most. */
    private static final int LOCK_SPINS = 256;

    private void checkOpen() {
        if (stopping) {
            throw new IllegalStateException("the Worker is closed");
        }
    }

    // ---- taking (the lane's driver) -------------------------------------------------------------

    /** Runs admitted and not yet taken by their chip, over every lane. */
    int queuedRuns() {
        lock.lock();
        try {
            return queuedRuns;
        } finally {
            lock.unlock();
        }
    }

    /** True when the lane's queue holds an item (no lock: a driver's spin reads it). */
    boolean hasWork(int lane) {
        return sizes.get(lane) > 0;
    }

    /**
     * The lane's next item, or null when its queue is empty; with {@code stageableOnly},
     * only a run that may be staged as a successor (no diagnostics), else
     * {@link #NOT_STAGEABLE}. A run taken leaves room for one more.
     */
    Object take(int lane, boolean stageableOnly) {
        if (sizes.get(lane) == 0) {
            return null; // the common empty case costs no lock
        }
        lockBriefly();
        try {
            Object head = queues[lane].peek();
            if (head == null) {
                return null;
            }
            if (stageableOnly && !(head instanceof RunTicket t && !t.config.hasDiagnostics())) {
                return NOT_STAGEABLE;
            }
            queues[lane].poll();
            sizes.decrementAndGet(lane);
            if (head instanceof RunTicket) {
                queuedRuns--;
                notFull.signal();
            }
            return head;
        } finally {
            lock.unlock();
        }
    }

    /** A successor the chip refused to stage goes back to the head of its queue. */
    void pushBack(int lane, RunTicket t) {
        lock.lock();
        try {
            queues[lane].addFirst(t);
            sizes.incrementAndGet(lane);
            queuedRuns++;
        } finally {
            lock.unlock();
        }
    }

    /** Empties the lane's queue into {@code into}. */
    void takeAll(int lane, List<Object> into) {
        lock.lock();
        try {
            takeAllLocked(lane, into);
        } finally {
            lock.unlock();
        }
    }

    private void takeAllLocked(int lane, List<Object> into) {
        Object item;
        while ((item = queues[lane].poll()) != null) {
            sizes.decrementAndGet(lane);
            if (item instanceof RunTicket) {
                queuedRuns--;
            }
            into.add(item);
        }
        notFull.signalAll();
    }

    // ---- events -------------------------------------------------------------------------------------

    /** The lane's event count; read it before looking for work, then {@link #awaitEvent} with it. */
    long eventCount(int lane) {
        return events[lane].count;
    }

    /**
     * Background mode: starts a dispatcher per lane. A dispatcher interrupted while idle
     * ends ({@link #awaitEventOrEnd}); the lane's next event (an admission, close) starts
     * a new one, which takes over the lane where the last one left it.
     */
    void startDispatchers(IntFunction<Thread> factory) {
        lock.lock();
        try {
            dispatcherFactory = factory;
            dispatchers = new Thread[queues.length];
            for (int lane = 0; lane < queues.length; lane++) {
                startDispatcherLocked(lane);
            }
        } finally {
            lock.unlock();
        }
    }

    private void startDispatcherLocked(int lane) {
        Thread t = dispatcherFactory.apply(lane);
        t.setDaemon(true);
        t.start();
        dispatchers[lane] = t; // only once started: a failed start leaves the next event to try again
    }

    /** The lane's dispatcher now (background mode), or null. */
    Thread dispatcher(int lane) {
        lock.lock();
        try {
            return dispatchers == null ? null : dispatchers[lane];
        } finally {
            lock.unlock();
        }
    }

    /**
     * The dispatcher's idle park: like {@link #awaitEvent}, but when the dispatcher is
     * interrupted (as {@code mvn exec:java} does to the threads a program leaves) and no
     * event came, it gives up the lane and returns false: it must end. With an event it
     * returns true and keeps the interrupt, so it ends at its next idle park.
     */
    boolean awaitEventOrEnd(int lane, long seen) {
        lock.lock();
        try {
            LaneEvents e = events[lane];
            while (e.count == seen) {
                try {
                    e.changed.await();
                } catch (InterruptedException interrupted) {
                    if (e.count == seen) {
                        dispatchers[lane] = null; // under the lock: the next post starts a new dispatcher
                        return false;
                    }
                    Thread.currentThread().interrupt();
                }
            }
            return true;
        } finally {
            lock.unlock();
        }
    }

    /** Parks until the lane's event count differs from {@code seen}. */
    void awaitEvent(int lane, long seen) {
        lock.lock();
        try {
            LaneEvents e = events[lane];
            while (e.count == seen) {
                e.changed.awaitUninterruptibly();
            }
        } finally {
            lock.unlock();
        }
    }

    /** Something the lane's driver may act on happened: bump the count, wake who parks on it. */
    void post(int lane) {
        lock.lock();
        try {
            postLocked(lane);
        } finally {
            lock.unlock();
        }
    }

    private void postLocked(int lane) {
        LaneEvents e = events[lane];
        e.count++;
        e.changed.signalAll();
        if (dispatchers != null && dispatchers[lane] == null) {
            startDispatcherLocked(lane); // its dispatcher ended when interrupted idle
        }
    }

    // ---- stopping -------------------------------------------------------------------------------------

    boolean isStopping() {
        return stopping;
    }

    /**
     * Stops admission (blocked enqueues wake and throw) and wakes every driver; with
     * {@code cancel} also empties every queue into {@code cancelled}.
     *
     * @return false when admission had already stopped
     */
    boolean stop(boolean cancel, List<Object> cancelled) {
        lock.lock();
        try {
            if (stopping) {
                return false;
            }
            stopping = true;
            notFull.signalAll();
            for (int lane = 0; lane < queues.length; lane++) {
                if (cancel) {
                    takeAllLocked(lane, cancelled);
                }
                postLocked(lane);
            }
            return true;
        } finally {
            lock.unlock();
        }
    }
}

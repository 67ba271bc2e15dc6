package org.ptorun.worker;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The Worker's account of outstanding work, for {@code drain()}, {@code close()} and
 * {@code health()}: per chip the runs outstanding, succeeded and failed; over the Worker
 * the items pending (runs not finished plus registrations not applied), and the runs
 * finished since the previous drain returned. Counting is lock-free; the lock is taken
 * only by a thread that waits for the ledger to empty, and by whoever empties it.
 */
final class DrainLedger {

    private static final Logger LOG = LoggerFactory.getLogger(DrainLedger.class);

    /** Null when none was set: then observing costs one null check. */
    private final RunObserver observer;
    private final AtomicBoolean observerFailed = new AtomicBoolean();

    private final AtomicLongArray outstanding;
    private final AtomicLongArray succeeded;
    private final AtomicLongArray failed;
    private final AtomicLong pending = new AtomicLong();
    private volatile boolean cancelling;
    private Throwable cancelReason; // published by cancelling

    private final ReentrantLock lock = new ReentrantLock();
    private final Condition empty = lock.newCondition();
    // guarded by lock
    private long succeededSinceDrain;
    private long failedSinceDrain;
    private List<DrainReport.RunFailure> failuresSinceDrain = new ArrayList<>();

    DrainLedger(int chips) {
        this(chips, null);
    }

    DrainLedger(int chips, RunObserver observer) {
        this.observer = observer;
        outstanding = new AtomicLongArray(chips);
        succeeded = new AtomicLongArray(chips);
        failed = new AtomicLongArray(chips);
    }

    /** A run was admitted to chip {@code lane}. */
    void runAdmitted(int lane) {
        outstanding.incrementAndGet(lane);
        pending.incrementAndGet();
    }

    /** A registration was queued on a chip. */
    void registrationQueued() {
        pending.incrementAndGet();
    }

    /** A registration was applied or failed. */
    void registrationDone() {
        itemDone();
    }

    /**
     * A run of chip {@code lane} finished: {@code result} set and {@code failure} null when
     * it succeeded. The observer is told before the run stops being outstanding, so a
     * drain that returns has seen every run it waited for observed.
     */
    void runFinished(int lane, RunTicket t, RunResult result, Throwable failure) {
        if (observer != null) {
            observe(t, result, failure);
        }
        if (failure == null) {
            succeeded.incrementAndGet(lane);
        } else {
            failed.incrementAndGet(lane);
        }
        lock.lock();
        try {
            if (failure == null) {
                succeededSinceDrain++;
            } else {
                failedSinceDrain++;
                if (failuresSinceDrain.size() < Worker.MAX_REPORTED_FAILURES) {
                    failuresSinceDrain.add(new DrainReport.RunFailure(t, failure));
                }
            }
        } finally {
            lock.unlock();
        }
        outstanding.decrementAndGet(lane);
        itemDone();
    }

    private void observe(RunTicket t, RunResult result, Throwable failure) {
        try {
            observer.runFinished(t, result, failure);
        } catch (VirtualMachineError e) {
            throw e;
        } catch (Throwable e) { // a broken observer (a metrics library missing, say) must not break the run
            observerFailed(t, e);
        }
    }

    /** The observer of every collective step, if any: told once the step's ranks are done. */
    void observeStep(CollectiveStep step, long enqueuedAt) {
        if (observer == null) {
            return;
        }
        CompletableFuture.allOf(step.results().toArray(CompletableFuture[]::new)).whenComplete((v, e) -> {
            Duration latency = Duration.ofNanos(System.nanoTime() - enqueuedAt);
            Throwable failure = e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
            try {
                observer.collectiveStepFinished(step, latency, failure);
            } catch (VirtualMachineError x) {
                throw x;
            } catch (Throwable x) {
                observerFailed(step, x);
            }
        });
    }

    private void observerFailed(Object what, Throwable e) {
        if (observerFailed.compareAndSet(false, true)) {
            LOG.warn("run observer {} threw on {}; its later failures are not logged", observer, what, e);
        }
    }

    private void itemDone() {
        if (pending.decrementAndGet() == 0) {
            lock.lock();
            try {
                empty.signalAll();
            } finally {
                lock.unlock();
            }
        }
    }

    /** Items (runs and registrations) not yet finished. */
    long pending() {
        return pending.get();
    }

    /** Parks until nothing is pending (background mode: the dispatchers do the work). */
    void awaitEmpty() {
        lock.lock();
        try {
            while (pending.get() > 0) {
                empty.awaitUninterruptibly();
            }
        } finally {
            lock.unlock();
        }
    }

    /** The runs finished since the previous report; starts the next count. */
    DrainReport takeReport() {
        lock.lock();
        try {
            DrainReport report = new DrainReport(succeededSinceDrain, failedSinceDrain, failuresSinceDrain);
            succeededSinceDrain = 0;
            failedSinceDrain = 0;
            failuresSinceDrain = new ArrayList<>();
            return report;
        } finally {
            lock.unlock();
        }
    }

    long outstanding(int lane) {
        return outstanding.get(lane);
    }

    long succeeded(int lane) {
        return succeeded.get(lane);
    }

    long failed(int lane) {
        return failed.get(lane);
    }

    /**
     * close() under CANCEL_QUEUED: staged successors are abandoned, nothing more is staged.
     *
     * @param reason the close, the cause of every cancelled run's exception
     */
    void startCancelling(Throwable reason) {
        lock.lock();
        try {
            if (cancelReason == null) { // a second, concurrent close keeps the first one's reason
                cancelReason = reason;
            }
        } finally {
            lock.unlock();
        }
        cancelling = true; // volatile: publishes the reason
    }

    /** The reason given to {@link #startCancelling}, once {@link #cancelling()} is true. */
    Throwable cancelReason() {
        return cancelReason;
    }

    boolean cancelling() {
        return cancelling;
    }
}

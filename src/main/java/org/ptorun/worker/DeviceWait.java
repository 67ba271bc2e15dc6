package org.ptorun.worker;

import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import org.ptorun.ChipWorker;

/**
 * Waits in the library on a lane's running run on behalf of its driver, so that the
 * driver can park on the lane's events instead — and be woken by an admission to stage a
 * successor during the execution. The library's wait cannot be interrupted; this thread
 * is its interrupt. It changes nothing of the lane: it reports the end of the execution
 * and the driver finalizes (the library itself records when the run ended on the device, which
 * is the run's {@code RunTimings.executionEnd}). Used only when the driver's bounded
 * spin did not see the run end and a successor could still be staged; started on first
 * use, one per chip. Interrupted, it ends once no wait is requested (the next request
 * starts a new one): an interrupt never loses a requested wait.
 */
final class DeviceWait {

    private final ChipWorker chip;
    private final Runnable onEnded;
    private final String threadName;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition requested = lock.newCondition();
    private Thread thread;            // guarded by lock
    private RunTicket request;        // guarded by lock
    private boolean stop;             // guarded by lock
    /** The run being waited on, until the driver takes the end (driver-owned). */
    private RunTicket watched;
    private volatile boolean ended;   // the library's wait on the watched run returned

    /** @param ended run after the library's wait returned (posts the lane's event) */
    DeviceWait(ChipWorker chip, Runnable ended) {
        this.chip = chip;
        this.onEnded = ended;
        this.threadName = "ptorun-devwait-" + chip.deviceId();
    }

    /** True while a wait was requested and its end not yet taken (driver). */
    boolean inFlight() {
        return watched != null;
    }

    /** The watched run whose execution ended, or null while it still executes (driver). */
    RunTicket takeEnded() {
        if (watched == null || !ended) {
            return null;
        }
        RunTicket t = watched;
        watched = null;
        ended = false;
        return t;
    }

    /** True once the watched run's execution ended (driver). */
    boolean ended() {
        return watched != null && ended;
    }

    /** Starts waiting on {@code t}, which is launched and not finalized (driver). */
    void watch(RunTicket t) {
        watched = t;
        lock.lock();
        try {
            request = t;
            if (thread == null) {
                thread = new Thread(this::serve, threadName);
                thread.setDaemon(true);
                thread.start();
            }
            requested.signal();
        } finally {
            lock.unlock();
        }
    }

    private void serve() {
        boolean interrupted = false;
        while (true) {
            RunTicket t;
            lock.lock();
            try {
                while (request == null && !stop) {
                    if (interrupted) {
                        // asked to end (exec:java asks so of every thread its program left): idle, so it may;
                        // the next watch starts a new thread
                        thread = null;
                        return;
                    }
                    try {
                        requested.await();
                    } catch (InterruptedException e) {
                        interrupted = true;
                    }
                }
                if (request == null) {
                    return;
                }
                t = request;
                request = null;
            } finally {
                lock.unlock();
            }
            try {
                chip.await(t.run);
            } catch (RuntimeException e) {
                // finalize reports the run's failure
            }
            ended = true;
            onEnded.run();
        }
    }

    /** Ends the thread; no wait is in flight (the lane finalized its runs). */
    void stop() {
        Thread t;
        lock.lock();
        try {
            stop = true;
            requested.signal();
            t = thread;
        } finally {
            lock.unlock();
        }
        if (t != null && t != Thread.currentThread()) {
            boolean interrupted = false;
            while (true) {
                try {
                    t.join();
                    break;
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }
}

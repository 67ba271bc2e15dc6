package org.ptorun;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;

/** Threads the race tests start and the events they wait for (never a sleep). */
final class TestThreads {

    private TestThreads() {
    }

    /** The live background dispatcher of a Worker's chip {@code deviceId} ({@code ptorun-dispatch-<id>}). */
    static Thread dispatcherOf(int deviceId) {
        String name = "ptorun-dispatch-" + deviceId;
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (t.getName().equals(name) && t.isAlive()) {
                return t;
            }
        }
        throw new AssertionError("no thread " + name);
    }

    /** Runs {@code body} on a new daemon thread. */
    static Started start(String name, ThrowingCallable body) {
        CompletableFuture<Void> done = new CompletableFuture<>();
        Thread t = new Thread(() -> {
            try {
                body.call();
                done.complete(null);
            } catch (Throwable e) {
                done.completeExceptionally(e);
            }
        }, name);
        t.setDaemon(true);
        t.start();
        return new Started(t, done);
    }

    /** A started thread and its outcome. */
    record Started(Thread thread, CompletableFuture<Void> done) {
        void join() throws Exception {
            done.get(60, TimeUnit.SECONDS);
        }
    }

    /**
     * Waits until {@code t}'s stack shows it inside {@code className.method} — typically a
     * native call there that blocks, which leaves the thread RUNNABLE, so that
     * {@link #awaitParked} cannot see it — yielding meanwhile; fails if it ends instead, or
     * has not got there within 30 s.
     */
    static void awaitInside(Thread t, String className, String method) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (true) {
            for (StackTraceElement frame : t.getStackTrace()) {
                if (frame.getClassName().equals(className) && frame.getMethodName().equals(method)) {
                    return;
                }
            }
            if (t.getState() == Thread.State.TERMINATED) {
                throw new AssertionError(t.getName() + " ended without entering " + className + "." + method);
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError(t.getName() + " never entered " + className + "." + method);
            }
            Thread.yield();
        }
    }

    /**
     * Waits until {@code t} parks (on a lock or a condition), yielding meanwhile; fails if
     * it ends instead, or has not parked within 30 s.
     */
    static void awaitParked(Thread t) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (true) {
            Thread.State state = t.getState();
            if (state == Thread.State.WAITING || state == Thread.State.TIMED_WAITING) {
                return;
            }
            if (state == Thread.State.TERMINATED) {
                throw new AssertionError(t.getName() + " ended instead of waiting");
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError(t.getName() + " never parked (state " + state + ")");
            }
            Thread.yield();
        }
    }
}

package org.ptorun.worker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * The Worker's futures: a thread blocked in get/join is woken by every way of completing
 * the future, and is not a dependent (so the driver completes it on its own thread, no
 * hand-off through the callback executor).
 */
class WorkerFutureTest {

    /** An executor that must not be used. */
    private static final Executor NONE = r -> {
        throw new AssertionError("the callback executor was used");
    };

    /** Starts a thread blocked in {@code waiting}, returns it once it parked. */
    private static Thread blockedIn(Runnable waiting) {
        Thread t = new Thread(waiting, "waiter");
        t.setDaemon(true);
        t.start();
        while (t.getState() != Thread.State.WAITING && t.getState() != Thread.State.TIMED_WAITING) {
            assertThat(t.isAlive()).as("the waiter parks").isTrue();
            Thread.yield();
        }
        return t;
    }

    @Test
    void aThreadBlockedInGetIsNoDependentAndTheDeliveryWakesIt() throws Exception {
        WorkerFuture<String> f = new WorkerFuture<>(NONE);
        AtomicReference<Object> got = new AtomicReference<>();
        Thread t = blockedIn(() -> {
            try {
                got.set(f.get());
            } catch (Exception e) {
                got.set(e);
            }
        });
        assertThat(f.getNumberOfDependents()).as("get() is not a dependent").isZero();
        f.deliver("done"); // NONE would throw if it were handed off
        t.join(60_000);
        assertThat(got.get()).isEqualTo("done");
    }

    @Test
    void joinIsWokenByAFailureAndReportsItAsCompletableFutureDoes() throws Exception {
        WorkerFuture<String> f = new WorkerFuture<>(NONE);
        AtomicReference<Throwable> got = new AtomicReference<>();
        Thread t = blockedIn(() -> {
            try {
                f.join();
            } catch (Throwable e) {
                got.set(e);
            }
        });
        IllegalStateException cause = new IllegalStateException("run failed");
        f.deliverFailure(cause);
        t.join(60_000);
        assertThat(got.get()).isInstanceOf(CompletionException.class).hasCause(cause);
    }

    @Test
    void userCompletionsWakeWaitersToo() throws Exception {
        for (int way = 0; way < 5; way++) {
            WorkerFuture<String> f = new WorkerFuture<>(Runnable::run);
            AtomicReference<Object> got = new AtomicReference<>();
            Thread t = blockedIn(() -> {
                try {
                    got.set(f.get(60, TimeUnit.SECONDS));
                } catch (Exception e) {
                    got.set(e);
                }
            });
            switch (way) {
                case 0 -> f.complete("mine");
                case 1 -> f.completeExceptionally(new IllegalArgumentException("x"));
                case 2 -> f.cancel(false);
                case 3 -> f.obtrudeValue("obtruded");
                default -> f.completeAsync(() -> "async");
            }
            t.join(60_000);
            assertThat(t.isAlive()).as("way %d woke the waiter", way).isFalse();
            switch (way) {
                case 0 -> assertThat(got.get()).isEqualTo("mine");
                case 1 -> assertThat(got.get()).isInstanceOf(ExecutionException.class);
                case 2 -> assertThat(got.get()).isInstanceOf(CancellationException.class);
                case 3 -> assertThat(got.get()).isEqualTo("obtruded");
                default -> assertThat(got.get()).isEqualTo("async");
            }
        }
    }

    @Test
    void aTimedGetTimesOutAndAnInterruptedGetThrows() throws Exception {
        WorkerFuture<String> f = new WorkerFuture<>(NONE);
        assertThatThrownBy(() -> f.get(1, TimeUnit.MILLISECONDS)).isInstanceOf(TimeoutException.class);
        AtomicReference<Throwable> got = new AtomicReference<>();
        Thread t = blockedIn(() -> {
            try {
                f.get();
            } catch (Throwable e) {
                got.set(e);
            }
        });
        t.interrupt();
        t.join(60_000);
        assertThat(got.get()).isInstanceOf(InterruptedException.class);
        assertThat(f.isDone()).isFalse();
    }

    @Test
    void aDependentAttachedBeforeCompletionMovesTheCompletionToTheCallbackExecutor() {
        AtomicReference<String> on = new AtomicReference<>();
        Executor callbacks = r -> {
            Thread t = new Thread(r, "callbacks");
            t.start();
        };
        WorkerFuture<String> f = new WorkerFuture<>(callbacks);
        CompletableFuture<Void> all = CompletableFuture.allOf(f).thenRun(() -> on.set(Thread.currentThread().getName()));
        f.deliver("x");
        all.join();
        assertThat(on.get()).isNotEqualTo(Thread.currentThread().getName());
    }
}

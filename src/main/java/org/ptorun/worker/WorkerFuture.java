package org.ptorun.worker;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Supplier;
import java.util.function.BiConsumer;
import java.util.function.BiFunction;
import java.util.function.Consumer;
import java.util.function.Function;

/**
 * The futures a {@link Worker} hands out ({@link RunTicket#result()}, {@link Worker#register}):
 * user continuations never run on the thread that drives a chip.
 *
 * <p>The Worker completes the future on its driving thread (a dispatcher, or a thread in
 * {@code poll} / {@code drain} / {@code close}) when nobody depends on it yet — the
 * common {@code join()} / {@code isDone()} case costs no hand-off — and hands the
 * completion to the Worker's callback executor when something does (which also covers
 * {@code CompletableFuture.allOf(...)} and other futures' combinators). Continuations
 * attached with this future's own non-async methods ({@code thenApply}, {@code thenAccept},
 * {@code whenComplete}, ...) before it completes run on the callback executor as well;
 * attached afterwards they run at once on the attaching thread, as usual.
 *
 * <p>A thread blocked in {@link #get()}, {@link #get(long, TimeUnit)} or {@link #join()}
 * is not a dependent: it parks on this future's own list of waiters, which the completing
 * thread unparks right after the completion. So the common "enqueue, then wait for the
 * result" costs one wake, with no hand-off through the callback executor.
 *
 * <p>Completing or cancelling this future yourself changes only the future: the run goes
 * on, and the {@link RunTicket} and the Worker's reports still tell its real outcome.
 */
final class WorkerFuture<T> extends CompletableFuture<T> {

    private final Executor callbacks;

    /** Threads parked in get/join, newest first (a Treiber stack). */
    private volatile Waiter waiters;

    private record Waiter(Thread thread, Waiter next) {
    }

    private static final VarHandle WAITERS;

    static {
        try {
            WAITERS = MethodHandles.lookup().findVarHandle(WorkerFuture.class, "waiters", Waiter.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    WorkerFuture(Executor callbacks) {
        this.callbacks = callbacks;
    }

    // ---- completion by the Worker --------------------------------------------------------------

    void deliver(T value) {
        offDriver(() -> super.complete(value));
    }

    void deliverFailure(Throwable failure) {
        offDriver(() -> super.completeExceptionally(failure));
    }

    private void offDriver(Runnable completion) {
        if (getNumberOfDependents() == 0) {
            completion.run();
            wakeWaiters();
            return;
        }
        Runnable completeAndWake = () -> {
            completion.run();
            wakeWaiters();
        };
        try {
            callbacks.execute(completeAndWake);
        } catch (RejectedExecutionException e) {
            completeAndWake.run(); // the executor is shut down: better late on this thread than never
        }
    }

    // ---- waiting without becoming a dependent -----------------------------------------------------

    private void wakeWaiters() {
        Waiter w = (Waiter) WAITERS.getAndSet(this, null);
        for (; w != null; w = w.next()) {
            LockSupport.unpark(w.thread());
        }
    }

    /** Parks until done or the deadline (0: none) passed; false on timeout. */
    private boolean awaitDone(boolean interruptible, long deadline) throws InterruptedException {
        long spinEnd = System.nanoTime() + ChipLane.SPIN_NANOS;
        while (!isDone()) { // a trivial run completes within a spin: no park, no wake
            if (System.nanoTime() - spinEnd >= 0) {
                break;
            }
            ChipLane.pause();
        }
        if (isDone()) {
            return true;
        }
        Thread self = Thread.currentThread();
        while (true) {
            Waiter head = waiters;
            if (WAITERS.compareAndSet(this, head, new Waiter(self, head))) {
                break;
            }
        }
        boolean interrupted = false;
        try {
            while (!isDone()) {
                if (deadline == 0) {
                    LockSupport.park(this);
                } else {
                    long left = deadline - System.nanoTime();
                    if (left <= 0) {
                        return false;
                    }
                    LockSupport.parkNanos(this, left);
                }
                if (Thread.interrupted()) {
                    if (interruptible) {
                        throw new InterruptedException();
                    }
                    interrupted = true;
                }
            }
            return true;
        } finally {
            if (interrupted) {
                self.interrupt();
            }
        }
    }

    @Override
    public T get() throws InterruptedException, ExecutionException {
        awaitDone(true, 0);
        try {
            return super.get();
        } catch (CancellationException e) {
            throw asCancelled(e);
        }
    }

    @Override
    public T get(long timeout, TimeUnit unit) throws InterruptedException, ExecutionException, TimeoutException {
        long deadline = System.nanoTime() + unit.toNanos(timeout);
        if (!awaitDone(true, deadline == 0 ? 1 : deadline)) {
            throw new TimeoutException();
        }
        try {
            return super.get();
        } catch (CancellationException e) {
            throw asCancelled(e);
        }
    }

    @Override
    public T join() {
        try {
            awaitDone(false, 0);
        } catch (InterruptedException e) {
            throw new AssertionError("an uninterruptible wait was interrupted", e);
        }
        try {
            return super.join();
        } catch (CancellationException e) {
            throw asCancelled(e);
        }
    }

    /**
     * The cancellation the future completed with, which says why ({@link RunCancelledException}
     * for a run): Java 23 and later throw a fresh {@code CancellationException("get")} (or
     * "join") caused by it, Java 17 throws it as is; both now throw it as is.
     */
    private static CancellationException asCancelled(CancellationException thrown) {
        if (thrown.getClass() == CancellationException.class && thrown.getCause() instanceof CancellationException own) {
            return own;
        }
        return thrown;
    }

    // ---- completion by the user: wake the waiters too ---------------------------------------------

    @Override
    public boolean complete(T value) {
        boolean changed = super.complete(value);
        wakeWaiters();
        return changed;
    }

    @Override
    public boolean completeExceptionally(Throwable ex) {
        boolean changed = super.completeExceptionally(ex);
        wakeWaiters();
        return changed;
    }

    @Override
    public boolean cancel(boolean mayInterruptIfRunning) {
        boolean changed = super.cancel(mayInterruptIfRunning);
        wakeWaiters();
        return changed;
    }

    @Override
    public void obtrudeValue(T value) {
        super.obtrudeValue(value);
        wakeWaiters();
    }

    @Override
    public void obtrudeException(Throwable ex) {
        super.obtrudeException(ex);
        wakeWaiters();
    }

    @Override
    public CompletableFuture<T> completeAsync(Supplier<? extends T> supplier, Executor executor) {
        executor.execute(() -> {
            try {
                complete(supplier.get());
            } catch (Throwable e) {
                completeExceptionally(e);
            }
        });
        return this;
    }

    @Override
    public CompletableFuture<T> completeAsync(Supplier<? extends T> supplier) {
        return completeAsync(supplier, callbacks);
    }

    // ---- continuations: asynchronous until the future is complete ---------------------------------

    @Override
    public Executor defaultExecutor() {
        return callbacks;
    }

    /** Derived stages are plain futures: they complete off the driving thread already. */
    @Override
    public <U> CompletableFuture<U> newIncompleteFuture() {
        return new CompletableFuture<>();
    }

    @Override
    public <U> CompletableFuture<U> thenApply(Function<? super T, ? extends U> fn) {
        return isDone() ? super.thenApply(fn) : super.thenApplyAsync(fn, callbacks);
    }

    @Override
    public CompletableFuture<Void> thenAccept(Consumer<? super T> action) {
        return isDone() ? super.thenAccept(action) : super.thenAcceptAsync(action, callbacks);
    }

    @Override
    public CompletableFuture<Void> thenRun(Runnable action) {
        return isDone() ? super.thenRun(action) : super.thenRunAsync(action, callbacks);
    }

    @Override
    public <U, V> CompletableFuture<V> thenCombine(CompletionStage<? extends U> other,
            BiFunction<? super T, ? super U, ? extends V> fn) {
        return isDone() ? super.thenCombine(other, fn) : super.thenCombineAsync(other, fn, callbacks);
    }

    @Override
    public <U> CompletableFuture<Void> thenAcceptBoth(CompletionStage<? extends U> other,
            BiConsumer<? super T, ? super U> action) {
        return isDone() ? super.thenAcceptBoth(other, action) : super.thenAcceptBothAsync(other, action, callbacks);
    }

    @Override
    public CompletableFuture<Void> runAfterBoth(CompletionStage<?> other, Runnable action) {
        return isDone() ? super.runAfterBoth(other, action) : super.runAfterBothAsync(other, action, callbacks);
    }

    @Override
    public <U> CompletableFuture<U> applyToEither(CompletionStage<? extends T> other, Function<? super T, U> fn) {
        return isDone() ? super.applyToEither(other, fn) : super.applyToEitherAsync(other, fn, callbacks);
    }

    @Override
    public CompletableFuture<Void> acceptEither(CompletionStage<? extends T> other, Consumer<? super T> action) {
        return isDone() ? super.acceptEither(other, action) : super.acceptEitherAsync(other, action, callbacks);
    }

    @Override
    public CompletableFuture<Void> runAfterEither(CompletionStage<?> other, Runnable action) {
        return isDone() ? super.runAfterEither(other, action) : super.runAfterEitherAsync(other, action, callbacks);
    }

    @Override
    public <U> CompletableFuture<U> thenCompose(Function<? super T, ? extends CompletionStage<U>> fn) {
        return isDone() ? super.thenCompose(fn) : super.thenComposeAsync(fn, callbacks);
    }

    @Override
    public <U> CompletableFuture<U> handle(BiFunction<? super T, Throwable, ? extends U> fn) {
        return isDone() ? super.handle(fn) : super.handleAsync(fn, callbacks);
    }

    @Override
    public CompletableFuture<T> whenComplete(BiConsumer<? super T, ? super Throwable> action) {
        return isDone() ? super.whenComplete(action) : super.whenCompleteAsync(action, callbacks);
    }

    @Override
    public CompletableFuture<T> exceptionally(Function<Throwable, ? extends T> fn) {
        return isDone() ? super.exceptionally(fn) : super.exceptionallyAsync(fn, callbacks);
    }

    @Override
    public CompletableFuture<T> exceptionallyCompose(Function<Throwable, ? extends CompletionStage<T>> fn) {
        return isDone() ? super.exceptionallyCompose(fn) : super.exceptionallyComposeAsync(fn, callbacks);
    }
}

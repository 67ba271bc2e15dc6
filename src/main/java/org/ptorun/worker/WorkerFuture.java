package org.ptorun.worker;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
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
 * <p>Completing or cancelling this future yourself changes only the future: the run goes
 * on, and the {@link RunTicket} and the Worker's reports still tell its real outcome.
 */
final class WorkerFuture<T> extends CompletableFuture<T> {

    private final Executor callbacks;

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

    void deliverCancellation() {
        offDriver(() -> super.cancel(false));
    }

    private void offDriver(Runnable completion) {
        if (getNumberOfDependents() == 0) {
            completion.run();
            return;
        }
        try {
            callbacks.execute(completion);
        } catch (RejectedExecutionException e) {
            completion.run(); // the executor is shut down: better late on this thread than never
        }
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

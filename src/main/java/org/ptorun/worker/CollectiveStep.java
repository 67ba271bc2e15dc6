package org.ptorun.worker;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/**
 * One callable run on every rank of a {@link org.ptorun.CommGroup} by a {@link Worker}
 * ({@link Worker#enqueueCollective}): rank {@code r}'s run on rank {@code r}'s chip. Each
 * rank's {@link #result(int) future} completes with its own {@link RunResult} once every
 * rank's run succeeded; if any failed, every rank's future fails with a
 * {@link CollectiveStepException} naming the failed ranks.
 */
public final class CollectiveStep {

    private final List<RunTicket> tickets;
    private final List<CompletableFuture<RunResult>> results;

    CollectiveStep(List<RunTicket> tickets) {
        this.tickets = List.copyOf(tickets);
        List<CompletableFuture<RunResult>> raw = new ArrayList<>(tickets.size());
        for (RunTicket t : tickets) {
            raw.add(t.result());
        }
        CompletableFuture<Void> all = CompletableFuture.allOf(raw.stream()
                .map(f -> f.handle((r, e) -> null)).toArray(CompletableFuture[]::new));
        List<CompletableFuture<RunResult>> out = new ArrayList<>(tickets.size());
        for (int rank = 0; rank < raw.size(); rank++) {
            int me = rank;
            out.add(all.thenApply(ignored -> {
                Map<Integer, Throwable> failures = new TreeMap<>();
                for (int r = 0; r < raw.size(); r++) {
                    CompletableFuture<RunResult> f = raw.get(r);
                    if (f.isCompletedExceptionally()) {
                        failures.put(r, unwrap(f));
                    }
                }
                if (!failures.isEmpty()) {
                    throw new CollectiveStepException(me, failures);
                }
                return raw.get(me).join();
            }));
        }
        this.results = List.copyOf(out);
    }

    private static Throwable unwrap(CompletableFuture<RunResult> f) {
        try {
            f.join();
            throw new IllegalStateException("not failed");
        } catch (CompletionException e) {
            return e.getCause() != null ? e.getCause() : e;
        } catch (RuntimeException e) {
            return e;
        }
    }

    /** The ranks of the step. */
    public int size() {
        return tickets.size();
    }

    /** Rank {@code rank}'s run ticket (its own run's identity and raw result). */
    public RunTicket ticket(int rank) {
        return tickets.get(rank);
    }

    /** Rank {@code rank}'s result: its own, once every rank succeeded. */
    public CompletableFuture<RunResult> result(int rank) {
        return results.get(rank);
    }

    /** Every rank's result, in rank order. */
    public List<CompletableFuture<RunResult>> results() {
        return results;
    }
}

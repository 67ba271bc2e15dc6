package org.ptorun.worker;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/**
 * One callable run on every local rank of a {@link org.ptorun.CommGroup} by a {@link Worker}
 * ({@link Worker#enqueueCollective}): rank {@code r}'s run on rank {@code r}'s chip. Ranks
 * are the group's ranks ({@link #ranks()}: this process's, e.g. 2 and 3 of a group whose
 * other ranks live in other processes or on other hosts). Each rank's
 * {@link #result(int) future} completes with its own {@link RunResult} once every local
 * rank's run succeeded; if any failed, every local rank's future fails with a
 * {@link CollectiveStepException} naming the failed ranks.
 */
public final class CollectiveStep {

    private final List<Integer> ranks;
    private final List<RunTicket> tickets;
    private final List<CompletableFuture<RunResult>> results;

    /** {@code tickets.get(i)} is group rank {@code ranks.get(i)}'s run; ranks ascending. */
    CollectiveStep(List<RunTicket> tickets, List<Integer> ranks) {
        this.ranks = List.copyOf(ranks);
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
                        failures.put(this.ranks.get(r), unwrap(f));
                    }
                }
                if (!failures.isEmpty()) {
                    throw new CollectiveStepException(this.ranks.get(me), failures);
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

    /** This process's ranks of the step (group ranks), in rank order. */
    public List<Integer> ranks() {
        return ranks;
    }

    /** The number of this process's ranks in the step. */
    public int size() {
        return tickets.size();
    }

    /** Rank {@code rank}'s run ticket (its own run's identity and raw result). */
    public RunTicket ticket(int rank) {
        return tickets.get(indexOf(rank));
    }

    /** Rank {@code rank}'s result: its own, once every local rank succeeded. */
    public CompletableFuture<RunResult> result(int rank) {
        return results.get(indexOf(rank));
    }

    /** Every local rank's result, in rank order (that of {@link #ranks()}). */
    public List<CompletableFuture<RunResult>> results() {
        return results;
    }

    private int indexOf(int rank) {
        int i = ranks.indexOf(rank);
        if (i < 0) {
            throw new IllegalArgumentException("rank " + rank + " is not one of this process's ranks of the step "
                    + ranks);
        }
        return i;
    }
}

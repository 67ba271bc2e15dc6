package org.ptorun.worker;

import java.time.Duration;
import java.util.List;

/**
 * Several {@link RunObserver}s as one: each is told in the order they were given to the
 * builder, and one that throws does not keep the others from being told (the first
 * exception is rethrown afterwards, for the Worker to log as it does a single observer's).
 */
final class RunObservers implements RunObserver {

    private final List<RunObserver> observers;

    private RunObservers(List<RunObserver> observers) {
        this.observers = List.copyOf(observers);
    }

    /** Null for none, the observer itself for one, else their composition. */
    static RunObserver of(List<RunObserver> observers) {
        if (observers.isEmpty()) {
            return null;
        }
        return observers.size() == 1 ? observers.get(0) : new RunObservers(observers);
    }

    @Override
    public void workerBuilt(Worker worker) {
        each(o -> o.workerBuilt(worker));
    }

    @Override
    public void runFinished(RunTicket ticket, RunResult result, Throwable failure) {
        each(o -> o.runFinished(ticket, result, failure));
    }

    @Override
    public void collectiveStepFinished(CollectiveStep step, Duration latency, Throwable failure) {
        each(o -> o.collectiveStepFinished(step, latency, failure));
    }

    private void each(java.util.function.Consumer<RunObserver> call) {
        Throwable first = null;
        for (RunObserver o : observers) {
            try {
                call.accept(o);
            } catch (VirtualMachineError e) {
                throw e;
            } catch (Throwable e) {
                if (first == null) {
                    first = e;
                } else {
                    first.addSuppressed(e);
                }
            }
        }
        if (first instanceof RuntimeException r) {
            throw r;
        }
        if (first instanceof Error e) {
            throw e;
        }
        if (first != null) {
            throw new IllegalStateException(first);
        }
    }

    @Override
    public String toString() {
        return observers.toString();
    }
}

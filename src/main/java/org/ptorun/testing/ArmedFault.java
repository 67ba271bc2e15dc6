package org.ptorun.testing;

import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A fault armed by {@link EmulatedFaults#armed}: closing it disarms every fault of the
 * driver (whether or not it fired), so a test that leaves its scope early leaves no
 * fault behind for the next. {@code close()} is idempotent.
 */
public final class ArmedFault implements AutoCloseable {

    private final EmulatedFaults faults;
    private final Fault fault;
    private final int afterNCalls;
    private final AtomicBoolean closed = new AtomicBoolean();

    ArmedFault(EmulatedFaults faults, Fault fault, int afterNCalls) {
        this.faults = faults;
        this.fault = fault;
        this.afterNCalls = afterNCalls;
    }

    public Fault fault() {
        return fault;
    }

    public int afterNCalls() {
        return afterNCalls;
    }

    /** Disarms every fault. */
    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            faults.disarm();
        }
    }

    @Override
    public String toString() {
        return "ArmedFault[" + fault + " after " + afterNCalls + " call(s)]";
    }
}

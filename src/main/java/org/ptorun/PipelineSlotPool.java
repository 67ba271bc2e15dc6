package org.ptorun;

import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Mints {@link PipelineSlotLease}s for the slots of a pipeline contract: each acquire
 * takes the lowest free slot and gives it the next generation of that slot (the first
 * lease of a slot has generation 1; generations of a slot strictly increase and are
 * never reused). A lease is released once; a superseded lease can neither be owned nor
 * released. Thread-safe; a blocked {@link #acquire()} parks until a slot is released.
 */
public final class PipelineSlotPool {

    private final int depth;
    private final long[] generation;
    private final boolean[] inUse;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition released = lock.newCondition();

    /** A pool over the slots of a contract. */
    public PipelineSlotPool(PipelineContract contract) {
        this(Objects.requireNonNull(contract, "contract").pipelineDepth());
    }

    /**
     * A pool of {@code depth} slots.
     *
     * @throws IllegalArgumentException outside [1, 2]
     */
    public PipelineSlotPool(int depth) {
        if (depth < 1 || depth > PipelineContract.MAX_DEPTH) {
            throw new IllegalArgumentException("pipeline depth " + depth + " is outside [1, "
                    + PipelineContract.MAX_DEPTH + "]");
        }
        this.depth = depth;
        this.generation = new long[depth];
        this.inUse = new boolean[depth];
    }

    public int depth() {
        return depth;
    }

    /** A lease on the lowest free slot, or empty when every slot is leased. */
    public Optional<PipelineSlotLease> tryAcquire() {
        lock.lock();
        try {
            return Optional.ofNullable(mintLocked());
        } finally {
            lock.unlock();
        }
    }

    /** A lease on the lowest free slot, waiting (parked) until one is released. */
    public PipelineSlotLease acquire() throws InterruptedException {
        lock.lockInterruptibly();
        try {
            PipelineSlotLease lease;
            while ((lease = mintLocked()) == null) {
                released.await();
            }
            return lease;
        } finally {
            lock.unlock();
        }
    }

    /** A lease, waiting at most {@code timeout}; empty if none became free. */
    public Optional<PipelineSlotLease> acquire(long timeout, TimeUnit unit) throws InterruptedException {
        long nanos = unit.toNanos(timeout);
        lock.lockInterruptibly();
        try {
            PipelineSlotLease lease;
            while ((lease = mintLocked()) == null) {
                if (nanos <= 0) {
                    return Optional.empty();
                }
                nanos = released.awaitNanos(nanos);
            }
            return Optional.of(lease);
        } finally {
            lock.unlock();
        }
    }

    private PipelineSlotLease mintLocked() {
        for (int slot = 0; slot < depth; slot++) {
            if (!inUse[slot]) {
                if (generation[slot] == -1L) {
                    throw new IllegalStateException("slot " + slot + " exhausted its u64 lease generations");
                }
                generation[slot]++;
                inUse[slot] = true;
                return PipelineSlotLease.of(slot, generation[slot]);
            }
        }
        return null;
    }

    /** True when the lease is well formed, current for its slot and not released. */
    public boolean owns(PipelineSlotLease lease) {
        lock.lock();
        try {
            return isCurrentLocked(lease) && inUse[lease.slotId()];
        } finally {
            lock.unlock();
        }
    }

    /**
     * Gives the slot back. Idempotent for the current lease of a slot.
     *
     * @return false for a superseded or malformed lease (nothing changes)
     */
    public boolean release(PipelineSlotLease lease) {
        lock.lock();
        try {
            if (!isCurrentLocked(lease)) {
                return false;
            }
            if (inUse[lease.slotId()]) {
                inUse[lease.slotId()] = false;
                released.signal();
            }
            return true;
        } finally {
            lock.unlock();
        }
    }

    /** Slots not leased now. */
    public int available() {
        lock.lock();
        try {
            int free = 0;
            for (boolean used : inUse) {
                free += used ? 0 : 1;
            }
            return free;
        } finally {
            lock.unlock();
        }
    }

    private boolean isCurrentLocked(PipelineSlotLease lease) {
        return lease != null && lease.reserved() == 0 && lease.generation() != 0
                && lease.slotId() >= 0 && lease.slotId() < depth
                && generation[lease.slotId()] == lease.generation();
    }

    /** Test hook: start a slot's generations at {@code value} (to reach exhaustion). */
    void setGenerationForTest(int slot, long value) {
        lock.lock();
        try {
            generation[slot] = value;
        } finally {
            lock.unlock();
        }
    }
}

package org.ptorun;

/**
 * The ChipWorker's check of lease generations, made once per prepare at admission:
 * per slot it remembers the newest generation presented and rejects an older one (a
 * superseded lease). An equal generation is admitted: one lease may carry several
 * runs. Not thread-safe; the ChipWorker calls it under its phase-table lock.
 */
final class SlotGenerationFilter {

    private final long[] newest;

    SlotGenerationFilter(int depth) {
        this.newest = new long[depth];
    }

    /** Admits {@code generation} for {@code slot} (raising the slot's mark), or refuses a stale one. */
    boolean admit(int slot, long generation) {
        if (Long.compareUnsigned(generation, newest[slot]) < 0) {
            return false;
        }
        newest[slot] = generation;
        return true;
    }

    /** The newest generation a slot has seen (0: none). */
    long newest(int slot) {
        return newest[slot];
    }
}

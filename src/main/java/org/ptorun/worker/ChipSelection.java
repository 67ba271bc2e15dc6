package org.ptorun.worker;

/** How {@link Worker#enqueue} picks the chip of a run among the healthy chips. */
public enum ChipSelection {
    /** The chip with the fewest runs enqueued and not yet finalized; ties go to the first chip. */
    LEAST_OUTSTANDING,
    /** The healthy chips in turn. */
    ROUND_ROBIN
}

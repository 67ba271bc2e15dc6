package org.ptorun;

/**
 * The right to use one pipeline slot for a run, minted by a {@link PipelineSlotPool}:
 * the C {@code PipelineSlotLease} (slot id, reserved 0, generation; generation 0 is
 * never valid). A ChipWorker checks the generation once, at admission: a lease older
 * than the newest one its slot has seen is refused as stale.
 */
public record PipelineSlotLease(int slotId, int reserved, long generation) {

    /** A well-formed lease: reserved 0. */
    public static PipelineSlotLease of(int slotId, long generation) {
        return new PipelineSlotLease(slotId, 0, generation);
    }

    @Override
    public String toString() {
        return "PipelineSlotLease[slot=" + slotId + ", generation=" + Long.toUnsignedString(generation)
                + (reserved == 0 ? "" : ", reserved=" + reserved) + "]";
    }
}

package org.ptorun;

/**
 * The token of one prepared native run, returned by
 * {@link ChipWorker#prepare ChipWorker.prepare} and passed to every later phase call.
 * After admission only {@code (slot, runEpoch)} identifies the run: a token whose
 * epoch no longer matches its slot (finalized, superseded, or minted by another
 * ChipWorker) is refused. The other fields are diagnostic.
 *
 * @param slot pipeline slot the run occupies
 * @param generation lease generation the run was admitted under (0: unleased)
 * @param runEpoch process-unique identity of the prepare or blocking run (never 0); it names the
 *        run's diagnostic files with its run id
 * @param runId the caller's mailbox identity
 * @param dispatchId the caller's dispatch order
 */
public record NativeRun(int slot, long generation, long runEpoch, long runId, long dispatchId) {

    /** {@code (run_id=… slot=… generation=… dispatch_id=… run_epoch=…)}, as every message of a run carries it. */
    public String identity() {
        return "(run_id=" + Long.toUnsignedString(runId) + " slot=" + slot
                + " generation=" + Long.toUnsignedString(generation)
                + " dispatch_id=" + Long.toUnsignedString(dispatchId)
                + " run_epoch=" + Long.toUnsignedString(runEpoch) + ")";
    }

    @Override
    public String toString() {
        return "NativeRun" + identity();
    }
}

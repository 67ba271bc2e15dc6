package org.ptorun;

import org.ptorun.internal.NativeConstants;

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

    /**
     * {@code (run_id=… slot=… generation=… dispatch_id=… run_epoch=…)}, as every message of a
     * run carries it: formatted from the one definition the library formats it from too
     * ({@code PTO_RUN_IDENTITY_FORMAT} of pto_runtime_c_api.h).
     */
    public String identity() {
        String[] p = IDENTITY_TEXT;
        return p[0] + Long.toUnsignedString(runId) + p[1] + Integer.toUnsignedString(slot) + p[2]
                + Long.toUnsignedString(generation) + p[3] + Long.toUnsignedString(dispatchId) + p[4]
                + Long.toUnsignedString(runEpoch) + p[5];
    }

    /** The format's text around its five conversions, which must be %llu %u %llu %llu %llu. */
    private static final String[] IDENTITY_TEXT = identityText(NativeConstants.PTO_RUN_IDENTITY_FORMAT);

    static String[] identityText(String format) {
        String[] text = format.split("%llu|%u", -1);
        String conversions = format.replaceAll("[^%]*(%llu|%u)[^%]*", "$1 ").trim();
        if (text.length != 6 || !conversions.equals("%llu %u %llu %llu %llu")) {
            throw new IllegalStateException("PTO_RUN_IDENTITY_FORMAT \"" + format
                    + "\" must convert run_id, slot, generation, dispatch_id, run_epoch as %llu %u %llu %llu %llu");
        }
        return text;
    }

    @Override
    public String toString() {
        return "NativeRun" + identity();
    }
}

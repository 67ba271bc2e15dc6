package org.ptorun;

/**
 * {@code PTO_ERR_OVERLAP_NOT_NOW}, from {@link ChipWorker#prepare} only: the run could be
 * prepared, but not while the run the message names executes, because preparing it now
 * would rewrite working memory that run uses. On trb a run prepared beside an executing
 * one must have the same ring sizing ({@code CallConfig} ring task windows, heaps and
 * dependency pools) as the runtime image that run is bound to; the message names the
 * sizes that differ, e.g. {@code not now: run (run_id=1 slot=0 run_epoch=7) executes and
 * this run's ring sizing differs from the runtime image that run uses (bank 0, rewritten
 * by a rebuild): ring 0 task window 16 (image 1024)}.
 *
 * <p>Nothing was taken: the slot is empty again, the chip fully usable. Prepare the run
 * again once the executing run is finalized. A {@link org.ptorun.worker.Worker} does that
 * itself: its futures never see this exception.
 */
public final class OverlapNotNowException extends PtoRunException {

    private static final long serialVersionUID = 1L;

    public OverlapNotNowException(String description, int code, String nativeMessage, NativeRun run) {
        super(description, code, nativeMessage, run);
    }
}

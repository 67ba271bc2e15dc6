package org.ptorun;

/**
 * The token does not name the run its slot holds (finalized, superseded by a later prepare, minted by another ChipWorker), or the run is in a phase where the call is illegal, or another call on the same run is in progress. Refused before reaching native code where the ChipWorker can tell; the library's PTO_ERR_WRONG_PHASE and PTO_ERR_BAD_STORAGE map here too.
 */
public sealed class StaleRunException extends PtoRunException permits BadStorageException {

    private static final long serialVersionUID = 1L;

    public StaleRunException(String description, int code, String nativeMessage, NativeRun run) {
        super(description, code, nativeMessage, run);
    }
}

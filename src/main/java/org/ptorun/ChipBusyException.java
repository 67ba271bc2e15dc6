package org.ptorun;

/**
 * The slot or the chip is occupied: the slot holds an unfinished run, a successor has no admissible predecessor, or the chip's execution claim or a reservation is held by another run (PTO_ERR_BUSY). Retry after the occupying run is finalized.
 */
public final class ChipBusyException extends PtoRunException {

    private static final long serialVersionUID = 1L;

    public ChipBusyException(String description, int code, String nativeMessage, NativeRun run) {
        super(description, code, nativeMessage, run);
    }
}

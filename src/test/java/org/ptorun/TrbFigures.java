package org.ptorun;

import java.nio.ByteOrder;
import org.ptorun.internal.NativeMemory;

/**
 * What the trb device reports of a run beyond its {@link RunReport}, for tests and the
 * benchmark suite (P13): read from the work block in a pipeline slot's retained staging
 * buffer (device/pto_trb_abi.h, PtoTrbWork), on the sim only, whose device memory is host
 * memory.
 */
public final class TrbFigures {

    /** runtime/trb/trb_runtime.c TRB_ORCHESTRATION_NS_OFFSET (checked there at compile time). */
    static final long ORCHESTRATION_NS_OFFSET = 1896;

    private TrbFigures() {
    }

    /**
     * The device orchestration time of the last run finalized in {@code slot}: the
     * orchestrator thread's CPU time from the orchestration's start to its return
     * (interpreting the program, or replaying its recorded graph), in ns.
     */
    public static long lastOrchestrationNanos(ChipWorker chip, Variant variant, int slot) {
        if (variant.platform() != Variant.Platform.SIM || variant.runtime() != Variant.RuntimeKind.TRB) {
            throw new IllegalArgumentException("the device orchestration time is read on sim trb only, not " + variant);
        }
        long buffer = chip.retainedTempAddr(slot);
        if (buffer == 0) {
            throw new IllegalStateException("pipeline slot " + slot + " has run nothing");
        }
        return NativeMemory.view(buffer + ORCHESTRATION_NS_OFFSET, Long.BYTES).order(ByteOrder.LITTLE_ENDIAN)
                .getLong(0);
    }
}

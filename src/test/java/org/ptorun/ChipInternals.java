package org.ptorun;

import org.ptorun.internal.NativeApi;

/** What the benchmark probes (org.ptorun.bench) may reach of a ChipWorker: not API. */
public final class ChipInternals {

    private ChipInternals() {
    }

    public static long deviceContext(ChipWorker chip) {
        return chip.deviceContext();
    }

    public static long slotStorage(ChipWorker chip, int slot) {
        return chip.runtimeBufferAddresses().get(slot);
    }

    public static NativeApi api(HostRuntime runtime) {
        return runtime.api();
    }
}

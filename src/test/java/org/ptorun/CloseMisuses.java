package org.ptorun;

import static org.assertj.core.api.Assertions.assertThat;
import static org.ptorun.Misuse.of;
import static org.ptorun.MisuseFixture.CHAIN;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * Calls after close, on a separate ChipWorker (device 2) closed with a run in each
 * phase — nothing prepared, prepared, launched, reaped — and close during a call in
 * flight (the package-private {@code onCloseWaits} hook says close is waiting): every
 * call afterwards is an {@link IllegalStateException} "is closed".
 */
final class CloseMisuses {

    private CloseMisuses() {
    }

    private static final String CLOSED = "is closed";

    /** What the token was when the chip closed. */
    private enum At { PREPARED, RUNNING, ENDED }

    static List<Misuse> all() {
        List<Misuse> m = new ArrayList<>();
        String a = "close";
        for (At at : At.values()) {
            for (String call : List.of("launch", "poll", "await", "finalize")) {
                m.add(of(a, call + " a token that was " + at.name().toLowerCase() + " at close",
                        IllegalStateException.class, CLOSED, f -> {
                            ChipWorker chip = f.fresh(2).chip();
                            chip.registerCallable(CHAIN, MisuseFixture.chain());
                            NativeRun run = chip.prepare(CHAIN, MisuseFixture.args(), CallConfig.DEFAULT,
                                    PipelineSlotLease.of(0, 1), 1, 1, null);
                            if (at != At.PREPARED) {
                                chip.launch(run);
                            }
                            if (at == At.ENDED) {
                                chip.await(run);
                            }
                            chip.close();
                            f.refused(() -> phase(chip, call, run));
                        }));
            }
        }
        List<Call> afterClose = List.of(
                new Call("prepare", (c, b) -> c.prepare(CHAIN, MisuseFixture.args(), CallConfig.DEFAULT,
                        PipelineSlotLease.of(0, 2), 1, 1, null)),
                new Call("run", (c, b) -> c.run(CHAIN, MisuseFixture.args(), CallConfig.DEFAULT)),
                new Call("malloc", (c, b) -> c.malloc(64)),
                new Call("copyTo", (c, b) -> c.copyTo(b, new float[4])),
                new Call("copyFrom", (c, b) -> c.copyFrom(b, new float[4])),
                new Call("registerCallable", (c, b) -> c.registerCallable(2, MisuseFixture.chain())),
                new Call("unregisterCallable", (c, b) -> c.unregisterCallable(CHAIN)),
                new Call("free", (c, b) -> c.free(b)),
                new Call("committedDeviceMemory", (c, b) -> c.committedDeviceMemory()),
                new Call("aicpuDlopenCount", (c, b) -> c.aicpuDlopenCount()));
        for (Call call : afterClose) {
            m.add(of(a, call.name() + " after close", IllegalStateException.class, CLOSED, f -> {
                ChipWorker chip = f.fresh(2).chip();
                chip.registerCallable(CHAIN, MisuseFixture.chain());
                DeviceBuffer buffer = chip.malloc(64);
                chip.close();
                f.refused(() -> call.body().call(chip, buffer));
                buffer.close(); // a no-op after close: the device released it
            }));
        }
        for (String inFlight : List.of("launchRun", "waitRun", "prepareRun")) {
            m.add(of(a, "finalize after a close that waited for " + inFlight + " in flight",
                    IllegalStateException.class, CLOSED, f -> {
                        MisuseFixture.GatedChip g = f.fresh(2);
                        ChipWorker chip = g.chip();
                        chip.registerCallable(CHAIN, MisuseFixture.chain());
                        MisuseFixture.Gate gate = g.gate(inFlight);
                        NativeRun[] token = new NativeRun[1];
                        TestThreads.Started caller = TestThreads.start("caller in " + inFlight, () -> {
                            token[0] = chip.prepare(CHAIN, MisuseFixture.args(), CallConfig.DEFAULT,
                                    PipelineSlotLease.of(0, 1), 1, 1, null);
                            if (!inFlight.equals("prepareRun")) {
                                chip.launch(token[0]);
                            }
                            if (inFlight.equals("waitRun")) {
                                chip.await(token[0]);
                            }
                        });
                        gate.awaitEntered();
                        CountDownLatch closeWaits = new CountDownLatch(1);
                        chip.onCloseWaits(closeWaits::countDown);
                        TestThreads.Started closer = TestThreads.start("closer", chip::close);
                        assertThat(closeWaits.await(60, TimeUnit.SECONDS)).as("close waits for the call").isTrue();
                        gate.open();
                        caller.join();
                        closer.join();
                        f.refused(() -> chip.finalizeRun(token[0]));
                    }));
        }
        return m;
    }

    private static void phase(ChipWorker chip, String call, NativeRun run) {
        switch (call) {
            case "launch" -> chip.launch(run);
            case "poll" -> chip.poll(run);
            case "await" -> chip.await(run);
            case "finalize" -> chip.finalizeRun(run);
            default -> throw new AssertionError(call);
        }
    }

    @FunctionalInterface
    private interface CallBody {
        void call(ChipWorker chip, DeviceBuffer buffer) throws Throwable;
    }

    private record Call(String name, CallBody body) {
    }
}

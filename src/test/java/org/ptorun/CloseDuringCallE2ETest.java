package org.ptorun;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.ptorun.LifecycleStressE2ETest.NativeThreads;
import org.ptorun.internal.NativeApi;
import org.ptorun.testing.DriverStats;
import org.ptorun.testing.EmulatedFaults;

/**
 * close() from another thread while a thread is inside each native phase call of a run,
 * on all eight libraries: the call is held at its entry into the real library by a gate,
 * close starts and must wait (the device untouched), the gate opens, the call runs in
 * the library and returns; close then finalizes what the run left and releases the
 * device. Afterwards the run's caller got its own call's outcome, the token is refused
 * with "is closed", no ptorun native thread is left and, onboard, the emulated driver's
 * committed memory is back at its baseline.
 */
class CloseDuringCallE2ETest {

    private static final int N = 256;
    private static final EmulatedFaults DRIVER = EmulatedFaults.of(HostRuntime.load(Variant.parse("a2a3/onboard/hbg")));

    static Stream<Arguments> cases() {
        List<Arguments> cases = new ArrayList<>();
        for (Variant v : SimE2E.allVariants()) {
            for (String fn : List.of("prepareRun", "launchRun", "waitRun", "finalizeRun")) {
                cases.add(Arguments.of(v, fn));
            }
        }
        return cases.stream();
    }

    /** The first call of one function waits at its entry until the test opens the gate. */
    private static final class EntryGate {
        final String fn;
        final CountDownLatch entered = new CountDownLatch(1);
        final CountDownLatch open = new CountDownLatch(1);
        private boolean used;

        EntryGate(String fn) {
            this.fn = fn;
        }

        synchronized boolean take(String name) {
            if (used || !name.equals(fn)) {
                return false;
            }
            used = true;
            return true;
        }

        void pass() throws InterruptedException {
            entered.countDown();
            if (!open.await(60, TimeUnit.SECONDS)) {
                throw new AssertionError("the gate of " + fn + " was never opened");
            }
        }
    }

    private static ChipWorker open(Variant variant, EntryGate gate) {
        HostRuntime runtime = HostRuntime.load(variant);
        NativeApi real = runtime.api();
        InvocationHandler handler = (proxy, method, args) -> {
            if (gate.take(method.getName())) {
                gate.pass();
            }
            try {
                return method.invoke(real, args);
            } catch (InvocationTargetException e) {
                throw e.getCause();
            }
        };
        NativeApi api = (NativeApi) Proxy.newProxyInstance(NativeApi.class.getClassLoader(),
                new Class<?>[] {NativeApi.class}, handler);
        String arch = variant.arch().name().toLowerCase(Locale.ROOT);
        return new ChipWorker(api, variant, runtime.contract(), runtime.runStorageSize(),
                runtime.runStorageAlignment(), 0, ChipWorker.readImage("libptorun_aicpu_" + arch + ".so"),
                ChipWorker.readImage("libptorun_aicore_" + arch + ".so"));
    }

    @ParameterizedTest(name = "{0}: close during {1}")
    @MethodSource("cases")
    void closeWaitsForTheCallInFlightFinalizesAndLeavesNothingBehind(Variant variant, String fn) throws Exception {
        boolean onboard = variant.platform() == Variant.Platform.ONBOARD;
        NativeThreads before = NativeThreads.now();
        DriverStats driverBefore = onboard ? DRIVER.stats() : null;
        EntryGate gate = new EntryGate(fn);
        ChipWorker chip = open(variant, gate);
        chip.registerCallable(0, ChipWorkerE2ETest.vectorChain(N));
        float[] a = SimE2E.random(N, 1);
        float[] b = SimE2E.random(N, 2);
        float[][] outs = new float[5][];
        for (int i = 0; i < outs.length; i++) {
            outs[i] = SimE2E.filled(N);
        }
        TaskArgs args = TaskArgs.of(Tensor.of(a), Tensor.of(b), Tensor.of(outs[0]), Tensor.of(outs[1]),
                Tensor.of(outs[2]), Tensor.of(outs[3]), Tensor.of(outs[4]));
        NativeRun[] token = new NativeRun[1];
        /* a thread per task: the caller blocks in the gate, and on Java 25 runAsync without an
           executor uses the common pool even at parallelism 1 (2 CPUs), where the closer would
           wait behind it for good */
        Executor threads = task -> {
            Thread t = new Thread(task, "close-during-" + fn);
            t.setDaemon(true);
            t.start();
        };
        CompletableFuture<Void> caller = CompletableFuture.runAsync(() -> {
            token[0] = chip.prepare(0, args, CallConfig.DEFAULT, PipelineSlotLease.of(0, 1), 11, 12, null);
            if (fn.equals("prepareRun")) {
                return;
            }
            chip.launch(token[0]);
            if (fn.equals("waitRun")) {
                chip.await(token[0]);
            } else if (fn.equals("finalizeRun")) {
                chip.finalizeRun(token[0]);
            }
        }, threads);
        assertThat(gate.entered.await(60, TimeUnit.SECONDS)).as("the caller reached " + fn).isTrue();

        CountDownLatch closeWaits = new CountDownLatch(1);
        chip.onCloseWaits(closeWaits::countDown);
        CompletableFuture<Void> closer = CompletableFuture.runAsync(chip::close, threads);
        assertThat(closeWaits.await(60, TimeUnit.SECONDS)).as("close waits for the call in flight").isTrue();
        assertThat(closer).isNotDone();

        gate.open.countDown();
        caller.get(60, TimeUnit.SECONDS);
        closer.get(60, TimeUnit.SECONDS);
        assertThat(chip.isClosed()).isTrue();
        if (fn.equals("finalizeRun")) {
            // the caller's finalize ran to the end: the golden result was copied back
            SimE2E.assertBitExact(outs[0], ChipWorkerE2ETest.reference(a, b));
        } else {
            assertThatThrownBy(() -> chip.finalizeRun(token[0])).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("is closed");
        }
        assertThat(NativeThreads.now().minus(before).total()).as("ptorun native threads left after close")
                .isZero();
        if (onboard) {
            DriverStats after = DRIVER.stats();
            assertThat(after.memoryCommitted()).as("the emulated device's committed memory after close")
                    .isEqualTo(driverBefore.memoryCommitted());
            assertThat(after.devicesOpen()).as("emulated devices left open").isEqualTo(driverBefore.devicesOpen());
            assertThat(after.streams()).as("driver streams left").isEqualTo(driverBefore.streams());
        }
    }
}

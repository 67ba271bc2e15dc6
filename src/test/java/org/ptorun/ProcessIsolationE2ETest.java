package org.ptorun;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.ptorun.SimE2E.SENTINEL;
import static org.ptorun.SimE2E.assertBitExact;
import static org.ptorun.SimE2E.filled;
import static org.ptorun.SimE2E.random;
import static org.ptorun.callable.Direction.IN;
import static org.ptorun.callable.Direction.OUT;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.ptorun.callable.ChipCallable;
import org.ptorun.callable.CoreType;
import org.ptorun.callable.Kernel;
import org.ptorun.callable.Param;
import org.ptorun.callable.Program;
import org.ptorun.testing.ArmedFault;
import org.ptorun.testing.ChipCrashes;
import org.ptorun.testing.DriverStats;
import org.ptorun.testing.EmulatedFaults;
import org.ptorun.testing.Fault;

/**
 * Chips in process isolation (docs/isolation.md) on all eight libraries: golden runs,
 * host memory in and out of the chip host's arena, and the crashes a chip process must
 * contain — a kernel that segfaults or aborts, a kill -9 — each failing the chip's run
 * precisely while another chip goes on, and leaving no process or descriptor behind.
 */
class ProcessIsolationE2ETest {

    static List<Variant> variants() {
        return SimE2E.allVariants();
    }

    private static ChipWorker openProcess(Variant variant) {
        return ChipWorker.open(HostRuntime.load(variant), 0, ChipIsolation.PROCESS);
    }

    static List<Variant> onboard() {
        return Variant.all().stream().filter(v -> v.platform() == Variant.Platform.ONBOARD).toList();
    }

    /**
     * The chip host's emulated driver shares the JVM's (docs/isolation.md, Emulated faults): a
     * fault armed here fires there, once; the stats count its device while it is open and
     * nothing of it once the chip closed; a killed chip host drops out once collected.
     */
    @ParameterizedTest
    @MethodSource("onboard")
    void anEmulatedFaultArmedInTheJvmFiresOnceInTheChipHostAndItsStatsAreCounted(Variant variant) {
        HostRuntime runtime = HostRuntime.load(variant);
        EmulatedFaults faults = EmulatedFaults.of(runtime);
        DriverStats baseline = faults.stats();
        try (ChipWorker chip = openProcess(variant)) {
            assertThat(faults.stats().devicesOpen()).isEqualTo(baseline.devicesOpen() + 1);
            try (ArmedFault armed = faults.armed(Fault.ALLOC, 0)) {
                assertThatThrownBy(() -> chip.malloc(4096)).isInstanceOf(DeviceOutOfMemoryException.class);
                DeviceBuffer fine = chip.malloc(4096); // it fired once
                assertThat(faults.stats().allocations()).isGreaterThan(baseline.allocations());
                fine.close();
            }
        }
        assertThat(faults.stats()).as("a clean exit gives everything back").isEqualTo(baseline);
        try (ChipWorker chip = openProcess(variant)) {
            assertThat(faults.stats().devicesOpen()).isEqualTo(baseline.devicesOpen() + 1);
            assertThat(ChipCrashes.kill(chip, ChipCrashes.SIGKILL)).isTrue();
        }
        assertThat(faults.stats()).as("a killed chip host drops out once collected").isEqualTo(baseline);
    }

    @ParameterizedTest
    @MethodSource("variants")
    void aChipInItsOwnProcessRunsTheVectorChainBitExact(Variant variant) {
        int n = 4096;
        try (ChipWorker chip = openProcess(variant)) {
            assertThat(chip.isolation()).isEqualTo(ChipIsolation.PROCESS);
            long pid = chip.processId().orElseThrow();
            assertThat(pid).isNotEqualTo(ProcessHandle.current().pid());
            assertThat(chipHosts()).contains(pid);
            chip.registerCallable(1, ChipWorkerE2ETest.vectorChain(n));
            for (int run = 0; run < 4; run++) {
                float[] a = random(n, run);
                float[] b = random(n, 100 + run);
                float[] f = filled(n);
                float[][] scratch = {filled(n), filled(n), filled(n), filled(n)};
                chip.run(1, TaskArgs.of(Tensor.of(a), Tensor.of(b), Tensor.of(f), Tensor.of(scratch[0]),
                        Tensor.of(scratch[1]), Tensor.of(scratch[2]), Tensor.of(scratch[3])), CallConfig.DEFAULT);
                assertBitExact(f, ChipWorkerE2ETest.reference(a, b));
            }
        }
    }

    @ParameterizedTest
    @MethodSource("variants")
    void directBuffersAndDeviceBuffersCrossIntoTheChipProcess(Variant variant) {
        int n = 1 << 20; // 4 MiB: more than one bounce through the arena
        float[] a = random(n, 1);
        float[] b = random(n, 2);
        ByteBuffer da = direct(a);
        ByteBuffer db = direct(b);
        ByteBuffer dc = ByteBuffer.allocateDirect(4 * n).order(ByteOrder.nativeOrder());
        try (ChipWorker chip = openProcess(variant)) {
            chip.registerCallable(1, vadd(n));
            // direct buffers outside the arena: staged into it and copied back
            chip.run(1, TaskArgs.of(Tensor.of(da, DType.F32, n), Tensor.of(db, DType.F32, n),
                    Tensor.of(dc, DType.F32, n)), CallConfig.DEFAULT);
            float[] c = new float[n];
            dc.asFloatBuffer().get(c);
            assertBitExact(c, sum(a, b));
            // device buffers: copies from arrays and direct buffers, and back
            try (DeviceBuffer x = chip.malloc(4L * n); DeviceBuffer y = chip.malloc(4L * n);
                 DeviceBuffer z = chip.malloc(4L * n)) {
                chip.copyTo(x, a);
                chip.copyTo(y, db.duplicate());
                chip.run(1, TaskArgs.of(Tensor.of(x, DType.F32, n), Tensor.of(y, DType.F32, n),
                        Tensor.of(z, DType.F32, n)), CallConfig.DEFAULT);
                float[] back = new float[n];
                chip.copyFrom(z, back);
                assertBitExact(back, sum(a, b));
                ByteBuffer out = ByteBuffer.allocateDirect(4 * n).order(ByteOrder.nativeOrder());
                chip.copyFrom(z, out);
                float[] viaDirect = new float[n];
                out.asFloatBuffer().get(viaDirect);
                assertBitExact(viaDirect, sum(a, b));
            }
        }
    }

    @ParameterizedTest
    @MethodSource("variants")
    void aSegfaultingKernelFailsItsRunAndItsChipNotTheJvmNorAnotherChip(Variant variant) {
        crashesItsChipOnly(variant, "segfault", "signal 11");
    }

    @ParameterizedTest
    @MethodSource("variants")
    void anAbortingKernelFailsItsRunAndItsChipNotTheJvmNorAnotherChip(Variant variant) {
        crashesItsChipOnly(variant, "abort_kernel", "signal 6");
    }

    private void crashesItsChipOnly(Variant variant, String kernel, String signal) {
        // once to warm what the JVM opens on first use (the proxy, its threads, lazily opened jars),
        // then again counting descriptors
        crashOnce(variant, kernel, signal);
        Map<String, Long> fds = openFds();
        crashOnce(variant, kernel, signal);
        assertNoDescriptorLeft(fds);
    }

    private void crashOnce(Variant variant, String kernel, String signal) {
        int n = 1024;
        List<Long> before = chipHosts();
        try (ChipWorker doomed = openProcess(variant); ChipWorker healthy = openProcess(variant)) {
            long pid = doomed.processId().orElseThrow();
            doomed.registerCallable(1, crashing(kernel, n));
            healthy.registerCallable(1, vadd(n));
            assertThatThrownBy(() -> doomed.run(1, TaskArgs.of(Tensor.of(random(n, 1)), Tensor.of(filled(n))),
                    CallConfig.DEFAULT))
                    .isInstanceOf(ChipCrashedException.class)
                    .hasMessageContaining("pid " + pid)
                    .hasMessageContaining(signal)
                    .hasMessageContaining("run_id=");
            assertThat(doomed.isHealthy()).as("a crashed chip is unhealthy").isFalse();
            assertThatThrownBy(() -> doomed.malloc(64)).isInstanceOf(PtoRunException.class);
            assertThat(chipHosts()).as("the dead chip host was collected").doesNotContain(pid);
            // the other chip never stopped
            float[] a = random(n, 2);
            float[] b = random(n, 3);
            float[] c = filled(n);
            healthy.run(1, TaskArgs.of(Tensor.of(a), Tensor.of(b), Tensor.of(c)), CallConfig.DEFAULT);
            assertBitExact(c, sum(a, b));
        }
        assertThat(chipHosts()).as("no chip host is left").isEqualTo(before);
    }

    @ParameterizedTest
    @MethodSource("variants")
    void aKilledChipFailsTheRunInFlightAndEveryLaterCall(Variant variant) {
        int n = 1024;
        try (ChipWorker chip = openProcess(variant)) {
            chip.registerCallable(1, vadd(n));
            float[] a = random(n, 4);
            float[] b = random(n, 5);
            float[] c = filled(n);
            chip.run(1, TaskArgs.of(Tensor.of(a), Tensor.of(b), Tensor.of(c)), CallConfig.DEFAULT);
            assertBitExact(c, sum(a, b));
            assertThat(ChipCrashes.kill(chip, ChipCrashes.SIGKILL)).isTrue();
            float[] d = filled(n);
            assertThatThrownBy(() -> chip.run(1, TaskArgs.of(Tensor.of(a), Tensor.of(b), Tensor.of(d)),
                    CallConfig.DEFAULT))
                    .isInstanceOf(ChipCrashedException.class)
                    .hasMessageContaining("signal 9");
            assertThat(d).as("nothing copied back").containsOnly(SENTINEL);
            assertThat(ChipCrashes.kill(chip, ChipCrashes.SIGKILL)).as("gone already").isFalse();
        }
    }

    @ParameterizedTest
    @MethodSource("variants")
    void aHangingKernelIsBoundedByItsTimeoutAndItsChipProcessNotTheJvm(Variant variant) {
        int n = 256;
        CallConfig bounded = CallConfig.builder().timeoutMs(300).build();
        try (ChipWorker doomed = openProcess(variant); ChipWorker healthy = openProcess(variant)) {
            long pid = doomed.processId().orElseThrow();
            doomed.registerCallable(1, crashing("hang", n));
            healthy.registerCallable(1, vadd(n));
            float[] out = filled(n);
            assertThatThrownBy(() -> doomed.run(1, TaskArgs.of(Tensor.of(random(n, 1)), Tensor.of(out)), bounded))
                    .isInstanceOfAny(RunTimeoutException.class, ChipCrashedException.class)
                    .hasMessageContaining("run_id=");
            assertThat(out).as("nothing copied back").containsOnly(SENTINEL);
            float[] a = random(n, 2);
            float[] b = random(n, 3);
            float[] c = filled(n);
            healthy.run(1, TaskArgs.of(Tensor.of(a), Tensor.of(b), Tensor.of(c)), CallConfig.DEFAULT);
            assertBitExact(c, sum(a, b));
            doomed.close(); // a kernel still parked in the chip host: close kills it
            assertThat(chipHosts()).doesNotContain(pid);
        }
    }

    /**
     * kill -9 lands at a random phase call (prepare, launch, poll, await or finalize; the
     * killer is released just before the chosen call and kills while it runs or right
     * after): every run before it is golden, the run it hits and every later one fail with
     * {@link ChipCrashedException}, no failed run copies anything back, and the chip host
     * is gone with no descriptor left.
     */
    @ParameterizedTest
    @MethodSource("variants")
    void aKillAtARandomPhaseFailsPreciselyAndNothingElse(Variant variant) throws Exception {
        int n = 4096;
        openProcess(variant).close(); // warm: the proxy and its threads
        Map<String, Long> fds = openFds();
        java.util.SplittableRandom rnd = new java.util.SplittableRandom(variant.hashCode() * 31L + 7);
        for (int trial = 0; trial < 3; trial++) {
            int runs = 4;
            int phasesPerRun = 4; // prepare, launch, poll, finalize (the third is an await every other run)
            int killAt = rnd.nextInt(runs * phasesPerRun);
            java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);
            try (ChipWorker chip = openProcess(variant)) {
                chip.registerCallable(1, vadd(n));
                Thread killer = new Thread(() -> {
                    try {
                        release.await();
                        ChipCrashes.kill(chip, ChipCrashes.SIGKILL);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }, "killer");
                killer.start();
                int phase = 0;
                boolean crashed = false;
                for (int r = 0; r < runs; r++) {
                    float[] a = random(n, trial * 10L + r);
                    float[] b = random(n, trial * 10L + r + 100);
                    float[] c = filled(n);
                    try {
                        if (phase++ == killAt) {
                            release.countDown();
                        }
                        NativeRun run = chip.prepare(1, TaskArgs.of(Tensor.of(a), Tensor.of(b), Tensor.of(c)),
                                CallConfig.DEFAULT, PipelineSlotLease.of(0, 1), r, r, null);
                        try {
                            if (phase++ == killAt) {
                                release.countDown();
                            }
                            chip.launch(run);
                            if (phase++ == killAt) {
                                release.countDown();
                            }
                            if (r % 2 == 0) {
                                chip.await(run);
                            } else {
                                chip.poll(run);
                            }
                        } finally {
                            if (phase++ == killAt) {
                                release.countDown();
                            }
                            chip.finalizeRun(run);
                        }
                        assertThat(crashed).as("no run succeeds after a failed one").isFalse();
                        assertBitExact(c, sum(a, b));
                    } catch (ChipCrashedException e) {
                        crashed = true;
                        assertThat(e).hasMessageContaining("signal 9");
                        assertThat(c).as("a failed run copies nothing back").containsOnly(SENTINEL);
                    }
                }
                release.countDown(); // a kill point past the last call
                killer.join();
                if (!crashed) {
                    assertThatThrownBy(() -> chip.malloc(64)).isInstanceOf(ChipCrashedException.class);
                }
            }
        }
        assertThat(chipHosts()).as("no chip host is left").isEmpty();
        assertNoDescriptorLeft(fds);
    }

    /**
     * A comm group whose ranks are chip processes loses one mid-collective (its process
     * killed while its peers wait in a barrier for it): the lost rank's call fails with
     * {@code PTO_ERR_CHIP_CRASHED}, every surviving rank's with a {@link CommException} naming it
     * within the group's timeout, and nothing is left in /dev/shm once the chips close.
     */
    @ParameterizedTest
    @MethodSource("variants")
    void aGroupLosingARanksProcessMidCollectiveFailsEverySurvivorPrecisely(Variant variant,
            @org.junit.jupiter.api.io.TempDir Path dir) throws Exception {
        HostRuntime runtime = HostRuntime.load(variant);
        List<ChipWorker> chips = new java.util.ArrayList<>();
        for (int d = 0; d < 3; d++) {
            chips.add(ChipWorker.open(runtime, d, ChipIsolation.PROCESS));
        }
        try (CommGroup group = CommGroup.open(chips, dir.resolve("rootinfo"), java.time.Duration.ofSeconds(3))) {
            group.allocWindows(4096);
            group.barrier(); // all three alive: it completes
            List<CommRank> ranks = group.ranks();
            Throwable[] failures = new Throwable[2];
            java.util.concurrent.CountDownLatch entering = new java.util.concurrent.CountDownLatch(2);
            List<Thread> survivors = new java.util.ArrayList<>();
            for (int r = 0; r < 2; r++) {
                int rank = r;
                Thread t = new Thread(() -> {
                    entering.countDown();
                    failures[rank] = org.assertj.core.api.Assertions.catchThrowable(() -> ranks.get(rank).barrier());
                }, "rank-" + r);
                survivors.add(t);
                t.start();
            }
            entering.await();
            assertThat(ChipCrashes.kill(chips.get(2), ChipCrashes.SIGKILL)).isTrue();
            assertThatThrownBy(() -> ranks.get(2).barrier()).isInstanceOfSatisfying(CommException.class,
                    e -> assertThat(e.error()).contains(PtoError.CHIP_CRASHED));
            for (Thread t : survivors) {
                t.join();
            }
            for (int r = 0; r < 2; r++) {
                assertThat(failures[r]).as("rank %d", r).isInstanceOf(CommException.class);
                assertThat(((CommException) failures[r]).failedRank()).as(failures[r].getMessage()).hasValue(2);
            }
        } finally {
            chips.forEach(ChipWorker::close);
        }
        assertThat(chipHosts()).as("no chip host is left").isEmpty();
        assertThat(CommMultiProcessE2ETest.leftInDevShm()).isEmpty();
    }

    // ---- helpers ------------------------------------------------------------------------------------

    /** c = a + b: one vadd task (ChipWorkerE2ETest's heavy run of one task). */
    static ChipCallable vadd(int n) {
        return ChipWorkerE2ETest.heavy(n, 1);
    }

    /** x IN, y OUT: one task of {@code kernel} of libptorun_test_crash.so. */
    static ChipCallable crashing(String kernel, int n) {
        long bytes = 4L * n;
        return ChipCallable.builder()
                .signature(IN, OUT)
                .child(3, CoreType.AIV, Kernel.fromLibrary(SimE2E.testLibrary("libptorun_test_crash.so"), kernel))
                .program(Program.builder()
                        .submit(3, Param.tensor(0, IN, 0, bytes), Param.tensor(1, OUT, 0, bytes))
                        .build())
                .build();
    }

    static float[] sum(float[] a, float[] b) {
        float[] c = new float[a.length];
        for (int i = 0; i < a.length; i++) {
            c[i] = a[i] + b[i];
        }
        return c;
    }

    private static ByteBuffer direct(float[] values) {
        ByteBuffer b = ByteBuffer.allocateDirect(4 * values.length).order(ByteOrder.nativeOrder());
        b.asFloatBuffer().put(values);
        return b;
    }

    /** The pids of this JVM's chip host children that still exist (zombies included). */
    static List<Long> chipHosts() {
        try (Stream<ProcessHandle> children = ProcessHandle.current().children()) {
            return children.filter(p -> p.info().command().map(c -> c.endsWith("ptorun-chiphost")).orElse(false)
                    || isChipHost(p.pid())).map(ProcessHandle::pid).sorted().toList();
        }
    }

    private static boolean isChipHost(long pid) {
        try {
            return Files.readString(Path.of("/proc/" + pid + "/comm")).trim().startsWith("ptorun-chiphos");
        } catch (IOException e) {
            return false;
        }
    }

    /**
     * The JVM's open descriptors by what they name, less two kinds that are not ptorun's to
     * close: the emulated driver's state memfd (created once, when the first onboard chip host
     * is handed it, and kept for the life of the process: docs/isolation.md, Emulated faults)
     * and the JVM's own files (a jar or a JDK file it opens lazily, e.g. on a class's first use).
     */
    static Map<String, Long> openFds() {
        String javaHome = System.getProperty("java.home");
        try (Stream<Path> fds = Files.list(Path.of("/proc/self/fd"))) {
            return fds.map(ProcessIsolationE2ETest::target)
                    .filter(t -> !t.isEmpty() && !t.startsWith("/memfd:ptorun-emudrv-state"))
                    .filter(t -> !t.endsWith(".jar") && !t.startsWith(javaHome))
                    .collect(Collectors.groupingBy(t -> t, TreeMap::new, Collectors.counting()));
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /** Fails naming every descriptor opened since {@code before} and still open. */
    static void assertNoDescriptorLeft(Map<String, Long> before) {
        Map<String, Long> left = new TreeMap<>();
        openFds().forEach((target, count) -> {
            long more = count - before.getOrDefault(target, 0L);
            if (more > 0) {
                left.put(target, more);
            }
        });
        assertThat(left).as("no descriptor is left").isEmpty();
    }

    private static String target(Path fd) {
        try {
            return Files.readSymbolicLink(fd).toString();
        } catch (IOException e) {
            return ""; // closed meanwhile (e.g. the listing's own descriptor)
        }
    }
}

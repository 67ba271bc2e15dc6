package org.ptorun;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.ptorun.testing.DriverStats;
import org.ptorun.testing.EmulatedFaults;
import org.ptorun.testing.Fault;
import org.ptorun.testlog.LogCapture;
import org.slf4j.event.Level;

/**
 * The fault model of communication groups (docs/communication.md): a window allocation
 * that fails on one rank fails on every rank and leaves nothing behind; a peer lost under
 * the emulated driver fails its peers' barriers naming it; a rank that never arrives
 * times the barrier out naming it, and the broken group fails every later meeting at
 * once. Afterwards no shared memory of the group is left in /dev/shm, the driver's
 * counters are back where they were and the chips still run.
 */
class CommFaultsE2ETest {

    private static final EmulatedFaults FAULTS =
            EmulatedFaults.of(HostRuntime.load(Variant.parse("a2a3/onboard/hbg")));

    static List<Variant> onboard() {
        return Variant.all().stream().filter(v -> v.platform() == Variant.Platform.ONBOARD).toList();
    }

    static List<Variant> variants() {
        return Variant.all();
    }

    @AfterEach
    void disarm() {
        FAULTS.disarm();
    }

    /** Calls {@code call} on every rank at once, one thread each (a collective call waits for its peers). */
    private static List<Throwable> failuresOnEveryRank(CommGroup group, java.util.function.Consumer<CommRank> call)
            throws InterruptedException {
        List<CommRank> ranks = group.ranks();
        Throwable[] out = new Throwable[ranks.size()];
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < out.length; i++) {
            int index = i;
            threads.add(new Thread(() -> out[index] = catchThrowable(() -> call.accept(ranks.get(index)))));
        }
        threads.forEach(Thread::start);
        for (Thread t : threads) {
            t.join();
        }
        return java.util.Arrays.asList(out);
    }

    @ParameterizedTest
    @MethodSource("onboard")
    void aWindowAllocationFailingOnOneRankFailsOnEveryRankAndLeavesNothing(Variant variant, @TempDir Path dir)
            throws InterruptedException {
        DriverStats before = FAULTS.stats();
        List<ChipWorker> chips = CommCollectivesE2ETest.openChips(variant, 3);
        try (CommGroup group = CommGroup.open(chips, dir.resolve("rootinfo"), Duration.ofSeconds(20))) {
            FAULTS.inject(Fault.ALLOC, 0);
            List<Throwable> failures = failuresOnEveryRank(group, rank -> rank.allocWindows(1 << 16));
            int failed = -1;
            for (Throwable t : failures) {
                assertThat(t).isInstanceOf(CommException.class);
                CommException e = (CommException) t;
                assertThat(e.error()).contains(PtoError.OUT_OF_MEMORY);
                assertThat(e.failedRank()).as(e.getMessage()).isPresent();
                failed = failed < 0 ? e.failedRank().getAsInt() : failed;
                assertThat(e.failedRank().getAsInt()).as("every rank names the same rank").isEqualTo(failed);
            }
            assertThat(FAULTS.stats().commWindowSets()).isEqualTo(before.commWindowSets());
            assertThat(CommMultiProcessE2ETest.leftInDevShm()).isEmpty();
            // the group is still usable
            group.allocWindows(1 << 16);
            group.barrier();
            assertThat(FAULTS.stats().commWindowSets()).isEqualTo(before.commWindowSets() + 3);
        } finally {
            chips.forEach(ChipWorker::close);
        }
        assertThat(FAULTS.stats()).isEqualTo(before);
        assertThat(CommMultiProcessE2ETest.leftInDevShm()).isEmpty();
    }

    @ParameterizedTest
    @MethodSource("onboard")
    void aPeerLostFailsItsPeersBarriersNamingIt(Variant variant, @TempDir Path dir) throws InterruptedException {
        DriverStats before = FAULTS.stats();
        List<ChipWorker> chips = CommCollectivesE2ETest.openChips(variant, 3);
        try (CommGroup group = CommGroup.open(chips, dir.resolve("rootinfo"), Duration.ofSeconds(30))) {
            group.allocWindows(4096);
            FAULTS.inject(Fault.PEER_LOST, 0);
            List<Throwable> failures = failuresOnEveryRank(group, CommRank::barrier);
            int lost = -1;
            for (int r = 0; r < failures.size(); r++) {
                assertThat(failures.get(r)).as("rank %d", r).isInstanceOf(CommException.class);
                CommException e = (CommException) failures.get(r);
                assertThat(e.error()).contains(PtoError.DEVICE);
                if (e.failedRank().isEmpty()) {
                    assertThat(lost).as("only the lost rank's own call names nobody: " + e.getMessage()).isNegative();
                    lost = r;
                }
            }
            assertThat(lost).as("one rank was lost").isNotNegative();
            for (int r = 0; r < failures.size(); r++) {
                if (r != lost) {
                    assertThat(((CommException) failures.get(r)).failedRank()).hasValue(lost);
                }
            }
        } finally {
            chips.forEach(ChipWorker::close);
        }
        assertThat(FAULTS.stats()).isEqualTo(before);
        assertThat(CommMultiProcessE2ETest.leftInDevShm()).isEmpty();
    }

    @ParameterizedTest
    @MethodSource("variants")
    void aRankThatNeverArrivesTimesTheBarrierOutAndTheBrokenGroupFailsAtOnce(Variant variant, @TempDir Path dir) {
        List<ChipWorker> chips = CommCollectivesE2ETest.openChips(variant, 2);
        try (CommGroup group = CommGroup.open(chips, dir.resolve("rootinfo"), Duration.ofMillis(300))) {
            Throwable t = catchThrowable(group.rank(0)::barrier);
            assertThat(t).isInstanceOf(CommException.class);
            CommException e = (CommException) t;
            assertThat(e.error()).contains(PtoError.TIMEOUT);
            assertThat(e.failedRank()).as(e.getMessage()).hasValue(1);
            Throwable later = catchThrowable(group.rank(1)::barrier);
            assertThat(later).isInstanceOf(CommException.class);
            assertThat(((CommException) later).failedRank()).hasValue(1);
            // the chips are fine
            for (ChipWorker chip : chips) {
                assertThat(chip.isHealthy()).isTrue();
                try (DeviceBuffer b = chip.malloc(64)) {
                    chip.copyTo(b, new float[16]);
                }
            }
        } finally {
            chips.forEach(ChipWorker::close);
        }
        assertThat(CommMultiProcessE2ETest.leftInDevShm()).isEmpty();
    }

    @ParameterizedTest
    @MethodSource("variants")
    void aGroupWhoseRankNeverJoinsTimesOutAndLeavesNoFile(Variant variant, @TempDir Path dir) {
        try (ChipWorker chip = ChipWorker.open(HostRuntime.load(variant), 0)) {
            Path rootInfo = dir.resolve("rootinfo");
            Throwable t = catchThrowable(() -> CommGroup.join(chip, 0, 2, rootInfo, Duration.ofMillis(300)));
            assertThat(t).isInstanceOf(CommException.class);
            assertThat(((CommException) t).error()).contains(PtoError.TIMEOUT);
            assertThat(rootInfo).doesNotExist();
            assertThat(CommMultiProcessE2ETest.leftInDevShm()).isEmpty();
            assertThat(chip.isHealthy()).isTrue();
        }
    }

    @ParameterizedTest
    @MethodSource("onboard")
    void aPeerLostMidCollectiveFailsItsPeersKernelsNamingIt(Variant variant, @TempDir Path dir) throws Exception {
        DriverStats before = FAULTS.stats();
        int count = 1024;
        List<ChipWorker> chips = CommCollectivesE2ETest.openChips(variant, 3);
        try (CommGroup group = CommGroup.open(chips, dir.resolve("rootinfo"), Duration.ofSeconds(30))) {
            group.allocWindows(4L * count);
            for (ChipWorker chip : chips) {
                chip.registerCallable(1, CommCollectivesE2ETest.single("allreduce_sum",
                        List.of(org.ptorun.callable.Direction.INOUT), 1, new long[] {4L * count}));
            }
            FAULTS.inject(Fault.PEER_LOST, 0); // the first launch of the step loses its device
            List<Throwable> failures = failuresOnEveryRank(group, rank -> rank.chip().run(1, new TaskArgs()
                    .tensor(Tensor.of(rank.window(), DType.F32)).scalar(rank.deviceContext()), CallConfig.DEFAULT));
            int lost = -1;
            for (int r = 0; r < failures.size(); r++) {
                if (failures.get(r) instanceof DeviceErrorException) {
                    assertThat(lost).as("one rank lost its device").isNegative();
                    lost = r;
                }
            }
            assertThat(lost).as("a rank lost its device: " + failures).isNotNegative();
            for (int r = 0; r < failures.size(); r++) {
                if (r != lost) {
                    assertThat(failures.get(r)).as("rank %d", r).isInstanceOf(KernelFaultException.class)
                            .hasMessageContaining("rank " + lost);
                }
            }
            assertThat(chips.get(lost).isHealthy()).isFalse();
        } finally {
            chips.forEach(ChipWorker::close);
        }
        assertThat(FAULTS.stats()).isEqualTo(before);
        assertThat(CommMultiProcessE2ETest.leftInDevShm()).isEmpty();
    }

    @ParameterizedTest
    @MethodSource("variants")
    void misusesAreRefusedBeforeTheLibraryAndAfterClose(Variant variant, @TempDir Path dir) {
        List<ChipWorker> chips = CommCollectivesE2ETest.openChips(variant, 2);
        try {
            assertThatThrownBy(() -> CommGroup.open(List.of(), dir.resolve("r"), Duration.ofSeconds(1)))
                    .isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> CommGroup.join(chips, 1, 2, dir.resolve("r"), Duration.ofSeconds(1)))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("ranks 1..2");
            assertThatThrownBy(() -> CommGroup.open(chips, dir.resolve("r"), Duration.ZERO))
                    .isInstanceOf(IllegalArgumentException.class);
            Throwable bad = catchThrowable(() -> CommGroup.open(chips, dir.resolve("missing/r"), Duration.ofSeconds(5)));
            assertThat(bad).isInstanceOf(CommException.class);
            assertThat(((CommException) bad).error()).isPresent();
            CommGroup group = CommGroup.open(chips, dir.resolve("rootinfo"), Duration.ofSeconds(20));
            CommRank zero = group.rank(0);
            assertThatThrownBy(zero::deviceContext).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("no windows yet");
            assertThatThrownBy(() -> group.rank(2)).isInstanceOf(IllegalArgumentException.class);
            group.allocWindows(4096);
            assertThatThrownBy(() -> zero.windowSlice(4000, 100)).isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> zero.peerWindow(2)).isInstanceOf(IndexOutOfBoundsException.class);
            Throwable twice = catchThrowable(() -> zero.allocWindows(4096));
            assertThat(twice).isInstanceOf(CommException.class);
            assertThat(((CommException) twice).error()).contains(PtoError.WRONG_PHASE);
            assertThat(zero.windowSize()).isEqualTo(4096);
            group.close();
            group.close(); // idempotent
            assertThatThrownBy(group::barrier).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining(group + " is closed");
            assertThatThrownBy(zero::barrier).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining(group + " is closed");
            assertThat(CommMultiProcessE2ETest.leftInDevShm()).isEmpty();
        } finally {
            chips.forEach(ChipWorker::close);
        }
    }

    @ParameterizedTest
    @MethodSource("variants")
    void closingAChipFirstMakesItsRankLeaveAndItsPeerSeesItGone(Variant variant, @TempDir Path dir) {
        List<ChipWorker> chips = CommCollectivesE2ETest.openChips(variant, 2);
        try (CommGroup group = CommGroup.open(chips, dir.resolve("rootinfo"), Duration.ofSeconds(20))) {
            group.allocWindows(4096);
            try (LogCapture logs = LogCapture.open()) {
                chips.get(1).close();
                assertThat(logs.messages(Level.WARN)).singleElement().asString()
                        .contains("closed with a comm rank still in its group: the rank left it");
            }
            Throwable t = catchThrowable(group.rank(0)::barrier);
            assertThat(t).isInstanceOf(CommException.class);
            assertThat(((CommException) t).failedRank()).hasValue(1);
            assertThat(t).hasMessageContaining("it left the group");
        } finally {
            chips.forEach(ChipWorker::close);
        }
        assertThat(CommMultiProcessE2ETest.leftInDevShm()).isEmpty();
    }
}

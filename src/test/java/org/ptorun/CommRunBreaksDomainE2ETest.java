package org.ptorun;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.ptorun.callable.ChipCallable;
import org.ptorun.callable.Direction;
import org.ptorun.worker.ChipHealth;
import org.ptorun.worker.CollectiveStep;
import org.ptorun.worker.CollectiveStepException;
import org.ptorun.worker.Worker;

/**
 * A rank whose collective run is refused before its collective kernel starts — by the
 * ChipWorker itself (a DeviceBuffer of another chip), or by the library at prepare
 * (test_comm_run_break.c) — breaks the domain its comm scalar names, naming itself,
 * so its peers' collectives fail at once naming it instead of waiting in their entry
 * sync for the group timeout (docs/communication.md, Fault model). The group timeout is
 * minutes: a peer that waited for it would outlive the test's join bound of 60 s, so only
 * the fail-fast passes; nothing here measures time. A tensor too small for the program is
 * refused earlier, at enqueue, for the whole step: nothing to break.
 */
class CommRunBreaksDomainE2ETest {

    private static final Duration GROUP_TIMEOUT = Duration.ofMinutes(5);
    private static final int STEP = 3;
    private static final int RANKS = 3;
    private static final int BAD = 1;
    private static final int COUNT = 64;

    static List<Variant> variants() {
        return SimE2E.allVariants();
    }

    /** allreduce_sum over a view of COUNT floats of tensor 0; the comm scalar is scalar 0. */
    private static ChipCallable allreduce() {
        return CommCollectivesE2ETest.single("allreduce_sum", List.of(Direction.INOUT), 1, new long[] {4L * COUNT});
    }

    private static void assertNamesTheBreaker(Throwable f, int rank) {
        assertThat(f).as("rank %d", rank).isInstanceOf(KernelFaultException.class);
        assertThat(f.getMessage()).as("rank %d", rank)
                .contains("rank " + BAD + " is gone or broke the communication domain");
    }

    @ParameterizedTest
    @MethodSource("variants")
    void aStepWhoseRankIsRefusedAtPrepareFailsEveryRankNamingItNotAtTheTimeout(Variant variant, @TempDir Path dir)
            throws Exception {
        try (Worker worker = Worker.builder().variant(variant).devices(0, 1, 2).queueCapacity(16).background(true)
                .build()) {
            worker.register(STEP, allreduce()).get(60, TimeUnit.SECONDS);
            CommGroup group = worker.openCommGroup(dir.resolve("rootinfo"), GROUP_TIMEOUT);
            try {
                group.allocWindows(4L * COUNT);
                // rank 1 passes rank 0's window, a DeviceBuffer of another chip: admitted, then refused by
                // its ChipWorker at prepare, before the library
                CollectiveStep step = worker.enqueueCollective(group, STEP, rank -> new TaskArgs()
                        .tensor(Tensor.of(rank.rank() == BAD ? group.rank(0).window() : rank.window(), DType.F32))
                        .scalar(rank.deviceContext()), CallConfig.DEFAULT);
                for (int r = 0; r < RANKS; r++) {
                    int rank = r;
                    Throwable t = catchThrowable(() -> step.result(rank).get(60, TimeUnit.SECONDS));
                    assertThat(t).as("rank %d", r).isInstanceOf(ExecutionException.class);
                    assertThat(t.getCause()).isInstanceOf(CollectiveStepException.class);
                    CollectiveStepException e = (CollectiveStepException) t.getCause();
                    assertThat(e.failedRanks()).contains(BAD);
                    assertThat(e.failures().get(BAD)).isInstanceOf(IllegalArgumentException.class)
                            .hasMessageContaining("belongs to another ChipWorker");
                    for (int peer = 0; peer < RANKS; peer++) {
                        if (peer != BAD) {
                            assertNamesTheBreaker(e.failures().get(peer), peer);
                        }
                    }
                }
                for (CommRank rank : group.ranks()) {
                    assertThat(rank.chip().isHealthy()).as("a broken group poisons no chip").isTrue();
                }
            } finally {
                group.close();
            }
        }
    }

    /**
     * A rank whose tensor is too small for the program is refused at enqueueCollective, for the
     * whole step: no rank's run is admitted, so no peer waits in a collective and nothing is
     * broken — the next, correct step runs on the same group.
     */
    @ParameterizedTest
    @MethodSource("variants")
    void aStepWhoseRanksTensorIsTooSmallIsRefusedAtEnqueueAndTheGroupStaysUsable(Variant variant,
            @TempDir Path dir) throws Exception {
        try (Worker worker = Worker.builder().variant(variant).devices(0, 1, 2).queueCapacity(16).background(true)
                .build()) {
            worker.register(STEP, allreduce()).get(60, TimeUnit.SECONDS);
            CommGroup group = worker.openCommGroup(dir.resolve("rootinfo"), GROUP_TIMEOUT);
            try {
                group.allocWindows(4L * COUNT);
                // rank 1's tensor holds half of what the program's view of it reaches
                assertThatThrownBy(() -> worker.enqueueCollective(group, STEP, rank -> new TaskArgs()
                        .tensor(Tensor.of(rank.rank() == BAD ? rank.windowSlice(0, 2L * COUNT) : rank.window(),
                                DType.F32))
                        .scalar(rank.deviceContext()), CallConfig.DEFAULT))
                        .isExactlyInstanceOf(IllegalArgumentException.class)
                        .hasMessage("rank 1: callable 3: tensor argument 0 (INOUT) holds " + 2 * COUNT + " bytes, but"
                                + " the callable's program needs " + 4 * COUNT + ": instruction 0 (SUBMIT func_id 0)"
                                + " parameter 0 ends at byte " + 4 * COUNT);
                for (ChipHealth h : worker.health()) {
                    assertThat(h.outstanding()).as("nothing admitted on device %d", h.deviceId()).isZero();
                }
                for (CommRank rank : group.ranks()) {
                    rank.chip().copyTo(rank.window(), ones(COUNT, rank.rank() + 1));
                }
                CollectiveStep step = worker.enqueueCollective(group, STEP, rank -> new TaskArgs()
                        .tensor(Tensor.of(rank.window(), DType.F32)).scalar(rank.deviceContext()), CallConfig.DEFAULT);
                for (CommRank rank : group.ranks()) {
                    step.result(rank.rank()).get(60, TimeUnit.SECONDS);
                    float[] back = new float[COUNT];
                    rank.chip().copyFrom(rank.window(), back);
                    assertThat(back).containsOnly(1f + 2f + 3f);
                }
            } finally {
                group.close();
            }
        }
    }

    private static float[] ones(int n, float value) {
        float[] x = new float[n];
        java.util.Arrays.fill(x, value);
        return x;
    }

    @ParameterizedTest
    @MethodSource("variants")
    void aRunTheChipWorkerRefusesBreaksItsDomainSoThePeersFailNamingIt(Variant variant, @TempDir Path dir)
            throws Exception {
        List<ChipWorker> chips = CommCollectivesE2ETest.openChips(variant, RANKS);
        CommGroup group = null;
        ExecutorService pool = Executors.newFixedThreadPool(RANKS - 1);
        try {
            group = CommGroup.open(chips, dir.resolve("rootinfo"), GROUP_TIMEOUT);
            group.allocWindows(4L * COUNT);
            for (ChipWorker chip : chips) {
                chip.registerCallable(STEP, allreduce());
            }
            CommGroup g = group;
            List<Future<Throwable>> peers = new ArrayList<>();
            for (int r = 0; r < RANKS; r++) {
                if (r == BAD) {
                    continue;
                }
                CommRank rank = g.rank(r);
                peers.add(pool.submit(() -> catchThrowable(() -> rank.chip().run(STEP, new TaskArgs()
                        .tensor(Tensor.of(rank.window(), DType.F32)).scalar(rank.deviceContext()),
                        CallConfig.DEFAULT))));
            }
            // rank 1 passes rank 0's window, a DeviceBuffer of another chip: refused before the library
            CommRank bad = g.rank(BAD);
            assertThatThrownBy(() -> bad.chip().run(STEP, new TaskArgs()
                    .tensor(Tensor.of(g.rank(0).window(), DType.F32)).scalar(bad.deviceContext()),
                    CallConfig.DEFAULT))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("belongs to another ChipWorker");
            for (int i = 0; i < peers.size(); i++) {
                assertNamesTheBreaker(peers.get(i).get(60, TimeUnit.SECONDS), i == 0 ? 0 : 2);
            }
            for (ChipWorker chip : chips) {
                assertThat(chip.isHealthy()).isTrue();
            }
        } finally {
            pool.shutdownNow();
            CommCollectivesE2ETest.closeAll(group, chips);
        }
    }

    @ParameterizedTest
    @MethodSource("variants")
    void aRunNamingNoDomainBreaksNothing(Variant variant, @TempDir Path dir) throws Exception {
        List<ChipWorker> chips = CommCollectivesE2ETest.openChips(variant, RANKS);
        CommGroup group = null;
        try {
            group = CommGroup.open(chips, dir.resolve("rootinfo"), GROUP_TIMEOUT);
            group.allocWindows(4L * COUNT);
            for (ChipWorker chip : chips) {
                chip.registerCallable(STEP, allreduce());
            }
            // rank 1's refused run names no domain (its scalar is not a descriptor): nothing breaks
            CommGroup g = group;
            CommRank bad = g.rank(BAD);
            assertThatThrownBy(() -> bad.chip().run(STEP, new TaskArgs()
                    .tensor(Tensor.of(g.rank(0).window(), DType.F32)).scalar(bad.deviceContext() + 8),
                    CallConfig.DEFAULT)).isInstanceOf(IllegalArgumentException.class);
            List<Throwable> results = CommCollectivesE2ETest.onEveryRank(RANKS, r -> catchThrowable(() ->
                    g.rank(r).chip().run(STEP, new TaskArgs().tensor(Tensor.of(g.rank(r).window(), DType.F32))
                            .scalar(g.rank(r).deviceContext()), CallConfig.DEFAULT)));
            assertThat(results).containsOnlyNulls();
        } finally {
            CommCollectivesE2ETest.closeAll(group, chips);
        }
    }
}

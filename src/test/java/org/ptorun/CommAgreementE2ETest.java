package org.ptorun;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;
import static org.ptorun.SimE2E.assertBitExact;
import static org.ptorun.SimE2E.random;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.ptorun.callable.Direction;

/**
 * Ranks that ask a collective call for different things fail alike on all eight libraries
 * (docs/kernels.md, Collectives; docs/communication.md, Fault model): an allreduce_sum whose
 * ranks pass [1001, 1000, 1001] elements fails on every rank with a
 * {@link CollectiveMismatchException} naming rank 1 and the three counts, moves no data and
 * leaves the domain usable; windows asked with [4096, 65536, 4096] bytes are refused on every
 * rank with one code, {@code failedRank() == 1} and both sizes, nothing left in /dev/shm, and
 * the group allocates equal windows afterwards.
 */
class CommAgreementE2ETest {

    private static final Duration TIMEOUT = Duration.ofSeconds(20);
    private static final Pattern KERNEL_TEXT = Pattern.compile("allreduce_sum: the ranks disagree[^;]*");

    static List<Variant> variants() {
        return SimE2E.allVariants();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("variants")
    void allreduceCountsThatDifferFailEveryRankNamingTheOddRank(Variant variant, @TempDir Path dir) throws Exception {
        int[] counts = {1001, 1000, 1001};
        int n = counts.length;
        int agreed = 1001;
        List<ChipWorker> chips = CommCollectivesE2ETest.openChips(variant, n);
        CommGroup group = null;
        try {
            group = CommGroup.open(chips, dir.resolve("rootinfo"), TIMEOUT);
            long windowBytes = 4L * agreed;
            group.allocWindows(windowBytes);
            for (int r = 0; r < n; r++) {
                chips.get(r).registerCallable(1, CommCollectivesE2ETest.single("allreduce_sum",
                        List.of(Direction.INOUT), 1, new long[] {4L * counts[r]}));
                chips.get(r).registerCallable(2, CommCollectivesE2ETest.single("allreduce_sum",
                        List.of(Direction.INOUT), 1, new long[] {4L * agreed}));
            }
            float[][] inputs = new float[n][];
            for (int r = 0; r < n; r++) {
                inputs[r] = random(agreed, 300 + r);
            }
            CommGroup g = group;
            List<Object> outcomes = CommCollectivesE2ETest.onEveryRank(n, r -> {
                CommRank rank = g.rank(r);
                rank.chip().copyTo(rank.window(), inputs[r]);
                DeviceBuffer x = rank.windowSlice(0, 4L * counts[r]);
                Throwable t = catchThrowable(() -> rank.chip().run(1,
                        new TaskArgs().tensor(Tensor.of(x, DType.F32)).scalar(rank.deviceContext()),
                        CallConfig.DEFAULT));
                float[] after = new float[agreed];
                rank.chip().copyFrom(rank.window(), after);
                return new Object[] {t, after};
            });
            String text = null;
            for (int r = 0; r < n; r++) {
                Object[] o = (Object[]) outcomes.get(r);
                Throwable t = (Throwable) o[0];
                assertThat(t).as("rank %d", r).isInstanceOf(CollectiveMismatchException.class);
                CollectiveMismatchException e = (CollectiveMismatchException) t;
                assertThat(e.error()).contains(PtoError.RANKS_DISAGREE);
                assertThat(e.ranks()).as(e.getMessage()).containsExactly(1);
                assertThat(e.subject()).contains("element count");
                assertThat(e.getMessage()).contains("rank 1 has 1000, the others 1001")
                        .contains("rank 0 1001, rank 1 1000, rank 2 1001");
                Matcher m = KERNEL_TEXT.matcher(e.nativeMessage());
                assertThat(m.find()).as(e.nativeMessage()).isTrue();
                text = text == null ? m.group() : text;
                assertThat(m.group()).as("every rank reports the same thing").isEqualTo(text);
                // no data moved
                assertBitExact((float[]) o[1], inputs[r]);
                assertThat(chips.get(r).isHealthy()).isTrue();
            }

            // the domain is not broken: the next, agreeing allreduce is bit-exact
            float[] sum = inputs[0].clone();
            for (int r = 1; r < n; r++) {
                for (int i = 0; i < agreed; i++) {
                    sum[i] = sum[i] + inputs[r][i];
                }
            }
            List<float[]> reduced = CommCollectivesE2ETest.onEveryRank(n, r -> {
                CommRank rank = g.rank(r);
                DeviceBuffer x = rank.windowSlice(0, 4L * agreed);
                rank.chip().run(2, new TaskArgs().tensor(Tensor.of(x, DType.F32)).scalar(rank.deviceContext()),
                        CallConfig.DEFAULT);
                float[] out = new float[agreed];
                rank.chip().copyFrom(x, out);
                return out;
            });
            for (float[] out : reduced) {
                assertBitExact(out, sum);
            }
        } finally {
            CommCollectivesE2ETest.closeAll(group, chips);
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("variants")
    void windowsOfDifferentSizesAreRefusedAlikeNamingTheOddRank(Variant variant, @TempDir Path dir)
            throws Exception {
        long[] sizes = {4096, 65536, 4096};
        List<ChipWorker> chips = CommCollectivesE2ETest.openChips(variant, 3);
        CommGroup group = null;
        try {
            group = CommGroup.open(chips, dir.resolve("rootinfo"), TIMEOUT);
            CommGroup g = group;
            List<Throwable> failures = CommCollectivesE2ETest.onEveryRank(3,
                    r -> catchThrowable(() -> g.rank(r).allocWindows(sizes[r])));
            assertRefusedNamingRank1(failures, "comm_alloc_windows");
            assertThat(CommMultiProcessE2ETest.leftInDevShm()).isEmpty();

            // the group is usable: equal windows, then domain windows that differ and agree
            group.allocWindows(4096);
            int[] all = {0, 1, 2};
            List<Throwable> domainFailures = CommCollectivesE2ETest.onEveryRank(3,
                    r -> catchThrowable(() -> g.rank(r).allocDomainWindows(7, all, sizes[r])));
            assertRefusedNamingRank1(domainFailures, "comm_alloc_domain_windows");
            assertThat(CommMultiProcessE2ETest.leftInDevShm()).isEmpty();
            assertThat(group.allocDomainWindows(7, all, 8192)).hasSize(3);
            group.barrier();
        } finally {
            CommCollectivesE2ETest.closeAll(group, chips);
        }
        assertThat(CommMultiProcessE2ETest.leftInDevShm()).isEmpty();
    }

    private static void assertRefusedNamingRank1(List<Throwable> failures, String call) {
        String text = null;
        for (int r = 0; r < failures.size(); r++) {
            Throwable t = failures.get(r);
            assertThat(t).as("rank %d", r).isInstanceOf(CommException.class);
            CommException e = (CommException) t;
            assertThat(e.error()).as(e.getMessage()).contains(PtoError.RANKS_DISAGREE);
            assertThat(e.failedRank()).as(e.getMessage()).hasValue(1);
            assertThat(e.nativeMessage()).contains(call + ": the ranks disagree on the window size: "
                    + "rank 1 asked for 65536 bytes, the others for 4096");
            text = text == null ? e.nativeMessage() : text;
            assertThat(e.nativeMessage()).as("every rank reports the same thing").isEqualTo(text);
        }
    }
}

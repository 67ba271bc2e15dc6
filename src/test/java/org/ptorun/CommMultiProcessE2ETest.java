package org.ptorun;

import static org.assertj.core.api.Assertions.assertThat;
import static org.ptorun.SimE2E.assertBitExact;
import static org.ptorun.SimE2E.random;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.ptorun.callable.Direction;

/**
 * Two processes × two chips on sim, one group of four ranks that meet through the
 * root-info path: this JVM holds ranks 0 and 1, a second JVM it starts
 * ({@link CommPeerMain}) ranks 2 and 3. Every rank allreduces its window and checks the
 * rank-order sum of all four ranks' data, in both processes; nothing of the group is
 * left in /dev/shm or beside the root-info path afterwards.
 */
class CommMultiProcessE2ETest {

    static final int COUNT = 4099;
    private static final int ALLREDUCE = 1;

    static List<Variant> simVariants() {
        return SimE2E.allVariants().stream().filter(v -> v.platform() == Variant.Platform.SIM).toList();
    }

    static float[] input(int rank) {
        return random(COUNT, 700 + rank);
    }

    /** Joins ranks first.. first+local-1 of size, allreduces every local window, checks each against the sum. */
    static void allreduceAndCheck(Variant variant, Path rootInfo, int first, int size, int local) throws Exception {
        List<ChipWorker> chips = CommPeerMain.open(variant, first, local);
        CommGroup group = null;
        try {
            group = CommGroup.join(chips, first, size, rootInfo, CommPeerMain.TIMEOUT);
            group.allocWindows(4L * COUNT);
            float[] sum = input(0).clone();
            for (int r = 1; r < size; r++) {
                float[] x = input(r);
                for (int i = 0; i < COUNT; i++) {
                    sum[i] = sum[i] + x[i];
                }
            }
            List<float[]> out = group.onEveryRank(rank -> {
                rank.chip().registerCallable(ALLREDUCE, CommCollectivesE2ETest.single("allreduce_sum",
                        List.of(Direction.INOUT), 1, new long[] {4L * COUNT}));
                rank.chip().copyTo(rank.window(), input(rank.rank()));
                rank.chip().run(ALLREDUCE, new TaskArgs().tensor(Tensor.of(rank.window(), DType.F32))
                        .scalar(rank.deviceContext()), CallConfig.DEFAULT);
                float[] result = new float[COUNT];
                rank.chip().copyFrom(rank.window(), result);
                return result;
            });
            for (float[] result : out) {
                assertBitExact(result, sum);
            }
            group.barrier(); // nobody leaves while a peer still reads its window
        } finally {
            if (group != null) {
                group.close();
            }
            chips.forEach(ChipWorker::close);
        }
    }

    @ParameterizedTest
    @MethodSource("simVariants")
    void twoProcessesOfTwoChipsAllreduceThroughTheRootInfoPath(Variant variant, @TempDir Path dir) throws Exception {
        Path rootInfo = dir.resolve("rootinfo");
        Path log = dir.resolve("peer.log");
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        Process peer = new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"),
                CommPeerMain.class.getName(), variant.toString(), rootInfo.toString(), "2", "4", "2")
                .redirectErrorStream(true).redirectOutput(log.toFile()).start();
        try {
            allreduceAndCheck(variant, rootInfo, 0, 4, 2);
            assertThat(peer.waitFor(120, TimeUnit.SECONDS)).as("the peer process ended").isTrue();
            assertThat(peer.exitValue()).as(Files.readString(log, StandardCharsets.UTF_8)).isZero();
        } finally {
            peer.destroyForcibly();
        }
        assertThat(rootInfo).doesNotExist();
        assertThat(leftInDevShm()).isEmpty();
    }

    /** Shared-memory names of this process's comm groups (rank 0 names them) still in /dev/shm. */
    static List<String> leftInDevShm() {
        String prefix = "ptorun-comm-" + ProcessHandle.current().pid() + "-";
        File[] files = new File("/dev/shm").listFiles((d, name) -> name.startsWith(prefix));
        return files == null ? List.of() : java.util.Arrays.stream(files).map(File::getName).toList();
    }
}

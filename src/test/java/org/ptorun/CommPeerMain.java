package org.ptorun;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * The other process of {@link CommMultiProcessE2ETest}: joins ranks {@code first, first+1, ...}
 * of a group of {@code size} through the root-info path, allreduces each rank's window
 * ({@link CommMultiProcessE2ETest#input}) and checks every element against the rank-order
 * sum. Exit status 0 when every rank holds the sum, 1 with the reason on stderr otherwise.
 *
 * <p>Arguments: variant rootinfo first size localRanks.
 */
public final class CommPeerMain {

    private CommPeerMain() {
    }

    public static void main(String[] args) throws Exception {
        Variant variant = Variant.parse(args[0]);
        Path rootInfo = Path.of(args[1]);
        int first = Integer.parseInt(args[2]);
        int size = Integer.parseInt(args[3]);
        int local = Integer.parseInt(args[4]);
        try {
            CommMultiProcessE2ETest.allreduceAndCheck(variant, rootInfo, first, size, local);
        } catch (Throwable t) {
            t.printStackTrace();
            System.exit(1);
        }
        System.exit(0);
    }

    static List<ChipWorker> open(Variant variant, int first, int local) {
        HostRuntime runtime = HostRuntime.load(variant);
        List<ChipWorker> chips = new ArrayList<>();
        for (int i = 0; i < local; i++) {
            chips.add(ChipWorker.open(runtime, first + i));
        }
        return chips;
    }

    static final Duration TIMEOUT = Duration.ofSeconds(60);
}

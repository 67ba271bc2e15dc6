package org.ptorun.hosts;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.IntStream;
import org.ptorun.CallConfig;
import org.ptorun.ChipWorker;
import org.ptorun.CommGroup;
import org.ptorun.CommRank;
import org.ptorun.DType;
import org.ptorun.DeviceBuffer;
import org.ptorun.HostRuntime;
import org.ptorun.TaskArgs;
import org.ptorun.Tensor;
import org.ptorun.Variant;
import org.ptorun.callable.ChipCallable;
import org.ptorun.callable.CoreType;
import org.ptorun.callable.Direction;
import org.ptorun.callable.Kernel;
import org.ptorun.callable.Param;
import org.ptorun.callable.Program;

/**
 * One host's process of {@link AcrossHostsE2ETest}: opens {@code localRanks} chips, joins
 * ranks {@code firstRank ..} of a group of {@code size} through the root info, allocates the
 * windows and runs the scenario, then meets every rank at a barrier (nobody leaves while a
 * peer reads its window) and leaves. Prints one line per check; exit status 0 when every
 * check passed, 1 with the reason on standard error otherwise.
 *
 * <p>Arguments: {@code variant rootInfo firstRank localRanks size hostOfEachRank scenario},
 * e.g. {@code a2a3/sim/hbg ptorun-gloo:v1;store=10.79.0.1:40000;group=... 2 2 4 0,0,1,1 collectives}.
 * A root info that does not start with {@code ptorun-gloo:} is a root-info file path (ranks of
 * one host: a check of this program itself).
 *
 * <p>Scenario {@code collectives}: allreduce_sum, allgather, reduce_scatter and broadcast
 * (from the last rank on another host than rank 0) over 1 000 003 and 4 194 304 floats, every
 * element compared bit for bit with a Java reference that sums as the libraries do across
 * hosts (docs/communication.md, Summation order): within each host in rank order, then the
 * hosts' partial sums in the order of their lowest ranks.
 */
public final class HostRanksMain {

    static final Duration TIMEOUT = Duration.ofSeconds(60);
    static final int[] COUNTS = {1_000_003, 4_194_304};
    private static final int KERNEL = 0;
    private static final int ALLREDUCE = 0;
    private static final int ALLGATHER = 1;
    private static final int REDUCE_SCATTER = 2;
    private static final int BROADCAST = 3;

    private HostRanksMain() {
    }

    public static void main(String[] args) {
        int status;
        try {
            if (args.length != 7) {
                throw new IllegalArgumentException("arguments: variant rootInfo firstRank localRanks size "
                        + "hostOfEachRank scenario; got " + List.of(args));
            }
            int failed = run(Variant.parse(args[0]), args[1], Integer.parseInt(args[2]), Integer.parseInt(args[3]),
                    Integer.parseInt(args[4]), hosts(args[5]), args[6]);
            status = failed == 0 ? 0 : 1;
            if (failed > 0) {
                System.err.println(failed + " check(s) failed (the FAIL lines on standard output)");
            }
        } catch (Throwable t) {
            t.printStackTrace();
            status = 1;
        }
        System.out.flush();
        System.err.flush();
        System.exit(status);
    }

    static int[] hosts(String commaList) {
        return Arrays.stream(commaList.split(",")).mapToInt(Integer::parseInt).toArray();
    }

    /** Runs the scenario; the number of failed checks. */
    static int run(Variant variant, String rootInfo, int first, int local, int size, int[] hostOf, String scenario) {
        if (hostOf.length != size) {
            throw new IllegalArgumentException("hostOfEachRank names " + hostOf.length + " ranks, not " + size);
        }
        if (scenario.equals("gemm")) {
            return GemmStepScenario.run(variant, rootInfo, first, local, size, hostOf);
        }
        if (scenario.equals("bench")) {
            return AllreduceBenchScenario.run(variant, rootInfo, first, local, size, hostOf);
        }
        if (!scenario.equals("collectives")) {
            throw new IllegalArgumentException("unknown scenario '" + scenario + "' (collectives, gemm, bench)");
        }
        HostRuntime runtime = HostRuntime.load(variant);
        List<ChipWorker> chips = new ArrayList<>();
        CommGroup group = null;
        try {
            for (int i = 0; i < local; i++) {
                chips.add(ChipWorker.open(runtime, first + i));
            }
            group = join(variant, chips, rootInfo, first, size);
            int failed = collectives(group, hostOf);
            group.barrier(); // nobody leaves while a peer still reads its window
            return failed;
        } finally {
            try {
                if (group != null) {
                    group.close();
                }
            } finally {
                chips.forEach(ChipWorker::close);
            }
        }
    }

    /**
     * Joins {@code chips} as ranks {@code first ..} of {@code size} through a root-info string
     * (or, for a check of one host, a root-info file path) and says so with the time it took.
     */
    static CommGroup join(Variant variant, List<ChipWorker> chips, String rootInfo, int first, int size) {
        long t0 = System.nanoTime();
        CommGroup group = rootInfo.startsWith("ptorun-gloo:")
                ? CommGroup.join(chips, first, size, rootInfo, TIMEOUT)
                : CommGroup.join(chips, first, size, Path.of(rootInfo), TIMEOUT);
        System.out.printf("joined ranks %d..%d of %s on %s (%d ms)%n", first, first + chips.size() - 1, group,
                variant, (System.nanoTime() - t0) / 1_000_000);
        return group;
    }

    // ---- collectives -----------------------------------------------------------------------------

    private static int collectives(CommGroup group, int[] hostOf) {
        int size = group.size();
        long maxBytes = 4L * Arrays.stream(COUNTS).max().orElseThrow();
        group.allocWindows(maxBytes * (size + 1)); // x at 0, y (allgather: size × x) after it
        int root = broadcastRoot(hostOf);
        int failed = peerViews(group, hostOf);
        for (int c = 0; c < COUNTS.length; c++) {
            int n = COUNTS[c];
            long bytes = 4L * n;
            int caseIndex = c;
            float[][] x = new float[size][];
            for (int r = 0; r < size; r++) {
                x[r] = input(r, caseIndex, n);
            }
            float[] sum = referenceSum(x, hostOf);
            for (CommRank rank : group.ranks()) {
                int len = chunkStart(rank.rank() + 1, n, size) - chunkStart(rank.rank(), n, size);
                ChipWorker chip = rank.chip();
                chip.registerCallable(id(c, ALLREDUCE), single("allreduce_sum", List.of(Direction.INOUT), 1,
                        bytes));
                chip.registerCallable(id(c, ALLGATHER), single("allgather", List.of(Direction.IN, Direction.OUT), 1,
                        bytes, bytes * size));
                chip.registerCallable(id(c, REDUCE_SCATTER), single("reduce_scatter",
                        List.of(Direction.IN, Direction.OUT), 1, bytes, 4L * len));
                chip.registerCallable(id(c, BROADCAST), single("broadcast", List.of(Direction.INOUT), 2, bytes));
            }

            failed += check(group, "allreduce_sum", n, r -> sum, rank -> {
                DeviceBuffer xb = rank.windowSlice(0, bytes);
                rank.chip().copyTo(xb, x[rank.rank()]);
                rank.chip().run(id(caseIndex, ALLREDUCE), new TaskArgs().tensor(Tensor.of(xb, DType.F32))
                        .scalar(rank.deviceContext()), CallConfig.DEFAULT);
                return read(rank, xb, n);
            });

            float[] gathered = new float[n * size];
            for (int r = 0; r < size; r++) {
                System.arraycopy(x[r], 0, gathered, r * n, n);
            }
            failed += check(group, "allgather", n, r -> gathered, rank -> {
                DeviceBuffer xb = rank.windowSlice(0, bytes);
                DeviceBuffer yb = rank.windowSlice(bytes, bytes * size);
                rank.chip().copyTo(xb, x[rank.rank()]);
                rank.chip().run(id(caseIndex, ALLGATHER), new TaskArgs().tensor(Tensor.of(xb, DType.F32))
                        .tensor(Tensor.of(yb, DType.F32)).scalar(rank.deviceContext()), CallConfig.DEFAULT);
                return read(rank, yb, n * size);
            });

            failed += check(group, "reduce_scatter", n,
                    r -> Arrays.copyOfRange(sum, chunkStart(r, n, size), chunkStart(r + 1, n, size)), rank -> {
                        int r = rank.rank();
                        int len = chunkStart(r + 1, n, size) - chunkStart(r, n, size);
                        DeviceBuffer xb = rank.windowSlice(0, bytes);
                        DeviceBuffer yb = rank.windowSlice(bytes, 4L * len);
                        rank.chip().copyTo(xb, x[r]);
                        rank.chip().run(id(caseIndex, REDUCE_SCATTER), new TaskArgs().tensor(Tensor.of(xb, DType.F32))
                                .tensor(Tensor.of(yb, DType.F32)).scalar(rank.deviceContext()), CallConfig.DEFAULT);
                        return read(rank, yb, len);
                    });

            failed += check(group, "broadcast from rank " + root, n, r -> x[root], rank -> {
                DeviceBuffer xb = rank.windowSlice(0, bytes);
                rank.chip().copyTo(xb, x[rank.rank()]);
                rank.chip().run(id(caseIndex, BROADCAST), new TaskArgs().tensor(Tensor.of(xb, DType.F32))
                        .scalar(rank.deviceContext()).scalar(root), CallConfig.DEFAULT);
                return read(rank, xb, n);
            });
        }
        failed += derivedContexts(group, hostOf);
        return failed;
    }

    /**
     * Derived contexts (slices of the group's windows from 16 MiB, signals of their own): one
     * over every rank and one over every rank but 0 (across hosts too when the group is; its
     * first host's leader then is not the group's). Over each, an allreduce_sum of the first
     * count's floats is bit-exact against the reference over its members; over the second, a
     * broadcast from its last member on another host than its first member's. Uses the
     * callables of case 0. The number of failed checks.
     */
    private static int derivedContexts(CommGroup group, int[] hostOf) {
        int n = COUNTS[0];
        long bytes = 4L * n;
        long offset = 4L * COUNTS[1];
        int size = group.size();
        int[] all = IntStream.range(0, size).toArray();
        int[] allButFirst = IntStream.range(1, size).toArray();
        int failed = 0;
        for (int[] members : List.of(all, allButFirst)) {
            String what = "derived " + Arrays.toString(members);
            float[][] x = new float[members.length][];
            int[] memberHosts = new int[members.length];
            for (int d = 0; d < members.length; d++) {
                x[d] = input(members[d], 7, n);
                memberHosts[d] = hostOf[members[d]];
            }
            float[] sum = referenceSum(x, memberHosts);
            Map<Integer, Long> contexts = new ConcurrentHashMap<>();
            group.onEveryRank(rank -> {
                if (Arrays.binarySearch(members, rank.rank()) >= 0) {
                    contexts.put(rank.rank(), rank.derive(members, offset, bytes));
                }
                return null;
            });
            failed += checkMembers(group, members, what + " allreduce_sum", n, r -> sum, rank -> {
                int d = Arrays.binarySearch(members, rank.rank());
                DeviceBuffer xb = rank.windowSlice(offset, bytes);
                rank.chip().copyTo(xb, x[d]);
                rank.chip().run(id(0, ALLREDUCE), new TaskArgs().tensor(Tensor.of(xb, DType.F32))
                        .scalar(contexts.get(rank.rank())), CallConfig.DEFAULT);
                return read(rank, xb, n);
            });
            if (members == allButFirst && members.length > 1) {
                int root = broadcastRoot(memberHosts);
                failed += checkMembers(group, members, what + " broadcast from rank " + members[root], n,
                        r -> x[root], rank -> {
                            int d = Arrays.binarySearch(members, rank.rank());
                            DeviceBuffer xb = rank.windowSlice(offset, bytes);
                            rank.chip().copyTo(xb, x[d]);
                            rank.chip().run(id(0, BROADCAST), new TaskArgs().tensor(Tensor.of(xb, DType.F32))
                                    .scalar(contexts.get(rank.rank())).scalar(root), CallConfig.DEFAULT);
                            return read(rank, xb, n);
                        });
            }
        }
        return failed;
    }

    /** {@link #check} over the local ranks among {@code members} (the others return nothing). */
    private static int checkMembers(CommGroup group, int[] members, String what, int n,
                                    java.util.function.IntFunction<float[]> expected,
                                    java.util.function.Function<CommRank, float[]> call) {
        return check(group, what, n, expected,
                rank -> Arrays.binarySearch(members, rank.rank()) >= 0 ? call.apply(rank) : null);
    }

    /**
     * A view of a peer's window works for a peer of this host and is refused, naming both
     * ranks, for one on another host. The number of failed checks.
     */
    private static int peerViews(CommGroup group, int[] hostOf) {
        int failed = 0;
        for (CommRank rank : group.ranks()) {
            for (int peer = 0; peer < group.size(); peer++) {
                String refusal = null;
                try {
                    rank.peerTensor(peer, 0, DType.F32, 4);
                } catch (IllegalArgumentException e) {
                    refusal = e.getMessage();
                }
                boolean remote = hostOf[peer] != hostOf[rank.rank()];
                String expected = "rank " + peer + " is on another host than rank " + rank.rank();
                boolean ok = remote ? refusal != null && refusal.contains(expected) : refusal == null;
                System.out.printf("%s peer view of rank %d from rank %d (%s): %s%n", ok ? "PASS" : "FAIL", peer,
                        rank.rank(), remote ? "another host: refused" : "this host: a view",
                        refusal == null ? "a view" : refusal);
                failed += ok ? 0 : 1;
            }
        }
        return failed;
    }

    /** Runs {@code call} on every local rank at once and compares each result; the number of mismatches. */
    private static int check(CommGroup group, String what, int n, java.util.function.IntFunction<float[]> expected,
                             java.util.function.Function<CommRank, float[]> call) {
        long t0 = System.nanoTime();
        List<float[]> results = group.onEveryRank(call);
        long ms = (System.nanoTime() - t0) / 1_000_000;
        int failed = 0;
        for (int i = 0; i < results.size(); i++) {
            int rank = group.ranks().get(i).rank();
            if (results.get(i) == null) {
                continue; // not a member of the call's domain
            }
            String mismatch = firstMismatch(results.get(i), expected.apply(rank));
            if (mismatch == null) {
                System.out.printf("PASS %s of %d floats: rank %d bit-exact (%d ms)%n", what, n, rank, ms);
            } else {
                System.out.printf("FAIL %s of %d floats: rank %d %s%n", what, n, rank, mismatch);
                failed++;
            }
        }
        return failed;
    }

    static String firstMismatch(float[] actual, float[] expected) {
        if (actual.length != expected.length) {
            return "has " + actual.length + " elements, the reference " + expected.length;
        }
        for (int i = 0; i < expected.length; i++) {
            int a = Float.floatToRawIntBits(actual[i]);
            int e = Float.floatToRawIntBits(expected[i]);
            if (a != e) {
                return "element " + i + ": " + actual[i] + " (0x" + Integer.toHexString(a) + ") != reference "
                        + expected[i] + " (0x" + Integer.toHexString(e) + ")";
            }
        }
        return null;
    }

    private static float[] read(CommRank rank, DeviceBuffer buffer, int count) {
        float[] out = new float[count];
        rank.chip().copyFrom(buffer, out);
        return out;
    }

    /** The last rank on another host than rank 0's (the last rank when every rank shares one host). */
    static int broadcastRoot(int[] hostOf) {
        for (int r = hostOf.length - 1; r > 0; r--) {
            if (hostOf[r] != hostOf[0]) {
                return r;
            }
        }
        return hostOf.length - 1;
    }

    /**
     * The sum every rank must get: {@code h = ((x_a + x_b) + x_c) ...} over each host's ranks in
     * rank order, then {@code ((h_first) + h_second) + ...} over the hosts in the order of their
     * lowest ranks (on one host: the rank-order sum).
     */
    static float[] referenceSum(float[][] x, int[] hostOf) {
        int n = x[0].length;
        List<Integer> hostOrder = new ArrayList<>();
        for (int h : hostOf) {
            if (!hostOrder.contains(h)) {
                hostOrder.add(h); // ranks ascend, so a host appears first at its lowest rank
            }
        }
        float[] total = null;
        for (int host : hostOrder) {
            float[] partial = null;
            for (int r = 0; r < hostOf.length; r++) {
                if (hostOf[r] != host) {
                    continue;
                }
                if (partial == null) {
                    partial = x[r].clone();
                } else {
                    for (int i = 0; i < n; i++) {
                        partial[i] = partial[i] + x[r][i];
                    }
                }
            }
            if (total == null) {
                total = partial;
            } else {
                for (int i = 0; i < n; i++) {
                    total[i] = total[i] + partial[i];
                }
            }
        }
        return total;
    }

    /** chunk r of n elements over nranks: [floor(r·n/nranks), floor((r+1)·n/nranks)). */
    static int chunkStart(int r, int n, int nranks) {
        return (int) ((long) r * n / nranks);
    }

    /** Rank {@code rank}'s data of case {@code caseIndex}: the same in every process. */
    static float[] input(int rank, int caseIndex, int n) {
        SplittableRandom rnd = new SplittableRandom(1_000_003L * (caseIndex + 1) + rank);
        float[] x = new float[n];
        for (int i = 0; i < n; i++) {
            x[i] = (float) (rnd.nextDouble() * 8 - 4);
        }
        return x;
    }

    private static int id(int caseIndex, int collective) {
        return 1 + caseIndex * 4 + collective;
    }

    /** One submit of the built-in {@code kernel}: tensors 0..k-1 of those sizes, then scalars 0..s-1. */
    static ChipCallable single(String kernel, List<Direction> tensors, int scalars, long... tensorBytes) {
        List<Direction> signature = new ArrayList<>(tensors);
        List<Param> params = new ArrayList<>();
        for (int i = 0; i < tensors.size(); i++) {
            params.add(Param.tensor(i, tensors.get(i), 0, tensorBytes[i]));
        }
        for (int s = 0; s < scalars; s++) {
            signature.add(Direction.SCALAR);
            params.add(Param.scalarArg(s));
        }
        Program program = Program.builder().submit(KERNEL, params.toArray(Param[]::new)).build();
        return ChipCallable.builder().signature(signature.toArray(Direction[]::new))
                .child(KERNEL, CoreType.AIV, Kernel.builtin(kernel)).program(program).build();
    }
}

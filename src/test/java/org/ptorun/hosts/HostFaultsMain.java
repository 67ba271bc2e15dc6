package org.ptorun.hosts;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;
import java.util.stream.Stream;
import org.ptorun.CallConfig;
import org.ptorun.ChipWorker;
import org.ptorun.CollectiveMismatchException;
import org.ptorun.CommException;
import org.ptorun.CommGroup;
import org.ptorun.CommRank;
import org.ptorun.DType;
import org.ptorun.DeviceBuffer;
import org.ptorun.HostRuntime;
import org.ptorun.PtoRunException;
import org.ptorun.TaskArgs;
import org.ptorun.Tensor;
import org.ptorun.Variant;
import org.ptorun.callable.Direction;

/**
 * One host's process of {@link AcrossHostsFaultsE2ETest}: opens {@code localRanks} chips,
 * joins ranks {@code firstRank ..} of a group of {@code size} through the root info with a
 * short timeout, and reports every step on standard output, one line each, for the test to
 * synchronize on:
 *
 * <ul>
 *   <li>{@code JOINED <ms>} or, per local rank, {@code JOIN FAIL <rank> <ms> <failure>} (the
 *       time from the start of the join to its failure);
 *   <li>{@code READY} once the windows are allocated and the callables registered; the
 *       process then waits for a line {@code go} on standard input;
 *   <li>per local rank and allreduce, {@code RESULT <rank> OK <ms> <bit-exact|mismatch: ...>}
 *       or {@code RESULT <rank> FAIL <ms> <failure>}, the time measured from the {@code go} (the
 *       fault happened before it); a failure is {@code <class> <message> | facts: <failedRank=N
 *       of a CommException, ranks=[..] of a CollectiveMismatchException> | native: <native message>};
 *   <li>after closing the group and the chips: {@code CLOSED <ok|class: message>}, then
 *       {@code LEFT shm=[...] listen=[...]}: the entries of this process's own /dev/shm whose
 *       name starts with "ptorun" and the LISTEN TCP sockets of this network namespace
 *       (/proc/net/tcp and tcp6 are per namespace), then {@code DONE}.
 * </ul>
 *
 * <p>Arguments: {@code variant rootInfo firstRank localRanks size hostOfEachRank timeoutMs count
 * then}: each local rank allreduces {@code count} floats after the go; {@code then} is
 * {@code none} or an agreeing second count every rank allreduces next (checked bit for bit,
 * then a barrier). {@code count 0}: no windows, no collective, no go (the join is the case).
 * Exit status 0 when the process got to {@code DONE}, 1 otherwise (the reason on standard error).
 */
public final class HostFaultsMain {

    private HostFaultsMain() {
    }

    public static void main(String[] args) {
        int status = 1;
        try {
            if (args.length != 9) {
                throw new IllegalArgumentException("arguments: variant rootInfo firstRank localRanks size "
                        + "hostOfEachRank timeoutMs count then; got " + List.of(args));
            }
            run(Variant.parse(args[0]), args[1], Integer.parseInt(args[2]), Integer.parseInt(args[3]),
                    Integer.parseInt(args[4]), HostRanksMain.hosts(args[5]),
                    Duration.ofMillis(Long.parseLong(args[6])), Integer.parseInt(args[7]),
                    args[8].equals("none") ? 0 : Integer.parseInt(args[8]));
            status = 0;
        } catch (Throwable t) {
            t.printStackTrace();
        }
        System.out.flush();
        System.err.flush();
        System.exit(status);
    }

    private static void say(String line) {
        synchronized (System.out) {
            System.out.println(line);
            System.out.flush();
        }
    }

    private static void run(Variant variant, String rootInfo, int first, int local, int size, int[] hostOf,
                            Duration timeout, int count, int then) throws IOException {
        HostRuntime runtime = HostRuntime.load(variant);
        List<ChipWorker> chips = new ArrayList<>();
        CommGroup group = null;
        String closed = "ok";
        try {
            for (int i = 0; i < local; i++) {
                chips.add(ChipWorker.open(runtime, first + i));
            }
            long t0 = System.nanoTime();
            try {
                group = CommGroup.join(chips, first, size, rootInfo, timeout);
            } catch (RuntimeException e) {
                long ms = msSince(t0);
                // the first rank's failure is thrown, the others' are suppressed in it
                List<Throwable> all = new ArrayList<>();
                all.add(e);
                all.addAll(List.of(e.getSuppressed()));
                for (Throwable t : all) {
                    int rank = t instanceof CommException c ? c.rank() : -1;
                    say("JOIN FAIL " + rank + " " + ms + " " + describe(t));
                }
            }
            if (group != null) {
                say("JOINED " + msSince(t0));
                if (count > 0) {
                    faultCase(group, hostOf, count, then);
                }
            }
        } finally {
            try {
                if (group != null) {
                    group.close();
                }
            } catch (RuntimeException e) {
                closed = describe(e);
            } finally {
                chips.forEach(ChipWorker::close);
            }
        }
        say("CLOSED " + closed);
        say("LEFT shm=" + shmLeft() + " listen=" + listening());
        say("DONE");
    }

    private static void faultCase(CommGroup group, int[] hostOf, int count, int then) throws IOException {
        int size = group.size();
        int most = Math.max(count, then);
        group.allocWindows(4L * most);
        for (CommRank rank : group.ranks()) {
            rank.chip().registerCallable(1, HostRanksMain.single("allreduce_sum", List.of(Direction.INOUT), 1,
                    4L * count));
            if (then > 0) {
                rank.chip().registerCallable(2, HostRanksMain.single("allreduce_sum", List.of(Direction.INOUT), 1,
                        4L * then));
            }
        }
        say("READY");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null && !line.strip().equals("go")) {
            say("IGNORED " + line);
        }
        if (line == null) {
            throw new IllegalStateException("standard input ended before a go");
        }
        long go = System.nanoTime();
        allreduce(group, hostOf, 1, count, 0, go);
        if (then > 0) {
            long again = System.nanoTime();
            boolean allOk = allreduce(group, hostOf, 2, then, 1, again);
            if (allOk) {
                group.barrier(); // nobody leaves while a peer still reads its window
                say("BARRIER ok");
            }
        }
    }

    /** Every local rank allreduces {@code n} floats at once; one RESULT line per rank; true when all passed. */
    private static boolean allreduce(CommGroup group, int[] hostOf, int callable, int n, int caseIndex, long t0) {
        int size = group.size();
        float[][] x = new float[size][];
        for (int r = 0; r < size; r++) {
            x[r] = HostRanksMain.input(r, caseIndex, n);
        }
        float[] sum = HostRanksMain.referenceSum(x, hostOf);
        List<Boolean> ok = group.onEveryRank(rank -> {
            try {
                DeviceBuffer xb = rank.windowSlice(0, 4L * n);
                rank.chip().copyTo(xb, x[rank.rank()]);
                rank.chip().run(callable, new TaskArgs().tensor(Tensor.of(xb, DType.F32))
                        .scalar(rank.deviceContext()), CallConfig.DEFAULT);
                float[] out = new float[n];
                rank.chip().copyFrom(xb, out);
                long ms = msSince(t0);
                String mismatch = HostRanksMain.firstMismatch(out, sum);
                say("RESULT " + rank.rank() + " OK " + ms + " " + (mismatch == null ? "bit-exact"
                        : "mismatch: " + mismatch));
                return mismatch == null;
            } catch (RuntimeException e) {
                say("RESULT " + rank.rank() + " FAIL " + msSince(t0) + " " + describe(e));
                return false;
            }
        });
        return ok.stream().allMatch(b -> b);
    }

    /**
     * {@code <class> <message>} on one line; for a PtoRunException then {@code | facts: <what the
     * exception parsed>} (a CommException's failedRank, a CollectiveMismatchException's ranks)
     * and {@code | native: <native message>}.
     */
    private static String describe(Throwable t) {
        String text = t.getClass().getSimpleName() + " " + oneLine(String.valueOf(t.getMessage()));
        if (t instanceof PtoRunException p) {
            String facts = "";
            if (t instanceof CommException c) {
                facts = "failedRank=" + (c.failedRank().isPresent() ? c.failedRank().getAsInt() : "none");
            } else if (t instanceof CollectiveMismatchException m) {
                facts = "ranks=" + m.ranks();
            }
            text += " | facts: " + facts + " | native: " + oneLine(String.valueOf(p.nativeMessage()));
        }
        return text;
    }

    private static String oneLine(String s) {
        return s.replace("\r", "").replace("\n", " \\n ");
    }

    private static long msSince(long t0) {
        return (System.nanoTime() - t0) / 1_000_000;
    }

    /** The entries of this process's /dev/shm whose name starts with "ptorun". */
    static List<String> shmLeft() throws IOException {
        try (Stream<Path> s = Files.list(Path.of("/dev/shm"))) {
            return s.map(p -> p.getFileName().toString()).filter(n -> n.startsWith("ptorun")).sorted().toList();
        }
    }

    /** The LISTEN TCP sockets of this network namespace, "address:port" in /proc's hex. */
    static List<String> listening() throws IOException {
        TreeSet<String> out = new TreeSet<>();
        for (String file : List.of("/proc/net/tcp", "/proc/net/tcp6")) {
            Path p = Path.of(file);
            if (!Files.exists(p)) {
                continue;
            }
            List<String> lines = Files.readAllLines(p, StandardCharsets.US_ASCII);
            for (String line : lines.subList(Math.min(1, lines.size()), lines.size())) {
                String[] f = line.strip().split("\\s+");
                if (f.length > 3 && f[3].equals("0A")) { // TCP_LISTEN
                    out.add(f[1]);
                }
            }
        }
        return List.copyOf(out);
    }
}

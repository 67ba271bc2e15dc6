package org.ptorun;

import java.net.Inet4Address;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.FutureTask;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Function;
import java.util.regex.Pattern;
import org.ptorun.internal.NativeConstants;
import org.ptorun.internal.OffHeapBlock;

/**
 * A communication group: chips that address each other's windows and meet at barriers,
 * for computations that span chips (docs/communication.md). Its local ranks are the
 * {@link CommRank}s of this process: every rank of the group when it was {@link #open
 * opened} over chips of this process, some when it {@link #join joined} a group whose
 * other ranks live in other processes: of this host, meeting through a root-info file
 * ({@link #join(List, int, int, Path, Duration)}), or of several hosts, meeting at rank 0's
 * rendezvous store named by a root-info string ({@link #join(List, int, int, String, Duration)},
 * {@link #newRootInfo}). Collective calls here call every local rank at once: the calling thread serves
 * the last local rank and a group thread each of the others, so a group with one local
 * rank (a rank per process) hands nothing to another thread.
 *
 * <p>Close the group before its chips: a chip closed first makes its rank leave (with a
 * warning; its peers then see it gone). {@link #close()} leaves every rank it can; a rank whose chip has a
 * run outstanding refuses ({@link CommException}, {@code PTO_ERR_BUSY}: a run may use
 * the windows) and stays, so close again once the runs are finalized.
 * Thread-safe.
 */
public final class CommGroup implements AutoCloseable {

    /** The timeout {@link #open(List, Path)} uses: the library's default, what comm_init takes 0 for. */
    public static final Duration DEFAULT_TIMEOUT = Duration.ofMillis(NativeConstants.PTO_DEFAULT_TIMEOUT_MS);

    private final int size;
    private final String name;
    private final List<CommRank> local;
    /** Serves every local rank but the last (the caller serves that one); null with one local rank. */
    private final ExecutorService threads;
    private final ReentrantLock collectiveLock = new ReentrantLock();
    private boolean closed;

    private CommGroup(int size, String name, List<CommRank> local, ExecutorService threads) {
        this.size = size;
        this.name = name;
        this.local = List.copyOf(local);
        this.threads = threads;
    }

    /** {@link #open(List, Path, Duration)} with {@link #DEFAULT_TIMEOUT}. */
    public static CommGroup open(List<ChipWorker> chips, Path rootInfo) {
        return open(chips, rootInfo, DEFAULT_TIMEOUT);
    }

    /**
     * Opens a group whose rank {@code i} is {@code chips.get(i)}, all in this process.
     * {@code rootInfo} is a file path the ranks meet through (removed once they met).
     *
     * @throws CommException when a rank cannot join (all then leave)
     */
    public static CommGroup open(List<ChipWorker> chips, Path rootInfo, Duration timeout) {
        return join(chips, 0, Objects.requireNonNull(chips, "chips").size(), rootInfo, timeout);
    }

    /** {@link #join(List, int, int, Path, Duration)} of one chip: rank {@code rank} of {@code size}. */
    public static CommGroup join(ChipWorker chip, int rank, int size, Path rootInfo, Duration timeout) {
        return join(List.of(chip), rank, size, rootInfo, timeout);
    }

    /**
     * Joins ranks {@code firstRank, firstRank + 1, ...} of a group of {@code size}, one per chip
     * of {@code chips}, while the group's other ranks join from other processes of the host
     * through the same {@code rootInfo} path; blocks until every rank joined or the timeout
     * passed (then every local rank leaves).
     *
     * @throws CommException when a rank cannot join
     */
    public static CommGroup join(List<ChipWorker> chips, int firstRank, int size, Path rootInfo, Duration timeout) {
        Objects.requireNonNull(rootInfo, "rootInfo");
        return joinThrough(chips, firstRank, size, rootInfo.toAbsolutePath().toString(),
                describe(size, rootInfo.toString()), timeout);
    }

    /** {@link #join(List, int, int, String, Duration)} of one chip: rank {@code rank} of {@code size}. */
    public static CommGroup join(ChipWorker chip, int rank, int size, String rootInfo, Duration timeout) {
        return join(List.of(chip), rank, size, rootInfo, timeout);
    }

    /**
     * Joins ranks {@code firstRank, firstRank + 1, ...} of a group of {@code size}, one per chip
     * of {@code chips}, through a root-info string: a group whose ranks may live on several
     * hosts. The string, {@code ptorun-gloo:v1;store=<ipv4>:<port>;group=<32 lowercase hex>}
     * (see {@link #newRootInfo}), holds the address of the group's rendezvous store and the
     * group's identity; every rank of the group passes the same string. The process holding
     * rank 0 serves the store, so rank 0 must run on the host that owns the store address;
     * the other ranks connect to it and may run in other processes on this host or on other
     * hosts that reach that address. Blocks until every rank joined or the timeout passed
     * (then every local rank leaves).
     *
     * @throws IllegalArgumentException when {@code rootInfo} is not such a string (naming what is wrong)
     * @throws CommException when a rank cannot join
     */
    public static CommGroup join(List<ChipWorker> chips, int firstRank, int size, String rootInfo, Duration timeout) {
        checkRootInfo(rootInfo);
        return joinThrough(chips, firstRank, size, rootInfo, describe(size, rootInfo), timeout);
    }

    /**
     * A fresh root info for {@link #join(List, int, int, String, Duration)}: {@code store} (an
     * IPv4 address of the host where rank 0 will run, and a port no other group's store uses
     * there) and a group identity of 128 bits from {@link SecureRandom}, so that a rank of
     * another group (or an older one at the same address) is refused.
     *
     * @throws IllegalArgumentException when {@code store} is not an IPv4 address with a port of 1..65535
     */
    public static String newRootInfo(InetSocketAddress store) {
        Objects.requireNonNull(store, "store");
        if (store.isUnresolved() || !(store.getAddress() instanceof Inet4Address)) {
            throw new IllegalArgumentException("the store " + store + " is not an IPv4 address");
        }
        if (store.getPort() < 1) {
            throw new IllegalArgumentException("the store " + store + " has no port (1..65535)");
        }
        byte[] id = new byte[GROUP_ID_CHARS / 2];
        RANDOM.nextBytes(id);
        return ROOT_INFO_PREFIX + "store=" + store.getAddress().getHostAddress() + ":" + store.getPort()
                + ";group=" + HexFormat.of().formatHex(id);
    }

    /** What every root-info string starts with. */
    public static final String ROOT_INFO_PREFIX = "ptorun-gloo:v1;";

    private static final int GROUP_ID_CHARS = 32;
    private static final SecureRandom RANDOM = new SecureRandom();
    private static final Pattern IPV4 = Pattern.compile("(0|[1-9]\\d{0,2})(\\.(0|[1-9]\\d{0,2})){3}");
    private static final Pattern PORT = Pattern.compile("[1-9]\\d{0,4}");
    private static final Pattern GROUP_ID = Pattern.compile("[0-9a-f]{" + GROUP_ID_CHARS + "}");

    /**
     * Refuses a root-info string the libraries would: the prefix, then the fields
     * {@code store=<ipv4>:<port>} and {@code group=<32 lowercase hex>} (each once, separated by ';').
     */
    static void checkRootInfo(String rootInfo) {
        Objects.requireNonNull(rootInfo, "rootInfo");
        if (!rootInfo.startsWith(ROOT_INFO_PREFIX)) {
            throw badRootInfo(rootInfo, "does not start with '" + ROOT_INFO_PREFIX + "'");
        }
        String store = null;
        String group = null;
        for (String field : rootInfo.substring(ROOT_INFO_PREFIX.length()).split(";", -1)) {
            if (field.startsWith("store=") && store == null) {
                store = field.substring("store=".length());
                checkStore(rootInfo, store);
            } else if (field.startsWith("group=") && group == null) {
                group = field.substring("group=".length());
                if (!GROUP_ID.matcher(group).matches()) {
                    throw badRootInfo(rootInfo, "group '" + group + "' is not " + GROUP_ID_CHARS
                            + " lowercase hex characters");
                }
            } else if (field.startsWith("store=") || field.startsWith("group=")) {
                throw badRootInfo(rootInfo, "names " + field.substring(0, field.indexOf('=')) + " twice");
            } else {
                throw badRootInfo(rootInfo, "has a field '" + field + "' that is neither store= nor group=");
            }
        }
        if (store == null) {
            throw badRootInfo(rootInfo, "has no store=<ipv4>:<port>");
        }
        if (group == null) {
            throw badRootInfo(rootInfo, "has no group=<" + GROUP_ID_CHARS + " lowercase hex>");
        }
    }

    private static void checkStore(String rootInfo, String store) {
        int colon = store.lastIndexOf(':');
        if (colon < 0) {
            throw badRootInfo(rootInfo, "store '" + store + "' has no port (<ipv4>:<port>)");
        }
        String host = store.substring(0, colon);
        String port = store.substring(colon + 1);
        if (!IPV4.matcher(host).matches() || !allOctets(host)) {
            throw badRootInfo(rootInfo, "store address '" + host + "' is not an IPv4 literal (a.b.c.d)");
        }
        if (!PORT.matcher(port).matches() || Integer.parseInt(port) > 65535) {
            throw badRootInfo(rootInfo, "store port '" + port + "' is not a port of 1..65535");
        }
    }

    private static boolean allOctets(String host) {
        for (String octet : host.split("\\.")) {
            if (Integer.parseInt(octet) > 255) {
                return false;
            }
        }
        return true;
    }

    private static IllegalArgumentException badRootInfo(String rootInfo, String what) {
        return new IllegalArgumentException("root info '" + rootInfo + "' " + what
                + " (expected " + ROOT_INFO_PREFIX + "store=<ipv4>:<port>;group=<" + GROUP_ID_CHARS
                + " lowercase hex>)");
    }

    /**
     * The join of both kinds of root info: {@code rootInfo} goes to comm_init as it is (a
     * file's absolute path or a root-info string), {@code name} is the group's description.
     */
    private static CommGroup joinThrough(List<ChipWorker> chips, int firstRank, int size, String rootInfo,
                                         String name, Duration timeout) {
        Objects.requireNonNull(chips, "chips");
        if (chips.isEmpty()) {
            throw new IllegalArgumentException("a group needs at least one chip");
        }
        if (firstRank < 0 || firstRank + chips.size() > size) {
            throw new IllegalArgumentException("ranks " + firstRank + ".." + (firstRank + chips.size() - 1)
                    + " are not ranks of a group of " + size);
        }
        int n = chips.size();
        byte[] cRootInfo = rootInfo.getBytes(StandardCharsets.UTF_8);
        ExecutorService threads = n == 1 ? null : groupThreads(n - 1);
        List<Callable<CommRank>> joins = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            ChipWorker chip = chips.get(i);
            int rank = firstRank + i;
            joins.add(() -> joinRank(chip, rank, size, cRootInfo, timeout, name));
        }
        List<CommRank> ranks = new ArrayList<>(n);
        RuntimeException failure = gather(callAll(threads, joins), ranks);
        if (failure != null) {
            ranks.forEach(CommRank::destroy);
            if (threads != null) {
                threads.shutdown();
            }
            throw failure;
        }
        return new CommGroup(size, name, ranks, threads);
    }

    /**
     * Daemons that end after a second without work (a fixed pool's threads ignore
     * interrupts and never end, so {@code mvn exec:java} would wait for an open group's);
     * a collective call starts them again.
     */
    private static ExecutorService groupThreads(int n) {
        ThreadPoolExecutor pool = new ThreadPoolExecutor(n, n, GROUP_THREAD_IDLE_SECONDS, TimeUnit.SECONDS,
                new LinkedBlockingQueue<>(), r -> {
                    Thread t = new Thread(r, "ptorun-comm");
                    t.setDaemon(true);
                    return t;
                });
        pool.allowCoreThreadTimeOut(true);
        return pool;
    }

    private static final long GROUP_THREAD_IDLE_SECONDS = 1;

    /**
     * Starts every call but the last on {@code threads}, runs the last on this thread, and
     * returns their futures in order (all done or running once this returns).
     */
    private static <T> List<Future<T>> callAll(ExecutorService threads, List<Callable<T>> calls) {
        List<Future<T>> futures = new ArrayList<>(calls.size());
        for (int i = 0; i < calls.size() - 1; i++) {
            futures.add(threads.submit(calls.get(i)));
        }
        FutureTask<T> last = new FutureTask<>(calls.get(calls.size() - 1));
        last.run();
        futures.add(last);
        return futures;
    }

    private static String describe(int size, String rootInfo) {
        return "CommGroup[" + size + " ranks, root info " + rootInfo + "]";
    }

    /** {@code rootInfo}: comm_init's rootinfo_path, UTF-8 without the terminating NUL. */
    private static CommRank joinRank(ChipWorker chip, int rank, int size, byte[] rootInfo, Duration timeout,
                                     String name) {
        Objects.requireNonNull(chip, "chip");
        long ms = Objects.requireNonNull(timeout, "timeout").toMillis();
        if (ms <= 0 || ms > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("timeout " + timeout + " must be between 1 ms and 2^31 ms");
        }
        ChipDevice device = chip.device();
        try (OffHeapBlock cPath = OffHeapBlock.allocate(rootInfo.length + 1, 8)) {
            cPath.buffer().put(0, rootInfo).put(rootInfo.length, (byte) 0);
            device.enter(chip.table());
            try {
                long handle = device.api.commInit(device.ctx, rank, size, cPath.address(), (int) ms);
                if (handle == 0) {
                    String message = device.lastError();
                    throw new CommException("comm_init", rank, codeOf(message), message.replaceFirst("^\\(-?\\d+\\) ", ""));
                }
                return new CommRank(chip, rank, size, handle, name);
            } finally {
                device.exit();
            }
        }
    }

    /** comm_init returns NULL: its message leads with the code, "(-11) …". */
    private static int codeOf(String message) {
        return DeviceMemory.mallocFailureCode(message);
    }

    /** The group's number of ranks (in every process). */
    public int size() {
        return size;
    }

    /** This process's ranks, in rank order. */
    public List<CommRank> ranks() {
        return local;
    }

    /** The local rank with index {@code rank}. */
    public CommRank rank(int rank) {
        for (CommRank r : local) {
            if (r.rank() == rank) {
                return r;
            }
        }
        throw new IllegalArgumentException("rank " + rank + " is not a rank of this process");
    }

    /** Collective: every local rank allocates its window of {@code bytes} ({@link CommRank#allocWindows}). */
    public void allocWindows(long bytes) {
        onEveryRank(r -> {
            r.allocWindows(bytes);
            return null;
        });
    }

    /** Collective: every local rank meets every rank of the group. */
    public void barrier() {
        onEveryRank(r -> {
            r.barrier();
            return null;
        });
    }

    /** Collective over the local ranks among {@code ranks}: fresh windows for that sub-domain, one per local member. */
    public List<CommDomain> allocDomainWindows(long allocationId, int[] ranks, long bytes) {
        List<CommRank> members = new ArrayList<>();
        for (int r : ranks) {
            local.stream().filter(x -> x.rank() == r).forEach(members::add);
        }
        return on(members, r -> r.allocDomainWindows(allocationId, ranks, bytes));
    }

    /** Runs {@code call} on every local rank at once and returns the results in rank order. */
    public <T> List<T> onEveryRank(Function<CommRank, T> call) {
        return on(local, call);
    }

    /**
     * One collective call at a time: each call's ranks must enter their native calls together,
     * and two calls interleaved over the ranks would each wait for the other until the timeout.
     */
    private <T> List<T> on(List<CommRank> ranks, Function<CommRank, T> call) {
        List<Callable<T>> calls = new ArrayList<>(ranks.size());
        for (CommRank r : ranks) {
            calls.add(() -> call.apply(r));
        }
        collectiveLock.lock();
        try {
            synchronized (this) {
                if (closed) {
                    throw new IllegalStateException(name + " is closed");
                }
            }
            if (calls.isEmpty()) {
                return List.of();
            }
            List<T> out = new ArrayList<>(ranks.size());
            RuntimeException failure = gather(callAll(threads, calls), out);
            if (failure != null) {
                throw failure;
            }
            return out;
        } finally {
            collectiveLock.unlock();
        }
    }

    /** Waits for every future; the results of those that succeeded go to {@code out}, the failures are returned. */
    private static <T> RuntimeException gather(List<Future<T>> futures, List<T> out) {
        RuntimeException failure = null;
        for (Future<T> f : futures) {
            try {
                out.add(get(f));
            } catch (RuntimeException e) {
                failure = addTo(failure, e);
            }
        }
        return failure;
    }

    /**
     * Every local rank leaves; the windows go with the last rank that maps them. Idempotent.
     * Refused, with nothing changed, while a run (prepared, executing or queued in a Worker)
     * uses a window of a local rank; once it returns every use of the group, its ranks and
     * their window buffers is refused naming the group. A copy into a window in flight on
     * another thread is waited for (the library unmaps nothing under a copy).
     *
     * @throws CommException ({@code PTO_ERR_BUSY}) naming the runs that use a window; or for a
     *         rank whose chip has another run outstanding: that rank stays, close again later
     */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        for (int i = 0; i < local.size(); i++) {
            try {
                local.get(i).closeWindows();
            } catch (RuntimeException e) {
                for (int j = 0; j < i; j++) {
                    local.get(j).uses.reopen();
                }
                throw e;
            }
        }
        RuntimeException failure = null;
        for (CommRank r : local) {
            try {
                r.destroy();
            } catch (RuntimeException e) {
                r.uses.reopen(); // it stays in the group
                failure = addTo(failure, e);
            }
        }
        if (failure != null) {
            throw failure;
        }
        closed = true;
        if (threads != null) {
            threads.shutdown();
        }
    }

    /** True once {@link #close()} returned. */
    public synchronized boolean isClosed() {
        return closed;
    }

    @Override
    public String toString() {
        return name;
    }

    private static <T> T get(Future<T> f) {
        boolean interrupted = false;
        try {
            while (true) {
                try {
                    return f.get();
                } catch (InterruptedException e) {
                    interrupted = true; // the native call cannot be abandoned; it ends within its timeout
                }
            }
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            if (cause instanceof RuntimeException re) {
                throw re;
            }
            if (cause instanceof Error err) {
                throw err;
            }
            throw new IllegalStateException(cause);
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    private static RuntimeException addTo(RuntimeException first, RuntimeException next) {
        if (first == null) {
            return next;
        }
        first.addSuppressed(next);
        return first;
    }
}

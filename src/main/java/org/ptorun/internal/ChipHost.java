package org.ptorun.internal;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.ptorun.LibraryLoadException;
import org.ptorun.PtoError;
import org.ptorun.PtoRunException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One chip host: the child process a chip in process isolation runs in
 * (docs/isolation.md), with the variant library loaded there, its arena (the
 * {@link HostMemory} of the chip's runs) and its contract ({@link #api()}). Every method
 * is safe from any thread; {@link #close()} stops the process and frees the arena, and
 * must not race a call of {@link #api()} in flight (the chip's close orders that).
 */
public final class ChipHost implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(ChipHost.class);

    /**
     * Starts every chip host, on the one thread {@code ptorun-chip-spawner}. A child dies
     * with the thread that started it (PR_SET_PDEATHSIG follows the thread, not the
     * process), so that thread lives while any chip host it started does; with none left
     * it ends after a second idle, or at once when interrupted (the next start makes a new
     * one). A daemon: it never holds the JVM up.
     */
    private static final Executor SPAWNER = ChipHost::spawn;
    private static final Object SPAWN_LOCK = new Object();
    private static final LinkedBlockingQueue<Runnable> SPAWNS = new LinkedBlockingQueue<>();
    /** Chip hosts started and not yet closed: the spawner stays while there is one. */
    private static final AtomicInteger LIVE = new AtomicInteger();
    private static Thread spawner; // guarded by SPAWN_LOCK

    /** The system property sizing a chip host's arena, in bytes (docs/isolation.md). */
    public static final String ARENA_BYTES_PROPERTY = "ptorun.chipArenaBytes";
    /** 1 GiB of address space; pages are taken as they are touched and given back on free. */
    public static final long DEFAULT_ARENA_BYTES = 1L << 30;

    /** The running chip hosts by pid, for the testing entry (org.ptorun.testing.ChipCrashes). */
    private static final Map<Long, ChipHost> RUNNING = new ConcurrentHashMap<>();

    private static final int SIGKILL = 9;

    private final AtomicLong chip;
    private final long pid;
    private final String name;
    private final NativeApi raw;
    private final NativeLog log;
    private final NativeApi api;
    private final HostMemory memory;
    /** Why ptorun killed the process itself; null when it did not. */
    private volatile String killedBecause;

    private ChipHost(long chip, String variant) {
        this.chip = new AtomicLong(chip);
        this.pid = ChipProxy.chip_proxy_pid(chip);
        this.name = variant + " chip host pid " + pid;
        this.raw = new ProcessNativeApi(chip);
        this.log = new NativeLog(raw, name);
        this.api = new FlushingNativeApi(raw, new NativeLogFlush(log));
        this.memory = new ArenaMemory();
    }

    /**
     * Starts a chip host that loads {@code library} (the variant library's file) with an
     * arena of {@code arenaBytes}, its driver on state of its own.
     *
     * @throws LibraryLoadException when the executable or the proxy library is missing, or
     *         the child cannot load the library
     * @throws PtoRunException when the child cannot start (its code and message)
     */
    public static ChipHost start(String variant, Path library, long arenaBytes) {
        return start(variant, library, arenaBytes, -1);
    }

    /**
     * {@link #start(String, Path, long)}, the child's emulated driver sharing the state at
     * {@code driverStateFd} (the armed faults and the counters:
     * {@link EmulatedDriverLibrary#sharedStateFd}); -1: none. The child inherits the fd;
     * this JVM keeps its own.
     */
    public static ChipHost start(String variant, Path library, long arenaBytes, int driverStateFd) {
        ChipProxy.load();
        Path exe = NativeFolder.libraryFile(ChipProxy.EXECUTABLE);
        if (exe == null) {
            throw new LibraryLoadException("no chip host executable: the resource "
                    + LibraryLoader.resourcePath(ChipProxy.EXECUTABLE) + " is not on the class path");
        }
        String exePath = exe.toString();
        String libraryPath = library.toAbsolutePath().toString();
        // the failure message is thread-local: read on the thread that failed
        CompletableFuture<Started> started = CompletableFuture.supplyAsync(() -> {
            long handle = driverStateFd < 0 ? ChipProxy.chip_proxy_start(exePath, libraryPath, arenaBytes)
                    : ChipProxy.chip_proxy_start_with_driver_state(exePath, libraryPath, arenaBytes, driverStateFd);
            if (handle != 0) {
                LIVE.incrementAndGet(); // before the spawner can look: it must not end under this child
            }
            return new Started(handle, handle == 0 ? NativeMemory.cString(ChipProxy.chip_proxy_last_error()) : "");
        }, SPAWNER);
        Started s;
        try {
            s = started.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            // the start goes on: stop what it starts
            started.thenAccept(h -> {
                if (h.handle() != 0) {
                    ChipProxy.chip_proxy_stop(h.handle());
                    LIVE.decrementAndGet();
                }
            });
            throw new IllegalStateException("interrupted while starting a chip host for " + variant, e);
        } catch (ExecutionException e) {
            throw new IllegalStateException("starting a chip host for " + variant + " failed", e.getCause());
        }
        long handle = s.handle();
        if (handle == 0) {
            throw new LibraryLoadException("cannot start a chip host for " + variant + " (" + exePath
                    + " loading " + libraryPath + "): " + s.error());
        }
        ChipHost host = new ChipHost(handle, variant);
        RUNNING.put(host.pid, host);
        LOG.info("started {}", host.name);
        return host;
    }

    private record Started(long handle, String error) {
    }

    private static void spawn(Runnable start) {
        synchronized (SPAWN_LOCK) {
            SPAWNS.add(start);
            if (spawner == null) {
                spawner = new Thread(ChipHost::serveSpawns, "ptorun-chip-spawner");
                spawner.setDaemon(true);
                spawner.start();
            }
        }
    }

    private static void serveSpawns() {
        for (;;) {
            Runnable start = null;
            try {
                start = SPAWNS.poll(1, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                // asked to end: it may once no chip host it started lives
            }
            if (start != null) {
                start.run();
                continue;
            }
            synchronized (SPAWN_LOCK) {
                if (SPAWNS.isEmpty() && LIVE.get() == 0) {
                    spawner = null;
                    return;
                }
            }
        }
    }

    /**
     * The arena size of {@value #ARENA_BYTES_PROPERTY}, else {@value #DEFAULT_ARENA_BYTES}.
     *
     * @throws IllegalArgumentException when the property is not a positive number
     */
    public static long configuredArenaBytes() {
        String value = System.getProperty(ARENA_BYTES_PROPERTY);
        if (value == null || value.isBlank()) {
            return DEFAULT_ARENA_BYTES;
        }
        try {
            long bytes = Long.parseLong(value.trim());
            if (bytes > 0) {
                return bytes;
            }
        } catch (NumberFormatException e) {
            // refused below
        }
        throw new IllegalArgumentException("-D" + ARENA_BYTES_PROPERTY + "=" + value + ": expected a positive"
                + " number of bytes");
    }

    /** The chip's contract, its native log flushed into SLF4J as in process. */
    public NativeApi api() {
        return api;
    }

    /** The chip's arena: run storage, staging and blobs its library may touch. */
    public HostMemory memory() {
        return memory;
    }

    public long pid() {
        return pid;
    }

    /** E.g. {@code a2a3/sim/hbg chip host pid 4711}. */
    public String name() {
        return name;
    }

    /** The running chip host of process {@code pid}, if it is one of this JVM's. */
    public static Optional<ChipHost> running(long pid) {
        return Optional.ofNullable(RUNNING.get(pid));
    }

    /** Whether the process still runs (collects it when it died). */
    public boolean alive() {
        long c = chip.get();
        return c != 0 && ChipProxy.chip_proxy_alive(c) == 1;
    }

    /** Why the process is gone (signal or exit status, and pid); "" while it runs. */
    public String death() {
        long c = chip.get();
        String death = c == 0 ? "stopped" : NativeMemory.cString(ChipProxy.chip_proxy_death(c));
        String why = killedBecause;
        return why == null || death.isEmpty() ? death : death + " (" + why + ")";
    }

    /**
     * Bounds a call into the chip host: unless the returned handle is run first, the
     * process is killed (SIGKILL) after {@code boundMs}, naming {@code what}; the call
     * then fails with {@code PTO_ERR_CHIP_CRASHED} like any death.
     */
    public Runnable watch(long boundMs, String what) {
        return HangWatchdog.bound(boundMs, () -> {
            if (alive()) {
                killedBecause = "killed by ptorun: " + what + " made no progress within " + boundMs + " ms";
                LOG.error("{}: {}", name, killedBecause);
                kill(SIGKILL);
            }
        });
    }

    /**
     * Sends {@code signal} to the process (the hang watchdog's SIGKILL; tests crash a chip
     * so). False when it is gone already.
     */
    public boolean kill(int signal) {
        long c = chip.get();
        return c != 0 && ChipProxy.chip_proxy_kill(c, signal) == PtoError.OK.code();
    }

    /** The last native log lines of the chip (readable after its death), oldest first. */
    public List<String> lastLogLines() {
        return log.lastLines();
    }

    /** Lanes (concurrent calls) the chip opened so far. */
    public long laneCount() {
        long c = chip.get();
        return c == 0 ? 0 : ChipProxy.chip_proxy_lane_count(c);
    }

    /** Stops the process (asks, then kills after a grace), frees the arena. Idempotent. */
    @Override
    public void close() {
        long c = chip.getAndSet(0);
        if (c != 0) {
            RUNNING.remove(pid, this);
            log.flush();
            ChipProxy.chip_proxy_stop(c);
            LIVE.decrementAndGet();
            LOG.info("stopped {}", name);
        }
    }

    @Override
    public String toString() {
        return name;
    }

    /** Pieces of the arena, given back to it on close. */
    private final class ArenaMemory implements HostMemory {

        @Override
        public OffHeapBlock allocate(long size, long alignment) {
            long c = chip.get();
            long address = c == 0 ? 0 : ChipProxy.chip_proxy_arena_alloc(c, size, alignment);
            if (address == 0) {
                throw new OutOfMemoryError("the arena of " + name + " has no " + size + " bytes aligned "
                        + alignment + ": " + NativeMemory.cString(ChipProxy.chip_proxy_last_error()));
            }
            return OffHeapBlock.adopt(address, size, a -> {
                long now = chip.get();
                if (now != 0) {
                    ChipProxy.chip_proxy_arena_free(now, a);
                }
            });
        }

        @Override
        public boolean holds(long address, long size) {
            long c = chip.get();
            return c != 0 && ChipProxy.chip_proxy_in_arena(c, address, size) == 1;
        }
    }
}

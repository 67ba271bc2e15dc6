package org.ptorun.worker;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Executor;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import org.ptorun.CallConfig;
import org.ptorun.ChipPoisonedException;
import org.ptorun.ChipIsolation;
import org.ptorun.ChipWorker;
import org.ptorun.CommGroup;
import org.ptorun.CommRank;
import org.ptorun.HostRuntime;
import org.ptorun.TaskArgs;
import org.ptorun.Variant;
import org.ptorun.callable.ChipCallable;
import org.ptorun.internal.NativeConstants;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Enqueue / poll / drain over one or more chips (one {@link ChipWorker} per device id).
 *
 * <pre>{@code
 * try (Worker worker = Worker.builder().variant(v).devices(0, 1).queueCapacity(64).build()) {
 *     worker.register(7, callable);
 *     RunTicket t = worker.enqueue(7, args, CallConfig.DEFAULT);
 *     t.result().thenAcceptAsync(r -> ..., executor);
 *     worker.drain();
 * }
 * }</pre>
 *
 * <p>Each run is assigned a chip at enqueue (see {@link ChipSelection}) and a dispatch id
 * (1, 2, 3, ... per Worker); a chip launches its runs strictly in dispatch order. Where
 * the chip supports overlap (depth 2: hbg, and a2a3 trb for a run whose ring sizing fits
 * the image the current run uses) the next run is prepared while the current one
 * executes and launched as soon as the current one is finalized; a run the chip cannot
 * take now is prepared after that finalize instead.
 *
 * <p>Each chip is a {@link ChipLane} with one explicit {@link LaneState}; which thread
 * drives it and which native calls that thread alone makes is the lane's rule, stated
 * once where it is enforced, in {@code ChipLane} (docs/worker.md, "Who drives a lane").
 * In background mode an enqueue that finds its chip idle drives its run itself, so a
 * short run completes without a thread hand-off; otherwise the chip's dispatcher does.
 * The {@link AdmissionQueue} admits with back-pressure; the {@link DrainLedger} counts
 * what is outstanding. Thread-safe: any thread may call any method.
 */
public final class Worker implements AutoCloseable {

    /** At most this many failures are listed in one {@link DrainReport} (all are counted). */
    public static final int MAX_REPORTED_FAILURES = 1024;

    private static final Logger LOG = LoggerFactory.getLogger(Worker.class);

    private final ChipLane[] lanes;
    private final AdmissionQueue queue;
    private final DrainLedger ledger;
    private final boolean background;
    private final ShutdownPolicy shutdownPolicy;
    private final Executor callbacks;
    private final Variant variant;
    /** Builder.trace: written once by the first close, after every run finished; else null. */
    private final WorkerTimeline timeline;

    /** Caller-driven mode: the thread driving every lane now, or null. */
    private final AtomicReference<Thread> driver = new AtomicReference<>();
    /** Threads waiting to drive (caller-driven): a release then posts an event for them. */
    private final AtomicInteger driveWaiters = new AtomicInteger();

    private final Object closeMonitor = new Object();
    private boolean closed; // guarded by closeMonitor

    private Worker(Builder b, HostRuntime runtime, List<ChipWorker> chips) {
        Variant variant = runtime.variant();
        this.variant = variant;
        this.background = b.background;
        this.shutdownPolicy = b.shutdownPolicy;
        this.callbacks = b.callbacks;
        int n = chips.size();
        int[] ids = new int[n];
        for (int i = 0; i < n; i++) {
            ids[i] = chips.get(i).deviceId();
        }
        this.timeline = b.timeline;
        this.ledger = new DrainLedger(n, b.observer);
        this.lanes = new ChipLane[n];
        this.queue = new AdmissionQueue(b.queueCapacity, ids, b.selection, !background,
                i -> !lanes[i].isPoisoned(), ledger, callbacks);
        queue.captureFailures(new FailureCapture(chips.get(0).variant(), b.captureDir, b.captureMaxBytes));
        for (int i = 0; i < n; i++) {
            ChipWorker chip = chips.get(i);
            int device = chip.deviceId();
            // a chip in process isolation is restarted on its device as the policy says
            lanes[i] = new ChipLane(chip, i, b.pipelineDepth, queue, ledger,
                    () -> ChipWorker.open(runtime, device, ChipIsolation.PROCESS), b.restartPolicy);
        }
        if (background) {
            queue.startDispatchers(i -> new Thread(lanes[i]::dispatch, "ptorun-dispatch-" + ids[i]));
        }
    }

    public static Builder builder() {
        return new Builder();
    }

    // ---- registration -----------------------------------------------------------------------

    /**
     * Registers {@code callable} under {@code id} on every healthy chip. The library refuses
     * registration while a run is outstanding, so on a chip with runs in flight the
     * registration is queued behind them (runs enqueued later see it; runs enqueued
     * earlier are not disturbed) and applied once they are finalized. In caller-driven
     * mode this call also makes progress like {@link #poll()}, so on an idle Worker the
     * returned future is complete when it returns.
     *
     * @return completes once registered on every chip; exceptionally with the first refusal
     * @throws IllegalStateException after close
     */
    public CompletableFuture<Void> register(int id, ChipCallable callable) {
        Objects.requireNonNull(callable, "callable");
        checkCallableId(id);
        List<CompletableFuture<Void>> parts = new ArrayList<>(lanes.length);
        queue.queueRegistration(id, callable, parts);
        if (!background) {
            poll();
        }
        WorkerFuture<Void> registered = new WorkerFuture<>(callbacks);
        CompletableFuture.allOf(parts.toArray(CompletableFuture[]::new)).whenComplete((v, failure) -> {
            if (failure == null) {
                registered.deliver(null);
            } else {
                registered.deliverFailure(failure instanceof CompletionException
                        && failure.getCause() != null ? failure.getCause() : failure);
            }
        });
        return registered;
    }

    // ---- admission ----------------------------------------------------------------------------

    /**
     * Enqueues a run, waiting (parked, interruptibly) while the queue is full. In
     * caller-driven mode it only admits: {@link #poll()} or {@link #drain()} prepares it. In
     * background mode, when the chosen chip is idle, this thread drives the run itself —
     * prepares and launches it and, for up to about 50 µs, polls it and finalizes it once
     * it ended (its result is then complete when this returns); a longer run, or any run
     * on a busy chip, is left to the chip's dispatcher. A failure of the run is never
     * thrown here: it is in the run's result.
     *
     * <p>The Worker reads {@code args} when it prepares the run: do not change or reuse
     * the {@code TaskArgs} until the ticket {@link RunTicket#isAccepted() is accepted} or
     * its result is complete; the tensors' data must stay untouched until the result is
     * complete.
     *
     * <p>Every device buffer of {@code args} is held from now until the run is finalized:
     * its close is refused meanwhile, naming the run (docs/reliability.md, Lifetimes).
     *
     * <p>The arguments are checked before anything is admitted: an id never registered on
     * this Worker, or a tensor smaller than the program of the callable last registered under
     * the id needs ({@link org.ptorun.callable.TensorExtents#check}: the same exception and
     * message as {@code ChipWorker.prepare}, on every runtime), is refused here, not in the
     * run's future; no dispatch id is consumed.
     *
     * @throws IllegalArgumentException for an id outside [0, 64) or never registered, or a tensor too
     *     small for the callable's program; nothing was admitted
     * @throws InterruptedException when interrupted while waiting; nothing was admitted
     * @throws ChipPoisonedException when every chip is poisoned
     * @throws IllegalStateException after close, or when a device buffer of {@code args} is closed
     */
    public RunTicket enqueue(int callableId, TaskArgs args, CallConfig config) throws InterruptedException {
        checkRunArguments(callableId, args, config);
        return announce(queue.admit(callableId, args, config, -1));
    }

    /**
     * Enqueues a run, waiting at most {@code timeout} while the queue is full.
     *
     * @return empty when the queue stayed full
     * @throws InterruptedException when interrupted while waiting; nothing was admitted
     */
    public Optional<RunTicket> enqueue(int callableId, TaskArgs args, CallConfig config, long timeout, TimeUnit unit)
            throws InterruptedException {
        checkRunArguments(callableId, args, config);
        return Optional.ofNullable(announce(queue.admit(callableId, args, config, Math.max(0, unit.toNanos(timeout)))));
    }

    /** Enqueues a run if the queue has room; never waits. */
    public Optional<RunTicket> tryEnqueue(int callableId, TaskArgs args, CallConfig config) {
        checkRunArguments(callableId, args, config);
        return Optional.ofNullable(announce(queue.tryAdmit(callableId, args, config)));
    }

    /**
     * Background mode: a run just admitted (not yet announced to its lane) is driven by this
     * thread if its lane is idle ({@link ChipLane#driveEnqueued}), else announced to the
     * lane's dispatcher. Caller-driven mode: admission announced it.
     */
    private RunTicket announce(RunTicket admitted) {
        if (background && admitted != null) {
            lanes[admitted.lane].driveEnqueued(admitted);
        }
        return admitted;
    }

    // ---- many chips, one computation ---------------------------------------------------------

    /**
     * Opens a {@link CommGroup} over this Worker's chips: rank {@code i} is the chip of
     * {@code deviceIds().get(i)} (docs/communication.md). Close it before the Worker.
     *
     * @throws org.ptorun.CommException when a rank cannot join
     */
    public CommGroup openCommGroup(Path rootInfo, Duration timeout) {
        return CommGroup.open(chips(), rootInfo, timeout);
    }

    /**
     * Joins ranks {@code firstRank, firstRank + 1, ...} of a group of {@code size} with this
     * Worker's chips (rank {@code firstRank + i} is the chip of {@code deviceIds().get(i)}),
     * while the other ranks join from other hosts (or processes) through the same root-info
     * string of {@link CommGroup#newRootInfo} (docs/communication.md, Across hosts). Close it
     * before the Worker.
     *
     * @throws IllegalArgumentException when the root info or the ranks are malformed
     * @throws org.ptorun.CommException when a rank cannot join
     */
    public CommGroup joinCommGroup(String rootInfo, int firstRank, int size, Duration timeout) {
        return CommGroup.join(chips(), firstRank, size, rootInfo, timeout);
    }

    /**
     * As {@link #joinCommGroup(String, int, int, Duration)} for ranks of one host, which meet
     * through the root-info file at {@code rootInfo}.
     */
    public CommGroup joinCommGroup(Path rootInfo, int firstRank, int size, Duration timeout) {
        return CommGroup.join(chips(), firstRank, size, rootInfo, timeout);
    }

    private List<ChipWorker> chips() {
        List<ChipWorker> chips = new ArrayList<>(lanes.length);
        for (ChipLane lane : lanes) {
            chips.add(lane.chip);
        }
        return chips;
    }

    /**
     * Enqueues a collective step: one run of {@code callableId} on every local rank of
     * {@code group}, rank {@code r}'s with {@code argsOfRank.apply(r)} on rank {@code r}'s
     * chip. The runs are admitted together, so every chip takes the steps in the order they
     * were enqueued (what collective kernels rely on), waiting while the queue has no room
     * for all of them.
     *
     * <p>Every rank's arguments are checked before anything is admitted: a tensor too small
     * for the callable's program refuses the whole step (the message of
     * {@link org.ptorun.callable.TensorExtents#check}, led by {@code "rank r: "}). No rank's run
     * was admitted, so no peer waits in a collective and no communication domain is broken: the
     * group stays usable.
     *
     * @throws IllegalArgumentException when a rank's chip is not one of this Worker's, or a rank's
     *         tensor is too small for the callable's program; nothing was admitted
     * @throws IllegalStateException when the group is closed, or a device buffer (a window) of
     *         the args is closed; nothing was admitted
     * @throws InterruptedException when interrupted while waiting; nothing was admitted
     */
    public CollectiveStep enqueueCollective(CommGroup group, int callableId, Function<CommRank, TaskArgs> argsOfRank,
                                            CallConfig config) throws InterruptedException {
        Objects.requireNonNull(group, "group");
        if (group.isClosed()) {
            throw new IllegalStateException("enqueueCollective: " + group + " is closed");
        }
        Objects.requireNonNull(argsOfRank, "argsOfRank");
        checkCallableId(callableId);
        Objects.requireNonNull(config, "config");
        TaskArgs[] perLane = new TaskArgs[lanes.length];
        int[] laneOfRank = new int[group.ranks().size()];
        for (int i = 0; i < laneOfRank.length; i++) {
            CommRank rank = group.ranks().get(i);
            int lane = laneOf(rank.chip());
            if (perLane[lane] != null) {
                throw new IllegalArgumentException("two ranks of the group are on " + rank.chip());
            }
            perLane[lane] = Objects.requireNonNull(argsOfRank.apply(rank), "the args of rank " + rank.rank());
            laneOfRank[i] = lane;
        }
        int[] rankOfLane = new int[lanes.length];
        for (int i = 0; i < laneOfRank.length; i++) {
            rankOfLane[laneOfRank[i]] = group.ranks().get(i).rank();
        }
        RunTicket[] byLane = queue.admitOnLanes(callableId, perLane, rankOfLane, laneOfRank, config);
        List<RunTicket> byRank = new ArrayList<>(laneOfRank.length);
        List<Integer> ranks = new ArrayList<>(laneOfRank.length);
        for (int i = 0; i < laneOfRank.length; i++) {
            byRank.add(byLane[laneOfRank[i]]);
            ranks.add(group.ranks().get(i).rank());
        }
        CollectiveStep step = new CollectiveStep(byRank, ranks);
        ledger.observeStep(step, byRank.get(0).enqueuedAt); // admitted together: one enqueue instant
        return step;
    }

    private int laneOf(ChipWorker chip) {
        for (int i = 0; i < lanes.length; i++) {
            if (lanes[i].chip == chip) {
                return i;
            }
        }
        throw new IllegalArgumentException(chip + " is not a chip of this Worker");
    }

    private static void checkRunArguments(int callableId, TaskArgs args, CallConfig config) {
        checkCallableId(callableId);
        Objects.requireNonNull(args, "args");
        Objects.requireNonNull(config, "config");
    }

    private static void checkCallableId(int id) {
        if (id < 0 || id >= NativeConstants.PTO_MAX_CALLABLES) {
            throw new IllegalArgumentException("callable id " + id + " is outside [0, "
                    + NativeConstants.PTO_MAX_CALLABLES + ")");
        }
    }

    // ---- progress -------------------------------------------------------------------------------

    /**
     * Caller-driven mode: makes every progress possible without blocking — finalizes
     * completed runs, launches and prepares the next ones, applies queued registrations.
     * Returns 0 at once while another thread drives (a drain, a close, another poll) and
     * always in background mode, where the dispatchers make the progress.
     *
     * @return how many runs and registrations advanced (each counted once per call)
     */
    public int poll() {
        if (background || !tryTakeDrive()) {
            return 0;
        }
        try {
            int advanced = 0;
            for (ChipLane lane : lanes) {
                advanced += lane.step();
            }
            return advanced;
        } finally {
            releaseDrive();
        }
    }

    /**
     * Blocks until every run enqueued so far is finalized (and every queued registration
     * applied), driving the chips itself in caller-driven mode (or waiting on the thread that
     * drives them). Rethrows nothing: the failures are in the runs' futures and in the report.
     *
     * @return the runs finalized since the previous drain returned
     */
    public DrainReport drain() {
        if (background) {
            ledger.awaitEmpty();
        } else {
            driveUntilEmpty();
        }
        return ledger.takeReport();
    }

    /** Caller-driven: take the drive (or wait for whoever has it) until nothing is pending. */
    private void driveUntilEmpty() {
        while (ledger.pending() > 0) {
            if (acquireDriveOrAwaitEvent()) {
                try {
                    driveHeld();
                } finally {
                    releaseDrive();
                }
            }
        }
    }

    /** True with the drive taken; false after parking for one event while another thread drove. */
    private boolean acquireDriveOrAwaitEvent() {
        if (tryTakeDrive()) {
            return true;
        }
        driveWaiters.incrementAndGet();
        try {
            long seen = queue.eventCount(0);
            // registered as a waiter before this second try: a release after it posts
            if (tryTakeDrive()) {
                return true;
            }
            if (ledger.pending() > 0) {
                queue.awaitEvent(0, seen);
            }
            return false;
        } finally {
            driveWaiters.decrementAndGet();
        }
    }

    /**
     * Caller-driven: takes the Worker's drive and with it every lane's. In this mode no
     * other thread takes a lane's drive but close, which waits for this one and then keeps
     * the lanes: after it this returns false, as while another thread drives.
     */
    private boolean tryTakeDrive() {
        if (!driver.compareAndSet(null, Thread.currentThread())) {
            return false;
        }
        for (int i = 0; i < lanes.length; i++) {
            if (!lanes[i].tryDrive()) { // only after close, which holds the lanes for good
                for (int j = 0; j < i; j++) {
                    lanes[j].releaseDrive();
                }
                driver.set(null);
                return false;
            }
        }
        return true;
    }

    private void releaseDrive() {
        for (ChipLane lane : lanes) {
            lane.releaseDrive();
        }
        driver.set(null);
        if (driveWaiters.get() > 0) {
            queue.post(0);
        }
    }

    /** Holding the drive: step every lane; wait on a device, or for an event, when none moved. */
    private void driveHeld() {
        while (ledger.pending() > 0) {
            long seen = queue.eventCount(0);
            int moved = 0;
            for (ChipLane lane : lanes) {
                moved += lane.step();
            }
            if (moved > 0) {
                continue;
            }
            ChipLane running = null;
            for (ChipLane lane : lanes) {
                if (lane.holdsLaunchedRun()) {
                    running = lane;
                    break;
                }
            }
            if (running != null) {
                running.waitForDevice();
            } else if (ledger.pending() > 0) {
                queue.awaitEvent(0, seen); // what is pending is being admitted or cancelled elsewhere
            }
        }
    }

    // ---- observation ------------------------------------------------------------------------------

    /** One entry per chip, in the order of the builder's device ids. */
    public List<ChipHealth> health() {
        List<ChipHealth> out = new ArrayList<>(lanes.length);
        for (ChipLane lane : lanes) {
            long memory = lane.committedDeviceMemory();
            ChipWorker chip = lane.chip;
            boolean healthy = !lane.isPoisoned() && chip.isHealthy();
            out.add(new ChipHealth(chip.deviceId(), healthy, ledger.outstanding(lane.index),
                    ledger.succeeded(lane.index), ledger.failed(lane.index), memory, chip.processId().orElse(0),
                    lane.restarts(), healthy ? "" : lane.down()));
        }
        return out;
    }

    /**
     * Runs admitted and not yet taken by their chip, over every chip: the admission queue's
     * depth, which {@link Builder#queueCapacity} bounds. Takes the queue's lock briefly.
     */
    public int queuedRuns() {
        return queue.queuedRuns();
    }

    /** The variant of the library the chips run on. */
    public Variant variant() {
        return variant;
    }

    /** The device ids, in the builder's order. */
    public List<Integer> deviceIds() {
        List<Integer> ids = new ArrayList<>(lanes.length);
        for (ChipLane lane : lanes) {
            ids.add(lane.chip.deviceId());
        }
        return ids;
    }

    /** Pipeline slots each chip uses (1 or 2). */
    public int pipelineDepth() {
        return lanes[0].pool.depth();
    }

    /**
     * Bytes of device memory committed on all chips now; for a chip the Worker closed, what
     * was committed after its last run was finalized, just before the chip was closed.
     */
    public long committedDeviceMemory() {
        long sum = 0;
        for (ChipLane lane : lanes) {
            sum += lane.committedDeviceMemory();
        }
        return sum;
    }

    // ---- close ----------------------------------------------------------------------------------

    /**
     * Stops admission (blocked and later enqueues throw {@link IllegalStateException}),
     * then, per the {@link ShutdownPolicy}, runs or cancels the queued runs, finalizes
     * every run prepared or running, completes every future, and closes the chips; then
     * writes the {@link Builder#trace timeline}, if any (a failure to write it is logged,
     * not thrown). Idempotent; a concurrent caller waits until the first one finished.
     */
    @Override
    public void close() {
        List<Object> cancelled = new ArrayList<>();
        boolean cancel = shutdownPolicy == ShutdownPolicy.CANCEL_QUEUED;
        if (cancel) {
            // before the stop: no driver stages a run the stop leaves behind. The reason's stack
            // trace is this close's: every cancelled run's exception has it as its cause.
            ledger.startCancelling(new IllegalStateException("Worker.close() under ShutdownPolicy.CANCEL_QUEUED on"
                    + " thread \"" + Thread.currentThread().getName() + "\""));
        }
        if (!queue.stop(cancel, cancelled)) {
            synchronized (closeMonitor) {
                while (!closed) {
                    try {
                        closeMonitor.wait();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        return;
                    }
                }
            }
            return;
        }
        try {
            for (Object item : cancelled) {
                laneOf(item).failQueued(item, null);
            }
            for (int i = 0; i < lanes.length; i++) {
                queue.post(i); // a driver waiting for the cancelled items to finish looks again
            }
            if (background) {
                joinDispatchers();
            } else {
                driveUntilEmpty();
            }
        } finally {
            for (ChipLane lane : lanes) {
                lane.closeChip();
            }
            if (timeline != null) {
                timeline.writeOnce(); // every run finished (and was observed): the chips are closed
            }
            synchronized (closeMonitor) {
                closed = true;
                closeMonitor.notifyAll();
            }
        }
    }

    private ChipLane laneOf(Object item) {
        int device = item instanceof RunTicket t ? t.deviceId() : -1;
        for (ChipLane lane : lanes) {
            if (lane.chip.deviceId() == device) {
                return lane;
            }
        }
        return lanes[0]; // a registration: booked in the ledger, whichever lane
    }

    /** After the stop: each lane has a dispatcher (the stop's event started one where it had ended). */
    private void joinDispatchers() {
        boolean interrupted = false;
        for (int i = 0; i < lanes.length; i++) {
            Thread dispatcher = queue.dispatcher(i);
            if (dispatcher == null) {
                continue; // a new one could not be started: nothing drives the lane, closeChip finalizes it
            }
            if (dispatcher == Thread.currentThread()) {
                LOG.warn("Worker.close() called on the dispatcher of device {}; not waiting for it (attach"
                        + " continuations with an executor)", lanes[i].chip.deviceId());
                continue;
            }
            while (true) {
                try {
                    dispatcher.join();
                    break;
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    // ---- builder ------------------------------------------------------------------------------------

    /** Builds a {@link Worker}; {@link #variant} (or {@link #runtime}) is required. */
    public static final class Builder {
        private HostRuntime runtime;
        private Variant variant;
        private int[] devices = {0};
        private int queueCapacity = 64;
        private boolean background;
        private ShutdownPolicy shutdownPolicy = ShutdownPolicy.DRAIN;
        private ChipSelection selection = ChipSelection.LEAST_OUTSTANDING;
        private int pipelineDepth = 2;
        private Executor callbacks = ForkJoinPool.commonPool();
        private Path captureDir;
        private long captureMaxBytes = org.ptorun.capture.RunCapture.DEFAULT_MAX_BYTES;
        private final List<RunObserver> observers = new ArrayList<>();
        private Path traceFile;
        // set by build()
        private RunObserver observer;
        private WorkerTimeline timeline;

        private ChipIsolation isolation;
        private RestartPolicy restartPolicy = RestartPolicy.DEFAULT;

        private Builder() {
        }

        /**
         * Captures every failed run into {@code dir} as {@code run-<runId>-<dispatchId>.ptocap}, a
         * {@link org.ptorun.capture.RunCapture} that {@code ptorun replay} or
         * {@link org.ptorun.capture.RunReplay} runs again (docs/replay.md). The cost is paid by
         * every run, not only the failed ones: a failure is known only at the end, and the caller
         * may reuse the tensors after it, so each run's input bytes are copied when it is enqueued
         * (under the admission lock). A failed run's file is written by the thread completing it,
         * before its future fails. A run whose tensors exceed {@code RunCapture.DEFAULT_MAX_BYTES}
         * (256 MiB), or that names a {@code DeviceBuffer}, is not captured (logged); a capture that
         * cannot be written is logged; neither affects the run. Off by default. A run whose config
         * names a directory ({@link CallConfig.Builder#captureFailuresTo}) is captured there, with or
         * without this option.
         */
        public Builder captureFailures(Path dir) {
            return captureFailures(dir, org.ptorun.capture.RunCapture.DEFAULT_MAX_BYTES);
        }

        /** {@link #captureFailures(Path)} with another bound on a capture's tensor bytes. */
        public Builder captureFailures(Path dir, long maxBytes) {
            if (maxBytes < 0) {
                throw new IllegalArgumentException("capture bound " + maxBytes + " must be >= 0");
            }
            this.captureDir = Objects.requireNonNull(dir, "dir");
            this.captureMaxBytes = maxBytes;
            return this;
        }

        /**
         * Where continuations of the Worker's futures run when they were attached before
         * completion (default: {@link ForkJoinPool#commonPool()}); never the thread driving
         * a chip. See {@link RunTicket#result()}.
         */
        public Builder callbackExecutor(Executor executor) {
            this.callbacks = Objects.requireNonNull(executor, "executor");
            return this;
        }

        /**
         * Told of every run the Worker finishes, e.g. {@code org.ptorun.metrics.WorkerMetrics}
         * (see {@link RunObserver}); default none, which costs nothing. Called more than once,
         * it adds observers: each is told, in the order given (after the {@link #trace}
         * timeline, if any), and one that throws does not keep the others from being told.
         */
        public Builder runObserver(RunObserver observer) {
            this.observers.add(Objects.requireNonNull(observer, "observer"));
            return this;
        }

        /**
         * Writes a timeline of the Worker to {@code file} when it closes: a Chrome Trace Event
         * JSON file (open it in ui.perfetto.dev) with a track for the admission queue and two
         * per chip, a slice per run phase, flow arrows from each run's enqueue to its
         * finalize, and a slice per collective step; see {@link WorkerTimeline} and
         * docs/operations.md, "Timeline". It keeps at most {@link WorkerTimeline#MAX_RUNS}
         * runs in memory (later ones are dropped and counted in the file's metadata). The
         * first {@code close()} writes it, once, after every run finished; a file that cannot
         * be written is logged, never thrown from close. Off by default.
         */
        public Builder trace(Path file) {
            this.traceFile = Objects.requireNonNull(file, "file");
            return this;
        }

        public Builder variant(Variant variant) {
            this.variant = Objects.requireNonNull(variant, "variant");
            return this;
        }

        public Builder runtime(HostRuntime runtime) {
            this.runtime = Objects.requireNonNull(runtime, "runtime");
            return this;
        }

        /** The chips, one {@link ChipWorker} per device id (default: device 0). */
        public Builder devices(int... deviceIds) {
            if (deviceIds.length == 0) {
                throw new IllegalArgumentException("at least one device id");
            }
            for (int i = 0; i < deviceIds.length; i++) {
                for (int j = 0; j < i; j++) {
                    if (deviceIds[i] == deviceIds[j]) {
                        throw new IllegalArgumentException("device id " + deviceIds[i] + " given twice");
                    }
                }
            }
            this.devices = deviceIds.clone();
            return this;
        }

        /** Runs admitted but not yet taken by their chip, across all chips (default 64). */
        public Builder queueCapacity(int capacity) {
            if (capacity < 1) {
                throw new IllegalArgumentException("queue capacity " + capacity + " must be at least 1");
            }
            this.queueCapacity = capacity;
            return this;
        }

        /**
         * True: one dispatcher thread per chip makes progress; false (default): the caller
         * does. A dispatcher is a daemon; interrupted while its chip is idle it ends, and the
         * chip's next enqueue (or close) starts a new one, so it never holds up a program's
         * exit, nor {@code mvn exec:java}'s.
         */
        public Builder background(boolean background) {
            this.background = background;
            return this;
        }

        public Builder shutdownPolicy(ShutdownPolicy policy) {
            this.shutdownPolicy = Objects.requireNonNull(policy, "policy");
            return this;
        }

        public Builder chipSelection(ChipSelection selection) {
            this.selection = Objects.requireNonNull(selection, "selection");
            return this;
        }

        /**
         * Where each chip's library runs (default {@link ChipIsolation#configuredDefault()}):
         * {@link ChipIsolation#PROCESS} puts every chip in a chip host process of its own, so
         * a kernel that crashes fails that chip's runs, not the service (docs/isolation.md).
         */
        public Builder isolation(ChipIsolation isolation) {
            this.isolation = Objects.requireNonNull(isolation, "isolation");
            return this;
        }

        /**
         * How chips in {@link ChipIsolation#PROCESS process isolation} are restarted when
         * they turn unhealthy (default {@link RestartPolicy#DEFAULT}; {@link RestartPolicy#NEVER}
         * keeps a crashed chip down). Chips in process are never restarted.
         */
        public Builder restartPolicy(RestartPolicy policy) {
            this.restartPolicy = Objects.requireNonNull(policy, "policy");
            return this;
        }

        /** At most this many pipeline slots per chip, 1 or 2 (default 2; the library's contract may allow fewer). */
        public Builder pipelineDepth(int depth) {
            if (depth < 1 || depth > 2) {
                throw new IllegalArgumentException("pipeline depth " + depth + " is outside [1, 2]");
            }
            this.pipelineDepth = depth;
            return this;
        }

        /**
         * Opens the chips and (background mode) starts their dispatchers, then tells the
         * {@link #runObserver run observer} (if any) of the Worker.
         *
         * @throws IllegalStateException without a variant or runtime
         */
        public Worker build() {
            List<RunObserver> all = new ArrayList<>();
            timeline = traceFile == null ? null : new WorkerTimeline(traceFile, WorkerTimeline.MAX_RUNS);
            if (timeline != null) {
                all.add(timeline); // first: once a later observer was told, the timeline has the run
            }
            all.addAll(observers);
            observer = RunObservers.of(all);
            HostRuntime rt = runtime;
            if (rt == null) {
                if (variant == null) {
                    throw new IllegalStateException("Worker.builder() needs a variant or a runtime");
                }
                rt = HostRuntime.load(variant);
            }
            List<ChipWorker> chips = new ArrayList<>(devices.length);
            Worker worker;
            try {
                for (int id : devices) {
                    chips.add(ChipWorker.open(rt, id, isolation == null ? ChipIsolation.configuredDefault()
                            : isolation));
                }
                worker = new Worker(this, rt, chips);
            } catch (RuntimeException | Error e) {
                for (ChipWorker c : chips) {
                    c.close();
                }
                throw e;
            }
            if (observer != null) {
                try {
                    observer.workerBuilt(worker);
                } catch (RuntimeException | Error e) { // e.g. an observer already bound to another Worker
                    worker.close();
                    throw e;
                }
            }
            return worker;
        }
    }
}

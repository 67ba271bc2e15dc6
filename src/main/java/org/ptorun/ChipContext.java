package org.ptorun;

import java.lang.ref.Reference;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.ptorun.callable.ChipCallable;
import org.ptorun.callable.Direction;
import org.ptorun.internal.EmulatedDriverLibrary;
import org.ptorun.internal.NativeFolder;
import org.ptorun.internal.Layouts;
import org.ptorun.internal.NativeApi;
import org.ptorun.internal.NativeMemory;
import org.ptorun.internal.OffHeapBlock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Everything a {@link ChipWorker} owns, kept apart from the public object so the leak
 * net can close it without keeping the ChipWorker reachable: one device context, one
 * run storage (plus args block, CallConfig block and descriptor) per pipeline slot,
 * and the per-slot phase table of lifecycle.md §4.
 *
 * <p>Locking: {@link #phaseLock} guards the phase table and the open state; it is never
 * held across a native call: a call sets a transitional phase (and {@code inCall})
 * under the lock, calls the library without it, and applies the result under it. A slot
 * whose {@code inCall} is set belongs to the calling thread, which alone touches the
 * slot's off-heap blocks and run resources; the lock hand-offs order those accesses.
 * {@link #deviceLock} orders calls that are not about a run (memory, copies, callables,
 * queries: read side) before device teardown (write side). {@link #callableLock} makes a
 * prepare's signature lookup and its native call one step against registration (taken
 * before deviceLock). close() waits on phaseLock for the calls in flight to end
 * ({@link #endCall} notifies), bounded by each run's timeout.
 */
final class ChipContext {

    private static final Logger LOG = LoggerFactory.getLogger(ChipWorker.class);

    enum Phase { EMPTY, PREPARING, PREPARED, LAUNCHING, LAUNCHED, REAPED, FINALIZING }

    private enum State { OPEN, CLOSING, CLOSED }

    static final String OUTSIDE_CONTRACT = "lease is outside the runtime PipelineContract";
    static final String SLOT_OCCUPIED = "slot already owns an unfinished native run";
    static final String NO_PREDECESSOR = "requires an active predecessor before staging a successor";
    static final String STALE_GENERATION = "lease generation is stale";
    static final String WRONG_PHASE = "stale or used in the wrong phase";
    static final String ALREADY_FINALIZED = "stale or already finalized";

    private static final int POLL_NOT_READY = 0;
    private static final int POLL_COMPLETE = 1;
    private static final int STAGING_ALIGN = 64;

    private final NativeApi api;
    private final Variant variant;
    private final PipelineContract contract;
    private final int deviceId;
    private final long ctx;
    private final Slot[] slots;
    private final boolean concurrentPrepare;
    private final Object phaseLock = new Object();
    private final Object closeMonitor = new Object();
    private final ReentrantReadWriteLock deviceLock = new ReentrantReadWriteLock();
    /**
     * Read side: a prepare or blocking run from reading the callable's signature to the
     * native call's return. Write side: registration. Taken before {@link #deviceLock}.
     */
    private final ReentrantReadWriteLock callableLock = new ReentrantReadWriteLock();
    private final SlotGenerationFilter filter;
    private final Map<Integer, Registered> callables = new ConcurrentHashMap<>();
    /** Guarded by phaseLock for writes; read without it by the non-run calls. */
    private volatile State state = State.OPEN;
    /** Set under deviceLock's write side once finalize_device ran (or the context was leaked). */
    private boolean deviceReleased;

    /** A registered callable: its bytes (kept until unregistered) and its tensor directions. */
    private record Registered(OffHeapBlock bytes, Direction[] tensorDirections) {
    }

    /**
     * Opens a device: allocates every slot's blocks, creates the device context, hands it
     * the images (copied off-heap for the call) and brings the device up.
     */
    ChipContext(NativeApi api, Variant variant, PipelineContract contract, long storageSize, long storageAlignment,
                int deviceId, byte[] aicpuImage, byte[] aicoreImage) {
        this.api = Objects.requireNonNull(api, "api");
        this.variant = Objects.requireNonNull(variant, "variant");
        this.contract = Objects.requireNonNull(contract, "contract");
        Objects.requireNonNull(aicpuImage, "aicpuImage");
        Objects.requireNonNull(aicoreImage, "aicoreImage");
        if (deviceId < 0) {
            throw new IllegalArgumentException("device id " + deviceId + " is negative");
        }
        if (aicpuImage.length == 0 || aicoreImage.length == 0) {
            throw new IllegalArgumentException("device images must not be empty (AICPU " + aicpuImage.length
                    + " bytes, AICore " + aicoreImage.length + " bytes)");
        }
        if (storageSize < 8 || storageSize > Integer.MAX_VALUE || storageAlignment < 8
                || Long.bitCount(storageAlignment) != 1) {
            throw new IllegalArgumentException("run storage of " + storageSize + " bytes aligned "
                    + storageAlignment + " violates the contract (size >= 8, alignment a power of two >= 8)");
        }
        this.deviceId = deviceId;
        this.filter = new SlotGenerationFilter(contract.pipelineDepth());
        Slot[] made = new Slot[contract.pipelineDepth()];
        long context = 0;
        boolean opened = false;
        try {
            for (int i = 0; i < made.length; i++) {
                made[i] = new Slot(i, contract.bankOfSlot(i), storageSize, storageAlignment);
            }
            context = api.createDeviceContext();
            if (context == 0) {
                throw failure("create_device_context", PtoError.OUT_OF_MEMORY.code(),
                        lastError(), null);
            }
            init(context, aicpuImage, aicoreImage);
            this.concurrentPrepare = made.length > 1 && api.supportsConcurrentNativePrepare(context) > 0;
            opened = true;
        } finally {
            if (!opened) {
                if (context != 0) {
                    api.destroyDeviceContext(context);
                }
                for (Slot s : made) {
                    if (s != null) {
                        s.free();
                    }
                }
            }
        }
        this.ctx = context;
        this.slots = made;
        LOG.info("opened {}: {} pipeline slot(s) {}, run storage {} bytes aligned {}, concurrent prepare {}",
                describe(), made.length, contract, storageSize, storageAlignment, concurrentPrepare);
    }

    private void init(long context, byte[] aicpuImage, byte[] aicoreImage) {
        try (OffHeapBlock aicpu = copyOffHeap(aicpuImage); OffHeapBlock aicore = copyOffHeap(aicoreImage)) {
            int rc = api.init(context, deviceId, aicpu.address(), aicpuImage.length, aicore.address(),
                    aicoreImage.length, 0, 0, 0);
            if (rc != 0) {
                String message = lastError();
                if (rc == PtoError.DEVICE.code() && message.startsWith(DRIVER_LOAD_PREFIX)) {
                    /* onboard_driver.c: every refusal to load the driver starts so */
                    throw new LibraryLoadException(describe() + ": cannot open the device, its driver does not load: "
                            + message + " (an onboard library loads -D" + NativeFolder.DRIVER_PROPERTY
                            + " when set, else the file named by PTORUN_DRIVER, else "
                            + EmulatedDriverLibrary.BUNDLED_FILE_NAME + " next to itself; docs/java.md, Loading)",
                            NativeErrors.fromNative("simpler_init on device " + deviceId, rc, message, null));
                }
                throw failure("simpler_init on device " + deviceId, rc, message, null);
            }
        }
    }

    private static OffHeapBlock copyOffHeap(byte[] bytes) {
        OffHeapBlock block = OffHeapBlock.allocate(bytes.length, 64);
        block.buffer().put(0, bytes);
        return block;
    }

    String describe() {
        return "chip " + variant + " device " + deviceId;
    }

    Variant variant() {
        return variant;
    }

    int deviceId() {
        return deviceId;
    }

    int pipelineDepth() {
        return slots.length;
    }

    boolean supportsConcurrentPrepare() {
        return concurrentPrepare;
    }

    boolean isClosed() {
        return state != State.OPEN;
    }

    /**
     * The native message an onboard runner appends when a device error poisoned it
     * (platform/onboard: stream error, timeout, device lost).
     */
    static final String POISON_MARKER = "poisoned until finalize_device";
    /** How every refusal of platform/onboard/onboard_driver.c to load the driver begins. */
    static final String DRIVER_LOAD_PREFIX = "onboard driver";

    private volatile boolean poisoned;

    boolean isHealthy() {
        return !poisoned && state == State.OPEN;
    }

    /** The exception for a failed native call; remembers a poisoned device context for good. */
    private PtoRunException failure(String operation, int code, String nativeMessage, NativeRun run) {
        if (code == PtoError.POISONED.code() || (nativeMessage != null && nativeMessage.contains(POISON_MARKER))) {
            poisoned = true;
        }
        return NativeErrors.fromNative(operation, code, nativeMessage, run);
    }

    // ---- native runs -------------------------------------------------------------

    NativeRun prepare(int callableId, TaskArgs args, CallConfig config, PipelineSlotLease lease, long runId,
                      long dispatchId, AcceptanceWord acceptance) {
        checkRunArguments(callableId, args, config, acceptance);
        checkLeaseShape(lease);
        NativeRun run = new NativeRun(lease.slotId(), lease.generation(), RunEpochs.next(), runId, dispatchId);
        Slot slot = slots[run.slot()];
        int rc = PtoError.FAILED.code();
        String message = null;
        // The signature read here and the library's entry the native prepare binds are one
        // pair: a registration on this chip waits until the native prepare returned.
        callableLock.readLock().lock();
        try {
            Direction[] directions = tensorDirections(callableId);
            checkArgs(args, directions);
            RunEvents.Prepare event = RunEvents.beginPrepare();
            admit(slot, run, permitsOverlap(config), true, config);
            try {
                bind(slot, run, args, config, acceptance, directions);
                rc = api.prepareRun(ctx, slot.storage.address(), callableId, slot.args.address(),
                        slot.config.address(), slot.descriptor.address());
                if (rc != 0) {
                    message = lastError();
                }
            } finally {
                Reference.reachabilityFence(args);
                Reference.reachabilityFence(acceptance);
                if (event != null) {
                    event.callableId = callableId;
                    event.commitFor(this, run, rc);
                }
                if (rc == 0) {
                    synchronized (phaseLock) {
                        slot.phase = Phase.PREPARED;
                        endCall(slot);
                    }
                } else {
                    releaseRunResources(slot);
                    synchronized (phaseLock) {
                        slot.empty();
                        endCall(slot);
                    }
                }
            }
        } finally {
            callableLock.readLock().unlock();
        }
        if (rc != 0) {
            throw failure("prepare of callable " + callableId, rc, message, run);
        }
        if (LOG.isDebugEnabled()) {
            LOG.debug("prepared {} on {}", run.identity(), describe());
        }
        return run;
    }

    void launch(NativeRun run) {
        Slot slot;
        synchronized (phaseLock) {
            slot = gate(run, "launch", WRONG_PHASE, Phase.PREPARED, Phase.PREPARED, Phase.PREPARED);
            slot.phase = Phase.LAUNCHING;
            slot.inCall = true;
        }
        RunEvents.Launch event = RunEvents.beginLaunch();
        int rc;
        try {
            rc = api.launchRun(ctx, slot.storage.address());
            slot.launchedAt = System.nanoTime();
            RunEvents.commit(event, this, run, rc);
        } catch (RuntimeException | Error e) {
            synchronized (phaseLock) {
                slot.phase = Phase.PREPARED;
                endCall(slot);
            }
            throw e;
        }
        if (rc == 0) {
            synchronized (phaseLock) {
                slot.phase = Phase.LAUNCHED;
                endCall(slot);
            }
            if (LOG.isDebugEnabled()) {
                LOG.debug("launched {}", run.identity());
            }
            return;
        }
        String message = lastError();
        // Did the run end (it failed before the marker, or finished), or was the launch
        // refused before it started (claim busy, poisoned)? Only the library knows.
        boolean ended = api.pollRun(ctx, slot.storage.address()) == POLL_COMPLETE;
        if (ended) {
            completed(slot, run, rc);
        }
        synchronized (phaseLock) {
            if (ended) {
                slot.phase = Phase.REAPED;
                slot.waitResult = rc;
                slot.waitMessage = message;
            } else {
                slot.phase = Phase.PREPARED;
            }
            endCall(slot);
        }
        if (LOG.isDebugEnabled()) {
            LOG.debug("launch of {} failed with {}; the run {}", run.identity(), PtoError.nameOf(rc),
                    ended ? "ended (REAPED)" : "stays PREPARED");
        }
        throw failure("launch", rc, message, run);
    }

    boolean poll(NativeRun run) {
        Slot slot;
        synchronized (phaseLock) {
            slot = gate(run, "poll", WRONG_PHASE, Phase.LAUNCHED, Phase.REAPED, Phase.REAPED);
            if (slot.phase == Phase.REAPED) {
                return true;
            }
            slot.inCall = true;
        }
        int rc = PtoError.FAILED.code();
        String message = null;
        try {
            rc = api.pollRun(ctx, slot.storage.address());
            if (rc < 0) {
                message = lastError();
            }
        } finally {
            synchronized (phaseLock) {
                if (rc == POLL_COMPLETE) {
                    slot.phase = Phase.REAPED;
                }
                endCall(slot);
            }
        }
        if (rc == POLL_COMPLETE) {
            completed(slot, run, 0);
            if (LOG.isDebugEnabled()) {
                LOG.debug("reaped {} (poll)", run.identity());
            }
            return true;
        }
        if (rc == POLL_NOT_READY) {
            return false;
        }
        throw failure("poll", rc, message, run);
    }

    void await(NativeRun run) {
        Slot slot;
        synchronized (phaseLock) {
            slot = gate(run, "await", WRONG_PHASE, Phase.LAUNCHED, Phase.REAPED, Phase.REAPED);
            if (slot.phase == Phase.REAPED) {
                return;
            }
            slot.inCall = true;
        }
        int rc = PtoError.FAILED.code();
        String message = null;
        try {
            rc = api.waitRun(ctx, slot.storage.address());
            if (rc != 0) {
                message = lastError();
            }
        } finally {
            synchronized (phaseLock) {
                slot.waitResult = rc;
                slot.waitMessage = message;
                slot.phase = Phase.REAPED;
                endCall(slot);
            }
        }
        completed(slot, run, rc);
        if (LOG.isDebugEnabled()) {
            LOG.debug("reaped {} (await): {}", run.identity(), PtoError.nameOf(rc));
        }
    }

    void finalizeRun(NativeRun run) {
        Slot slot;
        Phase previous;
        synchronized (phaseLock) {
            slot = gate(run, "finalize", ALREADY_FINALIZED, Phase.PREPARED, Phase.LAUNCHED, Phase.REAPED);
            previous = slot.phase;
            slot.phase = Phase.FINALIZING;
            slot.inCall = true;
        }
        finalizeSlot(slot, previous);
    }

    /**
     * Drains and releases the run a slot holds (the slot is FINALIZING and in this
     * thread's call); the slot is EMPTY afterwards whatever happens.
     */
    private void finalizeSlot(Slot slot, Phase previous) {
        NativeRun run = slot.run;
        int waitRc = slot.waitResult;
        String waitMessage = slot.waitMessage;
        int rc = PtoError.FAILED.code();
        String message = null;
        RunEvents.Finalize event = RunEvents.beginFinalize();
        try {
            if (previous == Phase.LAUNCHED) {
                waitRc = api.waitRun(ctx, slot.storage.address());
                if (waitRc != 0) {
                    waitMessage = lastError();
                }
                completed(slot, run, waitRc);
            }
            rc = api.finalizeRun(ctx, slot.storage.address());
            if (rc != 0) {
                message = lastError();
            } else if (waitRc == 0 && previous != Phase.PREPARED) {
                // only a launched run that succeeded produced anything to copy back
                copyBack(slot);
            }
        } finally {
            releaseRunResources(slot);
            synchronized (phaseLock) {
                slot.empty();
                endCall(slot);
            }
            RunEvents.commit(event, this, run, rc != 0 ? rc : waitRc);
        }
        if (LOG.isDebugEnabled()) {
            LOG.debug("finalized {}: {}", run.identity(), PtoError.nameOf(rc != 0 ? rc : waitRc));
        }
        if (rc != 0) {
            throw failure("finalize", rc, message, run);
        }
        if (waitRc != 0) {
            throw failure("run", waitRc, waitMessage, run);
        }
    }

    /**
     * The blocking composition on a lease's slot, or slot 0 unleased (epoch 0, no
     * generation filter). A registration on this chip waits until it returned.
     */
    void run(int callableId, TaskArgs args, CallConfig config, PipelineSlotLease lease, long runId, long dispatchId,
             AcceptanceWord acceptance) {
        checkRunArguments(callableId, args, config, acceptance);
        if (lease != null) {
            checkLeaseShape(lease);
        }
        NativeRun run = lease == null
                ? new NativeRun(0, 0, 0, runId, dispatchId)
                : new NativeRun(lease.slotId(), lease.generation(), RunEpochs.next(), runId, dispatchId);
        Slot slot = slots[run.slot()];
        int rc = PtoError.FAILED.code();
        String message = null;
        callableLock.readLock().lock();
        try {
            Direction[] directions = tensorDirections(callableId);
            checkArgs(args, directions);
            admit(slot, run, permitsOverlap(config), lease != null, config);
            try {
                bind(slot, run, args, config, acceptance, directions);
                rc = api.run(ctx, slot.storage.address(), callableId, slot.args.address(), slot.config.address(),
                        slot.descriptor.address());
                if (rc != 0) {
                    message = lastError();
                } else {
                    copyBack(slot);
                }
            } finally {
                Reference.reachabilityFence(args);
                Reference.reachabilityFence(acceptance);
                releaseRunResources(slot);
                synchronized (phaseLock) {
                    slot.empty();
                    endCall(slot);
                }
            }
        } finally {
            callableLock.readLock().unlock();
        }
        if (LOG.isDebugEnabled()) {
            LOG.debug("ran {}: {}", run.identity(), PtoError.nameOf(rc));
        }
        if (rc != 0) {
            throw failure("run of callable " + callableId, rc, message, run);
        }
    }

    /** The run was seen complete (REAPED): its Completion event. */
    private void completed(Slot slot, NativeRun run, int code) {
        RunEvents.Completion event = RunEvents.completion();
        if (event != null) {
            event.sinceLaunch = System.nanoTime() - slot.launchedAt;
            event.commitFor(this, run, code);
        }
    }

    // ---- admission and the gate ------------------------------------------------------

    private void checkLeaseShape(PipelineSlotLease lease) {
        Objects.requireNonNull(lease, "lease");
        if (lease.reserved() != 0 || lease.generation() == 0 || lease.slotId() < 0 || lease.slotId() >= slots.length) {
            throw new IllegalArgumentException(OUTSIDE_CONTRACT + ": " + lease + " (pipeline depth " + slots.length
                    + "; reserved must be 0 and generation non-zero)");
        }
    }

    /** A run may overlap another only where the library supports it and neither has a diagnostic on. */
    private boolean permitsOverlap(CallConfig config) {
        return concurrentPrepare && !config.hasDiagnostics();
    }

    /** Under the lock: the slot, its neighbours and the generation filter admit the run; the slot becomes PREPARING. */
    private void admit(Slot slot, NativeRun run, boolean permits, boolean filtered, CallConfig config) {
        synchronized (phaseLock) {
            ensureOpen();
            if (slot.phase != Phase.EMPTY) {
                throw new ChipBusyException("prepare refused: " + SLOT_OCCUPIED + " (slot " + slot.index
                        + " holds run_epoch=" + Long.toUnsignedString(slot.runEpoch) + " in phase " + slot.phase + ")",
                        PtoError.BUSY.code(), "", run);
            }
            for (Slot other : slots) {
                if (other == slot || other.phase == Phase.EMPTY) {
                    continue;
                }
                boolean active = other.phase == Phase.LAUNCHED || other.phase == Phase.REAPED;
                if (!(permits && other.permitsSuccessor && active)) {
                    throw new ChipBusyException("prepare refused: the run in slot " + slot.index + " "
                            + NO_PREDECESSOR + " (slot " + other.index + " is " + other.phase
                            + (other.permitsSuccessor ? "" : ", admits no successor")
                            + (permits ? "" : concurrentPrepare ? ", this run has a diagnostic on"
                                    : ", " + variant + " cannot prepare while a run executes")
                            + ")", PtoError.BUSY.code(), "", run);
                }
            }
            if (filtered && !filter.admit(slot.index, run.generation())) {
                throw new LeaseRejectedException("prepare refused: " + STALE_GENERATION + " (slot " + slot.index
                        + " has seen generation " + Long.toUnsignedString(filter.newest(slot.index)) + ")",
                        PtoError.INVALID_ARGUMENT.code(), "", run);
            }
            slot.phase = Phase.PREPARING;
            slot.inCall = true;
            slot.run = run;
            slot.runEpoch = run.runEpoch();
            slot.leaseGeneration = run.generation();
            slot.waitResult = 0;
            slot.waitMessage = null;
            slot.permitsSuccessor = permits;
            slot.timeoutMs = config.timeoutMs() == 0 ? CallConfig.DEFAULT_TIMEOUT_MS : config.timeoutMs();
        }
    }

    /**
     * Under the lock: the call on {@code slot} has returned from the library. A close
     * waiting for calls in flight re-checks.
     */
    private void endCall(Slot slot) {
        slot.inCall = false;
        if (state != State.OPEN) {
            phaseLock.notifyAll();
        }
    }

    /**
     * Under the lock: the slot a token names, if it still holds that run (same epoch),
     * is in one of the allowed phases and no other call on it is under way.
     */
    private Slot gate(NativeRun run, String operation, String refusal, Phase a, Phase b, Phase c) {
        Objects.requireNonNull(run, "run");
        ensureOpen();
        if (run.slot() < 0 || run.slot() >= slots.length || run.runEpoch() == 0) {
            throw stale(operation, refusal, run, "no slot " + run.slot() + " holds run_epoch="
                    + Long.toUnsignedString(run.runEpoch()) + " on " + describe());
        }
        Slot slot = slots[run.slot()];
        if (slot.runEpoch != run.runEpoch()) {
            throw stale(operation, refusal, run, slot.phase == Phase.EMPTY
                    ? "slot " + slot.index + " holds no run"
                    : "slot " + slot.index + " holds run_epoch=" + Long.toUnsignedString(slot.runEpoch));
        }
        if (slot.inCall) {
            throw stale(operation, refusal, run, "another call on this run is in progress (phase " + slot.phase + ")");
        }
        if (slot.phase != a && slot.phase != b && slot.phase != c) {
            throw stale(operation, refusal, run, "the run is " + slot.phase);
        }
        return slot;
    }

    private static StaleRunException stale(String operation, String refusal, NativeRun run, String detail) {
        return new StaleRunException(operation + " refused: the token is " + refusal + " (" + detail + ")",
                PtoError.WRONG_PHASE.code(), "", run);
    }

    private void ensureOpen() {
        if (state != State.OPEN) {
            throw new IllegalStateException(describe() + " is closed");
        }
    }

    // ---- binding a run's arguments ----------------------------------------------------

    private Direction[] tensorDirections(int callableId) {
        Registered r = callables.get(callableId);
        return r == null ? null : r.tensorDirections();
    }

    private static Direction directionOf(Direction[] directions, int index) {
        // unknown callable (the library will refuse it) or extra tensors: stage and copy back
        return directions != null && index < directions.length ? directions[index] : Direction.INOUT;
    }

    /** What can be refused before admission: foreign or closed device buffers, read-only outputs. */
    private void checkArgs(TaskArgs args, Direction[] directions) {
        for (int i = 0; i < args.tensorCount(); i++) {
            Tensor t = args.tensorAt(i);
            if (t.source() == Tensor.Source.DEVICE) {
                DeviceBuffer buffer = (DeviceBuffer) t.data();
                if (buffer.context() != this) {
                    throw new IllegalArgumentException("tensor argument " + i + ": " + buffer
                            + " belongs to another ChipWorker (" + buffer.context().describe() + ")");
                }
                if (buffer.isClosed()) {
                    throw new IllegalStateException("tensor argument " + i + ": " + buffer + " is closed");
                }
            } else if (t.source() == Tensor.Source.DIRECT && ((ByteBuffer) t.data()).isReadOnly()
                    && directionOf(directions, i).writes()) {
                throw new IllegalArgumentException("tensor argument " + i + " is "
                        + directionOf(directions, i) + " but its ByteBuffer is read-only");
            }
        }
    }

    /** What prepare and run refuse before any native call or lock. */
    private void checkRunArguments(int callableId, TaskArgs args, CallConfig config, AcceptanceWord acceptance) {
        Objects.requireNonNull(args, "args");
        Objects.requireNonNull(config, "config");
        checkCallableId(callableId);
        config.validateFor(variant.arch());
        checkAcceptance(acceptance);
    }

    private static void checkAcceptance(AcceptanceWord acceptance) {
        if (acceptance != null && acceptance.isCaptured()) {
            throw new IllegalArgumentException("the acceptance word is captured by an unfinalized run");
        }
    }

    /** Writes the run's args, config and descriptor blocks; stages host arrays; pins what the run uses. */
    private void bind(Slot slot, NativeRun run, TaskArgs args, CallConfig config, AcceptanceWord acceptance,
                      Direction[] directions) {
        if (acceptance != null) {
            acceptance.capture(run);
            slot.acceptance = acceptance;
        }
        slot.directions = directions;
        long staging = 0;
        boolean anyArray = false;
        for (int i = 0; i < args.tensorCount(); i++) {
            Tensor t = args.tensorAt(i);
            if (t.source() == Tensor.Source.ARRAY) {
                anyArray = true;
                staging += alignUp(t.byteSize());
            }
        }
        if (anyArray) {
            slot.ensureStaging(Math.max(staging, STAGING_ALIGN));
        }
        slot.stagingUsed = 0;
        args.writeTo(slot.args.buffer(), slot);
        if (slot.writtenConfig != config) {
            config.writeTo(slot.config.buffer(), 0);
            slot.writtenConfig = config;
        }
        ByteBuffer d = slot.descriptor.buffer();
        d.putInt(Layouts.NativeRunDescriptor.PIPELINE_SLOT, slot.index);
        d.putInt(Layouts.NativeRunDescriptor.ARENA_BANK, slot.bank);
        d.putLong(Layouts.NativeRunDescriptor.RUN_ID, run.runId());
        d.putLong(Layouts.NativeRunDescriptor.GENERATION, run.generation());
        d.putLong(Layouts.NativeRunDescriptor.DISPATCH_ID, run.dispatchId());
        d.putLong(Layouts.NativeRunDescriptor.RUN_EPOCH, run.runEpoch());
        d.putLong(Layouts.NativeRunDescriptor.ACCEPTED_STATE, acceptance == null ? 0 : acceptance.address());
        d.putInt(Layouts.NativeRunDescriptor.ACCEPTED_VALUE, acceptance == null ? 0 : acceptance.acceptedValue());
        d.putInt(Layouts.NativeRunDescriptor.ACCEPTED_VALUE + 4, 0);
    }

    private static long alignUp(long n) {
        return (n + STAGING_ALIGN - 1) & -STAGING_ALIGN;
    }

    /** After a successful launched run: staged arrays the signature writes get their bytes back. */
    private static void copyBack(Slot slot) {
        for (int i = 0; i < slot.tensorCount; i++) {
            Tensor t = slot.tensors[i];
            if (t.source() == Tensor.Source.ARRAY && directionOf(slot.directions, i).writes()) {
                NativeMemory.copyOut(slot.addresses[i], t.data());
            }
        }
    }

    /** The run is over (or never happened): drop its references, release the word and device buffers. */
    private static void releaseRunResources(Slot slot) {
        if (slot.acceptance != null) {
            slot.acceptance.release();
            slot.acceptance = null;
        }
        for (int i = 0; i < slot.tensorCount; i++) {
            Tensor t = slot.tensors[i];
            if (t.source() == Tensor.Source.DEVICE) {
                ((DeviceBuffer) t.data()).releaseFromRun();
            }
            slot.tensors[i] = null;
        }
        slot.tensorCount = 0;
        slot.directions = null;
    }

    // ---- device memory, callables, queries ----------------------------------------------

    DeviceBuffer malloc(ChipWorker owner, long bytes) {
        if (bytes <= 0) {
            throw new IllegalArgumentException("device allocation of " + bytes + " bytes: the size must be > 0");
        }
        deviceLock.readLock().lock();
        try {
            ensureOpen();
            long address = api.deviceMalloc(ctx, bytes);
            if (address == 0) {
                String message = lastError();
                throw failure("device_malloc of " + bytes + " bytes", mallocFailureCode(message),
                        stripCode(message), null);
            }
            return new DeviceBuffer(owner, this, address, bytes);
        } finally {
            deviceLock.readLock().unlock();
        }
    }

    private static final Pattern LEADING_CODE = Pattern.compile("^\\((-\\d+)\\) ");

    /** device_malloc's message leads with its code, "(-9) …" (abi.md, Device memory). */
    static int mallocFailureCode(String message) {
        Matcher m = LEADING_CODE.matcher(message);
        return m.find() ? Integer.parseInt(m.group(1)) : PtoError.OUT_OF_MEMORY.code();
    }

    private static String stripCode(String message) {
        Matcher m = LEADING_CODE.matcher(message);
        return m.find() ? message.substring(m.end()) : message;
    }

    /** Frees device memory; a no-op once the device released everything. */
    void free(long address) {
        deviceLock.readLock().lock();
        try {
            if (!deviceReleased) {
                api.deviceFree(ctx, address);
            }
        } finally {
            deviceLock.readLock().unlock();
        }
    }

    void copyTo(DeviceBuffer dst, long dstOffset, long hostAddress, long bytes, Object keepAlive) {
        checkRange("copyTo", dst, dstOffset, bytes);
        if (bytes == 0) {
            return;
        }
        deviceLock.readLock().lock();
        try {
            ensureOpen();
            int rc = api.copyToDevice(ctx, dst.address() + dstOffset, hostAddress, bytes);
            Reference.reachabilityFence(keepAlive);
            if (rc != 0) {
                throw failure("copy_to_device of " + bytes + " bytes", rc, lastError(), null);
            }
        } finally {
            deviceLock.readLock().unlock();
        }
    }

    void copyFrom(DeviceBuffer src, long srcOffset, long hostAddress, long bytes, Object keepAlive) {
        checkRange("copyFrom", src, srcOffset, bytes);
        if (bytes == 0) {
            return;
        }
        deviceLock.readLock().lock();
        try {
            ensureOpen();
            int rc = api.copyFromDevice(ctx, hostAddress, src.address() + srcOffset, bytes);
            Reference.reachabilityFence(keepAlive);
            if (rc != 0) {
                throw failure("copy_from_device of " + bytes + " bytes", rc, lastError(), null);
            }
        } finally {
            deviceLock.readLock().unlock();
        }
    }

    private void checkRange(String operation, DeviceBuffer buffer, long offset, long bytes) {
        Objects.requireNonNull(buffer, "buffer");
        if (buffer.context() != this) {
            throw new IllegalArgumentException(operation + ": " + buffer + " belongs to another ChipWorker ("
                    + buffer.context().describe() + ")");
        }
        if (buffer.isClosed()) {
            throw new IllegalStateException(operation + ": " + buffer + " is closed");
        }
        if (offset < 0 || bytes < 0 || offset > buffer.size() - bytes) {
            throw new IllegalArgumentException(operation + ": " + bytes + " bytes at offset " + offset
                    + " do not fit in " + buffer);
        }
    }

    /**
     * Registers under the write side of {@link #callableLock}: concurrent registrations of
     * one chip serialize, and none lands between a prepare's reading of the signature and
     * its native call, so the Java-side signature is always the library's.
     */
    void registerCallable(int id, ChipCallable callable) {
        Objects.requireNonNull(callable, "callable");
        checkCallableId(id);
        byte[] bytes = callable.bytes();
        Direction[] directions = callable.tensorDirections().toArray(new Direction[0]);
        OffHeapBlock block = copyOffHeap(bytes);
        boolean registered = false;
        callableLock.writeLock().lock();
        try {
            deviceLock.readLock().lock();
            try {
                ensureOpen();
                int rc = api.registerCallable(ctx, id, block.address());
                if (rc != 0) {
                    // the library keeps the callable it had under this id, and so does Java
                    throw failure("register_callable " + id, rc, lastError(), null);
                }
                registered = true;
                Registered previous = callables.put(id, new Registered(block, directions));
                if (previous != null) {
                    previous.bytes().close();
                }
            } finally {
                deviceLock.readLock().unlock();
            }
        } finally {
            callableLock.writeLock().unlock();
            if (!registered) {
                block.close();
            }
        }
        if (LOG.isDebugEnabled()) {
            LOG.debug("registered callable {} on {}: {}", id, describe(), callable);
        }
    }

    void unregisterCallable(int id) {
        checkCallableId(id);
        callableLock.writeLock().lock();
        try {
            deviceLock.readLock().lock();
            try {
                ensureOpen();
                int rc = api.unregisterCallable(ctx, id);
                if (rc != 0) {
                    throw failure("unregister_callable " + id, rc, lastError(), null);
                }
                Registered previous = callables.remove(id);
                if (previous != null) {
                    previous.bytes().close();
                }
            } finally {
                deviceLock.readLock().unlock();
            }
        } finally {
            callableLock.writeLock().unlock();
        }
    }

    /** Callable ids the library's registry holds: [0, MAX_CALLABLES). */
    static final int MAX_CALLABLES = 64;

    static void checkCallableId(int id) {
        if (id < 0 || id >= MAX_CALLABLES) {
            throw new IllegalArgumentException("callable id " + id + " is outside [0, " + MAX_CALLABLES + ")");
        }
    }

    /** A query that is not about a run, refused once the ChipWorker is closing. */
    private interface Query {
        long ask(long ctx);
    }

    private long query(Query q) {
        deviceLock.readLock().lock();
        try {
            ensureOpen();
            return q.ask(ctx);
        } finally {
            deviceLock.readLock().unlock();
        }
    }

    long committedDeviceMemory() {
        return query(api::committedDeviceMemory);
    }

    long aicpuDlopenCount() {
        return query(api::aicpuDlopenCount);
    }

    long hostDlopenCount() {
        return query(api::hostDlopenCount);
    }

    long runStreamSetCreateCount() {
        return query(api::runStreamSetCreateCount);
    }

    long arenaBankGmHeapBase(int bank) {
        if (bank < 0 || bank >= PipelineContract.MAX_DEPTH) {
            throw new IllegalArgumentException("arena bank " + bank + " is outside [0, " + PipelineContract.MAX_DEPTH + ")");
        }
        return query(c -> api.arenaBankGmHeapBase(c, bank));
    }

    long retainedTempAddr(int slot) {
        if (slot < 0 || slot >= slots.length) {
            throw new IllegalArgumentException("slot " + slot + " is outside [0, " + slots.length + ")");
        }
        return query(c -> api.retainedTempAddr(c, slot));
    }

    List<Long> runtimeBufferAddresses() {
        List<Long> addresses = new ArrayList<>(slots.length);
        for (Slot s : slots) {
            addresses.add(s.storage.address());
        }
        return List.copyOf(addresses);
    }

    /** The signature Java holds for a callable id, or null (tests). */
    List<Direction> signatureOf(int id) {
        Registered r = callables.get(id);
        return r == null ? null : List.of(r.tensorDirections());
    }

    /** The phase of a slot (tests and diagnostics). */
    Phase phaseOf(int slot) {
        synchronized (phaseLock) {
            return slots[slot].phase;
        }
    }

    private String lastError() {
        return NativeMemory.cString(api.lastError());
    }

    // ---- close -------------------------------------------------------------------------

    /**
     * Stops new calls, waits for the calls inside the library to return (each bounded by
     * its run's timeout plus {@link #CLOSE_GRACE_MS}), finalizes every run that is
     * PREPARED, LAUNCHED or REAPED (errors logged), then finalize_device,
     * destroy_device_context and frees the blocks. Only a call that outlives its bound (a
     * kernel that never returns on sim) is left behind: the device context and that
     * slot's blocks are leaked with an ERROR naming the run, rather than freed under it.
     * Idempotent; a concurrent caller returns once the first is done.
     */
    void close() {
        synchronized (closeMonitor) {
            List<Slot> outstanding = new ArrayList<>(slots.length);
            List<Phase> previous = new ArrayList<>(slots.length);
            List<Slot> midCall = new ArrayList<>(0);
            synchronized (phaseLock) {
                if (state != State.OPEN) {
                    return;
                }
                state = State.CLOSING;
                awaitCallsInFlight();
                for (Slot s : slots) {
                    if (s.inCall) {
                        midCall.add(s);
                    } else if (s.phase == Phase.PREPARED || s.phase == Phase.LAUNCHED || s.phase == Phase.REAPED) {
                        outstanding.add(s);
                        previous.add(s.phase);
                        s.phase = Phase.FINALIZING;
                        s.inCall = true;
                    }
                }
            }
            for (int i = 0; i < outstanding.size(); i++) {
                Slot s = outstanding.get(i);
                NativeRun run = s.run;
                try {
                    finalizeSlot(s, previous.get(i));
                    LOG.info("close of {} finalized the outstanding run {}", describe(), run.identity());
                } catch (RuntimeException e) {
                    LOG.warn("close of {}: finalizing the outstanding run {} failed: {}", describe(),
                            run.identity(), e.getMessage());
                }
            }
            releaseDevice(midCall);
            synchronized (phaseLock) {
                state = State.CLOSED;
            }
        }
    }

    /** How long past a run's timeout close waits for a call of that run to return. */
    static final long CLOSE_GRACE_MS = 5_000;

    /**
     * Under {@link #phaseLock}, state CLOSING: parks until no slot is inside a call, or the
     * longest bound of the calls in flight (timeout + grace) has passed. Every call's end
     * notifies ({@link #endCall}). An interrupt does not cut the wait short (the device
     * must not be freed under a live call); it is restored afterwards.
     */
    private void awaitCallsInFlight() {
        long boundMs = -1;
        for (Slot s : slots) {
            if (s.inCall) {
                boundMs = Math.max(boundMs, s.timeoutMs + CLOSE_GRACE_MS);
            }
        }
        if (boundMs < 0) {
            return;
        }
        LOG.debug("close of {} waits up to {} ms for the calls in flight", describe(), boundMs);
        Runnable hook = closeWaitsHook;
        if (hook != null) {
            hook.run();
        }
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(boundMs);
        boolean interrupted = false;
        while (anyInCall()) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                break;
            }
            try {
                TimeUnit.NANOSECONDS.timedWait(phaseLock, left);
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    private boolean anyInCall() {
        for (Slot s : slots) {
            if (s.inCall) {
                return true;
            }
        }
        return false;
    }

    /** Tests: runs (under the phase lock) when close starts waiting for calls in flight. */
    private volatile Runnable closeWaitsHook;

    void onCloseWaits(Runnable hook) {
        this.closeWaitsHook = hook;
    }

    private void releaseDevice(List<Slot> midCall) {
        deviceLock.writeLock().lock();
        try {
            deviceReleased = true;
            if (!midCall.isEmpty()) {
                // a call is inside the library: neither the context nor that slot's blocks may go
                for (Slot s : midCall) {
                    LOG.error("close of {}: the {} call of {} in slot {} did not return within its timeout of {} ms"
                            + " + {} ms; leaking the device context and the slot's run storage rather than freeing"
                            + " them under a live call", describe(), s.phase, s.run == null ? "no run"
                            : s.run.identity(), s.index, s.timeoutMs, CLOSE_GRACE_MS);
                }
                for (Slot s : slots) {
                    if (!midCall.contains(s)) {
                        s.free();
                    }
                }
                return;
            }
            int rc = api.finalizeDevice(ctx);
            if (rc == PtoError.BUSY.code()) {
                // the library still holds a run we do not know of: free nothing it may use
                LOG.warn("close of {}: finalize_device refused ({}); leaking the device context and every run"
                        + " storage", describe(), lastError());
                return;
            }
            if (rc != 0) {
                LOG.warn("close of {}: finalize_device failed: {} ({})", describe(), PtoError.nameOf(rc), lastError());
            }
            api.destroyDeviceContext(ctx);
            for (Slot s : slots) {
                s.free();
            }
            for (Registered r : callables.values()) {
                r.bytes().close();
            }
            callables.clear();
        } finally {
            deviceLock.writeLock().unlock();
            LOG.info("closed {}", describe());
        }
    }

    // ---- one pipeline slot ----------------------------------------------------------------

    /**
     * One pipeline slot: its off-heap blocks (allocated at open, address-stable), its
     * row of the phase table, and the Java-side resources of the run it holds.
     */
    static final class Slot implements TaskArgs.TensorPlacement {
        final int index;
        final int bank;
        final OffHeapBlock storage;
        final OffHeapBlock args;
        final OffHeapBlock config;
        final OffHeapBlock descriptor;

        // the phase table row: guarded by phaseLock
        Phase phase = Phase.EMPTY;
        boolean inCall;
        long leaseGeneration;
        long runEpoch;
        long launchedAt; // System.nanoTime() when launch returned: written and read by the run's callers
        int waitResult;
        String waitMessage;
        boolean permitsSuccessor;
        int timeoutMs; // the run's deadline: what bounds close's wait for a call in flight
        NativeRun run;

        // the run's resources: touched only by the thread whose call holds the slot
        AcceptanceWord acceptance;
        Direction[] directions;
        final Tensor[] tensors = new Tensor[TaskArgs.MAX_TENSORS];
        final long[] addresses = new long[TaskArgs.MAX_TENSORS];
        int tensorCount;
        OffHeapBlock staging;
        long stagingUsed;
        CallConfig writtenConfig;

        Slot(int index, int bank, long storageSize, long storageAlignment) {
            this.index = index;
            this.bank = bank;
            OffHeapBlock s = null;
            OffHeapBlock a = null;
            OffHeapBlock c = null;
            boolean done = false;
            try {
                s = OffHeapBlock.allocate(storageSize, storageAlignment);
                a = OffHeapBlock.allocate(Layouts.ChipStorageTaskArgs.SIZE, Layouts.ChipStorageTaskArgs.ALIGN);
                c = OffHeapBlock.allocate(Layouts.CallConfig.SIZE, 8);
                this.descriptor = OffHeapBlock.allocate(Layouts.NativeRunDescriptor.SIZE,
                        Layouts.NativeRunDescriptor.ALIGN);
                done = true;
            } finally {
                if (!done) {
                    for (OffHeapBlock b : new OffHeapBlock[] {s, a, c}) {
                        if (b != null) {
                            b.close();
                        }
                    }
                }
            }
            this.storage = s;
            this.args = a;
            this.config = c;
        }

        /** Back to EMPTY (under phaseLock); the lease generation stays for diagnostics. */
        void empty() {
            phase = Phase.EMPTY;
            inCall = false;
            runEpoch = 0;
            run = null;
            waitResult = 0;
            waitMessage = null;
            permitsSuccessor = false;
        }

        void ensureStaging(long bytes) {
            if (staging != null && staging.size() >= bytes) {
                return;
            }
            long size = Math.max(bytes, staging == null ? 0 : Math.min(2 * staging.size(), Integer.MAX_VALUE));
            if (staging != null) {
                staging.close();
                staging = null;
            }
            staging = OffHeapBlock.allocate(size, STAGING_ALIGN);
        }

        /** Places tensor {@code i}: direct buffers in place, arrays into staging, device buffers as child memory. */
        @Override
        public long addressOf(int i, Tensor t) {
            long address;
            switch (t.source()) {
                case DIRECT:
                    address = t.hostAddress();
                    break;
                case ARRAY:
                    address = staging.address() + stagingUsed;
                    stagingUsed += alignUp(t.byteSize());
                    if (directionOf(directions, i).reads()) {
                        NativeMemory.copyIn(address, t.data());
                    }
                    break;
                default:
                    DeviceBuffer buffer = (DeviceBuffer) t.data();
                    buffer.retainForRun();
                    address = buffer.address();
                    break;
            }
            tensors[i] = t;
            addresses[i] = address;
            tensorCount = i + 1;
            return address;
        }

        void free() {
            storage.close();
            args.close();
            config.close();
            descriptor.close();
            if (staging != null) {
                staging.close();
            }
        }

        @Override
        public String toString() {
            return "slot " + index + " (bank " + bank + ") " + phase.name().toLowerCase(Locale.ROOT);
        }
    }
}

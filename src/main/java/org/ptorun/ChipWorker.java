package org.ptorun;

import java.io.IOException;
import java.io.InputStream;
import java.lang.ref.Reference;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import org.ptorun.callable.ChipCallable;
import org.ptorun.callable.Direction;
import org.ptorun.capture.RunCapture;
import org.ptorun.internal.ChipHost;
import org.ptorun.internal.LeakNet;
import org.ptorun.internal.LibraryLoader;
import org.ptorun.internal.NativeApi;
import org.ptorun.internal.NativeConstants;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One chip: its device context, device memory, registered callables and native runs.
 *
 * <pre>{@code
 * try (ChipWorker chip = ChipWorker.open(HostRuntime.load(variant), 0)) {
 *     chip.registerCallable(0, callable);
 *     NativeRun run = chip.prepare(0, args, CallConfig.DEFAULT, lease, runId, dispatchId, acceptance);
 *     chip.launch(run);               // returns after the kernel-launch marker
 *     while (!chip.poll(run)) { … }   // never blocks
 *     chip.finalizeRun(run);             // drains, copies results back, releases; throws on run failure
 * }
 * }</pre>
 *
 * <p>Thread-safe: any thread may call any method, and any phase of a run may be driven
 * from a thread other than the one that prepared it. Calls on one run must not
 * overlap; an overlapping call fails fast with a {@link StaleRunException} instead of
 * reaching native code. A run is identified by its slot and run epoch: a token that no
 * longer names the run its slot holds (finalized, superseded, or from another
 * ChipWorker) is refused.
 *
 * <p>The phase calls are made here: each begins a transition in the chip's slot table,
 * calls the library holding no lock but the callable lock's read side (prepare, the
 * blocking run), and ends the transition with the result. A failed launch's outcome is
 * decided from its code (BUSY or POISONED: still PREPARED; anything else: ENDED),
 * without another native call; finalize is one native call, which waits for a running
 * run itself.
 *
 * <p>A run whose config names a capture directory
 * ({@link CallConfig.Builder#captureFailuresTo}) is captured as a Worker captures it
 * (docs/replay.md): its inputs are copied when it is prepared, or when a blocking
 * {@code run} begins (the caller may reuse its arrays once the run is done), and if it
 * fails — at prepare, launch, poll or finalize; a {@link ChipBusyException} or
 * {@link OverlapNotNowException} is no failure — the capture is written, once, as {@code run-<runId>-<dispatchId>.ptocap} in that
 * directory (with {@code -<runEpoch>} before the suffix when that file exists), before the
 * failure is thrown. A capture that cannot be taken or written is logged (WARN) and never
 * changes the run's outcome or exception; runs that {@link #close()} finalizes are not
 * captured.
 *
 * <p>At open, per pipeline slot, the ChipWorker allocates one run storage and the
 * slot's args block, CallConfig block and descriptor, so a run allocates nothing
 * off-heap except the staging of host arrays (grown per slot, reused).
 */
public final class ChipWorker implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(ChipWorker.class);
    private static final int POLL_NOT_READY = NativeConstants.SIMPLER_NATIVE_RUN_POLL_NOT_READY;
    /** The ABI's spelling of "ended". */
    private static final int POLL_ENDED = NativeConstants.SIMPLER_NATIVE_RUN_POLL_COMPLETE;

    private final ChipLifecycle lifecycle;
    private final ChipDevice device;
    private final SlotTable table;
    private final DeviceMemory memory;
    private final CallableRegistry callables;
    private final RunBinding[] bindings;
    private final String noOverlap;
    /** The config the last run passed validation with; racy on purpose: a stale read only validates again. */
    private CallConfig validatedConfig;
    private final LeakNet.Handle leakNet;
    /** CallConfig.captureFailuresTo: the captures of the runs whose config asks. */
    private final ChipFailureCapture captures;

    /**
     * Opens device {@code deviceId} with the device images packaged in the jar
     * ({@code linux-x86-64/libptorun_aicpu_<arch>.so}, {@code libptorun_aicore_<arch>.so}).
     *
     * @throws LibraryLoadException when an image is not on the classpath
     * @throws PtoRunException when the library cannot create or initialize the device
     */
    public static ChipWorker open(HostRuntime runtime, int deviceId) {
        return open(runtime, deviceId, ChipIsolation.configuredDefault());
    }

    /**
     * Opens device {@code deviceId} with the packaged device images, in the JVM or in a
     * chip host process of its own (docs/isolation.md).
     *
     * @throws LibraryLoadException when an image is not on the classpath, or the chip host
     *         cannot start
     * @throws PtoRunException when the library cannot create or initialize the device
     */
    public static ChipWorker open(HostRuntime runtime, int deviceId, ChipIsolation isolation) {
        Objects.requireNonNull(runtime, "runtime");
        String arch = runtime.variant().arch().name().toLowerCase(Locale.ROOT);
        return open(runtime, deviceId, readImage("libptorun_aicpu_" + arch + ".so"),
                readImage("libptorun_aicore_" + arch + ".so"), isolation);
    }

    /**
     * Opens device {@code deviceId} with caller-supplied device images (the AICPU
     * executor image and the AICore kernel image); the library copies them.
     */
    public static ChipWorker open(HostRuntime runtime, int deviceId, byte[] aicpuImage, byte[] aicoreImage) {
        return open(runtime, deviceId, aicpuImage, aicoreImage, ChipIsolation.configuredDefault());
    }

    /** Opens device {@code deviceId} with caller-supplied device images, in the isolation asked for. */
    public static ChipWorker open(HostRuntime runtime, int deviceId, byte[] aicpuImage, byte[] aicoreImage,
                                  ChipIsolation isolation) {
        Objects.requireNonNull(runtime, "runtime");
        Objects.requireNonNull(isolation, "isolation");
        if (isolation == ChipIsolation.IN_PROCESS) {
            return new ChipWorker(runtime.api(), runtime.variant(), runtime.contract(), runtime.runStorageSize(),
                    runtime.runStorageAlignment(), deviceId, aicpuImage, aicoreImage);
        }
        ChipHost host = runtime.startChipHost();
        try {
            return new ChipWorker(host.api(), runtime.variant(), runtime.contract(), runtime.runStorageSize(),
                    runtime.runStorageAlignment(), deviceId, aicpuImage, aicoreImage, host);
        } catch (RuntimeException | Error e) {
            host.close();
            throw e;
        }
    }

    /** Opens a device through any {@link NativeApi} (tests drive the phase table with a fake). */
    ChipWorker(NativeApi api, Variant variant, PipelineContract contract, long storageSize, long storageAlignment,
               int deviceId, byte[] aicpuImage, byte[] aicoreImage) {
        this(api, variant, contract, storageSize, storageAlignment, deviceId, aicpuImage, aicoreImage, null);
    }

    private ChipWorker(NativeApi api, Variant variant, PipelineContract contract, long storageSize,
                       long storageAlignment, int deviceId, byte[] aicpuImage, byte[] aicoreImage, ChipHost host) {
        ChipLifecycle opened = new ChipLifecycle(api, variant, contract, storageSize, storageAlignment, deviceId,
                aicpuImage, aicoreImage, host);
        this.lifecycle = opened;
        this.device = opened.device;
        this.table = opened.table;
        this.memory = opened.memory;
        this.callables = opened.callables;
        this.bindings = opened.bindings;
        this.noOverlap = opened.overlap ? null
                : device.variant() + " cannot prepare while a run executes";
        this.captures = new ChipFailureCapture(device.variant(), callables, bindings.length);
        this.leakNet = LeakNet.register(this, "ChipWorker of " + device.describe(), opened::close);
    }

    private static String codeSource() {
        java.security.CodeSource source = ChipWorker.class.getProtectionDomain().getCodeSource();
        return source == null || source.getLocation() == null ? "an unknown location" : source.getLocation().toString();
    }

    /** The jar's device images, read once: every open passes the same bytes (the library copies them). */
    private static final ConcurrentHashMap<String, byte[]> IMAGES = new ConcurrentHashMap<>();

    static byte[] readImage(String fileName) {
        return IMAGES.computeIfAbsent(fileName, ChipWorker::readImageResource);
    }

    private static byte[] readImageResource(String fileName) {
        String resource = LibraryLoader.resourcePath(fileName);
        try (InputStream in = ChipWorker.class.getClassLoader().getResourceAsStream(resource)) {
            if (in == null) {
                throw new LibraryLoadException("device image " + fileName + " not found: looked for the"
                        + " resource " + resource + " on the class path of " + ChipWorker.class.getName()
                        + " (loaded from " + codeSource() + "), where the ptorun jar carries it next to the"
                        + " host-runtime libraries; use a complete ptorun jar or pass the images to"
                        + " ChipWorker.open(runtime, deviceId, aicpuImage, aicoreImage)");
            }
            return in.readAllBytes();
        } catch (IOException e) {
            throw new LibraryLoadException("cannot read the device image " + resource + " from "
                    + ChipWorker.class.getClassLoader().getResource(resource) + ": " + e, e);
        }
    }

    // ---- identity --------------------------------------------------------------------

    /** Where this chip's library runs. */
    public ChipIsolation isolation() {
        return device.host == null ? ChipIsolation.IN_PROCESS : ChipIsolation.PROCESS;
    }

    /** The process id of this chip's chip host ({@link ChipIsolation#PROCESS}); empty in process. */
    public java.util.OptionalLong processId() {
        return device.host == null ? java.util.OptionalLong.empty() : java.util.OptionalLong.of(device.host.pid());
    }

    /**
     * Why this chip's chip host is gone ({@link ChipIsolation#PROCESS}), e.g. {@code chip host
     * pid 4711 was killed by signal 11 (Segmentation fault)}; empty while it runs, and in
     * process.
     */
    public java.util.Optional<String> processDeath() {
        if (device.host == null || device.host.alive()) {
            return java.util.Optional.empty();
        }
        return java.util.Optional.of(device.host.death());
    }

    public Variant variant() {
        return device.variant();
    }

    public int deviceId() {
        return device.deviceId();
    }

    public boolean isClosed() {
        return !table.isOpen();
    }

    /**
     * False once closed, and once a call failed with a code that poisoned the chip: on an
     * onboard library every {@link DeviceErrorException} and {@link RunTimeoutException}
     * (a failed copy or a refused launch as much as a stream error, a run timeout or a lost
     * device), on any library a {@link ChipPoisonedException}. It turns false as that
     * exception is thrown, before any further call; the library then refuses prepare and
     * launch with {@link ChipPoisonedException}. Decided by the code and the platform alone
     * (docs/reliability.md, section 4); on sim nothing poisons. A poisoned chip never becomes
     * healthy again: close it and open a new one.
     */
    public boolean isHealthy() {
        return !device.isPoisoned() && table.isOpen();
    }

    // ---- device memory ------------------------------------------------------------------

    /**
     * Allocates device memory.
     *
     * @throws DeviceOutOfMemoryException when the device cannot hold it
     */
    public DeviceBuffer malloc(long bytes) {
        return memory.malloc(this, bytes);
    }

    /**
     * Frees a buffer of this chip: {@link DeviceBuffer#close()} after checking that it is
     * this chip's and the chip is open (closing a buffer itself is allowed at any time).
     *
     * @throws IllegalArgumentException when the buffer belongs to another ChipWorker
     * @throws IllegalStateException after close
     */
    public void free(DeviceBuffer buffer) {
        memory.free(buffer);
    }

    /** Copies {@code src}'s remaining bytes to the start of {@code dst} (the position is not moved). */
    public void copyTo(DeviceBuffer dst, ByteBuffer src) {
        copyTo(dst, 0, src);
    }

    /**
     * Copies {@code src}'s remaining bytes to {@code dst} at {@code dstOffset}; a direct
     * buffer is read in place, a heap buffer through a temporary off-heap copy.
     */
    public void copyTo(DeviceBuffer dst, long dstOffset, ByteBuffer src) {
        memory.copyTo(dst, dstOffset, src);
    }

    public void copyTo(DeviceBuffer dst, float[] src) {
        memory.copyArrayTo(dst, 0, src, 4L * src.length);
    }

    public void copyTo(DeviceBuffer dst, int[] src) {
        memory.copyArrayTo(dst, 0, src, 4L * src.length);
    }

    public void copyTo(DeviceBuffer dst, long[] src) {
        memory.copyArrayTo(dst, 0, src, 8L * src.length);
    }

    public void copyTo(DeviceBuffer dst, byte[] src) {
        memory.copyArrayTo(dst, 0, src, src.length);
    }

    /** Fills {@code dst}'s remaining bytes from the start of {@code src} (the position is not moved). */
    public void copyFrom(DeviceBuffer src, ByteBuffer dst) {
        copyFrom(src, 0, dst);
    }

    /** Fills {@code dst}'s remaining bytes from {@code src} at {@code srcOffset}. */
    public void copyFrom(DeviceBuffer src, long srcOffset, ByteBuffer dst) {
        memory.copyFrom(src, srcOffset, dst);
    }

    public void copyFrom(DeviceBuffer src, float[] dst) {
        memory.copyArrayFrom(src, 0, dst, 4L * dst.length);
    }

    public void copyFrom(DeviceBuffer src, int[] dst) {
        memory.copyArrayFrom(src, 0, dst, 4L * dst.length);
    }

    public void copyFrom(DeviceBuffer src, long[] dst) {
        memory.copyArrayFrom(src, 0, dst, 8L * dst.length);
    }

    public void copyFrom(DeviceBuffer src, byte[] dst) {
        memory.copyArrayFrom(src, 0, dst, dst.length);
    }

    /**
     * Bytes of device memory committed now (buffers, arenas, retained buffers, callables).
     * Not back to a baseline after a finalize: the arenas and staging buffers runs are
     * placed in stay at the high-water of the runs of their bank or slot, for the next run
     * (docs/java.md). A run's own figure is {@link RunReport#peakDeviceMemory()}.
     */
    public long committedDeviceMemory() {
        return memory.committed();
    }

    // ---- callables ------------------------------------------------------------------------

    /**
     * Registers a callable under {@code id} (0..63); its signature decides which staged
     * arrays are copied back after a run. Registrations on one chip serialize, and one
     * that comes while a prepare (or a blocking {@code run}) of this chip is inside the
     * library waits for that call to return, so a run always stages and copies back by
     * the signature of the callable the library prepared.
     *
     * @throws IllegalArgumentException when {@code id} is outside [0, 64)
     * @throws ChipBusyException while any native run is outstanding
     * @throws BadCallableException when the library refuses the callable
     */
    public void registerCallable(int id, ChipCallable callable) {
        callables.register(id, callable);
    }

    /**
     * Unregisters a callable (nothing happens for an unknown id).
     *
     * @throws ChipBusyException while any native run is outstanding
     */
    public void unregisterCallable(int id) {
        callables.unregister(id);
    }

    // ---- native runs ----------------------------------------------------------------------

    /**
     * Prepares a run of callable {@code callableId} in the lease's slot: checks the
     * lease's shape and the config, mints a run epoch, admits the run (the slot is
     * empty, any other occupied slot is an admissible predecessor, the lease generation
     * is not stale), writes its arguments off-heap and builds it in the slot's storage.
     * Nothing is launched.
     *
     * @param acceptance written at the launch marker; null for none
     * @return the token every later phase call takes
     * @throws IllegalArgumentException "lease is outside the runtime PipelineContract",
     *         or an invalid config or argument, e.g. a tensor smaller than the callable's program
     *         needs ({@link org.ptorun.callable.TensorExtents#check}) — refused before any native
     *         work, on every runtime alike
     * @throws ChipBusyException "slot already owns an unfinished native run", or
     *         "requires an active predecessor before staging a successor"
     * @throws LeaseRejectedException "lease generation is stale"
     * @throws OverlapNotNowException "not now": the run does not fit the working memory the
     *         executing run the message names uses (trb: another ring sizing); nothing was
     *         taken, prepare it again once that run is finalized
     * @throws PtoRunException when the library refuses the run (the slot is empty again)
     */
    public NativeRun prepare(int callableId, TaskArgs args, CallConfig config, PipelineSlotLease lease, long runId,
                             long dispatchId, AcceptanceWord acceptance) {
        RunCapture capture = captures.take(callableId, args, config); // null unless the config asks
        NativeRun run = null;
        try {
            try {
                checkRunArguments(callableId, args, config, acceptance);
                checkLeaseShape(lease);
            } catch (RuntimeException e) {
                throw refused(args, e);
            }
            run = new NativeRun(lease.slotId(), lease.generation(), RunEpochs.next(), runId, dispatchId);
            admitAndCall(run, callableId, args, config, acceptance, true, false);
        } catch (RuntimeException e) {
            if (!retryable(e)) {
                captures.write(capture, runId, dispatchId, run == null ? 0 : run.runEpoch(), e);
            }
            throw e;
        }
        captures.hold(run, capture);
        if (LOG.isDebugEnabled()) {
            LOG.debug("prepared {} on {}", run.identity(), device.describe());
        }
        return run;
    }

    /**
     * Launches a prepared run; returns once its work crossed the launch marker. On
     * failure the token still must be finalized; a launch refused before it started (e.g.
     * {@link ChipBusyException} while a predecessor holds the chip) leaves the run
     * prepared and the same token may launch again.
     *
     * @throws StaleRunException "stale or used in the wrong phase"
     */
    public void launch(NativeRun run) {
        table.beginLaunch(run);
        try {
            launchBegun(run);
        } catch (RuntimeException e) {
            if (!retryable(e)) {
                captures.failed(run, e);
            }
            throw e;
        }
    }

    /** The launch of a run whose launch began in this thread. */
    private void launchBegun(NativeRun run) {
        RunBinding b = bindings[run.slot()];
        RunEvents.Launch event = RunEvents.beginLaunch();
        int rc;
        try {
            rc = device.api.launchRun(device.ctx, b.storage());
            b.launchedAt = RunEvents.recording() ? System.nanoTime() : 0; // only a Completion event reads it
            RunEvents.commit(event, device, run, rc);
        } catch (RuntimeException | Error e) {
            table.launchAborted(run.slot());
            throw e;
        }
        if (rc == 0) {
            table.launched(run.slot());
            if (LOG.isDebugEnabled()) {
                LOG.debug("launched {}", run.identity());
            }
            return;
        }
        String message = device.lastError();
        boolean ended = table.launchFailed(run.slot(), rc, message);
        if (ended) {
            ended(device, b, run, rc);
        }
        if (LOG.isDebugEnabled()) {
            LOG.debug("launch of {} failed with {}; the run {}", run.identity(), PtoError.nameOf(rc),
                    ended ? "ended" : "stays PREPARED");
        }
        throw device.failure("launch", rc, message, run);
    }

    /**
     * True once the run's execution and drain ended. Never blocks.
     *
     * @throws StaleRunException "stale or used in the wrong phase" (e.g. before launch)
     */
    public boolean poll(NativeRun run) {
        if (!table.beginObserve(run, "poll")) {
            return true;
        }
        RunBinding b = bindings[run.slot()];
        int rc = PtoError.FAILED.code();
        String message = null;
        try {
            rc = device.api.pollRun(device.ctx, b.storage());
            if (rc < 0) {
                message = device.lastError();
            }
        } finally {
            table.polled(run.slot(), rc == POLL_ENDED);
        }
        if (rc == POLL_ENDED) {
            ended(device, b, run, 0);
            return true;
        }
        if (rc == POLL_NOT_READY) {
            return false;
        }
        PtoRunException failure = device.failure("poll", rc, message, run);
        captures.failed(run, failure);
        throw failure;
    }

    /**
     * Waits until the run's execution and drain ended. Does not throw on a run failure:
     * {@link #finalizeRun(NativeRun)} reports it.
     *
     * @throws StaleRunException "stale or used in the wrong phase" (e.g. before launch)
     */
    public void await(NativeRun run) {
        if (!table.beginObserve(run, "await")) {
            return;
        }
        RunBinding b = bindings[run.slot()];
        int rc = PtoError.FAILED.code();
        String message = null;
        Runnable watched = device.watch(b, "simpler_wait_run of " + run.identity());
        try {
            rc = device.api.waitRun(device.ctx, b.storage());
            if (rc != 0) {
                message = device.lastError();
            }
        } finally {
            watched.run();
            table.awaited(run.slot(), rc, message);
        }
        ended(device, b, run, rc);
    }

    /**
     * Drains and releases the run: waits if it is still running, copies OUT/INOUT
     * results back when it succeeded, releases everything; the slot is empty afterwards
     * whatever happens. A run never launched is abandoned and nothing is copied back.
     *
     * @return what the library reports of the run: when it ended on the device, the
     *         device memory it took at its peak, the diagnostic files it wrote
     * @throws StaleRunException "stale or already finalized"
     * @throws PtoRunException (a subclass where one fits) when the run failed
     */
    public RunReport finalizeRun(NativeRun run) {
        SlotTable.Finalizing f = table.beginFinalize(run);
        RunCapture capture = captures.release(run); // this thread finalizes the run: nothing else reads it
        try {
            return finalizeBegun(lifecycle, f);
        } catch (RuntimeException e) {
            captures.write(capture, run.runId(), run.dispatchId(), run.runEpoch(), e);
            throw e;
        }
    }

    /**
     * Runs a callable to completion in slot 0, unleased (no generation filter), copying
     * results back; always finalizes. Its arguments are checked as {@link #prepare}'s: a
     * tensor smaller than the program needs is the same {@link IllegalArgumentException},
     * before any native work. The run gets a run epoch like a prepared run, so its
     * diagnostic files never collide with another run's.
     *
     * @return what the library reports of the run, its identity included
     */
    public RunReport run(int callableId, TaskArgs args, CallConfig config) {
        return runBlocking(callableId, args, config, null, 0, 0, null);
    }

    /**
     * Runs a callable to completion in the lease's slot (admitted like a prepare); always finalizes.
     *
     * @return what the library reports of the run, its identity included
     */
    public RunReport run(int callableId, TaskArgs args, CallConfig config, PipelineSlotLease lease, long runId,
                         long dispatchId, AcceptanceWord acceptance) {
        return runBlocking(callableId, args, config, Objects.requireNonNull(lease, "lease"), runId, dispatchId,
                acceptance);
    }

    // ---- the phases' shared steps -----------------------------------------------------------------

    /**
     * Drains and releases the run whose finalize began (its slot is FINALIZING, in this
     * thread's call); the slot is EMPTY afterwards whatever happens. One native call:
     * simpler_finalize_run waits for a running run itself. Static: close (and the leak
     * net, which must not reach the ChipWorker) finalizes outstanding runs through it.
     *
     * @return the run's report, read from its storage before the slot is emptied
     */
    static RunReport finalizeBegun(ChipLifecycle chip, SlotTable.Finalizing f) {
        ChipDevice device = chip.device;
        NativeRun run = f.run();
        RunBinding b = chip.bindings[run.slot()];
        int rc = PtoError.FAILED.code();
        String message = null;
        RunReport report = null;
        RunEvents.Finalize event = RunEvents.beginFinalize();
        Runnable watched = device.watch(b, "simpler_finalize_run of " + run.identity());
        try {
            rc = device.api.finalizeRun(device.ctx, b.storage());
            if (rc != 0) {
                message = device.lastError();
            } else if (f.waitResult() == 0) {
                report = b.report(run); // before the slot is emptied: its next prepare empties the report
                if (f.previous() != SlotTable.Phase.PREPARED) {
                    // only a launched run that succeeded produced anything to copy back
                    b.copyBack();
                }
            }
        } finally {
            watched.run();
            if (f.previous() == SlotTable.Phase.RUNNING) {
                ended(device, b, run, rc);
            }
            b.release();
            chip.table.emptied(run.slot());
            RunEvents.commit(event, device, run, rc != 0 ? rc : f.waitResult());
        }
        if (LOG.isDebugEnabled()) {
            LOG.debug("finalized {}: {}", run.identity(), PtoError.nameOf(rc != 0 ? rc : f.waitResult()));
        }
        if (rc != 0) {
            throw device.failure("finalize", rc, message, run);
        }
        if (f.waitResult() != 0) {
            throw device.failure("run", f.waitResult(), f.waitMessage(), run);
        }
        return report;
    }

    /**
     * The blocking composition on a lease's slot, or slot 0 unleased (generation 0, no
     * generation filter). Either way the run gets its own run epoch: the library names
     * its diagnostic files by run id and epoch. A registration on this chip waits until
     * it returned.
     */
    private RunReport runBlocking(int callableId, TaskArgs args, CallConfig config, PipelineSlotLease lease,
                                  long runId, long dispatchId, AcceptanceWord acceptance) {
        RunCapture capture = captures.take(callableId, args, config); // null unless the config asks
        NativeRun run = null;
        RunReport report;
        try {
            try {
                checkRunArguments(callableId, args, config, acceptance);
                if (lease != null) {
                    checkLeaseShape(lease);
                }
            } catch (RuntimeException e) {
                throw refused(args, e);
            }
            run = lease == null
                    ? new NativeRun(0, 0, RunEpochs.next(), runId, dispatchId)
                    : new NativeRun(lease.slotId(), lease.generation(), RunEpochs.next(), runId, dispatchId);
            report = admitAndCall(run, callableId, args, config, acceptance, lease != null, true);
        } catch (RuntimeException e) {
            if (!retryable(e)) {
                captures.write(capture, runId, dispatchId, run == null ? 0 : run.runEpoch(), e);
            }
            throw e;
        }
        if (LOG.isDebugEnabled()) {
            LOG.debug("ran {} on {}", run.identity(), device.describe());
        }
        return report;
    }

    /**
     * What a prepare and a blocking run share: under the callable lock's read side, checks
     * the arguments against the callable's signature, admits the run into its slot, binds
     * it and makes the native call — simpler_prepare_run, or simpler_run when
     * {@code blocking} (whose results are then copied back) — and ends the slot's call:
     * PREPARED after a successful prepare, else released and EMPTY.
     *
     * @return a successful blocking run's report; null for a prepare
     * @throws PtoRunException (a subclass where one fits) when the library refused
     */
    private RunReport admitAndCall(NativeRun run, int callableId, TaskArgs args, CallConfig config,
                                   AcceptanceWord acceptance, boolean filtered, boolean blocking) {
        RunBinding b = bindings[run.slot()];
        int rc = PtoError.FAILED.code();
        String message = null;
        RunReport report = null;
        long use = callables.beginUse();
        try {
            Direction[] directions = callables.directionsOf(callableId);
            RunEvents.Prepare event;
            try {
                RunBinding.checkArgs(args, directions, memory);
                callables.checkTensorSizes(callableId, args);
                event = blocking ? null : RunEvents.beginPrepare();
                table.admit(run, noOverlap(config), filtered, timeoutOf(config));
            } catch (RuntimeException e) {
                throw refused(args, e);
            }
            try {
                b.bind(run, args, config, acceptance, directions);
                Runnable watched = device.watch(b, (blocking ? "simpler_run of " : "simpler_prepare_run of ")
                        + run.identity());
                try {
                    rc = blocking
                            ? device.api.run(device.ctx, b.storage(), callableId, b.args(), b.config(),
                                    b.descriptor())
                            : device.api.prepareRun(device.ctx, b.storage(), callableId, b.args(), b.config(),
                                    b.descriptor());
                } finally {
                    watched.run();
                }
                if (rc != 0) {
                    message = device.lastError(); // before release: freeing a pinned buffer is a native call
                } else if (blocking) {
                    report = b.report(run); // before the slot is emptied
                    b.copyBack();
                }
            } finally {
                Reference.reachabilityFence(args);
                Reference.reachabilityFence(acceptance);
                if (event != null) {
                    event.callableId = callableId;
                    event.commitFor(device, run, rc);
                }
                if (rc == 0 && !blocking) {
                    table.prepared(run.slot());
                } else {
                    b.release();
                    table.emptied(run.slot());
                }
            }
        } finally {
            callables.endUse(use);
        }
        if (rc != 0) {
            throw device.failure((blocking ? "run of callable " : "prepare of callable ") + callableId, rc, message,
                    run);
        }
        return report;
    }

    /**
     * A run refused here, before the library saw it: the domains its scalars name break
     * (its peers would otherwise wait in their collective for the group timeout). A busy
     * chip is no failure: the caller retries.
     */
    private RuntimeException refused(TaskArgs args, RuntimeException e) {
        if (!retryable(e)) {
            device.breakDomainsNamedBy(args);
        }
        return e;
    }

    /**
     * A "not now" — the chip busy, or (trb) a successor that does not fit beside the executing
     * run — is no failure: nothing was taken and the caller tries again, so it is not captured
     * and breaks nothing.
     */
    private static boolean retryable(RuntimeException e) {
        return e instanceof ChipBusyException || e instanceof OverlapNotNowException;
    }

    /** The run was seen to end: its Completion event. */
    private static void ended(ChipDevice device, RunBinding b, NativeRun run, int code) {
        RunEvents.Completion event = RunEvents.completion();
        if (event != null) {
            event.sinceLaunch = b.launchedAt == 0 ? -1 : System.nanoTime() - b.launchedAt;
            event.commitFor(device, run, code);
        }
    }

    // ---- argument checks -----------------------------------------------------------------------

    private void checkLeaseShape(PipelineSlotLease lease) {
        Objects.requireNonNull(lease, "lease");
        int depth = bindings.length;
        if (lease.reserved() != 0 || lease.generation() == 0 || lease.slotId() < 0 || lease.slotId() >= depth) {
            throw new IllegalArgumentException(SlotTable.OUTSIDE_CONTRACT + ": " + lease + " (pipeline depth " + depth
                    + "; reserved must be 0 and generation non-zero)");
        }
    }

    /** Why a run may not overlap another, or null: only where the library supports it and no diagnostic is on. */
    private String noOverlap(CallConfig config) {
        if (noOverlap != null) {
            return noOverlap;
        }
        return config.hasDiagnostics() ? "this run has a diagnostic on" : null;
    }

    private static int timeoutOf(CallConfig config) {
        return config.timeoutMs() == 0 ? CallConfig.DEFAULT_TIMEOUT_MS : config.timeoutMs();
    }

    /** What prepare and run refuse before any native call or lock. */
    private void checkRunArguments(int callableId, TaskArgs args, CallConfig config, AcceptanceWord acceptance) {
        Objects.requireNonNull(args, "args");
        Objects.requireNonNull(config, "config");
        CallableRegistry.checkCallableId(callableId);
        if (config != validatedConfig) { // a CallConfig is immutable: once valid for this chip, always
            config.validateFor(device.variant().arch());
            validatedConfig = config;
        }
        if (acceptance != null && acceptance.isCaptured()) {
            throw new IllegalArgumentException("the acceptance word is captured by an unfinalized run");
        }
    }

    // ---- counters and queries ----------------------------------------------------------------

    // Diagnostics for this package's tests (raw addresses and native counters): not API.

    /** trb device-side orchestration library loads (tests). */
    long aicpuDlopenCount() {
        return memory.aicpuDlopenCount();
    }

    /** hbg host-side orchestration library loads (tests). */
    long hostDlopenCount() {
        return memory.hostDlopenCount();
    }

    /** Run stream sets created (a2a3 onboard; 0 elsewhere; tests). */
    long runStreamSetCreateCount() {
        return memory.runStreamSetCreateCount();
    }

    /** The GM heap base of an arena bank (0 or 1); 0 if never committed (tests). */
    long arenaBankGmHeapBase(int bank) {
        return memory.arenaBankGmHeapBase(bank);
    }

    /** The retained staging buffer of a slot (trb); 0 if none (tests). */
    long retainedTempAddr(int slot) {
        return memory.retainedTempAddr(slot);
    }

    /** Slots of the library's pipeline contract: how many runs may be in flight. */
    public int pipelineDepth() {
        return table.depth();
    }

    /**
     * True when a chip overlaps runs: a run may be prepared in another slot while a run
     * executes (depth > 1 and the library supports it; {@link HostRuntime#supportsOverlap()}).
     * On trb only a run whose ring sizing fits the executing run's image; another is
     * refused with {@link OverlapNotNowException}.
     */
    public boolean supportsOverlap() {
        return noOverlap == null;
    }

    /** @deprecated the capability's one word is overlap: use {@link #supportsOverlap()}. */
    @Deprecated(forRemoval = true)
    public boolean supportsConcurrentPrepare() {
        return supportsOverlap();
    }

    /** The native device context (tests and benchmark probes that call the library directly). */
    DeviceMemory memory() {
        return memory;
    }

    ChipDevice device() {
        return device;
    }

    SlotTable table() {
        return table;
    }

    long deviceContext() {
        return device.ctx;
    }

    /** The address of each slot's run storage, one distinct storage per slot (tests). */
    List<Long> runtimeBufferAddresses() {
        List<Long> addresses = new java.util.ArrayList<>(lifecycle.bindings.length);
        for (RunBinding b : lifecycle.bindings) {
            addresses.add(b.storage());
        }
        return List.copyOf(addresses);
    }

    /** The tensor directions Java holds for callable {@code id}, or null (tests). */
    java.util.List<org.ptorun.callable.Direction> signatureOf(int id) {
        return callables.signatureOf(id);
    }

    /** The phase of a slot (tests, diagnostics). */
    SlotTable.Phase phaseOf(int slot) {
        return table.phaseOf(slot);
    }

    /** Tests: {@code hook} runs when a close starts waiting for calls in flight. */
    void onCloseWaits(Runnable hook) {
        table.onCloseWaits(hook);
    }

    /**
     * Refuses new calls, waits for the calls other threads have inside the library to
     * return (each bounded by its run's timeout plus a grace of 5 s), finalizes every
     * outstanding run (errors logged), releases the device and frees the run storages.
     * Idempotent and thread-safe. A call that outlives its bound (a kernel that never
     * returns, on sim) is never freed under: the device context is leaked with an ERROR
     * naming the run instead.
     */
    @Override
    public void close() {
        lifecycle.close();
        leakNet.close();
        captures.clear(); // runs finalized by close are not captured
    }

    @Override
    public String toString() {
        return "ChipWorker[" + device.describe() + (!table.isOpen() ? ", closed" : "") + "]";
    }
}

package org.ptorun;

import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import org.ptorun.internal.Layouts;
import org.ptorun.internal.OffHeapBlock;

/**
 * One rank of a {@link CommGroup}: the comm handle of one chip. Its windows are
 * {@link DeviceBuffer}s of its chip ({@link #window()}, {@link #peerWindow(int)}), so
 * copies and runs use them like device memory, and {@link #deviceContext()} is what
 * collective kernels take as their comm scalar (docs/communication.md).
 *
 * <p>Collective calls ({@link #allocWindows}, {@link #barrier}, {@link #derive},
 * {@link #allocDomainWindows}) return only when every member made the same call: in
 * one process, make them through {@link CommGroup} (which calls every local rank at
 * once) or from one thread per rank. Calls on one rank serialize; thread-safe.
 */
public final class CommRank {

    private static final int CTX_BYTES = Layouts.PtoCommDeviceContext.SIZE;
    private static final int CTX_WINDOWS = Layouts.PtoCommDeviceContext.WINDOWS;

    private final ChipWorker chip;
    private final int rank;
    private final int size;
    /** How refusals name the group: "CommGroup[3 ranks, root info /path]". */
    private final String group;
    /** The runs that use any window buffer of this rank; closed when the rank leaves. */
    final BufferUses uses = new BufferUses();
    private long handle;
    /** Set once the rank left because its group closed (not because its chip closed first). */
    private boolean groupClosed;
    private long windowBytes;
    private long deviceContext;
    private long[] windows = new long[0];

    CommRank(ChipWorker chip, int rank, int size, long handle, String group) {
        this.chip = chip;
        this.rank = rank;
        this.size = size;
        this.group = group;
        this.handle = handle;
        chip.device().commJoined(handle);
    }

    /** This rank's index in the group. */
    public int rank() {
        return rank;
    }

    /** The group's number of ranks. */
    public int size() {
        return size;
    }

    public ChipWorker chip() {
        return chip;
    }

    /**
     * Collective: every rank gets a window of {@code bytes} that every peer addresses.
     *
     * @throws CommException when a rank cannot allocate (all fail), times out or is gone
     */
    public synchronized void allocWindows(long bytes) {
        if (bytes <= 0) {
            throw new IllegalArgumentException("window size " + bytes + " must be > 0");
        }
        try (OffHeapBlock out = OffHeapBlock.allocate(8, 8)) {
            call("comm_alloc_windows", api -> api.commAllocWindows(open(), bytes, out.address()));
            deviceContext = out.buffer().getLong(0);
        }
        chip.device().commDomainOpened(handle, deviceContext);
        windowBytes = bytes;
        windows = readWindows(deviceContext, size);
    }

    /** The device address of the group's {@code PtoCommDeviceContext}: a collective kernel's comm scalar. */
    public synchronized long deviceContext() {
        requireWindows();
        return deviceContext;
    }

    /** Bytes of every rank's window. */
    public synchronized long windowSize() {
        requireWindows();
        return windowBytes;
    }

    /** This rank's window. */
    public DeviceBuffer window() {
        return peerWindow(rank);
    }

    /** Rank {@code peer}'s window as this rank's chip addresses it. */
    public synchronized DeviceBuffer peerWindow(int peer) {
        requireWindows();
        return DeviceBuffer.window(chip, uses, addressable(peer), windowBytes);
    }

    /**
     * A view of rank {@code peer}'s window for a task: {@code shape} elements of
     * {@code dtype}, row-major, from byte {@code offset} — a tensor argument like any other,
     * whose dependencies are tracked on its bytes.
     */
    public Tensor peerTensor(int peer, long offset, DType dtype, int... shape) {
        long elements = 1;
        for (int d : shape) {
            elements = Math.multiplyExact(elements, d);
        }
        DeviceBuffer slice = peerSlice(peer, offset, Math.multiplyExact(elements, (long) dtype.byteSize()));
        return Tensor.of(slice, dtype, shape);
    }

    /** {@code bytes} of rank {@code peer}'s window from {@code offset}, as this rank's chip addresses it. */
    public synchronized DeviceBuffer peerSlice(int peer, long offset, long bytes) {
        requireWindows();
        long base = addressable(peer);
        if (offset < 0 || bytes <= 0 || offset > windowBytes - bytes) {
            throw new IllegalArgumentException("[" + offset + ", +" + bytes + ") is not inside the window of "
                    + windowBytes + " bytes");
        }
        return DeviceBuffer.window(chip, uses, base + offset, bytes);
    }

    /** {@code bytes} of this rank's window from {@code offset}. */
    public DeviceBuffer windowSlice(long offset, long bytes) {
        return peerSlice(rank, offset, bytes);
    }

    /**
     * Collective: waits for every rank.
     *
     * @throws CommException on a timeout (naming the rank that did not arrive) or a gone peer
     */
    public synchronized void barrier() {
        call("comm_barrier", api -> api.commBarrier(open()));
    }

    /**
     * Collective over {@code ranks}: a sub-domain over {@code [offset, offset + bytes)} of
     * the group's windows, with its own signals. Returns its device context.
     */
    public synchronized long derive(int[] ranks, long offset, long bytes) {
        int domainRank = domainRank(ranks);
        try (OffHeapBlock ids = rankIds(ranks); OffHeapBlock out = OffHeapBlock.allocate(8, 8)) {
            call("comm_derive_context", api -> api.commDeriveContext(open(), ids.address(), ranks.length, domainRank,
                    offset, bytes, out.address()));
            chip.device().commDomainOpened(handle, out.buffer().getLong(0));
            return out.buffer().getLong(0);
        }
    }

    /**
     * Collective over {@code ranks}: fresh windows of {@code bytes} for a sub-domain,
     * released by {@link #releaseDomainWindows}.
     */
    public synchronized CommDomain allocDomainWindows(long allocationId, int[] ranks, long bytes) {
        int domainRank = domainRank(ranks);
        try (OffHeapBlock ids = rankIds(ranks); OffHeapBlock out = OffHeapBlock.allocate(16, 8)) {
            call("comm_alloc_domain_windows", api -> api.commAllocDomainWindows(open(), allocationId, ids.address(),
                    ranks.length, domainRank, bytes, out.address(), out.address() + 8));
            long ctx = out.buffer().getLong(0);
            chip.device().commDomainOpened(handle, ctx);
            long[] domainWindows = readWindows(ctx, ranks.length);
            BufferUses domainUses = new BufferUses(uses);
            DeviceBuffer[] buffers = new DeviceBuffer[ranks.length];
            for (int i = 0; i < ranks.length; i++) {
                buffers[i] = domainWindows[i] == 0 ? null : DeviceBuffer.window(chip, domainUses, domainWindows[i], bytes);
            }
            return new CommDomain(allocationId, ranks.clone(), domainRank, ctx, bytes, Arrays.asList(buffers));
        }
    }

    /**
     * Releases this rank's view of a domain's windows (local). Refused, with nothing changed,
     * while a run uses one of them; afterwards every use of the domain's window buffers is
     * refused naming the released domain.
     *
     * @throws CommException ({@code PTO_ERR_BUSY}) naming the runs that use a window of the domain
     */
    public synchronized void releaseDomainWindows(CommDomain domain) {
        Objects.requireNonNull(domain, "domain");
        BufferUses domainUses = domain.window().uses();
        String what = "domain " + domain.allocationId() + " of " + group;
        List<Object> held = domainUses.closeUnlessUsed("belongs to " + what + ", whose windows are released");
        if (!held.isEmpty()) {
            throw new CommException("comm_release_domain_windows", rank, PtoError.BUSY.code(),
                    "its windows are used by " + BufferUses.describe(held) + "; finalize them before releasing "
                            + what);
        }
        try {
            call("comm_release_domain_windows", api -> api.commReleaseDomainWindows(open(), domain.allocationId(),
                    domain.ranks().length, domain.domainRank()));
        } catch (RuntimeException e) {
            domainUses.reopen();
            throw e;
        }
        chip.device().commDomainClosed(domain.deviceContext());
    }

    /**
     * Leaves the group because it closes (idempotent); refused (PTO_ERR_BUSY) while a run
     * is outstanding on the chip. Every later use of the rank or of its window buffers is
     * refused naming the closed group.
     */
    synchronized void destroy() {
        if (handle == 0) {
            return;
        }
        if (!chip.isClosed()) { // else the chip's close made the rank leave
            call("comm_destroy", api -> api.commDestroy(handle));
            chip.device().commLeft(handle);
        }
        handle = 0;
        groupClosed = true;
    }

    /**
     * The first step of the group's close: refuses the use of the rank's windows by any
     * further run or copy, unless runs use them now.
     *
     * @throws CommException (PTO_ERR_BUSY) naming the runs that use the windows; nothing changed
     */
    void closeWindows() {
        List<Object> held = uses.closeUnlessUsed("belongs to " + group + ", which is closed");
        if (!held.isEmpty()) {
            throw new CommException("comm_destroy", rank, PtoError.BUSY.code(), "its windows are used by "
                    + BufferUses.describe(held) + "; finalize them before closing " + group);
        }
    }

    @Override
    public String toString() {
        return "CommRank[" + rank + "/" + size + " on " + chip + "]";
    }

    // ---- internals ---------------------------------------------------------------------------

    private long open() {
        if (handle == 0) {
            throw new IllegalStateException(this + (groupClosed ? ": " + group + " is closed" : " left its group"));
        }
        return handle;
    }

    private void requireWindows() {
        open();
        if (deviceContext == 0) {
            throw new IllegalStateException(this + ": the group has no windows yet (allocWindows)");
        }
    }

    private int domainRank(int[] ranks) {
        Objects.requireNonNull(ranks, "ranks");
        for (int i = 0; i < ranks.length; i++) {
            if (ranks[i] == rank) {
                return i;
            }
        }
        throw new IllegalArgumentException("rank " + rank + " is not among " + Arrays.toString(ranks));
    }

    private static OffHeapBlock rankIds(int[] ranks) {
        OffHeapBlock ids = OffHeapBlock.allocate(4L * Math.max(1, ranks.length), 8);
        for (int i = 0; i < ranks.length; i++) {
            ids.buffer().putInt(4 * i, ranks[i]);
        }
        return ids;
    }

    /**
     * The windows of a descriptor in this chip's memory, as this chip addresses them; 0 for a
     * member on another host (the descriptor holds this host's mirror of it, which no user
     * may take for the peer's window).
     */
    private long[] readWindows(long ctx, int count) {
        long[] out = new long[count];
        try (OffHeapBlock desc = OffHeapBlock.allocate(CTX_BYTES, 8)) {
            read(ctx, desc, CTX_BYTES);
            boolean spans = desc.buffer().getLong(Layouts.PtoCommDeviceContext.SPAN) != 0;
            for (int i = 0; i < count; i++) {
                boolean remote = spans && desc.buffer().getLong(Layouts.PtoCommDeviceContext.SIGNALS + 8 * i) == 0;
                out[i] = remote ? 0 : desc.buffer().getLong(CTX_WINDOWS + 8 * i);
            }
        }
        return out;
    }

    private void read(long deviceAddress, OffHeapBlock into, int bytes) {
        ChipDevice device = chip.device();
        device.enter(chip.table());
        try {
            int rc = device.api.copyFromDevice(device.ctx, into.address(), deviceAddress, bytes);
            if (rc != 0) {
                throw new CommException("reading the comm descriptor", rank, rc, device.lastError());
            }
        } finally {
            device.exit();
        }
    }

    /** Rank {@code peer}'s window address, refused when the peer is on another host. */
    private long addressable(int peer) {
        Objects.checkIndex(peer, size);
        if (windows[peer] == 0) {
            throw new IllegalArgumentException("rank " + peer + " is on another host than rank " + rank
                    + ": its window is not addressable from here (peer views work within a host; "
                    + "collectives reach every host)");
        }
        return windows[peer];
    }

    interface Call {
        int apply(org.ptorun.internal.NativeApi api);
    }

    private void call(String operation, Call call) {
        ChipDevice device = chip.device();
        device.enter(chip.table());
        try {
            int rc = call.apply(device.api);
            if (rc != 0) {
                throw new CommException(operation, rank, rc, device.lastError());
            }
        } finally {
            device.exit();
        }
    }
}

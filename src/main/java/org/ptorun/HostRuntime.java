package org.ptorun;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import org.ptorun.internal.ChipHost;
import org.ptorun.internal.EmulatedDriverLibrary;
import org.ptorun.internal.FlushingNativeApi;
import org.ptorun.internal.Layouts;
import org.ptorun.internal.LibraryLoader;
import org.ptorun.internal.LoadedLibrary;
import org.ptorun.internal.NativeApi;
import org.ptorun.internal.NativeLog;
import org.ptorun.internal.NativeLogFlush;
import org.ptorun.internal.NativeMemory;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One loaded host-runtime library. {@link #load(Variant)} opens it once per variant per
 * JVM, resolves every contract symbol, proves it is the variant asked for, and admits its
 * pipeline contract; a library failing any of that is closed and refused.
 */
public final class HostRuntime {

    private static final Logger LOG = LoggerFactory.getLogger(HostRuntime.class);
    private static final Map<Variant, HostRuntime> LOADED = new ConcurrentHashMap<>();

    private final Variant variant;
    private final Path file;
    private final NativeApi api;
    private final PipelineContract contract;
    private final long runStorageSize;
    private final long runStorageAlignment;
    private volatile Boolean overlap;

    private HostRuntime(Variant variant, Path file, NativeApi api, PipelineContract contract) {
        this.variant = variant;
        this.file = file;
        this.api = api;
        this.contract = contract;
        this.runStorageSize = api.runtimeSize();
        this.runStorageAlignment = api.runtimeAlignment();
    }

    /**
     * The library of {@code variant}, loaded and admitted on first use.
     *
     * @throws LibraryLoadException when it cannot be found, loaded, or admitted
     */
    public static HostRuntime load(Variant variant) {
        Objects.requireNonNull(variant, "variant");
        return LOADED.computeIfAbsent(variant, HostRuntime::open);
    }

    private static HostRuntime open(Variant variant) {
        String fileName = variant.libraryFileName();
        LoadedLibrary library = LibraryLoader.load(variant.libraryName(), fileName);
        try {
            // calls flush the library's native log into org.ptorun.native, as NativeLogFlush decides
            NativeApi api = new FlushingNativeApi(library.api(),
                    new NativeLogFlush(new NativeLog(library.api(), variant.toString())));
            String reported = NativeMemory.cString(api.variant());
            if (!variant.toString().equals(reported)) {
                throw new LibraryLoadException(fileName + " (" + library.file() + ") reports variant '"
                        + reported + "', expected '" + variant + "'");
            }
            PipelineContract contract = readContract(api.pipelineContract(), fileName);
            HostRuntime runtime = new HostRuntime(variant, library.file(), api, contract);
            runtime.checkStorageShape();
            LOG.debug("loaded {} from {}: contract {}, run storage {} bytes aligned {}", variant,
                    library.file(), contract, runtime.runStorageSize, runtime.runStorageAlignment);
            return runtime;
        } catch (RuntimeException e) {
            library.close();
            throw e;
        }
    }

    private static PipelineContract readContract(long address, String fileName) {
        if (address == 0) {
            throw new LibraryLoadException(fileName + ": get_pipeline_contract() returned NULL");
        }
        ByteBuffer c = NativeMemory.view(address, Layouts.PipelineContract.SIZE);
        List<PipelineContract.RawResource> raw = new ArrayList<>(PipelineContract.MAX_RESOURCES);
        for (int i = 0; i < PipelineContract.MAX_RESOURCES; i++) {
            int at = Layouts.PipelineContract.RESOURCES + i * Layouts.PipelineResource.SIZE;
            raw.add(new PipelineContract.RawResource(
                    c.getInt(at + Layouts.PipelineResource.KIND),
                    c.getInt(at + Layouts.PipelineResource.RESOURCE_CLASS),
                    c.getLong(at + Layouts.PipelineResource.BYTES_PER_COPY)));
        }
        try {
            return PipelineContract.admit(
                    c.getInt(Layouts.PipelineContract.ABI_VERSION),
                    c.getInt(Layouts.PipelineContract.RESOURCE_COUNT),
                    c.getInt(Layouts.PipelineContract.PIPELINE_DEPTH),
                    raw);
        } catch (IllegalArgumentException e) {
            throw new LibraryLoadException(fileName + ": " + e.getMessage(), e);
        }
    }

    private void checkStorageShape() {
        if (runStorageSize < Layouts.MIN_RUN_STORAGE || runStorageAlignment < 8
                || Long.bitCount(runStorageAlignment) != 1) {
            throw new LibraryLoadException(variant.libraryFileName() + ": run storage of "
                    + runStorageSize + " bytes aligned " + runStorageAlignment + " violates the contract (size >= "
                    + Layouts.MIN_RUN_STORAGE + ": the tag and the run's report; alignment a power of two >= 8)");
        }
    }

    public Variant variant() {
        return variant;
    }

    /** The file the dynamic loader opened. */
    public Path libraryFile() {
        return file;
    }

    /** The admitted pipeline contract. */
    public PipelineContract contract() {
        return contract;
    }

    /** Bytes of one run storage ({@code get_runtime_size()}). */
    public long runStorageSize() {
        return runStorageSize;
    }

    /** Alignment of one run storage ({@code get_runtime_alignment()}). */
    public long runStorageAlignment() {
        return runStorageAlignment;
    }

    /**
     * True when a chip of this library prepares a run while another executes: the pipeline
     * contract has depth 2 and the runtime supports it ({@code
     * supports_concurrent_native_prepare_ctx}, asked once of a device context created for
     * the question and destroyed; no device is opened). {@link ChipWorker#supportsOverlap()}
     * says the same of an open chip. <em>Overlap</em> is the glossary's one word for this
     * capability (docs/architecture.md).
     *
     * @throws IllegalStateException when the library cannot create a device context
     */
    public boolean supportsOverlap() {
        Boolean known = overlap;
        if (known == null) {
            boolean answer = false;
            if (contract.pipelineDepth() > 1) {
                long ctx = api.createDeviceContext();
                if (ctx == 0) {
                    throw new IllegalStateException(variant + ": create_device_context failed: " + lastError());
                }
                try {
                    answer = api.supportsConcurrentNativePrepare(ctx) > 0;
                } finally {
                    api.destroyDeviceContext(ctx);
                }
            }
            known = answer;
            overlap = known;
        }
        return known;
    }

    /** @deprecated the capability's one word is overlap: use {@link #supportsOverlap()}. */
    @Deprecated(forRemoval = true)
    public boolean supportsConcurrentPrepare() {
        return supportsOverlap();
    }

    /** The contract symbols this library exports, every one resolved at load. */
    public List<String> exportedSymbols() {
        return NativeApi.SYMBOLS;
    }

    /**
     * A chip host process that loaded this library (docs/isolation.md), admitted like the
     * library itself: it must report this variant, contract and run storage shape.
     *
     * @throws LibraryLoadException when it cannot start or answers differently
     */
    ChipHost startChipHost() {
        // an onboard chip host's emulated driver shares the JVM's faults and stats (docs/isolation.md)
        int driverState = variant.platform() == Variant.Platform.ONBOARD
                ? EmulatedDriverLibrary.sharedStateFd(file) : -1;
        ChipHost host = ChipHost.start(variant.toString(), file, ChipHost.configuredArenaBytes(), driverState);
        try {
            NativeApi child = host.api();
            String reported = NativeMemory.cString(child.variant());
            PipelineContract childContract = readContract(child.pipelineContract(), host.name());
            if (!variant.toString().equals(reported) || !contract.equals(childContract)
                    || child.runtimeSize() != runStorageSize || child.runtimeAlignment() != runStorageAlignment) {
                throw new LibraryLoadException(host.name() + " loaded " + file + " as '" + reported + "', contract "
                        + childContract + ", run storage " + child.runtimeSize() + " bytes aligned "
                        + child.runtimeAlignment() + "; this JVM loaded '" + variant + "', " + contract + ", "
                        + runStorageSize + " bytes aligned " + runStorageAlignment);
            }
            return host;
        } catch (RuntimeException e) {
            host.close();
            throw e;
        }
    }

    /** The bound native functions (internal use). */
    NativeApi api() {
        return api;
    }

    /** The calling thread's last native failure message; "" when none. */
    String lastError() {
        return NativeMemory.cString(api.lastError());
    }

    @Override
    public String toString() {
        return "HostRuntime[" + variant + ", " + contract + "]";
    }
}

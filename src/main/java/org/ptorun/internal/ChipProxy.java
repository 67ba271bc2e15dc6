package org.ptorun.internal;

import com.sun.jna.Library;
import com.sun.jna.Native;
import com.sun.jna.NativeLibrary;
import java.nio.file.Path;
import java.util.Map;
import org.ptorun.LibraryLoadException;

/**
 * JNA direct mapping of {@code libptorun_chipproxy.so}, the parent's side of the chip
 * processes (src/main/c/chiphost/chip_proxy.h, docs/isolation.md): it starts a chip host,
 * forwards the contract's calls to it and hands out pieces of its arena. Bound on first
 * use; {@link ProcessNativeApi} and {@link ChipHost} are its only callers.
 */
final class ChipProxy {

    /** The proxy library's file in {@code linux-x86-64/}. */
    static final String FILE_NAME = "libptorun_chipproxy.so";
    /** The chip host executable's file in {@code linux-x86-64/}. */
    static final String EXECUTABLE = "ptorun-chiphost";

    private static final int RTLD_NOW = 0x2;

    static {
        Path file = NativeFolder.libraryFile(FILE_NAME);
        NativeLibrary library;
        try {
            library = NativeLibrary.getInstance(file == null ? "ptorun_chipproxy" : file.toString(),
                    Map.of(Library.OPTION_OPEN_FLAGS, RTLD_NOW));
        } catch (UnsatisfiedLinkError e) {
            throw new LibraryLoadException("cannot load " + FILE_NAME + " (process isolation needs it beside the"
                    + " variant libraries, resource " + LibraryLoader.resourcePath(FILE_NAME) + "): "
                    + e.getMessage(), e);
        }
        Native.register(ChipProxy.class, library);
    }

    private ChipProxy() {
    }

    /** Makes sure the library is bound (its static initialiser ran). */
    static void load() {
        // the static initialiser did the work
    }

    // management
    static native long chip_proxy_start(String exe, String library, long arenaBytes);

    static native long chip_proxy_start_with_driver_state(String exe, String library, long arenaBytes,
                                                          int driverStateFd);

    static native void chip_proxy_stop(long chip);

    static native int chip_proxy_kill(long chip, int sig);

    static native long chip_proxy_pid(long chip);

    static native int chip_proxy_alive(long chip);

    static native long chip_proxy_death(long chip);

    static native long chip_proxy_last_error();

    static native long chip_proxy_variant(long chip);

    static native long chip_proxy_runtime_size(long chip);

    static native long chip_proxy_runtime_alignment(long chip);

    static native long chip_proxy_pipeline_contract(long chip);

    static native long chip_proxy_arena_alloc(long chip, long bytes, long align);

    static native void chip_proxy_arena_free(long chip, long address);

    static native int chip_proxy_in_arena(long chip, long address, long bytes);

    static native long chip_proxy_log_pending(long chip);

    static native int chip_proxy_log_next(long chip, long buf, long cap);

    static native long chip_proxy_lane_count(long chip);

    // the contract, forwarded (ctx and comm are the proxy's handles)
    static native long chip_proxy_create_device_context(long chip);

    static native void chip_proxy_destroy_device_context(long ctx);

    static native int chip_proxy_init(long ctx, int deviceId, long aicpu, long aicpuSize, long aicore,
                                      long aicoreSize, long dispatcher, long dispatcherSize, long prewarm);

    static native int chip_proxy_finalize_device(long ctx);

    static native long chip_proxy_device_malloc(long ctx, long n);

    static native void chip_proxy_device_free(long ctx, long p);

    static native long chip_proxy_committed_device_memory(long ctx);

    static native int chip_proxy_copy_to_device(long ctx, long dev, long host, long n);

    static native int chip_proxy_copy_from_device(long ctx, long host, long dev, long n);

    static native int chip_proxy_register_callable(long ctx, int id, long callable);

    static native int chip_proxy_unregister_callable(long ctx, int id);

    static native int chip_proxy_prepare_run(long ctx, long storage, int id, long args, long cfg, long desc);

    static native int chip_proxy_launch_run(long ctx, long storage);

    static native int chip_proxy_poll_run(long ctx, long storage);

    static native int chip_proxy_wait_run(long ctx, long storage);

    static native int chip_proxy_finalize_run(long ctx, long storage);

    static native int chip_proxy_run(long ctx, long storage, int id, long args, long cfg, long desc);

    static native long chip_proxy_aicpu_dlopen_count(long ctx);

    static native long chip_proxy_host_dlopen_count(long ctx);

    static native long chip_proxy_run_stream_set_create_count(long ctx);

    static native int chip_proxy_supports_concurrent_native_prepare(long ctx);

    static native long chip_proxy_arena_bank_gm_heap_base(long ctx, int bank);

    static native long chip_proxy_retained_temp_addr(long ctx, int slot);

    static native int chip_proxy_device_poisoned(long ctx);

    static native long chip_proxy_comm_init(long ctx, int rank, int nranks, long rootinfoPath, int timeoutMs);

    static native int chip_proxy_comm_alloc_windows(long comm, long winSize, long deviceCtxOut);

    static native int chip_proxy_comm_get_local_window_base(long comm, long baseOut);

    static native int chip_proxy_comm_get_window_size(long comm, long sizeOut);

    static native int chip_proxy_comm_derive_context(long comm, long rankIds, long rankCount, int domainRank,
                                                     long windowOffset, long windowSize, long deviceCtxOut);

    static native int chip_proxy_comm_alloc_domain_windows(long comm, long allocationId, long rankIds,
                                                           long rankCount, int domainRank, long windowSize,
                                                           long deviceCtxOut, long localWindowBaseOut);

    static native int chip_proxy_comm_release_domain_windows(long comm, long allocationId, long rankCount,
                                                             int domainRank);

    static native int chip_proxy_comm_barrier(long comm);

    static native int chip_proxy_comm_break_domain(long comm, long deviceCtx);

    static native int chip_proxy_comm_destroy(long comm);
}

package org.ptorun.internal;

import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * When a library's native log ({@link NativeLog}) is flushed: the one policy, applied by
 * the generated {@link FlushingNativeApi} after every call. A call flushes after it
 * returned — one atomic-count check when nothing was recorded — except the calls that
 * record nothing ({@link #SILENT}) and the run phases, the hot path ({@link #PHASES}):
 * they flush after a failed call, and a successful finalize flushes every
 * {@value #FINALIZES_PER_FLUSH}th time — so a record made during a successful run
 * reaches SLF4J within that many runs, or at the chip's next call of any other kind, and
 * a successful trivial cycle makes no native call beyond its phases (docs/performance.md,
 * P1). The flush runs on the calling thread, never from a device thread, and leaves
 * {@code simpler_last_error} alone, so a failed call's message is still there.
 *
 * <p>A new export flushes after every call unless it is listed here.
 */
public final class NativeLogFlush {

    /** Successful finalizes, across the library's chips, between two flushes of the log. */
    public static final int FINALIZES_PER_FLUSH = 64;

    /** Calls that never record (identity, sizing, the log itself): no flush after them. */
    static final Set<String> SILENT = Set.of("ptorun_variant", "simpler_last_error", "get_runtime_size",
            "get_runtime_alignment", "get_pipeline_contract", "ptorun_log_pending", "ptorun_log_next");

    /** The run phases, the hot path: a flush after a failed call only (and see {@link #FINALIZE}). */
    static final Set<String> PHASES = Set.of("simpler_prepare_run", "simpler_launch_run", "simpler_poll_run",
            "simpler_wait_run");

    /** The phase that also flushes after every {@value #FINALIZES_PER_FLUSH}th success. */
    static final String FINALIZE = "simpler_finalize_run";

    private static final byte ALWAYS = 0;
    private static final byte NEVER = 1;
    private static final byte ON_FAILURE = 2;
    private static final byte FINALIZES = 3;

    /** The rule of each contract function, by its index in {@link NativeApi#SYMBOLS}. */
    private static final byte[] RULES = rules(NativeApi.SYMBOLS);

    private final NativeLog log;
    private final AtomicInteger finalizes = new AtomicInteger();

    /** Drains into {@code log}. */
    public NativeLogFlush(NativeLog log) {
        this.log = log;
    }

    /** The log this policy flushes. */
    public NativeLog log() {
        return log;
    }

    /**
     * Called once the contract function {@code NativeApi.SYMBOLS.get(symbol)} returned
     * {@code result} (0 for a void function; a code, a pointer or a size otherwise).
     */
    public void after(int symbol, long result) {
        switch (RULES[symbol]) {
            case NEVER:
                return;
            case ON_FAILURE:
                if (result < 0) {
                    log.flush(); // its records say why
                }
                return;
            case FINALIZES:
                if (result != 0 || finalizes.incrementAndGet() % FINALIZES_PER_FLUSH == 0) {
                    log.flush();
                }
                return;
            default:
                log.flush();
        }
    }

    static byte[] rules(List<String> symbols) {
        byte[] rules = new byte[symbols.size()];
        for (String named : union(SILENT, PHASES, Set.of(FINALIZE))) {
            if (!symbols.contains(named)) {
                // a renamed or removed export must not silently fall back to "always"
                throw new IllegalStateException("NativeLogFlush names " + named + ", which the contract lacks");
            }
        }
        for (int i = 0; i < rules.length; i++) {
            String fn = symbols.get(i);
            rules[i] = SILENT.contains(fn) ? NEVER
                    : PHASES.contains(fn) ? ON_FAILURE
                    : FINALIZE.equals(fn) ? FINALIZES
                    : ALWAYS;
        }
        return rules;
    }

    @SafeVarargs
    private static Set<String> union(Set<String>... sets) {
        Set<String> all = new HashSet<>();
        for (Set<String> s : sets) {
            all.addAll(s);
        }
        return all;
    }
}

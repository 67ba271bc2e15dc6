package org.ptorun;

import java.util.List;

/**
 * {@code PTO_ERR_CHIP_CRASHED}: the process the chip runs in (its chip host,
 * {@link ChipIsolation#PROCESS}, docs/isolation.md) is gone: killed by a signal, aborted,
 * exited, or killed by ptorun after it made no progress past a run's deadline. The call
 * in flight and every later call of that chip fail with it; the chip is poisoned; the JVM
 * and every other chip go on. The message names the chip, the signal (or the exit
 * status) and the process id, e.g. {@code chip host pid 4711 was killed by signal 11
 * (Segmentation fault)}, and the run's identity when a run failed.
 */
public final class ChipCrashedException extends PtoRunException {

    private static final long serialVersionUID = 1L;

    private final List<String> lastNativeLogLines;

    public ChipCrashedException(String description, int code, String nativeMessage, NativeRun run) {
        this(description, code, nativeMessage, run, List.of());
    }

    /** With the chip's last native log lines, oldest first, each {@code LEVEL text}. */
    public ChipCrashedException(String description, int code, String nativeMessage, NativeRun run,
                                List<String> lastNativeLogLines) {
        super(description + lines(lastNativeLogLines), code, nativeMessage, run);
        this.lastNativeLogLines = List.copyOf(lastNativeLogLines);
    }

    private static String lines(List<String> lastNativeLogLines) {
        return lastNativeLogLines.isEmpty() ? ""
                : "; its last native log lines: [" + String.join(" | ", lastNativeLogLines) + "]";
    }

    /** The chip's last native log lines before it was gone (up to 16), oldest first; maybe none. */
    public List<String> lastNativeLogLines() {
        return lastNativeLogLines;
    }
}

package org.ptorun.internal;

import java.util.ArrayDeque;
import java.util.List;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The Java end of one library's native log ring ({@code ptorun_log_pending} /
 * {@code ptorun_log_next}): {@link #flush()} moves every waiting record into the SLF4J
 * logger {@code org.ptorun.native}, prefixed with the variant. Native code never prints;
 * there is no polling thread — the callers flush it after their native calls.
 */
public final class NativeLog {

    /** The logger native records go to. */
    public static final String LOGGER_NAME = "org.ptorun.native";

    /** Text bytes of one record, NUL included (the native ring truncates to 256). */
    static final int RECORD_BYTES = 256;

    private static final Logger LOG = LoggerFactory.getLogger(LOGGER_NAME);

    /** Records {@link #lastLines()} keeps: what a crash report quotes. */
    static final int TAIL_LINES = 16;

    private final NativeApi api;
    private final String variant;
    private final ReentrantLock lock = new ReentrantLock();
    private long buffer;
    /** The last records logged, oldest first (under lock). */
    private final ArrayDeque<String> tail = new ArrayDeque<>(TAIL_LINES);

    /** The log of the library behind {@code api}, named {@code variant} in each line. */
    public NativeLog(NativeApi api, String variant) {
        this.api = api;
        this.variant = variant;
    }

    /** Logs every waiting record; costs one native atomic load when there is none. */
    public void flush() {
        if (api.logPending() == 0) {
            return;
        }
        lock.lock();
        try {
            if (buffer == 0) {
                // one buffer per library for the JVM's life: the library is never unloaded
                buffer = NativeMemory.malloc(RECORD_BYTES);
                if (buffer == 0) {
                    return;
                }
            }
            int level;
            while ((level = api.logNext(buffer, RECORD_BYTES)) > 0) {
                String text = NativeMemory.cString(buffer);
                log(level, text);
                if (tail.size() == TAIL_LINES) {
                    tail.removeFirst();
                }
                tail.addLast(levelName(level) + " " + text);
            }
        } finally {
            lock.unlock();
        }
    }

    /** Flushes, then the last {@value #TAIL_LINES} records logged, oldest first, each "LEVEL text". */
    public List<String> lastLines() {
        flush();
        lock.lock();
        try {
            return List.copyOf(tail);
        } finally {
            lock.unlock();
        }
    }

    private static String levelName(int level) {
        switch (level) {
            case NativeConstants.PTO_LOG_ERROR:
                return "ERROR";
            case NativeConstants.PTO_LOG_WARN:
                return "WARN";
            case NativeConstants.PTO_LOG_INFO:
                return "INFO";
            case NativeConstants.PTO_LOG_DEBUG:
                return "DEBUG";
            default:
                return "TRACE";
        }
    }

    private void log(int level, String text) {
        switch (level) {
            case NativeConstants.PTO_LOG_ERROR:
                LOG.error("{}: {}", variant, text);
                break;
            case NativeConstants.PTO_LOG_WARN:
                LOG.warn("{}: {}", variant, text);
                break;
            case NativeConstants.PTO_LOG_INFO:
                LOG.info("{}: {}", variant, text);
                break;
            case NativeConstants.PTO_LOG_DEBUG:
                LOG.debug("{}: {}", variant, text);
                break;
            default:
                LOG.trace("{}: {}", variant, text);
                break;
        }
    }
}

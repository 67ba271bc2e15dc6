package org.ptorun.testlog;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.slf4j.event.Level;

/**
 * Takes every SLF4J event of the JVM while open, instead of printing it: a test that
 * provokes an expected WARN or ERROR opens one, runs, and asserts on {@link #events()}.
 * Open captures see all levels; events outside any capture print as configured
 * ({@code simplelogger.properties}: WARN and above). Tests run one at a time, so a
 * capture sees its own test's events (and any leak-net WARN of the leak net's thread then).
 *
 * <pre>{@code
 * try (LogCapture logs = LogCapture.open()) {
 *     ...
 *     assertThat(logs.messages(Level.WARN)).anyMatch(m -> m.contains("is poisoned"));
 * }
 * }</pre>
 */
public final class LogCapture implements AutoCloseable {

    /** One logging event as the capture saw it (the message formatted). */
    public record Event(String logger, Level level, String message, Throwable throwable) {
        @Override
        public String toString() {
            return level + " " + logger + " - " + message;
        }
    }

    private static final List<LogCapture> OPEN = new CopyOnWriteArrayList<>();

    private final List<Event> events = new CopyOnWriteArrayList<>();

    private LogCapture() {
    }

    /** Starts capturing; {@link #close()} stops. */
    public static LogCapture open() {
        LogCapture capture = new LogCapture();
        OPEN.add(capture);
        return capture;
    }

    static boolean anyOpen() {
        return !OPEN.isEmpty();
    }

    /** Gives {@code event} to every open capture; false when none is open. */
    static boolean offer(Event event) {
        boolean taken = false;
        for (LogCapture capture : OPEN) {
            capture.events.add(event);
            taken = true;
        }
        return taken;
    }

    /** Every event so far, in order. */
    public List<Event> events() {
        return List.copyOf(events);
    }

    /** The messages of the events at {@code level}. */
    public List<String> messages(Level level) {
        List<String> out = new ArrayList<>();
        for (Event e : events) {
            if (e.level() == level) {
                out.add(e.message());
            }
        }
        return out;
    }

    /** The messages of the events of logger {@code name}. */
    public List<String> messages(String name) {
        List<String> out = new ArrayList<>();
        for (Event e : events) {
            if (e.logger().equals(name)) {
                out.add(e.message());
            }
        }
        return out;
    }

    @Override
    public void close() {
        OPEN.remove(this);
    }
}

package org.ptorun.testlog;

import org.slf4j.Logger;
import org.slf4j.Marker;
import org.slf4j.event.Level;
import org.slf4j.helpers.LegacyAbstractLogger;
import org.slf4j.helpers.MessageFormatter;

/**
 * A logger that hands each event to the open {@link LogCapture}s, or, when none is open,
 * to its slf4j-simple logger. While a capture is open every level is enabled, so a test
 * sees INFO and DEBUG lines (the native log's too) that would otherwise be off.
 */
final class CapturingLogger extends LegacyAbstractLogger {

    private static final long serialVersionUID = 1L;

    private final transient Logger simple;

    CapturingLogger(Logger simple) {
        this.simple = simple;
        this.name = simple.getName();
    }

    @Override
    public boolean isTraceEnabled() {
        return LogCapture.anyOpen() || simple.isTraceEnabled();
    }

    @Override
    public boolean isDebugEnabled() {
        return LogCapture.anyOpen() || simple.isDebugEnabled();
    }

    @Override
    public boolean isInfoEnabled() {
        return LogCapture.anyOpen() || simple.isInfoEnabled();
    }

    @Override
    public boolean isWarnEnabled() {
        return LogCapture.anyOpen() || simple.isWarnEnabled();
    }

    @Override
    public boolean isErrorEnabled() {
        return LogCapture.anyOpen() || simple.isErrorEnabled();
    }

    @Override
    protected String getFullyQualifiedCallerName() {
        return null;
    }

    @Override
    protected void handleNormalizedLoggingCall(Level level, Marker marker, String pattern, Object[] arguments,
            Throwable throwable) {
        String message = MessageFormatter.basicArrayFormat(pattern, arguments);
        if (LogCapture.offer(new LogCapture.Event(name, level, message, throwable))) {
            return;
        }
        switch (level) {
            case ERROR -> simple.error(message, throwable);
            case WARN -> simple.warn(message, throwable);
            case INFO -> simple.info(message, throwable);
            case DEBUG -> simple.debug(message, throwable);
            default -> simple.trace(message, throwable);
        }
    }
}

package org.ptorun.testlog;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import org.slf4j.ILoggerFactory;
import org.slf4j.IMarkerFactory;
import org.slf4j.Logger;
import org.slf4j.simple.SimpleServiceProvider;
import org.slf4j.spi.MDCAdapter;
import org.slf4j.spi.SLF4JServiceProvider;

/**
 * The tests' SLF4J provider (selected by the surefire property {@code slf4j.provider}):
 * slf4j-simple, configured by {@code simplelogger.properties}, with every logger wrapped
 * so that a {@link LogCapture} can take the events instead of printing them.
 */
public final class CapturingServiceProvider implements SLF4JServiceProvider {

    private final SimpleServiceProvider simple = new SimpleServiceProvider();
    private final ConcurrentMap<String, Logger> loggers = new ConcurrentHashMap<>();
    private final ILoggerFactory factory = name -> loggers.computeIfAbsent(name,
            n -> new CapturingLogger(simple.getLoggerFactory().getLogger(n)));

    @Override
    public ILoggerFactory getLoggerFactory() {
        return factory;
    }

    @Override
    public IMarkerFactory getMarkerFactory() {
        return simple.getMarkerFactory();
    }

    @Override
    public MDCAdapter getMDCAdapter() {
        return simple.getMDCAdapter();
    }

    @Override
    public String getRequestedApiVersion() {
        return simple.getRequestedApiVersion();
    }

    @Override
    public void initialize() {
        simple.initialize();
    }
}

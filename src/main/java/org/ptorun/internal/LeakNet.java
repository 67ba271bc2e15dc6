package org.ptorun.internal;

import java.lang.ref.Cleaner;
import java.util.Objects;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one shared {@link Cleaner}: a leak net only. A resource registers how it is
 * released; its own {@code close()} releases it through {@link Handle#close()} without
 * a word, and a resource that became unreachable without being closed is released here
 * with a WARN naming it (and its creation site when run with
 * {@code -Dptorun.leakDetection=paranoid}).
 */
public final class LeakNet {

    private static final Logger LOG = LoggerFactory.getLogger(LeakNet.class);
    private static final boolean PARANOID = "paranoid".equalsIgnoreCase(System.getProperty("ptorun.leakDetection"));
    private static final Cleaner CLEANER = Cleaner.create(r -> {
        Thread t = new Thread(r, "ptorun-leak-net");
        t.setDaemon(true);
        return t;
    });

    private LeakNet() {
    }

    /**
     * Watches {@code owner}. The release action must not reference the owner (it would
     * never become unreachable).
     *
     * @param what names the resource in the warning
     */
    public static Handle register(Object owner, String what, Runnable release) {
        Action action = new Action(what, release, PARANOID ? new Throwable("created here") : null);
        return new Handle(CLEANER.register(owner, action), action);
    }

    /** Releases the resource once, explicitly. */
    public static final class Handle {
        private final Cleaner.Cleanable cleanable;
        private final Action action;

        private Handle(Cleaner.Cleanable cleanable, Action action) {
            this.cleanable = cleanable;
            this.action = action;
        }

        /** Runs the release action now, unless it already ran; idempotent and thread-safe. */
        public void close() {
            action.explicit = true;
            cleanable.clean();
        }
    }

    private static final class Action implements Runnable {
        private final String what;
        private final Runnable release;
        private final Throwable site;
        private volatile boolean explicit;

        Action(String what, Runnable release, Throwable site) {
            this.what = Objects.requireNonNull(what, "what");
            this.release = Objects.requireNonNull(release, "release");
            this.site = site;
        }

        @Override
        public void run() {
            if (!explicit) {
                if (site != null) {
                    LOG.warn("leak: {} was never closed; the leak net releases it", what, site);
                } else {
                    LOG.warn("leak: {} was never closed; the leak net releases it"
                            + " (run with -Dptorun.leakDetection=paranoid to see where it was created)", what);
                }
            }
            try {
                release.run();
            } catch (RuntimeException e) {
                LOG.warn("releasing {} failed", what, e);
            }
        }
    }
}

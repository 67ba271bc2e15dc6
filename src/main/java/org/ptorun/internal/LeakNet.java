package org.ptorun.internal;

import java.lang.ref.PhantomReference;
import java.lang.ref.Reference;
import java.lang.ref.ReferenceQueue;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.Objects;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The leak net: a resource registers how it is released; its own {@code close()} releases
 * it through {@link Handle#close()} without a word, and a resource that became
 * unreachable without being closed is released here with a WARN naming it (and its
 * creation site when run with {@code -Dptorun.leakDetection=paranoid}).
 *
 * <p>Not a {@link java.lang.ref.Cleaner}: a Cleaner's thread never ends and ignores
 * interrupts, so {@code mvn exec:java} (which interrupts and joins the threads its
 * program left) waited 15 s for it. This net's daemon thread runs only while something
 * is registered: it starts with the first registration, ends once nothing is registered
 * (or when interrupted), and the next registration starts a new one. References
 * collected while no thread runs stay in the queue until then.
 */
public final class LeakNet {

    private static final Logger LOG = LoggerFactory.getLogger(LeakNet.class);
    private static final boolean PARANOID = "paranoid".equalsIgnoreCase(System.getProperty("ptorun.leakDetection"));
    private static final LeakNet NET = new LeakNet("ptorun-leak-net");

    private final String threadName;
    private final ReferenceQueue<Object> queue = new ReferenceQueue<>();
    private final Object lock = new Object();
    /** Registered and not yet released; keeps the references reachable. Guarded by lock. */
    private final Set<Ref> live = Collections.newSetFromMap(new IdentityHashMap<>());
    /** The thread serving the queue, or null when none runs. Guarded by lock. */
    private Thread thread;

    LeakNet(String threadName) {
        this.threadName = threadName;
    }

    /**
     * Watches {@code owner}. The release action must not reference the owner (it would
     * never become unreachable). Thread-safe.
     *
     * @param what names the resource in the warning
     */
    public static Handle register(Object owner, String what, Runnable release) {
        return NET.watch(owner, what, release);
    }

    Handle watch(Object owner, String what, Runnable release) {
        Ref ref = new Ref(Objects.requireNonNull(owner, "owner"), queue, this, Objects.requireNonNull(what, "what"),
                Objects.requireNonNull(release, "release"), PARANOID ? new Throwable("created here") : null);
        synchronized (lock) {
            live.add(ref);
            if (thread == null) {
                Thread t = new Thread(this::serve, threadName);
                t.setDaemon(true);
                t.start();
                thread = t; // only once started: a failed start leaves the next registration to try again
            }
        }
        Reference.reachabilityFence(owner); // not collectable before it is in live
        return new Handle(ref);
    }

    /** The thread serving the queue now, or null (tests). */
    Thread thread() {
        synchronized (lock) {
            return thread;
        }
    }

    /** Registrations not yet released (tests). */
    int watched() {
        synchronized (lock) {
            return live.size();
        }
    }

    private void serve() {
        Thread self = Thread.currentThread();
        try {
            while (true) {
                synchronized (lock) {
                    if (live.isEmpty()) {
                        thread = null; // with the check, under the lock: the next registration starts a new thread
                        return;
                    }
                }
                Reference<?> r = queue.remove();
                if (r instanceof Ref ref) {
                    ref.release(false);
                }
                // else a wake-up: look at live again
            }
        } catch (InterruptedException e) {
            // asked to end (exec:java asks so of every thread its program left); a later registration restarts the net
        } finally {
            synchronized (lock) {
                if (thread == self) {
                    thread = null; // interrupted, or an Error out of a release action
                }
            }
        }
    }

    /** Takes {@code ref} out of live, once; wakes the thread to end when that emptied live. */
    private boolean remove(Ref ref) {
        boolean wake;
        synchronized (lock) {
            if (!live.remove(ref)) {
                return false;
            }
            wake = live.isEmpty() && thread != null && thread != Thread.currentThread();
        }
        if (wake) {
            new PhantomReference<>(new Object(), queue).enqueue(); // not a Ref: the thread re-checks live
        }
        return true;
    }

    /** Releases the resource once, explicitly. */
    public static final class Handle {
        private final Ref ref;

        private Handle(Ref ref) {
            this.ref = ref;
        }

        /** Runs the release action now, unless it already ran; idempotent and thread-safe. */
        public void close() {
            ref.release(true);
        }

        /** Queues the reference as the collector would once the owner is unreachable (tests). */
        void enqueueAsCollected() {
            ref.enqueue();
        }
    }

    private static final class Ref extends PhantomReference<Object> {
        private final LeakNet net;
        private final String what;
        private final Runnable release;
        private final Throwable site;

        Ref(Object owner, ReferenceQueue<Object> queue, LeakNet net, String what, Runnable release, Throwable site) {
            super(owner, queue);
            this.net = net;
            this.what = what;
            this.release = release;
            this.site = site;
        }

        /** The first of close() and the net runs the action; the other does nothing. */
        void release(boolean explicit) {
            if (!net.remove(this)) {
                return;
            }
            clear();
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

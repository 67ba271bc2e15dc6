package org.ptorun.cli;

import java.io.PrintWriter;

/**
 * A progress line on stderr for long commands: at most one a second (the first after a
 * second), each a whole line so that it reads in a log as well as on a terminal.
 */
final class Progress {

    private static final long EVERY_NANOS = 1_000_000_000L;

    private final PrintWriter err;
    private final String what;
    private long next;

    Progress(PrintWriter err, String what) {
        this.err = err;
        this.what = what;
        this.next = System.nanoTime() + EVERY_NANOS;
    }

    /** Reports {@code done} of {@code total} if a second passed since the last line. */
    void update(long done, long total, String unit) {
        long now = System.nanoTime();
        if (now - next >= 0) {
            next = now + EVERY_NANOS;
            err.printf("ptorun %s: %d/%d %s%n", what, done, total, unit);
            err.flush();
        }
    }

    /** A line now. */
    void say(String text) {
        err.println("ptorun " + what + ": " + text);
        err.flush();
        next = System.nanoTime() + EVERY_NANOS;
    }
}

package org.ptorun.internal;

import com.sun.jna.Library;
import com.sun.jna.Native;

/**
 * Sets and clears variables of this process's native environment, which Java cannot
 * change otherwise; tests use it for the libraries' test facilities that are read at
 * {@code simpler_init} (e.g. PTORUN_SIM_FAIL_ENQUEUE_AFTER).
 */
public final class ProcessEnvironment {

    private interface LibC extends Library {
        int setenv(String name, String value, int overwrite);

        int unsetenv(String name);
    }

    private static final LibC LIBC = Native.load("c", LibC.class);

    private ProcessEnvironment() {
    }

    public static void set(String name, String value) {
        if (LIBC.setenv(name, value, 1) != 0) {
            throw new IllegalStateException("setenv " + name + " failed");
        }
    }

    public static void unset(String name) {
        LIBC.unsetenv(name);
    }
}

package org.ptorun;

import java.util.Locale;

/**
 * Where a chip's library runs (docs/isolation.md). Chosen where a chip is opened
 * ({@link ChipWorker#open(HostRuntime, int, ChipIsolation)}, the Worker's builder, a
 * comm group's ranks); {@link #configuredDefault()} when not.
 */
public enum ChipIsolation {

    /** In the JVM: the fastest; a kernel that crashes takes the JVM with it. */
    IN_PROCESS,

    /**
     * In a chip host process of its own, started by ptorun and tied to the JVM's life: a
     * kernel that crashes kills that process only, and the chip's calls and runs fail
     * with {@link ChipCrashedException}; the JVM and every other chip go on.
     */
    PROCESS;

    /** The system property naming the default isolation: {@code in-process} or {@code process}. */
    public static final String PROPERTY = "ptorun.isolation";

    /**
     * The isolation of chips opened without a choice: {@value #PROPERTY} when set, else
     * {@link #IN_PROCESS}.
     *
     * @throws IllegalArgumentException for another value of the property
     */
    public static ChipIsolation configuredDefault() {
        String value = System.getProperty(PROPERTY, "");
        switch (value.trim().toLowerCase(Locale.ROOT)) {
            case "":
            case "in-process":
                return IN_PROCESS;
            case "process":
                return PROCESS;
            default:
                throw new IllegalArgumentException("-D" + PROPERTY + "=" + value
                        + ": expected in-process or process");
        }
    }
}

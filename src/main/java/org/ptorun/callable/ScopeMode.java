package org.ptorun.callable;

/**
 * How a program scope's tasks get their dependencies (the C {@code PtoScopeMode}).
 */
public enum ScopeMode {
    /** Every dependency is inferred from the tasks' views (the default). */
    AUTO,
    /**
     * No dependency is inferred between the scope's own tasks: each names the earlier tasks
     * of the scope it waits for with {@link Program.Builder#submitAfter}. Dependencies on
     * tasks before the scope, and of later tasks on the scope's, are inferred as usual.
     */
    MANUAL
}

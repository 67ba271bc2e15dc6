package org.ptorun;

import java.util.List;
import org.ptorun.callable.ChipCallable;

/** The process-isolation test helpers, for the tests of other packages (worker). */
public final class ProcessIsolationTestAccess {

    private ProcessIsolationTestAccess() {
    }

    public static List<Variant> allVariants() {
        return SimE2E.allVariants();
    }

    public static ChipCallable vadd(int n) {
        return ProcessIsolationE2ETest.vadd(n);
    }

    public static ChipCallable crashing(String kernel, int n) {
        return ProcessIsolationE2ETest.crashing(kernel, n);
    }

    public static float[] sum(float[] a, float[] b) {
        return ProcessIsolationE2ETest.sum(a, b);
    }

    public static float[] random(int n, long seed) {
        return SimE2E.random(n, seed);
    }

    public static List<Long> chipHosts() {
        return ProcessIsolationE2ETest.chipHosts();
    }
}

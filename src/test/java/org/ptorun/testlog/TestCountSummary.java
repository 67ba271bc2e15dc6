package org.ptorun.testlog;

import java.io.PrintStream;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.launcher.TestExecutionListener;
import org.junit.platform.launcher.TestIdentifier;
import org.junit.platform.launcher.TestPlan;

/**
 * Prints one line when the JUnit Platform has run a test plan, e.g.
 * {@code java tests: 2 548 passed, 0 failed, 0 skipped}: {@code mvn -q} hides Surefire's and
 * Failsafe's own summaries, but not what the test JVM prints, so the quiet build still says
 * how many Java tests ran. Registered through {@code META-INF/services} (the Platform loads
 * every listener found there); the label is the system property
 * {@code ptorun.testSummaryLabel} (the pom sets one for Surefire and one for Failsafe).
 *
 * <p>Counts tests, not containers: a test that failed or was skipped counts as such, and a
 * container that failed before its tests ran (an {@code @BeforeAll}) counts as one
 * failure, as Surefire counts it. An aborted test (a failed assumption) and a disabled
 * one count as skipped; the project's rule is that none is.
 */
public final class TestCountSummary implements TestExecutionListener {

    private final AtomicLong passed = new AtomicLong();
    private final AtomicLong failed = new AtomicLong();
    private final AtomicLong skipped = new AtomicLong();
    private volatile TestPlan plan;
    private final PrintStream out;

    /** The Platform's: prints to the test JVM's standard output (Surefire shows it even with -q). */
    public TestCountSummary() {
        this(System.out);
    }

    TestCountSummary(PrintStream out) {
        this.out = out;
    }

    @Override
    public void testPlanExecutionStarted(TestPlan testPlan) {
        plan = testPlan;
        passed.set(0);
        failed.set(0);
        skipped.set(0);
    }

    @Override
    public void executionSkipped(TestIdentifier id, String reason) {
        skipped.addAndGet(testsIn(id));
    }

    @Override
    public void executionFinished(TestIdentifier id, TestExecutionResult result) {
        TestExecutionResult.Status status = result.getStatus();
        if (id.isTest()) {
            switch (status) {
                case SUCCESSFUL -> passed.incrementAndGet();
                case FAILED -> failed.incrementAndGet();
                default -> skipped.incrementAndGet();
            }
        } else if (status == TestExecutionResult.Status.FAILED) {
            failed.incrementAndGet(); // e.g. @BeforeAll failed: its tests were never reported
        } else if (status == TestExecutionResult.Status.ABORTED) {
            skipped.addAndGet(testsIn(id)); // an assumption in @BeforeAll: its tests never ran
        }
    }

    @Override
    public void testPlanExecutionFinished(TestPlan testPlan) {
        out.println(line(System.getProperty("ptorun.testSummaryLabel", "java tests"), passed.get(), failed.get(),
                skipped.get()));
        out.flush();
    }

    /** The tests {@code id} is or holds (a container's descendants that are tests). */
    private long testsIn(TestIdentifier id) {
        if (id.isTest()) {
            return 1;
        }
        TestPlan p = plan;
        return p == null ? 0 : p.getDescendants(id).stream().filter(TestIdentifier::isTest).count();
    }

    /** {@code <label>: 2 548 passed, 0 failed, 0 skipped} (thousands grouped by a space). */
    static String line(String label, long passed, long failed, long skipped) {
        return label + ": " + grouped(passed) + " passed, " + grouped(failed) + " failed, " + grouped(skipped)
                + " skipped";
    }

    private static String grouped(long n) {
        return String.format(Locale.ROOT, "%,d", n).replace(',', ' ');
    }
}

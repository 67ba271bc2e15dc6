package org.ptorun.testlog;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import org.junit.platform.engine.TestDescriptor;
import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.engine.UniqueId;
import org.junit.platform.engine.support.descriptor.AbstractTestDescriptor;
import org.junit.platform.launcher.TestIdentifier;

/** The summary line: what it counts, and its wording (thousands grouped by a space, as the docs write numbers). */
class TestCountSummaryTest {

    private static final class Descriptor extends AbstractTestDescriptor {
        private final Type type;

        Descriptor(String name, Type type) {
            super(UniqueId.forEngine("summary-test").append("node", name), name);
            this.type = type;
        }

        @Override
        public Type getType() {
            return type;
        }
    }

    private static TestIdentifier test(String name) {
        return TestIdentifier.from(new Descriptor(name, TestDescriptor.Type.TEST));
    }

    private static TestIdentifier container(String name) {
        return TestIdentifier.from(new Descriptor(name, TestDescriptor.Type.CONTAINER));
    }

    @Test
    void countsTestsByOutcomeAndAContainerThatFailedAsOneFailure() {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        TestCountSummary summary = new TestCountSummary(new PrintStream(bytes, true, StandardCharsets.UTF_8));
        summary.testPlanExecutionStarted(null);
        for (int i = 0; i < 3; i++) {
            summary.executionFinished(test("ok" + i), TestExecutionResult.successful());
        }
        summary.executionFinished(test("bad"), TestExecutionResult.failed(new AssertionError("x")));
        summary.executionFinished(test("assumed"), TestExecutionResult.aborted(null));
        summary.executionSkipped(test("disabled"), "@Disabled");
        summary.executionFinished(container("passing class"), TestExecutionResult.successful());
        summary.executionFinished(container("@BeforeAll failed"), TestExecutionResult.failed(new IllegalStateException()));
        summary.testPlanExecutionFinished(null);
        assertThat(bytes.toString(StandardCharsets.UTF_8).lines().toList())
                .containsExactly("java tests: 3 passed, 2 failed, 2 skipped");
    }

    @Test
    void theLineGroupsThousandsAndNamesEachCount() {
        assertThat(TestCountSummary.line("java tests", 2548, 0, 0))
                .isEqualTo("java tests: 2 548 passed, 0 failed, 0 skipped");
        assertThat(TestCountSummary.line("java tests against the packaged jar", 12, 1_234_567, 999))
                .isEqualTo("java tests against the packaged jar: 12 passed, 1 234 567 failed, 999 skipped");
    }
}

package org.ptorun.worker;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;
import org.ptorun.CallConfig;
import org.ptorun.TaskArgs;

/** A drain report reads one failure per line; a cancelled run's exception names the run and the policy. */
class DrainReportTest {

    private static RunTicket ticket(long id, int device) {
        return new RunTicket(id, id, 0, device, 7, new TaskArgs(), CallConfig.DEFAULT, 0, Runnable::run);
    }

    @Test
    void oneFailurePerLineAndALineForThoseNotListed() {
        IllegalStateException close = new IllegalStateException("Worker.close() under ShutdownPolicy.CANCEL_QUEUED"
                + " on thread \"main\"");
        RunTicket a = ticket(4, 0);
        RunTicket b = ticket(9, 1);
        RunCancelledException cancelled = new RunCancelledException(b, false, ShutdownPolicy.CANCEL_QUEUED, close);
        DrainReport report = new DrainReport(3, 5, List.of(
                new DrainReport.RunFailure(a, new IllegalArgumentException("kernel fault: task 0")),
                new DrainReport.RunFailure(b, cancelled)));

        assertThat(report.toString().lines().toList()).containsExactly(
                "DrainReport[succeeded=3, failed=5]",
                "  RunTicket[run_id=4 dispatch_id=4 device=0]: java.lang.IllegalArgumentException: kernel fault: task 0",
                "  RunTicket[run_id=9 dispatch_id=9 device=1]: org.ptorun.worker.RunCancelledException: Worker.close()"
                        + " under ShutdownPolicy.CANCEL_QUEUED cancelled the run before its prepare (that policy"
                        + " cancels every run not yet launched): device 1 (run_id=9 dispatch_id=9)",
                "  ... and 3 more failures, not listed");
        assertThat(new DrainReport(2, 0, List.of()).toString()).isEqualTo("DrainReport[succeeded=2, failed=0]");
    }

    @Test
    void aCancelledRunsExceptionNamesTheRunThePolicyAndCarriesTheClose() {
        IllegalStateException close = new IllegalStateException("the close");
        RunCancelledException e = new RunCancelledException(ticket(12, 3), false, ShutdownPolicy.CANCEL_QUEUED, close);
        assertThat(e).hasMessageContaining("ShutdownPolicy.CANCEL_QUEUED").hasMessageEndingWith(
                "device 3 (run_id=12 dispatch_id=12)").hasCause(close);
        assertThat(e.runId()).isEqualTo(12);
        assertThat(e.dispatchId()).isEqualTo(12);
        assertThat(e.deviceId()).isEqualTo(3);
        assertThat(e.policy()).isEqualTo(ShutdownPolicy.CANCEL_QUEUED);
        assertThat(e.wasPrepared()).isFalse();
    }
}

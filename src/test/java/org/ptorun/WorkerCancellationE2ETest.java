package org.ptorun;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;
import static org.ptorun.WorkerE2ETest.CHAIN;
import static org.ptorun.WorkerE2ETest.PACED;
import static org.ptorun.WorkerE2ETest.enqueueChain;
import static org.ptorun.WorkerE2ETest.enqueuePaced;
import static org.ptorun.WorkerE2ETest.paced;

import java.util.List;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.ptorun.WorkerE2ETest.Job;
import org.ptorun.WorkerE2ETest.PacedJob;
import org.ptorun.worker.DrainReport;
import org.ptorun.worker.RunCancelledException;
import org.ptorun.worker.ShutdownPolicy;
import org.ptorun.worker.Worker;

/**
 * What a run cancelled by {@code close()} under {@link ShutdownPolicy#CANCEL_QUEUED} tells
 * its caller: a future that reads as cancelled and throws a {@link RunCancelledException}
 * naming the policy, the stage and the run, caused by the close; and the drain report
 * listing it, one failure per line. Caller-driven, so nothing moves between calls: the
 * runs stay exactly where the test put them.
 */
class WorkerCancellationE2ETest {

    private static final Variant HBG = Variant.parse("a2a3/sim/hbg");

    @Test
    void queuedRunsCancelledByCloseSayWhyFromGetJoinAndTheDrainReport() throws Exception {
        Worker worker = Worker.builder().variant(HBG).shutdownPolicy(ShutdownPolicy.CANCEL_QUEUED).build();
        worker.register(CHAIN, ChipWorkerE2ETest.vectorChain(WorkerE2ETest.N)).get(60, TimeUnit.SECONDS);
        Job first = enqueueChain(worker, 1);
        Job second = enqueueChain(worker, 2);
        CompletableFuture<Object> dependent = second.ticket().result().thenApply(r -> r);
        worker.close(); // nothing was polled: both runs are still queued
        // first (no dependent) completed on the closing thread; second's completion went to the
        // callback executor with its dependent: once the dependent is done, so is second
        Throwable viaDependent = catchThrowable(dependent::join);
        assertThat(viaDependent).isInstanceOf(CompletionException.class)
                .hasCauseInstanceOf(RunCancelledException.class);

        for (Job job : List.of(first, second)) {
            CompletableFuture<?> result = job.ticket().result();
            assertThat(result.isCancelled()).as("%s reads as cancelled", job.ticket()).isTrue();
            assertThat(result.isCompletedExceptionally()).isTrue();
            Throwable fromGet = catchThrowable(result::get);
            Throwable fromJoin = catchThrowable(result::join);
            assertThat(fromGet).as("get() throws it as is").isInstanceOf(RunCancelledException.class)
                    .isSameAs(fromJoin);
            RunCancelledException e = (RunCancelledException) fromGet;
            long id = job.ticket().runId();
            assertThat(e).hasMessage("Worker.close() under ShutdownPolicy.CANCEL_QUEUED cancelled the run before"
                    + " its prepare (that policy cancels every run not yet launched): device 0 (run_id=" + id
                    + " dispatch_id=" + job.ticket().dispatchId() + ")");
            assertThat(e.policy()).isEqualTo(ShutdownPolicy.CANCEL_QUEUED);
            assertThat(e.runId()).isEqualTo(id);
            assertThat(e.dispatchId()).isEqualTo(job.ticket().dispatchId());
            assertThat(e.deviceId()).isZero();
            assertThat(e.wasPrepared()).isFalse();
            assertThat(e.getCause()).isInstanceOf(IllegalStateException.class)
                    .hasMessage("Worker.close() under ShutdownPolicy.CANCEL_QUEUED on thread \""
                            + Thread.currentThread().getName() + "\"");
            assertThat(e.getCause().getStackTrace()).as("the cause shows where close was called")
                    .anyMatch(f -> f.getClassName().equals(WorkerCancellationE2ETest.class.getName()));
            assertThat(job.f()).containsOnly(SimE2E.SENTINEL);
        }
        assertThat(viaDependent.getCause()).isSameAs(catchThrowable(second.ticket().result()::get));

        DrainReport report = worker.drain();
        assertThat(report.failed()).isEqualTo(2);
        assertThat(report.failures()).extracting(DrainReport.RunFailure::cause)
                .containsExactly(catchThrowable(first.ticket().result()::get),
                        catchThrowable(second.ticket().result()::get));
        List<String> lines = report.toString().lines().toList();
        assertThat(lines).hasSize(3);
        assertThat(lines.get(0)).isEqualTo("DrainReport[succeeded=0, failed=2]");
        assertThat(lines.get(1)).startsWith("  " + first.ticket() + ": " + RunCancelledException.class.getName()
                + ": Worker.close() under ShutdownPolicy.CANCEL_QUEUED cancelled the run before its prepare");
        assertThat(lines.get(2)).startsWith("  " + second.ticket() + ": ").endsWith(
                "(run_id=" + second.ticket().runId() + " dispatch_id=" + second.ticket().dispatchId() + ")");
    }

    /**
     * The other stage a run is given up at: prepared behind a running run (hbg stages the
     * successor during the execution), then finalized unlaunched by the close; and a
     * registration queued behind them is cancelled with the close as its cause too. The
     * running run still completes.
     */
    @Test
    void aStagedSuccessorAndAQueuedRegistrationCancelledByCloseSayWhy() throws Exception {
        Worker worker = Worker.builder().variant(HBG).shutdownPolicy(ShutdownPolicy.CANCEL_QUEUED).build();
        worker.register(PACED, paced()).get(60, TimeUnit.SECONDS);
        PacedJob running = enqueuePaced(worker, 1, 0, 1_000_000);
        PacedJob staged = enqueuePaced(worker, 2, 0, 1_000);
        worker.poll(); // launches the first, prepares the second behind it
        assertThat(staged.ticket().acceptanceWord()).as("the successor is prepared").isPresent();
        assertThat(staged.ticket().isAccepted()).as("and not launched").isFalse();
        CompletableFuture<Void> registration = worker.register(CHAIN, ChipWorkerE2ETest.vectorChain(WorkerE2ETest.N));
        assertThat(registration).as("queued behind the runs").isNotDone();
        worker.close();

        running.ticket().result().get(60, TimeUnit.SECONDS);
        running.assertGolden();
        Throwable e = catchThrowable(() -> staged.ticket().result().get());
        assertThat(staged.ticket().result().isCancelled()).isTrue();
        assertThat(e).isInstanceOf(RunCancelledException.class).hasCauseInstanceOf(IllegalStateException.class);
        assertThat(e.getMessage()).matches("\\QWorker.close() under ShutdownPolicy.CANCEL_QUEUED cancelled the run"
                + " after its prepare, before its launch (finalized unlaunched) (that policy cancels every run not"
                + " yet launched): device 0 (run_id=" + staged.ticket().runId() + " slot=\\E[01] generation=[0-9]+"
                + " dispatch_id=" + staged.ticket().dispatchId() + " run_epoch=[0-9]+\\)");
        assertThat(((RunCancelledException) e).wasPrepared()).isTrue();
        assertThat(staged.z()).containsOnly(SimE2E.SENTINEL);

        Throwable refused = catchThrowable(registration::join);
        assertThat(registration.isCancelled()).isTrue();
        assertThat(refused).isInstanceOf(CancellationException.class)
                .hasMessage("Worker.close() under ShutdownPolicy.CANCEL_QUEUED cancelled the registration of"
                        + " callable " + CHAIN + " before a chip applied it");
        assertThat(refused.getCause()).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("Worker.close() under ShutdownPolicy.CANCEL_QUEUED");
    }
}

package org.ptorun;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.ptorun.SlotTable.Phase;

/** Every transition of the phase table, and every refused one, without native code. */
class SlotTableTest {

    private static final String NONE = null;
    private final SlotTable table = new SlotTable(2, "chip test");
    private long epochs = 100;

    private NativeRun run(int slot, long generation) {
        return new NativeRun(slot, generation, ++epochs, epochs, epochs);
    }

    private NativeRun prepared(int slot) {
        NativeRun r = run(slot, 1);
        table.admit(r, NONE, true, 1000);
        table.prepared(slot);
        return r;
    }

    private NativeRun running(int slot) {
        NativeRun r = prepared(slot);
        table.beginLaunch(r);
        table.launched(slot);
        return r;
    }

    @Test
    void theHappyPathVisitsEveryPhaseOnce() {
        NativeRun r = run(0, 1);
        assertThat(table.phaseOf(0)).isEqualTo(Phase.EMPTY);
        table.admit(r, NONE, true, 1000);
        assertThat(table.phaseOf(0)).isEqualTo(Phase.PREPARING);
        table.prepared(0);
        assertThat(table.phaseOf(0)).isEqualTo(Phase.PREPARED);
        table.beginLaunch(r);
        assertThat(table.phaseOf(0)).isEqualTo(Phase.LAUNCHING);
        table.launched(0);
        assertThat(table.phaseOf(0)).isEqualTo(Phase.RUNNING);
        assertThat(table.beginObserve(r, "poll")).isTrue();
        table.polled(0, false);
        assertThat(table.phaseOf(0)).isEqualTo(Phase.RUNNING);
        assertThat(table.beginObserve(r, "poll")).isTrue();
        table.polled(0, true);
        assertThat(table.phaseOf(0)).isEqualTo(Phase.COMPLETE);
        assertThat(table.beginObserve(r, "poll")).as("COMPLETE needs no native call").isFalse();
        SlotTable.Finalizing f = table.beginFinalize(r);
        assertThat(f.previous()).isEqualTo(Phase.COMPLETE);
        assertThat(f.run()).isEqualTo(r);
        assertThat(table.phaseOf(0)).isEqualTo(Phase.FINALIZING);
        table.emptied(0);
        assertThat(table.phaseOf(0)).isEqualTo(Phase.EMPTY);
        assertThatThrownBy(() -> table.beginFinalize(r)).isInstanceOf(StaleRunException.class)
                .hasMessageContaining(SlotTable.ALREADY_FINALIZED).hasMessageContaining("holds no run");
    }

    @Test
    void awaitRecordsTheResultForFinalize() {
        NativeRun r = running(0);
        assertThat(table.beginObserve(r, "await")).isTrue();
        table.awaited(0, -10, "kernel fault");
        assertThat(table.phaseOf(0)).isEqualTo(Phase.COMPLETE);
        assertThat(table.beginObserve(r, "await")).isFalse();
        SlotTable.Finalizing f = table.beginFinalize(r);
        assertThat(f.waitResult()).isEqualTo(-10);
        assertThat(f.waitMessage()).isEqualTo("kernel fault");
    }

    @Test
    void aFailedLaunchIsDecidedByItsCode() {
        NativeRun r = prepared(0);
        for (int code : new int[] {PtoError.BUSY.code(), PtoError.POISONED.code()}) {
            table.beginLaunch(r);
            assertThat(table.launchFailed(0, code, "refused")).as("code %d", code).isFalse();
            assertThat(table.phaseOf(0)).isEqualTo(Phase.PREPARED);
        }
        table.beginLaunch(r);
        table.launchAborted(0);
        assertThat(table.phaseOf(0)).as("a launch that threw never left PREPARED").isEqualTo(Phase.PREPARED);
        for (PtoError e : PtoError.values()) {
            assertThat(SlotTable.leavesPrepared(e.code())).as(e.cName())
                    .isEqualTo(e == PtoError.BUSY || e == PtoError.POISONED);
        }
        table.beginLaunch(r);
        assertThat(table.launchFailed(0, PtoError.KERNEL_FAULT.code(), "task 3")).isTrue();
        assertThat(table.phaseOf(0)).isEqualTo(Phase.COMPLETE);
        SlotTable.Finalizing f = table.beginFinalize(r);
        assertThat(f.waitResult()).isEqualTo(PtoError.KERNEL_FAULT.code());
        assertThat(f.waitMessage()).isEqualTo("task 3");
    }

    @Test
    void eachCallIsRefusedOutsideItsPhases() {
        NativeRun p = prepared(0);
        assertThatThrownBy(() -> table.beginObserve(p, "poll")).isInstanceOf(StaleRunException.class)
                .hasMessageContaining("poll refused: the token is " + SlotTable.WRONG_PHASE)
                .hasMessageContaining("the run is PREPARED");
        assertThatThrownBy(() -> table.beginObserve(p, "await")).isInstanceOf(StaleRunException.class);
        table.beginLaunch(p);
        table.launched(0);
        assertThatThrownBy(() -> table.beginLaunch(p)).isInstanceOf(StaleRunException.class)
                .hasMessageContaining("the run is RUNNING");
        assertThat(table.beginFinalize(p).previous()).isEqualTo(Phase.RUNNING);
        table.emptied(0);
        NativeRun q = prepared(0);
        assertThat(table.beginFinalize(q).previous()).as("a never launched run is finalizable")
                .isEqualTo(Phase.PREPARED);
        table.emptied(0);
    }

    @Test
    void aCallInFlightOwnsItsSlot() {
        NativeRun r = prepared(0);
        table.beginLaunch(r);
        assertThatThrownBy(() -> table.beginLaunch(r)).hasMessageContaining("another call on this run is in progress");
        assertThatThrownBy(() -> table.beginFinalize(r)).hasMessageContaining("another call on this run is in progress");
        table.launched(0);
        assertThat(table.beginObserve(r, "poll")).isTrue();
        assertThatThrownBy(() -> table.beginObserve(r, "await"))
                .hasMessageContaining("another call on this run is in progress (phase RUNNING)");
        table.polled(0, false);
        // an end without a begun call is a bug of the caller
        assertThatThrownBy(() -> table.polled(0, true)).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> table.launched(0)).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> table.emptied(0)).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void staleAndForgedTokensAreRefused() {
        NativeRun r = prepared(0);
        NativeRun forged = new NativeRun(0, 1, r.runEpoch() + 1, 1, 1);
        assertThatThrownBy(() -> table.beginLaunch(forged)).isInstanceOf(StaleRunException.class)
                .hasMessageContaining("slot 0 holds run_epoch=" + r.runEpoch());
        assertThatThrownBy(() -> table.beginLaunch(new NativeRun(5, 1, 7, 1, 1)))
                .hasMessageContaining("no slot 5 holds run_epoch=7 on chip test");
        assertThatThrownBy(() -> table.beginLaunch(new NativeRun(0, 0, 0, 1, 1)))
                .as("epoch 0 names no run").isInstanceOf(StaleRunException.class);
        assertThatThrownBy(() -> table.beginLaunch(null)).isInstanceOf(NullPointerException.class);
    }

    @Test
    void admissionRefusesAnOccupiedSlotAndAnInadmissiblePredecessor() {
        NativeRun first = prepared(0);
        assertThatThrownBy(() -> table.admit(run(0, 1), NONE, true, 1000)).isInstanceOf(ChipBusyException.class)
                .hasMessageContaining(SlotTable.SLOT_OCCUPIED).hasMessageContaining("in phase PREPARED");
        assertThatThrownBy(() -> table.admit(run(1, 1), NONE, true, 1000)).isInstanceOf(ChipBusyException.class)
                .hasMessageContaining(SlotTable.NO_PREDECESSOR).hasMessageContaining("slot 0 is PREPARED");
        table.beginLaunch(first);
        table.launched(0);
        assertThatThrownBy(() -> table.admit(run(1, 1), "this run has a diagnostic on", true, 1000))
                .hasMessageContaining(SlotTable.NO_PREDECESSOR).hasMessageContaining("this run has a diagnostic on");
        table.admit(run(1, 1), NONE, true, 1000);
        assertThat(table.phaseOf(1)).as("a RUNNING predecessor admits a successor").isEqualTo(Phase.PREPARING);
        table.emptied(1);
        assertThat(table.phaseOf(1)).isEqualTo(Phase.EMPTY);
    }

    @Test
    void aPredecessorThatAdmitsNoSuccessorRefusesOne() {
        NativeRun lone = run(0, 1);
        table.admit(lone, "a cannot prepare while a run executes", true, 1000);
        table.prepared(0);
        table.beginLaunch(lone);
        table.launched(0);
        assertThatThrownBy(() -> table.admit(run(1, 1), NONE, true, 1000))
                .hasMessageContaining("slot 0 is RUNNING, admits no successor");
    }

    @Test
    void theGenerationFilterRejectsOnlyOlderGenerationsPerSlot() {
        admitAndEmpty(0, 1);
        admitAndEmpty(0, 1); // equal: one lease may carry several runs
        admitAndEmpty(0, 3);
        assertThatThrownBy(() -> table.admit(run(0, 2), NONE, true, 1000)).isInstanceOf(LeaseRejectedException.class)
                .hasMessageContaining(SlotTable.STALE_GENERATION).hasMessageContaining("has seen generation 3");
        assertThat(table.phaseOf(0)).isEqualTo(Phase.EMPTY);
        assertThat(table.newestGeneration(0)).isEqualTo(3);
        admitAndEmpty(1, 1); // slots are independent
        admitAndEmpty(0, -1L); // u64 order
        assertThatThrownBy(() -> table.admit(run(0, Long.MAX_VALUE), NONE, true, 1000))
                .isInstanceOf(LeaseRejectedException.class);
        table.admit(run(0, 1), NONE, false, 1000);
        assertThat(table.phaseOf(0)).as("an unfiltered (unleased) run passes").isEqualTo(Phase.PREPARING);
    }

    @Test
    void leasesMintedByThePoolPassTheFilterAndSupersededOnesDoNot() {
        PipelineSlotPool pool = new PipelineSlotPool(2);
        PipelineSlotLease first = pool.tryAcquire().orElseThrow();
        admitAndEmpty(first.slotId(), first.generation());
        pool.release(first);
        PipelineSlotLease second = pool.tryAcquire().orElseThrow();
        admitAndEmpty(second.slotId(), second.generation());
        assertThatThrownBy(() -> table.admit(run(first.slotId(), first.generation()), NONE, true, 1000))
                .isInstanceOf(LeaseRejectedException.class);
    }

    private void admitAndEmpty(int slot, long generation) {
        table.admit(run(slot, generation), NONE, true, 1000);
        table.emptied(slot);
    }

    @Test
    void closeRefusesNewCallsAndBeginsTheFinalizeOfEveryOutstandingRun() {
        NativeRun r = running(0);
        NativeRun next = run(1, 1);
        table.admit(next, NONE, true, 1000);
        table.prepared(1);
        SlotTable.Closing closing = table.beginClose(10);
        assertThat(closing.midCall()).isEmpty();
        assertThat(closing.outstanding()).extracting(SlotTable.Finalizing::previous)
                .containsExactly(Phase.RUNNING, Phase.PREPARED);
        assertThat(table.phaseOf(0)).isEqualTo(Phase.FINALIZING);
        assertThat(table.isOpen()).isFalse();
        assertThat(table.beginClose(10)).as("once").isNull();
        assertThatThrownBy(() -> table.beginObserve(r, "poll")).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("chip test is closed");
        assertThatThrownBy(() -> table.admit(run(0, 1), NONE, true, 1000)).isInstanceOf(IllegalStateException.class);
        table.emptied(0);
        table.emptied(1);
        table.closed();
        assertThat(table.isOpen()).isFalse();
    }

    @Test
    void closeWaitsForACallInFlightUntilItEnds() throws Exception {
        NativeRun r = prepared(0);
        table.beginLaunch(r);
        CountDownLatch waiting = new CountDownLatch(1);
        table.onCloseWaits(waiting::countDown);
        Thread caller = new Thread(() -> {
            try {
                waiting.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            table.launched(0);
        });
        caller.start();
        SlotTable.Closing closing = table.beginClose(60_000);
        caller.join(TimeUnit.SECONDS.toMillis(30));
        assertThat(closing.midCall()).as("the launch returned before close went on").isEmpty();
        assertThat(closing.outstanding()).extracting(SlotTable.Finalizing::previous).containsExactly(Phase.RUNNING);
    }

    @Test
    void closeGivesUpOnACallThatOutlivesItsBound() {
        NativeRun r = run(0, 1);
        table.admit(r, NONE, true, 0);
        SlotTable.Closing closing = table.beginClose(0);
        assertThat(closing.outstanding()).isEmpty();
        assertThat(closing.midCall()).containsExactly(new SlotTable.MidCall(0, Phase.PREPARING, r, 0));
    }
}

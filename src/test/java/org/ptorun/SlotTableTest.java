package org.ptorun;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.EnumMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;
import org.junit.jupiter.api.Test;
import org.ptorun.SlotTable.Phase;
import org.ptorun.SlotTable.Step;

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

    /** The whole table: (phase, step) → next phase; a pair not listed has no path. */
    private static Map<Phase, Map<Step, Phase>> paths() {
        Map<Phase, Map<Step, Phase>> t = new EnumMap<>(Phase.class);
        for (Phase p : Phase.values()) {
            t.put(p, new EnumMap<>(Step.class));
        }
        t.get(Phase.EMPTY).put(Step.ADMIT, Phase.PREPARING);
        t.get(Phase.EMPTY).put(Step.ADMIT_ALONE, Phase.PREPARING);
        t.get(Phase.PREPARING).put(Step.PREPARE_OK, Phase.PREPARED);
        t.get(Phase.PREPARING).put(Step.EMPTIED, Phase.EMPTY);
        t.get(Phase.PREPARED).put(Step.LAUNCH, Phase.LAUNCHING);
        t.get(Phase.LAUNCHING).put(Step.LAUNCH_OK, Phase.RUNNING);
        t.get(Phase.LAUNCHING).put(Step.LAUNCH_REFUSED, Phase.PREPARED);
        t.get(Phase.LAUNCHING).put(Step.LAUNCH_FAILED, Phase.ENDED);
        t.get(Phase.RUNNING).put(Step.OBSERVE, Phase.RUNNING);
        t.get(Phase.RUNNING).put(Step.STILL_RUNNING, Phase.RUNNING);
        t.get(Phase.RUNNING).put(Step.RUN_ENDED, Phase.ENDED);
        t.get(Phase.ENDED).put(Step.OBSERVE, Phase.ENDED);
        for (Phase p : List.of(Phase.PREPARED, Phase.RUNNING, Phase.ENDED)) {
            t.get(p).put(Step.FINALIZE, Phase.FINALIZING);
            t.get(p).put(Step.CLOSE, Phase.FINALIZING);
        }
        t.get(Phase.FINALIZING).put(Step.EMPTIED, Phase.EMPTY);
        return t;
    }

    @Test
    void everyPathOfThePhaseTableLeadsWhereItSaysAndNoOtherExists() {
        int allowed = 0;
        int refused = 0;
        for (Phase p : Phase.values()) {
            for (Step step : Step.values()) {
                Phase expected = paths().get(p).get(step);
                assertThat(p.after(step)).as("%s after %s", p, step).isEqualTo(expected);
                if (expected != null) {
                    allowed++;
                } else {
                    refused++;
                }
            }
        }
        assertThat(allowed).isEqualTo(2 + 2 + 3 + 3 + 5 + 3 + 1);
        assertThat(allowed + refused).isEqualTo(Phase.values().length * Step.values().length);
    }

    /** Where one trial starts slot 0: its phase, whether a call holds it. */
    private enum Start {
        EMPTY(Phase.EMPTY, false), PREPARING(Phase.PREPARING, true), PREPARED(Phase.PREPARED, false),
        LAUNCHING(Phase.LAUNCHING, true), RUNNING(Phase.RUNNING, false), OBSERVING(Phase.RUNNING, true),
        ENDED(Phase.ENDED, false), FINALIZING(Phase.FINALIZING, true);

        final Phase phase;
        final boolean inCall;

        Start(Phase phase, boolean inCall) {
            this.phase = phase;
            this.inCall = inCall;
        }

        /** Drives a fresh table's slot 0 here with the run {@code r} (timeout 0: close never waits). */
        void reach(SlotTable t, NativeRun r) {
            if (this == EMPTY) {
                return;
            }
            t.admit(r, NONE, true, 0);
            if (this == PREPARING) {
                return;
            }
            t.prepared(0);
            if (this == FINALIZING) {
                t.beginFinalize(r);
                return;
            }
            if (this == PREPARED) {
                return;
            }
            t.beginLaunch(r);
            if (this == LAUNCHING) {
                return;
            }
            t.launched(0);
            if (this == RUNNING) {
                return;
            }
            assertThat(t.beginObserve(r, "poll")).isTrue();
            if (this == ENDED) {
                t.polled(0, true);
            }
        }
    }

    /** A call of the table's API, and the step it takes. */
    private record Act(String name, Step step, BiConsumer<SlotTable, NativeRun> call) {
    }

    private static final NativeRun ADMITTED = new NativeRun(0, 2, 500, 500, 500);

    private static List<Act> acts() {
        return List.of(
                new Act("admit", Step.ADMIT, (t, r) -> t.admit(ADMITTED, NONE, true, 0)),
                new Act("admit alone", Step.ADMIT_ALONE, (t, r) -> t.admit(ADMITTED, "alone", true, 0)),
                new Act("beginLaunch", Step.LAUNCH, SlotTable::beginLaunch),
                new Act("beginObserve", Step.OBSERVE, (t, r) -> t.beginObserve(r, "poll")),
                new Act("beginFinalize", Step.FINALIZE, SlotTable::beginFinalize),
                new Act("beginClose", Step.CLOSE, (t, r) -> t.beginClose(0)),
                new Act("prepared", Step.PREPARE_OK, (t, r) -> t.prepared(0)),
                new Act("launched", Step.LAUNCH_OK, (t, r) -> t.launched(0)),
                new Act("launchFailed BUSY", Step.LAUNCH_REFUSED,
                        (t, r) -> assertThat(t.launchFailed(0, PtoError.BUSY.code(), "busy")).isFalse()),
                new Act("launchAborted", Step.LAUNCH_REFUSED, (t, r) -> t.launchAborted(0)),
                new Act("launchFailed KERNEL_FAULT", Step.LAUNCH_FAILED,
                        (t, r) -> assertThat(t.launchFailed(0, PtoError.KERNEL_FAULT.code(), "fault")).isTrue()),
                new Act("polled not ended", Step.STILL_RUNNING, (t, r) -> t.polled(0, false)),
                new Act("polled ended", Step.RUN_ENDED, (t, r) -> t.polled(0, true)),
                new Act("awaited", Step.RUN_ENDED, (t, r) -> t.awaited(0, 0, null)),
                new Act("emptied", Step.EMPTIED, (t, r) -> t.emptied(0)));
    }

    /**
     * Every call of the table's API from every state a slot can be in: a begin moves a slot
     * with no call in flight, an end the slot whose call is in flight, each exactly as
     * {@link Phase#after} says; everything else is refused and changes nothing.
     */
    @Test
    void everyCallMovesASlotAsTheTableSaysFromEveryStateAndEveryOtherIsRefused() {
        Set<String> walked = new HashSet<>();
        for (Start start : Start.values()) {
            for (Act act : acts()) {
                SlotTable t = new SlotTable(2, "chip test");
                NativeRun r = run(0, 1);
                start.reach(t, r);
                Phase to = paths().get(start.phase).get(act.step());
                boolean legal = to != null && start.inCall != act.step().begins;
                String trial = act.name() + " from " + start;
                if (act.step() == Step.CLOSE) {
                    SlotTable.Closing closing = t.beginClose(0);
                    assertThat(closing.outstanding()).as(trial).hasSize(legal ? 1 : 0);
                    assertThat(closing.midCall()).as(trial).hasSize(start.inCall ? 1 : 0);
                    assertThat(t.phaseOf(0)).as(trial).isEqualTo(legal ? to : start.phase);
                } else if (!legal) {
                    Class<? extends RuntimeException> refusal = !act.step().begins ? IllegalStateException.class
                            : act.step() == Step.ADMIT || act.step() == Step.ADMIT_ALONE ? ChipBusyException.class
                            : StaleRunException.class;
                    assertThatThrownBy(() -> act.call().accept(t, r)).as(trial).isInstanceOf(refusal);
                    assertThat(t.phaseOf(0)).as(trial).isEqualTo(start.phase);
                    // nothing changed: the slot's call is still in flight, or still none
                    NativeRun holder = start == Start.EMPTY ? null : r;
                    if (holder != null && start.inCall) {
                        assertThatThrownBy(() -> t.beginFinalize(holder)).as(trial)
                                .hasMessageContaining("another call on this run is in progress");
                    }
                } else {
                    act.call().accept(t, r);
                    assertThat(t.phaseOf(0)).as(trial).isEqualTo(to);
                    NativeRun holder = act.step() == Step.ADMIT || act.step() == Step.ADMIT_ALONE ? ADMITTED : r;
                    boolean callAfter = act.step().begins && to != Phase.ENDED;
                    if (callAfter) {
                        assertThatThrownBy(() -> t.beginFinalize(holder)).as(trial)
                                .hasMessageContaining("another call on this run is in progress");
                    } else if (to == Phase.EMPTY) {
                        assertThatThrownBy(() -> t.beginFinalize(holder)).as(trial)
                                .hasMessageContaining("holds no run");
                    } else {
                        assertThat(t.beginFinalize(holder).previous()).as(trial).isEqualTo(to);
                    }
                }
                if (legal) {
                    walked.add(start.phase + " " + act.step());
                }
            }
        }
        Set<String> every = new HashSet<>();
        paths().forEach((p, steps) -> steps.keySet().forEach(step -> every.add(p + " " + step)));
        assertThat(walked).as("every path of the table was taken").isEqualTo(every);
    }

    @Test
    void aRefusedEndSaysWhatTheSlotIsAndWhatTheStepNeeds() {
        NativeRun r = running(0);
        assertThatThrownBy(() -> table.launched(0)).isInstanceOf(IllegalStateException.class)
                .hasMessage("slot 0 is RUNNING with no call, expected a call in flight in LAUNCHING for LAUNCH_OK");
        assertThatThrownBy(() -> table.emptied(0)).hasMessage(
                "slot 0 is RUNNING with no call, expected a call in flight in PREPARING or FINALIZING for EMPTIED");
        table.beginObserve(r, "await");
        assertThatThrownBy(() -> table.prepared(0)).hasMessage(
                "slot 0 is RUNNING with a call in flight, expected a call in flight in PREPARING for PREPARE_OK");
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
        assertThat(table.phaseOf(0)).isEqualTo(Phase.ENDED);
        assertThat(table.beginObserve(r, "poll")).as("ENDED needs no native call").isFalse();
        SlotTable.Finalizing f = table.beginFinalize(r);
        assertThat(f.previous()).isEqualTo(Phase.ENDED);
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
        assertThat(table.phaseOf(0)).isEqualTo(Phase.ENDED);
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
        assertThat(table.phaseOf(0)).isEqualTo(Phase.ENDED);
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

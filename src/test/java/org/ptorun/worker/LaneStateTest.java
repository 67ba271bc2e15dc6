package org.ptorun.worker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.ptorun.worker.LaneState.CLOSED;
import static org.ptorun.worker.LaneState.IDLE;
import static org.ptorun.worker.LaneState.PIPELINED;
import static org.ptorun.worker.LaneState.POISONED;
import static org.ptorun.worker.LaneState.PREPARED;
import static org.ptorun.worker.LaneState.LAUNCHED;
import static org.ptorun.worker.LaneState.LAUNCHED_ALONE;
import static org.ptorun.worker.LaneState.Event.ABANDON;
import static org.ptorun.worker.LaneState.Event.CLOSE;
import static org.ptorun.worker.LaneState.Event.FAIL;
import static org.ptorun.worker.LaneState.Event.FINALIZE;
import static org.ptorun.worker.LaneState.Event.LAUNCH;
import static org.ptorun.worker.LaneState.Event.LAUNCH_ALONE;
import static org.ptorun.worker.LaneState.Event.POISON;
import static org.ptorun.worker.LaneState.Event.PREPARE;
import static org.ptorun.worker.LaneState.Event.STAGE;
import static org.ptorun.worker.LaneState.Event.STOP_STAGING;

import java.util.EnumMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The chip lane's state machine on its own: every transition it has, and every other refused. */
class LaneStateTest {

    /** The whole table: (state, event) → next state; a pair not listed has no transition. */
    private static Map<LaneState, Map<LaneState.Event, LaneState>> table() {
        Map<LaneState, Map<LaneState.Event, LaneState>> t = new EnumMap<>(LaneState.class);
        for (LaneState s : LaneState.values()) {
            t.put(s, new EnumMap<>(LaneState.Event.class));
        }
        t.get(IDLE).put(PREPARE, PREPARED);
        t.get(IDLE).put(POISON, POISONED);
        t.get(PREPARED).put(LAUNCH, LAUNCHED);
        t.get(PREPARED).put(LAUNCH_ALONE, LAUNCHED_ALONE);
        t.get(PREPARED).put(ABANDON, IDLE);
        t.get(LAUNCHED).put(STAGE, PIPELINED);
        t.get(LAUNCHED).put(STOP_STAGING, LAUNCHED_ALONE);
        t.get(LAUNCHED).put(FINALIZE, IDLE);
        t.get(LAUNCHED_ALONE).put(FINALIZE, IDLE);
        t.get(PIPELINED).put(FINALIZE, PREPARED);
        t.get(PIPELINED).put(ABANDON, LAUNCHED_ALONE);
        for (LaneState s : LaneState.values()) {
            if (s != CLOSED) {
                t.get(s).put(FAIL, POISONED);
                t.get(s).put(CLOSE, CLOSED);
            }
        }
        return t;
    }

    @Test
    void everyTransitionOfTheTableLeadsWhereItSaysAndEveryOtherIsRefused() {
        int allowed = 0;
        int refused = 0;
        for (LaneState s : LaneState.values()) {
            for (LaneState.Event e : LaneState.Event.values()) {
                LaneState expected = table().get(s).get(e);
                if (expected != null) {
                    assertThat(s.on(e)).as("%s on %s", s, e).isEqualTo(expected);
                    allowed++;
                } else {
                    assertThatThrownBy(() -> s.on(e)).as("%s on %s", s, e)
                            .isInstanceOf(IllegalStateException.class)
                            .hasMessage("a lane in state " + s + " has no transition " + e);
                    refused++;
                }
            }
        }
        assertThat(allowed).isEqualTo(11 + 2 * 6);
        assertThat(allowed + refused).isEqualTo(LaneState.values().length * LaneState.Event.values().length);
    }

    @Test
    void aPipelinedRunAndItsSuccessorGoRoundTheCycleBackToIdle() {
        LaneState s = IDLE.on(PREPARE).on(LAUNCH).on(STAGE).on(FINALIZE);
        assertThat(s).as("the successor is prepared once its predecessor is finalized").isEqualTo(PREPARED);
        assertThat(s.on(LAUNCH).on(FINALIZE)).isEqualTo(IDLE);
        assertThat(IDLE.on(PREPARE).on(LAUNCH).on(STAGE).on(ABANDON).on(FINALIZE)).as("cancelled successor")
                .isEqualTo(IDLE);
    }

    @Test
    void onlyTheRunningStatesHoldALaunchedRun() {
        for (LaneState s : LaneState.values()) {
            assertThat(s.holdsLaunchedRun()).as("%s", s)
                    .isEqualTo(s == LAUNCHED || s == LAUNCHED_ALONE || s == PIPELINED);
        }
    }

    @Test
    void closedIsTerminalAndPoisonedOnlyClosesOrFailsAgain() {
        for (LaneState.Event e : LaneState.Event.values()) {
            assertThatThrownBy(() -> CLOSED.on(e)).isInstanceOf(IllegalStateException.class);
            if (e != CLOSE && e != FAIL) {
                assertThatThrownBy(() -> POISONED.on(e)).isInstanceOf(IllegalStateException.class);
            }
        }
    }
}

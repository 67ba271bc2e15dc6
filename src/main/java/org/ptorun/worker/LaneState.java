package org.ptorun.worker;

/**
 * The state of one chip's lane: what the chip holds of the Worker's runs. Changed only
 * by the lane's driver, only through {@link #on(Event)} (who the driver is, and which
 * native calls it alone makes: {@link ChipLane}).
 *
 * <p>{@code IDLE}: the chip holds no run of the lane. {@code PREPARED}: one run is
 * prepared and not launched, none is running (the next step launches or abandons it).
 * {@code LAUNCHED}: one run is launched and not yet finalized, no successor is prepared,
 * and one may still be staged. {@code LAUNCHED_ALONE}: as {@code LAUNCHED}, but nothing is
 * staged behind this run (no overlap, a diagnostic run, the chip refused the
 * successor, or the Worker is cancelling). {@code PIPELINED}: one run launched and its
 * successor prepared; the successor launches only after the running run is finalized
 * ({@code FINALIZE} leads to {@code PREPARED}). {@code POISONED}: the chip is unhealthy
 * (or its driver failed) and holds no run of the lane; queued runs fail fast.
 * {@code CLOSED}: the chip is closed; terminal. Every transition is listed in
 * {@link #on(Event)}, once; any other is refused with {@link IllegalStateException}.
 */
enum LaneState {
    IDLE, PREPARED, LAUNCHED, LAUNCHED_ALONE, PIPELINED, POISONED, CLOSED;

    /** What the lane's driver did. */
    enum Event {
        /** A queued run was prepared (from IDLE). */
        PREPARE,
        /** The prepared run was launched and a successor may be staged behind it. */
        LAUNCH,
        /** The prepared run was launched; nothing will be staged behind it. */
        LAUNCH_ALONE,
        /** The prepared, unlaunched run (PREPARED) or the staged successor (PIPELINED) was finalized without launch. */
        ABANDON,
        /** A successor was prepared while the running run executes. */
        STAGE,
        /** No successor will be staged behind the running run. */
        STOP_STAGING,
        /** The running run was finalized. */
        FINALIZE,
        /** The chip was found unhealthy while holding no run. */
        POISON,
        /**
         * The driver met an error it has no transition for (a bug, or the library broke its
         * contract) and failed every run the lane held: from any state but CLOSED.
         */
        FAIL,
        /** The chip was closed (whatever the lane held was completed by the close): from any state but CLOSED. */
        CLOSE
    }

    /** The state after {@code e}; refuses a transition the lane does not have. */
    LaneState on(Event e) {
        LaneState next = this == CLOSED ? null : switch (e) {
            case FAIL -> POISONED;
            case CLOSE -> CLOSED;
            default -> switch (this) {
                case IDLE -> switch (e) {
                    case PREPARE -> PREPARED;
                    case POISON -> POISONED;
                    default -> null;
                };
                case PREPARED -> switch (e) {
                    case LAUNCH -> LAUNCHED;
                    case LAUNCH_ALONE -> LAUNCHED_ALONE;
                    case ABANDON -> IDLE;
                    default -> null;
                };
                case LAUNCHED -> switch (e) {
                    case STAGE -> PIPELINED;
                    case STOP_STAGING -> LAUNCHED_ALONE;
                    case FINALIZE -> IDLE;
                    default -> null;
                };
                case LAUNCHED_ALONE -> e == Event.FINALIZE ? IDLE : null;
                case PIPELINED -> switch (e) {
                    case FINALIZE -> PREPARED;
                    case ABANDON -> LAUNCHED_ALONE;
                    default -> null;
                };
                case POISONED, CLOSED -> null;
            };
        };
        if (next == null) {
            throw new IllegalStateException("a lane in state " + this + " has no transition " + e);
        }
        return next;
    }

    /** True while a launched run of the lane is not yet finalized. */
    boolean holdsLaunchedRun() {
        return this == LAUNCHED || this == LAUNCHED_ALONE || this == PIPELINED;
    }
}

package org.ptorun;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.FlightRecorder;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;
import jdk.jfr.Timespan;

/**
 * JDK Flight Recorder events of a native run's phases (docs/java.md, Logging and
 * observability): {@code org.ptorun.Prepare}, {@code org.ptorun.Launch} and
 * {@code org.ptorun.Finalize} span their call; {@code org.ptorun.Completion} marks the
 * moment the run was seen to end, with the time since its launch returned. Every
 * event carries the run's identity.
 *
 * <p>Without a recording that enables them they cost one check each and allocate
 * nothing: the factories below return {@code null} then (the JIT does not remove an
 * event object on its own — measured 144 bytes per run cycle).
 *
 * <p>Before the JVM's Flight Recorder is initialized (no {@code -XX:StartFlightRecording},
 * no {@code jcmd JFR.start}, no {@code Recording} or {@code RecordingStream} created) no
 * event class is initialized either: the first {@code isEnabled()} of an event class
 * starts JFR's metadata repository and generates its handler, 120–470 ms of a fresh
 * JVM's first prepare (docs/performance.md, P10). {@link FlightRecorder#isInitialized()}
 * is a static flag read, and it turns true for good when a recording is started, so the
 * events appear from the first run after that.
 */
final class RunEvents {

    private RunEvents() {
    }

    /** True once a Flight Recorder recording may want run events (a static flag read). */
    static boolean recording() {
        return FlightRecorder.isInitialized();
    }

    /** A begun Prepare event, or null when no recording wants it. */
    static Prepare beginPrepare() {
        return FlightRecorder.isInitialized() && Probes.PREPARE.isEnabled() ? begun(new Prepare()) : null;
    }

    static Launch beginLaunch() {
        return FlightRecorder.isInitialized() && Probes.LAUNCH.isEnabled() ? begun(new Launch()) : null;
    }

    static Finalize beginFinalize() {
        return FlightRecorder.isInitialized() && Probes.FINALIZE.isEnabled() ? begun(new Finalize()) : null;
    }

    /** An instant Completion event, or null when no recording wants it. */
    static Completion completion() {
        return FlightRecorder.isInitialized() && Probes.COMPLETION.isEnabled() ? new Completion() : null;
    }

    private static <E extends Event> E begun(E event) {
        event.begin();
        return event;
    }

    /** Read-only probes (Event.isEnabled() touches no state of the instance), created with the recorder. */
    private static final class Probes {
        static final Prepare PREPARE = new Prepare();
        static final Launch LAUNCH = new Launch();
        static final Completion COMPLETION = new Completion();
        static final Finalize FINALIZE = new Finalize();
    }

    /** Commits {@code event} (may be null) for the run. */
    static void commit(RunEvent event, ChipDevice chip, NativeRun run, int code) {
        if (event != null) {
            event.commitFor(chip, run, code);
        }
    }

    /** The identity every run event carries. */
    @Category({"ptorun", "Run"})
    @StackTrace(false)
    abstract static class RunEvent extends Event {
        @Label("Variant")
        String variant;

        @Label("Device Id")
        int deviceId;

        @Label("Pipeline Slot")
        int slot;

        @Label("Run Id")
        long runId;

        @Label("Dispatch Id")
        long dispatchId;

        @Label("Run Epoch")
        @Description("Process-unique epoch of the run (0 for an unleased blocking run)")
        long runEpoch;

        @Label("Result")
        @Description("OK, or the name of the native error code")
        String result;

        /** Commits if the recording wants it; the fields are filled only then. */
        final void commitFor(ChipDevice chip, NativeRun run, int code) {
            if (shouldCommit()) {
                variant = chip.variant().toString();
                deviceId = chip.deviceId();
                slot = run.slot();
                runId = run.runId();
                dispatchId = run.dispatchId();
                runEpoch = run.runEpoch();
                result = code == 0 ? "OK" : PtoError.nameOf(code);
                commit();
            }
        }
    }

    @Name("org.ptorun.Prepare")
    @Label("Native Run Prepare")
    static final class Prepare extends RunEvent {
        @Label("Callable Id")
        int callableId;
    }

    @Name("org.ptorun.Launch")
    @Label("Native Run Launch")
    @Description("From the launch call until the run crossed its launch marker (or failed before it)")
    static final class Launch extends RunEvent {
    }

    @Name("org.ptorun.Completion")
    @Label("Native Run Completion")
    @Description("The run was seen to end (poll, await or finalize)")
    static final class Completion extends RunEvent {
        @Label("Since Launch")
        @Description("From the end of the launch call to the moment the run was seen to end; -1 when the"
                + " run was launched before Flight Recorder started")
        @Timespan(Timespan.NANOSECONDS)
        long sinceLaunch;
    }

    @Name("org.ptorun.Finalize")
    @Label("Native Run Finalize")
    @Description("Drain, copy-back and release of the run")
    static final class Finalize extends RunEvent {
    }
}

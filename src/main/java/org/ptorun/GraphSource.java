package org.ptorun;

/**
 * How a run's prepare got its task graph ({@link RunReport#graphSource()}; docs/recorded-graphs.md).
 *
 * <p>On hbg a program's graph (a callable registered with a {@code Program}, not an
 * orchestration library) is recorded at its first prepare and replayed by every later
 * prepare of the same callable with the same argument geometry — tensor count and sizes,
 * which arguments live in device memory and how those overlap, scalar count: that prepare
 * binds the arguments' addresses and scalar values and builds nothing. trb does the same
 * in its device-side orchestration (docs/recorded-graphs.md, trb): the first run of a
 * geometry records the graph as the device builds it, kept once the run succeeded; later
 * runs replay it on the device instead of interpreting the program.
 */
public enum GraphSource {
    /** The orchestration built the run's graph and it was not recorded (an orchestration
     *  library's, a geometry whose recording a running run still held, a graph too large to
     *  record or whose recording device memory could not hold, a run that failed). */
    BUILT,
    /** The orchestration built the run's graph and recorded it for later runs. */
    RECORDED,
    /** The run's arguments were bound to the callable's recorded graph (hbg: in prepare;
     *  trb: the device replayed it). */
    REPLAYED;

    /** The library's {@code PTO_RUN_GRAPH_*} code; an unknown one reads as BUILT. */
    static GraphSource of(int code) {
        return switch (code) {
            case org.ptorun.internal.NativeConstants.PTO_RUN_GRAPH_RECORDED -> RECORDED;
            case org.ptorun.internal.NativeConstants.PTO_RUN_GRAPH_REPLAYED -> REPLAYED;
            default -> BUILT;
        };
    }
}

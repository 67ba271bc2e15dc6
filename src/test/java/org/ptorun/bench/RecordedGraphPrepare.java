package org.ptorun.bench;

import static org.ptorun.callable.Direction.IN;
import static org.ptorun.callable.Direction.INOUT;

import java.util.Arrays;
import org.ptorun.CallConfig;
import org.ptorun.ChipWorker;
import org.ptorun.DType;
import org.ptorun.DeviceBuffer;
import org.ptorun.GraphSource;
import org.ptorun.HostRuntime;
import org.ptorun.NativeRun;
import org.ptorun.PipelineSlotLease;
import org.ptorun.RunReport;
import org.ptorun.TaskArgs;
import org.ptorun.Tensor;
import org.ptorun.TrbFigures;
import org.ptorun.Variant;
import org.ptorun.callable.ChipCallable;
import org.ptorun.callable.Kernel;
import org.ptorun.callable.Param;
import org.ptorun.callable.Program;

/**
 * P13: the prepare of a {@value #TASKS}-task program on its first run (the orchestration
 * interprets the program, infers every dependency and records the graph) against its later
 * runs (the recording is replayed: the arguments are bound), in one JVM (the suite starts
 * it as a child: {@code <variant>}). The program is a chain z += x over {@value #FLOATS}
 * floats, x and z device buffers (nothing staged, so prepare is the graph's work only).
 * Each of {@value #ROUNDS} rounds registers the callable afresh (a new registration records
 * afresh), times its first prepare, runs it, then times {@value #REPLAYS} prepares of
 * later runs; the line printed holds the medians in ns: {@code first=… replay=…}, and the
 * graph sources seen. P13 = replay / first.
 *
 * <p>On trb (sim) the graph is built, recorded and replayed in the device-side orchestration,
 * not in prepare: there the figures are the device orchestration times (the orchestrator
 * thread's CPU time, {@link TrbFigures}) of the first run and of the replayed runs, with
 * ring 0's window and dependency pool holding every task so that the orchestrator never
 * waits for the kernels; the prepare medians follow on a line of their own
 * ({@code prepareFirst=… prepareReplay=…}).
 */
public final class RecordedGraphPrepare {

    static final int TASKS = 16384;
    static final int FLOATS = 512;
    static final int ROUNDS = 9;
    static final int REPLAYS = 15;
    private static final int ID = 13;

    private RecordedGraphPrepare() {
    }

    static ChipCallable chain() {
        long bytes = 4L * FLOATS;
        Program program = Program.builder()
                .loop(TASKS, (p, i) -> p.submit(0, Param.tensor(0, IN, 0, bytes), Param.tensor(1, INOUT, 0, bytes)))
                .build();
        return ChipCallable.builder().signature(IN, INOUT).child(0, Kernel.tileAdd()).program(program).build();
    }

    public static void main(String[] args) {
        Variant variant = Variant.parse(args[0]);
        boolean deviceOrchestration = variant.runtime() == Variant.RuntimeKind.TRB;
        CallConfig config = deviceOrchestration
                ? CallConfig.builder().ringTaskWindow(0, 2L * TASKS).ringDepPool(0, 2L * TASKS).build()
                : CallConfig.DEFAULT;
        long[] first = new long[ROUNDS];
        long[] replay = new long[ROUNDS * REPLAYS];
        long[] orchFirst = new long[ROUNDS];
        long[] orchReplay = new long[ROUNDS * REPLAYS];
        GraphSource firstSource = null;
        GraphSource replaySource = null;
        try (ChipWorker chip = ChipWorker.open(HostRuntime.load(variant), 0)) {
            DeviceBuffer x = chip.malloc(4L * FLOATS);
            DeviceBuffer z = chip.malloc(4L * FLOATS);
            chip.copyTo(x, new float[FLOATS]);
            chip.copyTo(z, new float[FLOATS]);
            TaskArgs taskArgs = TaskArgs.of(Tensor.of(x, DType.F32), Tensor.of(z, DType.F32));
            ChipCallable callable = chain();
            long runId = 1;
            for (int r = 0; r < ROUNDS; r++) {
                chip.registerCallable(ID, callable);
                for (int k = 0; k <= REPLAYS; k++) {
                    long t0 = System.nanoTime();
                    NativeRun run = chip.prepare(ID, taskArgs, config, PipelineSlotLease.of(0, 1), runId, runId,
                            null);
                    long prepare = System.nanoTime() - t0;
                    runId++;
                    chip.launch(run);
                    RunReport report = chip.finalizeRun(run);
                    long orchestration = deviceOrchestration ? TrbFigures.lastOrchestrationNanos(chip, variant, 0) : 0;
                    if (k == 0) {
                        first[r] = prepare;
                        orchFirst[r] = orchestration;
                        firstSource = report.graphSource();
                    } else {
                        replay[r * REPLAYS + k - 1] = prepare;
                        orchReplay[r * REPLAYS + k - 1] = orchestration;
                        replaySource = report.graphSource();
                    }
                }
                chip.unregisterCallable(ID);
            }
            chip.free(x);
            chip.free(z);
        }
        if (deviceOrchestration) {
            System.out.println("first=" + median(orchFirst) + " replay=" + median(orchReplay));
            System.out.println("prepareFirst=" + median(first) + " prepareReplay=" + median(replay));
        } else {
            System.out.println("first=" + median(first) + " replay=" + median(replay));
        }
        System.out.println("sources: first " + firstSource + ", later " + replaySource);
    }

    private static long median(long[] samples) {
        long[] s = samples.clone();
        Arrays.sort(s);
        return s[s.length / 2];
    }
}

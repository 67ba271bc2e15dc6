package org.ptorun.bench;

import static org.ptorun.callable.Direction.IN;
import static org.ptorun.callable.Direction.OUT;

import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;

import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;
import org.ptorun.CallConfig;
import org.ptorun.ChipWorker;
import org.ptorun.DType;
import org.ptorun.DeviceBuffer;
import org.ptorun.HostRuntime;
import org.ptorun.TaskArgs;
import org.ptorun.Tensor;
import org.ptorun.Variant;
import org.ptorun.callable.Affine;
import org.ptorun.callable.ChipCallable;
import org.ptorun.callable.Kernel;
import org.ptorun.callable.Param;
import org.ptorun.callable.Program;

/**
 * P5: {@code vadd} c = a + b over {@value #BYTES} bytes per tensor, split into
 * {@value #TASKS} tasks of one MiB, full blocking cycle through {@link ChipWorker#run},
 * vs a single-threaded {@code memcpy} of the same {@value #BYTES} bytes made natively
 * in the same suite run. The tensors are device buffers (child memory: passed through,
 * never staged), so the run moves the kernels' bytes and nothing else. Both report the
 * time of one operation; P5 = memcpy time / vadd time, i.e. the vadd's bandwidth over
 * its output bytes as a fraction of memcpy's (the vadd moves 3 × 64 MiB, the memcpy 2 ×).
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 2, time = 2)
@Measurement(iterations = 3, time = 3)
@Fork(1)
public class VaddBandwidthBench {

    static final long BYTES = 64L << 20;
    static final int TASKS = 64;
    private static final long TILE = BYTES / TASKS;
    private static final int CALLABLE_ID = 3;
    private static final int VADD = 0;

    @State(Scope.Benchmark)
    public static class Chip {

        @org.openjdk.jmh.annotations.Param({"a2a3/sim/hbg", "a2a3/sim/trb"})
        public String variant;

        ChipWorker chip;
        DeviceBuffer[] buffers;
        TaskArgs args;

        @Setup(Level.Trial)
        public void open() {
            chip = ChipWorker.open(HostRuntime.load(Variant.parse(variant)), 0);
            chip.registerCallable(CALLABLE_ID, ChipCallable.builder()
                    .signature(IN, IN, OUT)
                    .child(VADD, Kernel.vadd())
                    .program(Program.builder().loop(TASKS, (p, i) -> p.submit(VADD,
                            Param.tensor(0, IN, i.times(TILE), Affine.of(TILE)),
                            Param.tensor(1, IN, i.times(TILE), Affine.of(TILE)),
                            Param.tensor(2, OUT, i.times(TILE), Affine.of(TILE)))).build())
                    .build());
            buffers = new DeviceBuffer[3];
            float[] init = new float[(int) (BYTES / 4)];
            for (int i = 0; i < init.length; i++) {
                init[i] = i & 1023;
            }
            for (int t = 0; t < 3; t++) {
                buffers[t] = chip.malloc(BYTES);
                chip.copyTo(buffers[t], init);
            }
            args = TaskArgs.of(Tensor.of(buffers[0], DType.F32), Tensor.of(buffers[1], DType.F32),
                    Tensor.of(buffers[2], DType.F32));
        }

        @TearDown(Level.Trial)
        public void close() {
            for (DeviceBuffer b : buffers) {
                b.close();
            }
            chip.close();
        }
    }

    @State(Scope.Benchmark)
    public static class Copy {

        ByteBuffer src;
        ByteBuffer dst;
        long srcAddress;
        long dstAddress;

        @Setup(Level.Trial)
        public void open() {
            src = ByteBuffer.allocateDirect((int) BYTES);
            dst = ByteBuffer.allocateDirect((int) BYTES);
            for (int i = 0; i < BYTES; i += 4096) {
                src.put(i, (byte) i); // touch every page of both before measuring
                dst.put(i, (byte) 0);
            }
            srcAddress = address(src);
            dstAddress = address(dst);
        }

        static long address(ByteBuffer direct) {
            return com.sun.jna.Pointer.nativeValue(com.sun.jna.Native.getDirectBufferPointer(direct));
        }
    }

    @Benchmark
    public void vadd(Chip chip) {
        chip.chip.run(CALLABLE_ID, chip.args, CallConfig.DEFAULT);
    }

    @Benchmark
    public void memcpy(Copy copy) {
        NativeBench.pto_bench_memcpy(copy.dstAddress, copy.srcAddress, BYTES);
    }
}

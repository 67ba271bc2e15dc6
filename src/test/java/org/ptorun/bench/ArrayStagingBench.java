package org.ptorun.bench;

import static org.ptorun.callable.Direction.IN;
import static org.ptorun.callable.Direction.OUT;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Properties;
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
import org.openjdk.jmh.infra.IterationParams;
import org.openjdk.jmh.runner.IterationType;
import org.ptorun.CallConfig;
import org.ptorun.ChipWorker;
import org.ptorun.DType;
import org.ptorun.HostRuntime;
import org.ptorun.NativeRun;
import org.ptorun.PipelineSlotLease;
import org.ptorun.TaskArgs;
import org.ptorun.Tensor;
import org.ptorun.Variant;
import org.ptorun.callable.ChipCallable;
import org.ptorun.callable.Kernel;
import org.ptorun.callable.Param;
import org.ptorun.callable.Program;
import org.ptorun.internal.NativeMemory;

/**
 * P12: what a run whose tensors are Java arrays pays for staging them, per direction,
 * against a native {@code memcpy} of the same bytes in the same fork. One operation makes,
 * each timed phase by phase: a {@code vadd} c = a + b of {@value #FLOATS} floats from
 * Java arrays (a and b are copied into the slot's staging in prepare, c is copied back in
 * finalize), the same run from direct buffers (passed in place: no Java-side copy, the
 * native side does the same work for both), alternating which goes first, then a memcpy of
 * a + b's bytes ("in") and one of c's ("back") between native blocks of those sizes (a
 * pair of blocks per direction, so neither copy finds the other's bytes in the cache).
 * in = median prepare(arrays) − median prepare(direct), back = median finalize(arrays) −
 * median finalize(direct); written with the memcpy medians to
 * {@code <ptorun.benchDir>/p12.properties}. P12 = (in + back) / (memcpy in + memcpy back).
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 2, time = 2)
@Measurement(iterations = 3, time = 3)
@Fork(1)
public class ArrayStagingBench {

    static final int FLOATS = 1 << 20;
    private static final long BYTES = 4L * FLOATS;
    private static final int CALLABLE_ID = 4;

    @State(Scope.Benchmark)
    public static class Interleaved {

        private static final int CAPACITY = 1 << 16;

        @org.openjdk.jmh.annotations.Param({"a2a3/sim/hbg"})
        public String variant;

        ChipWorker chip;
        TaskArgs arrays;
        TaskArgs direct;
        final PipelineSlotLease lease = PipelineSlotLease.of(0, 1);
        long runId;
        long copySrc;
        long copyDst;
        long backSrc;
        long backDst;
        boolean measuring;
        boolean arraysFirst;
        int samples;
        final long[] prepareArrays = new long[CAPACITY];
        final long[] finalizeArrays = new long[CAPACITY];
        final long[] prepareDirect = new long[CAPACITY];
        final long[] finalizeDirect = new long[CAPACITY];
        final long[] memcpyIn = new long[CAPACITY];
        final long[] memcpyBack = new long[CAPACITY];
        final long[] phases = new long[2];

        @Setup(Level.Trial)
        public void open() {
            chip = ChipWorker.open(HostRuntime.load(Variant.parse(variant)), 0);
            chip.registerCallable(CALLABLE_ID, ChipCallable.builder()
                    .signature(IN, IN, OUT)
                    .child(0, Kernel.vadd())
                    .program(Program.builder().submit(0, Param.tensor(0, IN, 0, BYTES),
                            Param.tensor(1, IN, 0, BYTES), Param.tensor(2, OUT, 0, BYTES)).build())
                    .build());
            float[] a = new float[FLOATS];
            float[] b = new float[FLOATS];
            ByteBuffer[] d = new ByteBuffer[3];
            for (int t = 0; t < 3; t++) {
                d[t] = ByteBuffer.allocateDirect((int) BYTES).order(ByteOrder.nativeOrder());
            }
            for (int i = 0; i < FLOATS; i++) {
                a[i] = i & 1023;
                b[i] = 1 + (i & 7);
                d[0].putFloat(4 * i, a[i]);
                d[1].putFloat(4 * i, b[i]);
            }
            arrays = TaskArgs.of(Tensor.of(a), Tensor.of(b),
                    Tensor.of(new float[FLOATS]));
            direct = TaskArgs.of(Tensor.of(d[0], DType.F32), Tensor.of(d[1], DType.F32),
                    Tensor.of(d[2], DType.F32));
            // blocks of their own per direction, every page faulted in before measuring
            copySrc = touched(2 * BYTES);
            copyDst = touched(2 * BYTES);
            backSrc = touched(BYTES);
            backDst = touched(BYTES);
        }

        @Setup(Level.Iteration)
        public void iteration(IterationParams iteration) {
            measuring = iteration.getType() == IterationType.MEASUREMENT;
        }

        @TearDown(Level.Trial)
        public void close() throws IOException {
            chip.close();
            for (long block : new long[] {copySrc, copyDst, backSrc, backDst}) {
                NativeMemory.free(block);
            }
            Properties p = new Properties();
            p.setProperty("variant", variant);
            p.setProperty("samples", Integer.toString(samples));
            p.setProperty("bytesIn", Long.toString(2 * BYTES));
            p.setProperty("bytesBack", Long.toString(BYTES));
            p.setProperty("prepareArrays.p50Us", BenchProperties.micros(prepareArrays, samples, 50));
            p.setProperty("prepareDirect.p50Us", BenchProperties.micros(prepareDirect, samples, 50));
            p.setProperty("finalizeArrays.p50Us", BenchProperties.micros(finalizeArrays, samples, 50));
            p.setProperty("finalizeDirect.p50Us", BenchProperties.micros(finalizeDirect, samples, 50));
            p.setProperty("memcpyIn.p50Us", BenchProperties.micros(memcpyIn, samples, 50));
            p.setProperty("memcpyBack.p50Us", BenchProperties.micros(memcpyBack, samples, 50));
            BenchProperties.write("p12.properties", "ArrayStagingBench.interleaved, microseconds", p);
        }

        private static long touched(long bytes) {
            long block = NativeMemory.calloc(bytes);
            if (block == 0) {
                throw new OutOfMemoryError("calloc " + bytes);
            }
            NativeMemory.zero(block, bytes);
            return block;
        }

        /** One run of {@code args}: its prepare and finalize times into {@code phases}. */
        void run(TaskArgs args) {
            long id = ++runId;
            long t0 = System.nanoTime();
            NativeRun run = chip.prepare(CALLABLE_ID, args, CallConfig.DEFAULT, lease, id, id, null);
            long t1 = System.nanoTime();
            chip.launch(run);
            if (!chip.poll(run)) {
                chip.await(run);
            }
            long t2 = System.nanoTime();
            chip.finalizeRun(run);
            phases[0] = t1 - t0;
            phases[1] = System.nanoTime() - t2;
        }
    }

    @Benchmark
    public void interleaved(Interleaved s) {
        s.arraysFirst = !s.arraysFirst;
        long pa;
        long fa;
        long pd;
        long fd;
        if (s.arraysFirst) {
            s.run(s.arrays);
            pa = s.phases[0];
            fa = s.phases[1];
            s.run(s.direct);
            pd = s.phases[0];
            fd = s.phases[1];
        } else {
            s.run(s.direct);
            pd = s.phases[0];
            fd = s.phases[1];
            s.run(s.arrays);
            pa = s.phases[0];
            fa = s.phases[1];
        }
        long t0 = System.nanoTime();
        NativeBench.pto_bench_memcpy(s.copyDst, s.copySrc, 2 * BYTES);
        long t1 = System.nanoTime();
        NativeBench.pto_bench_memcpy(s.backDst, s.backSrc, BYTES);
        long t2 = System.nanoTime();
        if (s.measuring && s.samples < Interleaved.CAPACITY) {
            int i = s.samples++;
            s.prepareArrays[i] = pa;
            s.finalizeArrays[i] = fa;
            s.prepareDirect[i] = pd;
            s.finalizeDirect[i] = fd;
            s.memcpyIn[i] = t1 - t0;
            s.memcpyBack[i] = t2 - t1;
        }
    }
}

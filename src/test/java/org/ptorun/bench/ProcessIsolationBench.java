package org.ptorun.bench;

import static org.ptorun.callable.Direction.IN;
import static org.ptorun.callable.Direction.OUT;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;
import org.ptorun.CallConfig;
import org.ptorun.ChipIsolation;
import org.ptorun.ChipWorker;
import org.ptorun.HostRuntime;
import org.ptorun.NativeRun;
import org.ptorun.PipelineContract;
import org.ptorun.PipelineSlotLease;
import org.ptorun.TaskArgs;
import org.ptorun.Tensor;
import org.ptorun.Variant;
import org.ptorun.callable.Affine;
import org.ptorun.callable.ChipCallable;
import org.ptorun.callable.Kernel;
import org.ptorun.callable.Param;
import org.ptorun.callable.Program;
import org.ptorun.internal.ChipHost;
import org.ptorun.internal.NativeApi;
import org.ptorun.worker.Worker;

/**
 * P15 (docs/performance.md): a chip in a chip host process (docs/isolation.md) vs the same
 * chip in the JVM, in one JVM (the suite starts it as a child: {@code <variant> [parts]};
 * parts {@code trivial}, {@code vadd}, {@code worker}, {@code handoffs}, all by default),
 * every figure a median of per-round ratios with the two modes' order alternating from one
 * round to the next (as {@link InterleavedPipelineBench} does for P3):
 * <ul>
 * <li>{@code trivial}: {@link TrivialRun}'s cycle, the p50 of {@value #TRIVIAL_RUNS} cycles
 *     per mode and round; ratio = process / in process (P15 bound: ≤ 2);</li>
 * <li>{@code vadd}: c = a + b over {@value #VADD_FLOATS} floats (64 MiB per tensor) from
 *     Java arrays, staged in and copied back as P12, in {@value #VADD_TASKS} tasks of 1 MiB
 *     as P5; ratio = process throughput / in-process throughput (bound: ≥ 0.7);</li>
 * <li>{@code worker}: blocks of {@value #BLOCK} trivial runs one at a time through a
 *     background {@link Worker} as P9; ratio = process runs/s / in-process runs/s (bound:
 *     ≥ 0.5);</li>
 * <li>{@code handoffs}: the hand-offs of one trivial run in process mode — the proxied
 *     contract calls, counted by a counting {@link NativeApi} under a ChipWorker of its own
 *     (made through ChipWorker's private constructor: bench only), and the voluntary
 *     context switches (sleeps: a futex wait that parked) of the calling thread and of the
 *     chip host over {@value #COUNTED_RUNS} runs — and the round trip of one request, a
 *     ping loop of {@code committedDeviceMemory} (one proxied call, nothing else), against
 *     the same call in process.</li>
 * </ul>
 * Every figure is printed as a line {@code P15 key=value ...} ({@link #parse}).
 */
public final class ProcessIsolationBench {

    static final int TRIVIAL_WARMUP_ROUNDS = 10;
    static final int TRIVIAL_ROUNDS = 30;
    static final int TRIVIAL_RUNS = 200;
    static final int VADD_FLOATS = 16 << 20;
    static final int VADD_TASKS = 64;
    static final int VADD_WARMUP_ROUNDS = 2;
    static final int VADD_ROUNDS = 9;
    static final int VADD_RUNS = 2;
    static final int BLOCK = WorkerThroughputBench.BLOCK;
    static final int WORKER_WARMUP_ROUNDS = 10;
    static final int WORKER_ROUNDS = 30;
    static final int COUNTED_RUNS = 2000;
    static final int PINGS = 20000;
    private static final int VADD_ID = 5;
    static final String PREFIX = "P15 ";

    private ProcessIsolationBench() {
    }

    public static void main(String[] args) throws Exception {
        Variant variant = Variant.parse(args[0]);
        List<String> parts = args.length > 1 ? List.of(args).subList(1, args.length)
                : List.of("trivial", "vadd", "worker", "handoffs");
        HostRuntime runtime = HostRuntime.load(variant);
        for (String part : parts) {
            switch (part) {
                case "trivial" -> trivial(runtime);
                case "vadd" -> vadd(runtime);
                case "worker" -> worker(runtime);
                case "handoffs" -> handoffs(runtime);
                default -> throw new IllegalArgumentException("unknown part " + part);
            }
        }
    }

    // ---- trivial ----------------------------------------------------------------------------

    static void trivial(HostRuntime runtime) {
        double[] in = new double[TRIVIAL_ROUNDS];
        double[] proc = new double[TRIVIAL_ROUNDS];
        double[] ratios = new double[TRIVIAL_ROUNDS];
        long[] samples = new long[TRIVIAL_RUNS];
        try (ChipWorker a = ChipWorker.open(runtime, 0, ChipIsolation.IN_PROCESS);
             ChipWorker b = ChipWorker.open(runtime, 1, ChipIsolation.PROCESS)) {
            TrivialRun inProcess = new TrivialRun(a);
            TrivialRun process = new TrivialRun(b);
            for (int k = -TRIVIAL_WARMUP_ROUNDS; k < TRIVIAL_ROUNDS; k++) {
                double i;
                double p;
                if ((k & 1) == 0) {
                    i = trivialP50(inProcess, samples);
                    p = trivialP50(process, samples);
                } else {
                    p = trivialP50(process, samples);
                    i = trivialP50(inProcess, samples);
                }
                if (k >= 0) {
                    in[k] = i;
                    proc[k] = p;
                    ratios[k] = p / i;
                }
            }
        }
        print("trivial", runtime.variant(), Map.of("rounds", (double) TRIVIAL_ROUNDS, "runs", (double) TRIVIAL_RUNS,
                "ratio", pct(ratios, 50), "ratioP25", pct(ratios, 25), "ratioP75", pct(ratios, 75),
                "inUs", pct(in, 50), "processUs", pct(proc, 50)));
    }

    /** p50 of {@code samples.length} timed cycles, microseconds. */
    private static double trivialP50(TrivialRun run, long[] samples) {
        for (int i = 0; i < samples.length; i++) {
            long t0 = System.nanoTime();
            run.cycle();
            samples[i] = System.nanoTime() - t0;
        }
        return BenchProperties.percentileNanos(samples, samples.length, 50) / 1e3;
    }

    // ---- vadd -------------------------------------------------------------------------------

    static ChipCallable vaddCallable() {
        long tile = 4L * VADD_FLOATS / VADD_TASKS;
        return ChipCallable.builder()
                .signature(IN, IN, OUT)
                .child(0, Kernel.vadd())
                .program(Program.builder().loop(VADD_TASKS, (p, i) -> p.submit(0,
                        Param.tensor(0, IN, i.times(tile), Affine.of(tile)),
                        Param.tensor(1, IN, i.times(tile), Affine.of(tile)),
                        Param.tensor(2, OUT, i.times(tile), Affine.of(tile)))).build())
                .build();
    }

    static void vadd(HostRuntime runtime) {
        float[] a = new float[VADD_FLOATS];
        float[] b = new float[VADD_FLOATS];
        float[] c = new float[VADD_FLOATS];
        for (int i = 0; i < VADD_FLOATS; i++) {
            a[i] = i & 1023;
            b[i] = 1 + (i & 7);
        }
        TaskArgs args = TaskArgs.of(Tensor.of(a), Tensor.of(b), Tensor.of(c));
        double[] in = new double[VADD_ROUNDS];
        double[] proc = new double[VADD_ROUNDS];
        double[] ratios = new double[VADD_ROUNDS];
        double[] inPrepare = new double[VADD_ROUNDS];
        double[] procPrepare = new double[VADD_ROUNDS];
        double[] inFinalize = new double[VADD_ROUNDS];
        double[] procFinalize = new double[VADD_ROUNDS];
        double mib = 4.0 * VADD_FLOATS / 1048576.0;
        try (ChipWorker x = ChipWorker.open(runtime, 0, ChipIsolation.IN_PROCESS);
             ChipWorker y = ChipWorker.open(runtime, 1, ChipIsolation.PROCESS)) {
            x.registerCallable(VADD_ID, vaddCallable());
            y.registerCallable(VADD_ID, vaddCallable());
            long[] phases = new long[3];
            long[] phasesP = new long[3];
            for (int k = -VADD_WARMUP_ROUNDS; k < VADD_ROUNDS; k++) {
                if ((k & 1) == 0) {
                    vaddRuns(x, args, phases);
                    vaddRuns(y, args, phasesP);
                } else {
                    vaddRuns(y, args, phasesP);
                    vaddRuns(x, args, phases);
                }
                if (c[1000] != a[1000] + b[1000]) {
                    throw new IllegalStateException("vadd: c[1000] = " + c[1000]);
                }
                if (k >= 0) {
                    in[k] = mib * VADD_RUNS / (phases[0] / 1e9); // MiB/s of one tensor
                    proc[k] = mib * VADD_RUNS / (phasesP[0] / 1e9);
                    ratios[k] = proc[k] / in[k];
                    inPrepare[k] = phases[1] / 1e6 / VADD_RUNS;
                    procPrepare[k] = phasesP[1] / 1e6 / VADD_RUNS;
                    inFinalize[k] = phases[2] / 1e6 / VADD_RUNS;
                    procFinalize[k] = phasesP[2] / 1e6 / VADD_RUNS;
                }
            }
        }
        Map<String, Double> m = new LinkedHashMap<>();
        m.put("rounds", (double) VADD_ROUNDS);
        m.put("runs", (double) VADD_RUNS);
        m.put("ratio", pct(ratios, 50));
        m.put("ratioP25", pct(ratios, 25));
        m.put("ratioP75", pct(ratios, 75));
        m.put("inMiBs", pct(in, 50));
        m.put("processMiBs", pct(proc, 50));
        m.put("inMs", mib / pct(in, 50) * 1e3);
        m.put("processMs", mib / pct(proc, 50) * 1e3);
        m.put("inPrepareMs", pct(inPrepare, 50));
        m.put("processPrepareMs", pct(procPrepare, 50));
        m.put("inFinalizeMs", pct(inFinalize, 50));
        m.put("processFinalizeMs", pct(procFinalize, 50));
        print("vadd", runtime.variant(), m);
    }

    /** {@value #VADD_RUNS} runs: total, prepare and finalize nanoseconds into {@code phases}. */
    private static void vaddRuns(ChipWorker chip, TaskArgs args, long[] phases) {
        PipelineSlotLease lease = PipelineSlotLease.of(0, 1);
        long prepare = 0;
        long fin = 0;
        long start = System.nanoTime();
        for (int r = 0; r < VADD_RUNS; r++) {
            long id = RUN_IDS.incrementAndGet();
            long t0 = System.nanoTime();
            NativeRun run = chip.prepare(VADD_ID, args, CallConfig.DEFAULT, lease, id, id, null);
            long t1 = System.nanoTime();
            chip.launch(run);
            if (!chip.poll(run)) {
                chip.await(run);
            }
            long t2 = System.nanoTime();
            chip.finalizeRun(run);
            long t3 = System.nanoTime();
            prepare += t1 - t0;
            fin += t3 - t2;
        }
        phases[0] = System.nanoTime() - start;
        phases[1] = prepare;
        phases[2] = fin;
    }

    private static final AtomicLong RUN_IDS = new AtomicLong();

    // ---- worker -----------------------------------------------------------------------------

    static void worker(HostRuntime runtime) throws InterruptedException, IOException {
        double childSleeps;
        long lanes;
        double[] in = new double[WORKER_ROUNDS];
        double[] proc = new double[WORKER_ROUNDS];
        double[] ratios = new double[WORKER_ROUNDS];
        TaskArgs args = new TaskArgs();
        try (Worker a = Worker.builder().runtime(runtime).devices(0).background(true)
                .isolation(ChipIsolation.IN_PROCESS).build();
             Worker b = Worker.builder().runtime(runtime).devices(1).background(true)
                     .isolation(ChipIsolation.PROCESS).build()) {
            a.register(TrivialRun.CALLABLE_ID, TrivialRun.CALLABLE).join();
            b.register(TrivialRun.CALLABLE_ID, TrivialRun.CALLABLE).join();
            long pid = b.health().get(0).processId();
            long childBefore = 0;
            for (int k = -WORKER_WARMUP_ROUNDS; k < WORKER_ROUNDS; k++) {
                if (k == 0) {
                    childBefore = childSwitches(pid);
                }
                long i;
                long p;
                if ((k & 1) == 0) {
                    i = workerBlock(a, args);
                    p = workerBlock(b, args);
                } else {
                    p = workerBlock(b, args);
                    i = workerBlock(a, args);
                }
                if (k >= 0) {
                    in[k] = 1e9 / i;
                    proc[k] = 1e9 / p;
                    ratios[k] = proc[k] / in[k];
                }
            }
            childSleeps = (childSwitches(pid) - childBefore) / (double) (WORKER_ROUNDS * BLOCK);
            lanes = ChipHost.running(pid).map(ChipHost::laneCount).orElse(-1L);
        }
        print("worker", runtime.variant(), Map.of("rounds", (double) WORKER_ROUNDS, "block", (double) BLOCK,
                "ratio", pct(ratios, 50), "ratioP25", pct(ratios, 25), "ratioP75", pct(ratios, 75),
                "inRunsPerS", pct(in, 50), "processRunsPerS", pct(proc, 50), "childSleepsPerRun", childSleeps,
                "lanes", (double) lanes));
    }

    /** {@value #BLOCK} runs one at a time; nanoseconds per run. */
    private static long workerBlock(Worker worker, TaskArgs args) throws InterruptedException {
        long t0 = System.nanoTime();
        for (int i = 0; i < BLOCK; i++) {
            worker.enqueue(TrivialRun.CALLABLE_ID, args, CallConfig.DEFAULT).result().join();
        }
        return (System.nanoTime() - t0) / BLOCK;
    }

    // ---- hand-offs --------------------------------------------------------------------------

    static void handoffs(HostRuntime runtime) throws Exception {
        Map<String, AtomicLong> calls = new TreeMap<>();
        ChipHost host = ChipHost.start(runtime.variant().toString(), runtime.libraryFile(),
                ChipHost.configuredArenaBytes());
        NativeApi counting = counting(host.api(), calls);
        Variant.Arch arch = runtime.variant().arch();
        Constructor<ChipWorker> ctor = ChipWorker.class.getDeclaredConstructor(NativeApi.class, Variant.class,
                PipelineContract.class, long.class, long.class, int.class, byte[].class, byte[].class, ChipHost.class);
        ctor.setAccessible(true);
        ChipWorker counted;
        try {
            counted = ctor.newInstance(counting, runtime.variant(), runtime.contract(), runtime.runStorageSize(),
                    runtime.runStorageAlignment(), 0, Files.readAllBytes(BenchFiles.deviceImage(arch, "aicpu")),
                    Files.readAllBytes(BenchFiles.deviceImage(arch, "aicore")), host);
        } catch (InvocationTargetException e) {
            host.close();
            throw e;
        }
        // the same calls in process, timed by the same decorator, for where the time goes
        Map<String, AtomicLong> inCalls = new TreeMap<>();
        java.lang.reflect.Method apiOf = HostRuntime.class.getDeclaredMethod("api");
        apiOf.setAccessible(true);
        ChipWorker inCounted = ctor.newInstance(counting((NativeApi) apiOf.invoke(runtime), inCalls), runtime.variant(),
                runtime.contract(), runtime.runStorageSize(), runtime.runStorageAlignment(), 2,
                Files.readAllBytes(BenchFiles.deviceImage(arch, "aicpu")),
                Files.readAllBytes(BenchFiles.deviceImage(arch, "aicore")), null);
        Map<String, Double> m = new LinkedHashMap<>();
        try (ChipWorker inTimed = inCounted) {
            TrivialRun run = new TrivialRun(inTimed);
            for (int i = 0; i < 2000; i++) {
                run.cycle(); // warm
            }
            inCalls.clear();
            long t0 = System.nanoTime();
            for (int i = 0; i < COUNTED_RUNS; i++) {
                run.cycle();
            }
            m.put("inCountedCycleUs", (System.nanoTime() - t0) / 1e3 / COUNTED_RUNS);
            for (Map.Entry<String, AtomicLong> e : inCalls.entrySet()) {
                if (e.getKey().startsWith(NANOS)) {
                    String name = e.getKey().substring(NANOS.length());
                    m.put("inUs." + name, e.getValue().get() / 1e3 / inCalls.get(name).get());
                }
            }
        }
        try (ChipWorker chip = counted; ChipWorker inProcess = ChipWorker.open(runtime, 1, ChipIsolation.IN_PROCESS)) {
            TrivialRun run = new TrivialRun(chip);
            for (int i = 0; i < 2000; i++) {
                run.cycle(); // warm
            }
            calls.clear();
            long selfBefore = voluntarySwitches(Path.of("/proc/thread-self/status"));
            long childBefore = childSwitches(host.pid());
            Map<String, Long> threadsBefore = threadSwitches(host.pid());
            long t0 = System.nanoTime();
            for (int i = 0; i < COUNTED_RUNS; i++) {
                run.cycle();
            }
            long t1 = System.nanoTime();
            long selfAfter = voluntarySwitches(Path.of("/proc/thread-self/status"));
            long childAfter = childSwitches(host.pid());
            StringBuilder perThread = new StringBuilder();
            threadSwitches(host.pid()).forEach((t, n) -> perThread.append(' ').append(t).append('=').append(
                    String.format(Locale.ROOT, "%.3f", (n - threadsBefore.getOrDefault(t, 0L)) / (double) COUNTED_RUNS)));
            System.out.println("P15 handoffs: chip host sleeps per run by thread (tid:name):" + perThread);
            long total = 0;
            StringBuilder perCall = new StringBuilder();
            for (Map.Entry<String, AtomicLong> e : calls.entrySet()) {
                if (e.getKey().startsWith(NANOS)) {
                    m.put("us." + e.getKey().substring(NANOS.length()),
                            e.getValue().get() / 1e3 / calls.get(e.getKey().substring(NANOS.length())).get());
                    continue;
                }
                total += e.getValue().get();
                m.put("calls." + e.getKey(), e.getValue().get() / (double) COUNTED_RUNS);
                perCall.append(' ').append(e.getKey()).append('=').append(e.getValue().get());
            }
            m.put("callsPerRun", total / (double) COUNTED_RUNS);
            m.put("parentSleepsPerRun", (selfAfter - selfBefore) / (double) COUNTED_RUNS);
            m.put("childSleepsPerRun", (childAfter - childBefore) / (double) COUNTED_RUNS);
            m.put("countedCycleUs", (t1 - t0) / 1e3 / COUNTED_RUNS);
            System.out.println("P15 handoffs: " + COUNTED_RUNS + " counted runs, proxied calls:" + perCall);
            // the round trip of one request: committedDeviceMemory, process vs in process, alternating blocks
            long[] pings = new long[PINGS];
            ping(chip, pings); // warm
            ping(inProcess, pings);
            double p = 0;
            double i = 0;
            double[] p50 = new double[5];
            double[] p90 = new double[5];
            double[] p50In = new double[5];
            for (int r = 0; r < 5; r++) {
                p += ping(chip, pings);
                p50[r] = BenchProperties.percentileNanos(pings, PINGS, 50);
                p90[r] = BenchProperties.percentileNanos(pings, PINGS, 90);
                i += ping(inProcess, pings);
                p50In[r] = BenchProperties.percentileNanos(pings, PINGS, 50);
            }
            m.put("pingProcessNs", p / 5);
            m.put("pingInNs", i / 5);
            m.put("pingProcessP50Ns", pct(p50, 50));
            m.put("pingProcessP90Ns", pct(p90, 50));
            m.put("pingInP50Ns", pct(p50In, 50));
            // the same request right after a run ended (the device's executor threads just finished): p50
            long[] after = new long[COUNTED_RUNS];
            for (int r = 0; r < COUNTED_RUNS; r++) {
                run.cycle();
                long t0p = System.nanoTime();
                chip.committedDeviceMemory();
                after[r] = System.nanoTime() - t0p;
            }
            m.put("pingAfterRunP50Ns", (double) BenchProperties.percentileNanos(after, COUNTED_RUNS, 50));
            calls.clear();
            selfBefore = voluntarySwitches(Path.of("/proc/thread-self/status"));
            childBefore = childSwitches(host.pid());
            long selfYields = involuntarySwitches(Path.of("/proc/thread-self/status"));
            long childYields = childInvoluntary(host.pid());
            ping(chip, pings);
            m.put("pingParentPreemptionsPerPing",
                    (involuntarySwitches(Path.of("/proc/thread-self/status")) - selfYields) / (double) PINGS);
            m.put("pingChildPreemptionsPerPing", (childInvoluntary(host.pid()) - childYields) / (double) PINGS);
            m.put("pingCallsPerPing", calls.get("committedDeviceMemory").get() / (double) PINGS);
            m.put("pingParentSleepsPerPing", (voluntarySwitches(Path.of("/proc/thread-self/status")) - selfBefore)
                    / (double) PINGS);
            m.put("pingChildSleepsPerPing", (childSwitches(host.pid()) - childBefore) / (double) PINGS);
        }
        print("handoffs", runtime.variant(), m);
    }

    /** Mean nanoseconds of one {@code committedDeviceMemory} over {@value #PINGS} calls, each into {@code each}. */
    private static double ping(ChipWorker chip, long[] each) {
        long sink = 0;
        long t0 = System.nanoTime();
        long last = t0;
        for (int i = 0; i < PINGS; i++) {
            sink += chip.committedDeviceMemory();
            long now = System.nanoTime();
            each[i] = now - last;
            last = now;
        }
        long t1 = last;
        if (sink == 42) {
            System.out.print("");
        }
        return (t1 - t0) / (double) PINGS;
    }

    /** The key prefix of a method's total nanoseconds in a {@link #counting} map. */
    static final String NANOS = "nanos:";

    /** A decorator of {@code api} counting its calls by method name, and timing them (bench only). */
    static NativeApi counting(NativeApi api, Map<String, AtomicLong> calls) {
        Map<String, AtomicLong> counters = java.util.Collections.synchronizedMap(calls);
        InvocationHandler h = (proxy, method, args) -> {
            counters.computeIfAbsent(method.getName(), k -> new AtomicLong()).incrementAndGet();
            long t0 = System.nanoTime();
            try {
                return method.invoke(api, args);
            } catch (InvocationTargetException e) {
                throw e.getCause();
            } finally {
                counters.computeIfAbsent(NANOS + method.getName(), k -> new AtomicLong())
                        .addAndGet(System.nanoTime() - t0);
            }
        };
        return (NativeApi) Proxy.newProxyInstance(NativeApi.class.getClassLoader(), new Class<?>[] {NativeApi.class},
                h);
    }

    /** The voluntary context switches of every thread of process {@code pid}. */
    private static long childSwitches(long pid) throws IOException {
        long sum = 0;
        try (var tasks = Files.list(Path.of("/proc", Long.toString(pid), "task"))) {
            for (Path t : (Iterable<Path>) tasks::iterator) {
                sum += voluntarySwitches(t.resolve("status"));
            }
        }
        return sum;
    }

    /** Each thread's voluntary switches in process {@code pid}, by {@code tid:name}. */
    private static Map<String, Long> threadSwitches(long pid) throws IOException {
        Map<String, Long> m = new TreeMap<>();
        try (var tasks = Files.list(Path.of("/proc", Long.toString(pid), "task"))) {
            for (Path t : (Iterable<Path>) tasks::iterator) {
                String name = Files.readString(t.resolve("comm")).trim().replace(' ', '_');
                m.put(t.getFileName() + ":" + name, voluntarySwitches(t.resolve("status")));
            }
        }
        return m;
    }

    private static long voluntarySwitches(Path status) {
        return switches(status, "voluntary_ctxt_switches:");
    }

    /** Involuntary switches: preemptions, and a sched_yield that gave the core away (the spins yield). */
    private static long involuntarySwitches(Path status) {
        return switches(status, "nonvoluntary_ctxt_switches:");
    }

    private static long childInvoluntary(long pid) throws IOException {
        long sum = 0;
        try (var tasks = Files.list(Path.of("/proc", Long.toString(pid), "task"))) {
            for (Path t : (Iterable<Path>) tasks::iterator) {
                sum += involuntarySwitches(t.resolve("status"));
            }
        }
        return sum;
    }

    private static long switches(Path status, String key) {
        try {
            for (String line : Files.readAllLines(status)) {
                if (line.startsWith(key)) {
                    return Long.parseLong(line.substring(line.indexOf(':') + 1).trim());
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return 0;
    }

    // ---- output -----------------------------------------------------------------------------

    private static void print(String part, Variant variant, Map<String, Double> figures) {
        StringBuilder sb = new StringBuilder(PREFIX).append(part).append(" variant=").append(variant);
        new TreeMap<>(figures).forEach((k, v) -> sb.append(' ').append(k).append('=')
                .append(String.format(Locale.ROOT, "%.4f", v)));
        System.out.println(sb);
    }

    /** The figures of a child's lines for {@code part}: {@code key -> value}; empty when there is none. */
    static Map<String, Double> parse(List<String> lines, String part) {
        Map<String, Double> m = new HashMap<>();
        for (String line : lines) {
            if (!line.startsWith(PREFIX + part + " ")) {
                continue;
            }
            for (String kv : line.substring(PREFIX.length() + part.length()).trim().split(" ")) {
                int eq = kv.indexOf('=');
                if (eq > 0 && !kv.startsWith("variant=")) {
                    m.put(kv.substring(0, eq), Double.parseDouble(kv.substring(eq + 1)));
                }
            }
        }
        return m;
    }

    static Optional<Double> get(Map<String, Double> m, String key) {
        return Optional.ofNullable(m.get(key));
    }

    private static double pct(double[] samples, double p) {
        return InterleavedPipelineBench.percentile(samples, p);
    }
}

package org.ptorun;

import static org.assertj.core.api.Assertions.assertThat;
import static org.ptorun.callable.Direction.IN;
import static org.ptorun.callable.Direction.OUT;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.ptorun.callable.ChipCallable;
import org.ptorun.callable.Kernel;
import org.ptorun.callable.Param;
import org.ptorun.callable.Program;

/**
 * Randomized race tests of the callable registry against prepare, and of two
 * registrations of one id, on all eight libraries. One id is re-registered, over and
 * over, with one of two callables whose signatures point the other way:
 * {@link #PLUS_ONE} reads x and writes y = x + 1, {@link #TIMES_TWO} reads y and writes
 * x = y · 2. Every run's arrays must show exactly one of the two, whole: the callable the
 * library ran, staged in and copied back by the signature Java held — any mix (an output
 * not copied back, an input overwritten with staging bytes) is a wrong result.
 */
class RegistrationRaceE2ETest {

    private static final int N = 64;
    private static final int ID = 5;
    private static final int RUNS_PER_THREAD = 1500;
    private static final int ROUNDS = 400;

    static final ChipCallable PLUS_ONE = ChipCallable.builder()
            .signature(IN, OUT)
            .child(0, Kernel.vadds())
            .program(Program.builder()
                    .submit(0, Param.tensor(0, IN, 0, 4L * N), Param.tensor(1, OUT, 0, 4L * N), Param.scalarF32(1f))
                    .build())
            .build();

    static final ChipCallable TIMES_TWO = ChipCallable.builder()
            .signature(OUT, IN)
            .child(0, Kernel.vmuls())
            .program(Program.builder()
                    .submit(0, Param.tensor(1, IN, 0, 4L * N), Param.tensor(0, OUT, 0, 4L * N), Param.scalarF32(2f))
                    .build())
            .build();

    static List<Variant> variants() {
        return SimE2E.allVariants();
    }

    /** Which callable a finished run's arrays show, or null when they show a mix. */
    private static ChipCallable ranAs(float[] x0, float[] y0, float[] x, float[] y) {
        boolean plusOne = true;
        boolean timesTwo = true;
        for (int i = 0; i < N; i++) {
            plusOne &= Float.floatToRawIntBits(x[i]) == Float.floatToRawIntBits(x0[i])
                    && Float.floatToRawIntBits(y[i]) == Float.floatToRawIntBits(x0[i] + 1f);
            timesTwo &= Float.floatToRawIntBits(y[i]) == Float.floatToRawIntBits(y0[i])
                    && Float.floatToRawIntBits(x[i]) == Float.floatToRawIntBits(y0[i] * 2f);
        }
        return plusOne ? PLUS_ONE : timesTwo ? TIMES_TWO : null;
    }

    private static float[] random(SplittableRandom r) {
        float[] a = new float[N];
        for (int i = 0; i < N; i++) {
            a[i] = (float) r.nextInt(-1000, 1000) / 8f;
        }
        return a;
    }

    /** One run of {@link #ID}, through the phases or the blocking composition; its outcome checked. */
    private static boolean runOnce(ChipWorker chip, PipelineSlotPool pool, SplittableRandom r, AtomicLong runIds) {
        float[] x0 = random(r);
        float[] y0 = random(r);
        float[] x = x0.clone();
        float[] y = y0.clone();
        TaskArgs args = TaskArgs.of(Tensor.of(x), Tensor.of(y));
        long runId = runIds.incrementAndGet();
        if (r.nextBoolean()) {
            var lease = pool.tryAcquire();
            if (lease.isEmpty()) {
                return true;
            }
            try {
                NativeRun run = chip.prepare(ID, args, CallConfig.DEFAULT, lease.get(), runId, runId, null);
                try {
                    chip.launch(run);
                } finally {
                    chip.finalizeRun(run);
                }
            } catch (ChipBusyException busy) {
                return true; // the other runner holds the chip; nothing ran
            } finally {
                pool.release(lease.get());
            }
        } else {
            try {
                chip.run(ID, args, CallConfig.DEFAULT);
            } catch (ChipBusyException busy) {
                return true;
            }
        }
        return ranAs(x0, y0, x, y) != null;
    }

    @ParameterizedTest
    @MethodSource("variants")
    void reRegisteringWhileOtherThreadsRunGivesEveryRunOneWholeCallable(Variant variant) throws Exception {
        ExecutorService threads = Executors.newFixedThreadPool(3);
        try (ChipWorker chip = ChipWorker.open(HostRuntime.load(variant), 0)) {
            chip.registerCallable(ID, PLUS_ONE);
            PipelineSlotPool pool = new PipelineSlotPool(chip.pipelineDepth());
            AtomicBoolean runnersDone = new AtomicBoolean();
            AtomicInteger wrong = new AtomicInteger();
            AtomicInteger registrations = new AtomicInteger();
            AtomicLong runIds = new AtomicLong();
            // halfway, both runners wait (no run outstanding) until a registration landed: at
            // least one lands between runs whatever the scheduling; the rest race freely
            CountDownLatch halfway = new CountDownLatch(2);
            CountDownLatch registeredHalfway = new CountDownLatch(1);
            List<Future<?>> runners = new ArrayList<>();
            for (int t = 0; t < 2; t++) {
                long seed = 31L * t + variant.hashCode();
                runners.add(threads.submit(() -> {
                    SplittableRandom r = new SplittableRandom(seed);
                    for (int i = 0; i < RUNS_PER_THREAD; i++) {
                        if (i == RUNS_PER_THREAD / 2) {
                            halfway.countDown();
                            assertThat(registeredHalfway.await(1, TimeUnit.MINUTES)).as("a registration halfway").isTrue();
                        }
                        if (!runOnce(chip, pool, r, runIds)) {
                            wrong.incrementAndGet();
                        }
                    }
                    return null;
                }));
            }
            Future<?> registrar = threads.submit(() -> {
                SplittableRandom r = new SplittableRandom(variant.hashCode());
                while (!runnersDone.get()) {
                    boolean quiet = halfway.getCount() == 0 && registeredHalfway.getCount() == 1;
                    try {
                        chip.registerCallable(ID, r.nextBoolean() ? PLUS_ONE : TIMES_TWO);
                        registrations.incrementAndGet();
                        if (quiet) {
                            registeredHalfway.countDown();
                        }
                    } catch (ChipBusyException outstanding) {
                        if (quiet) {
                            throw new AssertionError("refused while both runners wait with no run outstanding",
                                    outstanding);
                        }
                        Thread.yield(); // a run holds a reservation: try in the next gap
                    }
                }
                return null;
            });
            for (Future<?> f : runners) {
                f.get(5, TimeUnit.MINUTES);
            }
            runnersDone.set(true);
            registrar.get(1, TimeUnit.MINUTES);
            assertThat(wrong.get()).as("runs whose arrays show no whole callable, of %d, with %d registrations"
                    + " in between", runIds.get(), registrations.get()).isZero();
            assertThat(registrations.get()).as("registrations that landed between runs").isPositive();
        } finally {
            threads.shutdownNow();
        }
    }

    @ParameterizedTest
    @MethodSource("variants")
    void twoConcurrentRegistrationsOfOneIdLeaveJavaAndTheLibraryAgreeing(Variant variant) throws Exception {
        ExecutorService threads = Executors.newFixedThreadPool(2);
        try (ChipWorker chip = ChipWorker.open(HostRuntime.load(variant), 0)) {
            SplittableRandom r = new SplittableRandom(variant.hashCode());
            AtomicLong runIds = new AtomicLong();
            PipelineSlotPool pool = new PipelineSlotPool(chip.pipelineDepth());
            for (int round = 0; round < ROUNDS; round++) {
                CyclicBarrier together = new CyclicBarrier(2);
                Future<?> a = threads.submit(() -> {
                    together.await();
                    chip.registerCallable(ID, PLUS_ONE);
                    return null;
                });
                Future<?> b = threads.submit(() -> {
                    together.await();
                    chip.registerCallable(ID, TIMES_TWO);
                    return null;
                });
                a.get(1, TimeUnit.MINUTES);
                b.get(1, TimeUnit.MINUTES);
                float[] x0 = random(r);
                float[] y0 = random(r);
                float[] x = x0.clone();
                float[] y = y0.clone();
                chip.run(ID, TaskArgs.of(Tensor.of(x), Tensor.of(y)), CallConfig.DEFAULT);
                ChipCallable ran = ranAs(x0, y0, x, y);
                assertThat(ran).as("round %d: the run's arrays show one whole callable", round).isNotNull();
                assertThat(chip.signatureOf(ID)).as("round %d: Java's signature is the one the library ran", round)
                        .isEqualTo(ran.tensorDirections());
                assertThat(runOnce(chip, pool, r, runIds)).isTrue();
            }
        } finally {
            threads.shutdownNow();
        }
    }
}

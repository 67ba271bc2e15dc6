package org.ptorun;

import static org.assertj.core.api.Assertions.assertThat;
import static org.ptorun.WorkerE2ETest.PACED;
import static org.ptorun.WorkerE2ETest.enqueuePaced;
import static org.ptorun.WorkerE2ETest.paced;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.ptorun.WorkerE2ETest.PacedJob;
import org.ptorun.worker.Worker;

/**
 * ptorun's own threads end when idle — a background Worker's when interrupted (as
 * {@code mvn exec:java} interrupts every thread a program leaves), a comm group's after a
 * second without a collective call — and what they serve goes on: the next use starts new
 * ones. The Worker and the group are made on a thread of a group of its own, so their
 * threads are found by their thread group, not by a name another test's thread could share.
 */
class IdleThreadsE2ETest {

    @Test
    void interruptedIdleDispatcherAndDeviceWaitEndAndTheNextRunStartsNewOnes() throws Exception {
        ThreadGroup group = new ThreadGroup("like-exec-java");
        AtomicReference<Worker> built = new AtomicReference<>();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread program = new Thread(group, () -> {
            try {
                Worker w = Worker.builder().variant(Variant.parse("a2a3/sim/hbg")).background(true).build();
                built.set(w);
                w.register(PACED, paced()).get(60, TimeUnit.SECONDS);
                // a run far longer than the dispatcher's 50 µs spin: it hands the wait to DeviceWait
                PacedJob job = enqueuePaced(w, 1, 0, 200_000);
                job.ticket().result().get(60, TimeUnit.SECONDS);
                job.assertGolden();
            } catch (Throwable e) {
                failure.set(e);
            }
        }, "program");
        program.start();
        program.join();
        try (Worker worker = built.get()) {
            assertThat(failure.get()).isNull();
            assertThat(worker.drain().allSucceeded()).isTrue();
            List<Thread> threads = CleanExitMain.alive(group);
            assertThat(threads).extracting(Thread::getName).contains("ptorun-dispatch-0", "ptorun-devwait-0");
            threads.forEach(Thread::interrupt);
            for (Thread t : threads) {
                t.join(TimeUnit.SECONDS.toMillis(60));
                assertThat(t.isAlive()).as("%s ended once interrupted", t.getName()).isFalse();
            }

            // the chip's next run: a new dispatcher (started by the enqueue) and a new DeviceWait
            PacedJob again = enqueuePaced(worker, 2, 0, 200_000);
            again.ticket().result().get(60, TimeUnit.SECONDS);
            again.assertGolden();
            PacedJob third = enqueuePaced(worker, 3, 0, 1_000);
            third.ticket().result().get(60, TimeUnit.SECONDS);
            third.assertGolden();
            assertThat(worker.drain().succeeded()).isEqualTo(2);
        }
    }

    @Test
    void aCommGroupsThreadsEndWhenIdleAndTheNextCollectiveCallStartsThemAgain(@TempDir Path dir) throws Exception {
        HostRuntime runtime = HostRuntime.load(Variant.parse("a2a3/sim/hbg"));
        try (ChipWorker c0 = ChipWorker.open(runtime, 0); ChipWorker c1 = ChipWorker.open(runtime, 1);
             ChipWorker c2 = ChipWorker.open(runtime, 2)) {
            ThreadGroup group = new ThreadGroup("comm-group-maker");
            AtomicReference<CommGroup> opened = new AtomicReference<>();
            AtomicReference<Throwable> failure = new AtomicReference<>();
            Thread maker = new Thread(group, () -> {
                try {
                    CommGroup g = CommGroup.open(List.of(c0, c1, c2), dir.resolve("rootinfo"), Duration.ofSeconds(60));
                    opened.set(g);
                    g.barrier(); // ranks 0 and 1 on the group's threads, rank 2 on this one
                } catch (Throwable e) {
                    failure.set(e);
                }
            }, "maker");
            maker.start();
            maker.join();
            try (CommGroup comm = opened.get()) {
                assertThat(failure.get()).isNull();
                // (JNA's own cleaner thread may be in the group too: it is not ours)
                List<Thread> threads = CleanExitMain.alive(group).stream().filter(t -> t.getName().equals("ptorun-comm")).toList();
                assertThat(threads).as("one group thread per local rank but the last").hasSize(2);
                for (Thread t : threads) {
                    t.join(TimeUnit.SECONDS.toMillis(60)); // idle: each ends after its second
                    assertThat(t.isAlive()).as("an idle group thread ended").isFalse();
                }
                comm.barrier(); // new threads serve the next call
                assertThat(comm.onEveryRank(CommRank::rank)).containsExactly(0, 1, 2);
            }
        }
    }
}

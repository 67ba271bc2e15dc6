package org.ptorun;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReferenceArray;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.ptorun.SlotTable.Phase;

/**
 * The phase table raced: four threads make random calls on a depth-2 table with tokens
 * current and stale — admissions (some that admit no successor, some under an older
 * lease), launches that succeed, are refused or throw, polls, awaits and finalizes — and,
 * in half of the seeds, a fifth thread closes the table halfway. Every output is checked
 * against a model each run keeps while a thread holds its call:
 * <ul>
 *   <li>a call begins only while no other thread holds the slot (a holder count per slot);</li>
 *   <li>a begun call finds the run in the phase the model says, and finalize reports it;</li>
 *   <li>the model's every step is a transition the state machine has;</li>
 *   <li>a token whose run was finalized before the call is always refused;</li>
 *   <li>a slot admits a run only under a lease not older than its previous one;</li>
 *   <li>after close began, no call begins; close hands every unfinalized run over once;</li>
 *   <li>at the end every run was finalized exactly once and every slot is EMPTY.</li>
 * </ul>
 */
class SlotTableRaceTest {

    private static final int THREADS = 4;
    private static final int OPS = 20_000;

    /** What the model knows of one run; fields change only while a thread holds the slot's call. */
    private static final class Model {
        final NativeRun run;
        volatile Phase phase = Phase.PREPARING;
        volatile boolean finalized;
        final AtomicInteger finalizes = new AtomicInteger();

        Model(NativeRun run) {
            this.run = run;
        }
    }

    private final List<String> failures = new CopyOnWriteArrayList<>();
    private final Map<Long, Model> models = new ConcurrentHashMap<>();
    private final List<NativeRun> tokens = Collections.synchronizedList(new ArrayList<>());
    private final AtomicInteger[] holders = {new AtomicInteger(), new AtomicInteger()};
    private final AtomicLong epochs = new AtomicLong(1000);
    private final AtomicReferenceArray<List<Long>> generations = new AtomicReferenceArray<>(2);
    private volatile boolean closeBegun;

    @ParameterizedTest
    @ValueSource(longs = {1, 2, 3, 4, 5, 6})
    void everyOutputMatchesTheModel(long seed) throws Exception {
        SlotTable table = new SlotTable(2, "race chip");
        for (int s = 0; s < 2; s++) {
            generations.set(s, Collections.synchronizedList(new ArrayList<>()));
        }
        boolean closing = seed % 2 == 0;
        CyclicBarrier start = new CyclicBarrier(THREADS + (closing ? 1 : 0));
        CountDownLatch halfway = new CountDownLatch(THREADS);
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < THREADS; t++) {
            SplittableRandom random = new SplittableRandom(seed * 31 + t);
            threads.add(new Thread(() -> {
                try {
                    start.await();
                    for (int i = 0; i < OPS; i++) {
                        if (i == OPS / 2) {
                            halfway.countDown();
                        }
                        step(table, random);
                    }
                } catch (Throwable e) {
                    failures.add("thread died: " + e);
                }
            }, "race-" + t));
        }
        List<SlotTable.Finalizing> handedOver = new ArrayList<>();
        Thread closer = new Thread(() -> {
            try {
                start.await();
                halfway.await();
                SlotTable.Closing c = table.beginClose(60_000);
                closeBegun = true;
                if (!c.midCall().isEmpty()) {
                    failures.add("close gave up on calls that end at once: " + c.midCall());
                }
                for (SlotTable.Finalizing f : c.outstanding()) {
                    Model m = models.get(f.run().runEpoch());
                    if (m.phase != f.previous()) {
                        failures.add("close handed over " + f.run() + " as " + f.previous() + ", model " + m.phase);
                    }
                    m.finalizes.incrementAndGet();
                    m.finalized = true;
                    table.emptied(f.run().slot());
                    handedOver.add(f);
                }
            } catch (Throwable e) {
                failures.add("closer died: " + e);
            }
        }, "closer");
        threads.forEach(Thread::start);
        if (closing) {
            closer.start();
        }
        for (Thread t : threads) {
            t.join();
        }
        if (closing) {
            closer.join();
        } else {
            // finalize what is left, single-threaded, as close would
            for (NativeRun r : tokens) {
                Model m = models.get(r.runEpoch());
                if (!m.finalized) {
                    assertThat(table.beginFinalize(r).previous()).isEqualTo(m.phase);
                    m.finalizes.incrementAndGet();
                    m.finalized = true;
                    table.emptied(r.slot());
                }
            }
        }
        assertThat(failures).isEmpty();
        assertThat(models.values()).allSatisfy(m -> assertThat(m.finalizes.get()).as("%s", m.run).isEqualTo(1));
        assertThat(table.phaseOf(0)).isEqualTo(Phase.EMPTY);
        assertThat(table.phaseOf(1)).isEqualTo(Phase.EMPTY);
        for (int s = 0; s < 2; s++) {
            List<Long> g = generations.get(s);
            for (int i = 1; i < g.size(); i++) {
                assertThat(g.get(i)).as("slot %d's admitted generations never decrease", s)
                        .isGreaterThanOrEqualTo(g.get(i - 1));
            }
        }
        assertThat(models).as("the threads admitted runs").hasSizeGreaterThan(100);
    }

    /** One random call; a refusal must be one the table may give. */
    private void step(SlotTable table, SplittableRandom random) {
        int op = random.nextInt(6);
        if (op == 0 || tokens.isEmpty()) {
            admit(table, random);
            return;
        }
        NativeRun r = tokens.get(random.nextInt(Math.max(0, tokens.size() - 8), tokens.size()));
        Model m = models.get(r.runEpoch());
        boolean finalizedBefore = m.finalized;
        boolean closedBefore = closeBegun;
        try {
            switch (op) {
                case 1: {
                    table.beginLaunch(r);
                    hold(r, m, Phase.PREPARED, "launch");
                    int outcome = random.nextInt(4);
                    if (outcome == 0) {
                        release(r, m, Phase.RUNNING);
                        table.launched(r.slot());
                    } else if (outcome == 1) {
                        release(r, m, Phase.PREPARED);
                        table.launchFailed(r.slot(), PtoError.BUSY.code(), "busy");
                    } else if (outcome == 2) {
                        release(r, m, Phase.ENDED);
                        table.launchFailed(r.slot(), PtoError.KERNEL_FAULT.code(), "fault");
                    } else {
                        release(r, m, Phase.PREPARED);
                        table.launchAborted(r.slot());
                    }
                    break;
                }
                case 2:
                case 3: {
                    if (table.beginObserve(r, op == 2 ? "poll" : "await")) {
                        hold(r, m, Phase.RUNNING, "observe");
                        boolean ended = op == 3 || random.nextBoolean();
                        release(r, m, ended ? Phase.ENDED : Phase.RUNNING);
                        if (op == 3) {
                            table.awaited(r.slot(), 0, null);
                        } else {
                            table.polled(r.slot(), ended);
                        }
                    } else if (m.phase != Phase.ENDED) {
                        failures.add("an observation of " + r + " began nothing, but the model says " + m.phase);
                    }
                    break;
                }
                default: {
                    SlotTable.Finalizing f = table.beginFinalize(r);
                    Phase seen = m.phase;
                    hold(r, m, f.previous(), "finalize");
                    if (seen != Phase.PREPARED && seen != Phase.RUNNING && seen != Phase.ENDED) {
                        failures.add("finalize of " + r + " began in model phase " + seen);
                    }
                    m.finalizes.incrementAndGet();
                    m.finalized = true;
                    holders[r.slot()].decrementAndGet();
                    table.emptied(r.slot());
                    break;
                }
            }
        } catch (StaleRunException | IllegalStateException e) {
            if (e instanceof IllegalStateException && !e.getMessage().contains("is closed")) {
                failures.add("unexpected " + e);
            }
            return;
        }
        if (finalizedBefore) {
            failures.add("a call on " + r + " began although it was finalized before (op " + op + ")");
        }
        if (closedBefore) {
            failures.add("a call on " + r + " began after close began (op " + op + ")");
        }
    }

    private void admit(SlotTable table, SplittableRandom random) {
        int slot = random.nextInt(2);
        long generation = 1 + random.nextInt(4) + tokens.size() / 16; // mostly rising, sometimes older
        NativeRun r = new NativeRun(slot, generation, epochs.incrementAndGet(), 1, 1);
        boolean closedBefore = closeBegun;
        try {
            table.admit(r, random.nextInt(4) == 0 ? "no overlap" : null, true, 1000);
        } catch (ChipBusyException | LeaseRejectedException | IllegalStateException e) {
            return;
        }
        if (closedBefore) {
            failures.add("an admission began after close began: " + r);
        }
        if (holders[slot].incrementAndGet() != 1) {
            failures.add("slot " + slot + " admitted " + r + " while another thread held it");
        }
        generations.get(slot).add(generation);
        Model m = new Model(r);
        models.put(r.runEpoch(), m);
        if (random.nextInt(5) == 0) { // the native prepare failed
            m.finalizes.incrementAndGet();
            m.finalized = true;
            holders[slot].decrementAndGet();
            table.emptied(slot);
            tokens.add(r); // a stale token from now on
            return;
        }
        m.phase = Phase.PREPARED;
        holders[slot].decrementAndGet();
        table.prepared(slot);
        tokens.add(r);
    }

    /** A call began on r: this thread must be the slot's only holder, and the run in {@code expected}. */
    private void hold(NativeRun r, Model m, Phase expected, String call) {
        if (holders[r.slot()].incrementAndGet() != 1) {
            failures.add(call + " of " + r + " began while another thread held slot " + r.slot());
        }
        if (m.phase != expected) {
            failures.add(call + " of " + r + " began in phase " + expected + ", model " + m.phase);
        }
    }

    /** The call on r ends with the run in {@code phase} (the model moves first: the table's end publishes it). */
    private void release(NativeRun r, Model m, Phase phase) {
        m.phase = phase;
        holders[r.slot()].decrementAndGet();
    }
}

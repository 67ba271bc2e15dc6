package org.ptorun;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** Run epochs: process-wide, first 1, never 0, unique and increasing across threads, overflow refused. */
class RunEpochsTest {

    @Test
    void aFreshCounterStartsAtOne() {
        RunEpochs counter = new RunEpochs(0);
        assertThat(counter.mint()).isEqualTo(1);
        assertThat(counter.mint()).isEqualTo(2);
    }

    @Test
    void epochsAreUniqueAndIncreasingPerThreadAcrossThreads() throws Exception {
        int threads = 6;
        int perThread = 20_000;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        CountDownLatch start = new CountDownLatch(1);
        try {
            List<Future<long[]>> results = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                Callable<long[]> minter = () -> {
                    start.await();
                    long[] mine = new long[perThread];
                    for (int i = 0; i < perThread; i++) {
                        mine[i] = RunEpochs.next();
                    }
                    return mine;
                };
                results.add(pool.submit(minter));
            }
            start.countDown();
            Set<Long> all = new HashSet<>();
            for (Future<long[]> f : results) {
                long[] mine = f.get(60, TimeUnit.SECONDS);
                for (int i = 0; i < mine.length; i++) {
                    assertThat(mine[i]).isPositive();
                    if (i > 0) {
                        assertThat(mine[i]).isGreaterThan(mine[i - 1]);
                    }
                    all.add(mine[i]);
                }
            }
            assertThat(all).hasSize(threads * perThread);
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void theLastU64EpochIsMintedAndThenTheCounterRefuses() {
        RunEpochs counter = new RunEpochs(-3L);
        assertThat(counter.mint()).isEqualTo(-2L);
        assertThat(counter.mint()).isEqualTo(-1L);
        assertThatThrownBy(counter::mint).isInstanceOf(IllegalStateException.class).hasMessageContaining("exhausted");
        assertThatThrownBy(counter::mint).isInstanceOf(IllegalStateException.class);
    }
}

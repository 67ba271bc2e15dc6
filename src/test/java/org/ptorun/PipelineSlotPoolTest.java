package org.ptorun;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** PipelineSlotPool (the mint) and the ChipWorker's generation filter (the consumer). */
class PipelineSlotPoolTest {

    @Test
    void leasesTakeTheLowestFreeSlotWithStrictlyIncreasingGenerations() {
        PipelineSlotPool pool = new PipelineSlotPool(2);
        PipelineSlotLease a = pool.tryAcquire().orElseThrow();
        PipelineSlotLease b = pool.tryAcquire().orElseThrow();
        assertThat(a).isEqualTo(PipelineSlotLease.of(0, 1));
        assertThat(b).isEqualTo(PipelineSlotLease.of(1, 1));
        assertThat(pool.tryAcquire()).isEmpty();
        assertThat(pool.available()).isZero();
        assertThat(pool.release(a)).isTrue();
        assertThat(pool.release(a)).as("idempotent for the current lease").isTrue();
        PipelineSlotLease c = pool.tryAcquire().orElseThrow();
        assertThat(c).isEqualTo(PipelineSlotLease.of(0, 2));
        assertThat(pool.owns(c)).isTrue();
        assertThat(pool.owns(a)).as("superseded").isFalse();
        assertThat(pool.release(a)).as("a superseded lease cannot release").isFalse();
        assertThat(pool.owns(c)).isTrue();
        assertThat(pool.owns(new PipelineSlotLease(0, 1, 2))).as("reserved != 0").isFalse();
        assertThat(pool.owns(PipelineSlotLease.of(5, 1))).isFalse();
        assertThat(pool.release(null)).isFalse();
    }

    @Test
    void theDepthComesFromTheContractAndIsOneOrTwo() {
        assertThat(new PipelineSlotPool(ChipWorkerPhaseTableTest.DEPTH1).depth()).isEqualTo(1);
        assertThat(new PipelineSlotPool(ChipWorkerPhaseTableTest.DEPTH2).depth()).isEqualTo(2);
        assertThatThrownBy(() -> new PipelineSlotPool(0)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new PipelineSlotPool(3)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void generationExhaustionIsAnError() {
        PipelineSlotPool pool = new PipelineSlotPool(1);
        pool.setGenerationForTest(0, -2L);
        PipelineSlotLease last = pool.tryAcquire().orElseThrow();
        assertThat(last.generation()).isEqualTo(-1L);
        pool.release(last);
        assertThatThrownBy(pool::tryAcquire).isInstanceOf(IllegalStateException.class).hasMessageContaining("exhausted");
    }

    @Test
    void aBlockedAcquireParksUntilARelease() throws Exception {
        PipelineSlotPool pool = new PipelineSlotPool(1);
        PipelineSlotLease held = pool.acquire();
        CompletableFuture<PipelineSlotLease> waiter = CompletableFuture.supplyAsync(() -> {
            try {
                return pool.acquire();
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
        assertThat(pool.acquire(0, TimeUnit.MILLISECONDS)).isEmpty();
        pool.release(held);
        assertThat(waiter.get(30, TimeUnit.SECONDS)).isEqualTo(PipelineSlotLease.of(0, 2));
        Optional<PipelineSlotLease> none = pool.acquire(1, TimeUnit.MILLISECONDS);
        assertThat(none).isEmpty();
    }
}

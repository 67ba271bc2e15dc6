package org.ptorun;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.ptorun.internal.NativeMemory;

/** AcceptanceWord: acquire reads of what native code stores, reset, capture, close. */
class AcceptanceWordTest {

    @Test
    void readsWhatIsStoredAtItsAddressFromAnotherThread() throws Exception {
        try (AcceptanceWord word = AcceptanceWord.allocate()) {
            assertThat(word.value()).isZero();
            assertThat(word.isAccepted()).isFalse();
            assertThat(word.acceptedValue()).isEqualTo(1);
            // a native-style plain store of 1 into the int32, from another thread
            CompletableFuture.runAsync(() -> NativeMemory.view(word.address(), 4).putInt(0, 1))
                    .get(30, TimeUnit.SECONDS);
            assertThat(word.isAccepted()).isTrue();
            assertThat(word.value()).isEqualTo(1);
            word.reset();
            assertThat(word.value()).isZero();
            assertThat(word.address() % 4).isZero();
        }
    }

    @Test
    void zeroIsNotAnAcceptedValue() {
        assertThatThrownBy(() -> AcceptanceWord.allocate(0)).isInstanceOf(IllegalArgumentException.class);
        try (AcceptanceWord word = AcceptanceWord.allocate(-7)) {
            assertThat(word.acceptedValue()).isEqualTo(-7);
        }
    }

    @Test
    void aCapturedWordRefusesResetCloseAndASecondCapture() {
        AcceptanceWord word = AcceptanceWord.allocate();
        NativeRun run = new NativeRun(0, 1, 12, 3, 4);
        word.capture(run);
        assertThat(word.isCaptured()).isTrue();
        assertThatThrownBy(word::reset).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining(run.identity());
        assertThatThrownBy(word::close).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> word.capture(run)).isInstanceOf(IllegalArgumentException.class);
        word.release();
        word.reset();
        word.close();
        word.close();
        assertThatThrownBy(word::value).isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
        assertThatThrownBy(() -> word.capture(run)).isInstanceOf(IllegalStateException.class);
        assertThat(word.toString()).contains("closed");
    }

    @Test
    void aWordPlacedInAnArenaReadsTheArenaWhileCapturedAndKeepsTheValueAfter() {
        try (AcceptanceWord word = AcceptanceWord.allocate(3);
             org.ptorun.internal.OffHeapBlock arena = org.ptorun.internal.OffHeapBlock.allocate(8, 8)) {
            NativeRun run = new NativeRun(0, 1, 12, 3, 4);
            arena.buffer().putInt(0, 99); // stale: capture sets it to the word's value
            word.capture(run, arena);
            assertThat(word.placedAddress()).isEqualTo(arena.address());
            assertThat(word.value()).isZero();
            arena.buffer().putInt(0, 3); // the chip host's store at the launch marker
            assertThat(word.isAccepted()).isTrue();
            word.release();
            arena.buffer().putInt(0, 0); // the slot's next run reuses the arena word
            assertThat(word.value()).as("the value the run left").isEqualTo(3);
            assertThat(word.placedAddress()).isEqualTo(word.address());
            word.reset();
            assertThat(word.value()).isZero();
        }
    }
}

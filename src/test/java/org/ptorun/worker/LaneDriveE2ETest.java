package org.ptorun.worker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.ptorun.ChipWorker;
import org.ptorun.HostRuntime;
import org.ptorun.Variant;

/** The lane's rule, enforced: only the thread holding a lane's drive moves its runs. */
class LaneDriveE2ETest {

    @Test
    void aThreadWithoutTheDriveIsRefusedAndTheDriveIsHeldByOneThreadAtATime() throws Exception {
        ChipWorker chip = ChipWorker.open(HostRuntime.load(Variant.parse("a2a3/sim/hbg")), 0);
        DrainLedger ledger = new DrainLedger(1);
        AdmissionQueue queue = new AdmissionQueue(4, new int[] {0}, ChipSelection.ROUND_ROBIN, false, i -> true,
                ledger, Runnable::run);
        ChipLane lane = new ChipLane(chip, 0, 2, queue, ledger);
        try {
            assertThatThrownBy(lane::step).isInstanceOf(IllegalStateException.class)
                    .hasMessage("thread \"" + Thread.currentThread().getName()
                            + "\" does not drive the lane of device 0");
            assertThatThrownBy(lane::waitForDevice).isInstanceOf(IllegalStateException.class);

            assertThat(lane.tryDrive()).isTrue();
            assertThat(lane.step()).as("nothing queued").isZero();
            assertThat(CompletableFuture.supplyAsync(lane::tryDrive).get())
                    .as("another thread cannot take a held drive").isFalse();
            lane.releaseDrive();
            assertThat(CompletableFuture.supplyAsync(() -> {
                boolean taken = lane.tryDrive();
                if (taken) {
                    lane.releaseDrive();
                }
                return taken;
            }).get()).as("a released drive can be taken by any thread").isTrue();
        } finally {
            lane.closeChip();
        }
        assertThat(lane.state()).isEqualTo(LaneState.CLOSED);
        assertThat(chip.isClosed()).isTrue();
    }
}

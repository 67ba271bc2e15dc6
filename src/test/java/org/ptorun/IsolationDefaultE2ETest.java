package org.ptorun;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/**
 * A chip opened without a choice takes the isolation {@code -Dptorun.isolation} names: the
 * test build runs its suites once in process and once with {@code process} (the pom's
 * process-isolation execution), and this proves which one ran.
 */
class IsolationDefaultE2ETest {

    @Test
    void aChipOpenedWithoutAChoiceTakesTheConfiguredIsolation() {
        boolean process = "process".equals(System.getProperty(ChipIsolation.PROPERTY));
        try (ChipWorker chip = ChipWorker.open(HostRuntime.load(Variant.DEFAULT), 0)) {
            assertThat(chip.isolation()).isEqualTo(process ? ChipIsolation.PROCESS : ChipIsolation.IN_PROCESS);
            assertThat(chip.processId().isPresent()).isEqualTo(process);
        }
    }
}

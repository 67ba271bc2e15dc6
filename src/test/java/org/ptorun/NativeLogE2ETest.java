package org.ptorun;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Locale;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.ptorun.internal.NativeLog;
import org.ptorun.testlog.LogCapture;
import org.slf4j.event.Level;

/** Native log records reach SLF4J (logger org.ptorun.native) through the drain, not stderr. */
class NativeLogE2ETest {

    static List<Variant> variants() {
        return Variant.all();
    }

    @ParameterizedTest
    @MethodSource("variants")
    void anOnboardOpenLogsItsDriverAtInfoAndASimOpenLogsNothing(Variant variant) {
        List<LogCapture.Event> events;
        try (LogCapture logs = LogCapture.open()) {
            try (ChipWorker chip = ChipWorker.open(HostRuntime.load(variant), 0)) {
                assertThat(chip).isNotNull();
            }
            events = logs.events().stream().filter(e -> e.logger().equals(NativeLog.LOGGER_NAME)).toList();
        }
        if (variant.platform() == Variant.Platform.SIM) {
            assertThat(events).isEmpty();
            return;
        }
        String arch = variant.arch().name().toLowerCase(Locale.ROOT);
        assertThat(events).hasSize(1);
        LogCapture.Event driver = events.get(0);
        assertThat(driver.level()).isEqualTo(Level.INFO);
        assertThat(driver.message())
                .startsWith(variant + ": onboard " + arch + " device 0 uses driver ")
                .contains("libptorun_emudrv.so");
    }
}

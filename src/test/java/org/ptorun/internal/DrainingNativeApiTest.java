package org.ptorun.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.reflect.Proxy;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * When {@link DrainingNativeApi} looks at the native log: never after a successful run
 * phase except every {@value DrainingNativeApi#FINALIZES_PER_DRAIN}th finalize, always
 * after a failed one, always after a call of another kind.
 */
class DrainingNativeApiTest {

    /** Answers every call from {@code results} (0 by default) and counts the calls by name. */
    private static final class Scripted {
        final Map<String, Integer> results = new HashMap<>();
        final Map<String, Integer> calls = new HashMap<>();
        final NativeApi api = (NativeApi) Proxy.newProxyInstance(NativeApi.class.getClassLoader(),
                new Class<?>[] {NativeApi.class}, (proxy, method, args) -> {
                    calls.merge(method.getName(), 1, Integer::sum);
                    int rc = results.getOrDefault(method.getName(), 0);
                    Class<?> type = method.getReturnType();
                    return type == int.class ? rc : type == long.class ? (Object) (long) rc : null;
                });

        int count(String name) {
            return calls.getOrDefault(name, 0);
        }
    }

    private final Scripted lib = new Scripted();
    private final DrainingNativeApi api = new DrainingNativeApi(lib.api, new NativeLog(lib.api, "test/variant"));

    @Test
    void successfulPhasesDoNotLookAtTheLogButEveryNthFinalizeDoes() {
        int cycles = 3 * DrainingNativeApi.FINALIZES_PER_DRAIN + 5;
        for (int i = 0; i < cycles; i++) {
            assertThat(api.prepareRun(1, 2, 0, 3, 4, 5)).isZero();
            assertThat(api.launchRun(1, 2)).isZero();
            assertThat(api.pollRun(1, 2)).isZero();
            assertThat(api.waitRun(1, 2)).isZero();
            assertThat(api.finalizeRun(1, 2)).isZero();
        }
        assertThat(lib.count("finalizeRun")).isEqualTo(cycles);
        assertThat(lib.count("logPending")).isEqualTo(3);
    }

    @Test
    void everyFailedPhaseDrainsTheLogAndReturnsItsCode() {
        String[] phases = {"prepareRun", "launchRun", "pollRun", "waitRun", "finalizeRun"};
        for (int i = 0; i < phases.length; i++) {
            lib.results.put(phases[i], -6);
            int rc = switch (phases[i]) {
                case "prepareRun" -> api.prepareRun(1, 2, 0, 3, 4, 5);
                case "launchRun" -> api.launchRun(1, 2);
                case "pollRun" -> api.pollRun(1, 2);
                case "waitRun" -> api.waitRun(1, 2);
                default -> api.finalizeRun(1, 2);
            };
            lib.results.remove(phases[i]);
            assertThat(rc).as(phases[i]).isEqualTo(-6);
            assertThat(lib.count("logPending")).as("drains after a failed " + phases[i]).isEqualTo(i + 1);
        }
    }

    @Test
    void aPollThatSeesTheEndIsNotAFailure() {
        lib.results.put("pollRun", 1);
        assertThat(api.pollRun(1, 2)).isEqualTo(1);
        assertThat(lib.count("logPending")).isZero();
    }

    @Test
    void recordsWaitingAreMovedOutWhenItDrains() {
        lib.results.put("logPending", 1);
        lib.results.put("launchRun", -9);
        api.launchRun(1, 2);
        assertThat(lib.count("logNext")).as("the drain asked for the waiting records").isEqualTo(1);
        api.committedDeviceMemory(1);
        assertThat(lib.count("logPending")).as("a call of another kind drains every time").isEqualTo(2);
    }
}

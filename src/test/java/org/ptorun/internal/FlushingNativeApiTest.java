package org.ptorun.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * When the generated {@link FlushingNativeApi}, through {@link NativeLogFlush}, looks at the
 * native log: never after a successful run phase except every
 * {@value NativeLogFlush#FINALIZES_PER_FLUSH}th finalize, always after a failed one, never
 * after a call that records nothing, always after a call of another kind — a new export
 * included.
 */
class FlushingNativeApiTest {

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
    private final FlushingNativeApi api =
            new FlushingNativeApi(lib.api, new NativeLogFlush(new NativeLog(lib.api, "test/variant")));

    @Test
    void successfulPhasesDoNotLookAtTheLogButEveryNthFinalizeDoes() {
        int cycles = 3 * NativeLogFlush.FINALIZES_PER_FLUSH + 5;
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
            assertThat(lib.count("logPending")).as("flushes after a failed " + phases[i]).isEqualTo(i + 1);
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
        assertThat(lib.count("logNext")).as("the flush asked for the waiting records").isEqualTo(1);
        api.committedDeviceMemory(1);
        assertThat(lib.count("logPending")).as("a call of another kind flushes every time").isEqualTo(2);
    }

    /**
     * Every contract function, called once through the generated class with zero
     * arguments: the ones that record nothing and the successful phases leave the log
     * alone, every other flushes — so an export the policy does not name flushes.
     */
    @Test
    void everyOtherCallDrainsOnceAndTheSilentOnesNever() throws Exception {
        Set<String> quiet = new HashSet<>(NativeLogFlush.SILENT);
        quiet.addAll(NativeLogFlush.PHASES);
        quiet.add(NativeLogFlush.FINALIZE);
        for (String symbol : NativeApi.SYMBOLS) {
            Method m = byCName(symbol);
            int before = lib.count("logPending");
            Object[] args = new Object[m.getParameterCount()];
            Class<?>[] types = m.getParameterTypes();
            for (int i = 0; i < args.length; i++) {
                args[i] = types[i] == int.class ? (Object) 0 : (Object) 0L;
            }
            m.invoke(api, args);
            int itself = symbol.equals("ptorun_log_pending") ? 1 : 0; // the call under test, no flush
            assertThat(lib.count("logPending") - before - itself).as(symbol)
                    .isEqualTo(quiet.contains(symbol) ? 0 : 1);
        }
    }

    /** The method of the generated class that calls {@code cName}. */
    private static Method byCName(String cName) {
        for (Method m : FlushingNativeApi.class.getDeclaredMethods()) {
            if (m.getName().equals(javaName(cName)) && !m.isSynthetic()) {
                return m;
            }
        }
        throw new AssertionError("no method for " + cName);
    }

    /** The naming rule of the generator (src/build/java/GenerateBindings.java). */
    private static String javaName(String cName) {
        String n = cName.replaceFirst("^(simpler_|ptorun_|get_)", "").replaceFirst("_ctx$", "");
        StringBuilder out = new StringBuilder();
        boolean upper = false;
        for (char c : n.toCharArray()) {
            if (c == '_') {
                upper = true;
            } else {
                out.append(upper ? Character.toUpperCase(c) : c);
                upper = false;
            }
        }
        return out.toString();
    }

    @Test
    void thePolicyNamesOnlyFunctionsOfTheContract() {
        assertThat(NativeApi.SYMBOLS).containsAll(NativeLogFlush.SILENT).containsAll(NativeLogFlush.PHASES)
                .contains(NativeLogFlush.FINALIZE);
        assertThatThrownBy(() -> NativeLogFlush.rules(List.of("simpler_prepare_run")))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("which the contract lacks");
    }
}

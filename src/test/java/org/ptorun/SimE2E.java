package org.ptorun;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;
import org.junit.jupiter.params.provider.Arguments;
import org.ptorun.internal.NativeApi;
import org.ptorun.internal.OffHeapBlock;

/**
 * Shared helpers of the end-to-end tests on the four sim libraries: the variants, the
 * test libraries built from src/test/c, f32 data and comparisons, and a ChipWorker
 * that can register raw callable bytes (for malformed callables the builders refuse).
 */
final class SimE2E {

    static final float SENTINEL = -12345.5f;

    private SimE2E() {
    }

    /** a2a3/sim/hbg, a2a3/sim/trb, a5/sim/hbg, a5/sim/trb. */
    /** Every sim variant with every item: the arguments of a test parameterized by both. */
    static <T> Stream<Arguments> simVariantsWith(List<T> items) {
        return simVariants().stream().flatMap(v -> items.stream().map(item -> Arguments.of(v, item)));
    }

    static List<Variant> simVariants() {
        return Variant.all().stream().filter(v -> v.platform() == Variant.Platform.SIM).toList();
    }

    /** All eight libraries: the end-to-end suites run the same callables on sim and onboard. */
    static List<Variant> allVariants() {
        return Variant.all();
    }

    static List<Variant> allTrbVariants() {
        return allVariants().stream().filter(v -> v.runtime() == Variant.RuntimeKind.TRB).toList();
    }

    static List<Variant> simTrbVariants() {
        return simVariants().stream().filter(v -> v.runtime() == Variant.RuntimeKind.TRB).toList();
    }

    static List<Variant.Arch> arches() {
        return List.of(Variant.Arch.values());
    }

    static Variant sim(Variant.Arch arch, Variant.RuntimeKind runtime) {
        return new Variant(arch, Variant.Platform.SIM, runtime);
    }

    static boolean isTrb(Variant v) {
        return v.runtime() == Variant.RuntimeKind.TRB;
    }

    /** A library of target/native-test (system property ptorun.nativeTestDir, set by the pom). */
    static Path testLibrary(String fileName) {
        String dir = System.getProperty("ptorun.nativeTestDir");
        assertThat(dir).as("system property ptorun.nativeTestDir (set by the pom's surefire configuration)")
                .isNotNull();
        Path lib = Path.of(dir, fileName);
        assertThat(Files.isRegularFile(lib)).as(lib + " is built by src/test/c (make)").isTrue();
        return lib;
    }

    static Path kernelLibrary() {
        return testLibrary("libptorun_test_kernels.so");
    }

    static Path orchestrationLibrary() {
        return testLibrary("libptorun_test_orch.so");
    }

    // ---- data ---------------------------------------------------------------------------------

    static float[] random(int n, long seed) {
        SplittableRandom rnd = new SplittableRandom(seed);
        float[] x = new float[n];
        for (int i = 0; i < n; i++) {
            x[i] = (float) (rnd.nextDouble() * 8 - 4);
        }
        return x;
    }

    static float[] filled(int n) {
        float[] x = new float[n];
        Arrays.fill(x, SENTINEL);
        return x;
    }

    static void assertBitExact(float[] actual, float[] expected) {
        assertThat(actual).hasSize(expected.length);
        for (int i = 0; i < expected.length; i++) {
            if (Float.floatToRawIntBits(actual[i]) != Float.floatToRawIntBits(expected[i])) {
                throw new AssertionError("element " + i + ": " + actual[i] + " != reference " + expected[i]
                        + " (0x" + Integer.toHexString(Float.floatToRawIntBits(actual[i])) + " vs 0x"
                        + Integer.toHexString(Float.floatToRawIntBits(expected[i])) + ")");
            }
        }
    }

    static String lower(Enum<?> e) {
        return e.name().toLowerCase(Locale.ROOT);
    }

    // ---- raw callables --------------------------------------------------------------------------

    /**
     * A ChipWorker over {@code variant} whose next {@code registerCallable} hands the
     * library {@link RawChip#nextRegistration} bytes instead of the callable's own
     * (the ChipWorker still takes the signature from the callable it was given).
     */
    static RawChip openRaw(Variant variant) {
        HostRuntime runtime = HostRuntime.load(variant);
        AtomicReference<byte[]> next = new AtomicReference<>();
        NativeApi real = runtime.api();
        InvocationHandler handler = (proxy, method, args) -> {
            byte[] raw = method.getName().equals("registerCallable") ? next.getAndSet(null) : null;
            try {
                if (raw == null) {
                    return method.invoke(real, args);
                }
                // exactly the raw bytes, so a decoder reading past them would read past the block
                try (OffHeapBlock block = OffHeapBlock.allocate(Math.max(raw.length, 1), 64)) {
                    block.buffer().put(0, raw);
                    return real.registerCallable((long) args[0], (int) args[1], block.address());
                }
            } catch (InvocationTargetException e) {
                throw e.getCause();
            }
        };
        NativeApi api = (NativeApi) Proxy.newProxyInstance(NativeApi.class.getClassLoader(),
                new Class<?>[] {NativeApi.class}, handler);
        String arch = lower(variant.arch());
        ChipWorker chip = new ChipWorker(api, variant, runtime.contract(), runtime.runStorageSize(),
                runtime.runStorageAlignment(), 0, ChipWorker.readImage("libptorun_aicpu_" + arch + ".so"),
                ChipWorker.readImage("libptorun_aicore_" + arch + ".so"));
        return new RawChip(chip, next);
    }

    /** A ChipWorker and the raw bytes its next registration uses. */
    record RawChip(ChipWorker chip, AtomicReference<byte[]> nextRegistration) implements AutoCloseable {
        @Override
        public void close() {
            chip.close();
        }
    }
}

package org.ptorun;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import org.ptorun.internal.NativeArch;

/**
 * One of the eight host-runtime libraries: arch × platform × runtime.
 *
 * <p>{@code Variant.parse("a2a3/sim/hbg")}; {@link #DEFAULT} is a2a3/sim/hbg.
 */
public record Variant(Arch arch, Platform platform, RuntimeKind runtime) {

    /**
     * Chip architecture: geometry, host mapping, run streams, pipeline contracts. Its
     * figures are the library's own, src/main/c/arch/arch.h's branch for the arch
     * (generated into {@code org.ptorun.internal.NativeArch}).
     */
    public enum Arch {
        A2A3,
        A5;

        /** arch.h's branch of the same name. */
        private final NativeArch table = NativeArch.valueOf(name());

        /** AICPU threads a run gets when {@code aicpu_thread_num} is 0. */
        public int defaultAicpuThreads() {
            return table.PTO_ARCH_AICPU_THREADS_DEFAULT;
        }

        /** The largest legal {@code aicpu_thread_num}. */
        public int maxAicpuThreads() {
            return table.PTO_ARCH_AICPU_THREADS_MAX;
        }

        /** Blocks of the chip: the largest legal {@code block_dim}. */
        public int maxBlockDim() {
            return table.PTO_ARCH_MAX_BLOCKS;
        }
    }

    /** Where the device lives: simulated in-process, or reached through a driver. */
    public enum Platform { SIM, ONBOARD }

    /** Which runtime builds and runs the task graph. */
    public enum RuntimeKind {
        /** host_build_graph: orchestration on the host during prepare. */
        HBG,
        /** tensormap_and_ringbuffer: orchestration on the device at launch. */
        TRB
    }

    /** a2a3/sim/hbg. */
    public static final Variant DEFAULT = new Variant(Arch.A2A3, Platform.SIM, RuntimeKind.HBG);

    public Variant {
        Objects.requireNonNull(arch, "arch");
        Objects.requireNonNull(platform, "platform");
        Objects.requireNonNull(runtime, "runtime");
    }

    /**
     * Parses {@code "<arch>/<platform>/<runtime>"}, e.g. {@code "a5/onboard/trb"}, ignoring case;
     * an unknown part is refused with the accepted values.
     */
    public static Variant parse(String text) {
        Objects.requireNonNull(text, "text");
        String[] parts = text.trim().split("/", -1);
        if (parts.length != 3) {
            throw new IllegalArgumentException(
                    "variant '" + text + "' is not <arch>/<platform>/<runtime>, e.g. a2a3/sim/hbg");
        }
        return new Variant(
                parsePart(Arch.class, parts[0], text),
                parsePart(Platform.class, parts[1], text),
                parsePart(RuntimeKind.class, parts[2], text));
    }

    private static <E extends Enum<E>> E parsePart(Class<E> type, String part, String text) {
        String wanted = part.trim();
        for (E value : type.getEnumConstants()) {
            if (value.name().equalsIgnoreCase(wanted)) {
                return value;
            }
        }
        List<String> allowed = new ArrayList<>();
        for (E value : type.getEnumConstants()) {
            allowed.add(value.name().toLowerCase(Locale.ROOT));
        }
        throw new IllegalArgumentException("variant '" + text + "': '" + part + "' is not " + KINDS.get(type)
                + "; expected one of " + String.join(", ", allowed) + " (any case)");
    }

    private static final java.util.Map<Class<?>, String> KINDS = java.util.Map.of(
            Arch.class, "an arch", Platform.class, "a platform", RuntimeKind.class, "a runtime");

    /** All eight variants, sim before onboard. */
    public static List<Variant> all() {
        List<Variant> all = new ArrayList<>(8);
        for (Platform p : Platform.values()) {
            for (Arch a : Arch.values()) {
                for (RuntimeKind r : RuntimeKind.values()) {
                    all.add(new Variant(a, p, r));
                }
            }
        }
        return List.copyOf(all);
    }

    /** The library's base name without prefix and suffix: {@code ptorun_a2a3_sim_hbg}. */
    public String libraryName() {
        return "ptorun_" + lower(arch) + "_" + lower(platform) + "_" + lower(runtime);
    }

    /** The file name: {@code libptorun_a2a3_sim_hbg.so}. */
    public String libraryFileName() {
        return "lib" + libraryName() + ".so";
    }

    private static String lower(Enum<?> e) {
        return e.name().toLowerCase(Locale.ROOT);
    }

    /** {@code a2a3/sim/hbg}: the same text {@code ptorun_variant()} returns. */
    @Override
    public String toString() {
        return lower(arch) + "/" + lower(platform) + "/" + lower(runtime);
    }
}

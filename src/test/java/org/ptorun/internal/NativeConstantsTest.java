package org.ptorun.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.ptorun.PtoError;
import org.ptorun.Variant;

/**
 * The generated tables ({@link NativeConstants} from the public header, {@link NativeArch}
 * from arch.h) as the Java side uses them: every status code the header defines has its
 * {@link PtoError} constant, and {@link Variant.Arch} is arch.h's arches, figure for
 * figure. LayoutsTest compares the constants the layouts use with the C compiler's
 * values; CallConfigAgreementE2ETest, the arch figures with the libraries'.
 */
class NativeConstantsTest {

    @Test
    void everyStatusCodeOfTheHeaderHasItsPtoError() throws Exception {
        Map<String, Integer> header = new HashMap<>();
        for (Field f : NativeConstants.class.getFields()) {
            if (Modifier.isStatic(f.getModifiers())
                    && f.getName().matches("PTO_OK|PTO_ERR_\\w+|PTO_RUNTIME_ERR_\\w+")) {
                header.put(f.getName(), f.getInt(null));
            }
        }
        assertThat(header).as("NativeConstants' status codes").hasSizeGreaterThan(10).containsKey("PTO_ERR_POISONED");
        Map<String, Integer> java = new HashMap<>();
        for (PtoError e : PtoError.values()) {
            java.put(e.cName(), e.code());
        }
        assertThat(java).as("org.ptorun.PtoError, name for name and value for value").isEqualTo(header);
    }

    @Test
    void theArchesAreArchHsBranches() {
        assertThat(Arrays.stream(Variant.Arch.values()).map(Enum::name))
                .containsExactlyElementsOf(Arrays.stream(NativeArch.values()).map(Enum::name).toList());
        for (Variant.Arch a : Variant.Arch.values()) {
            NativeArch c = NativeArch.valueOf(a.name());
            assertThat(c.PTO_ARCH_NAME).isEqualTo(a.name().toLowerCase(java.util.Locale.ROOT));
            assertThat(a.maxBlockDim()).isEqualTo(c.PTO_ARCH_MAX_BLOCKS);
            assertThat(a.maxAicpuThreads()).isEqualTo(c.PTO_ARCH_AICPU_THREADS_MAX);
            assertThat(a.defaultAicpuThreads()).isEqualTo(c.PTO_ARCH_AICPU_THREADS_DEFAULT)
                    .isBetween(NativeConstants.PTO_AICPU_THREADS_MIN, c.PTO_ARCH_AICPU_THREADS_MAX);
        }
    }

    @Test
    void theContractIsBoundUnderTheNamingRule() {
        assertThat(NativeApi.SYMBOLS).hasSize(NativeApi.class.getDeclaredMethods().length)
                .doesNotHaveDuplicates().contains("device_poisoned_ctx", "comm_get_local_window_base");
        assertThat(Arrays.stream(NativeApi.class.getDeclaredMethods()).map(m -> m.getName()))
                .contains("devicePoisoned", "commGetLocalWindowBase", "arenaBankGmHeapBase", "init", "variant");
    }
}

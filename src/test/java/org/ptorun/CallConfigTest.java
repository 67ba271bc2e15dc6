package org.ptorun;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** CallConfig: its 1144 bytes at the offsets of abi.md, and every validation rule. */
class CallConfigTest {

    private static ByteBuffer bytesOf(CallConfig c, int offset, byte fill) {
        ByteBuffer b = ByteBuffer.allocate(offset + 1144 + 8).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < b.capacity(); i++) {
            b.put(i, fill);
        }
        c.writeTo(b, offset);
        return b;
    }

    @Test
    void everyFieldLandsAtItsOffset() {
        CallConfig c = CallConfig.builder()
                .aicpuThreadNum(3).blockDim(17)
                .enableTrace(true).enableDumpArgs(false).enableDepGraph(true)
                .timeoutMs(1234)
                .ringTaskWindow(0, 4).ringTaskWindow(1, 8).ringTaskWindow(2, 16).ringTaskWindow(3, 1 << 20)
                .ringHeap(0, 1024).ringHeap(3, 1L << 33)
                .ringDepPool(1, 4).ringDepPool(2, 99)
                .outputPrefix("/tmp/out-é")
                .build();
        int base = 16;
        ByteBuffer b = bytesOf(c, base, (byte) 0x5A);
        assertThat(b.getInt(base)).isEqualTo(3);
        assertThat(b.getInt(base + 4)).isEqualTo(17);
        assertThat(b.getInt(base + 8)).isEqualTo(1);
        assertThat(b.getInt(base + 12)).isZero();
        assertThat(b.getInt(base + 16)).isEqualTo(1);
        assertThat(b.getInt(base + 20)).isEqualTo(1234);
        assertThat(b.getLong(base + 24)).isEqualTo(4);
        assertThat(b.getLong(base + 32)).isEqualTo(8);
        assertThat(b.getLong(base + 40)).isEqualTo(16);
        assertThat(b.getLong(base + 48)).isEqualTo(1 << 20);
        assertThat(b.getLong(base + 56)).isEqualTo(1024);
        assertThat(b.getLong(base + 64)).isZero();
        assertThat(b.getLong(base + 72)).isZero();
        assertThat(b.getLong(base + 80)).isEqualTo(1L << 33);
        assertThat(b.getLong(base + 88)).isZero();
        assertThat(b.getLong(base + 96)).isEqualTo(4);
        assertThat(b.getLong(base + 104)).isEqualTo(99);
        assertThat(b.getLong(base + 112)).isZero();
        byte[] prefix = "/tmp/out-é".getBytes(StandardCharsets.UTF_8);
        for (int i = 0; i < prefix.length; i++) {
            assertThat(b.get(base + 120 + i)).isEqualTo(prefix[i]);
        }
        for (int i = prefix.length; i < 1024; i++) {
            assertThat(b.get(base + 120 + i)).as("prefix byte %d", i).isZero();
        }
        assertThat(b.get(base - 1)).as("nothing before").isEqualTo((byte) 0x5A);
        assertThat(b.get(base + 1144)).as("nothing after").isEqualTo((byte) 0x5A);
    }

    @Test
    void theDefaultIsAllZero() {
        ByteBuffer b = bytesOf(CallConfig.DEFAULT, 0, (byte) 0x33);
        for (int i = 0; i < 1144; i++) {
            assertThat(b.get(i)).as("byte %d", i).isZero();
        }
        assertThat(CallConfig.DEFAULT.hasDiagnostics()).isFalse();
    }

    @Test
    void rewritingAShorterPrefixClearsTheOldOne() {
        ByteBuffer b = ByteBuffer.allocate(1144).order(ByteOrder.LITTLE_ENDIAN);
        CallConfig.builder().outputPrefix("/a/very/long/directory/name").build().writeTo(b, 0);
        CallConfig.builder().outputPrefix("/b").build().writeTo(b, 0);
        assertThat(b.get(120)).isEqualTo((byte) '/');
        assertThat(b.get(121)).isEqualTo((byte) 'b');
        for (int i = 122; i < 1144; i++) {
            assertThat(b.get(i)).isZero();
        }
    }

    @Test
    void aicpuThreadNumIsZeroOrTwoToTheArchMaximum() {
        for (int ok : new int[] {0, 2, 3, 4}) {
            assertThatCode(() -> CallConfig.builder().aicpuThreadNum(ok).build().validateFor(Variant.Arch.A2A3))
                    .doesNotThrowAnyException();
        }
        assertThatCode(() -> CallConfig.builder().aicpuThreadNum(7).build().validateFor(Variant.Arch.A5))
                .doesNotThrowAnyException();
        assertThatThrownBy(() -> CallConfig.builder().aicpuThreadNum(5).build().validateFor(Variant.Arch.A2A3))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("aicpu_thread_num 5").hasMessageContaining("2..4 on a2a3");
        for (int bad : new int[] {1, -1, 8}) {
            assertThatThrownBy(() -> CallConfig.builder().aicpuThreadNum(bad).build())
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("aicpu_thread_num " + bad);
        }
    }

    @Test
    void blockDimIsZeroOrOneToTheArchBlocks() {
        assertThatCode(() -> CallConfig.builder().blockDim(24).build().validateFor(Variant.Arch.A2A3))
                .doesNotThrowAnyException();
        assertThatCode(() -> CallConfig.builder().blockDim(36).build().validateFor(Variant.Arch.A5))
                .doesNotThrowAnyException();
        assertThatThrownBy(() -> CallConfig.builder().blockDim(25).build().validateFor(Variant.Arch.A2A3))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("block_dim 25");
        assertThatThrownBy(() -> CallConfig.builder().blockDim(37).build())
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> CallConfig.builder().blockDim(-1).build())
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void timeoutIsNotNegative() {
        assertThat(CallConfig.builder().timeoutMs(0).build().timeoutMs()).isZero();
        assertThatThrownBy(() -> CallConfig.builder().timeoutMs(-1).build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("timeout_ms -1");
    }

    @Test
    void ringsAreZeroOrWithinTheirRules() {
        assertThatCode(() -> CallConfig.builder().ringTaskWindow(4).ringHeap(1024).ringDepPool(4).build())
                .doesNotThrowAnyException();
        for (long bad : new long[] {1, 2, 3, 6, 12, -4}) {
            assertThatThrownBy(() -> CallConfig.builder().ringTaskWindow(2, bad).build())
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("ring_task_window[2]");
        }
        assertThatThrownBy(() -> CallConfig.builder().ringHeap(1, 1023).build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("ring_heap[1] 1023");
        assertThatThrownBy(() -> CallConfig.builder().ringDepPool(3, 3).build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("ring_dep_pool[3] 3");
        assertThatThrownBy(() -> CallConfig.builder().ringHeap(4, 2048))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("ring 4");
    }

    @Test
    void theOutputPrefixIsBelow1024BytesOfUtf8AndRequiredByDiagnostics() {
        assertThatCode(() -> CallConfig.builder().outputPrefix("x".repeat(1023)).build()).doesNotThrowAnyException();
        assertThatThrownBy(() -> CallConfig.builder().outputPrefix("x".repeat(1024)).build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("output_prefix is 1024 bytes");
        // 512 two-byte characters: 512 chars but 1024 bytes
        assertThatThrownBy(() -> CallConfig.builder().outputPrefix("é".repeat(512)).build())
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> CallConfig.builder().outputPrefix("a\0b").build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("NUL");
        assertThatThrownBy(() -> CallConfig.builder().enableTrace(true).build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("output_prefix is required");
        assertThatThrownBy(() -> CallConfig.builder().enableDumpArgs(true).build())
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> CallConfig.builder().enableDepGraph(true).build())
                .isInstanceOf(IllegalArgumentException.class);
        CallConfig graph = CallConfig.builder().enableDepGraph(true).outputPrefix("/tmp").build();
        assertThat(graph.hasDiagnostics()).isTrue();
        assertThat(CallConfig.builder().outputPrefix("/tmp").build().hasDiagnostics()).isFalse();
    }

    @Test
    void configsAreValuesAndToBuilderCopies() {
        CallConfig a = CallConfig.builder().blockDim(3).ringHeap(2, 4096).outputPrefix("/x").build();
        CallConfig b = a.toBuilder().build();
        assertThat(b).isEqualTo(a).hasSameHashCodeAs(a).isNotSameAs(a);
        assertThat(a.toBuilder().ringHeap(2, 8192).build()).isNotEqualTo(a);
        assertThat(a.ringHeap(2)).isEqualTo(4096);
        assertThat(a.toString()).contains("blockDim=3");
    }
}

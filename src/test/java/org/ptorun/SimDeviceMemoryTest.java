package org.ptorun;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.ptorun.internal.NativeApi;
import org.ptorun.internal.OffHeapBlock;

/** The sim device-memory group, driven from Java through the bound contract of all four sim libraries. */
class SimDeviceMemoryTest {

    static List<Variant> simVariants() {
        return Variant.all().stream().filter(v -> v.platform() == Variant.Platform.SIM).toList();
    }

    @ParameterizedTest
    @MethodSource("simVariants")
    void allocateCopyInCopyOutFreeAndAccountingBackToZero(Variant variant) {
        HostRuntime runtime = HostRuntime.load(variant);
        NativeApi api = runtime.api();
        long ctx = api.createDeviceContext();
        assertThat(ctx).isNotZero();
        try (OffHeapBlock in = OffHeapBlock.allocate(1 << 16, 64);
             OffHeapBlock out = OffHeapBlock.allocate(1 << 16, 64)) {
            for (int i = 0; i < in.size(); i += 4) {
                in.buffer().putInt(i, i * 31 + 7);
            }
            long dev = api.deviceMalloc(ctx, in.size());
            assertThat(dev).isNotZero();
            assertThat(api.committedDeviceMemory(ctx)).isEqualTo(in.size());
            assertThat(api.copyToDevice(ctx, dev, in.address(), in.size())).isZero();
            assertThat(api.copyFromDevice(ctx, out.address(), dev, out.size())).isZero();
            assertThat(out.buffer()).isEqualTo(in.buffer());

            // refusals leave the context usable and the accounting unchanged
            assertThat(api.copyToDevice(ctx, dev + 1, in.address(), in.size())).isEqualTo(-3);
            assertThat(runtime.lastError()).contains("not inside one live allocation");
            assertThat(api.copyFromDevice(ctx, out.address(), dev - 64, 64)).isEqualTo(-3);
            api.deviceFree(ctx, dev + 8);
            assertThat(runtime.lastError()).contains("not the start of a live allocation");
            assertThat(api.committedDeviceMemory(ctx)).isEqualTo(in.size());
            assertThat(api.copyFromDevice(ctx, out.address(), dev + 100, 100)).isZero();

            api.deviceFree(ctx, dev);
            assertThat(runtime.lastError()).isEmpty();
            assertThat(api.committedDeviceMemory(ctx)).isZero();
            assertThat(api.copyToDevice(ctx, dev, in.address(), 4)).as("freed memory").isEqualTo(-3);
        } finally {
            api.destroyDeviceContext(ctx);
        }
    }
}

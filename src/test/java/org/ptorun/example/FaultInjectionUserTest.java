package org.ptorun.example;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;
import static org.ptorun.callable.Direction.IN;
import static org.ptorun.callable.Direction.OUT;

import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.ptorun.CallConfig;
import org.ptorun.ChipPoisonedException;
import org.ptorun.ChipWorker;
import org.ptorun.DeviceBuffer;
import org.ptorun.DeviceErrorException;
import org.ptorun.DeviceOutOfMemoryException;
import org.ptorun.HostRuntime;
import org.ptorun.PtoError;
import org.ptorun.PtoRunException;
import org.ptorun.RunTimeoutException;
import org.ptorun.TaskArgs;
import org.ptorun.Tensor;
import org.ptorun.Variant;
import org.ptorun.callable.ChipCallable;
import org.ptorun.callable.Kernel;
import org.ptorun.callable.Param;
import org.ptorun.callable.Program;
import org.ptorun.testing.ArmedFault;
import org.ptorun.testing.DriverStats;
import org.ptorun.testing.EmulatedFaults;
import org.ptorun.testing.Fault;

/**
 * A user's test of their own code against device faults, written outside the
 * {@code org.ptorun} package with the public API only (what docs/testing.md shows): a
 * small "service" that adds two vectors on a chip, driven into each of the seven faults,
 * each failing precisely, each followed by a golden run (on a reopened chip when the
 * fault poisoned it: every device error and timeout does, which the chip reports at
 * once), and the driver's accounting back to its baseline once the chip is closed.
 */
class FaultInjectionUserTest {

    private static final int ADD = 1;
    private static final int N = 1024;

    /** The code under test: c = a + b on a chip, through ChipWorker.run. */
    static final class VectorAddService implements AutoCloseable {

        private final HostRuntime runtime;
        private ChipWorker chip;

        VectorAddService(HostRuntime runtime) {
            this.runtime = runtime;
            open();
        }

        private void open() {
            chip = ChipWorker.open(runtime, 0);
            long bytes = 4L * N;
            chip.registerCallable(ADD, ChipCallable.builder()
                    .signature(IN, IN, OUT)
                    .child(0, Kernel.vadd())
                    .program(Program.builder()
                            .submit(0, Param.tensor(0, IN, 0, bytes), Param.tensor(1, IN, 0, bytes),
                                    Param.tensor(2, OUT, 0, bytes))
                            .build())
                    .build());
        }

        float[] add(float[] a, float[] b) {
            return add(a, b, CallConfig.DEFAULT);
        }

        float[] add(float[] a, float[] b, CallConfig config) {
            float[] c = new float[N];
            chip.run(ADD, TaskArgs.of(Tensor.of(a), Tensor.of(b), Tensor.of(c)), config);
            return c;
        }

        /** Keeps a vector on the device and reads it back. */
        float[] roundTrip(float[] v) {
            try (DeviceBuffer buffer = chip.malloc(4L * v.length)) {
                chip.copyTo(buffer, v);
                float[] back = new float[v.length];
                chip.copyFrom(buffer, back);
                return back;
            }
        }

        DeviceBuffer reserve(long bytes) {
            return chip.malloc(bytes);
        }

        boolean healthy() {
            return chip.isHealthy();
        }

        /** What a service does with a poisoned chip: close it and open a fresh one. */
        void reopen() {
            chip.close();
            open();
        }

        @Override
        public void close() {
            chip.close();
        }
    }

    static List<Variant> onboard() {
        return Variant.all().stream().filter(v -> v.platform() == Variant.Platform.ONBOARD).toList();
    }

    private EmulatedFaults faults;

    @AfterEach
    void disarm() {
        if (faults != null) {
            faults.disarm();
        }
    }

    private static float[] ramp(float start) {
        float[] v = new float[N];
        for (int i = 0; i < N; i++) {
            v[i] = start + i;
        }
        return v;
    }

    private static void assertGolden(VectorAddService service) {
        float[] a = ramp(1f);
        float[] b = ramp(0.5f);
        float[] c = service.add(a, b);
        for (int i = 0; i < N; i++) {
            assertThat(c[i]).as("c[%d]", i).isEqualTo(a[i] + b[i]);
        }
    }

    @ParameterizedTest
    @MethodSource("onboard")
    void anAllocationFailureIsDeviceOutOfMemoryAndTheServiceKeepsWorking(Variant variant) {
        HostRuntime runtime = HostRuntime.load(variant);
        faults = EmulatedFaults.of(runtime);
        DriverStats baseline = faults.stats();
        try (VectorAddService service = new VectorAddService(runtime)) {
            try (ArmedFault armed = faults.armed(Fault.ALLOC, 0)) {
                assertThatThrownBy(() -> service.reserve(1 << 20))
                        .isExactlyInstanceOf(DeviceOutOfMemoryException.class)
                        .hasMessageContaining("PTO_ERR_OUT_OF_MEMORY");
            }
            assertThat(service.healthy()).isTrue();
            try (DeviceBuffer buffer = service.reserve(1 << 20)) {
                assertThat(buffer.size()).isEqualTo(1 << 20);
            }
            assertGolden(service);
        }
        assertThat(faults.stats()).as("driver accounting after close").isEqualTo(baseline);
    }

    @ParameterizedTest
    @MethodSource("onboard")
    void aRefusedLaunchIsADeviceErrorThatPoisonsTheChipUntilReopened(Variant variant) {
        HostRuntime runtime = HostRuntime.load(variant);
        faults = EmulatedFaults.of(runtime);
        DriverStats baseline = faults.stats();
        try (VectorAddService service = new VectorAddService(runtime)) {
            assertGolden(service);
            faults.inject(Fault.LAUNCH, 0);
            PtoRunException e = catchThrowableOfType(PtoRunException.class,
                    () -> service.add(ramp(1f), ramp(2f)));
            assertThat(e).isExactlyInstanceOf(DeviceErrorException.class);
            assertThat(e.code()).isEqualTo(PtoError.DEVICE.code());
            assertThat(e.codeName()).isEqualTo("PTO_ERR_DEVICE");
            assertThat(e.getMessage()).contains("launch refused by the device")
                    .contains("poisoned until finalize_device");
            assertThat(service.healthy()).as("the code says it poisoned: unhealthy at once").isFalse();
            assertThatThrownBy(() -> service.add(ramp(1f), ramp(2f)))
                    .isExactlyInstanceOf(ChipPoisonedException.class);
            service.reopen();
            assertThat(service.healthy()).isTrue();
            assertGolden(service);
        }
        assertThat(faults.stats()).as("driver accounting after close").isEqualTo(baseline);
    }

    @ParameterizedTest
    @MethodSource("onboard")
    void aLostDevicePoisonsTheChipAndAReopenedChipIsGolden(Variant variant) {
        HostRuntime runtime = HostRuntime.load(variant);
        faults = EmulatedFaults.of(runtime);
        DriverStats baseline = faults.stats();
        try (VectorAddService service = new VectorAddService(runtime)) {
            assertGolden(service);
            faults.inject(Fault.DEVICE_LOST, 0);
            PtoRunException e = catchThrowableOfType(PtoRunException.class,
                    () -> service.add(ramp(1f), ramp(2f)));
            assertThat(e).isExactlyInstanceOf(DeviceErrorException.class);
            assertThat(e.code()).isEqualTo(PtoError.DEVICE.code());
            assertThat(e.getMessage()).contains("device lost").contains("poisoned until finalize_device");
            assertThat(service.healthy()).isFalse();
            assertThatThrownBy(() -> service.add(ramp(1f), ramp(2f)))
                    .isExactlyInstanceOf(ChipPoisonedException.class);
            service.reopen();
            assertThat(service.healthy()).isTrue();
            assertGolden(service);
        }
        assertThat(faults.stats()).as("driver accounting after close").isEqualTo(baseline);
    }

    @ParameterizedTest
    @MethodSource("onboard")
    void aFailedCopyToOrFromTheDeviceIsADeviceErrorThatPoisonsTheChipUntilReopened(Variant variant) {
        HostRuntime runtime = HostRuntime.load(variant);
        faults = EmulatedFaults.of(runtime);
        DriverStats baseline = faults.stats();
        try (VectorAddService service = new VectorAddService(runtime)) {
            for (Fault fault : List.of(Fault.H2D, Fault.D2H)) {
                try (ArmedFault armed = faults.armed(fault, 0)) {
                    PtoRunException e = catchThrowableOfType(PtoRunException.class,
                            () -> service.roundTrip(ramp(3f)));
                    assertThat(e).as("%s", fault).isExactlyInstanceOf(DeviceErrorException.class);
                    assertThat(e.code()).isEqualTo(PtoError.DEVICE.code());
                    assertThat(e.getMessage()).contains(fault == Fault.H2D ? "copy_to_device" : "copy_from_device")
                            .contains("host/device copy failed").contains("poisoned until finalize_device");
                }
                assertThat(service.healthy()).as("%s: unhealthy at once", fault).isFalse();
                assertThatThrownBy(() -> service.add(ramp(1f), ramp(2f)))
                        .isExactlyInstanceOf(ChipPoisonedException.class);
                service.reopen();
                assertThat(service.healthy()).isTrue();
                assertThat(service.roundTrip(ramp(3f))).containsExactly(ramp(3f));
            }
            assertGolden(service);
        }
        assertThat(faults.stats()).as("driver accounting after close").isEqualTo(baseline);
    }

    @ParameterizedTest
    @MethodSource("onboard")
    void aStreamErrorFailsTheRunAndPoisonsTheChipUntilReopened(Variant variant) {
        HostRuntime runtime = HostRuntime.load(variant);
        faults = EmulatedFaults.of(runtime);
        DriverStats baseline = faults.stats();
        try (VectorAddService service = new VectorAddService(runtime)) {
            faults.inject(Fault.STREAM, 0);
            PtoRunException e = catchThrowableOfType(PtoRunException.class,
                    () -> service.add(ramp(1f), ramp(2f)));
            assertThat(e).isExactlyInstanceOf(DeviceErrorException.class);
            assertThat(e.code()).isEqualTo(PtoError.DEVICE.code());
            assertThat(e.getMessage()).contains("an operation on the stream failed")
                    .contains("poisoned until finalize_device");
            assertThat(service.healthy()).as("the code says it poisoned").isFalse();
            assertThatThrownBy(() -> service.add(ramp(1f), ramp(2f)))
                    .isExactlyInstanceOf(ChipPoisonedException.class);
            service.reopen();
            assertGolden(service);
        }
        assertThat(faults.stats()).as("driver accounting after close").isEqualTo(baseline);
    }

    @ParameterizedTest
    @MethodSource("onboard")
    void aHungLaunchTimesOutAndPoisonsTheChipUntilReopened(Variant variant) {
        HostRuntime runtime = HostRuntime.load(variant);
        faults = EmulatedFaults.of(runtime);
        DriverStats baseline = faults.stats();
        try (VectorAddService service = new VectorAddService(runtime)) {
            faults.inject(Fault.HANG, 0);
            CallConfig shortTimeout = CallConfig.builder().timeoutMs(200).build();
            PtoRunException e = catchThrowableOfType(PtoRunException.class,
                    () -> service.add(ramp(1f), ramp(2f), shortTimeout));
            assertThat(e).isExactlyInstanceOf(RunTimeoutException.class);
            assertThat(e.getMessage()).contains("the run exceeded its timeout of 200 ms")
                    .contains("poisoned until finalize_device");
            assertThat(service.healthy()).as("an onboard timeout poisons: the code says so").isFalse();
            assertThatThrownBy(() -> service.add(ramp(1f), ramp(2f)))
                    .isExactlyInstanceOf(ChipPoisonedException.class);
            service.reopen();
            assertGolden(service);
        }
        assertThat(faults.stats()).as("driver accounting after close").isEqualTo(baseline);
    }
}

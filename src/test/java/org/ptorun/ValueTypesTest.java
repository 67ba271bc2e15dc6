package org.ptorun;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/** PtoError, DType, NativeRun identity, and the one native-code-to-exception mapping. */
class ValueTypesTest {

    @Test
    void everyErrorCodeOfTheContract() {
        String[] names = {"PTO_OK", "PTO_ERR_FAILED", "PTO_RUNTIME_ERR_UNSUPPORTED", "PTO_ERR_INVALID_ARGUMENT",
            "PTO_ERR_BAD_STORAGE", "PTO_ERR_WRONG_PHASE", "PTO_ERR_BUSY", "PTO_ERR_NOT_REGISTERED",
            "PTO_ERR_OUT_OF_MEMORY", "PTO_ERR_DEVICE", "PTO_ERR_KERNEL_FAULT", "PTO_ERR_TIMEOUT",
            "PTO_ERR_BAD_CALLABLE", "PTO_ERR_CAPACITY", "PTO_ERR_ORCHESTRATION", "PTO_ERR_POISONED",
            "PTO_ERR_RANKS_DISAGREE", "PTO_ERR_OVERLAP_NOT_NOW", "PTO_ERR_CHIP_CRASHED"};
        assertThat(PtoError.values()).hasSize(names.length);
        for (int i = 0; i < names.length; i++) {
            PtoError e = PtoError.fromCode(-i);
            assertThat(e.code()).isEqualTo(-i);
            assertThat(e.cName()).isEqualTo(names[i]);
        }
        assertThat(PtoError.fromCode(-6)).isEqualTo(PtoError.BUSY);
        assertThatThrownBy(() -> PtoError.fromCode(-19)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> PtoError.fromCode(1)).isInstanceOf(IllegalArgumentException.class);
        assertThat(PtoError.lookup(-99)).isEmpty();
        assertThat(PtoError.nameOf(-99)).isEqualTo("unknown code -99");
    }

    @Test
    void dtypesHaveTheirCodesAndSizes() {
        DType[] order = {DType.F32, DType.F16, DType.BF16, DType.I32, DType.I64, DType.U8, DType.I8, DType.I16,
            DType.U32, DType.U64};
        int[] sizes = {4, 2, 2, 4, 8, 1, 1, 2, 4, 8};
        for (int code = 0; code < order.length; code++) {
            assertThat(order[code].code()).isEqualTo(code);
            assertThat(order[code].byteSize()).isEqualTo(sizes[code]);
            assertThat(DType.fromCode(code)).isEqualTo(order[code]);
        }
        assertThatThrownBy(() -> DType.fromCode(10)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> DType.fromCode(-1)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void aRunIdentityIsSpelledOneWay() {
        NativeRun run = new NativeRun(1, -1L, 42, 7, 8);
        assertThat(run.identity())
                .isEqualTo("(run_id=7 slot=1 generation=18446744073709551615 dispatch_id=8 run_epoch=42)");
        assertThat(run.toString()).isEqualTo("NativeRun" + run.identity());
        assertThatThrownBy(() -> NativeRun.identityText("(run_id=%llu slot=%u)"))
                .as("a format that does not convert all five fields in order").isInstanceOf(IllegalStateException.class);
    }

    @Test
    void theLibrarysLeadIsDroppedOnlyWhenItNamesTheRunExactly() {
        NativeRun run = new NativeRun(1, 3, 42, 7, 8);
        assertThat(NativeErrors.withoutNativeLead("simpler_launch_run " + run.identity() + ": the device refused", run))
                .isEqualTo("the device refused");
        String other = "simpler_launch_run (run_id=7 slot=1 generation=4 dispatch_id=8 run_epoch=42): the device refused";
        assertThat(NativeErrors.withoutNativeLead(other, run)).as("another run's identity stays visible").isEqualTo(other);
        assertThat(NativeErrors.withoutNativeLead("the device refused", run)).isEqualTo("the device refused");
    }

    @Test
    void theExceptionHierarchyIsSealedAndHoldsEveryFailure() {
        assertThat(PtoRunException.class.isSealed()).isTrue();
        assertThat(PtoRunException.class.getPermittedSubclasses()).containsExactlyInAnyOrder(
                UnsupportedVariantException.class, InvalidNativeArgumentException.class, StaleRunException.class,
                ChipBusyException.class, NotRegisteredException.class, DeviceOutOfMemoryException.class,
                DeviceErrorException.class, KernelFaultException.class, RunTimeoutException.class,
                BadCallableException.class, CapacityExceededException.class, OrchestrationException.class,
                ChipPoisonedException.class, LeaseRejectedException.class, LibraryLoadException.class,
                CommException.class, CollectiveMismatchException.class, OverlapNotNowException.class,
                ChipCrashedException.class);
        assertThat(StaleRunException.class.getPermittedSubclasses()).containsExactly(BadStorageException.class);
        LibraryLoadException load = new LibraryLoadException("driver",
                NativeErrors.fromNative("simpler_init on device 0", -9, "onboard driver x: cannot load it", null));
        assertThat(load.code()).isEqualTo(-9);
        assertThat(load.nativeMessage()).isEqualTo("onboard driver x: cannot load it");
        assertThat(new LibraryLoadException("missing").code()).isEqualTo(PtoError.FAILED.code());
    }

    @Test
    void nativeCodesMapToTheirExceptionClassesAndMessagesCarryTheIdentity() {
        NativeRun run = new NativeRun(0, 3, 99, 5, 6);
        Object[][] expected = {
            {-1, PtoRunException.class}, {-2, UnsupportedVariantException.class},
            {-3, InvalidNativeArgumentException.class}, {-4, BadStorageException.class},
            {-5, StaleRunException.class}, {-6, ChipBusyException.class}, {-7, NotRegisteredException.class},
            {-8, DeviceOutOfMemoryException.class}, {-9, DeviceErrorException.class},
            {-10, KernelFaultException.class}, {-11, RunTimeoutException.class},
            {-12, BadCallableException.class}, {-13, CapacityExceededException.class},
            {-14, OrchestrationException.class}, {-15, ChipPoisonedException.class},
            {-16, CollectiveMismatchException.class}, {-17, OverlapNotNowException.class},
            {-18, ChipCrashedException.class},
            {-77, PtoRunException.class}};
        assertThat(expected.length).as("every code of the contract but PTO_OK, and one outside it")
                .isEqualTo(PtoError.values().length);
        for (Object[] row : expected) {
            int code = (Integer) row[0];
            PtoRunException e = NativeErrors.fromNative("launch", code, "native words", run);
            assertThat(e).as("code %d", code).isExactlyInstanceOf((Class<?>) row[1]);
            assertThat(e.code()).isEqualTo(code);
            assertThat(e.codeName()).isEqualTo(PtoError.nameOf(code));
            assertThat(e.nativeMessage()).isEqualTo("native words");
            assertThat(e.run()).contains(run);
            String subject = code == -10 || code == -11 || code == -14 || code == -16 ? "run failed (reported by launch)" : "launch failed";
            assertThat(e.getMessage()).isEqualTo(subject + ": " + PtoError.nameOf(code) + " (" + code
                    + "): native words (run_id=5 slot=0 generation=3 dispatch_id=6 run_epoch=99)");
        }
        PtoRunException lead = NativeErrors.fromNative("finalize", -10,
                "simpler_finalize_run (run_id=5 slot=0 generation=3 dispatch_id=6 run_epoch=99): kernel fault: x", run);
        assertThat(lead.getMessage()).as("the identity once").isEqualTo("run failed (reported by finalize):"
                + " PTO_ERR_KERNEL_FAULT (-10): kernel fault: x (run_id=5 slot=0 generation=3 dispatch_id=6 run_epoch=99)");
        assertThat(lead.nativeMessage()).startsWith("simpler_finalize_run (run_id=5");
        PtoRunException bare = NativeErrors.fromNative("copy_to_device", -3, "", null);
        assertThat(bare.getMessage()).isEqualTo("copy_to_device failed: PTO_ERR_INVALID_ARGUMENT (-3)");
        assertThat(bare.run()).isEmpty();
        assertThat(bare.error()).contains(PtoError.INVALID_ARGUMENT);
    }
}

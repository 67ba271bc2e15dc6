package org.ptorun.capture;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.ptorun.CallConfig;
import org.ptorun.DType;
import org.ptorun.KernelFaultException;
import org.ptorun.NativeRun;
import org.ptorun.RunReport;
import org.ptorun.TaskArgs;
import org.ptorun.Tensor;
import org.ptorun.Variant;
import org.ptorun.callable.ChipCallable;
import org.ptorun.callable.Direction;

/** The capture file: round trip, corruption, truncation, the size bound (no chip needed). */
class RunCaptureTest {

    @TempDir
    Path dir;

    private static final CallConfig CONFIG = CallConfig.builder().blockDim(3).timeoutMs(5000).ringHeap(2, 4096)
            .outputPrefix("/tmp/x").captureFailuresTo(Path.of("/var/tmp/captures")).build();

    private static RunCapture sample() {
        TaskArgs args = Fixtures.chainArgs(9).scalar(42).scalarF32(1.5f);
        RunCapture c = RunCapture.of(Variant.parse("a5/onboard/trb"), Fixtures.CHAIN, Fixtures.chain(), args, CONFIG);
        return c.withOutcome(args, new RunReport(new NativeRun(1, 2, 33, 44, 55), 0, 0, java.util.List.of()));
    }

    @Test
    void aCaptureReadsBackEqual() {
        RunCapture c = sample();
        Path file = c.write(dir.resolve("a.ptocap"));
        RunCapture back = RunCapture.read(file);
        assertThat(back).isEqualTo(c);
        assertThat(back.config()).isEqualTo(CONFIG);
        assertThat(back.scalars()).containsExactly(42L, Integer.toUnsignedLong(Float.floatToRawIntBits(1.5f)));
        assertThat(back.identity()).contains(new RunCapture.RunIdentity(44, 55, 33));
        assertThat(back.tensors()).hasSize(7);
        assertThat(back.tensors().get(0).direction()).isEqualTo(Direction.IN);
        assertThat(back.tensors().get(2).direction()).isEqualTo(Direction.OUT);
        assertThat(back.tensors().get(2).output()).as("an OUT tensor's outputs").isNotNull();
        assertThat(back.tensors().get(0).output()).as("an IN tensor has no outputs").isNull();
        assertThat(back.fileName()).isEqualTo("run-44-55.ptocap");
        assertThat(back.chipCallable().signature()).isEqualTo(Fixtures.chain().signature());
        assertThat(back.chipCallable().bytes()).isEqualTo(Fixtures.chain().bytes());
    }

    @Test
    void aFailureAndItsIdentityReadBackEqual() {
        RunCapture c = RunCapture.of(Variant.DEFAULT, Fixtures.FAULT, Fixtures.faultyVadd(), Fixtures.faultArgs(),
                CallConfig.DEFAULT).withIdentity(new RunCapture.RunIdentity(7, 8, 0))
                .withFailure(new KernelFaultException("kernel fault", 9, "task 0 func_id 7",
                        new NativeRun(0, 1, 99, 7, 8)));
        RunCapture back = RunCapture.read(c.write(dir.resolve("f.ptocap")));
        assertThat(back).isEqualTo(c);
        assertThat(back.failure()).get().extracting(RunCapture.Failure::simpleName, RunCapture.Failure::code)
                .containsExactly("KernelFaultException", 9);
        assertThat(back.identity()).contains(new RunCapture.RunIdentity(7, 8, 99));
        assertThat(back.hasOutputs()).isFalse();
    }

    @Test
    void theInputsAreTakenWhenCapturedNotLater() {
        float[] a = Fixtures.random(Fixtures.N, 1);
        TaskArgs args = TaskArgs.of(Tensor.of(a), Tensor.of(new float[Fixtures.N]), Tensor.of(new float[Fixtures.N]));
        RunCapture c = RunCapture.of(Variant.DEFAULT, 1, Fixtures.faultyVadd(), args, CallConfig.DEFAULT);
        float before = a[0];
        a[0] = 99f;
        float captured = ByteBuffer.wrap(c.tensors().get(0).input()).order(ByteOrder.LITTLE_ENDIAN).getFloat(0);
        assertThat(captured).isEqualTo(before);
    }

    @Test
    void aTruncatedFileIsRefusedPrecisely() throws Exception {
        Path file = sample().write(dir.resolve("t.ptocap"));
        byte[] all = Files.readAllBytes(file);
        Files.write(file, Arrays.copyOf(all, all.length - 1000));
        assertThatThrownBy(() -> RunCapture.read(file)).isInstanceOf(CaptureFormatException.class)
                .hasMessageContaining("is truncated").hasMessageContaining("output bytes of tensor");
        Files.write(file, Arrays.copyOf(all, all.length - 2));
        assertThatThrownBy(() -> RunCapture.read(file)).isInstanceOf(CaptureFormatException.class)
                .hasMessageContaining("truncated").hasMessageContaining("the checksum");
        Files.write(file, Arrays.copyOf(all, 20));
        assertThatThrownBy(() -> RunCapture.read(file)).isInstanceOf(CaptureFormatException.class)
                .hasMessageContaining("truncated");
    }

    @Test
    void aCorruptedFileIsRefusedPrecisely() throws Exception {
        Path file = sample().write(dir.resolve("c.ptocap"));
        byte[] all = Files.readAllBytes(file);
        byte[] flipped = all.clone();
        flipped[all.length - 100] ^= 0x40; // an output byte
        Files.write(file, flipped);
        assertThatThrownBy(() -> RunCapture.read(file)).isInstanceOf(CaptureFormatException.class)
                .hasMessageContaining("is corrupted").hasMessageContaining("CRC-32");

        byte[] notOne = all.clone();
        notOne[0] = 'X';
        Files.write(file, notOne);
        assertThatThrownBy(() -> RunCapture.read(file)).isInstanceOf(CaptureFormatException.class)
                .hasMessageContaining("is not a ptorun capture");

        byte[] version = all.clone();
        version[8] = 9;
        Files.write(file, version);
        assertThatThrownBy(() -> RunCapture.read(file)).isInstanceOf(CaptureFormatException.class)
                .hasMessageContaining("format version 9");

        byte[] trailing = Arrays.copyOf(all, all.length + 3);
        Files.write(file, trailing);
        assertThatThrownBy(() -> RunCapture.read(file)).isInstanceOf(CaptureFormatException.class)
                .hasMessageContaining("3 bytes follow the checksum");
    }

    @Test
    void theSizeBoundRefuses() {
        TaskArgs args = Fixtures.chainArgs(1);
        long inputs = 7L * 4 * Fixtures.N;
        assertThatThrownBy(() -> RunCapture.of(Variant.DEFAULT, 1, Fixtures.chain(), args, CallConfig.DEFAULT,
                inputs - 1)).isInstanceOf(CaptureTooLargeException.class)
                .hasMessageContaining(inputs + " bytes of tensor data exceed the capture bound of " + (inputs - 1));
        RunCapture c = RunCapture.of(Variant.DEFAULT, 1, Fixtures.chain(), args, CallConfig.DEFAULT, inputs);
        assertThatThrownBy(() -> c.withOutcome(args, null, inputs)).isInstanceOf(CaptureTooLargeException.class);
        Path file = sample().write(dir.resolve("s.ptocap"));
        assertThatThrownBy(() -> RunCapture.read(file, 1024)).isInstanceOf(CaptureTooLargeException.class)
                .hasMessageContaining("capture bound of 1024");
    }

    @Test
    void aDirectBufferTensorIsCaptured() {
        // the refusal comes before any device access: a direct buffer is fine, only DeviceBuffer is refused
        ByteBuffer direct = ByteBuffer.allocateDirect(4 * Fixtures.N).order(ByteOrder.nativeOrder());
        TaskArgs args = TaskArgs.of(Tensor.of(direct, DType.F32), Tensor.of(direct, DType.F32),
                Tensor.of(direct, DType.F32));
        assertThat(RunCapture.of(Variant.DEFAULT, 1, Fixtures.faultyVadd(), args, CallConfig.DEFAULT).tensors())
                .hasSize(3);
    }

    @Test
    void aCallableReadsBackFromItsBytes() {
        ChipCallable c = Fixtures.faultyVadd();
        ChipCallable back = ChipCallable.fromBytes(c.bytes());
        assertThat(back.signature()).isEqualTo(c.signature());
        assertThat(back.bytes()).isEqualTo(c.bytes());
        assertThatThrownBy(() -> ChipCallable.fromBytes(new byte[8])).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("shorter than its 56-byte header");
    }

    @Test
    void differencesNameTheFirstElementAndItsBits() {
        byte[] e = new byte[16];
        byte[] a = new byte[16];
        ByteBuffer.wrap(e).order(ByteOrder.LITTLE_ENDIAN).putFloat(8, 1.0f);
        ByteBuffer.wrap(a).order(ByteOrder.LITTLE_ENDIAN).putFloat(8, 1.5f);
        assertThat(RunReplay.difference(2, DType.F32, e, a)).get().hasToString(
                "tensor 2 element 2: expected 1.0 (0x3f800000) got 1.5 (0x3fc00000)");
        assertThat(RunReplay.difference(2, DType.F32, e, e.clone())).isEmpty();
        assertThat(RunReplay.format(DType.BF16, new byte[] {(byte) 0x80, 0x3f}, 0)).isEqualTo("1.0 (0x3f80)");
        assertThat(RunReplay.format(DType.F16, new byte[] {0x00, 0x3c}, 0)).isEqualTo("1.0 (0x3c00)");
        assertThat(RunReplay.format(DType.U64, new byte[] {-1, -1, -1, -1, -1, -1, -1, -1}, 0))
                .isEqualTo("18446744073709551615");
    }
}

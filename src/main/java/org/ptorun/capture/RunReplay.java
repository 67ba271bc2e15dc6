package org.ptorun.capture;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Optional;
import java.util.function.UnaryOperator;
import org.ptorun.CallConfig;
import org.ptorun.ChipWorker;
import org.ptorun.DType;
import org.ptorun.HostRuntime;
import org.ptorun.RunReport;
import org.ptorun.TaskArgs;
import org.ptorun.Tensor;
import org.ptorun.Variant;

/**
 * Runs a {@link RunCapture} again, without the service that captured it: opens a
 * {@link ChipWorker} on device 0 of a variant (any of the eight, not only the captured
 * one), registers the captured callable under its id, runs it once with the captured
 * scalars and fresh copies of the captured input bytes, and compares: the failure with the
 * captured failure (same exception class and native code), or the outputs with the captured
 * outputs, bit for bit (the kernels are bit-exact; floats are compared by their bits).
 *
 * <pre>{@code
 * ReplayResult r = RunReplay.replay(RunCapture.read(file), Variant.parse("a2a3/sim/trb"));
 * assertThat(r.matches()).as(r.verdict()).isTrue();
 * }</pre>
 */
public final class RunReplay {

    /** The reference name of a replay compared with its capture. */
    public static final String THE_CAPTURE = "the capture";

    private RunReplay() {
    }

    /** Replays on the captured variant. */
    public static ReplayResult replay(RunCapture capture) {
        return replay(capture, capture.variant());
    }

    /** Replays on {@code variant} with the captured config. */
    public static ReplayResult replay(RunCapture capture, Variant variant) {
        return replay(capture, variant, UnaryOperator.identity());
    }

    /**
     * Replays on {@code variant}, the captured config changed by {@code configure} (e.g. to
     * turn a trace on; its files come back in {@link ReplayResult#outputFiles()}). The
     * captured config's {@code captureFailuresTo} is cleared first: a replay that fails
     * writes no capture unless {@code configure} asks for one.
     *
     * @throws org.ptorun.PtoRunException when the chip cannot be opened or the callable registered
     */
    public static ReplayResult replay(RunCapture capture, Variant variant, UnaryOperator<CallConfig> configure) {
        Outcome o = run(capture, variant, configure);
        boolean compared = o.failure.isEmpty() && capture.failure().isEmpty() && capture.hasOutputs();
        List<ReplayResult.Difference> diffs = new ArrayList<>();
        if (compared) {
            for (int i = 0; i < capture.tensors().size(); i++) {
                RunCapture.CapturedTensor t = capture.tensors().get(i);
                if (t.output() != null) {
                    difference(i, t.dtype(), t.output(), o.outputs.get(i)).ifPresent(diffs::add);
                }
            }
        }
        return new ReplayResult(variant, THE_CAPTURE, capture.failure(), o.failure, compared, diffs, o.files);
    }

    /**
     * Runs the capture on {@code a} and on {@code b} and compares {@code b}'s run with
     * {@code a}'s: the same failure, or equal outputs (every OUT and INOUT tensor).
     */
    public static ReplayResult compare(RunCapture capture, Variant a, Variant b) {
        Objects.requireNonNull(a, "a");
        Outcome ra = run(capture, a, UnaryOperator.identity());
        Outcome rb = run(capture, b, UnaryOperator.identity());
        boolean compared = ra.failure.isEmpty() && rb.failure.isEmpty();
        List<ReplayResult.Difference> diffs = new ArrayList<>();
        if (compared) {
            for (int i = 0; i < capture.tensors().size(); i++) {
                RunCapture.CapturedTensor t = capture.tensors().get(i);
                if (t.direction().writes()) {
                    difference(i, t.dtype(), ra.outputs.get(i), rb.outputs.get(i)).ifPresent(diffs::add);
                }
            }
        }
        return new ReplayResult(b, a.toString(), ra.failure, rb.failure, compared, diffs, rb.files);
    }

    /** One run's outcome: its failure, or the bytes of every tensor after it. */
    private record Outcome(Optional<RunCapture.Failure> failure, List<byte[]> outputs, List<java.nio.file.Path> files) {
    }

    private static Outcome run(RunCapture capture, Variant variant, UnaryOperator<CallConfig> configure) {
        Objects.requireNonNull(capture, "capture");
        Objects.requireNonNull(variant, "variant");
        // the captured run's capture directory is the service's: a replay writes no capture there
        CallConfig config = configure.apply(capture.config().toBuilder().captureFailuresTo(null).build());
        HostRuntime runtime = HostRuntime.load(variant);
        try (ChipWorker chip = ChipWorker.open(runtime, 0)) {
            chip.registerCallable(capture.callableId(), capture.chipCallable());
            TaskArgs args = new TaskArgs();
            List<ByteBuffer> buffers = new ArrayList<>();
            for (RunCapture.CapturedTensor t : capture.tensors()) {
                ByteBuffer b = ByteBuffer.allocateDirect((int) Math.max(1, t.byteSize())).order(ByteOrder.nativeOrder());
                b.put(t.input()).flip();
                buffers.add(b);
                args.tensor(Tensor.of(b, t.dtype(), t.shape()).withStrides(t.strides())
                        .withStartOffset(t.startOffset()));
            }
            for (long s : capture.scalars()) {
                args.scalar(s);
            }
            RunReport report;
            try {
                report = chip.run(capture.callableId(), args, config);
            } catch (RuntimeException e) {
                return new Outcome(Optional.of(RunCapture.Failure.of(e)), List.of(), List.of());
            }
            List<byte[]> outputs = new ArrayList<>(buffers.size());
            for (ByteBuffer b : buffers) {
                byte[] bytes = new byte[b.remaining()];
                b.duplicate().get(bytes);
                outputs.add(bytes);
            }
            return new Outcome(Optional.empty(), outputs, report.outputFiles());
        }
    }

    /** The first differing element of two tensors' bytes, and how many differ; empty when equal. */
    static Optional<ReplayResult.Difference> difference(int tensor, DType dtype, byte[] expected, byte[] actual) {
        if (java.util.Arrays.equals(expected, actual)) {
            return Optional.empty();
        }
        int size = dtype.byteSize();
        long first = -1;
        long count = 0;
        int n = Math.min(expected.length, actual.length) / size;
        for (int e = 0; e < n; e++) {
            if (!java.util.Arrays.equals(expected, e * size, e * size + size, actual, e * size, e * size + size)) {
                if (first < 0) {
                    first = e;
                }
                count++;
            }
        }
        if (first < 0) {
            return Optional.of(new ReplayResult.Difference(tensor, n, 1, expected.length + " bytes",
                    actual.length + " bytes"));
        }
        return Optional.of(new ReplayResult.Difference(tensor, first, count, format(dtype, expected, (int) first),
                format(dtype, actual, (int) first)));
    }

    /** Element {@code index} of little-endian bytes as text; floats with their bits. */
    static String format(DType dtype, byte[] bytes, int index) {
        ByteBuffer b = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
        int at = index * dtype.byteSize();
        switch (dtype) {
            case F32: {
                int bits = b.getInt(at);
                return Float.intBitsToFloat(bits) + String.format(Locale.ROOT, " (0x%08x)", bits);
            }
            case F16: {
                int bits = b.getShort(at) & 0xFFFF;
                return halfToFloat(bits) + String.format(Locale.ROOT, " (0x%04x)", bits);
            }
            case BF16: {
                int bits = b.getShort(at) & 0xFFFF;
                return Float.intBitsToFloat(bits << 16) + String.format(Locale.ROOT, " (0x%04x)", bits);
            }
            case I32:
                return Integer.toString(b.getInt(at));
            case U32:
                return Integer.toUnsignedString(b.getInt(at));
            case I64:
                return Long.toString(b.getLong(at));
            case U64:
                return Long.toUnsignedString(b.getLong(at));
            case I16:
                return Short.toString(b.getShort(at));
            case I8:
                return Byte.toString(b.get(at));
            case U8:
            default:
                return Integer.toString(b.get(at) & 0xFF);
        }
    }

    private static float halfToFloat(int h) {
        int sign = (h >>> 15) & 1;
        int exp = (h >>> 10) & 0x1F;
        int mant = h & 0x3FF;
        float v;
        if (exp == 0) {
            v = mant * 0x1p-24f;
        } else if (exp == 31) {
            v = mant == 0 ? Float.POSITIVE_INFINITY : Float.NaN;
        } else {
            v = (1 + mant / 1024f) * (float) Math.pow(2, exp - 15);
        }
        return sign == 1 ? -v : v;
    }
}

package org.ptorun.capture;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import org.ptorun.CallConfig;
import org.ptorun.DType;
import org.ptorun.NativeRun;
import org.ptorun.PtoRunException;
import org.ptorun.RunReport;
import org.ptorun.TaskArgs;
import org.ptorun.Tensor;
import org.ptorun.Variant;
import org.ptorun.callable.ChipCallable;
import org.ptorun.callable.Direction;

/**
 * One run, captured so that it can be run again without the service that ran it
 * ({@link RunReplay}): the variant, the callable as registered (its id and its
 * {@link ChipCallable#bytes() bytes}), the {@link CallConfig}, the scalars, every tensor's
 * description and the bytes it held <em>before</em> the run (outputs included: a kernel may
 * read them), the outputs if the run finished, the failure if it failed, and the run's
 * identity. Written to and read from one self-contained file ({@link #write}, {@link #read};
 * the format is in docs/replay.md).
 *
 * <p>Take one before a run with {@link #of}, then add the outcome with
 * {@link #withOutcome} or {@link #withFailure}. A Worker built with
 * {@code Worker.Builder.captureFailures(dir)} does this for every run and writes the
 * failed ones; a Worker or a {@code ChipWorker} does it for the runs whose config asks
 * ({@code CallConfig.Builder.captureFailuresTo(dir)}).
 *
 * <p>Size bound: a capture's tensor bytes (inputs plus outputs) are at most
 * {@link #DEFAULT_MAX_BYTES} unless another bound is given; beyond it {@link #of},
 * {@link #withOutcome} and {@link #read} throw {@link CaptureTooLargeException}.
 * Tensors that are {@code DeviceBuffer}s cannot be captured (their bytes live on the
 * device): {@link #of} refuses them with an {@link UnsupportedOperationException}.
 *
 * @param formatVersion the file format version ({@link #FORMAT_VERSION})
 * @param variant the library the run ran on
 * @param callableId the id the callable was registered under
 * @param callable the callable's bytes as registered
 * @param config the run's config
 * @param scalars the scalar arguments' bits, in order
 * @param tensors the tensor arguments, in order
 * @param failure how the run failed; empty when it succeeded or has no outcome yet
 * @param identity the run's identity; empty when unknown
 */
public record RunCapture(int formatVersion, Variant variant, int callableId, byte[] callable, CallConfig config,
                         long[] scalars, List<CapturedTensor> tensors, Optional<Failure> failure,
                         Optional<RunIdentity> identity) {

    /** The format version this class writes and reads. */
    public static final int FORMAT_VERSION = 1;
    /** The default bound on a capture's tensor bytes: 256 MiB. */
    public static final long DEFAULT_MAX_BYTES = 256L << 20;
    /** The file name suffix captures are written with. */
    public static final String SUFFIX = ".ptocap";

    public RunCapture {
        Objects.requireNonNull(variant, "variant");
        Objects.requireNonNull(callable, "callable");
        Objects.requireNonNull(config, "config");
        Objects.requireNonNull(scalars, "scalars");
        Objects.requireNonNull(failure, "failure");
        Objects.requireNonNull(identity, "identity");
        callable = callable.clone();
        scalars = scalars.clone();
        tensors = List.copyOf(tensors);
    }

    /**
     * One tensor argument as captured.
     *
     * @param direction IN, OUT or INOUT, from the callable's signature
     * @param dtype element type
     * @param shape dimensions
     * @param strides strides in elements
     * @param startOffset start offset in elements
     * @param byteSize bytes of its data
     * @param input its bytes before the run
     * @param output its bytes after a finished run, for OUT and INOUT; null otherwise
     */
    public record CapturedTensor(Direction direction, DType dtype, int[] shape, int[] strides, long startOffset,
                                 long byteSize, byte[] input, byte[] output) {
        public CapturedTensor {
            Objects.requireNonNull(direction, "direction");
            Objects.requireNonNull(dtype, "dtype");
            Objects.requireNonNull(input, "input");
            shape = shape.clone();
            strides = strides.clone();
            if (input.length != byteSize || (output != null && output.length != byteSize)) {
                throw new IllegalArgumentException("a captured tensor of " + byteSize + " bytes holds "
                        + input.length + " input bytes" + (output == null ? "" : " and " + output.length
                        + " output bytes"));
            }
        }

        /** The outputs present. */
        public Optional<byte[]> outputBytes() {
            return Optional.ofNullable(output);
        }

        @Override
        public int[] shape() {
            return shape.clone();
        }

        @Override
        public int[] strides() {
            return strides.clone();
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof CapturedTensor t && t.direction == direction && t.dtype == dtype
                    && Arrays.equals(t.shape, shape) && Arrays.equals(t.strides, strides)
                    && t.startOffset == startOffset && t.byteSize == byteSize && Arrays.equals(t.input, input)
                    && Arrays.equals(t.output, output);
        }

        @Override
        public int hashCode() {
            return Objects.hash(direction, dtype, Arrays.hashCode(shape), Arrays.hashCode(strides), startOffset,
                    byteSize, Arrays.hashCode(input), Arrays.hashCode(output));
        }

        @Override
        public String toString() {
            return "CapturedTensor[" + direction + " " + dtype + Arrays.toString(shape) + ", " + byteSize
                    + " bytes" + (output != null ? ", outputs" : "") + "]";
        }
    }

    /**
     * How a run failed.
     *
     * @param exceptionClass the exception's class name, e.g. {@code org.ptorun.KernelFaultException}
     * @param message its message
     * @param code its native code ({@link PtoRunException#code()}); 0 for another exception
     */
    public record Failure(String exceptionClass, String message, int code) {
        public Failure {
            Objects.requireNonNull(exceptionClass, "exceptionClass");
            message = Objects.requireNonNullElse(message, "");
        }

        /** The failure of {@code e}, unwrapping a CompletionException or ExecutionException. */
        public static Failure of(Throwable e) {
            Throwable t = unwrap(e);
            return new Failure(t.getClass().getName(), t.getMessage(),
                    t instanceof PtoRunException p ? p.code() : 0);
        }

        /** The class's simple name, e.g. {@code KernelFaultException}. */
        public String simpleName() {
            return exceptionClass.substring(exceptionClass.lastIndexOf('.') + 1);
        }

        /** Same exception class and code (the messages carry run identities, which differ). */
        public boolean sameAs(Failure other) {
            return other != null && exceptionClass.equals(other.exceptionClass) && code == other.code;
        }
    }

    /** The identity of the captured run ({@link NativeRun}); runEpoch 0 when it was never prepared. */
    public record RunIdentity(long runId, long dispatchId, long runEpoch) {
        static RunIdentity of(NativeRun run) {
            return new RunIdentity(run.runId(), run.dispatchId(), run.runEpoch());
        }
    }

    // ---- taking a capture ------------------------------------------------------------------------

    /** {@link #of(Variant, int, ChipCallable, TaskArgs, CallConfig, long)} with {@link #DEFAULT_MAX_BYTES}. */
    public static RunCapture of(Variant variant, int callableId, ChipCallable callable, TaskArgs args,
                                CallConfig config) {
        return of(variant, callableId, callable, args, config, DEFAULT_MAX_BYTES);
    }

    /**
     * Captures a run before it runs: copies every tensor's bytes now (take it before the
     * run starts, and do not change the data in between).
     *
     * @throws CaptureTooLargeException when the tensors' bytes exceed {@code maxBytes}
     * @throws UnsupportedOperationException for a {@code DeviceBuffer} tensor
     */
    public static RunCapture of(Variant variant, int callableId, ChipCallable callable, TaskArgs args,
                                CallConfig config, long maxBytes) {
        Objects.requireNonNull(callable, "callable");
        Objects.requireNonNull(args, "args");
        long total = 0;
        for (int i = 0; i < args.tensorCount(); i++) {
            Tensor t = args.tensorAt(i);
            if (t.deviceBuffer().isPresent()) {
                throw new UnsupportedOperationException("tensor " + i + " is a DeviceBuffer: its bytes live on the"
                        + " device and cannot be captured");
            }
            total += t.byteSize();
        }
        if (total > maxBytes) {
            throw new CaptureTooLargeException("capture of callable " + callableId, total, maxBytes);
        }
        List<Direction> directions = callable.tensorDirections();
        List<CapturedTensor> tensors = new ArrayList<>(args.tensorCount());
        for (int i = 0; i < args.tensorCount(); i++) {
            Tensor t = args.tensorAt(i);
            Direction d = i < directions.size() ? directions.get(i) : Direction.IN;
            tensors.add(new CapturedTensor(d, t.dtype(), t.shape(), t.strides(), t.startOffset(), t.byteSize(),
                    t.copyHostBytes(), null));
        }
        long[] scalars = new long[args.scalarCount()];
        for (int i = 0; i < scalars.length; i++) {
            scalars[i] = args.scalarAt(i);
        }
        return new RunCapture(FORMAT_VERSION, variant, callableId, callable.bytes(), config, scalars, tensors,
                Optional.empty(), Optional.empty());
    }

    /** {@link #withOutcome(TaskArgs, RunReport, long)} with {@link #DEFAULT_MAX_BYTES}. */
    public RunCapture withOutcome(TaskArgs args, RunReport report) {
        return withOutcome(args, report, DEFAULT_MAX_BYTES);
    }

    /**
     * This capture with the outcome of a run that finished: the bytes of every OUT and INOUT
     * tensor of {@code args} (the same arguments, after the run) and the run's identity.
     *
     * @throws IllegalArgumentException when {@code args} do not match the captured tensors
     * @throws CaptureTooLargeException when inputs and outputs together exceed {@code maxBytes}
     */
    public RunCapture withOutcome(TaskArgs args, RunReport report, long maxBytes) {
        Objects.requireNonNull(args, "args");
        if (args.tensorCount() != tensors.size()) {
            throw new IllegalArgumentException("the outcome has " + args.tensorCount() + " tensors; the capture "
                    + tensors.size());
        }
        long total = tensorBytes();
        for (CapturedTensor t : tensors) {
            total += t.direction().writes() && t.output() == null ? t.byteSize() : 0;
        }
        if (total > maxBytes) {
            throw new CaptureTooLargeException("capture of callable " + callableId + " with its outputs", total,
                    maxBytes);
        }
        List<CapturedTensor> out = new ArrayList<>(tensors.size());
        for (int i = 0; i < tensors.size(); i++) {
            CapturedTensor t = tensors.get(i);
            Tensor now = args.tensorAt(i);
            if (now.byteSize() != t.byteSize()) {
                throw new IllegalArgumentException("tensor " + i + " holds " + now.byteSize() + " bytes; captured "
                        + t.byteSize());
            }
            out.add(new CapturedTensor(t.direction(), t.dtype(), t.shape, t.strides, t.startOffset(), t.byteSize(),
                    t.input, t.direction().writes() ? now.copyHostBytes() : null));
        }
        return new RunCapture(formatVersion, variant, callableId, callable, config, scalars, out, Optional.empty(),
                report == null ? identity : Optional.of(RunIdentity.of(report.run())));
    }

    /**
     * This capture with the failure of its run; the identity is the failure's run when it
     * names one ({@link PtoRunException#run()}), else the one already captured.
     */
    public RunCapture withFailure(Throwable failure) {
        Failure f = Failure.of(failure);
        Optional<RunIdentity> id = identity;
        if (unwrap(failure) instanceof PtoRunException p && p.run().isPresent()) {
            id = Optional.of(RunIdentity.of(p.run().get()));
        }
        return new RunCapture(formatVersion, variant, callableId, callable, config, scalars, tensors,
                Optional.of(f), id);
    }

    /** This capture with the given identity. */
    public RunCapture withIdentity(RunIdentity runIdentity) {
        return new RunCapture(formatVersion, variant, callableId, callable, config, scalars, tensors, failure,
                Optional.of(runIdentity));
    }

    /** True when the outputs of a finished run are captured. */
    public boolean hasOutputs() {
        for (CapturedTensor t : tensors) {
            if (t.output() != null) {
                return true;
            }
        }
        return false;
    }

    /** The tensor bytes the capture holds: inputs plus outputs. */
    public long tensorBytes() {
        long total = 0;
        for (CapturedTensor t : tensors) {
            total += t.byteSize() + (t.output() == null ? 0 : t.byteSize());
        }
        return total;
    }

    /** The callable, decoded from its bytes ({@link ChipCallable#fromBytes}). */
    public ChipCallable chipCallable() {
        return ChipCallable.fromBytes(callable);
    }

    /** The file name a Worker writes it under: {@code run-<runId>-<dispatchId>.ptocap}. */
    public String fileName() {
        RunIdentity id = identity.orElse(new RunIdentity(0, 0, 0));
        return "run-" + Long.toUnsignedString(id.runId()) + "-" + Long.toUnsignedString(id.dispatchId()) + SUFFIX;
    }

    @Override
    public byte[] callable() {
        return callable.clone();
    }

    @Override
    public long[] scalars() {
        return scalars.clone();
    }

    // ---- files --------------------------------------------------------------------------------------

    /**
     * Writes the capture to {@code file} (atomically: a temporary file in the same
     * directory, then renamed), creating the directory.
     *
     * @throws UncheckedIOException when it cannot be written
     */
    public Path write(Path file) {
        try {
            CaptureFile.write(this, file);
            return file;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write the capture " + file + ": " + e.getMessage(), e);
        }
    }

    /** {@link #read(Path, long)} with {@link #DEFAULT_MAX_BYTES}. */
    public static RunCapture read(Path file) {
        return read(file, DEFAULT_MAX_BYTES);
    }

    /**
     * Reads a capture file.
     *
     * @throws CaptureFormatException when the file is not a capture, of another format version,
     *         truncated or corrupted
     * @throws CaptureTooLargeException when its tensor bytes exceed {@code maxBytes}
     * @throws UncheckedIOException when it cannot be read
     */
    public static RunCapture read(Path file, long maxBytes) {
        try {
            return CaptureFile.read(file, maxBytes);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the capture " + file + ": " + e.getMessage(), e);
        }
    }

    static Throwable unwrap(Throwable e) {
        Throwable t = e;
        while ((t instanceof CompletionException || t instanceof ExecutionException) && t.getCause() != null) {
            t = t.getCause();
        }
        return t;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof RunCapture c && c.formatVersion == formatVersion && c.variant.equals(variant)
                && c.callableId == callableId && Arrays.equals(c.callable, callable) && c.config.equals(config)
                && Arrays.equals(c.scalars, scalars) && c.tensors.equals(tensors) && c.failure.equals(failure)
                && c.identity.equals(identity);
    }

    @Override
    public int hashCode() {
        return Objects.hash(formatVersion, variant, callableId, Arrays.hashCode(callable), config,
                Arrays.hashCode(scalars), tensors, failure, identity);
    }

    @Override
    public String toString() {
        return "RunCapture[" + variant + " callable " + callableId + " (" + callable.length + " bytes), "
                + tensors.size() + " tensors, " + scalars.length + " scalars, " + tensorBytes() + " tensor bytes"
                + failure.map(f -> ", failed: " + f.simpleName()).orElse(hasOutputs() ? ", outputs" : "")
                + identity.map(i -> ", run_id=" + i.runId() + " dispatch_id=" + i.dispatchId() + " run_epoch="
                        + i.runEpoch()).orElse("") + "]";
    }
}

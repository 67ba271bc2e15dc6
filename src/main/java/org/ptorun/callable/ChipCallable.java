package org.ptorun.callable;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import org.ptorun.internal.CallableLayouts;

/**
 * What a ChipWorker registers under a callable id: the signature (one direction per run
 * argument, tensors then scalars), the children (func id → core type + kernel: a
 * built-in or a kernel library) and the orchestration (a {@link Program}, or an
 * orchestration library). Immutable; its {@link #bytes()} are exactly the binary format
 * of {@code include/ptorun/chip_callable.h}.
 *
 * <pre>{@code
 * ChipCallable add = ChipCallable.builder()
 *     .signature(IN, IN, OUT)
 *     .child(0, CoreType.AIV, Kernel.vadd())
 *     .program(Program.builder()
 *         .submit(0, Param.tensor(0, IN, 0, bytes), Param.tensor(1, IN, 0, bytes), Param.tensor(2, OUT, 0, bytes))
 *         .build())
 *     .build();
 * }</pre>
 */
public final class ChipCallable {

    /** One child: a func id bound to a kernel on a core type. */
    public record Child(int funcId, CoreType coreType, Kernel kernel) {
        public Child {
            Objects.requireNonNull(coreType, "coreType");
            Objects.requireNonNull(kernel, "kernel");
        }
    }

    /** An orchestration library: the image of a shared object and its {@code PtoOrchestrationFn} symbol. */
    public record OrchestrationLibrary(byte[] image, String entry, String origin) {
        public OrchestrationLibrary {
            Objects.requireNonNull(image, "image");
            Kernel.checkName(entry, "orchestration entry symbol");
            if (image.length == 0) {
                throw new IllegalArgumentException("the orchestration library (" + origin + ") is empty");
            }
            image = image.clone();
        }

        byte[] rawImage() {
            return image;
        }

        /** A copy of the image. */
        @Override
        public byte[] image() {
            return image.clone();
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof OrchestrationLibrary && ((OrchestrationLibrary) o).entry.equals(entry)
                    && java.util.Arrays.equals(((OrchestrationLibrary) o).image, image);
        }

        @Override
        public int hashCode() {
            return 31 * entry.hashCode() + java.util.Arrays.hashCode(image);
        }

        @Override
        public String toString() {
            return "OrchestrationLibrary[" + origin + " symbol " + entry + "]";
        }
    }

    private final List<Direction> signature;
    private final List<Direction> tensorDirections;
    private final int scalarCount;
    private final List<Child> children;
    private final Program program;
    private final OrchestrationLibrary orchestrationLibrary;
    private final TensorExtents tensorExtents;
    private final byte[] bytes;

    private ChipCallable(List<Direction> signature, List<Child> children, Program program,
                         OrchestrationLibrary orchestrationLibrary) {
        this.signature = signature;
        this.tensorDirections = tensorsOf(signature);
        this.scalarCount = signature.size() - tensorDirections.size();
        this.children = children;
        this.program = program;
        this.orchestrationLibrary = orchestrationLibrary;
        this.tensorExtents = program != null ? TensorExtents.of(tensorDirections, program.argumentReach())
                : TensorExtents.unknown(tensorDirections);
        this.bytes = encode();
    }

    /** The tensor arguments of a signature, in order. */
    private static List<Direction> tensorsOf(List<Direction> signature) {
        List<Direction> tensors = new ArrayList<>();
        for (Direction d : signature) {
            if (d.isTensor()) {
                tensors.add(d);
            }
        }
        return List.copyOf(tensors);
    }

    /** A callable known only by its encoded bytes ({@link #fromBytes}). */
    private ChipCallable(List<Direction> signature, byte[] bytes) {
        this.signature = signature;
        this.tensorDirections = tensorsOf(signature);
        this.scalarCount = signature.size() - tensorDirections.size();
        this.children = List.of();
        this.program = null;
        this.orchestrationLibrary = null;
        this.tensorExtents = TensorExtents.unknown(tensorDirections);
        this.bytes = bytes;
    }

    public static Builder builder() {
        return new Builder();
    }

    /**
     * A callable from its {@link #bytes()} as registered, e.g. read back from a run capture.
     * Only the header and the signature are decoded here: its {@link #children()} are empty,
     * it has neither {@link #program()} nor {@link #orchestrationLibrary()}, and its
     * {@link #tensorExtents()} are unknown; the library checks everything else when it is
     * registered.
     *
     * @throws IllegalArgumentException when the bytes do not start with a callable header,
     *         or its signature lies outside them
     */
    public static ChipCallable fromBytes(byte[] encoded) {
        Objects.requireNonNull(encoded, "encoded");
        byte[] copy = encoded.clone();
        if (copy.length < CallableLayouts.ChipCallableHeader.SIZE) {
            throw new IllegalArgumentException("a callable of " + copy.length + " bytes is shorter than its "
                    + CallableLayouts.ChipCallableHeader.SIZE + "-byte header");
        }
        ByteBuffer b = ByteBuffer.wrap(copy).order(ByteOrder.LITTLE_ENDIAN);
        int magic = b.getInt(CallableLayouts.ChipCallableHeader.MAGIC);
        if (magic != CallableLayouts.PTO_CALLABLE_MAGIC) {
            throw new IllegalArgumentException(String.format(java.util.Locale.ROOT,
                    "callable magic 0x%08x is not 0x%08x", magic, CallableLayouts.PTO_CALLABLE_MAGIC));
        }
        int length = b.getInt(CallableLayouts.ChipCallableHeader.SIGNATURE_LENGTH);
        int at = b.getInt(CallableLayouts.ChipCallableHeader.SIGNATURE + CallableLayouts.PtoBlobRef.OFFSET);
        if (length < 0 || at < 0 || (long) at + length > copy.length) {
            throw new IllegalArgumentException("the callable's signature (" + length + " entries at " + at
                    + ") lies outside its " + copy.length + " bytes");
        }
        List<Direction> signature = new ArrayList<>(length);
        for (int i = 0; i < length; i++) {
            int code = copy[at + i];
            Direction found = null;
            for (Direction d : Direction.values()) {
                if (d.code() == code) {
                    found = d;
                }
            }
            if (found == null) {
                throw new IllegalArgumentException("signature entry " + i + " has direction code " + code
                        + ", not 0..3");
            }
            signature.add(found);
        }
        return new ChipCallable(List.copyOf(signature), copy);
    }

    /** The binary callable handed to {@code simpler_register_callable}. */
    public byte[] bytes() {
        return bytes.clone();
    }

    /** Bytes of the encoded callable. */
    public int size() {
        return bytes.length;
    }

    /** One direction per run argument: tensors, then scalars. */
    public List<Direction> signature() {
        return signature;
    }

    /** The directions of the tensor arguments, in argument order. */
    public List<Direction> tensorDirections() {
        return tensorDirections;
    }

    public int tensorCount() {
        return tensorDirections.size();
    }

    public int scalarCount() {
        return scalarCount;
    }

    public List<Child> children() {
        return children;
    }

    /** The program orchestration; empty when the callable carries an orchestration library. */
    public Optional<Program> program() {
        return Optional.ofNullable(program);
    }

    /** The orchestration library; empty when the callable carries a program. */
    public Optional<OrchestrationLibrary> orchestrationLibrary() {
        return Optional.ofNullable(orchestrationLibrary);
    }

    /**
     * The bytes each tensor argument must hold for the program's views, computed once when
     * the callable was built; {@code ChipWorker.prepare} / {@code run} and {@code Worker.enqueue}
     * refuse a run whose tensor is smaller with {@link TensorExtents#check}'s
     * {@link IllegalArgumentException}, before any native work. All 0 for an orchestration
     * library, whose views Java cannot see.
     */
    public TensorExtents tensorExtents() {
        return tensorExtents;
    }

    /**
     * Layout: header, signature, children (8-aligned), names (kernel names, entry
     * symbols, then the orchestration entry), each distinct kernel library image
     * (8-aligned; children with the same image share one copy), the orchestration
     * (8-aligned: a program, or an orchestration library image).
     */
    private byte[] encode() {
        List<byte[]> names = new ArrayList<>(children.size());
        for (Child c : children) {
            names.add(c.kernel().name().getBytes(StandardCharsets.US_ASCII));
        }
        byte[] entry = orchestrationLibrary == null ? new byte[0]
                : orchestrationLibrary.entry().getBytes(StandardCharsets.US_ASCII);
        long signatureOffset = CallableLayouts.ChipCallableHeader.SIZE;
        long childrenOffset = align8(signatureOffset + signature.size());
        long namesOffset = childrenOffset + (long) children.size() * CallableLayouts.ChipCallableChild.SIZE;
        long at = namesOffset;
        for (byte[] n : names) {
            at += n.length;
        }
        long entryOffset = at;
        at += entry.length;
        List<byte[]> images = new ArrayList<>();
        List<Long> imageOffsets = new ArrayList<>();
        long[] childImage = new long[children.size()];
        for (int i = 0; i < children.size(); i++) {
            byte[] image = children.get(i).kernel().rawImage();
            if (image == null) {
                continue;
            }
            int same = indexOfContent(images, image);
            if (same < 0) {
                at = align8(at);
                images.add(image);
                imageOffsets.add(at);
                same = images.size() - 1;
                at += image.length;
            }
            childImage[i] = imageOffsets.get(same);
        }
        long orchestrationOffset = align8(at);
        byte[] orchestration = program != null ? program.rawBytes() : orchestrationLibrary.rawImage();
        long total = orchestrationOffset + orchestration.length;
        if (total > CallableLayouts.PTO_CALLABLE_MAX_BYTES) {
            throw new IllegalArgumentException("the callable is " + total + " bytes; at most "
                    + CallableLayouts.PTO_CALLABLE_MAX_BYTES);
        }
        ByteBuffer b = ByteBuffer.allocate((int) total).order(ByteOrder.LITTLE_ENDIAN);

        b.putInt(CallableLayouts.ChipCallableHeader.MAGIC, CallableLayouts.PTO_CALLABLE_MAGIC);
        b.putShort(CallableLayouts.ChipCallableHeader.FORMAT_VERSION, (short) CallableLayouts.PTO_CALLABLE_FORMAT_VERSION);
        b.putShort(CallableLayouts.ChipCallableHeader.ORCHESTRATION_KIND,
                (short) (program != null ? CallableLayouts.PTO_ORCH_PROGRAM : CallableLayouts.PTO_ORCH_LIBRARY));
        b.putInt(CallableLayouts.ChipCallableHeader.TOTAL_SIZE, (int) total);
        b.putInt(CallableLayouts.ChipCallableHeader.CHILD_COUNT, children.size());
        b.putInt(CallableLayouts.ChipCallableHeader.SIGNATURE_LENGTH, signature.size());
        b.putInt(CallableLayouts.ChipCallableHeader.RESERVED, 0);
        putRef(b, CallableLayouts.ChipCallableHeader.SIGNATURE, signatureOffset, signature.size());
        putRef(b, CallableLayouts.ChipCallableHeader.CHILDREN, childrenOffset,
                children.size() * CallableLayouts.ChipCallableChild.SIZE);
        putRef(b, CallableLayouts.ChipCallableHeader.ORCHESTRATION, orchestrationOffset, orchestration.length);
        putRef(b, CallableLayouts.ChipCallableHeader.ORCHESTRATION_ENTRY, entryOffset, entry.length);

        for (int i = 0; i < signature.size(); i++) {
            b.put((int) signatureOffset + i, (byte) signature.get(i).code());
        }
        long nameAt = namesOffset;
        for (int i = 0; i < children.size(); i++) {
            Child c = children.get(i);
            int child = (int) childrenOffset + i * CallableLayouts.ChipCallableChild.SIZE;
            byte[] image = c.kernel().rawImage();
            b.putInt(child + CallableLayouts.ChipCallableChild.FUNC_ID, c.funcId());
            b.put(child + CallableLayouts.ChipCallableChild.CORE_TYPE, (byte) c.coreType().code());
            b.put(child + CallableLayouts.ChipCallableChild.SOURCE_KIND,
                    (byte) (image == null ? CallableLayouts.PTO_KERNEL_BUILTIN : CallableLayouts.PTO_KERNEL_LIBRARY));
            b.putShort(child + CallableLayouts.ChipCallableChild.RESERVED, (short) 0);
            byte[] name = names.get(i);
            putRef(b, child + CallableLayouts.ChipCallableChild.NAME, nameAt, name.length);
            putRef(b, child + CallableLayouts.ChipCallableChild.IMAGE, childImage[i], image == null ? 0 : image.length);
            b.putLong(child + CallableLayouts.ChipCallableChild.RESOLVED_ADDR, 0);
            b.put((int) nameAt, name);
            nameAt += name.length;
        }
        b.put((int) entryOffset, entry);
        for (int i = 0; i < images.size(); i++) {
            b.put((int) (long) imageOffsets.get(i), images.get(i));
        }
        b.put((int) orchestrationOffset, orchestration);
        return b.array();
    }

    private static int indexOfContent(List<byte[]> images, byte[] image) {
        for (int i = 0; i < images.size(); i++) {
            if (java.util.Arrays.equals(images.get(i), image)) {
                return i;
            }
        }
        return -1;
    }

    /** A {@code PtoBlobRef}; an empty blob is written {0, 0} ("absent"). */
    private static void putRef(ByteBuffer b, int at, long offset, int size) {
        b.putInt(at + CallableLayouts.PtoBlobRef.OFFSET, size == 0 ? 0 : (int) offset);
        b.putInt(at + CallableLayouts.PtoBlobRef.SIZE_FIELD, size);
    }

    private static long align8(long n) {
        return (n + 7) & ~7L;
    }

    @Override
    public String toString() {
        return "ChipCallable[signature=" + signature + ", children=" + children.size() + ", "
                + (program != null ? program : orchestrationLibrary != null ? orchestrationLibrary : "decoded from bytes")
                + ", " + bytes.length + " bytes]";
    }

    /**
     * Builds a {@link ChipCallable}, checking what can be checked without the library:
     * signature limits and order, unique func ids, SUBMITs of known func ids, tensor and
     * scalar indices inside the signature, view directions against the signature and the
     * kernel's parameter list. The library re-checks everything at registration.
     */
    public static final class Builder {
        private final List<Direction> signature = new ArrayList<>();
        private final List<Child> children = new ArrayList<>();
        private Program program;
        private OrchestrationLibrary orchestrationLibrary;

        private Builder() {
        }

        /** Sets the whole signature: one direction per run argument, tensors first. */
        public Builder signature(Direction... directions) {
            Objects.requireNonNull(directions, "directions");
            signature.clear();
            for (Direction d : directions) {
                param(d);
            }
            return this;
        }

        /** Appends one run argument's direction. */
        public Builder param(Direction direction) {
            signature.add(Objects.requireNonNull(direction, "direction"));
            return this;
        }

        /** Binds {@code funcId} to a kernel on a core type. */
        public Builder child(int funcId, CoreType coreType, Kernel kernel) {
            children.add(new Child(funcId, coreType, kernel));
            return this;
        }

        /**
         * Binds {@code funcId} to a kernel on the kernel's own core type.
         *
         * @throws IllegalArgumentException when the kernel's core type is not known
         */
        public Builder child(int funcId, Kernel kernel) {
            Objects.requireNonNull(kernel, "kernel");
            CoreType core = kernel.coreType().orElseThrow(() -> new IllegalArgumentException(
                    "the core type of kernel '" + kernel.name() + "' is not known (a kernel of your own does not"
                            + " say where it runs); name it: child(" + funcId + ", CoreType.AIV, kernel) for a"
                            + " vector kernel (CoreType.AIC for a cube kernel), or declare it once with"
                            + " kernel.withSignature(CoreType.AIV, ...)"));
            return child(funcId, core, kernel);
        }

        /** The orchestration: a program the library interprets. */
        public Builder program(Program program) {
            this.program = Objects.requireNonNull(program, "program");
            return this;
        }

        /**
         * The orchestration: a user orchestration library (a host-compiled shared object
         * exporting {@code entry} as a {@code PtoOrchestrationFn}, see
         * include/ptorun/pto_orchestration.h), read now. hbg runs it on the host in
         * prepare, trb on the device at launch; it submits tasks for this callable's
         * children by func id.
         *
         * @throws java.io.UncheckedIOException when the file cannot be read
         * @throws IllegalArgumentException for an empty file or a malformed symbol
         */
        public Builder orchestrationLibrary(Path library, String entry) {
            Objects.requireNonNull(library, "library");
            this.orchestrationLibrary = new OrchestrationLibrary(Kernel.readImage(library, "orchestration library"),
                    entry, library.toString());
            return this;
        }

        /** {@link #orchestrationLibrary(Path, String)} from the library's bytes. */
        public Builder orchestrationLibrary(byte[] image, String entry) {
            this.orchestrationLibrary = new OrchestrationLibrary(image, entry, image.length + "-byte image");
            return this;
        }

        /**
         * @throws IllegalArgumentException naming what is wrong
         */
        public ChipCallable build() {
            if (program == null && orchestrationLibrary == null) {
                throw new IllegalArgumentException(
                        "a callable needs an orchestration: call program(...) or orchestrationLibrary(...)");
            }
            if (program != null && orchestrationLibrary != null) {
                throw new IllegalArgumentException(
                        "a callable has one orchestration: a program or an orchestration library, not both");
            }
            int tensors = checkSignature();
            int scalars = signature.size() - tensors;
            Map<Integer, Child> byFuncId = checkChildren();
            if (program != null) {
                for (Program.Submit s : program.submits()) {
                    checkSubmit(s, byFuncId, tensors, scalars);
                }
                for (Program.Invoke v : program.invokes()) {
                    checkArguments("instruction " + v.instruction() + " (INVOKE sub-graph " + v.subgraph() + ")",
                            v.params(), tensors, scalars);
                }
            }
            return new ChipCallable(List.copyOf(signature), List.copyOf(children), program, orchestrationLibrary);
        }

        private int checkSignature() {
            if (signature.size() > CallableLayouts.PTO_CALLABLE_MAX_SIGNATURE) {
                throw new IllegalArgumentException("the signature has " + signature.size()
                        + " parameters; at most " + CallableLayouts.PTO_CALLABLE_MAX_SIGNATURE);
            }
            int tensors = 0;
            boolean scalarSeen = false;
            for (int i = 0; i < signature.size(); i++) {
                if (signature.get(i).isTensor()) {
                    if (scalarSeen) {
                        throw new IllegalArgumentException("signature parameter " + i + " is a tensor after a"
                                + " scalar: tensors come first, as in TaskArgs " + signature);
                    }
                    tensors++;
                } else {
                    scalarSeen = true;
                }
            }
            if (tensors > org.ptorun.TaskArgs.MAX_TENSORS) {
                throw new IllegalArgumentException("the signature has " + tensors + " tensors; at most "
                        + org.ptorun.TaskArgs.MAX_TENSORS);
            }
            if (signature.size() - tensors > org.ptorun.TaskArgs.MAX_SCALARS) {
                throw new IllegalArgumentException("the signature has " + (signature.size() - tensors)
                        + " scalars; at most " + org.ptorun.TaskArgs.MAX_SCALARS);
            }
            return tensors;
        }

        private Map<Integer, Child> checkChildren() {
            if (children.size() > CallableLayouts.PTO_CALLABLE_MAX_CHILDREN) {
                throw new IllegalArgumentException("a callable has at most " + CallableLayouts.PTO_CALLABLE_MAX_CHILDREN
                        + " children, not " + children.size());
            }
            Map<Integer, Child> byFuncId = new HashMap<>();
            for (Child c : children) {
                if (c.funcId() < 0 || c.funcId() > CallableLayouts.PTO_CALLABLE_MAX_FUNC_ID) {
                    throw new IllegalArgumentException("func_id " + c.funcId() + " is outside 0.."
                            + CallableLayouts.PTO_CALLABLE_MAX_FUNC_ID);
                }
                if (byFuncId.put(c.funcId(), c) != null) {
                    throw new IllegalArgumentException("func_id " + c.funcId() + " is bound twice");
                }
                c.kernel().coreType().ifPresent(core -> {
                    if (core != c.coreType()) {
                        throw new IllegalArgumentException("kernel '" + c.kernel().name() + "' runs on " + core
                                + ", not " + c.coreType() + " (func_id " + c.funcId() + ")");
                    }
                });
            }
            return byFuncId;
        }

        private void checkSubmit(Program.Submit s, Map<Integer, Child> byFuncId, int tensors, int scalars) {
            String insn = s.where();
            Child child = byFuncId.get(s.funcId());
            if (child == null) {
                throw new IllegalArgumentException(insn + " submits func_id " + s.funcId()
                        + ", which no child binds (children: " + byFuncId.keySet() + ")");
            }
            if (s.subgraph() < 0) { // a body's indices name its boundary: the program builder checked them
                checkArguments(insn + " (func_id " + s.funcId() + ")", s.params(), tensors, scalars);
            }
            child.kernel().parameterForms().ifPresent(forms -> checkAgainstKernel(insn, s, child.kernel(), forms));
        }

        /** A SUBMIT's or an INVOKE's argument tensors and scalars against the signature. */
        private void checkArguments(String insn, List<Param> params, int tensors, int scalars) {
            for (int i = 0; i < params.size(); i++) {
                Param p = params.get(i);
                String where = insn + " parameter " + i;
                if (p.kind() == Param.Kind.ARG_TENSOR) {
                    if (p.index() >= tensors) {
                        throw new IllegalArgumentException(where + " views tensor argument " + p.index()
                                + " but the signature has " + tensors + " tensors");
                    }
                    Direction declared = signature.get(p.index());
                    if (p.direction().writes() && !declared.writes()) {
                        throw new IllegalArgumentException(where + " writes tensor argument " + p.index()
                                + ", which the signature declares " + declared);
                    }
                } else if (p.kind() == Param.Kind.SCALAR_ARG && p.index() >= scalars) {
                    throw new IllegalArgumentException(where + " reads scalar argument " + p.index()
                            + " but the signature has " + scalars + " scalars");
                }
            }
        }

        /** A SUBMIT must fit one of the kernel's forms: the one with its parameter count. */
        private static void checkAgainstKernel(String insn, Program.Submit s, Kernel kernel,
                List<List<Direction>> forms) {
            List<Param> params = s.params();
            List<Direction> expected = forms.get(0);
            for (List<Direction> form : forms) {
                if (form.size() == params.size()) {
                    expected = form;
                    break;
                }
            }
            if (params.size() != expected.size()) {
                throw new IllegalArgumentException(insn + ": kernel " + kernel.name() + " takes "
                        + expected.size() + " parameters " + expected + ", not " + params.size());
            }
            for (int i = 0; i < expected.size(); i++) {
                Direction want = expected.get(i);
                Param p = params.get(i);
                boolean ok = want == Direction.SCALAR ? !p.kind().isTensor()
                        : p.kind().isTensor() && (!want.reads() || p.direction().reads())
                                && (!want.writes() || p.direction().writes());
                if (!ok) {
                    throw new IllegalArgumentException(insn + ": parameter " + i + " of kernel "
                            + kernel.name() + " is " + want + ", not " + p);
                }
            }
        }
    }
}

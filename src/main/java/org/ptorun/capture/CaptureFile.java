package org.ptorun.capture;

import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.zip.CRC32;
import org.ptorun.CallConfig;
import org.ptorun.DType;
import org.ptorun.Variant;
import org.ptorun.callable.Direction;

/**
 * The capture file format, version 1 (docs/replay.md). Little-endian throughout:
 *
 * <pre>
 * magic      8 bytes  "PTOCAP\r\n"
 * version    u32      1
 * flags      u32      bit 0 outputs present, bit 1 failure present, bit 2 identity present
 * variant    str      e.g. "a2a3/sim/hbg"            (str: u32 byte length + UTF-8)
 * callableId i32
 * callable   u32 length + bytes (ChipCallable.bytes())
 * config     i32 aicpuThreadNum, i32 blockDim, u8 trace, u8 dumpArgs, u8 depGraph, i32 timeoutMs,
 *            4 × (i64 ringTaskWindow, i64 ringHeap, i64 ringDepPool), str outputPrefix,
 *            str captureFailuresTo ("" when unset)
 * scalars    u32 count, count × i64
 * tensors    u32 count, per tensor: u8 direction, u8 dtype, u8 ndims, ndims × i32 shape,
 *            ndims × i32 strides, i64 startOffset, i64 byteSize
 * identity   (flag) i64 runId, i64 dispatchId, i64 runEpoch
 * failure    (flag) str class, str message, i32 code
 * inputs     per tensor, byteSize bytes
 * outputs    (flag) per OUT/INOUT tensor, byteSize bytes
 * crc32      u32      CRC-32 of every byte before it
 * </pre>
 */
final class CaptureFile {

    static final byte[] MAGIC = {'P', 'T', 'O', 'C', 'A', 'P', '\r', '\n'};
    private static final int OUTPUTS = 1;
    private static final int FAILURE = 2;
    private static final int IDENTITY = 4;
    /** Room a file may take beyond its tensor bytes (callable, config, strings). */
    private static final long METADATA_ROOM = 64L << 20;

    private CaptureFile() {
    }

    static void write(RunCapture c, Path file) throws IOException {
        Path dir = file.toAbsolutePath().getParent();
        Files.createDirectories(dir);
        Path tmp = Files.createTempFile(dir, ".capture-", ".tmp");
        try {
            try (OutputStream os = new BufferedOutputStream(Files.newOutputStream(tmp), 1 << 16)) {
                Writer w = new Writer(os);
                w.bytes(MAGIC);
                w.i32(RunCapture.FORMAT_VERSION);
                boolean outputs = c.hasOutputs();
                w.i32((outputs ? OUTPUTS : 0) | (c.failure().isPresent() ? FAILURE : 0)
                        | (c.identity().isPresent() ? IDENTITY : 0));
                w.str(c.variant().toString());
                w.i32(c.callableId());
                byte[] callable = c.callable();
                w.i32(callable.length);
                w.bytes(callable);
                CallConfig k = c.config();
                w.i32(k.aicpuThreadNum());
                w.i32(k.blockDim());
                w.u8(k.enableTrace() ? 1 : 0);
                w.u8(k.enableDumpArgs() ? 1 : 0);
                w.u8(k.enableDepGraph() ? 1 : 0);
                w.i32(k.timeoutMs());
                for (int r = 0; r < CallConfig.RING_COUNT; r++) {
                    w.i64(k.ringTaskWindow(r));
                    w.i64(k.ringHeap(r));
                    w.i64(k.ringDepPool(r));
                }
                w.str(k.outputPrefix());
                w.str(k.captureFailuresTo().map(Path::toString).orElse(""));
                long[] scalars = c.scalars();
                w.i32(scalars.length);
                for (long s : scalars) {
                    w.i64(s);
                }
                w.i32(c.tensors().size());
                for (RunCapture.CapturedTensor t : c.tensors()) {
                    w.u8(t.direction().code());
                    w.u8(t.dtype().code());
                    int[] shape = t.shape();
                    int[] strides = t.strides();
                    w.u8(shape.length);
                    for (int s : shape) {
                        w.i32(s);
                    }
                    for (int s : strides) {
                        w.i32(s);
                    }
                    w.i64(t.startOffset());
                    w.i64(t.byteSize());
                }
                if (c.identity().isPresent()) {
                    RunCapture.RunIdentity id = c.identity().get();
                    w.i64(id.runId());
                    w.i64(id.dispatchId());
                    w.i64(id.runEpoch());
                }
                if (c.failure().isPresent()) {
                    RunCapture.Failure f = c.failure().get();
                    w.str(f.exceptionClass());
                    w.str(f.message());
                    w.i32(f.code());
                }
                for (RunCapture.CapturedTensor t : c.tensors()) {
                    w.bytes(t.input());
                }
                if (outputs) {
                    for (RunCapture.CapturedTensor t : c.tensors()) {
                        if (t.direction().writes()) {
                            byte[] o = t.output();
                            w.bytes(o != null ? o : new byte[(int) t.byteSize()]);
                        }
                    }
                }
                w.crc();
            }
            Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        } finally {
            Files.deleteIfExists(tmp);
        }
    }

    static RunCapture read(Path file, long maxBytes) throws IOException {
        long size = Files.size(file);
        if (size > maxBytes + METADATA_ROOM || size > Integer.MAX_VALUE - 8) {
            throw new CaptureTooLargeException("capture file " + file + " (" + size + " bytes)", size, maxBytes);
        }
        byte[] all = Files.readAllBytes(file);
        Reader r = new Reader(file, all);
        r.magic();
        int version = r.i32("the format version");
        if (version != RunCapture.FORMAT_VERSION) {
            throw new CaptureFormatException(file + " has capture format version " + version + "; this ptorun reads"
                    + " version " + RunCapture.FORMAT_VERSION);
        }
        int flags = r.i32("the flags");
        String variantText = r.str("the variant");
        Variant variant;
        try {
            variant = Variant.parse(variantText);
        } catch (IllegalArgumentException e) {
            throw r.corrupt("its variant: " + e.getMessage());
        }
        int callableId = r.i32("the callable id");
        byte[] callable = r.bytes(r.length("the callable's length"), "the callable");
        CallConfig config;
        try {
            CallConfig.Builder k = CallConfig.builder()
                    .aicpuThreadNum(r.i32("the config"))
                    .blockDim(r.i32("the config"))
                    .enableTrace(r.u8("the config") != 0)
                    .enableDumpArgs(r.u8("the config") != 0)
                    .enableDepGraph(r.u8("the config") != 0)
                    .timeoutMs(r.i32("the config"));
            for (int ring = 0; ring < CallConfig.RING_COUNT; ring++) {
                k.ringTaskWindow(ring, r.i64("the config"));
                k.ringHeap(ring, r.i64("the config"));
                k.ringDepPool(ring, r.i64("the config"));
            }
            k.outputPrefix(r.str("the config's output prefix"));
            String captureTo = r.str("the config's capture directory");
            k.captureFailuresTo(captureTo.isEmpty() ? null : Path.of(captureTo));
            config = k.build();
        } catch (IllegalArgumentException e) {
            throw r.corrupt("its config: " + e.getMessage());
        }
        int scalarCount = r.count("the scalar count", 128);
        long[] scalars = new long[scalarCount];
        for (int i = 0; i < scalarCount; i++) {
            scalars[i] = r.i64("scalar " + i);
        }
        int tensorCount = r.count("the tensor count", 256);
        Direction[] directions = new Direction[tensorCount];
        DType[] dtypes = new DType[tensorCount];
        int[][] shapes = new int[tensorCount][];
        int[][] strides = new int[tensorCount][];
        long[] offsets = new long[tensorCount];
        long[] sizes = new long[tensorCount];
        long total = 0;
        for (int i = 0; i < tensorCount; i++) {
            String what = "tensor " + i;
            int d = r.u8(what);
            if (d < Direction.IN.code() || d > Direction.INOUT.code()) {
                throw r.corrupt(what + " has direction code " + d);
            }
            directions[i] = Direction.values()[d];
            try {
                dtypes[i] = DType.fromCode(r.u8(what));
            } catch (IllegalArgumentException e) {
                throw r.corrupt(what + ": " + e.getMessage());
            }
            int ndims = r.u8(what);
            if (ndims < 1 || ndims > 5) {
                throw r.corrupt(what + " has " + ndims + " dimensions");
            }
            shapes[i] = new int[ndims];
            strides[i] = new int[ndims];
            for (int k = 0; k < ndims; k++) {
                shapes[i][k] = r.i32(what);
            }
            for (int k = 0; k < ndims; k++) {
                strides[i][k] = r.i32(what);
            }
            offsets[i] = r.i64(what);
            sizes[i] = r.i64(what);
            if (sizes[i] < 0 || sizes[i] > Integer.MAX_VALUE - 8) {
                throw r.corrupt(what + " claims " + sizes[i] + " bytes");
            }
            total += sizes[i] + ((flags & OUTPUTS) != 0 && directions[i].writes() ? sizes[i] : 0);
        }
        if (total > maxBytes) {
            throw new CaptureTooLargeException("capture file " + file, total, maxBytes);
        }
        Optional<RunCapture.RunIdentity> identity = Optional.empty();
        if ((flags & IDENTITY) != 0) {
            identity = Optional.of(new RunCapture.RunIdentity(r.i64("the identity"), r.i64("the identity"),
                    r.i64("the identity")));
        }
        Optional<RunCapture.Failure> failure = Optional.empty();
        if ((flags & FAILURE) != 0) {
            failure = Optional.of(new RunCapture.Failure(r.str("the failure's class"), r.str("the failure's message"),
                    r.i32("the failure's code")));
        }
        byte[][] inputs = new byte[tensorCount][];
        for (int i = 0; i < tensorCount; i++) {
            inputs[i] = r.bytes((int) sizes[i], "the input bytes of tensor " + i);
        }
        byte[][] outputs = new byte[tensorCount][];
        if ((flags & OUTPUTS) != 0) {
            for (int i = 0; i < tensorCount; i++) {
                if (directions[i].writes()) {
                    outputs[i] = r.bytes((int) sizes[i], "the output bytes of tensor " + i);
                }
            }
        }
        r.checksum();
        List<RunCapture.CapturedTensor> tensors = new ArrayList<>(tensorCount);
        try {
            for (int i = 0; i < tensorCount; i++) {
                tensors.add(new RunCapture.CapturedTensor(directions[i], dtypes[i], shapes[i], strides[i], offsets[i],
                        sizes[i], inputs[i], outputs[i]));
            }
        } catch (IllegalArgumentException e) {
            throw r.corrupt(e.getMessage());
        }
        return new RunCapture(version, variant, callableId, callable, config, scalars, tensors, failure, identity);
    }

    /** Little-endian output with a running CRC-32. */
    private static final class Writer {
        private final OutputStream out;
        private final CRC32 crc = new CRC32();
        private final ByteBuffer scratch = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);

        Writer(OutputStream out) {
            this.out = out;
        }

        void bytes(byte[] b) throws IOException {
            out.write(b);
            crc.update(b);
        }

        void u8(int v) throws IOException {
            scratch.clear();
            scratch.put((byte) v);
            flushScratch();
        }

        void i32(int v) throws IOException {
            scratch.clear();
            scratch.putInt(v);
            flushScratch();
        }

        void i64(long v) throws IOException {
            scratch.clear();
            scratch.putLong(v);
            flushScratch();
        }

        void str(String s) throws IOException {
            byte[] b = s.getBytes(StandardCharsets.UTF_8);
            i32(b.length);
            bytes(b);
        }

        private void flushScratch() throws IOException {
            out.write(scratch.array(), 0, scratch.position());
            crc.update(scratch.array(), 0, scratch.position());
        }

        void crc() throws IOException {
            int value = (int) crc.getValue();
            scratch.clear();
            scratch.putInt(value);
            out.write(scratch.array(), 0, 4);
        }
    }

    /** Little-endian input that names what it was reading when the file ended. */
    private static final class Reader {
        private final Path file;
        private final ByteBuffer b;

        Reader(Path file, byte[] all) {
            this.file = file;
            this.b = ByteBuffer.wrap(all).order(ByteOrder.LITTLE_ENDIAN);
        }

        void magic() {
            byte[] m = new byte[MAGIC.length];
            if (b.remaining() < m.length) {
                throw new CaptureFormatException(file + " is not a ptorun capture: " + b.remaining()
                        + " bytes, shorter than the magic");
            }
            b.get(m);
            if (!java.util.Arrays.equals(m, MAGIC)) {
                throw new CaptureFormatException(file + " is not a ptorun capture: it does not start with"
                        + " \"PTOCAP\\r\\n\"");
            }
        }

        private void need(int n, String what) {
            if (b.remaining() < n) {
                throw new CaptureFormatException(file + " is truncated: it ends at byte " + b.limit() + " while"
                        + " reading " + what + " (" + n + " bytes needed, " + b.remaining() + " left)");
            }
        }

        int u8(String what) {
            need(1, what);
            return b.get() & 0xFF;
        }

        int i32(String what) {
            need(4, what);
            return b.getInt();
        }

        long i64(String what) {
            need(8, what);
            return b.getLong();
        }

        int length(String what) {
            int n = i32(what);
            if (n < 0) {
                throw corrupt(what + " is " + Integer.toUnsignedString(n));
            }
            return n;
        }

        int count(String what, int max) {
            int n = i32(what);
            if (n < 0 || n > max) {
                throw corrupt(what + " is " + Integer.toUnsignedString(n) + ", at most " + max);
            }
            return n;
        }

        byte[] bytes(int n, String what) {
            need(n, what);
            byte[] out = new byte[n];
            try {
                b.get(out);
            } catch (BufferUnderflowException e) {
                throw new CaptureFormatException(file + " is truncated while reading " + what, e);
            }
            return out;
        }

        String str(String what) {
            return new String(bytes(length(what + "'s length"), what), StandardCharsets.UTF_8);
        }

        void checksum() {
            int end = b.position();
            need(4, "the checksum");
            int stored = b.getInt();
            if (b.hasRemaining()) {
                throw corrupt(b.remaining() + " bytes follow the checksum");
            }
            CRC32 crc = new CRC32();
            crc.update(b.array(), 0, end);
            if ((int) crc.getValue() != stored) {
                throw corrupt(String.format(java.util.Locale.ROOT, "its CRC-32 is 0x%08x, the file says 0x%08x",
                        (int) crc.getValue(), stored));
            }
        }

        CaptureFormatException corrupt(String what) {
            return new CaptureFormatException(file + " is corrupted: " + what);
        }
    }
}

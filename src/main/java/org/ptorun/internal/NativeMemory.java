package org.ptorun.internal;

import com.sun.jna.Native;
import com.sun.jna.NativeLibrary;
import com.sun.jna.Pointer;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;

/** Raw native memory by address: C strings, byte views, malloc/free. */
public final class NativeMemory {

    private NativeMemory() {
    }

    /** The NUL-terminated UTF-8 string at {@code address}; "" for 0. */
    public static String cString(long address) {
        return address == 0 ? "" : new Pointer(address).getString(0, StandardCharsets.UTF_8.name());
    }

    /** A little-endian view of {@code size} bytes at {@code address} (no copy). */
    public static ByteBuffer view(long address, long size) {
        return new Pointer(address).getByteBuffer(0, size).order(ByteOrder.LITTLE_ENDIAN);
    }

    /** The address of a direct buffer's first byte. */
    public static long address(ByteBuffer direct) {
        if (!direct.isDirect()) {
            throw new IllegalArgumentException("buffer is not direct");
        }
        return Pointer.nativeValue(Native.getDirectBufferPointer(direct));
    }

    /** {@code malloc(size)}; 0 when it fails. */
    public static long malloc(long size) {
        return Native.malloc(size);
    }

    /**
     * {@code calloc(1, size)}: zeroed memory; 0 when it fails. Large blocks come straight
     * from {@code mmap}, already zero, so nothing touches their pages before the caller
     * does (malloc + {@link #zero} faulted in every page of a fresh 28 MiB staging block
     * inside the first prepare).
     */
    public static long calloc(long size) {
        return LibC.calloc(1, size);
    }

    /** {@code free(address)}; 0 is a no-op. */
    public static void free(long address) {
        if (address != 0) {
            Native.free(address);
        }
    }

    /**
     * Copies a whole primitive array ({@code byte[]}, {@code short[]}, {@code int[]},
     * {@code long[]}, {@code float[]}, {@code double[]}) to {@code address}, native byte order.
     * Through a native-order buffer view: its bulk put is one {@code Unsafe.copyMemory} per
     * MiB, where JNA's {@code Pointer.write} goes through JNI's {@code Get<T>ArrayRegion}
     * (docs/performance.md, P12).
     */
    public static void copyIn(long address, Object array) {
        ByteBuffer b = nativeView(address, arrayBytes(array));
        if (array instanceof float[]) {
            b.asFloatBuffer().put((float[]) array);
        } else if (array instanceof int[]) {
            b.asIntBuffer().put((int[]) array);
        } else if (array instanceof long[]) {
            b.asLongBuffer().put((long[]) array);
        } else if (array instanceof byte[]) {
            b.put((byte[]) array);
        } else if (array instanceof short[]) {
            b.asShortBuffer().put((short[]) array);
        } else {
            b.asDoubleBuffer().put((double[]) array);
        }
    }

    /** Fills a whole primitive array from {@code address} (the inverse of {@link #copyIn}). */
    public static void copyOut(long address, Object array) {
        ByteBuffer b = nativeView(address, arrayBytes(array));
        if (array instanceof float[]) {
            b.asFloatBuffer().get((float[]) array);
        } else if (array instanceof int[]) {
            b.asIntBuffer().get((int[]) array);
        } else if (array instanceof long[]) {
            b.asLongBuffer().get((long[]) array);
        } else if (array instanceof byte[]) {
            b.get((byte[]) array);
        } else if (array instanceof short[]) {
            b.asShortBuffer().get((short[]) array);
        } else {
            b.asDoubleBuffer().get((double[]) array);
        }
    }

    private static ByteBuffer nativeView(long address, long size) {
        return new Pointer(address).getByteBuffer(0, size).order(ByteOrder.nativeOrder());
    }

    /** Bytes of a primitive array ({@link #copyIn} types). */
    public static long arrayBytes(Object array) {
        if (array instanceof float[]) {
            return 4L * ((float[]) array).length;
        } else if (array instanceof int[]) {
            return 4L * ((int[]) array).length;
        } else if (array instanceof long[]) {
            return 8L * ((long[]) array).length;
        } else if (array instanceof byte[]) {
            return ((byte[]) array).length;
        } else if (array instanceof short[]) {
            return 2L * ((short[]) array).length;
        } else if (array instanceof double[]) {
            return 8L * ((double[]) array).length;
        }
        throw new IllegalArgumentException("not a primitive array: " + array);
    }

    /**
     * libc, bound by direct mapping on first use (no JNA proxy), through the process's own
     * symbols: naming "c" would send JNA searching the library path for it.
     */
    private static final class LibC {
        static {
            Native.register(LibC.class, NativeLibrary.getProcess());
        }

        static native long calloc(long count, long size);
    }

    /** Sets {@code size} bytes at {@code address} to zero. */
    public static void zero(long address, long size) {
        new Pointer(address).setMemory(0, size, (byte) 0);
    }
}

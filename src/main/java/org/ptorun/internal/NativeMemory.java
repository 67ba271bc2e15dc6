package org.ptorun.internal;

import com.sun.jna.Native;
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

    /** {@code free(address)}; 0 is a no-op. */
    public static void free(long address) {
        if (address != 0) {
            Native.free(address);
        }
    }

    /**
     * Copies a whole primitive array ({@code byte[]}, {@code short[]}, {@code int[]},
     * {@code long[]}, {@code float[]}, {@code double[]}) to {@code address}, native byte order.
     */
    public static void copyIn(long address, Object array) {
        Pointer p = new Pointer(address);
        if (array instanceof float[]) {
            float[] a = (float[]) array;
            p.write(0, a, 0, a.length);
        } else if (array instanceof int[]) {
            int[] a = (int[]) array;
            p.write(0, a, 0, a.length);
        } else if (array instanceof long[]) {
            long[] a = (long[]) array;
            p.write(0, a, 0, a.length);
        } else if (array instanceof byte[]) {
            byte[] a = (byte[]) array;
            p.write(0, a, 0, a.length);
        } else if (array instanceof short[]) {
            short[] a = (short[]) array;
            p.write(0, a, 0, a.length);
        } else if (array instanceof double[]) {
            double[] a = (double[]) array;
            p.write(0, a, 0, a.length);
        } else {
            throw new IllegalArgumentException("not a primitive array: " + array);
        }
    }

    /** Fills a whole primitive array from {@code address} (the inverse of {@link #copyIn}). */
    public static void copyOut(long address, Object array) {
        Pointer p = new Pointer(address);
        if (array instanceof float[]) {
            float[] a = (float[]) array;
            p.read(0, a, 0, a.length);
        } else if (array instanceof int[]) {
            int[] a = (int[]) array;
            p.read(0, a, 0, a.length);
        } else if (array instanceof long[]) {
            long[] a = (long[]) array;
            p.read(0, a, 0, a.length);
        } else if (array instanceof byte[]) {
            byte[] a = (byte[]) array;
            p.read(0, a, 0, a.length);
        } else if (array instanceof short[]) {
            short[] a = (short[]) array;
            p.read(0, a, 0, a.length);
        } else if (array instanceof double[]) {
            double[] a = (double[]) array;
            p.read(0, a, 0, a.length);
        } else {
            throw new IllegalArgumentException("not a primitive array: " + array);
        }
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

    /** Sets {@code size} bytes at {@code address} to zero. */
    public static void zero(long address, long size) {
        new Pointer(address).setMemory(0, size, (byte) 0);
    }
}

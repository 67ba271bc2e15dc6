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

    /** Sets {@code size} bytes at {@code address} to zero. */
    public static void zero(long address, long size) {
        new Pointer(address).setMemory(0, size, (byte) 0);
    }
}

package org.ptorun;

import java.lang.ref.Reference;
import java.nio.ByteBuffer;
import java.util.Objects;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.ptorun.internal.NativeMemory;
import org.ptorun.internal.OffHeapBlock;

/**
 * A chip's device memory: {@link DeviceBuffer} allocation and free, copies between host
 * memory (direct buffers, heap buffers and arrays through a temporary off-heap copy) and
 * device buffers, and the device's counters. Every call runs under the read side of
 * the device lock, so none reaches the library once the device is released.
 */
final class DeviceMemory {

    private static final Pattern LEADING_CODE = Pattern.compile("^\\((-\\d+)\\) ");

    private final ChipDevice device;
    private final SlotTable table;

    DeviceMemory(ChipDevice device, SlotTable table) {
        this.device = device;
        this.table = table;
    }

    String describe() {
        return device.describe();
    }

    DeviceBuffer malloc(ChipWorker owner, long bytes) {
        if (bytes <= 0) {
            throw new IllegalArgumentException("device allocation of " + bytes + " bytes: the size must be > 0");
        }
        device.enter(table);
        try {
            long address = device.api.deviceMalloc(device.ctx, bytes);
            if (address == 0) {
                String message = device.lastError();
                // a chip host that is gone answers no code: its death is the reason
                int code = device.host != null && !device.host.alive() ? PtoError.CHIP_CRASHED.code()
                        : mallocFailureCode(message);
                throw device.failure("device_malloc of " + bytes + " bytes", code, stripCode(message), null);
            }
            return new DeviceBuffer(owner, this, address, bytes);
        } finally {
            device.exit();
        }
    }

    /** device_malloc's message leads with its code, "(-9) …" (abi.md, Device memory). */
    static int mallocFailureCode(String message) {
        Matcher m = LEADING_CODE.matcher(message);
        return m.find() ? Integer.parseInt(m.group(1)) : PtoError.OUT_OF_MEMORY.code();
    }

    private static String stripCode(String message) {
        Matcher m = LEADING_CODE.matcher(message);
        return m.find() ? message.substring(m.end()) : message;
    }

    /** Frees device memory; a no-op once the device released everything (the leak net calls it too). */
    void free(long address) {
        device.free(address);
    }

    /** ChipWorker.free: the buffer is this chip's and the chip is open. */
    void free(DeviceBuffer buffer) {
        Objects.requireNonNull(buffer, "buffer");
        if (buffer.memory() != this) {
            throw new IllegalArgumentException("free: " + buffer + " belongs to another ChipWorker ("
                    + buffer.memory().describe() + ")");
        }
        if (!table.isOpen()) {
            throw new IllegalStateException("free: " + describe() + " is closed");
        }
        buffer.close();
    }

    // ---- copies ------------------------------------------------------------------------------

    /** {@code src}'s remaining bytes to {@code dst} at {@code dstOffset}; the position does not move. */
    void copyTo(DeviceBuffer dst, long dstOffset, ByteBuffer src) {
        Objects.requireNonNull(src, "src");
        if (src.isDirect()) {
            copyTo(dst, dstOffset, NativeMemory.address(src) + src.position(), src.remaining(), src);
            return;
        }
        byte[] bytes = new byte[src.remaining()];
        src.duplicate().get(bytes);
        copyArrayTo(dst, dstOffset, bytes, bytes.length);
    }

    /** An array ({@code float[]}, {@code int[]}, {@code long[]}, {@code byte[]}) of {@code bytes} bytes to {@code dst}. */
    void copyArrayTo(DeviceBuffer dst, long dstOffset, Object array, long bytes) {
        if (bytes == 0) {
            copyTo(dst, dstOffset, 0, 0, array);
            return;
        }
        try (OffHeapBlock staging = device.hostMemory.allocate(bytes, 64)) {
            NativeMemory.copyIn(staging.address(), array);
            copyTo(dst, dstOffset, staging.address(), bytes, staging);
        }
    }

    /** Fills {@code dst}'s remaining bytes from {@code src} at {@code srcOffset}; the position does not move. */
    void copyFrom(DeviceBuffer src, long srcOffset, ByteBuffer dst) {
        Objects.requireNonNull(dst, "dst");
        if (dst.isReadOnly()) {
            throw new IllegalArgumentException("copyFrom into a read-only ByteBuffer");
        }
        if (dst.isDirect()) {
            copyFrom(src, srcOffset, NativeMemory.address(dst) + dst.position(), dst.remaining(), dst);
            return;
        }
        byte[] bytes = new byte[dst.remaining()];
        copyArrayFrom(src, srcOffset, bytes, bytes.length);
        dst.duplicate().put(bytes);
    }

    void copyArrayFrom(DeviceBuffer src, long srcOffset, Object array, long bytes) {
        if (bytes == 0) {
            copyFrom(src, srcOffset, 0, 0, array);
            return;
        }
        try (OffHeapBlock staging = device.hostMemory.allocate(bytes, 64)) {
            copyFrom(src, srcOffset, staging.address(), bytes, staging);
            NativeMemory.copyOut(staging.address(), array);
        }
    }

    private void copyTo(DeviceBuffer dst, long dstOffset, long hostAddress, long bytes, Object keepAlive) {
        checkRange("copyTo", dst, dstOffset, bytes);
        if (bytes == 0) {
            return;
        }
        device.enter(table);
        try {
            int rc = device.api.copyToDevice(device.ctx, dst.address() + dstOffset, hostAddress, bytes);
            Reference.reachabilityFence(keepAlive);
            if (rc != 0) {
                throw device.failure("copy_to_device of " + bytes + " bytes", rc, device.lastError(), null);
            }
        } finally {
            device.exit();
        }
    }

    private void copyFrom(DeviceBuffer src, long srcOffset, long hostAddress, long bytes, Object keepAlive) {
        checkRange("copyFrom", src, srcOffset, bytes);
        if (bytes == 0) {
            return;
        }
        device.enter(table);
        try {
            int rc = device.api.copyFromDevice(device.ctx, hostAddress, src.address() + srcOffset, bytes);
            Reference.reachabilityFence(keepAlive);
            if (rc != 0) {
                throw device.failure("copy_from_device of " + bytes + " bytes", rc, device.lastError(), null);
            }
        } finally {
            device.exit();
        }
    }

    private void checkRange(String operation, DeviceBuffer buffer, long offset, long bytes) {
        Objects.requireNonNull(buffer, "buffer");
        if (buffer.memory() != this) {
            throw new IllegalArgumentException(operation + ": " + buffer + " belongs to another ChipWorker ("
                    + buffer.memory().describe() + ")");
        }
        buffer.requireOpen(operation + ": ");
        if (offset < 0 || bytes < 0 || offset > buffer.size() - bytes) {
            throw new IllegalArgumentException(operation + ": " + bytes + " bytes at offset " + offset
                    + " do not fit in " + buffer);
        }
    }

    // ---- counters ----------------------------------------------------------------------------

    long committed() {
        return device.query(table, () -> device.api.committedDeviceMemory(device.ctx));
    }

    long aicpuDlopenCount() {
        return device.query(table, () -> device.api.aicpuDlopenCount(device.ctx));
    }

    long hostDlopenCount() {
        return device.query(table, () -> device.api.hostDlopenCount(device.ctx));
    }

    long runStreamSetCreateCount() {
        return device.query(table, () -> device.api.runStreamSetCreateCount(device.ctx));
    }

    long arenaBankGmHeapBase(int bank) {
        if (bank < 0 || bank >= PipelineContract.MAX_DEPTH) {
            throw new IllegalArgumentException("arena bank " + bank + " is outside [0, " + PipelineContract.MAX_DEPTH + ")");
        }
        return device.query(table, () -> device.api.arenaBankGmHeapBase(device.ctx, bank));
    }

    long retainedTempAddr(int slot) {
        if (slot < 0 || slot >= table.depth()) {
            throw new IllegalArgumentException("slot " + slot + " is outside [0, " + table.depth() + ")");
        }
        return device.query(table, () -> device.api.retainedTempAddr(device.ctx, slot));
    }
}

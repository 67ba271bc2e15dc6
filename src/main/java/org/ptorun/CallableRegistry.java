package org.ptorun;

import java.util.List;
import java.util.Objects;
import java.util.concurrent.locks.StampedLock;
import org.ptorun.callable.ChipCallable;
import org.ptorun.callable.Direction;
import org.ptorun.callable.TensorExtents;
import org.ptorun.internal.NativeConstants;
import org.ptorun.internal.OffHeapBlock;

/**
 * A chip's registered callables: their bytes (kept off-heap until unregistered or the
 * chip closes) and tensor directions, and the callable lock. Read side: a prepare or a
 * blocking run, from reading the callable's signature to its native call's return.
 * Write side: a registration. So registrations of one chip serialize, and none lands
 * between a prepare's reading of the signature and its native call: the signature Java
 * stages and copies back by is always the library's. Taken before the device lock. A
 * {@link StampedLock}: the read side is one compare-and-set on the prepare path (a
 * reentrant read lock also books a per-thread hold count), and neither side is reentered.
 */
final class CallableRegistry {

    private record Registered(OffHeapBlock bytes, Direction[] tensorDirections, TensorExtents extents,
                              ChipCallable callable) {
    }

    private final ChipDevice device;
    private final SlotTable table;
    private final StampedLock lock = new StampedLock();
    /** By id; read under either side of the lock, written under the write side. */
    private final Registered[] callables = new Registered[NativeConstants.PTO_MAX_CALLABLES];

    CallableRegistry(ChipDevice device, SlotTable table) {
        this.device = device;
        this.table = table;
    }

    static void checkCallableId(int id) {
        if (id < 0 || id >= NativeConstants.PTO_MAX_CALLABLES) {
            throw new IllegalArgumentException("callable id " + id + " is outside [0, "
                    + NativeConstants.PTO_MAX_CALLABLES + ")");
        }
    }

    /** A prepare or blocking run begins: registrations wait until {@link #endUse(long)}. */
    long beginUse() {
        return lock.readLock();
    }

    void endUse(long stamp) {
        lock.unlockRead(stamp);
    }

    /** The tensor directions of a registered callable, or null (the library refuses the id); under {@link #beginUse()}. */
    Direction[] directionsOf(int id) {
        Registered r = callables[id];
        return r == null ? null : r.tensorDirections();
    }

    /**
     * Refuses {@code args} whose tensors are smaller than the program of the callable registered
     * under {@code id} needs ({@link TensorExtents#check}); nothing for an unknown id (the
     * library refuses it). Under {@link #beginUse()}.
     *
     * @throws IllegalArgumentException naming the callable, the tensor, the bytes needed and given
     */
    void checkTensorSizes(int id, TaskArgs args) {
        Registered r = callables[id];
        if (r != null) {
            r.extents().check(id, args);
        }
    }

    /**
     * The callable registered under {@code id} as it was given to {@link #register} (what a
     * failure capture records), or null: none, or an id outside [0, 64).
     */
    ChipCallable callableOf(int id) {
        if (id < 0 || id >= callables.length) {
            return null;
        }
        long stamp = beginUse();
        try {
            Registered r = callables[id];
            return r == null ? null : r.callable();
        } finally {
            endUse(stamp);
        }
    }

    /** The signature Java holds for a callable id, or null (tests). */
    List<Direction> signatureOf(int id) {
        long stamp = beginUse();
        try {
            Direction[] d = directionsOf(id);
            return d == null ? null : List.of(d);
        } finally {
            endUse(stamp);
        }
    }

    void register(int id, ChipCallable callable) {
        Objects.requireNonNull(callable, "callable");
        checkCallableId(id);
        Direction[] directions = callable.tensorDirections().toArray(new Direction[0]);
        OffHeapBlock block = device.copyOffHeap(callable.bytes());
        boolean registered = false;
        long stamp = lock.writeLock();
        try {
            device.enter(table);
            try {
                int rc = device.api.registerCallable(device.ctx, id, block.address());
                if (rc != 0) {
                    // the library keeps the callable it had under this id, and so does Java
                    throw device.failure("register_callable " + id, rc, device.lastError(), null);
                }
                registered = true;
                Registered previous = callables[id];
                callables[id] = new Registered(block, directions, callable.tensorExtents(), callable);
                if (previous != null) {
                    previous.bytes().close();
                }
            } finally {
                device.exit();
            }
        } finally {
            lock.unlockWrite(stamp);
            if (!registered) {
                block.close();
            }
        }
    }

    void unregister(int id) {
        checkCallableId(id);
        long stamp = lock.writeLock();
        try {
            device.enter(table);
            try {
                int rc = device.api.unregisterCallable(device.ctx, id);
                if (rc != 0) {
                    throw device.failure("unregister_callable " + id, rc, device.lastError(), null);
                }
                Registered previous = callables[id];
                callables[id] = null;
                if (previous != null) {
                    previous.bytes().close();
                }
            } finally {
                device.exit();
            }
        } finally {
            lock.unlockWrite(stamp);
        }
    }

    /** Close, after the device context was destroyed: the bytes go. */
    void freeAll() {
        long stamp = lock.writeLock();
        try {
            for (int id = 0; id < NativeConstants.PTO_MAX_CALLABLES; id++) {
                if (callables[id] != null) {
                    callables[id].bytes().close();
                    callables[id] = null;
                }
            }
        } finally {
            lock.unlockWrite(stamp);
        }
    }
}

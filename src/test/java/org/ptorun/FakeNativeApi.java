package org.ptorun;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.ptorun.internal.Layouts;
import org.ptorun.internal.NativeMemory;
import org.ptorun.internal.OffHeapBlock;
import org.ptorun.internal.UnsupportedNativeApi;

/**
 * A scriptable stand-in for one host-runtime library. It records every call (function,
 * slot, thread), answers from per-function scripts (default: success; poll COMPLETE),
 * can park a call until the test opens its gate, keeps a per-thread last error like the
 * real library, and imitates what the tests observe: a successful launch writes the
 * acceptance sink, a successful finalize of a launched run writes 42.0f into the first
 * element of every host tensor (the "copy back"). Poisoning is the library's answer:
 * {@link #poisoned} is what {@code device_poisoned_ctx} returns. What it does not model
 * (the comm group, the pipeline contract, any new export) throws, naming the C function
 * ({@link UnsupportedNativeApi}).
 */
final class FakeNativeApi extends UnsupportedNativeApi implements AutoCloseable {

    static final long CTX = 0xC0FFEE00L;
    static final float RESULT = 42.0f;

    record Call(String fn, int slot, String thread) {
    }

    /** A parked call: the test waits until it entered, then lets it return. */
    static final class Gate {
        private final CountDownLatch entered = new CountDownLatch(1);
        private final CountDownLatch release = new CountDownLatch(1);

        void awaitEntered() throws InterruptedException {
            if (!entered.await(30, TimeUnit.SECONDS)) {
                throw new AssertionError("the blocked call was never entered");
            }
        }

        void open() {
            release.countDown();
        }

        private void park() {
            entered.countDown();
            try {
                if (!release.await(30, TimeUnit.SECONDS)) {
                    throw new AssertionError("the gate was never opened");
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    private record Reply(int rc, String message, Gate gate) {
    }

    final List<Call> calls = Collections.synchronizedList(new ArrayList<>());
    private final Map<String, Deque<Reply>> script = new HashMap<>();
    private final ThreadLocal<String> lastError = ThreadLocal.withInitial(() -> "");
    private final List<OffHeapBlock> strings = Collections.synchronizedList(new ArrayList<>());
    private volatile List<Long> storages = List.of();
    private final Map<Integer, byte[]> descriptors = new ConcurrentHashMap<>();
    private final Map<Integer, Long> argsBlocks = new ConcurrentHashMap<>();
    private final Map<Integer, Boolean> launched = new ConcurrentHashMap<>();
    private final AtomicLong nextDeviceAddress = new AtomicLong(0x7000_0000L);
    private final AtomicLong committed = new AtomicLong();
    private final Map<Long, Long> allocations = new ConcurrentHashMap<>();
    volatile int concurrentPrepare = 1;
    /** What device_poisoned_ctx answers: the test sets it as the library would have. */
    volatile boolean poisoned;
    /** Calls of device_poisoned_ctx (kept out of {@link #calls}: it is no step of a run). */
    final AtomicInteger poisonQueries = new AtomicInteger();

    /** Tells the fake which storage is which slot (ChipWorker.runtimeBufferAddresses()). */
    void bind(List<Long> storageAddresses) {
        this.storages = List.copyOf(storageAddresses);
    }

    /** The next call of {@code fn} returns {@code rc} with {@code message} as the thread's last error. */
    synchronized FakeNativeApi script(String fn, int rc, String message) {
        script.computeIfAbsent(fn, k -> new ArrayDeque<>()).add(new Reply(rc, message, null));
        return this;
    }

    /** The next call of {@code fn} parks until the gate opens, then returns {@code rc}. */
    synchronized Gate block(String fn, int rc) {
        Gate gate = new Gate();
        script.computeIfAbsent(fn, k -> new ArrayDeque<>()).add(new Reply(rc, "", gate));
        return gate;
    }

    private int answer(String fn, long storage, int defaultRc) {
        int slot = storages.indexOf(storage);
        calls.add(new Call(fn, slot, Thread.currentThread().getName()));
        Reply reply;
        synchronized (this) {
            Deque<Reply> q = script.get(fn);
            reply = q == null ? null : q.poll();
        }
        if (reply == null) {
            lastError.set("");
            return defaultRc;
        }
        if (reply.gate() != null) {
            reply.gate().park();
        }
        lastError.set(reply.message() == null ? "" : reply.message());
        return reply.rc();
    }

    /** Calls of one function, in order. */
    List<Call> callsOf(String fn) {
        synchronized (calls) {
            return calls.stream().filter(c -> c.fn().equals(fn)).toList();
        }
    }

    long count(String fn) {
        return callsOf(fn).size();
    }

    /** The descriptor the last prepare (or run) of a slot passed. */
    ByteBuffer descriptor(int slot) {
        return ByteBuffer.wrap(descriptors.get(slot)).order(java.nio.ByteOrder.LITTLE_ENDIAN);
    }

    /** The args block address the last prepare (or run) of a slot passed. */
    long argsBlock(int slot) {
        return argsBlocks.get(slot);
    }

    @Override
    public void close() {
        synchronized (strings) {
            strings.forEach(OffHeapBlock::close);
            strings.clear();
        }
    }

    // ---- the contract ----------------------------------------------------------------

    @Override
    public long variant() {
        return string("a2a3/sim/hbg");
    }

    @Override
    public long lastError() {
        return string(lastError.get());
    }

    private long string(String s) {
        byte[] bytes = s.getBytes(StandardCharsets.UTF_8);
        OffHeapBlock block = OffHeapBlock.allocate(bytes.length + 1, 8);
        block.buffer().put(0, bytes);
        strings.add(block);
        return block.address();
    }

    @Override
    public long createDeviceContext() {
        calls.add(new Call("createDeviceContext", -1, Thread.currentThread().getName()));
        return CTX;
    }

    @Override
    public void destroyDeviceContext(long ctx) {
        answer("destroyDeviceContext", 0, 0);
    }

    @Override
    public int init(long ctx, int deviceId, long aicpu, long aicpuSize, long aicore, long aicoreSize, long dispatcher,
                    long dispatcherSize, long prewarm) {
        return answer("init", 0, 0);
    }

    @Override
    public int finalizeDevice(long ctx) {
        return answer("finalizeDevice", 0, 0);
    }

    @Override
    public long runtimeSize() {
        return 4096;
    }

    @Override
    public long runtimeAlignment() {
        return 64;
    }

    @Override
    public long deviceMalloc(long ctx, long n) {
        int rc = answer("deviceMalloc", 0, 0);
        if (rc != 0) {
            return 0;
        }
        long address = nextDeviceAddress.getAndAdd((n + 0xFFF) & ~0xFFFL);
        allocations.put(address, n);
        committed.addAndGet(n);
        return address;
    }

    @Override
    public void deviceFree(long ctx, long p) {
        answer("deviceFree", 0, 0);
        Long n = allocations.remove(p);
        if (n != null) {
            committed.addAndGet(-n);
        }
    }

    @Override
    public long committedDeviceMemory(long ctx) {
        answer("committedDeviceMemory", 0, 0);
        return committed.get();
    }

    @Override
    public int copyToDevice(long ctx, long dev, long host, long n) {
        return answer("copyToDevice", 0, 0);
    }

    @Override
    public int copyFromDevice(long ctx, long host, long dev, long n) {
        return answer("copyFromDevice", 0, 0);
    }

    @Override
    public int registerCallable(long ctx, int id, long callable) {
        return answer("registerCallable", 0, 0);
    }

    @Override
    public int unregisterCallable(long ctx, int id) {
        return answer("unregisterCallable", 0, 0);
    }

    @Override
    public int prepareRun(long ctx, long storage, int id, long args, long cfg, long desc) {
        record(storage, args, desc);
        int rc = answer("prepareRun", storage, 0);
        launched.put(storages.indexOf(storage), false);
        return rc;
    }

    private void record(long storage, long args, long desc) {
        int slot = storages.indexOf(storage);
        byte[] copy = new byte[Layouts.NativeRunDescriptor.SIZE];
        NativeMemory.view(desc, copy.length).get(copy);
        descriptors.put(slot, copy);
        argsBlocks.put(slot, args);
    }

    @Override
    public int launchRun(long ctx, long storage) {
        int rc = answer("launchRun", storage, 0);
        if (rc == 0) {
            int slot = storages.indexOf(storage);
            launched.put(slot, true);
            publishAcceptance(slot);
        }
        return rc;
    }

    private void publishAcceptance(int slot) {
        ByteBuffer d = descriptor(slot);
        long sink = d.getLong(Layouts.NativeRunDescriptor.ACCEPTED_STATE);
        if (sink != 0) {
            NativeMemory.view(sink, 4).putInt(0, d.getInt(Layouts.NativeRunDescriptor.ACCEPTED_VALUE));
        }
    }

    @Override
    public int pollRun(long ctx, long storage) {
        return answer("pollRun", storage, 1);
    }

    @Override
    public int waitRun(long ctx, long storage) {
        return answer("waitRun", storage, 0);
    }

    @Override
    public int finalizeRun(long ctx, long storage) {
        int rc = answer("finalizeRun", storage, 0);
        int slot = storages.indexOf(storage);
        if (rc == 0 && Boolean.TRUE.equals(launched.get(slot))) {
            writeResults(argsBlocks.get(slot));
        }
        launched.put(slot, false);
        return rc;
    }

    /** "Copies back": the first f32 of every host tensor becomes 42. */
    private static void writeResults(long argsBlock) {
        ByteBuffer args = NativeMemory.view(argsBlock, Layouts.ChipStorageTaskArgs.SIZE);
        int count = args.getInt(Layouts.ChipStorageTaskArgs.TENSOR_COUNT);
        for (int i = 0; i < count; i++) {
            int at = i * Layouts.ChipTensor.SIZE;
            long addr = args.getLong(at + Layouts.ChipTensor.ADDR);
            long size = args.getLong(at + Layouts.ChipTensor.SIZE_FIELD);
            if (args.get(at + Layouts.ChipTensor.CHILD_MEMORY) == 0 && size >= 4) {
                NativeMemory.view(addr, 4).putFloat(0, RESULT);
            }
        }
    }

    @Override
    public int run(long ctx, long storage, int id, long args, long cfg, long desc) {
        record(storage, args, desc);
        int rc = answer("run", storage, 0);
        if (rc == 0) {
            publishAcceptance(storages.indexOf(storage));
            writeResults(args);
        }
        return rc;
    }

    @Override
    public long aicpuDlopenCount(long ctx) {
        answer("aicpuDlopenCount", 0, 0);
        return 3;
    }

    @Override
    public long hostDlopenCount(long ctx) {
        answer("hostDlopenCount", 0, 0);
        return 4;
    }

    @Override
    public long runStreamSetCreateCount(long ctx) {
        answer("runStreamSetCreateCount", 0, 0);
        return 5;
    }

    @Override
    public int supportsConcurrentNativePrepare(long ctx) {
        return concurrentPrepare;
    }

    @Override
    public long arenaBankGmHeapBase(long ctx, int bank) {
        answer("arenaBankGmHeapBase", 0, 0);
        return 0x1_0000_0000L * (bank + 1);
    }

    @Override
    public long retainedTempAddr(long ctx, int slot) {
        answer("retainedTempAddr", 0, 0);
        return 0x2_0000_0000L + slot;
    }

    @Override
    public long logPending() {
        return 0;
    }

    @Override
    public int logNext(long buf, long cap) {
        return 0;
    }

    @Override
    public int devicePoisoned(long ctx) {
        poisonQueries.incrementAndGet();
        return poisoned ? 1 : 0;
    }
}

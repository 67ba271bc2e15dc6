package org.ptorun;

import static org.assertj.core.api.Assertions.assertThat;
import static org.ptorun.Misuse.of;
import static org.ptorun.MisuseFixture.CHAIN;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import org.ptorun.MisuseFixture.RawRefusal;
import org.ptorun.internal.Layouts;
import org.ptorun.internal.NativeApi;
import org.ptorun.internal.OffHeapBlock;
import org.ptorun.worker.RunTicket;
import org.ptorun.worker.Worker;

/**
 * Worker misuses (a caller-driven Worker on device 3, closed at the end of the case) and
 * the C contract reached through the package-private {@link HostRuntime#api()}: raw
 * calls on the fixture chip's own device context and storages, each refused by the
 * library with the documented code and message, leaving the chip's runs untouched.
 */
final class WorkerAndContractMisuses {

    private WorkerAndContractMisuses() {
    }

    private static Worker worker(MisuseFixture f, int capacity) {
        Worker w = f.track(Worker.builder().runtime(f.runtime).devices(3).queueCapacity(capacity).build());
        w.register(CHAIN, MisuseFixture.chain()).join();
        return w;
    }

    static List<Misuse> worker() {
        List<Misuse> m = new ArrayList<>();
        String a = "Worker";
        Class<IllegalArgumentException> iae = IllegalArgumentException.class;
        m.add(of(a, "enqueue callable id 64", iae, "callable id 64 is outside [0, 64)",
                f -> f.refused(() -> worker(f, 4).enqueue(64, MisuseFixture.args(), CallConfig.DEFAULT))));
        m.add(of(a, "enqueue callable id -1", iae, "callable id -1 is outside [0, 64)",
                f -> f.refused(() -> worker(f, 4).enqueue(-1, MisuseFixture.args(), CallConfig.DEFAULT))));
        m.add(of(a, "enqueue an id that is not registered", iae, "callable id 9 is not registered on this Worker",
                f -> f.refused(() -> worker(f, 4).enqueue(9, MisuseFixture.args(), CallConfig.DEFAULT))));
        m.add(of(a, "tryEnqueue an id that is not registered", iae, "is not registered on this Worker",
                f -> f.refused(() -> worker(f, 4).tryEnqueue(9, MisuseFixture.args(), CallConfig.DEFAULT))));
        m.add(of(a, "timed enqueue of an id that is not registered", iae, "is not registered on this Worker",
                f -> f.refused(() -> worker(f, 4).enqueue(9, MisuseFixture.args(), CallConfig.DEFAULT, 1,
                        TimeUnit.SECONDS))));
        m.add(of(a, "enqueue null args", NullPointerException.class, "args",
                f -> f.refused(() -> worker(f, 4).enqueue(CHAIN, null, CallConfig.DEFAULT))));
        m.add(of(a, "enqueue after close", IllegalStateException.class, "the Worker is closed", f -> {
            Worker w = worker(f, 4);
            w.close();
            f.refused(() -> w.enqueue(CHAIN, MisuseFixture.args(), CallConfig.DEFAULT));
        }));
        m.add(of(a, "register after close", IllegalStateException.class, "the Worker is closed", f -> {
            Worker w = worker(f, 4);
            w.close();
            f.refused(() -> w.register(2, MisuseFixture.chain()));
        }));
        m.add(of(a, "enqueue interrupted while the queue is full (nothing admitted)",
                InterruptedException.class, "", f -> {
                    Worker w = worker(f, 1);
                    RunTicket first = w.enqueue(CHAIN, MisuseFixture.args(), CallConfig.DEFAULT); // fills the queue
                    Throwable[] seen = new Throwable[1];
                    TestThreads.Started blocked = TestThreads.start("enqueuer", () -> {
                        try {
                            w.enqueue(CHAIN, MisuseFixture.args(), CallConfig.DEFAULT);
                        } catch (Throwable e) {
                            seen[0] = e;
                        }
                    });
                    TestThreads.awaitParked(blocked.thread());
                    blocked.thread().interrupt();
                    blocked.join();
                    f.refused(() -> {
                        if (seen[0] != null) {
                            throw seen[0];
                        }
                    });
                    w.drain();
                    RunTicket next = w.enqueue(CHAIN, MisuseFixture.args(), CallConfig.DEFAULT);
                    assertThat(next.dispatchId()).as("no dispatch id consumed").isEqualTo(first.dispatchId() + 1);
                    w.drain();
                }));
        m.add(of(a, "an enqueue blocked on a full queue when the Worker closes", IllegalStateException.class,
                "the Worker is closed", f -> {
                    Worker w = worker(f, 1);
                    w.enqueue(CHAIN, MisuseFixture.args(), CallConfig.DEFAULT);
                    Throwable[] seen = new Throwable[1];
                    TestThreads.Started blocked = TestThreads.start("enqueuer", () -> {
                        try {
                            w.enqueue(CHAIN, MisuseFixture.args(), CallConfig.DEFAULT);
                        } catch (Throwable e) {
                            seen[0] = e;
                        }
                    });
                    TestThreads.awaitParked(blocked.thread());
                    w.close();
                    blocked.join();
                    f.refused(() -> {
                        if (seen[0] != null) {
                            throw seen[0];
                        }
                    });
                }));
        m.add(of(a, "a run whose args disagree with the signature fails its future", BadCallableException.class,
                "PTO_ERR_BAD_CALLABLE", f -> {
                    Worker w = worker(f, 4);
                    RunTicket t = w.enqueue(CHAIN, new TaskArgs(), CallConfig.DEFAULT);
                    w.drain();
                    f.refused(() -> unwrap(() -> t.result().join()));
                }));
        m.add(of(a, "register an unknown built-in kernel fails its future", BadCallableException.class,
                "no_such_kernel", f -> {
                    Worker w = worker(f, 4);
                    f.refused(() -> unwrap(() -> w.register(4, org.ptorun.callable.ChipCallable.builder()
                            .signature(org.ptorun.callable.Direction.OUT)
                            .child(0, org.ptorun.callable.CoreType.AIV,
                                    org.ptorun.callable.Kernel.builtin("no_such_kernel"))
                            .program(org.ptorun.callable.Program.builder().submit(0, org.ptorun.callable.Param
                                    .tensor(0, org.ptorun.callable.Direction.OUT, 0, 8)).build())
                            .build()).join()));
                }));
        return m;
    }

    private static void unwrap(Runnable r) throws Throwable {
        try {
            r.run();
        } catch (CompletionException e) {
            throw e.getCause();
        }
    }

    // ---- the C contract ------------------------------------------------------------------

    /** Zeroed, 64-aligned off-heap blocks of the contract's sizes, freed at the end of the case. */
    private record Blocks(OffHeapBlock storage, OffHeapBlock args, OffHeapBlock cfg, OffHeapBlock desc) {
        static Blocks of(MisuseFixture f) {
            return new Blocks(f.track(OffHeapBlock.allocate(f.runtime.runStorageSize(), 64)),
                    f.track(OffHeapBlock.allocate(Layouts.ChipStorageTaskArgs.SIZE, 64)),
                    f.track(OffHeapBlock.allocate(Layouts.CallConfig.SIZE, 64)),
                    f.track(OffHeapBlock.allocate(Layouts.NativeRunDescriptor.SIZE, 64)));
        }
    }

    static List<Misuse> contract() {
        List<Misuse> m = new ArrayList<>();
        String a = "C contract";
        m.add(of(a, "prepare with a NULL storage", RawRefusal.class, "PTO_ERR_INVALID_ARGUMENT (-3)", f -> {
            Blocks b = Blocks.of(f);
            f.refusedRaw(() -> api(f).prepareRun(ctx(f), 0, CHAIN, b.args().address(), b.cfg().address(),
                    b.desc().address()));
        }));
        m.add(of(a, "prepare with a NULL args block", RawRefusal.class, "PTO_ERR_INVALID_ARGUMENT (-3)", f -> {
            Blocks b = Blocks.of(f);
            f.refusedRaw(() -> api(f).prepareRun(ctx(f), b.storage().address(), CHAIN, 0, b.cfg().address(),
                    b.desc().address()));
        }));
        m.add(of(a, "prepare with a NULL context", RawRefusal.class, "PTO_ERR_INVALID_ARGUMENT (-3)", f -> {
            Blocks b = Blocks.of(f);
            f.refusedRaw(() -> api(f).prepareRun(0, b.storage().address(), CHAIN, b.args().address(),
                    b.cfg().address(), b.desc().address()));
        }));
        m.add(of(a, "prepare into a misaligned storage", RawRefusal.class, "PTO_ERR_INVALID_ARGUMENT (-3)", f -> {
            Blocks b = Blocks.of(f);
            OffHeapBlock big = f.track(OffHeapBlock.allocate(f.runtime.runStorageSize() + 64, 64));
            f.refusedRaw(() -> api(f).prepareRun(ctx(f), big.address() + 8, CHAIN, b.args().address(),
                    b.cfg().address(), b.desc().address()));
        }));
        m.add(of(a, "prepare with descriptor pipeline_slot 2", RawRefusal.class, "PTO_ERR_INVALID_ARGUMENT (-3)", f -> {
            Blocks b = Blocks.of(f);
            b.desc().buffer().putInt(Layouts.NativeRunDescriptor.PIPELINE_SLOT, 2);
            f.refusedRaw(() -> prepare(f, b, CHAIN));
        }));
        m.add(of(a, "prepare with descriptor arena_bank 2", RawRefusal.class, "PTO_ERR_INVALID_ARGUMENT (-3)", f -> {
            Blocks b = Blocks.of(f);
            b.desc().buffer().putInt(Layouts.NativeRunDescriptor.ARENA_BANK, 2);
            f.refusedRaw(() -> prepare(f, b, CHAIN));
        }));
        m.add(of(a, "prepare with CallConfig.block_dim 99", RawRefusal.class, "block_dim", f -> {
            Blocks b = Blocks.of(f);
            b.cfg().buffer().putInt(Layouts.CallConfig.BLOCK_DIM, 99);
            f.refusedRaw(() -> prepare(f, b, CHAIN));
        }));
        m.add(of(a, "prepare callable id 64", RawRefusal.class, "PTO_ERR_INVALID_ARGUMENT (-3)",
                f -> f.refusedRaw(() -> prepare(f, Blocks.of(f), 64))));
        m.add(of(a, "prepare an unregistered id", RawRefusal.class, "PTO_ERR_NOT_REGISTERED (-7)",
                f -> f.refusedRaw(() -> prepare(f, Blocks.of(f), 63))));
        m.add(of(a, "prepare into a storage that is not zero-initialized", RawRefusal.class, "not zero-initialized", f -> {
            Blocks b = Blocks.of(f);
            b.storage().buffer().putLong(0, 0x1234_5678L);
            f.refusedRaw(() -> prepare(f, b, CHAIN));
        }));
        m.add(of(a, "prepare into a storage holding a prepared run", RawRefusal.class, "already holds a prepared run",
                f -> {
                    NativeRun run = f.prepare(0);
                    Blocks b = Blocks.of(f);
                    long storage = f.chip.runtimeBufferAddresses().get(0);
                    f.refusedRaw(() -> api(f).prepareRun(ctx(f), storage, CHAIN, b.args().address(),
                            b.cfg().address(), b.desc().address()));
                    f.chip.finalizeRun(run);
                }));
        for (String fn : List.of("launch", "poll", "wait", "finalize")) {
            m.add(of(a, fn + " on an empty storage", RawRefusal.class, "PTO_ERR_BAD_STORAGE (-4)",
                    f -> f.refusedRaw(() -> phase(f, fn, Blocks.of(f).storage().address()))));
        }
        for (String fn : List.of("poll", "wait")) {
            m.add(of(a, fn + " on a prepared, never launched storage", RawRefusal.class, "PTO_ERR_WRONG_PHASE (-5)", f -> {
                NativeRun run = f.prepare(0);
                f.refusedRaw(() -> phase(f, fn, f.chip.runtimeBufferAddresses().get(0)));
                f.chip.finalizeRun(run);
            }));
        }
        for (String fn : List.of("launch", "finalize")) {
            m.add(of(a, fn + " of a run prepared by another device context", RawRefusal.class,
                    "belongs to another device context", f -> {
                        NativeRun theirs = f.prepareOther(0);
                        f.refusedRaw(() -> phase(f, fn, f.other.runtimeBufferAddresses().get(0)));
                        f.other.finalizeRun(theirs);
                    }));
        }
        m.add(of(a, "poll a misaligned storage", RawRefusal.class, "PTO_ERR_INVALID_ARGUMENT (-3)",
                f -> f.refusedRaw(() -> phase(f, "poll", Blocks.of(f).storage().address() + 8))));
        m.add(of(a, "finalize_device while a run is outstanding", RawRefusal.class, "PTO_ERR_BUSY (-6)", f -> {
            NativeRun run = f.prepare(0);
            f.refusedRaw(() -> api(f).finalizeDevice(ctx(f)));
            f.chip.finalizeRun(run);
        }));
        m.add(of(a, "destroy_device_context while a run is outstanding", RawRefusal.class, "the context is left alive",
                f -> {
                    NativeRun run = f.prepare(0);
                    f.refusedRawVoid(() -> api(f).destroyDeviceContext(ctx(f)));
                    f.chip.finalizeRun(run);
                }));
        m.add(of(a, "unregister while a run is outstanding", RawRefusal.class, "PTO_ERR_BUSY (-6)", f -> {
            NativeRun run = f.prepare(0);
            f.refusedRaw(() -> api(f).unregisterCallable(ctx(f), CHAIN));
            f.chip.finalizeRun(run);
        }));
        m.add(of(a, "register callable id 64", RawRefusal.class, "PTO_ERR_INVALID_ARGUMENT (-3)", f -> {
            byte[] bytes = MisuseFixture.fill().bytes();
            OffHeapBlock block = f.track(OffHeapBlock.allocate(bytes.length, 64));
            block.buffer().put(0, bytes);
            f.refusedRaw(() -> api(f).registerCallable(ctx(f), 64, block.address()));
        }));
        m.add(of(a, "register a NULL callable", RawRefusal.class, "PTO_ERR_INVALID_ARGUMENT (-3)",
                f -> f.refusedRaw(() -> api(f).registerCallable(ctx(f), 5, 0))));
        m.add(of(a, "simpler_init a second time", RawRefusal.class, "PTO_ERR_WRONG_PHASE (-5)", f -> {
            OffHeapBlock image = f.track(OffHeapBlock.allocate(64, 64));
            f.refusedRaw(() -> api(f).init(ctx(f), 0, image.address(), 64, image.address(), 64, 0, 0, 0));
        }));
        m.add(of(a, "device_malloc of 0 bytes", RawRefusal.class, "NULL: ",
                f -> f.refusedRawPointer(() -> api(f).deviceMalloc(ctx(f), 0))));
        m.add(of(a, "device_free of an interior pointer", RawRefusal.class, "not the start of a live allocation", f -> {
            DeviceBuffer buf = f.track(f.chip.malloc(64));
            f.refusedRawVoid(() -> api(f).deviceFree(ctx(f), buf.address() + 8));
        }));
        m.add(of(a, "copy_to_device past an allocation's end", RawRefusal.class, "not inside one live allocation", f -> {
            DeviceBuffer buf = f.track(f.chip.malloc(64));
            OffHeapBlock host = f.track(OffHeapBlock.allocate(128, 64));
            f.refusedRaw(() -> api(f).copyToDevice(ctx(f), buf.address() + 32, host.address(), 64));
        }));
        m.add(of(a, "copy_from_device of another context's allocation", RawRefusal.class,
                "not inside one live allocation", f -> {
                    DeviceBuffer theirs = f.track(f.other.malloc(64));
                    OffHeapBlock host = f.track(OffHeapBlock.allocate(64, 64));
                    f.refusedRaw(() -> api(f).copyFromDevice(ctx(f), host.address(), theirs.address(), 64));
                }));
        return m;
    }

    private static NativeApi api(MisuseFixture f) {
        return f.runtime.api();
    }

    private static long ctx(MisuseFixture f) {
        return f.gated.context();
    }

    private static int prepare(MisuseFixture f, Blocks b, int id) {
        return api(f).prepareRun(ctx(f), b.storage().address(), id, b.args().address(), b.cfg().address(),
                b.desc().address());
    }

    private static int phase(MisuseFixture f, String fn, long storage) {
        return switch (fn) {
            case "launch" -> api(f).launchRun(ctx(f), storage);
            case "poll" -> api(f).pollRun(ctx(f), storage);
            case "wait" -> api(f).waitRun(ctx(f), storage);
            case "finalize" -> api(f).finalizeRun(ctx(f), storage);
            default -> throw new AssertionError(fn);
        };
    }
}

package org.ptorun;

import static org.assertj.core.api.Assertions.assertThat;
import static org.ptorun.Misuse.of;
import static org.ptorun.Misuse.only;
import static org.ptorun.MisuseFixture.CHAIN;
import static org.ptorun.MisuseFixture.N;
import static org.ptorun.callable.Direction.IN;
import static org.ptorun.callable.Direction.OUT;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Predicate;
import org.ptorun.callable.ChipCallable;
import org.ptorun.callable.Kernel;
import org.ptorun.callable.Param;
import org.ptorun.callable.Program;

/**
 * The ChipWorker misuses of the matrix: phase order, stale, forged and foreign tokens,
 * two threads on one run, registration while runs are outstanding, leases, device
 * memory, arguments and configs refused at prepare, absurd programs.
 */
final class ChipMisuses {

    private ChipMisuses() {
    }

    static final String WRONG_PHASE = "stale or used in the wrong phase";
    static final String FINALIZED = "stale or already finalized";
    static final String IN_PROGRESS = "another call on this run is in progress";

    static final Predicate<Variant> DEPTH2 = v -> HostRuntime.load(v).contract().pipelineDepth() == 2;
    static final Predicate<Variant> HBG = v -> v.runtime() == Variant.RuntimeKind.HBG;
    static final Predicate<Variant> DEPTH2_TRB = v -> DEPTH2.test(v) && v.runtime() == Variant.RuntimeKind.TRB;
    static final Predicate<Variant> SIM = v -> v.platform() == Variant.Platform.SIM;
    static final Predicate<Variant> A2A3 = v -> v.arch() == Variant.Arch.A2A3;

    static List<Misuse> all() {
        List<Misuse> m = new ArrayList<>();
        phaseOrder(m);
        tokens(m);
        races(m);
        registration(m);
        leases(m);
        memory(m);
        arguments(m);
        programs(m);
        return m;
    }

    // ---- wrong phase order ---------------------------------------------------------------------

    private static void phaseOrder(List<Misuse> m) {
        String a = "phase order";
        m.add(of(a, "launch before any prepare (a token for the empty slot)", StaleRunException.class, WRONG_PHASE,
                f -> f.refused(() -> f.chip.launch(new NativeRun(0, 1, RunEpochsProbe.unused(), 1, 1)))));
        m.add(of(a, "poll before launch", StaleRunException.class, WRONG_PHASE, f -> {
            NativeRun run = f.prepare(0);
            f.refused(() -> f.chip.poll(run));
            f.chip.finalizeRun(run);
        }));
        m.add(of(a, "await before launch", StaleRunException.class, WRONG_PHASE, f -> {
            NativeRun run = f.prepare(0);
            f.refused(() -> f.chip.await(run));
            f.chip.finalizeRun(run);
        }));
        m.add(of(a, "launch twice", StaleRunException.class, WRONG_PHASE, f -> {
            NativeRun run = f.launched(0);
            f.refused(() -> f.chip.launch(run));
            f.chip.finalizeRun(run);
        }));
        m.add(of(a, "launch a reaped run", StaleRunException.class, WRONG_PHASE, f -> {
            NativeRun run = f.reaped(0);
            f.refused(() -> f.chip.launch(run));
            f.chip.finalizeRun(run);
        }));
        m.add(of(a, "finalize twice after a launch", StaleRunException.class, FINALIZED, f -> {
            NativeRun run = f.launched(0);
            f.chip.finalizeRun(run);
            f.refused(() -> f.chip.finalizeRun(run));
        }));
        m.add(of(a, "finalize twice without a launch", StaleRunException.class, FINALIZED, f -> {
            NativeRun run = f.prepare(0);
            f.chip.finalizeRun(run);
            f.refused(() -> f.chip.finalizeRun(run));
        }));
        m.add(of(a, "launch after finalize", StaleRunException.class, WRONG_PHASE, f -> {
            NativeRun run = f.prepare(0);
            f.chip.finalizeRun(run);
            f.refused(() -> f.chip.launch(run));
        }));
        m.add(of(a, "poll after finalize", StaleRunException.class, WRONG_PHASE, f -> {
            NativeRun run = f.launched(0);
            f.chip.finalizeRun(run);
            f.refused(() -> f.chip.poll(run));
        }));
        m.add(of(a, "await after finalize", StaleRunException.class, WRONG_PHASE, f -> {
            NativeRun run = f.launched(0);
            f.chip.finalizeRun(run);
            f.refused(() -> f.chip.await(run));
        }));
        m.add(of(a, "prepare into a slot holding a prepared run", ChipBusyException.class,
                "slot already owns an unfinished native run", f -> {
                    NativeRun run = f.prepare(0);
                    f.refused(() -> f.prepare(0));
                    f.chip.finalizeRun(run);
                }));
        m.add(of(a, "prepare into a slot holding a launched run", ChipBusyException.class,
                "slot already owns an unfinished native run", f -> {
                    NativeRun run = f.launched(0);
                    f.refused(() -> f.prepare(0));
                    f.chip.finalizeRun(run);
                }));
        m.add(of(a, "blocking run() while slot 0 holds a prepared run", ChipBusyException.class,
                "slot already owns an unfinished native run", f -> {
                    NativeRun run = f.prepare(0);
                    f.refused(() -> f.chip.run(CHAIN, MisuseFixture.args(), CallConfig.DEFAULT));
                    f.chip.finalizeRun(run);
                }));
        m.add(only(DEPTH2, a, "prepare a successor next to a merely prepared run", ChipBusyException.class,
                "requires an active predecessor before staging a successor", f -> {
                    NativeRun run = f.prepare(0);
                    f.refused(() -> f.prepare(1));
                    f.chip.finalizeRun(run);
                }));
        m.add(only(DEPTH2_TRB, a, "prepare a successor of another ring sizing while a trb run executes",
                OverlapNotNowException.class, "ring sizing differs from the runtime image that run uses", f -> {
                    NativeRun run = f.launched(0);
                    CallConfig other = CallConfig.builder().ringTaskWindow(0, 64).build();
                    f.refused(() -> f.chip.prepare(CHAIN, MisuseFixture.args(), other, f.lease(1), 3, 3, null));
                    f.chip.finalizeRun(run);
                }));
        m.add(only(DEPTH2, a, "launch a staged successor while its predecessor holds the chip", ChipBusyException.class,
                "PTO_ERR_BUSY", f -> {
                    NativeRun predecessor = f.launched(0);
                    NativeRun successor = f.prepare(1);
                    f.refused(() -> f.chip.launch(successor));
                    f.chip.finalizeRun(predecessor);
                    f.chip.launch(successor); // the same token launches once the predecessor is gone
                    f.chip.finalizeRun(successor);
                }));
        m.add(only(DEPTH2, a, "stage a traced successor (a diagnostic never overlaps)", ChipBusyException.class,
                "requires an active predecessor before staging a successor", f -> {
                    NativeRun predecessor = f.launched(0);
                    CallConfig traced = CallConfig.builder().enableTrace(true)
                            .outputPrefix(System.getProperty("java.io.tmpdir")).build();
                    f.refused(() -> f.chip.prepare(CHAIN, MisuseFixture.args(), traced, f.lease(1), 3, 3, null));
                    f.chip.finalizeRun(predecessor);
                }));
    }

    // ---- stale, forged and foreign tokens ------------------------------------------------------

    private static void tokens(List<Misuse> m) {
        String a = "tokens";
        m.add(of(a, "launch a token of another ChipWorker", StaleRunException.class, WRONG_PHASE, f -> {
            NativeRun theirs = f.prepareOther(0);
            f.refused(() -> f.chip.launch(theirs));
            f.other.finalizeRun(theirs);
        }));
        m.add(of(a, "poll a launched token of another ChipWorker", StaleRunException.class, WRONG_PHASE, f -> {
            NativeRun theirs = f.prepareOther(0);
            f.other.launch(theirs);
            f.refused(() -> f.chip.poll(theirs));
            f.other.finalizeRun(theirs);
        }));
        m.add(of(a, "finalize a token of another ChipWorker", StaleRunException.class, FINALIZED, f -> {
            NativeRun theirs = f.prepareOther(0);
            f.refused(() -> f.chip.finalizeRun(theirs));
            f.other.finalizeRun(theirs);
        }));
        m.add(of(a, "finalize my token on another ChipWorker while it has its own run", StaleRunException.class,
                FINALIZED, f -> {
                    NativeRun mine = f.prepare(0);
                    NativeRun theirs = f.prepareOther(0);
                    f.refused(() -> f.other.finalizeRun(mine));
                    f.other.finalizeRun(theirs);
                    f.chip.finalizeRun(mine);
                }));
        m.add(of(a, "finalize a fabricated token with run epoch 0", StaleRunException.class, FINALIZED, f -> {
            NativeRun run = f.prepare(0);
            f.refused(() -> f.chip.finalizeRun(new NativeRun(0, run.generation(), 0, run.runId(), run.dispatchId())));
            f.chip.finalizeRun(run);
        }));
        m.add(of(a, "launch a forged token (right slot, epoch + 1)", StaleRunException.class, WRONG_PHASE, f -> {
            NativeRun run = f.prepare(0);
            f.refused(() -> f.chip.launch(new NativeRun(0, run.generation(), run.runEpoch() + 1, 1, 1)));
            f.chip.finalizeRun(run);
        }));
        m.add(of(a, "launch a forged token naming slot 5", StaleRunException.class, WRONG_PHASE, f -> {
            NativeRun run = f.prepare(0);
            f.refused(() -> f.chip.launch(new NativeRun(5, run.generation(), run.runEpoch(), 1, 1)));
            f.chip.finalizeRun(run);
        }));
        m.add(of(a, "finalize a forged token naming slot -1", StaleRunException.class, FINALIZED, f -> {
            NativeRun run = f.prepare(0);
            f.refused(() -> f.chip.finalizeRun(new NativeRun(-1, run.generation(), run.runEpoch(), 1, 1)));
            f.chip.finalizeRun(run);
        }));
        m.add(only(DEPTH2, a, "launch a token whose epoch is moved to the other slot", StaleRunException.class,
                WRONG_PHASE, f -> {
                    NativeRun run = f.prepare(0);
                    f.refused(() -> f.chip.launch(new NativeRun(1, run.generation(), run.runEpoch(), 1, 1)));
                    f.chip.finalizeRun(run);
                }));
        m.add(of(a, "launch an old token after its slot was reused under the same lease", StaleRunException.class,
                WRONG_PHASE, f -> {
                    PipelineSlotLease lease = f.lease(0);
                    NativeRun old = f.chip.prepare(CHAIN, MisuseFixture.args(), CallConfig.DEFAULT, lease, 1, 1, null);
                    f.chip.finalizeRun(old);
                    NativeRun now = f.chip.prepare(CHAIN, MisuseFixture.args(), CallConfig.DEFAULT, lease, 2, 2, null);
                    f.refused(() -> f.chip.launch(old));
                    f.chip.finalizeRun(now);
                }));
        m.add(of(a, "finalize an old token after its slot was reused", StaleRunException.class, FINALIZED, f -> {
            NativeRun old = f.prepare(0);
            f.chip.finalizeRun(old);
            NativeRun now = f.launched(0);
            f.refused(() -> f.chip.finalizeRun(old));
            f.chip.finalizeRun(now);
        }));
        m.add(of(a, "await an old token while the slot's new run executes", StaleRunException.class, WRONG_PHASE, f -> {
            NativeRun old = f.launched(0);
            f.chip.finalizeRun(old);
            NativeRun now = f.launched(0);
            f.refused(() -> f.chip.await(old));
            f.chip.finalizeRun(now);
        }));
        m.add(of(a, "launch a null token", NullPointerException.class, "run", f -> f.refused(() -> f.chip.launch(null))));
        m.add(of(a, "finalize a null token", NullPointerException.class, "run",
                f -> f.refused(() -> f.chip.finalizeRun(null))));
    }

    // ---- two threads on one run (gated just before the library) -------------------------------

    private static void race(List<Misuse> m, String name, String gatedFn, Class<? extends Throwable> type,
                             String fragment, boolean launchFirst, String firstCall, String secondCall) {
        m.add(of("races", name, type, fragment, f -> {
            NativeRun run = launchFirst ? f.launched(0) : f.prepare(0);
            MisuseFixture.Gate gate = f.gated.gate(gatedFn);
            TestThreads.Started first = TestThreads.start("first " + firstCall, () -> call(f, firstCall, run));
            gate.awaitEntered();
            f.refused(() -> call(f, secondCall, run));
            gate.open();
            first.join();
            if (!firstCall.equals("finalize")) {
                f.chip.finalizeRun(run);
            }
        }));
    }

    private static void call(MisuseFixture f, String what, NativeRun run) {
        switch (what) {
            case "launch" -> f.chip.launch(run);
            case "poll" -> f.chip.poll(run);
            case "await" -> f.chip.await(run);
            case "finalize" -> f.chip.finalizeRun(run);
            default -> throw new AssertionError(what);
        }
    }

    private static void races(List<Misuse> m) {
        race(m, "two finalizes of one launched run at once", "finalizeRun", StaleRunException.class, IN_PROGRESS,
                true, "finalize", "finalize");
        race(m, "two finalizes of one prepared run at once", "finalizeRun", StaleRunException.class, IN_PROGRESS,
                false, "finalize", "finalize");
        race(m, "poll while another thread awaits the run", "waitRun", StaleRunException.class, IN_PROGRESS,
                true, "await", "poll");
        race(m, "await while another thread awaits the run", "waitRun", StaleRunException.class, IN_PROGRESS,
                true, "await", "await");
        race(m, "finalize while another thread awaits the run", "waitRun", StaleRunException.class, IN_PROGRESS,
                true, "await", "finalize");
        race(m, "poll while another thread polls the run", "pollRun", StaleRunException.class, IN_PROGRESS,
                true, "poll", "poll");
        race(m, "finalize while another thread launches the run", "launchRun", StaleRunException.class, IN_PROGRESS,
                false, "launch", "finalize");
        race(m, "launch while another thread launches the run", "launchRun", StaleRunException.class, IN_PROGRESS,
                false, "launch", "launch");
        race(m, "poll while another thread finalizes the run", "finalizeRun", StaleRunException.class, IN_PROGRESS,
                true, "finalize", "poll");
        race(m, "launch while another thread finalizes the prepared run", "finalizeRun", StaleRunException.class,
                IN_PROGRESS, false, "finalize", "launch");
        m.add(of("races", "prepare into a slot whose prepare is inside the library", ChipBusyException.class,
                "slot already owns an unfinished native run", f -> {
                    MisuseFixture.Gate gate = f.gated.gate("prepareRun");
                    NativeRun[] run = new NativeRun[1];
                    TestThreads.Started first = TestThreads.start("preparing", () -> run[0] = f.prepare(0));
                    gate.awaitEntered();
                    f.refused(() -> f.prepare(0));
                    gate.open();
                    first.join();
                    f.chip.finalizeRun(run[0]);
                }));
    }

    // ---- registration while runs are outstanding ---------------------------------------------

    private static void registration(List<Misuse> m) {
        String a = "registration";
        m.add(of(a, "register while a run is prepared", ChipBusyException.class, "PTO_ERR_BUSY", f -> {
            NativeRun run = f.prepare(0);
            f.refused(() -> f.chip.registerCallable(5, MisuseFixture.chain()));
            f.chip.finalizeRun(run);
        }));
        m.add(of(a, "re-register the running callable's id while it executes", ChipBusyException.class, "PTO_ERR_BUSY",
                f -> {
                    NativeRun run = f.launched(0);
                    f.refused(() -> f.chip.registerCallable(CHAIN, MisuseFixture.chain()));
                    f.chip.finalizeRun(run);
                }));
        m.add(of(a, "unregister while a run is prepared", ChipBusyException.class, "PTO_ERR_BUSY", f -> {
            NativeRun run = f.prepare(0);
            f.refused(() -> f.chip.unregisterCallable(CHAIN));
            f.chip.finalizeRun(run);
        }));
        m.add(of(a, "register callable id 64", IllegalArgumentException.class, "callable id 64 is outside [0, 64)",
                f -> f.refused(() -> f.chip.registerCallable(64, MisuseFixture.chain()))));
        m.add(of(a, "register callable id -1", IllegalArgumentException.class, "callable id -1 is outside [0, 64)",
                f -> f.refused(() -> f.chip.registerCallable(-1, MisuseFixture.chain()))));
        m.add(of(a, "unregister callable id 64", IllegalArgumentException.class, "callable id 64 is outside [0, 64)",
                f -> f.refused(() -> f.chip.unregisterCallable(64))));
        m.add(of(a, "prepare callable id 64", IllegalArgumentException.class, "callable id 64 is outside [0, 64)",
                f -> f.refused(() -> f.chip.prepare(64, MisuseFixture.args(), CallConfig.DEFAULT, f.lease(0), 1, 1,
                        null))));
        m.add(of(a, "prepare an id that was never registered", NotRegisteredException.class, "PTO_ERR_NOT_REGISTERED",
                f -> f.refused(() -> f.chip.prepare(40, MisuseFixture.args(), CallConfig.DEFAULT, f.lease(0), 1, 1,
                        null))));
        m.add(of(a, "register a null callable", NullPointerException.class, "callable",
                f -> f.refused(() -> f.chip.registerCallable(5, null))));
        m.add(of(a, "register an unknown built-in kernel", BadCallableException.class, "no_such_kernel",
                f -> f.refused(() -> f.chip.registerCallable(5, ChipCallable.builder().signature(OUT)
                        .child(0, org.ptorun.callable.CoreType.AIV, Kernel.builtin("no_such_kernel"))
                        .program(Program.builder().submit(0, Param.tensor(0, OUT, 0, 8)).build()).build()))));
        m.add(of(a, "register raw bytes with a bad magic", BadCallableException.class, "PTO_ERR_BAD_CALLABLE", f -> {
            byte[] bytes = MisuseFixture.fill().bytes();
            bytes[0] ^= 0x5A;
            f.gated.rawRegistration().set(bytes);
            f.refused(() -> f.chip.registerCallable(5, MisuseFixture.fill()));
        }));
        m.add(of(a, "register raw bytes cut short of a header", BadCallableException.class, "PTO_ERR_BAD_CALLABLE", f -> {
            f.gated.rawRegistration().set(java.util.Arrays.copyOf(MisuseFixture.fill().bytes(), 12));
            f.refused(() -> f.chip.registerCallable(5, MisuseFixture.fill()));
        }));
    }

    // ---- leases ------------------------------------------------------------------------------

    private static void leases(List<Misuse> m) {
        String a = "leases";
        String outside = "lease is outside the runtime PipelineContract";
        m.add(of(a, "a lease with reserved != 0", IllegalArgumentException.class, outside,
                f -> f.refused(() -> f.chip.prepare(CHAIN, MisuseFixture.args(), CallConfig.DEFAULT,
                        new PipelineSlotLease(0, 1, f.lease(0).generation()), 1, 1, null))));
        m.add(of(a, "a lease of generation 0", IllegalArgumentException.class, outside,
                f -> f.refused(() -> f.chip.prepare(CHAIN, MisuseFixture.args(), CallConfig.DEFAULT,
                        PipelineSlotLease.of(0, 0), 1, 1, null))));
        m.add(of(a, "a lease of the slot past the pipeline depth", IllegalArgumentException.class, outside,
                f -> f.refused(() -> f.chip.prepare(CHAIN, MisuseFixture.args(), CallConfig.DEFAULT,
                        f.lease(f.depth()), 1, 1, null))));
        m.add(of(a, "a lease of slot -1", IllegalArgumentException.class, outside,
                f -> f.refused(() -> f.chip.prepare(CHAIN, MisuseFixture.args(), CallConfig.DEFAULT,
                        f.lease(-1), 1, 1, null))));
        m.add(of(a, "a stale lease generation on slot 0", LeaseRejectedException.class, "lease generation is stale",
                f -> f.refused(() -> f.chip.prepare(CHAIN, MisuseFixture.args(), CallConfig.DEFAULT,
                        PipelineSlotLease.of(0, f.newestGeneration(0) - 1), 1, 1, null))));
        m.add(only(DEPTH2, a, "a stale lease generation on slot 1", LeaseRejectedException.class,
                "lease generation is stale",
                f -> f.refused(() -> f.chip.prepare(CHAIN, MisuseFixture.args(), CallConfig.DEFAULT,
                        PipelineSlotLease.of(1, 1), 1, 1, null))));
        m.add(of(a, "a blocking run under a stale lease", LeaseRejectedException.class, "lease generation is stale",
                f -> f.refused(() -> f.chip.run(CHAIN, MisuseFixture.args(), CallConfig.DEFAULT,
                        PipelineSlotLease.of(0, 1), 1, 1, null))));
        m.add(of(a, "a blocking run under a lease outside the contract", IllegalArgumentException.class, outside,
                f -> f.refused(() -> f.chip.run(CHAIN, MisuseFixture.args(), CallConfig.DEFAULT,
                        PipelineSlotLease.of(7, 1), 1, 1, null))));
        m.add(of(a, "a null lease", NullPointerException.class, "lease",
                f -> f.refused(() -> f.chip.prepare(CHAIN, MisuseFixture.args(), CallConfig.DEFAULT, null, 1, 1,
                        null))));
    }

    // ---- device memory -----------------------------------------------------------------------

    private static void memory(List<Misuse> m) {
        String a = "device memory";
        m.add(of(a, "malloc 0 bytes", IllegalArgumentException.class, "the size must be > 0",
                f -> f.refused(() -> f.chip.malloc(0))));
        m.add(of(a, "malloc -1 bytes", IllegalArgumentException.class, "the size must be > 0",
                f -> f.refused(() -> f.chip.malloc(-1))));
        m.add(of(a, "malloc 2^50 bytes, more than the device has", DeviceOutOfMemoryException.class,
                "PTO_ERR_OUT_OF_MEMORY", f -> f.refused(() -> f.chip.malloc(1L << 50))));
        m.add(only(SIM, a, "malloc past PTORUN_SIM_DEVICE_MEMORY=1M", DeviceOutOfMemoryException.class,
                "memory exhausted", f -> {
                    org.ptorun.internal.ProcessEnvironment.set("PTORUN_SIM_DEVICE_MEMORY", "1M");
                    MisuseFixture.GatedChip small;
                    try {
                        small = f.fresh(2);
                    } finally {
                        org.ptorun.internal.ProcessEnvironment.unset("PTORUN_SIM_DEVICE_MEMORY");
                    }
                    long before = small.chip().committedDeviceMemory();
                    f.refused(() -> small.chip().malloc(2L << 20));
                    assertThat(small.chip().committedDeviceMemory()).isEqualTo(before);
                }));
        m.add(of(a, "copyTo past the buffer's end", IllegalArgumentException.class, "do not fit", f -> {
            DeviceBuffer buf = f.track(f.chip.malloc(64));
            f.refused(() -> f.chip.copyTo(buf, 61, ByteBuffer.allocate(4)));
        }));
        m.add(of(a, "copyTo at a negative offset", IllegalArgumentException.class, "do not fit", f -> {
            DeviceBuffer buf = f.track(f.chip.malloc(64));
            f.refused(() -> f.chip.copyTo(buf, -4, ByteBuffer.allocate(4)));
        }));
        m.add(of(a, "copyTo at offset Long.MAX_VALUE (overflow)", IllegalArgumentException.class, "do not fit", f -> {
            DeviceBuffer buf = f.track(f.chip.malloc(64));
            f.refused(() -> f.chip.copyTo(buf, Long.MAX_VALUE, ByteBuffer.allocate(4)));
        }));
        m.add(of(a, "copyTo an array larger than the buffer", IllegalArgumentException.class, "do not fit", f -> {
            DeviceBuffer buf = f.track(f.chip.malloc(64));
            f.refused(() -> f.chip.copyTo(buf, new float[17]));
        }));
        m.add(of(a, "copyFrom past the buffer's end", IllegalArgumentException.class, "do not fit", f -> {
            DeviceBuffer buf = f.track(f.chip.malloc(64));
            f.refused(() -> f.chip.copyFrom(buf, 32, ByteBuffer.allocate(33)));
        }));
        m.add(of(a, "copyFrom at a negative offset", IllegalArgumentException.class, "do not fit", f -> {
            DeviceBuffer buf = f.track(f.chip.malloc(64));
            f.refused(() -> f.chip.copyFrom(buf, -1, ByteBuffer.allocate(4)));
        }));
        m.add(of(a, "copyFrom into an array larger than the buffer", IllegalArgumentException.class, "do not fit", f -> {
            DeviceBuffer buf = f.track(f.chip.malloc(64));
            f.refused(() -> f.chip.copyFrom(buf, new long[9]));
        }));
        m.add(of(a, "copyFrom into a read-only ByteBuffer", IllegalArgumentException.class, "read-only", f -> {
            DeviceBuffer buf = f.track(f.chip.malloc(64));
            f.refused(() -> f.chip.copyFrom(buf, ByteBuffer.allocate(8).asReadOnlyBuffer()));
        }));
        m.add(of(a, "copyTo a freed buffer", IllegalStateException.class, "is closed", f -> {
            DeviceBuffer buf = f.chip.malloc(64);
            buf.close();
            f.refused(() -> f.chip.copyTo(buf, new float[4]));
        }));
        m.add(of(a, "copyFrom a freed buffer", IllegalStateException.class, "is closed", f -> {
            DeviceBuffer buf = f.chip.malloc(64);
            f.chip.free(buf);
            f.refused(() -> f.chip.copyFrom(buf, new float[4]));
        }));
        m.add(of(a, "copyTo a buffer of another ChipWorker", IllegalArgumentException.class,
                "belongs to another ChipWorker", f -> {
                    DeviceBuffer theirs = f.track(f.other.malloc(64));
                    f.refused(() -> f.chip.copyTo(theirs, new float[4]));
                }));
        m.add(of(a, "free (chip.free) a buffer of another ChipWorker", IllegalArgumentException.class,
                "belongs to another ChipWorker", f -> {
                    DeviceBuffer theirs = f.track(f.other.malloc(64));
                    f.refused(() -> f.chip.free(theirs));
                    f.other.copyTo(theirs, new float[4]); // still theirs, still live
                }));
        m.add(of(a, "prepare with a freed buffer as a tensor", IllegalStateException.class, "is closed", f -> {
            DeviceBuffer buf = f.chip.malloc(4L * N);
            buf.close();
            f.refused(() -> f.chip.prepare(CHAIN, bufferArgs(Tensor.of(buf, DType.F32)), CallConfig.DEFAULT,
                    f.lease(0), 1, 1, null));
        }));
        m.add(of(a, "prepare with a buffer of another ChipWorker as a tensor", IllegalArgumentException.class,
                "belongs to another ChipWorker", f -> {
                    DeviceBuffer theirs = f.track(f.other.malloc(4L * N));
                    f.refused(() -> f.chip.prepare(CHAIN, bufferArgs(Tensor.of(theirs, DType.F32)),
                            CallConfig.DEFAULT, f.lease(0), 1, 1, null));
                }));
        m.add(of(a, "close a buffer a prepared run uses", IllegalStateException.class, "not yet finalized", f -> {
            DeviceBuffer buf = f.chip.malloc(4L * N);
            NativeRun run = f.chip.prepare(CHAIN, bufferArgs(Tensor.of(buf, DType.F32)), CallConfig.DEFAULT,
                    f.lease(0), 1, 1, null);
            f.refused(buf::close);
            f.chip.finalizeRun(run);
            buf.close();
        }));
        m.add(of(a, "free (chip.free) a buffer a launched run uses", IllegalStateException.class, "not yet finalized", f -> {
            DeviceBuffer buf = f.chip.malloc(4L * N);
            NativeRun run = f.chip.prepare(CHAIN, bufferArgs(Tensor.of(buf, DType.F32)), CallConfig.DEFAULT,
                    f.lease(0), 1, 1, null);
            f.chip.launch(run);
            f.refused(() -> f.chip.free(buf));
            f.chip.finalizeRun(run);
            f.chip.free(buf);
        }));
    }

    /** The chain's arguments with {@code a} replaced by {@code first}. */
    private static TaskArgs bufferArgs(Tensor first) {
        TaskArgs args = new TaskArgs().tensor(first);
        for (int i = 1; i < 7; i++) {
            args.tensor(Tensor.of(new float[N]));
        }
        return args;
    }

    // ---- arguments and configs at prepare ------------------------------------------------------

    private static void arguments(List<Misuse> m) {
        String a = "arguments";
        m.add(of(a, "prepare with null args", NullPointerException.class, "args",
                f -> f.refused(() -> f.chip.prepare(CHAIN, null, CallConfig.DEFAULT, f.lease(0), 1, 1, null))));
        m.add(of(a, "prepare with a null config", NullPointerException.class, "config",
                f -> f.refused(() -> f.chip.prepare(CHAIN, MisuseFixture.args(), null, f.lease(0), 1, 1, null))));
        m.add(of(a, "run with fewer tensors than the signature", BadCallableException.class, "PTO_ERR_BAD_CALLABLE",
                f -> f.refused(() -> f.chip.run(CHAIN, TaskArgs.of(Tensor.of(new float[N])), CallConfig.DEFAULT,
                        f.lease(0), 1, 1, null))));
        m.add(of(a, "run with zero tensors for the chain", BadCallableException.class, "PTO_ERR_BAD_CALLABLE",
                f -> f.refused(() -> f.chip.run(CHAIN, new TaskArgs(), CallConfig.DEFAULT, f.lease(0), 1, 1, null))));
        m.add(of(a, "run with a tensor too small for the program's view", IllegalArgumentException.class,
                "tensor argument 0 (IN) holds " + 2 * N + " bytes, but the callable's program needs " + 4 * N, f -> {
                    TaskArgs args = ChipWorkerE2ETest.chainArgs(new float[N / 2], new float[N], new float[N]);
                    f.refused(() -> f.chip.run(CHAIN, args, CallConfig.DEFAULT, f.lease(0), 1, 1, null));
                }));
        m.add(of(a, "run with an extra scalar the signature does not have", BadCallableException.class,
                "PTO_ERR_BAD_CALLABLE", f -> f.refused(() -> f.chip.run(CHAIN, MisuseFixture.args().scalar(7),
                        CallConfig.DEFAULT, f.lease(0), 1, 1, null))));
        m.add(of(a, "capture one acceptance word in two runs", IllegalArgumentException.class, "captured by an unfinalized run", f -> {
            try (AcceptanceWord word = AcceptanceWord.allocate()) {
                NativeRun run = f.chip.prepare(CHAIN, MisuseFixture.args(), CallConfig.DEFAULT, f.lease(0), 1, 1, word);
                f.refused(() -> f.other.prepare(CHAIN, MisuseFixture.args(), CallConfig.DEFAULT, f.lease(0), 1, 1,
                        word));
                f.chip.finalizeRun(run);
            }
        }));
        m.add(of(a, "reset an acceptance word a prepared run captured", IllegalStateException.class, "captured", f -> {
            try (AcceptanceWord word = AcceptanceWord.allocate()) {
                NativeRun run = f.chip.prepare(CHAIN, MisuseFixture.args(), CallConfig.DEFAULT, f.lease(0), 1, 1, word);
                f.refused(word::reset);
                f.chip.finalizeRun(run);
            }
        }));
        m.add(of(a, "close an acceptance word a launched run captured", IllegalStateException.class, "captured", f -> {
            try (AcceptanceWord word = AcceptanceWord.allocate()) {
                NativeRun run = f.chip.prepare(CHAIN, MisuseFixture.args(), CallConfig.DEFAULT, f.lease(0), 1, 1, word);
                f.chip.launch(run);
                f.refused(word::close);
                f.chip.finalizeRun(run);
            }
        }));
        m.add(of(a, "prepare with a closed acceptance word", IllegalStateException.class, "closed", f -> {
            AcceptanceWord word = AcceptanceWord.allocate();
            word.close();
            f.refused(() -> f.chip.prepare(CHAIN, MisuseFixture.args(), CallConfig.DEFAULT, f.lease(0), 1, 1, word));
        }));
        m.add(only(A2A3, a, "prepare with 5 AICPU threads on a2a3 (max 4)", IllegalArgumentException.class,
                "aicpu_thread_num 5", f -> f.refused(() -> f.chip.prepare(CHAIN, MisuseFixture.args(),
                        CallConfig.builder().aicpuThreadNum(5).build(), f.lease(0), 1, 1, null))));
        m.add(only(A2A3, a, "prepare with block dim 30 on a2a3 (max 24)", IllegalArgumentException.class,
                "block_dim 30", f -> f.refused(() -> f.chip.prepare(CHAIN, MisuseFixture.args(),
                        CallConfig.builder().blockDim(30).build(), f.lease(0), 1, 1, null))));
    }

    // ---- absurd programs -----------------------------------------------------------------------

    private static void programs(List<Misuse> m) {
        String a = "absurd programs";
        m.add(only(HBG, a, "a loop of 2^30 tasks (hbg holds at most 4194304 per run)", CapacityExceededException.class,
                "PTO_ERR_CAPACITY (-13)", f -> {
                    f.chip.registerCallable(6, ChipCallable.builder().signature(OUT).child(0, Kernel.noop())
                            .program(Program.builder().loop(1L << 30, (p, i) -> p.submit(0)).build()).build());
                    f.refused(() -> f.chip.run(6, TaskArgs.of(Tensor.of(new float[2])), CallConfig.DEFAULT,
                            f.lease(0), 1, 1, null));
                    f.chip.unregisterCallable(6);
                }));
        m.add(only(HBG, a, "a local tensor of 2^50 bytes (hbg: the bank's heap)", DeviceOutOfMemoryException.class,
                "PTO_ERR_OUT_OF_MEMORY (-8)", f -> hugeLocal(f)));
        m.add(only(v -> !HBG.test(v), a, "a local tensor of 2^50 bytes (trb: the ring heap)", CapacityExceededException.class,
                "can never fit ring 0's heap", f -> hugeLocal(f)));
        m.add(of(a, "a view too small for its kernel (vadd of 8 floats into 64)", KernelFaultException.class,
                "func_id 7", f -> {
                    f.chip.registerCallable(6, ChipWorkerE2ETest.faultyVadd(N));
                    float[] out = SimE2E.filled(N);
                    f.refused(() -> f.chip.run(6, TaskArgs.of(Tensor.of(new float[N]), Tensor.of(new float[N]),
                            Tensor.of(out)), CallConfig.DEFAULT, f.lease(0), 1, 1, null));
                    assertThat(out).containsOnly(MisuseFixture.SENTINEL);
                    f.chip.unregisterCallable(6);
                }));
    }

    private static void hugeLocal(MisuseFixture f) {
        f.chip.registerCallable(6, ChipCallable.builder().signature(OUT).child(0, Kernel.vfill())
                .program(Program.builder().allocTensor(0, 1L << 50)
                        .submit(0, Param.local(0, OUT, 0, 8), Param.scalarF32(1f)).build()).build());
        f.refused(() -> f.chip.run(6, TaskArgs.of(Tensor.of(new float[2])), CallConfig.DEFAULT, f.lease(0), 1, 1,
                null));
        f.chip.unregisterCallable(6);
    }

    /** An epoch no ChipWorker ever minted (the process-wide counter starts at 1 and counts up). */
    static final class RunEpochsProbe {
        static long unused() {
            return Long.MAX_VALUE - 1;
        }
    }
}

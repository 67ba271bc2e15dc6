package org.ptorun;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.ptorun.callable.ChipCallable;
import org.ptorun.callable.Direction;
import org.ptorun.worker.RunTicket;
import org.ptorun.worker.Worker;

/**
 * Nothing is freed under a user (docs/reliability.md, Lifetimes), on all eight libraries:
 * a buffer a prepared run or a queued Worker run refers to cannot be freed, the refusal
 * naming the run; a group whose window a run uses cannot be closed; after a group closed,
 * every handle of it — the ranks, window buffers taken before, the Worker's collective
 * steps — refuses every use at once, naming the group.
 */
class CommLifetimesE2ETest {

    private static final int COPY = 3;
    private static final int N = 64;

    static List<Variant> variants() {
        return SimE2E.allVariants();
    }

    /** vcopy(IN x, OUT y) over N floats. */
    private static ChipCallable copy() {
        return CommCollectivesE2ETest.single("vcopy", List.of(Direction.IN, Direction.OUT), 0,
                new long[] {4L * N, 4L * N});
    }

    @ParameterizedTest
    @MethodSource("variants")
    void aBufferAPreparedRunUsesIsNotFreedAndTheRefusalNamesTheRun(Variant variant) {
        HostRuntime runtime = HostRuntime.load(variant);
        try (ChipWorker chip = ChipWorker.open(runtime, 0)) {
            chip.registerCallable(COPY, copy());
            DeviceBuffer x = chip.malloc(4L * N);
            DeviceBuffer y = chip.malloc(4L * N);
            float[] data = SimE2E.random(N, 7);
            chip.copyTo(x, data);
            NativeRun run = chip.prepare(COPY, TaskArgs.of(Tensor.of(x, DType.F32), Tensor.of(y, DType.F32)),
                    CallConfig.DEFAULT, PipelineSlotLease.of(0, 1), 41, 41, null);

            assertThatThrownBy(x::close).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("run_id=41").hasMessageContaining("not yet finalized");
            assertThatThrownBy(() -> chip.free(y)).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("run_id=41");
            assertThat(x.isClosed()).isFalse();

            chip.launch(run);
            chip.finalizeRun(run);
            float[] out = new float[N];
            chip.copyFrom(y, out);
            SimE2E.assertBitExact(out, data);
            long committed = chip.committedDeviceMemory();
            x.close();
            y.close();
            assertThat(chip.committedDeviceMemory()).as("both buffers freed").isEqualTo(committed - 8L * N);
            assertThat(x.isClosed()).isTrue();
            assertThatThrownBy(() -> chip.copyTo(x, data)).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("is closed");
        }
    }

    @ParameterizedTest
    @MethodSource("variants")
    void aBufferAQueuedWorkerRunUsesIsNotFreedUntilTheRunIsFinalized(Variant variant, @TempDir Path dir)
            throws Exception {
        try (Worker worker = Worker.builder().variant(variant).devices(0).queueCapacity(4).build();
                CommGroup one = worker.openCommGroup(dir.resolve("rootinfo"), Duration.ofSeconds(30))) {
            worker.register(COPY, copy()).get(60, TimeUnit.SECONDS);
            ChipWorker chip = one.rank(0).chip(); // the Worker's chip
            DeviceBuffer x = chip.malloc(4L * N);
            DeviceBuffer y = chip.malloc(4L * N);
            float[] data = SimE2E.random(N, 8);
            chip.copyTo(x, data);
            // caller-driven and not polled: the run stays queued
            RunTicket ticket = worker.enqueue(COPY, TaskArgs.of(Tensor.of(x, DType.F32), Tensor.of(y, DType.F32)),
                    CallConfig.DEFAULT);
            assertThatThrownBy(y::close).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("run_id=" + ticket.runId()).hasMessageContaining("not yet finalized");

            worker.drain();
            ticket.result().get(60, TimeUnit.SECONDS);
            float[] out = new float[N];
            chip.copyFrom(y, out);
            SimE2E.assertBitExact(out, data);
            y.close();
            x.close();
            // a closed buffer is refused at enqueue, nothing admitted
            assertThatThrownBy(() -> worker.enqueue(COPY, TaskArgs.of(Tensor.of(x, DType.F32),
                    Tensor.of(y, DType.F32)), CallConfig.DEFAULT)).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("is closed");
            org.ptorun.worker.DrainReport after = worker.drain();
            assertThat(after.succeeded() + after.failed()).as("nothing was admitted").isZero();
        }
    }

    @ParameterizedTest
    @MethodSource("variants")
    void aGroupWhoseWindowARunUsesIsNotClosedAndAClosedGroupRefusesEveryUse(Variant variant, @TempDir Path dir)
            throws Exception {
        try (Worker worker = Worker.builder().variant(variant).devices(0, 1).queueCapacity(8).build()) {
            worker.register(COPY, copy()).get(60, TimeUnit.SECONDS);
            CommGroup group = worker.openCommGroup(dir.resolve("rootinfo"), Duration.ofSeconds(30));
            group.allocWindows(4096);
            CommRank rank0 = group.rank(0);
            ChipWorker chip0 = rank0.chip();
            DeviceBuffer window = rank0.window();
            DeviceBuffer slice = rank0.windowSlice(4L * N, 4L * N);
            DeviceBuffer source = chip0.malloc(4L * N);
            float[] data = SimE2E.random(N, 9);
            chip0.copyTo(source, data);

            RunTicket queued = worker.enqueue(COPY, TaskArgs.of(Tensor.of(source, DType.F32),
                    Tensor.of(slice, DType.F32)), CallConfig.DEFAULT);
            CommException busy = catchThrowableOfType(group::close, CommException.class);
            assertThat(busy).isNotNull();
            assertThat(busy.code()).isEqualTo(PtoError.BUSY.code());
            assertThat(busy.getMessage()).contains("run_id=" + queued.runId()).contains(group.toString());
            assertThat(group.isClosed()).isFalse();
            assertThat(window.isClosed()).isFalse();

            worker.drain();
            queued.result().get(60, TimeUnit.SECONDS);
            float[] out = new float[N];
            chip0.copyFrom(slice, out);
            SimE2E.assertBitExact(out, data);

            group.close();
            assertThat(group.isClosed()).isTrue();
            String closed = group + " is closed";
            assertThat(window.isClosed()).isTrue();
            assertThat(slice.isClosed()).isTrue();
            assertThatThrownBy(() -> chip0.copyTo(window, data)).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining(group.toString()).hasMessageContaining("which is closed");
            assertThatThrownBy(() -> chip0.copyFrom(slice, out)).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining(group.toString());
            for (CommRank r : group.ranks()) {
                assertThatThrownBy(r::deviceContext).isInstanceOf(IllegalStateException.class)
                        .hasMessageContaining(closed);
                assertThatThrownBy(() -> r.windowSlice(0, 16)).isInstanceOf(IllegalStateException.class)
                        .hasMessageContaining(closed);
                assertThatThrownBy(r::window).isInstanceOf(IllegalStateException.class).hasMessageContaining(closed);
                assertThatThrownBy(r::windowSize).isInstanceOf(IllegalStateException.class)
                        .hasMessageContaining(closed);
                assertThatThrownBy(() -> r.peerTensor(1 - r.rank(), 0, DType.F32, 4))
                        .isInstanceOf(IllegalStateException.class).hasMessageContaining(closed);
                assertThatThrownBy(r::barrier).isInstanceOf(IllegalStateException.class)
                        .hasMessageContaining(closed);
            }
            assertThatThrownBy(group::barrier).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining(closed);
            assertThatThrownBy(() -> worker.enqueueCollective(group, COPY, r -> new TaskArgs(), CallConfig.DEFAULT))
                    .isInstanceOf(IllegalStateException.class).hasMessageContaining(closed);
            // a run over a window buffer taken before the close is refused at enqueue, naming the group
            assertThatThrownBy(() -> worker.enqueue(COPY, TaskArgs.of(Tensor.of(source, DType.F32),
                    Tensor.of(slice, DType.F32)), CallConfig.DEFAULT)).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining(group.toString());
            group.close(); // idempotent
            source.close();
            org.ptorun.worker.DrainReport after = worker.drain();
            assertThat(after.succeeded() + after.failed()).as("nothing was admitted").isZero();
        }
    }

    @ParameterizedTest
    @MethodSource("variants")
    void domainWindowsARunUsesAreNotReleasedAndReleasedOnesRefuseEveryUse(Variant variant, @TempDir Path dir) {
        List<ChipWorker> chips = CommCollectivesE2ETest.openChips(variant, 2);
        CommGroup group = null;
        try {
            group = CommGroup.open(chips, dir.resolve("rootinfo"), Duration.ofSeconds(30));
            group.allocWindows(4096);
            int[] both = {0, 1};
            List<CommDomain> domains = group.allocDomainWindows(5, both, 4L * N);
            CommRank rank0 = group.rank(0);
            ChipWorker chip0 = rank0.chip();
            chip0.registerCallable(COPY, copy());
            CommDomain domain0 = domains.get(0);
            DeviceBuffer window = domain0.window();
            DeviceBuffer source = chip0.malloc(4L * N);
            float[] data = SimE2E.random(N, 10);
            chip0.copyTo(source, data);
            NativeRun run = chip0.prepare(COPY, TaskArgs.of(Tensor.of(source, DType.F32), Tensor.of(window, DType.F32)),
                    CallConfig.DEFAULT, PipelineSlotLease.of(0, 1), 43, 43, null);

            CommException busy = catchThrowableOfType(() -> rank0.releaseDomainWindows(domain0), CommException.class);
            assertThat(busy).isNotNull();
            assertThat(busy.code()).isEqualTo(PtoError.BUSY.code());
            assertThat(busy.getMessage()).contains("run_id=43").contains("domain 5 of " + group);
            assertThatThrownBy(group::close).as("the group's close sees the domain's run too")
                    .isInstanceOf(CommException.class).hasMessageContaining("run_id=43");
            assertThat(window.isClosed()).isFalse();

            chip0.launch(run);
            chip0.finalizeRun(run);
            float[] out = new float[N];
            chip0.copyFrom(window, out);
            SimE2E.assertBitExact(out, data);

            rank0.releaseDomainWindows(domain0);
            group.rank(1).releaseDomainWindows(domains.get(1));
            assertThat(window.isClosed()).isTrue();
            assertThat(domain0.windows()).allSatisfy(w -> assertThat(w.isClosed()).isTrue());
            assertThatThrownBy(() -> chip0.copyTo(window, data)).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("domain 5 of " + group).hasMessageContaining("released");
            assertThatThrownBy(() -> chip0.prepare(COPY, TaskArgs.of(Tensor.of(source, DType.F32),
                    Tensor.of(window, DType.F32)), CallConfig.DEFAULT, PipelineSlotLease.of(0, 1), 44, 44, null))
                    .isInstanceOf(IllegalStateException.class).hasMessageContaining("released");
            // the group's own windows are untouched
            chip0.copyTo(rank0.window(), data);
            source.close();
        } finally {
            CommCollectivesE2ETest.closeAll(group, chips);
        }
    }
}

package org.ptorun;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.ptorun.PipelineContract.RawResource;
import org.ptorun.PipelineContract.ResourceClass;
import org.ptorun.PipelineContract.ResourceKind;

/** Contract admission: every rule of the ABI refuses a crafted bad contract with its reason. */
class PipelineContractTest {

    private static final RawResource HEAP_PER_RUN = new RawResource(1, 0, 0);
    private static final RawResource SM_PER_RUN = new RawResource(2, 0, 0);
    private static final RawResource IMAGE_SCRATCH = new RawResource(3, 1, 0);
    private static final RawResource AICPU_STREAM = new RawResource(5, 2, 0);

    private static List<RawResource> padded(RawResource... entries) {
        List<RawResource> list = new ArrayList<>(List.of(entries));
        while (list.size() < 8) {
            list.add(new RawResource(0, 0, 0));
        }
        return list;
    }

    @Test
    void admitsAWellFormedContract() {
        PipelineContract c = PipelineContract.admit(1, 3, 2, padded(HEAP_PER_RUN, SM_PER_RUN, AICPU_STREAM));
        assertThat(c.pipelineDepth()).isEqualTo(2);
        assertThat(c.resources()).extracting(PipelineContract.Resource::kind)
                .containsExactly(ResourceKind.GM_HEAP, ResourceKind.GM_SM, ResourceKind.AICPU_STREAM);
        assertThat(c.copyCount(ResourceClass.HOST_PER_RUN)).isEqualTo(2);
        assertThat(c.copyCount(ResourceClass.DEVICE_SCRATCH)).isEqualTo(1);
        assertThat(c.bankOfSlot(0)).isZero();
        assertThat(c.bankOfSlot(1)).isEqualTo(1);
        assertThat(c.find(ResourceKind.TASK_ARGS)).isEmpty();
        assertThatThrownBy(() -> c.bankOfSlot(2)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void bankIsZeroWhenTheFirstArenaKindIsDeviceScratchOrNoneIsDeclared() {
        assertThat(PipelineContract.admit(1, 2, 2, padded(AICPU_STREAM, IMAGE_SCRATCH)).bankOfSlot(1)).isZero();
        assertThat(PipelineContract.admit(1, 1, 2, padded(AICPU_STREAM)).bankOfSlot(1)).isZero();
        assertThat(PipelineContract.admit(1, 0, 1, padded()).bankOfSlot(0)).isZero();
    }

    @Test
    void refusesVersion2() {
        assertRefused(2, 0, 1, padded(), "abi_version is 2");
    }

    @Test
    void refusesCount9() {
        assertRefused(1, 9, 1, padded(), "resource_count 9 exceeds 8");
    }

    @Test
    void refusesDepth0And3() {
        assertRefused(1, 0, 0, padded(), "pipeline_depth 0 is outside [1, 2]");
        assertRefused(1, 0, 3, padded(), "pipeline_depth 3 is outside [1, 2]");
    }

    @Test
    void refusesKind0AnOverstatedCount() {
        assertRefused(1, 2, 2, padded(HEAP_PER_RUN), "resources[1] kind 0 is outside 1..6");
        assertRefused(1, 1, 2, padded(new RawResource(7, 0, 0)), "resources[0] kind 7 is outside 1..6");
    }

    @Test
    void refusesClass3() {
        assertRefused(1, 1, 2, padded(new RawResource(1, 3, 0)), "resources[0] class 3 is outside 0..2");
    }

    @Test
    void refusesNonZeroBytes() {
        assertRefused(1, 1, 2, padded(new RawResource(1, 0, 4096)), "resources[0] bytes_per_copy is 4096");
    }

    @Test
    void refusesArenaKindsWithDifferentCopyCounts() {
        assertRefused(1, 2, 2, padded(HEAP_PER_RUN, IMAGE_SCRATCH), "arena kinds have different copy counts");
    }

    @Test
    void refusesARepeatedArenaKind() {
        assertRefused(1, 2, 2, padded(HEAP_PER_RUN, HEAP_PER_RUN), "arena kind GM_HEAP appears more than once");
    }

    @Test
    void aRepeatedNonArenaKindIsLegal() {
        assertThat(PipelineContract.admit(1, 2, 2, padded(AICPU_STREAM, AICPU_STREAM)).resources()).hasSize(2);
    }

    @Test
    void depth1MakesEveryCopyCountOne() {
        PipelineContract c = PipelineContract.admit(1, 2, 1, padded(HEAP_PER_RUN, IMAGE_SCRATCH));
        assertThat(c.copyCount(ResourceClass.HOST_PER_RUN)).isEqualTo(1);
    }

    private static void assertRefused(int version, int count, int depth, List<RawResource> raw, String reason) {
        assertThatThrownBy(() -> PipelineContract.admit(version, count, depth, raw))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("pipeline contract refused: ")
                .hasMessageContaining(reason);
    }
}

package org.ptorun;

import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import org.ptorun.internal.NativeConstants;

/**
 * A library's pipeline contract: how many runs may be in flight at once
 * ({@link #pipelineDepth()}) and which per-run resources each slot uses. Immutable;
 * only admitted contracts exist (see {@link #admit}).
 */
public record PipelineContract(int abiVersion, int pipelineDepth, List<Resource> resources) {

    /** The only contract ABI version. */
    public static final int ABI_VERSION = NativeConstants.PTO_PIPELINE_CONTRACT_ABI_VERSION;
    /** At most two runs in flight per chip. */
    public static final int MAX_DEPTH = NativeConstants.PTO_PIPELINE_MAX_DEPTH;
    /** At most eight declared resources. */
    public static final int MAX_RESOURCES = NativeConstants.PTO_PIPELINE_MAX_RESOURCES;

    /** What a resource is. Native values 1..6; 0 is never valid. */
    public enum ResourceKind {
        GM_HEAP(1), GM_SM(2), RUNTIME_IMAGE(3), TASK_ARGS(4), AICPU_STREAM(5), AICORE_STREAM(6);

        private final int nativeValue;

        ResourceKind(int nativeValue) {
            this.nativeValue = nativeValue;
        }

        public int nativeValue() {
            return nativeValue;
        }

        /** The arena kinds are committed together into one bank. */
        public boolean isArena() {
            return this == GM_HEAP || this == GM_SM || this == RUNTIME_IMAGE;
        }

        static Optional<ResourceKind> fromNative(int value) {
            for (ResourceKind k : values()) {
                if (k.nativeValue == value) {
                    return Optional.of(k);
                }
            }
            return Optional.empty();
        }
    }

    /** How a resource is replicated across slots. Native values 0..2. */
    public enum ResourceClass {
        /** Carries the run's own content: one copy per slot. */
        HOST_PER_RUN,
        /** Populated once and reused: one copy. */
        DEVICE_SCRATCH,
        /** Owned while the run executes: one copy per slot. */
        EXEC_HANDLE;

        public int nativeValue() {
            return ordinal();
        }
    }

    /** One declared resource. */
    public record Resource(ResourceKind kind, ResourceClass resourceClass) {
        public Resource {
            Objects.requireNonNull(kind, "kind");
            Objects.requireNonNull(resourceClass, "resourceClass");
        }
    }

    /** One resource exactly as the native struct holds it, before admission. */
    public record RawResource(int kind, int resourceClass, long bytesPerCopy) {}

    public PipelineContract {
        resources = List.copyOf(resources);
    }

    /**
     * Admits a contract read from a library, applying every rule of the ABI:
     * version 1, count ≤ 8, depth in [1,2], each kind in 1..6, each class in 0..2,
     * bytes per copy 0, and the arena kinds (GM_HEAP, GM_SM, RUNTIME_IMAGE) each at
     * most once with one shared copy count.
     *
     * @throws IllegalArgumentException naming the rule that failed
     */
    public static PipelineContract admit(int abiVersion, int resourceCount, int pipelineDepth,
                                         List<RawResource> raw) {
        if (abiVersion != ABI_VERSION) {
            throw refused("abi_version is " + abiVersion + ", expected " + ABI_VERSION);
        }
        if (Integer.compareUnsigned(resourceCount, MAX_RESOURCES) > 0) {
            throw refused("resource_count " + Integer.toUnsignedString(resourceCount)
                    + " exceeds " + MAX_RESOURCES);
        }
        if (pipelineDepth < 1 || pipelineDepth > MAX_DEPTH) {
            throw refused("pipeline_depth " + Integer.toUnsignedString(pipelineDepth)
                    + " is outside [1, " + MAX_DEPTH + "]");
        }
        if (raw.size() < resourceCount) {
            throw refused("resource_count " + resourceCount + " but only " + raw.size() + " entries");
        }
        List<Resource> resources = new ArrayList<>(resourceCount);
        for (int i = 0; i < resourceCount; i++) {
            RawResource r = raw.get(i);
            int index = i;
            ResourceKind kind = ResourceKind.fromNative(r.kind()).orElseThrow(() -> refused(
                    "resources[" + index + "] kind " + Integer.toUnsignedString(r.kind())
                            + " is outside 1..6"));
            if (r.resourceClass() < 0 || r.resourceClass() >= ResourceClass.values().length) {
                throw refused("resources[" + index + "] class "
                        + Integer.toUnsignedString(r.resourceClass()) + " is outside 0..2");
            }
            if (r.bytesPerCopy() != 0) {
                throw refused("resources[" + index + "] bytes_per_copy is "
                        + Long.toUnsignedString(r.bytesPerCopy()) + ", must be 0");
            }
            resources.add(new Resource(kind, ResourceClass.values()[r.resourceClass()]));
        }
        checkArenaTopology(resources, pipelineDepth);
        return new PipelineContract(abiVersion, pipelineDepth, resources);
    }

    private static void checkArenaTopology(List<Resource> resources, int depth) {
        Set<ResourceKind> seen = EnumSet.noneOf(ResourceKind.class);
        int arenaCopies = -1;
        for (Resource r : resources) {
            if (!r.kind().isArena()) {
                continue;
            }
            if (!seen.add(r.kind())) {
                throw refused("arena kind " + r.kind() + " appears more than once");
            }
            int copies = copyCount(r.resourceClass(), depth);
            if (arenaCopies >= 0 && copies != arenaCopies) {
                throw refused("arena kinds have different copy counts (" + arenaCopies + " and "
                        + copies + "); they are committed together into one bank");
            }
            arenaCopies = copies;
        }
    }

    private static IllegalArgumentException refused(String rule) {
        return new IllegalArgumentException("pipeline contract refused: " + rule);
    }

    private static int copyCount(ResourceClass resourceClass, int depth) {
        return resourceClass == ResourceClass.DEVICE_SCRATCH ? 1 : depth;
    }

    /** The copy count of a resource of the given class: 1 for DEVICE_SCRATCH, else the depth. */
    public int copyCount(ResourceClass resourceClass) {
        return copyCount(resourceClass, pipelineDepth);
    }

    /** The first declared resource of a kind. */
    public Optional<Resource> find(ResourceKind kind) {
        return resources.stream().filter(r -> r.kind() == kind).findFirst();
    }

    /**
     * The arena bank a run in {@code slot} uses: 0 when the first arena kind is
     * DEVICE_SCRATCH or no arena kind is declared, else the slot itself.
     */
    public int bankOfSlot(int slot) {
        if (slot < 0 || slot >= pipelineDepth) {
            throw new IllegalArgumentException("slot " + slot + " is outside [0, " + pipelineDepth + ")");
        }
        for (Resource r : resources) {
            if (r.kind().isArena()) {
                return r.resourceClass() == ResourceClass.DEVICE_SCRATCH ? 0 : slot;
            }
        }
        return 0;
    }

    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder("depth=").append(pipelineDepth).append(" [");
        for (int i = 0; i < resources.size(); i++) {
            Resource r = resources.get(i);
            if (i > 0) {
                sb.append(", ");
            }
            sb.append(r.kind()).append(':').append(r.resourceClass())
                    .append('x').append(copyCount(r.resourceClass()));
        }
        return sb.append(']').toString();
    }
}

package org.ptorun.internal;

/**
 * Sizes and field offsets of every structure crossing the C boundary, mirroring
 * include/ptorun/pto_runtime_c_api.h. Off-heap code reads and writes by these offsets
 * (no JNA Structure); LayoutsTest checks each constant against the C compiler.
 * Nested class and constant names are the C struct and field names. The capacities and
 * tags are the header's constants ({@link NativeConstants}, generated), never copies.
 */
public final class Layouts {

    private Layouts() {
    }

    /** {@code PTO_NATIVE_RUN_STORAGE_MAGIC}: the tag of a storage holding a prepared run. */
    public static final long PTO_NATIVE_RUN_STORAGE_MAGIC = NativeConstants.PTO_NATIVE_RUN_STORAGE_MAGIC;

    /** {@code PTO_NATIVE_RUN_REPORT_OFFSET}: where a run storage holds its {@link NativeRunReport}. */
    public static final int PTO_NATIVE_RUN_REPORT_OFFSET = NativeConstants.PTO_NATIVE_RUN_REPORT_OFFSET;

    /** The smallest run storage the contract admits: the tag, then the report. */
    public static final long MIN_RUN_STORAGE = PTO_NATIVE_RUN_REPORT_OFFSET + NativeRunReport.SIZE;

    public static final class NativeRunDescriptor {
        public static final int SIZE = 56;
        public static final int ALIGN = 8;
        public static final int PIPELINE_SLOT = 0;
        public static final int ARENA_BANK = 4;
        public static final int RUN_ID = 8;
        public static final int GENERATION = 16;
        public static final int DISPATCH_ID = 24;
        public static final int RUN_EPOCH = 32;
        public static final int ACCEPTED_STATE = 40;
        public static final int ACCEPTED_VALUE = 48;

        private NativeRunDescriptor() {
        }
    }

    /** What the library reports of a run, in its storage; read after finalize returned. */
    public static final class NativeRunReport {
        public static final int SIZE = 2224;
        public static final int ALIGN = 8;
        public static final int EXECUTION_END_NS = 0;
        public static final int PEAK_DEVICE_MEMORY = 8;
        public static final int OUTPUT_FILE_COUNT = 16;
        public static final int GRAPH_SOURCE = 20;
        public static final int OUTPUT_FILES = 24;
        public static final int ORCHESTRATION_NS = 2200;
        /** The device context whose launch of the run returned PTO_OK, until finalize begins; else 0. */
        public static final int LAUNCHED_CTX = 2208;
        /** 1 once a poll would answer COMPLETE, until the next prepare; else 0. */
        public static final int DEVICE_ENDED = 2216;
        /** Entries of output_files. */
        public static final int MAX_FILES = NativeConstants.PTO_RUN_REPORT_MAX_FILES;
        /** Bytes of one entry of output_files, including its NUL. */
        public static final int PATH_BYTES = NativeConstants.PTO_RUN_REPORT_PATH_BYTES;

        private NativeRunReport() {
        }
    }

    public static final class PipelineResource {
        public static final int SIZE = 16;
        public static final int ALIGN = 8;
        public static final int KIND = 0;
        public static final int RESOURCE_CLASS = 4;
        public static final int BYTES_PER_COPY = 8;

        private PipelineResource() {
        }
    }

    public static final class PipelineContract {
        public static final int SIZE = 144;
        public static final int ALIGN = 8;
        public static final int ABI_VERSION = 0;
        public static final int RESOURCE_COUNT = 4;
        public static final int PIPELINE_DEPTH = 8;
        public static final int RESOURCES = 16;

        private PipelineContract() {
        }
    }

    public static final class PipelineSlotLease {
        public static final int SIZE = 16;
        public static final int ALIGN = 8;
        public static final int SLOT_ID = 0;
        public static final int RESERVED = 4;
        public static final int GENERATION = 8;

        private PipelineSlotLease() {
        }
    }

    public static final class CallConfig {
        public static final int SIZE = 1144;
        public static final int ALIGN = 1;
        public static final int AICPU_THREAD_NUM = 0;
        public static final int BLOCK_DIM = 4;
        public static final int ENABLE_TRACE = 8;
        public static final int ENABLE_DUMP_ARGS = 12;
        public static final int ENABLE_DEP_GRAPH = 16;
        public static final int TIMEOUT_MS = 20;
        public static final int RING_TASK_WINDOW = 24;
        public static final int RING_HEAP = 56;
        public static final int RING_DEP_POOL = 88;
        public static final int OUTPUT_PREFIX = 120;
        /** Entries per ring array. */
        public static final int RING_COUNT = NativeConstants.PTO_TRB_RING_COUNT;
        /** Bytes of output_prefix, including its NUL. */
        public static final int OUTPUT_PREFIX_BYTES = NativeConstants.PTO_OUTPUT_PREFIX_BYTES;

        private CallConfig() {
        }
    }

    public static final class ChipTensor {
        public static final int SIZE = 128;
        public static final int ALIGN = 64;
        public static final int ADDR = 0;
        public static final int SIZE_FIELD = 8;
        public static final int OWNER_TASK_ID = 16;
        public static final int START_OFFSET = 24;
        public static final int VERSION = 32;
        public static final int NDIMS = 36;
        public static final int DTYPE = 40;
        public static final int MANUAL_DEP = 41;
        public static final int IS_CONTIGUOUS = 42;
        public static final int CHILD_MEMORY = 43;
        public static final int SHAPES = 44;
        public static final int STRIDES = 72;
        /** Maximum dimensions (entries of shapes and strides). */
        public static final int MAX_DIMS = NativeConstants.PTO_MAX_TENSOR_DIMS;

        private ChipTensor() {
        }
    }

    /** The device-side descriptor of a communication domain (include/ptorun/pto_comm.h). */
    public static final class PtoCommDeviceContext {
        public static final int SIZE = 288;
        public static final int ALIGN = 8;
        public static final int MAGIC = 0;
        public static final int RANK = 4;
        public static final int NRANKS = 8;
        public static final int TIMEOUT_MS = 12;
        public static final int WINDOW_SIZE = 16;
        public static final int WINDOWS = 24;
        public static final int SIGNALS = 152;
        /** A domain across hosts: the device address of its PtoCommSpan, else 0. */
        public static final int SPAN = 280;

        private PtoCommDeviceContext() {
        }
    }

    public static final class ChipStorageTaskArgs {
        public static final int SIZE = 33856;
        public static final int ALIGN = 64;
        public static final int TENSORS = 0;
        public static final int SCALARS = 32768;
        public static final int TENSOR_COUNT = 33792;
        public static final int SCALAR_COUNT = 33796;
        /** Capacity of tensors[]. */
        public static final int MAX_TENSORS = NativeConstants.PTO_MAX_TENSOR_ARGS;
        /** Capacity of scalars[]. */
        public static final int MAX_SCALARS = NativeConstants.PTO_MAX_SCALAR_ARGS;

        private ChipStorageTaskArgs() {
        }
    }
}

package org.ptorun;

import java.util.Objects;
import java.util.Optional;

/**
 * A native operation failed, or a run was refused. Carries the native code and its C
 * name, the native message ({@code simpler_last_error}, empty for refusals made on the
 * Java side) and, for anything about a run, the run's identity, which the message ends
 * with: {@code (run_id=… slot=… generation=… dispatch_id=… run_epoch=…)}.
 *
 * <p>The hierarchy is sealed: one subclass per native code with a meaning of its own
 * (docs/java.md, Errors, has the table; the mapping is {@link NativeErrors#fromNative}),
 * plus {@link LeaseRejectedException} (a Java-side refusal) and
 * {@link LibraryLoadException}. {@code PTO_ERR_FAILED} and codes outside the contract
 * are this class itself.
 */
public sealed class PtoRunException extends RuntimeException
        permits UnsupportedVariantException, InvalidNativeArgumentException, StaleRunException, ChipBusyException,
        NotRegisteredException, DeviceOutOfMemoryException, DeviceErrorException, KernelFaultException,
        RunTimeoutException, BadCallableException, CapacityExceededException, OrchestrationException,
        ChipPoisonedException, LeaseRejectedException, LibraryLoadException, CommException,
        CollectiveMismatchException, OverlapNotNowException, ChipCrashedException {

    private static final long serialVersionUID = 1L;

    private final int code;
    private final String nativeMessage;
    private final transient NativeRun run;

    /**
     * @param description what failed, without the identity (appended here)
     * @param code the native code (a Java-side refusal uses the code the library would give)
     * @param nativeMessage the library's message; "" when none
     * @param run the run concerned, or null
     */
    public PtoRunException(String description, int code, String nativeMessage, NativeRun run) {
        this(description, code, nativeMessage, run, null);
    }

    PtoRunException(String description, int code, String nativeMessage, NativeRun run, Throwable cause) {
        super(run == null ? description : description + " " + run.identity(), cause);
        this.code = code;
        this.nativeMessage = Objects.requireNonNullElse(nativeMessage, "");
        this.run = run;
    }

    /** The native status code. */
    public int code() {
        return code;
    }

    /** The status as an enum; empty for a code outside the contract. */
    public Optional<PtoError> error() {
        return PtoError.lookup(code);
    }

    /** The C name of the code, e.g. {@code PTO_ERR_KERNEL_FAULT}. */
    public String codeName() {
        return PtoError.nameOf(code);
    }

    /** The library's message for the failure; "" for refusals made in Java. */
    public String nativeMessage() {
        return nativeMessage;
    }

    /** The run concerned, if any. */
    public Optional<NativeRun> run() {
        return Optional.ofNullable(run);
    }
}

package org.ptorun;

import java.util.Optional;
import org.ptorun.internal.NativeConstants;

/**
 * Every status code of the host-runtime C contract (abi.md): 0 success, negative
 * failure, each negative value naming one kind of failure. The values are the public
 * header's ({@code NativeConstants}, generated from it); a test checks that every
 * {@code PTO_ERR_*} the header defines has its constant here.
 */
public enum PtoError {
    OK(NativeConstants.PTO_OK, "PTO_OK"),
    FAILED(NativeConstants.PTO_ERR_FAILED, "PTO_ERR_FAILED"),
    UNSUPPORTED(NativeConstants.PTO_RUNTIME_ERR_UNSUPPORTED, "PTO_RUNTIME_ERR_UNSUPPORTED"),
    INVALID_ARGUMENT(NativeConstants.PTO_ERR_INVALID_ARGUMENT, "PTO_ERR_INVALID_ARGUMENT"),
    BAD_STORAGE(NativeConstants.PTO_ERR_BAD_STORAGE, "PTO_ERR_BAD_STORAGE"),
    WRONG_PHASE(NativeConstants.PTO_ERR_WRONG_PHASE, "PTO_ERR_WRONG_PHASE"),
    BUSY(NativeConstants.PTO_ERR_BUSY, "PTO_ERR_BUSY"),
    NOT_REGISTERED(NativeConstants.PTO_ERR_NOT_REGISTERED, "PTO_ERR_NOT_REGISTERED"),
    OUT_OF_MEMORY(NativeConstants.PTO_ERR_OUT_OF_MEMORY, "PTO_ERR_OUT_OF_MEMORY"),
    DEVICE(NativeConstants.PTO_ERR_DEVICE, "PTO_ERR_DEVICE"),
    KERNEL_FAULT(NativeConstants.PTO_ERR_KERNEL_FAULT, "PTO_ERR_KERNEL_FAULT"),
    TIMEOUT(NativeConstants.PTO_ERR_TIMEOUT, "PTO_ERR_TIMEOUT"),
    BAD_CALLABLE(NativeConstants.PTO_ERR_BAD_CALLABLE, "PTO_ERR_BAD_CALLABLE"),
    CAPACITY(NativeConstants.PTO_ERR_CAPACITY, "PTO_ERR_CAPACITY"),
    ORCHESTRATION(NativeConstants.PTO_ERR_ORCHESTRATION, "PTO_ERR_ORCHESTRATION"),
    POISONED(NativeConstants.PTO_ERR_POISONED, "PTO_ERR_POISONED"),
    RANKS_DISAGREE(NativeConstants.PTO_ERR_RANKS_DISAGREE, "PTO_ERR_RANKS_DISAGREE"),
    OVERLAP_NOT_NOW(NativeConstants.PTO_ERR_OVERLAP_NOT_NOW, "PTO_ERR_OVERLAP_NOT_NOW"),
    CHIP_CRASHED(NativeConstants.PTO_ERR_CHIP_CRASHED, "PTO_ERR_CHIP_CRASHED");

    /** By negated code; the codes are 0, -1, -2, … without a gap (checked at class init). */
    private static final PtoError[] BY_NEGATED_CODE = byNegatedCode();

    private final int code;
    private final String cName;

    PtoError(int code, String cName) {
        this.code = code;
        this.cName = cName;
    }

    /** The native value. */
    public int code() {
        return code;
    }

    /** The C macro name, e.g. {@code PTO_ERR_BUSY}. */
    public String cName() {
        return cName;
    }

    /**
     * The error of a native code.
     *
     * @throws IllegalArgumentException for a code the contract does not define
     */
    public static PtoError fromCode(int code) {
        return lookup(code).orElseThrow(() -> new IllegalArgumentException("native code " + code
                + " is not a ptorun status code (0 to " + (1 - BY_NEGATED_CODE.length) + ")"));
    }

    /** The error of a native code, or empty for a code the contract does not define. */
    public static Optional<PtoError> lookup(int code) {
        return code <= 0 && -code < BY_NEGATED_CODE.length
                ? Optional.of(BY_NEGATED_CODE[-code])
                : Optional.empty();
    }

    private static PtoError[] byNegatedCode() {
        PtoError[] all = values();
        PtoError[] table = new PtoError[all.length];
        for (PtoError e : all) {
            if (e.code > 0 || -e.code >= table.length || table[-e.code] != null) {
                throw new IllegalStateException("status codes are not 0, -1, ..., -" + (all.length - 1) + ": " + e);
            }
            table[-e.code] = e;
        }
        return table;
    }

    /** The C name of a code, or {@code "unknown code N"}. */
    static String nameOf(int code) {
        return lookup(code).map(PtoError::cName).orElse("unknown code " + code);
    }
}

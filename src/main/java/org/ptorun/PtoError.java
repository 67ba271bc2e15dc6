package org.ptorun;

import java.util.Optional;

/**
 * Every status code of the host-runtime C contract (abi.md): 0 success, negative
 * failure, each negative value naming one kind of failure.
 */
public enum PtoError {
    OK(0, "PTO_OK"),
    FAILED(-1, "PTO_ERR_FAILED"),
    UNSUPPORTED(-2, "PTO_RUNTIME_ERR_UNSUPPORTED"),
    INVALID_ARGUMENT(-3, "PTO_ERR_INVALID_ARGUMENT"),
    BAD_STORAGE(-4, "PTO_ERR_BAD_STORAGE"),
    WRONG_PHASE(-5, "PTO_ERR_WRONG_PHASE"),
    BUSY(-6, "PTO_ERR_BUSY"),
    NOT_REGISTERED(-7, "PTO_ERR_NOT_REGISTERED"),
    OUT_OF_MEMORY(-8, "PTO_ERR_OUT_OF_MEMORY"),
    DEVICE(-9, "PTO_ERR_DEVICE"),
    KERNEL_FAULT(-10, "PTO_ERR_KERNEL_FAULT"),
    TIMEOUT(-11, "PTO_ERR_TIMEOUT"),
    BAD_CALLABLE(-12, "PTO_ERR_BAD_CALLABLE"),
    CAPACITY(-13, "PTO_ERR_CAPACITY"),
    ORCHESTRATION(-14, "PTO_ERR_ORCHESTRATION"),
    POISONED(-15, "PTO_ERR_POISONED"),
    RANKS_DISAGREE(-16, "PTO_ERR_RANKS_DISAGREE");

    private static final PtoError[] BY_NEGATED_CODE = values();

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
        return lookup(code).orElseThrow(() -> new IllegalArgumentException(
                "native code " + code + " is not a ptorun status code (0 to -16)"));
    }

    /** The error of a native code, or empty for a code the contract does not define. */
    public static Optional<PtoError> lookup(int code) {
        // values() is declared in code order 0, -1, ..., -16
        return code <= 0 && -code < BY_NEGATED_CODE.length
                ? Optional.of(BY_NEGATED_CODE[-code])
                : Optional.empty();
    }

    /** The C name of a code, or {@code "unknown code N"}. */
    static String nameOf(int code) {
        return lookup(code).map(PtoError::cName).orElse("unknown code " + code);
    }
}

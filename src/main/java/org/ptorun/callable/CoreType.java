package org.ptorun.callable;

/** The kind of core a kernel runs on: the C {@code PtoCoreType}. */
public enum CoreType {
    /** Cube core (matrix). */
    AIC(0),
    /** Vector core. */
    AIV(1);

    private final int code;

    CoreType(int code) {
        this.code = code;
    }

    /** The native value. */
    public int code() {
        return code;
    }
}

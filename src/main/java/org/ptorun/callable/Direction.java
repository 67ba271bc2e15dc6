package org.ptorun.callable;

/** Direction of a parameter: the C {@code PtoArgDirection}. */
public enum Direction {
    /** A 64-bit scalar, not a tensor. */
    SCALAR(0),
    /** A tensor the run reads: staged host to device, never copied back. */
    IN(1),
    /** A tensor the run writes: not staged, copied back after success. */
    OUT(2),
    /** A tensor the run reads and writes: staged and copied back. */
    INOUT(3);

    private final int code;

    Direction(int code) {
        this.code = code;
    }

    /** The native value. */
    public int code() {
        return code;
    }

    /** True for IN and INOUT. */
    public boolean reads() {
        return this == IN || this == INOUT;
    }

    /** True for OUT and INOUT. */
    public boolean writes() {
        return this == OUT || this == INOUT;
    }

    /** True for every tensor direction. */
    public boolean isTensor() {
        return this != SCALAR;
    }
}

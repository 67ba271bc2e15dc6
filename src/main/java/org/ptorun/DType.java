package org.ptorun;

/** Element type of a tensor: the {@code ChipTensor.dtype} codes of the C contract. */
public enum DType {
    F32(0, 4),
    F16(1, 2),
    BF16(2, 2),
    I32(3, 4),
    I64(4, 8),
    U8(5, 1),
    I8(6, 1),
    I16(7, 2),
    U32(8, 4),
    U64(9, 8);

    private static final DType[] BY_CODE = values();

    private final int code;
    private final int byteSize;

    DType(int code, int byteSize) {
        this.code = code;
        this.byteSize = byteSize;
    }

    /** The native {@code PtoDataType} value. */
    public int code() {
        return code;
    }

    /** Bytes of one element. */
    public int byteSize() {
        return byteSize;
    }

    /**
     * The type of a native code.
     *
     * @throws IllegalArgumentException for a code outside 0..9
     */
    public static DType fromCode(int code) {
        if (code < 0 || code >= BY_CODE.length) {
            throw new IllegalArgumentException("dtype code " + code + " is outside 0.." + (BY_CODE.length - 1));
        }
        return BY_CODE[code];
    }
}

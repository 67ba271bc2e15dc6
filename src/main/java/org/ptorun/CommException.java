package org.ptorun;

import java.util.OptionalInt;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A communication group call failed: {@code PTO_ERR_TIMEOUT} (a rank did not arrive within
 * the group's timeout), {@code PTO_ERR_DEVICE} (a peer is gone: its process exited, it left
 * or its device was lost, and the group is broken), or a refusal (bad argument, wrong
 * phase, out of memory). {@link #failedRank()} is the rank the native message names,
 * when it names one. Never poisons the chip: a lost peer is the group's failure.
 */
public final class CommException extends PtoRunException {

    private static final long serialVersionUID = 1L;
    private static final Pattern RANK = Pattern.compile("\\brank (\\d+)\\b");

    private final int rank;
    private final int failedRank;

    CommException(String operation, int rank, int code, String nativeMessage) {
        super("comm rank " + rank + ": " + operation + " failed: " + PtoError.nameOf(code) + " (" + code + ")"
                + (nativeMessage == null || nativeMessage.isEmpty() ? "" : ": " + nativeMessage), code, nativeMessage,
                null);
        this.rank = rank;
        Matcher m = RANK.matcher(nativeMessage == null ? "" : nativeMessage);
        this.failedRank = m.find() ? Integer.parseInt(m.group(1)) : -1;
    }

    /** The rank whose call failed. */
    public int rank() {
        return rank;
    }

    /** The rank the failure is about (the one that did not arrive, or is gone), when the message names one. */
    public OptionalInt failedRank() {
        return failedRank < 0 ? OptionalInt.empty() : OptionalInt.of(failedRank);
    }
}

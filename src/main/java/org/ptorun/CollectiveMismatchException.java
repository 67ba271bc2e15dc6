package org.ptorun;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The ranks of a collective kernel disagreed on what to do (PTO_ERR_RANKS_DISAGREE): the
 * collective, its element count, dtype, the data's offset in the window, the root or the
 * window's size (docs/kernels.md, Collectives). No data moved, the domain stays usable,
 * and every rank of the collective fails with the same native text, e.g. {@code
 * allreduce_sum: the ranks disagree on the element count: rank 1 has 1000, the others
 * 1001 (rank 0 1001, rank 1 1000, rank 2 1001)}.
 *
 * <p>A run's outcome, so it is a run failure like {@link KernelFaultException}; a window
 * allocation whose ranks asked for different sizes is a {@link CommException} with the same
 * code.
 */
public final class CollectiveMismatchException extends PtoRunException {

    private static final long serialVersionUID = 1L;
    private static final Pattern SUBJECT = Pattern.compile("the ranks disagree on the ([^:]+):");
    private static final Pattern ODD = Pattern.compile("\\brank (\\d+) has\\b");

    private final String subject;
    private final List<Integer> ranks;

    public CollectiveMismatchException(String description, int code, String nativeMessage, NativeRun run) {
        super(description, code, nativeMessage, run);
        String text = nativeMessage == null ? "" : nativeMessage;
        Matcher s = SUBJECT.matcher(text);
        this.subject = s.find() ? s.group(1) : null;
        List<Integer> odd = new ArrayList<>();
        Matcher m = ODD.matcher(text);
        while (m.find()) {
            odd.add(Integer.parseInt(m.group(1)));
        }
        this.ranks = List.copyOf(odd);
    }

    /**
     * The ranks whose value differs from the majority's (ties go to the lowest rank's value),
     * in rank order; empty when the native message does not name them.
     */
    public List<Integer> ranks() {
        return ranks;
    }

    /** What the ranks disagree on, e.g. {@code "element count"}, {@code "root"}, {@code "dtype"}. */
    public Optional<String> subject() {
        return Optional.ofNullable(subject);
    }
}

package org.ptorun.capture;

import java.nio.file.Path;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * What a replay found ({@link RunReplay}): whether it matched its reference — the capture,
 * or the run on another variant — and how.
 *
 * @param variant the variant the replay ran on
 * @param reference what it was compared with: "the capture", or a variant's name
 * @param expectedFailure the reference's failure; empty when the reference succeeded
 * @param failure the replay's failure; empty when it succeeded
 * @param outputsCompared true when outputs were compared (both succeeded and the reference has outputs)
 * @param differences per differing tensor, its first differing element (empty: equal or not compared)
 * @param outputFiles the diagnostic files the replay wrote (e.g. its trace)
 */
public record ReplayResult(org.ptorun.Variant variant, String reference, Optional<RunCapture.Failure> expectedFailure,
                           Optional<RunCapture.Failure> failure, boolean outputsCompared, List<Difference> differences,
                           List<Path> outputFiles) {

    public ReplayResult {
        Objects.requireNonNull(variant, "variant");
        Objects.requireNonNull(reference, "reference");
        Objects.requireNonNull(expectedFailure, "expectedFailure");
        Objects.requireNonNull(failure, "failure");
        differences = List.copyOf(differences);
        outputFiles = List.copyOf(outputFiles);
    }

    /**
     * The first element of one tensor that differs.
     *
     * @param tensor the tensor's index among the run's tensor arguments
     * @param element the element's index in the tensor's data (byte offset / element size)
     * @param differing how many elements of the tensor differ
     * @param expected the reference's element, formatted (floats with their bits: {@code 1.0 (0x3f800000)})
     * @param actual the replay's element, formatted the same way
     */
    public record Difference(int tensor, long element, long differing, String expected, String actual) {
        @Override
        public String toString() {
            return "tensor " + tensor + " element " + element + ": expected " + expected + " got " + actual
                    + (differing > 1 ? " (" + differing + " elements differ)" : "");
        }
    }

    /** The reference failed and the replay failed the same way (exception class and code). */
    public boolean reproducedFailure() {
        return expectedFailure.isPresent() && expectedFailure.get().sameAs(failure.orElse(null));
    }

    /**
     * True when the replay matches its reference: the same failure, or both succeeded with
     * equal outputs (or without outputs to compare).
     */
    public boolean matches() {
        if (expectedFailure.isPresent()) {
            return reproducedFailure();
        }
        return failure.isEmpty() && differences.isEmpty();
    }

    /**
     * One line: {@code reproduced: KernelFaultException ...}, {@code not reproduced: the run
     * succeeded}, {@code outputs equal to the capture}, {@code outputs differ: tensor 2 element 17:
     * expected 1.0 (0x3f800000) got ...}, ...
     */
    public String verdict() {
        if (expectedFailure.isPresent()) {
            RunCapture.Failure want = expectedFailure.get();
            if (reproducedFailure()) {
                return "reproduced: " + failure.get().simpleName() + " " + failure.get().message();
            }
            if (failure.isEmpty()) {
                return "not reproduced: the run succeeded (" + reference + " failed with " + want.simpleName() + ")";
            }
            return "not reproduced: the run failed with " + failure.get().simpleName() + " (code "
                    + failure.get().code() + ") " + failure.get().message() + "; " + reference + " failed with "
                    + want.simpleName() + " (code " + want.code() + ")";
        }
        if (failure.isPresent()) {
            return "failed: " + failure.get().simpleName() + " " + failure.get().message() + " (" + reference
                    + " succeeded)";
        }
        if (!outputsCompared) {
            return "ran: the run succeeded; " + reference + " holds no outputs to compare";
        }
        if (differences.isEmpty()) {
            return "outputs equal to " + reference;
        }
        StringBuilder sb = new StringBuilder("outputs differ")
                .append(reference.equals(RunReplay.THE_CAPTURE) ? "" : " from " + reference).append(": ")
                .append(differences.get(0));
        if (differences.size() > 1) {
            sb.append("; ").append(differences.size() - 1).append(" more tensor")
                    .append(differences.size() > 2 ? "s" : "").append(" differ");
        }
        return sb.toString();
    }
}

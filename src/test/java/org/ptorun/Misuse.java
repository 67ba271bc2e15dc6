package org.ptorun;

import java.util.function.Predicate;

/**
 * One misuse of the matrix ({@link MisuseMatrixE2ETest}): what a caller gets wrong, the
 * exact exception it must get and a fragment of its message. The body sets the scene on
 * a {@link MisuseFixture} and makes the wrong call through {@link MisuseFixture#refused}
 * exactly once; it cleans up what it prepared so the chip can run the golden chain next.
 */
record Misuse(String area, String name, Class<? extends Throwable> type, String fragment,
              Predicate<Variant> appliesTo, Body body) {

    /** The scene and the one wrong call. */
    @FunctionalInterface
    interface Body {
        void run(MisuseFixture f) throws Throwable;
    }

    static Misuse of(String area, String name, Class<? extends Throwable> type, String fragment, Body body) {
        return new Misuse(area, name, type, fragment, v -> true, body);
    }

    static Misuse only(Predicate<Variant> appliesTo, String area, String name, Class<? extends Throwable> type,
                       String fragment, Body body) {
        return new Misuse(area, name, type, fragment, appliesTo, body);
    }

    @Override
    public String toString() {
        return area + ": " + name + " → " + type.getSimpleName();
    }
}

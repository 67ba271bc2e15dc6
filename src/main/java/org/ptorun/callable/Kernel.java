package org.ptorun.callable;

import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import org.ptorun.internal.CallableLayouts;

/**
 * The code a callable's child runs: a built-in kernel of the AICore image, named. For
 * the built-ins this library knows, the kernel also carries its parameter list (one
 * {@link Direction} per task parameter: IN / OUT tensor views and SCALARs) and its core
 * type, and {@link ChipCallable.Builder#build()} checks every SUBMIT against them.
 *
 * <p>f32 built-ins ({@code n} = bytes of the output view / 4):
 * <ul>
 *   <li>{@code noop()} — no parameters</li>
 *   <li>{@code vcopy(IN x, OUT y)} — copies bytes(y) bytes</li>
 *   <li>{@code vfill(OUT y, SCALAR v)} — y[i] = v</li>
 *   <li>{@code vadd(IN a, IN b, OUT c)}, {@code vmul(IN a, IN b, OUT c)}</li>
 *   <li>{@code vadds(IN a, OUT c, SCALAR s)}, {@code vmuls(IN a, OUT c, SCALAR s)}</li>
 * </ul>
 * Scalars of f32 kernels are f32 bits in the low 32 bits ({@link Param#scalarF32}).
 */
public final class Kernel {

    private static final List<Direction> NONE = List.of();
    private static final List<Direction> UNARY = List.of(Direction.IN, Direction.OUT);
    private static final List<Direction> FILL = List.of(Direction.OUT, Direction.SCALAR);
    private static final List<Direction> BINARY = List.of(Direction.IN, Direction.IN, Direction.OUT);
    private static final List<Direction> WITH_SCALAR = List.of(Direction.IN, Direction.OUT, Direction.SCALAR);

    /** The built-ins whose parameters this library knows (all AIV). */
    private static final Map<String, List<Direction>> KNOWN = Map.of(
            "noop", NONE,
            "vcopy", UNARY,
            "vfill", FILL,
            "vadd", BINARY,
            "vmul", BINARY,
            "vadds", WITH_SCALAR,
            "vmuls", WITH_SCALAR);

    private final String name;
    private final List<Direction> parameters;
    private final CoreType coreType;

    private Kernel(String name, List<Direction> parameters, CoreType coreType) {
        this.name = name;
        this.parameters = parameters;
        this.coreType = coreType;
    }

    /**
     * A built-in kernel by name. A name this library does not know is accepted (the AICore
     * image decides at registration) without parameter or core-type checks.
     *
     * @throws IllegalArgumentException unless the name is 1..128 printable ASCII characters without spaces
     */
    public static Kernel builtin(String name) {
        Objects.requireNonNull(name, "name");
        boolean printable = !name.isEmpty() && name.length() <= CallableLayouts.PTO_CALLABLE_MAX_NAME;
        for (int i = 0; printable && i < name.length(); i++) {
            char c = name.charAt(i);
            printable = c > 0x20 && c < 0x7f;
        }
        if (!printable) {
            throw new IllegalArgumentException("kernel name '" + name + "' must be 1.."
                    + CallableLayouts.PTO_CALLABLE_MAX_NAME + " printable ASCII characters without spaces");
        }
        List<Direction> known = KNOWN.get(name);
        return new Kernel(name, known, known == null ? null : CoreType.AIV);
    }

    /** {@code noop()}: does nothing. */
    public static Kernel noop() {
        return builtin("noop");
    }

    /** {@code vcopy(IN x, OUT y)}: copies bytes(y) bytes of x into y. */
    public static Kernel vcopy() {
        return builtin("vcopy");
    }

    /** {@code vfill(OUT y, SCALAR v)}: every f32 of y becomes v. */
    public static Kernel vfill() {
        return builtin("vfill");
    }

    /** {@code vadd(IN a, IN b, OUT c)}: c = a + b over bytes(c)/4 f32. */
    public static Kernel vadd() {
        return builtin("vadd");
    }

    /** {@code vmul(IN a, IN b, OUT c)}: c = a * b over bytes(c)/4 f32. */
    public static Kernel vmul() {
        return builtin("vmul");
    }

    /** {@code vadds(IN a, OUT c, SCALAR s)}: c = a + s over bytes(c)/4 f32. */
    public static Kernel vadds() {
        return builtin("vadds");
    }

    /** {@code vmuls(IN a, OUT c, SCALAR s)}: c = a * s over bytes(c)/4 f32. */
    public static Kernel vmuls() {
        return builtin("vmuls");
    }

    public String name() {
        return name;
    }

    /** Always true for now; kernel libraries come later. */
    public boolean isBuiltin() {
        return true;
    }

    /** The kernel's parameter directions in task order, when known. */
    public Optional<List<Direction>> parameters() {
        return Optional.ofNullable(parameters);
    }

    /** The core type the kernel runs on, when known. */
    public Optional<CoreType> coreType() {
        return Optional.ofNullable(coreType);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Kernel && ((Kernel) o).name.equals(name);
    }

    @Override
    public int hashCode() {
        return name.hashCode();
    }

    @Override
    public String toString() {
        return "Kernel[builtin " + name + (parameters == null ? "" : parameters) + "]";
    }
}

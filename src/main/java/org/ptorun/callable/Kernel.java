package org.ptorun.callable;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import org.ptorun.internal.CallableLayouts;

/**
 * The code a callable's child runs: a built-in kernel of the AICore image, named, or a
 * user kernel from a kernel library (a host-compiled shared object with the
 * {@code PtoKernelFn} signature of {@code include/ptorun/pto_kernel.h}) and its entry
 * symbol. For the built-ins the kernel also carries its parameter list (one
 * {@link Direction} per task parameter: IN / OUT / INOUT tensor views and SCALARs) and
 * its core type, and {@link ChipCallable.Builder#build()} checks every SUBMIT against
 * them; a library kernel may declare both with {@link #withSignature}.
 *
 * <p>Built-ins (f32; {@code n} = bytes of the output view / 4; docs/kernels.md):
 * <ul>
 *   <li>{@code noop()} — no parameters</li>
 *   <li>{@code vcopy(IN x, OUT y)} — copies bytes(y) bytes</li>
 *   <li>{@code vfill(OUT y, SCALAR v)} — y[i] = v</li>
 *   <li>{@code vadd, vsub, vmul, vdiv, vmax (IN a, IN b, OUT c)} — elementwise</li>
 *   <li>{@code vadds, vmuls (IN a, OUT c, SCALAR s)} — c = a + s, c = a * s</li>
 *   <li>{@code vexp, vrelu (IN a, OUT c)} — c = (float) exp((double) a), c = max(a, 0)</li>
 *   <li>{@code reduce_sum(IN a, OUT c)} — c[0] = a[0] + a[1] + … left to right</li>
 *   <li>{@code reduce_max(IN a, OUT c)} — c[0] = the maximum of a, as {@code Math.max}</li>
 *   <li>{@code softmax_rows(IN a, OUT c, SCALAR cols)} — each row of {@code cols} floats</li>
 *   <li>{@code gemm_tile(IN A, IN B, INOUT C, SCALAR M, SCALAR K, SCALAR N)} — AIC:
 *       C[M×N] += A[M×K]·B[K×N], row-major</li>
 *   <li>{@code tile_add(IN a, INOUT c)} — c = c + a</li>
 *   <li>{@code allreduce_sum(INOUT x, SCALAR comm)}, {@code allgather(IN x, OUT y, SCALAR comm)},
 *       {@code reduce_scatter(IN x, OUT y, SCALAR comm)}, {@code broadcast(INOUT x, SCALAR comm,
 *       SCALAR root)} — collectives over a communication domain</li>
 * </ul>
 * Scalars of f32 kernels are f32 bits in the low 32 bits ({@link Param#scalarF32});
 * counts (cols, M, K, N) are plain integers ({@link Param#scalar(long)}).
 *
 * <p>On strided tensor views (docs/kernels.md, "Strided views") some built-ins take
 * another parameter list, their second form ({@link #parameterForms()}):
 * {@code reduce_sum, reduce_max(IN a, OUT c, SCALAR dim)}, {@code softmax_rows(IN a, OUT c)}
 * and {@code gemm_tile(IN A, IN B, INOUT C)}; the AICore image refuses a form given the
 * other kind of views.
 */
public final class Kernel {

    private static final Direction IN = Direction.IN;
    private static final Direction OUT = Direction.OUT;
    private static final Direction INOUT = Direction.INOUT;
    private static final Direction SCALAR = Direction.SCALAR;

    /** A built-in's parameter lists (the flat-view form first) and core type. */
    private record Builtin(List<List<Direction>> forms, CoreType coreType) {
        /** A built-in with one form. */
        static Builtin single(List<Direction> parameters, CoreType coreType) {
            return new Builtin(List.of(parameters), coreType);
        }
    }

    /** Every built-in of the AICore image (device/pto_builtin_kernels.h), in its order. */
    private static final Map<String, Builtin> BUILTINS = builtins();

    private static Map<String, Builtin> builtins() {
        List<Direction> binary = List.of(IN, IN, OUT);
        List<Direction> unary = List.of(IN, OUT);
        List<Direction> withScalar = List.of(IN, OUT, SCALAR);
        Map<String, Builtin> m = new LinkedHashMap<>();
        m.put("noop", Builtin.single(List.of(), CoreType.AIV));
        m.put("vcopy", Builtin.single(unary, CoreType.AIV));
        m.put("vfill", Builtin.single(List.of(OUT, SCALAR), CoreType.AIV));
        m.put("vadd", Builtin.single(binary, CoreType.AIV));
        m.put("vadds", Builtin.single(withScalar, CoreType.AIV));
        m.put("vmul", Builtin.single(binary, CoreType.AIV));
        m.put("vmuls", Builtin.single(withScalar, CoreType.AIV));
        m.put("vsub", Builtin.single(binary, CoreType.AIV));
        m.put("vdiv", Builtin.single(binary, CoreType.AIV));
        m.put("vmax", Builtin.single(binary, CoreType.AIV));
        m.put("vexp", Builtin.single(unary, CoreType.AIV));
        m.put("vrelu", Builtin.single(unary, CoreType.AIV));
        m.put("reduce_sum", new Builtin(List.of(unary, withScalar), CoreType.AIV));
        m.put("reduce_max", new Builtin(List.of(unary, withScalar), CoreType.AIV));
        m.put("softmax_rows", new Builtin(List.of(withScalar, unary), CoreType.AIV));
        m.put("gemm_tile", new Builtin(List.of(List.of(IN, IN, INOUT, SCALAR, SCALAR, SCALAR), List.of(IN, IN, INOUT)),
                CoreType.AIC));
        m.put("tile_add", Builtin.single(List.of(IN, INOUT), CoreType.AIV));
        m.put("allreduce_sum", Builtin.single(List.of(INOUT, SCALAR), CoreType.AIV));
        m.put("allgather", Builtin.single(List.of(IN, OUT, SCALAR), CoreType.AIV));
        m.put("reduce_scatter", Builtin.single(List.of(IN, OUT, SCALAR), CoreType.AIV));
        m.put("broadcast", Builtin.single(List.of(INOUT, SCALAR, SCALAR), CoreType.AIV));
        return java.util.Collections.unmodifiableMap(m);
    }

    private final String name;
    private final List<List<Direction>> forms;
    private final CoreType coreType;
    private final byte[] image;
    private final String origin;

    private Kernel(String name, List<List<Direction>> forms, CoreType coreType, byte[] image, String origin) {
        this.name = name;
        this.forms = forms;
        this.coreType = coreType;
        this.image = image;
        this.origin = origin;
    }

    /** The names of every built-in kernel, in the AICore image's order. */
    public static Set<String> builtinNames() {
        return BUILTINS.keySet();
    }

    /**
     * A built-in kernel by name. A name this library does not know is accepted (the AICore
     * image decides at registration) without parameter or core-type checks.
     *
     * @throws IllegalArgumentException unless the name is 1..128 printable ASCII characters without spaces
     */
    public static Kernel builtin(String name) {
        checkName(name, "kernel name");
        Builtin known = BUILTINS.get(name);
        return known == null ? new Kernel(name, null, null, null, null)
                : new Kernel(name, known.forms(), known.coreType(), null, null);
    }

    /**
     * A user kernel: the shared library at {@code library} (read now; its bytes travel in
     * the callable, so the file may change afterwards) and the symbol of its
     * {@code PtoKernelFn}. Core type and parameters are unknown unless declared with
     * {@link #withSignature}; name the core type in
     * {@link ChipCallable.Builder#child(int, CoreType, Kernel)} otherwise.
     *
     * @throws UncheckedIOException when the file cannot be read
     * @throws IllegalArgumentException for an empty file, or a symbol that is not 1..128
     *     printable ASCII characters without spaces
     */
    public static Kernel fromLibrary(Path library, String symbol) {
        Objects.requireNonNull(library, "library");
        return fromLibrary(readImage(library, "kernel library"), symbol, library.toString());
    }

    /** {@link #fromLibrary(Path, String)} from the library's bytes. */
    public static Kernel fromLibrary(byte[] image, String symbol) {
        Objects.requireNonNull(image, "image");
        return fromLibrary(image.clone(), symbol, image.length + "-byte image");
    }

    private static Kernel fromLibrary(byte[] image, String symbol, String origin) {
        checkName(symbol, "entry symbol");
        if (image.length == 0) {
            throw new IllegalArgumentException("the kernel library (" + origin + ") is empty");
        }
        return new Kernel(symbol, null, null, image, origin);
    }

    /**
     * This library kernel with a declared core type and parameter list, so the callable
     * builder can check SUBMITs against it and {@code child(funcId, kernel)} knows the core.
     *
     * @throws IllegalStateException for a built-in (its signature is fixed)
     */
    public Kernel withSignature(CoreType core, Direction... parameterList) {
        Objects.requireNonNull(core, "core");
        Objects.requireNonNull(parameterList, "parameterList");
        if (image == null) {
            throw new IllegalStateException("built-in kernel '" + name + "' has a fixed signature");
        }
        if (parameterList.length > CallableLayouts.PTO_MAX_TASK_PARAMS) {
            throw new IllegalArgumentException("a task takes at most " + CallableLayouts.PTO_MAX_TASK_PARAMS
                    + " parameters, not " + parameterList.length);
        }
        return new Kernel(name, List.of(List.of(parameterList)), core, image, origin);
    }

    /** Reads a library image whole; refuses what cannot travel in a callable. */
    static byte[] readImage(Path library, String what) {
        try {
            long size = Files.size(library);
            if (size > CallableLayouts.PTO_CALLABLE_MAX_BYTES) {
                throw new IllegalArgumentException("the " + what + " " + library + " is " + size
                        + " bytes; a callable holds at most " + CallableLayouts.PTO_CALLABLE_MAX_BYTES);
            }
            return Files.readAllBytes(library);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the " + what + " " + library, e);
        }
    }

    /** Names and entry symbols: what the callable decoder accepts. */
    static void checkName(String name, String what) {
        Objects.requireNonNull(name, what);
        boolean printable = !name.isEmpty() && name.length() <= CallableLayouts.PTO_CALLABLE_MAX_NAME;
        for (int i = 0; printable && i < name.length(); i++) {
            char c = name.charAt(i);
            printable = c > 0x20 && c < 0x7f;
        }
        if (!printable) {
            throw new IllegalArgumentException(what + " '" + name + "' must be 1.."
                    + CallableLayouts.PTO_CALLABLE_MAX_NAME + " printable ASCII characters without spaces");
        }
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

    /** {@code vsub(IN a, IN b, OUT c)}: c = a - b. */
    public static Kernel vsub() {
        return builtin("vsub");
    }

    /** {@code vmul(IN a, IN b, OUT c)}: c = a * b over bytes(c)/4 f32. */
    public static Kernel vmul() {
        return builtin("vmul");
    }

    /** {@code vdiv(IN a, IN b, OUT c)}: c = a / b. */
    public static Kernel vdiv() {
        return builtin("vdiv");
    }

    /** {@code vmax(IN a, IN b, OUT c)}: c = max(a, b) as Java's {@code Math.max}. */
    public static Kernel vmax() {
        return builtin("vmax");
    }

    /** {@code vadds(IN a, OUT c, SCALAR s)}: c = a + s over bytes(c)/4 f32. */
    public static Kernel vadds() {
        return builtin("vadds");
    }

    /** {@code vmuls(IN a, OUT c, SCALAR s)}: c = a * s over bytes(c)/4 f32. */
    public static Kernel vmuls() {
        return builtin("vmuls");
    }

    /** {@code vexp(IN a, OUT c)}: c = (float) exp((double) a). */
    public static Kernel vexp() {
        return builtin("vexp");
    }

    /** {@code vrelu(IN a, OUT c)}: c = max(a, 0). */
    public static Kernel vrelu() {
        return builtin("vrelu");
    }

    /** {@code reduce_sum(IN a, OUT c)}: c[0] = Σ a, left to right. */
    public static Kernel reduceSum() {
        return builtin("reduce_sum");
    }

    /**
     * {@code reduce_max(IN a, OUT c)}: c[0] = the maximum of a as {@code Math.max}; on strided
     * views also {@code reduce_max(IN a, OUT c, SCALAR dim)}: the maxima along {@code dim}.
     */
    public static Kernel reduceMax() {
        return builtin("reduce_max");
    }

    /** {@code softmax_rows(IN a, OUT c, SCALAR cols)}: the softmax of each row of {@code cols} floats. */
    public static Kernel softmaxRows() {
        return builtin("softmax_rows");
    }

    /** {@code gemm_tile(IN A, IN B, INOUT C, SCALAR M, SCALAR K, SCALAR N)} on AIC: C += A·B, row-major. */
    public static Kernel gemmTile() {
        return builtin("gemm_tile");
    }

    /** {@code tile_add(IN a, INOUT c)}: c = c + a. */
    public static Kernel tileAdd() {
        return builtin("tile_add");
    }

    /**
     * {@code allreduce_sum(INOUT x, SCALAR comm)}: on every rank of the domain whose device
     * descriptor's address is {@code comm}, x = x_0 + x_1 + … summed in rank order; x lies in
     * the rank's window (docs/kernels.md, Collectives).
     */
    public static Kernel allreduceSum() {
        return builtin("allreduce_sum");
    }

    /** {@code allgather(IN x, OUT y, SCALAR comm)}: y = x_0 ‖ x_1 ‖ … in rank order. */
    public static Kernel allgather() {
        return builtin("allgather");
    }

    /** {@code reduce_scatter(IN x, OUT y, SCALAR comm)}: y = this rank's chunk of x_0 + x_1 + …. */
    public static Kernel reduceScatter() {
        return builtin("reduce_scatter");
    }

    /** {@code broadcast(INOUT x, SCALAR comm, SCALAR root)}: every rank's x = x_root. */
    public static Kernel broadcast() {
        return builtin("broadcast");
    }

    /** The built-in's name, or the library kernel's entry symbol. */
    public String name() {
        return name;
    }

    /** True for a built-in of the AICore image, false for a library kernel. */
    public boolean isBuiltin() {
        return image == null;
    }

    /** A library kernel's image (a copy); empty for a built-in. */
    public Optional<byte[]> image() {
        return image == null ? Optional.empty() : Optional.of(image.clone());
    }

    byte[] rawImage() {
        return image;
    }

    /** The kernel's parameter directions in task order, when known: its flat-view form. */
    public Optional<List<Direction>> parameters() {
        return forms == null ? Optional.empty() : Optional.of(forms.get(0));
    }

    /**
     * Every parameter list the kernel accepts, when known: the flat-view form first, then a
     * built-in's strided-view form if it has another (docs/kernels.md, "Strided views").
     */
    public Optional<List<List<Direction>>> parameterForms() {
        return Optional.ofNullable(forms);
    }

    /** The core type the kernel runs on, when known. */
    public Optional<CoreType> coreType() {
        return Optional.ofNullable(coreType);
    }

    @Override
    public boolean equals(Object o) {
        if (!(o instanceof Kernel)) {
            return false;
        }
        Kernel k = (Kernel) o;
        return k.name.equals(name) && Arrays.equals(k.image, image) && Objects.equals(k.forms, forms)
                && k.coreType == coreType;
    }

    @Override
    public int hashCode() {
        return 31 * name.hashCode() + Arrays.hashCode(image);
    }

    @Override
    public String toString() {
        String signature = forms == null ? "" : forms.size() == 1 ? forms.get(0).toString() : forms.toString();
        return image == null ? "Kernel[builtin " + name + signature + "]"
                : "Kernel[library " + origin + " symbol " + name + signature + "]";
    }
}

package org.ptorun;

import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.ptorun.callable.Direction.IN;
import static org.ptorun.callable.Direction.INOUT;
import static org.ptorun.callable.Direction.OUT;
import static org.ptorun.callable.Direction.SCALAR;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.ptorun.callable.Affine;
import org.ptorun.callable.ChipCallable;
import org.ptorun.callable.Kernel;
import org.ptorun.callable.Param;
import org.ptorun.callable.Program;

/**
 * Sub-graph programs through registration on every sim library: what the Java builder
 * encodes is what the library's decoder accepts, and a defect crafted into its bytes is
 * refused naming it.
 */
class SubgraphRegistrationE2ETest {

    private static final int ID = 7;

    /**
     * Signature (IN x, INOUT y, OUT z, SCALAR s); func 1 vadds, func 2 vcopy;
     * <pre>
     * 0 SUBGRAPH 0 (IN a, INOUT b, SCALAR k) { SUBMIT 1 (a[0, 64) IN, b[0, 64) OUT, k) }
     * 1 LOOP 2
     * 2   INVOKE 0 (x[64 i, +64) IN, y[0, 64) INOUT, s)
     * 3 END_LOOP
     * 4 SUBMIT 2 (y[0, 64) IN, z[0, 64) OUT)
     * </pre>
     */
    static ChipCallable base() {
        Program.Builder p = Program.builder();
        Program.Subgraph layer = p.subgraph(0, List.of(IN, INOUT, SCALAR), body -> body
                .submit(1, Param.tensor(0, IN, 0, 64), Param.tensor(1, OUT, 0, 64), Param.scalarArg(0)));
        p.loop(2, (l, i) -> l.invoke(layer, Param.tensor(0, IN, i.times(64), Affine.of(64)),
                Param.tensor(1, INOUT, 0, 64), Param.scalarArg(0)));
        p.submit(2, Param.tensor(1, IN, 0, 64), Param.tensor(2, OUT, 0, 64));
        return ChipCallable.builder()
                .signature(IN, INOUT, OUT, SCALAR)
                .child(1, Kernel.vadds())
                .child(2, Kernel.vcopy())
                .program(p.build())
                .build();
    }

    private static ByteBuffer le(byte[] b) {
        return ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN);
    }

    /** Byte offset of instruction {@code index} of the program. */
    private static int insn(byte[] b, int index) {
        int at = le(b).getInt(40) + 16;
        for (int i = 0; i < index; i++) {
            at += le(b).getInt(at + 4);
        }
        return at;
    }

    private static byte[] mutate(Consumer<byte[]> change) {
        byte[] b = base().bytes();
        change.accept(b);
        return b;
    }

    record Defect(String name, byte[] bytes, String message) {
        @Override
        public String toString() {
            return name;
        }
    }

    static List<Defect> defects() {
        List<Defect> all = new ArrayList<>();
        all.add(new Defect("an INVOKE param of another direction than the boundary's",
                mutate(b -> b[insn(b, 2) + 16 + 1] = 2),
                "instruction 2 (INVOKE 0) param 0 is OUT; the sub-graph's boundary parameter 0 is IN"));
        all.add(new Defect("an INVOKE of an undefined sub-graph",
                mutate(b -> le(b).putInt(insn(b, 2) + 8, 5)),
                "instruction 2 (INVOKE) invokes sub-graph 5, which no earlier SUBGRAPH defines"));
        all.add(new Defect("a boundary tensor after a scalar",
                mutate(b -> b[insn(b, 0) + 16] = 0),
                "instruction 0 (SUBGRAPH 0) boundary parameter 1 is a tensor after a scalar"));
        // the body's SUBMIT writes boundary tensor 1 (INOUT); make the boundary say IN
        all.add(new Defect("a body writing an IN boundary tensor",
                mutate(b -> {
                    b[insn(b, 0) + 16 + 1] = 1;
                    b[insn(b, 2) + 16 + 904 + 1] = 1;
                }),
                "instruction 0 (SUBGRAPH 0) body: instruction 0 param 1 (OUT) writes boundary tensor 1, which the "
                        + "sub-graph's boundary declares IN"));
        return all;
    }

    static Stream<Arguments> variantsAndDefects() {
        return SimE2E.simVariantsWith(defects());
    }

    static List<Variant> variants() {
        return SimE2E.simVariants();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("variants")
    void theBuildersSubgraphProgramRegisters(Variant variant) {
        try (SimE2E.RawChip raw = SimE2E.openRaw(variant)) {
            assertThatCode(() -> raw.chip().registerCallable(ID, base())).doesNotThrowAnyException();
            raw.chip().unregisterCallable(ID);
        }
    }

    @ParameterizedTest(name = "{0}: {1}")
    @MethodSource("variantsAndDefects")
    void registrationRefusesASubgraphDefectNamingIt(Variant variant, Defect defect) {
        try (SimE2E.RawChip raw = SimE2E.openRaw(variant)) {
            raw.nextRegistration().set(defect.bytes());
            assertThatThrownBy(() -> raw.chip().registerCallable(ID, base()))
                    .isInstanceOf(BadCallableException.class)
                    .hasMessageContaining("PTO_ERR_BAD_CALLABLE")
                    .hasMessageContaining(defect.message());
            assertThatCode(() -> raw.chip().registerCallable(ID, base())).doesNotThrowAnyException();
        }
    }
}

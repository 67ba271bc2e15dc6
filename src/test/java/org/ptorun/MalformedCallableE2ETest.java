package org.ptorun;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.ptorun.SimE2E.assertBitExact;
import static org.ptorun.SimE2E.filled;
import static org.ptorun.SimE2E.random;
import static org.ptorun.callable.Direction.IN;
import static org.ptorun.callable.Direction.OUT;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
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
import org.ptorun.internal.CallableLayouts;

/**
 * The malformed-callable matrix on every sim library: each defect is refused with
 * {@link BadCallableException} and a message naming it, and the chip stays usable. Where
 * the Java builders would refuse the defect, the bytes are crafted by hand from a valid
 * callable (offsets of include/ptorun/chip_callable.h) and handed to the library as they are.
 */
class MalformedCallableE2ETest {

    private static final int ID = 5;
    private static final int GOOD = 6;

    /**
     * The valid base: signature (IN, IN, OUT); func 0 vadd, func 1 vadds;
     * <pre>
     * 0 LOOP 2
     * 1   SCOPE_BEGIN
     * 2     SUBMIT 0 (arg0 IN [16 i, +16), arg1 IN [16 i, +16), arg2 OUT [16 i, +16))
     * 3   SCOPE_END
     * 4 END_LOOP
     * 5 ALLOC_TENSOR local0 64
     * 6 SUBMIT 1 (arg0 IN [0, +64), local0 OUT [0, +64), scalar 1.0f)
     * </pre>
     */
    static ChipCallable base() {
        return ChipCallable.builder()
                .signature(IN, IN, OUT)
                .child(0, Kernel.vadd())
                .child(1, Kernel.vadds())
                .program(Program.builder()
                        .loop(2, (p, i) -> p.scope(s -> s.submit(0,
                                Param.tensor(0, IN, i.times(16), Affine.of(16)),
                                Param.tensor(1, IN, i.times(16), Affine.of(16)),
                                Param.tensor(2, OUT, i.times(16), Affine.of(16)))))
                        .allocTensor(0, 64)
                        .submit(1, Param.tensor(0, IN, 0, 64), Param.local(0, OUT, 0, 64), Param.scalarF32(1f))
                        .build())
                .build();
    }

    // ---- byte surgery --------------------------------------------------------------------------------

    private static ByteBuffer le(byte[] b) {
        return ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN);
    }

    private static int programOffset(byte[] b) {
        return le(b).getInt(40);
    }

    /** Byte offset of instruction {@code index} (walking the size_bytes of the ones before). */
    private static int insn(byte[] b, int index) {
        int at = programOffset(b) + 16;
        for (int i = 0; i < index; i++) {
            at += le(b).getInt(at + 4);
        }
        return at;
    }

    /** Byte offset of parameter {@code param} of the SUBMIT at instruction {@code index}. */
    private static int param(byte[] b, int index, int param) {
        return insn(b, index) + 16 + CallableLayouts.PtoProgramParam.SIZE * param;
    }

    private static int child(int index) {
        return 64 + 32 * index;
    }

    private static byte[] mutate(ChipCallable c, Consumer<byte[]> change) {
        byte[] b = c.bytes();
        change.accept(b);
        return b;
    }

    /** One row of the matrix: the bytes handed to the library and what its message must name. */
    record Defect(String name, byte[] bytes, String message) {
        @Override
        public String toString() {
            return name;
        }
    }

    static List<Defect> registrationDefects() {
        ChipCallable base = base();
        List<Defect> all = new ArrayList<>();
        byte[] cut = mutate(base, b -> le(b).putInt(8, b.length - 8));
        all.add(new Defect("truncated: total_size cuts the program short", Arrays.copyOf(cut, cut.length - 8),
                "lies outside the callable's total_size of " + (cut.length - 8) + " bytes"));
        all.add(new Defect("truncated: total_size below the header",
                Arrays.copyOf(mutate(base, b -> le(b).putInt(8, 40)), 56),
                "total_size 40 is smaller than the 56-byte header"));
        all.add(new Defect("oversized child_count",
                mutate(base, b -> le(b).putInt(12, 65)), "child_count 65 exceeds the limit of 64"));
        all.add(new Defect("oversized signature_length",
                mutate(base, b -> le(b).putInt(16, 385)), "signature_length 385 exceeds the limit of 384"));
        all.add(new Defect("oversized instruction_count",
                mutate(base, b -> le(b).putInt(programOffset(b) + 4, (1 << 20) + 1)),
                "program has 1048577 instructions, the limit is 1048576"));
        all.add(new Defect("oversized local_count",
                mutate(base, b -> le(b).putInt(programOffset(b) + 8, 257)),
                "program declares 257 local tensors, the limit is 256"));
        all.add(new Defect("oversized param_count",
                mutate(base, b -> le(b).putShort(insn(b, 2) + 2, (short) 33)),
                "instruction 2 (SUBMIT) has 33 params, the limit is 32"));
        all.add(new Defect("unknown kernel",
                ChipCallable.builder().signature(IN, OUT).child(3, org.ptorun.callable.CoreType.AIV,
                        Kernel.builtin("no_such_kernel")).program(Program.builder().build()).build().bytes(),
                "'no_such_kernel' is not a built-in kernel"));
        all.add(new Defect("duplicate func_id",
                mutate(base, b -> le(b).putInt(child(1), 0)), "func_id 0 is used by child 0 and child 1"));
        ChipCallable scoped = ChipCallable.builder().program(Program.builder().scope(s -> { }).build()).build();
        all.add(new Defect("unbalanced: a scope never closed",
                mutate(scoped, b -> le(b).putShort(insn(b, 1), (short) 5)),
                "unbalanced program: the SCOPE_BEGIN at instruction 1 is never closed"));
        // LOOP 1, END_LOOP with the END_LOOP cut off: one instruction, 8 bytes fewer everywhere
        byte[] looped = ChipCallable.builder().program(Program.builder().beginLoop(1).endLoop().build()).build().bytes();
        le(looped).putInt(8, looped.length - 8);                          // total_size
        le(looped).putInt(44, le(looped).getInt(44) - 8);                 // orchestration.size
        le(looped).putInt(programOffset(looped) + 4, 1);                  // instruction_count
        all.add(new Defect("unbalanced: a loop never closed", Arrays.copyOf(looped, looped.length - 8),
                "unbalanced program: the LOOP at instruction 0 is never closed"));
        all.add(new Defect("unbalanced: END_LOOP closes a scope",
                mutate(base, b -> le(b).putShort(insn(b, 3), (short) 4)),
                "instruction 3 (END_LOOP) would close the SCOPE_BEGIN opened at instruction 1"));
        all.add(new Defect("unbalanced: SCOPE_END closes a loop",
                mutate(base, b -> le(b).putShort(insn(b, 4), (short) 6)),
                "instruction 4 (SCOPE_END) would close the LOOP opened at instruction 0"));
        all.add(new Defect("unbalanced: SCOPE_END with nothing open",
                mutate(scoped, b -> le(b).putShort(insn(b, 0), (short) 6)),
                "instruction 0 (SCOPE_END) closes nothing: no SCOPE_BEGIN is open"));
        all.add(new Defect("a loop variable outside its loop",
                mutate(base, b -> le(b).putLong(param(b, 6, 0) + 24, 4)),
                "instruction 6 param 0: the view offset uses loop variable 0 but only 0 loop(s) enclose it"));
        all.add(new Defect("a local beyond local_count",
                mutate(base, b -> le(b).putInt(insn(b, 5) + 8, 1)),
                "instruction 5 (ALLOC_TENSOR) allocates local 1 but local_count is 1"));
        all.add(new Defect("a program param naming a tensor the signature lacks",
                mutate(base, b -> le(b).putInt(param(b, 2, 1) + 4, 3)),
                "instruction 2 param 1 names argument tensor 3 but the signature has 3 tensor(s)"));
        all.add(new Defect("a program param naming a scalar the signature lacks",
                mutate(base, b -> le(b).put(param(b, 6, 2), (byte) 3)),
                "instruction 6 param 2 names argument scalar 0 but the signature has 0 scalar(s)"));
        all.add(new Defect("a tensor view with direction SCALAR",
                mutate(base, b -> le(b).put(param(b, 2, 0) + 1, (byte) 0)),
                "instruction 2 param 0: a tensor view needs direction IN, OUT or INOUT"));
        return all;
    }

    static Stream<Arguments> variantsAndRegistrationDefects() {
        return SimE2E.simVariantsWith(registrationDefects());
    }

    static List<Variant> variants() {
        return SimE2E.simVariants();
    }

    @ParameterizedTest(name = "{0}: {1}")
    @MethodSource("variantsAndRegistrationDefects")
    void registrationRefusesTheDefectNamingIt(Variant variant, Defect defect) {
        try (SimE2E.RawChip raw = SimE2E.openRaw(variant)) {
            ChipWorker chip = raw.chip();
            raw.nextRegistration().set(defect.bytes());
            assertThatThrownBy(() -> chip.registerCallable(ID, base()))
                    .isInstanceOf(BadCallableException.class)
                    .hasMessageContaining("PTO_ERR_BAD_CALLABLE")
                    .hasMessageContaining(defect.message());
            assertThat(raw.nextRegistration().get()).as("the raw bytes were used").isNull();
            assertUsable(chip);
        }
    }

    /** A refused callable leaves the chip usable: the valid base registers and runs. */
    private static void assertUsable(ChipWorker chip) {
        chip.registerCallable(GOOD, base());
        float[] a = random(16, 1);
        float[] b = random(16, 2);
        float[] c = filled(8);
        chip.run(GOOD, TaskArgs.of(Tensor.of(a), Tensor.of(b), Tensor.of(c)), CallConfig.DEFAULT);
        float[] expected = new float[8];
        for (int i = 0; i < 8; i++) {
            expected[i] = a[i] + b[i];
        }
        assertBitExact(c, expected);
    }

    // ---- defects only a run can see --------------------------------------------------------------------

    @ParameterizedTest
    @MethodSource("variants")
    void aViewOutsideItsArgumentTensorIsRefusedBeforeTheLibraryAndByTheLibraryAsTheBackstop(Variant variant) {
        try (SimE2E.RawChip raw = SimE2E.openRaw(variant)) {
            ChipWorker chip = raw.chip();
            chip.registerCallable(ID, base());
            float[] c = filled(8);
            // the last task views 64 bytes of arg0: give it 32, and Java refuses before any native work
            assertThatThrownBy(() -> chip.run(ID, TaskArgs.of(Tensor.of(random(8, 1)), Tensor.of(random(16, 2)),
                    Tensor.of(c)), CallConfig.DEFAULT))
                    .isExactlyInstanceOf(IllegalArgumentException.class)
                    .hasMessage("callable 5: tensor argument 0 (IN) holds 32 bytes, but the callable's program needs"
                            + " 64: instruction 6 (SUBMIT func_id 1) parameter 0 ends at byte 64");
            assertThat(c).containsOnly(SimE2E.SENTINEL);
            // the library's own check: it is handed a last view of 128 bytes that Java does not know of
            raw.nextRegistration().set(mutate(base(), b -> le(b).putLong(param(b, 6, 0)
                    + CallableLayouts.PtoProgramParam.SIZE_AFFINE, 128)));
            chip.registerCallable(ID, base());
            assertThatThrownBy(() -> chip.run(ID, TaskArgs.of(Tensor.of(random(16, 1)), Tensor.of(random(16, 2)),
                    Tensor.of(c)), CallConfig.DEFAULT))
                    .isInstanceOf(BadCallableException.class)
                    .hasMessageContaining("outside argument tensor 0 of 64 bytes");
            assertThat(c).containsOnly(SimE2E.SENTINEL);
            assertUsable(chip);
        }
    }

    @ParameterizedTest
    @MethodSource("variants")
    void aViewOutsideItsLocalTensorIsRefusedAtRunTime(Variant variant) {
        try (SimE2E.RawChip raw = SimE2E.openRaw(variant)) {
            ChipWorker chip = raw.chip();
            // the last task's local view grows to 128 bytes of a 64-byte local (the builder would refuse)
            // (refused at registration or at run time: either is a refusal naming the local)
            raw.nextRegistration().set(mutate(base(), b -> le(b).putLong(param(b, 6, 1) + CallableLayouts.PtoProgramParam.SIZE_AFFINE, 128)));
            assertThatThrownBy(() -> {
                chip.registerCallable(ID, base());
                chip.run(ID, TaskArgs.of(Tensor.of(random(32, 1)), Tensor.of(random(16, 2)), Tensor.of(filled(8))),
                        CallConfig.DEFAULT);
            })
                    .isInstanceOf(BadCallableException.class)
                    .hasMessageContaining("local tensor 0");
            assertUsable(chip);
        }
    }

    @ParameterizedTest
    @MethodSource("variants")
    void aViewWritingAnInArgumentIsRefusedAtRunTime(Variant variant) {
        try (SimE2E.RawChip raw = SimE2E.openRaw(variant)) {
            ChipWorker chip = raw.chip();
            // the loop's first view writes arg0, which the signature declares IN (the builder would refuse)
            // (refused at registration or at run time)
            raw.nextRegistration().set(mutate(base(), b -> le(b).put(param(b, 2, 0) + 1, (byte) 3)));
            float[] a = random(16, 1);
            float[] untouched = a.clone();
            assertThatThrownBy(() -> {
                chip.registerCallable(ID, base());
                chip.run(ID, TaskArgs.of(Tensor.of(a), Tensor.of(random(16, 2)), Tensor.of(filled(8))),
                        CallConfig.DEFAULT);
            })
                    .isInstanceOf(BadCallableException.class)
                    .hasMessageContaining("writes argument tensor 0, which the signature declares IN");
            assertBitExact(a, untouched);
            assertUsable(chip);
        }
    }

    @ParameterizedTest
    @MethodSource("variants")
    void argumentsThatDisagreeWithTheSignatureAreRefusedAtPrepare(Variant variant) {
        try (ChipWorker chip = ChipWorker.open(HostRuntime.load(variant), 0)) {
            chip.registerCallable(ID, base());
            assertThatThrownBy(() -> chip.prepare(ID, TaskArgs.of(Tensor.of(random(16, 1)), Tensor.of(random(16, 2))),
                    CallConfig.DEFAULT, PipelineSlotLease.of(0, 1), 1, 1, null))
                    .isInstanceOf(BadCallableException.class)
                    .hasMessageContaining("2 tensor(s) and 0 scalar(s) given; the callable's signature takes 3 and 0");
            assertThatThrownBy(() -> chip.prepare(ID, TaskArgs.of(Tensor.of(random(16, 1)), Tensor.of(random(16, 2)),
                    Tensor.of(filled(8))).scalar(1), CallConfig.DEFAULT, PipelineSlotLease.of(0, 2), 2, 2, null))
                    .isInstanceOf(BadCallableException.class)
                    .hasMessageContaining("3 tensor(s) and 1 scalar(s) given; the callable's signature takes 3 and 0");
            assertUsable(chip);
        }
    }
}

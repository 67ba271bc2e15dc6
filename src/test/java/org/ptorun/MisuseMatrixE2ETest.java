package org.ptorun;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Named;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The misuse matrix (docs/hardening.md): every way a caller can get the Java chip API,
 * the Worker or the C contract wrong that we could list, each as its own test. A case
 * sets the scene, makes the one wrong call and must get the EXACT exception type with a
 * message fragment; then the vector chain runs golden on every slot of the same chip
 * (the chip stays usable) and its committed device memory is back at the baseline. Each
 * variant's group ends with its chips closed: ptorun's native threads and (onboard) the
 * emulated driver's committed memory are back where they were before the group opened.
 * Nothing sleeps: a second call on one run is made while the first is parked at a gate
 * in front of the library, close is seen waiting through {@code onCloseWaits}.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class MisuseMatrixE2ETest {

    /** The libraries the chip cases run on: all eight. */
    static List<Variant> variants() {
        return Variant.all();
    }

    private final Map<Variant, MisuseFixture> fixtures = new LinkedHashMap<>();

    static List<Misuse> chipCases() {
        List<Misuse> all = new ArrayList<>();
        all.addAll(ChipMisuses.all());
        all.addAll(CloseMisuses.all());
        all.addAll(WorkerAndContractMisuses.worker());
        all.addAll(WorkerAndContractMisuses.contract());
        return all;
    }

    static Stream<Arguments> onEachVariant() {
        List<Misuse> cases = chipCases();
        return variants().stream().flatMap(v -> Stream.concat(
                cases.stream().filter(m -> m.appliesTo().test(v))
                        .map(m -> Arguments.of(Named.of(v.toString(), v), Named.of(m.toString(), m))),
                Stream.of(Arguments.of(Named.of(v.toString(), v), Named.of(
                        "end of group: chips closed, device memory and native threads back at baseline", null)))));
    }

    @Order(1)
    @ParameterizedTest(name = "[{index}] {0} | {1}")
    @MethodSource("onEachVariant")
    void chipMisuse(Variant variant, Misuse misuse) throws Throwable {
        if (misuse == null) {
            MisuseFixture f = fixtures.remove(variant);
            assertThat(f).as("the group of %s ran", variant).isNotNull();
            f.close();
            return;
        }
        MisuseFixture f = fixtures.computeIfAbsent(variant, MisuseFixture::open);
        f.reset();
        try {
            misuse.body().run(f);
        } finally {
            f.closeExtras();
            if (!f.slotsEmpty()) {
                // a case left a run behind: start the group's chip afresh so the next cases are not affected
                fixtures.remove(variant).discard();
                throw new AssertionError(misuse + " left a run prepared on the chip");
            }
        }
        assertThat(f.refusals()).as("the case makes exactly one refused call").isEqualTo(1);
        assertRefusal(f, misuse);
        f.golden();
        assertThat(f.chip.committedDeviceMemory()).as("committed device memory after the case")
                .isEqualTo(f.baselineCommitted);
    }

    static Stream<Named<Misuse>> values() {
        return ValueMisuses.all().stream().map(m -> Named.of(m.toString(), m));
    }

    @Order(0)
    @ParameterizedTest(name = "[{index}] {0}")
    @MethodSource("values")
    void valueMisuse(Misuse misuse) throws Throwable {
        MisuseFixture f = MisuseFixture.detached();
        misuse.body().run(f);
        assertThat(f.refusals()).as("the case makes exactly one refused call").isEqualTo(1);
        assertRefusal(f, misuse);
    }

    /** The exact type, and the fragment (empty only for the JDK's message-less InterruptedException). */
    private static void assertRefusal(MisuseFixture f, Misuse misuse) {
        assertThat(f.refusal()).as(misuse.toString()).isExactlyInstanceOf(misuse.type());
        if (!misuse.fragment().isEmpty()) {
            assertThat(f.refusal()).as(misuse.toString()).hasMessageContaining(misuse.fragment());
        }
    }

    @AfterAll
    void closeLeftovers() throws Exception {
        for (MisuseFixture f : fixtures.values()) {
            f.close();
        }
        fixtures.clear();
    }
}

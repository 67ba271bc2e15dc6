package org.ptorun;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class VariantTest {

    @Test
    void parsesAndPrintsTheSameText() {
        Variant v = Variant.parse("a5/onboard/trb");
        assertThat(v).isEqualTo(new Variant(Variant.Arch.A5, Variant.Platform.ONBOARD, Variant.RuntimeKind.TRB));
        assertThat(v).hasToString("a5/onboard/trb");
        assertThat(v.libraryFileName()).isEqualTo("libptorun_a5_onboard_trb.so");
        assertThat(Variant.DEFAULT).hasToString("a2a3/sim/hbg");
    }

    @Test
    void allHasTheEightDistinctVariants() {
        assertThat(Variant.all()).hasSize(8).doesNotHaveDuplicates().contains(Variant.DEFAULT);
    }

    @Test
    void refusesMalformedText() {
        assertThatThrownBy(() -> Variant.parse("a2a3/sim")).hasMessageContaining("<arch>/<platform>/<runtime>");
        assertThatThrownBy(() -> Variant.parse("a3/sim/hbg")).hasMessage(
                "variant 'a3/sim/hbg': 'a3' is not an arch; expected one of a2a3, a5 (any case)");
        assertThatThrownBy(() -> Variant.parse("a2a3/board/hbg")).hasMessageContaining(
                "'board' is not a platform; expected one of sim, onboard (any case)");
        assertThatThrownBy(() -> Variant.parse("a2a3/sim/xyz")).hasMessageContaining(
                "'xyz' is not a runtime; expected one of hbg, trb (any case)");
        assertThatThrownBy(() -> Variant.parse("a2a3/sim/xyz/")).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void ignoresCase() {
        assertThat(Variant.parse("A2A3/SIM/HBG")).isEqualTo(Variant.DEFAULT);
        assertThat(Variant.parse("A5/Onboard/TRB")).isEqualTo(Variant.parse("a5/onboard/trb"));
    }
}

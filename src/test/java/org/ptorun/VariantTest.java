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
        assertThatThrownBy(() -> Variant.parse("a3/sim/hbg")).hasMessageContaining("'a3' is not a Arch");
        assertThatThrownBy(() -> Variant.parse("a2a3/board/hbg")).hasMessageContaining("'board' is not a Platform");
        assertThatThrownBy(() -> Variant.parse("a2a3/sim/xyz/")).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> Variant.parse("A2A3/SIM/HBG")).isInstanceOf(IllegalArgumentException.class);
    }
}

package org.ptorun;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The root-info strings of groups that span hosts ({@link CommGroup#newRootInfo},
 * {@link CommGroup#join(List, int, int, String, Duration)}): what is accepted, what is refused
 * and how the refusal names the fault. No native library is needed: the string is checked
 * before any chip is touched.
 */
class CommRootInfoTest {

    private static final String GROUP = "0123456789abcdef0123456789abcdef";
    private static final Pattern FRESH =
            Pattern.compile("ptorun-gloo:v1;store=10\\.79\\.0\\.1:29500;group=[0-9a-f]{32}");

    @Test
    void newRootInfoNamesTheStoreAndAFreshGroup() throws Exception {
        InetSocketAddress store = new InetSocketAddress(InetAddress.getByName("10.79.0.1"), 29500);
        Set<String> seen = new HashSet<>();
        for (int i = 0; i < 100; i++) {
            String rootInfo = CommGroup.newRootInfo(store);
            assertThat(rootInfo).matches(FRESH);
            assertThatCode(() -> CommGroup.checkRootInfo(rootInfo)).doesNotThrowAnyException();
            seen.add(rootInfo);
        }
        assertThat(seen).as("every group id is fresh").hasSize(100);
    }

    @Test
    void newRootInfoRefusesAnythingButAnIpv4AddressWithAPort() throws Exception {
        assertThatThrownBy(() -> CommGroup.newRootInfo(new InetSocketAddress(InetAddress.getByName("::1"), 29500)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("not an IPv4 address");
        assertThatThrownBy(() -> CommGroup.newRootInfo(InetSocketAddress.createUnresolved("host.example", 29500)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("not an IPv4 address");
        assertThatThrownBy(() -> CommGroup.newRootInfo(new InetSocketAddress(InetAddress.getByName("10.0.0.1"), 0)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("has no port");
        assertThatThrownBy(() -> CommGroup.newRootInfo(null)).isInstanceOf(NullPointerException.class);
    }

    @ParameterizedTest
    @ValueSource(strings = {
        "ptorun-gloo:v1;store=10.79.0.1:29500;group=" + GROUP,
        "ptorun-gloo:v1;group=" + GROUP + ";store=127.0.0.1:1",
        "ptorun-gloo:v1;store=255.255.255.255:65535;group=" + GROUP,
        "ptorun-gloo:v1;store=0.0.0.0:8;group=ffffffffffffffffffffffffffffffff",
    })
    void wellFormedRootInfosPass(String rootInfo) {
        assertThatCode(() -> CommGroup.checkRootInfo(rootInfo)).doesNotThrowAnyException();
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', quoteCharacter = '"', value = {
        "/tmp/rootinfo|does not start with 'ptorun-gloo:v1;'",
        "ptorun-gloo:v2;store=10.0.0.1:1;group=" + GROUP + "|does not start with 'ptorun-gloo:v1;'",
        "PTORUN-GLOO:v1;store=10.0.0.1:1;group=" + GROUP + "|does not start with",
        "ptorun-gloo:v1;group=" + GROUP + "|has no store=",
        "ptorun-gloo:v1;store=10.0.0.1:1|has no group=",
        "ptorun-gloo:v1;|neither store= nor group=",
        "ptorun-gloo:v1;store=10.0.0.1:1;group=" + GROUP + ";|field '' that is neither",
        "ptorun-gloo:v1;store=10.0.0.1:1;group=" + GROUP + ";tls=1|field 'tls=1'",
        "ptorun-gloo:v1;store=10.0.0.1:1;store=10.0.0.2:1;group=" + GROUP + "|names store twice",
        "ptorun-gloo:v1;store=10.0.0.1:1;group=" + GROUP + ";group=" + GROUP + "|names group twice",
        "ptorun-gloo:v1;store=10.0.0.1;group=" + GROUP + "|store '10.0.0.1' has no port",
        "ptorun-gloo:v1;store=host.example:29500;group=" + GROUP + "|'host.example' is not an IPv4 literal",
        "ptorun-gloo:v1;store=[::1]:29500;group=" + GROUP + "|'[::1]' is not an IPv4 literal",
        "ptorun-gloo:v1;store=10.0.0:29500;group=" + GROUP + "|'10.0.0' is not an IPv4 literal",
        "ptorun-gloo:v1;store=10.0.0.256:29500;group=" + GROUP + "|'10.0.0.256' is not an IPv4 literal",
        "ptorun-gloo:v1;store=10.0.0.01:29500;group=" + GROUP + "|'10.0.0.01' is not an IPv4 literal",
        "ptorun-gloo:v1;store=:29500;group=" + GROUP + "|'' is not an IPv4 literal",
        "ptorun-gloo:v1;store=10.0.0.1:0;group=" + GROUP + "|port '0' is not a port of 1..65535",
        "ptorun-gloo:v1;store=10.0.0.1:65536;group=" + GROUP + "|port '65536' is not a port of 1..65535",
        "ptorun-gloo:v1;store=10.0.0.1:;group=" + GROUP + "|port '' is not a port",
        "ptorun-gloo:v1;store=10.0.0.1:+80;group=" + GROUP + "|port '+80' is not a port",
        "ptorun-gloo:v1;store=10.0.0.1:080;group=" + GROUP + "|port '080' is not a port",
        "ptorun-gloo:v1;store=10.0.0.1:1;group=0123456789ABCDEF0123456789abcdef|is not 32 lowercase hex",
        "ptorun-gloo:v1;store=10.0.0.1:1;group=0123456789abcdef|'0123456789abcdef' is not 32 lowercase hex",
        "ptorun-gloo:v1;store=10.0.0.1:1;group=" + GROUP + "0|is not 32 lowercase hex",
        "ptorun-gloo:v1;store=10.0.0.1:1;group=0123456789abcdef0123456789abcdeg|is not 32 lowercase hex",
    })
    void malformedRootInfosAreRefusedNamingTheFault(String rootInfo, String fault) {
        assertThatThrownBy(() -> CommGroup.checkRootInfo(rootInfo))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(fault)
                .hasMessageContaining("root info '" + rootInfo + "'");
    }

    @Test
    void joinChecksTheRootInfoBeforeTouchingAChip() {
        String bad = "ptorun-gloo:v1;store=10.0.0.1:70000;group=" + GROUP;
        assertThatThrownBy(() -> CommGroup.join(List.of(), 0, 2, bad, Duration.ofSeconds(1)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("port '70000'");
        assertThatThrownBy(() -> CommGroup.join(List.of(), 0, 2, (String) null, Duration.ofSeconds(1)))
                .isInstanceOf(NullPointerException.class).hasMessageContaining("rootInfo");
        // a well-formed string reaches the group's own checks
        String good = "ptorun-gloo:v1;store=10.0.0.1:29500;group=" + GROUP;
        assertThatThrownBy(() -> CommGroup.join(List.of(), 0, 2, good, Duration.ofSeconds(1)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("at least one chip");
    }
}

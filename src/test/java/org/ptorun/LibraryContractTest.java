package org.ptorun;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.api.Test;
import org.ptorun.internal.ElfSymbols;
import org.ptorun.internal.LibraryLoader;
import org.ptorun.internal.NativeApi;

/** Every one of the eight libraries loads, is the variant it claims, and exports exactly the contract. */
class LibraryContractTest {

    /**
     * The ambient-selection setters an earlier design exported. They are not in the contract,
     * so "exports exactly the contract" (this test, {@code ptorun inspect}) refuses a library
     * that still exports one.
     */
    static final List<String> REMOVED_SETTERS = List.of(
            "select_pipeline_slot_ctx", "select_arena_bank_ctx",
            "set_native_run_identity_ctx", "set_task_accepted_state_ctx");

    static Iterable<Variant> variants() {
        return Variant.all();
    }

    @ParameterizedTest
    @MethodSource("variants")
    void loadsAndReportsItsVariant(Variant variant) throws Exception {
        HostRuntime runtime = HostRuntime.load(variant);
        assertThat(runtime.variant()).isEqualTo(variant);
        assertThat(runtime.libraryFile().getFileName().toString()).isEqualTo(variant.libraryFileName());
        assertThat(runtime.exportedSymbols()).containsExactlyInAnyOrderElementsOf(headerExports());
        assertThat(runtime.runStorageSize()).isGreaterThanOrEqualTo(8);
        assertThat(Long.bitCount(runtime.runStorageAlignment())).isEqualTo(1);
        assertThat(HostRuntime.load(variant)).as("one instance per variant per JVM").isSameAs(runtime);
    }

    @ParameterizedTest
    @MethodSource("variants")
    void exportsExactlyTheContractAndNothingElse(Variant variant) throws Exception {
        Path file = libDir().resolve(variant.libraryFileName());
        Set<String> exported = ElfSymbols.definedGlobals(file);
        // the independent list: what the public header declares PTO_EXPORT
        assertThat(exported).as(".dynsym of " + file).containsExactlyInAnyOrderElementsOf(headerExports());
        assertThat(exported).doesNotContainAnyElementsOf(REMOVED_SETTERS);
        assertThat(exported).as("the native log").contains("ptorun_log_pending", "ptorun_log_next");
    }

    @ParameterizedTest
    @MethodSource("variants")
    void shipsTheContractOfDeviceModel(Variant variant) {
        PipelineContract c = HostRuntime.load(variant).contract();
        boolean a5trb = variant.arch() == Variant.Arch.A5 && variant.runtime() == Variant.RuntimeKind.TRB;
        assertThat(c.pipelineDepth()).isEqualTo(a5trb ? 1 : 2);
        if (a5trb) {
            assertThat(c.resources()).isEmpty();
        } else if (variant.runtime() == Variant.RuntimeKind.HBG) {
            assertThat(c.resources()).hasSize(5);
            assertThat(c.bankOfSlot(1)).as("hbg: bank = slot").isEqualTo(1);
        } else {
            assertThat(c.resources()).hasSize(6);
            assertThat(c.bankOfSlot(1)).as("trb: every slot on bank 0").isZero();
        }
    }

    @Test
    void javaBindsExactlyTheFunctionsTheHeaderExports() throws Exception {
        assertThat(headerExports()).hasSizeGreaterThan(25).contains("simpler_prepare_run", "ptorun_log_next");
        assertThat(NativeApi.SYMBOLS).containsExactlyInAnyOrderElementsOf(headerExports());
        assertThat(NativeApi.SYMBOLS).as("outside the contract, so an exact check refuses them")
                .doesNotContainAnyElementsOf(REMOVED_SETTERS);
    }

    /** A PTO_EXPORT declaration: the identifier before the first parenthesis. */
    private static final Pattern EXPORT = Pattern.compile("PTO_EXPORT\\s[^;(]*?(\\w+)\\s*\\(");

    /** The functions include/ptorun/pto_runtime_c_api.h declares PTO_EXPORT. */
    static Set<String> headerExports() throws IOException {
        Path header = Path.of(System.getProperty("ptorun.includeDir", "src/main/c/include"), "ptorun",
                "pto_runtime_c_api.h");
        Set<String> names = new TreeSet<>();
        Matcher m = EXPORT.matcher(Files.readString(header));
        while (m.find()) {
            names.add(m.group(1));
        }
        return names;
    }

    @Test
    void aMissingLibraryFailsWithAnActionableMessage() {
        assertThatThrownBy(() -> LibraryLoader.load("ptorun_nowhere", "libptorun_nowhere.so"))
                .isInstanceOf(LibraryLoadException.class)
                .hasMessageContaining("libptorun_nowhere.so")
                .hasMessageContaining("linux-x86-64/libptorun_nowhere.so")
                .hasMessageContaining("-Djna.debug_load=true");
    }

    @Test
    void aLibraryWithoutTheContractIsRefused() {
        assertThatThrownBy(() -> LibraryLoader.load("m", "libm.so"))
                .isInstanceOf(LibraryLoadException.class)
                .hasMessageContaining("does not export the whole ptorun contract");
    }

    static Path libDir() {
        Path dir = Path.of(System.getProperty("ptorun.libDir", "target/classes/linux-x86-64"));
        assertThat(Files.isDirectory(dir)).as("library dir " + dir).isTrue();
        return dir;
    }
}

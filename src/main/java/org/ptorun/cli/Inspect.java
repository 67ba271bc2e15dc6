package org.ptorun.cli;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.URL;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.TreeSet;
import org.ptorun.HostRuntime;
import org.ptorun.LibraryLoadException;
import org.ptorun.PipelineContract;
import org.ptorun.Variant;
import org.ptorun.internal.ElfSymbols;
import org.ptorun.internal.EmulatedDriverLibrary;
import org.ptorun.internal.LibraryLoader;
import org.ptorun.internal.NativeApi;
import org.ptorun.internal.NativeFolder;

/**
 * {@code ptorun inspect}: what each library is — where it was loaded from, whether the
 * symbols its ELF dynamic symbol table exports are exactly the contract, how many runs a
 * chip of it holds at once, its run storage shape, the device images a chip of its arch is
 * opened with, and the driver an onboard library loads.
 */
final class Inspect {

    private Inspect() {
    }

    /** What was found about one library; {@code problems} empty when it is sound. */
    record Report(Variant variant, ObjectNode json, List<String> problems) {
    }

    static int run(List<Variant> variants, boolean json, PrintWriter out, PrintWriter err) {
        Progress progress = new Progress(err, "inspect");
        List<Report> reports = new ArrayList<>();
        for (Variant v : variants) {
            reports.add(inspect(v));
            progress.update(reports.size(), variants.size(), "libraries");
        }
        boolean sound = reports.stream().allMatch(r -> r.problems().isEmpty());
        if (json) {
            ObjectNode doc = Json.object();
            doc.put("ok", sound);
            ArrayNode libs = doc.putArray("libraries");
            reports.forEach(r -> libs.add(r.json()));
            Json.print(out, doc);
        } else {
            for (Report r : reports) {
                printText(r, out);
            }
            out.flush();
        }
        for (Report r : reports) {
            for (String p : r.problems()) {
                err.println("ptorun inspect: " + r.variant() + ": " + p);
            }
        }
        err.flush();
        return sound ? 0 : Main.FAILURE;
    }

    static Report inspect(Variant variant) {
        ObjectNode o = Json.object();
        List<String> problems = new ArrayList<>();
        o.put("variant", variant.toString());
        o.put("arch", lower(variant.arch()));
        o.put("platform", lower(variant.platform()));
        o.put("runtime", lower(variant.runtime()));
        String resource = LibraryLoader.resourcePath(variant.libraryFileName());
        ObjectNode lib = o.putObject("library");
        lib.put("fileName", variant.libraryFileName());
        lib.put("resource", resource);
        HostRuntime runtime;
        try {
            runtime = HostRuntime.load(variant);
        } catch (LibraryLoadException e) {
            o.put("loaded", false);
            o.put("error", e.getMessage());
            problems.add("does not load: " + e.getMessage());
            return new Report(variant, o, problems);
        }
        o.put("loaded", true);
        origin(lib, resource, runtime.libraryFile());

        ObjectNode symbols = o.putObject("symbols");
        Set<String> exported = exportedSymbols(runtime, resource, symbols, problems);
        if (exported != null) {
            Set<String> missing = new TreeSet<>(NativeApi.SYMBOLS);
            missing.removeAll(exported);
            Set<String> extra = new TreeSet<>(exported);
            extra.removeAll(NativeApi.SYMBOLS);
            symbols.put("exactlyTheContract", missing.isEmpty() && extra.isEmpty());
            symbols.put("contractSize", NativeApi.SYMBOLS.size());
            exported.forEach(symbols.putArray("exported")::add);
            missing.forEach(symbols.putArray("missing")::add);
            extra.forEach(symbols.putArray("unexpected")::add);
            if (!missing.isEmpty()) {
                problems.add("does not export " + missing);
            }
            if (!extra.isEmpty()) {
                problems.add("exports symbols outside the contract: " + extra);
            }
        }

        PipelineContract c = runtime.contract();
        ObjectNode contract = o.putObject("pipelineContract");
        contract.put("abiVersion", c.abiVersion());
        contract.put("pipelineDepth", c.pipelineDepth());
        ArrayNode resources = contract.putArray("resources");
        for (PipelineContract.Resource r : c.resources()) {
            ObjectNode ro = resources.addObject();
            ro.put("kind", r.kind().name());
            ro.put("class", r.resourceClass().name());
            ro.put("copies", c.copyCount(r.resourceClass()));
        }
        ArrayNode banks = contract.putArray("bankOfSlot");
        for (int slot = 0; slot < c.pipelineDepth(); slot++) {
            banks.add(c.bankOfSlot(slot));
        }
        contract.put("text", c.toString());
        try {
            boolean concurrent = runtime.supportsOverlap();
            contract.put("overlap", concurrent);
            contract.put("runsInFlight", concurrent ? c.pipelineDepth() : 1);
            contract.put("words", inFlight(c.pipelineDepth(), concurrent));
        } catch (RuntimeException e) {
            problems.add("cannot tell whether it prepares a run while another executes: " + e.getMessage());
        }

        ObjectNode storage = o.putObject("runStorage");
        storage.put("size", runtime.runStorageSize());
        storage.put("alignment", runtime.runStorageAlignment());

        ObjectNode images = o.putObject("deviceImages");
        String arch = lower(variant.arch());
        image(images, "aicpu", "libptorun_aicpu_" + arch + ".so", problems);
        image(images, "aicore", "libptorun_aicore_" + arch + ".so", problems);

        ObjectNode driver = o.putObject("driver");
        if (variant.platform() == Variant.Platform.SIM) {
            driver.put("kind", "none");
            driver.put("note", "the sim platform emulates the chip in this process");
        } else {
            EmulatedDriverLibrary.Location at = EmulatedDriverLibrary.locate(runtime.libraryFile());
            driver.put("kind", switch (at.origin()) {
                case PROPERTY -> "ptorun.driver";
                case ENVIRONMENT -> "PTORUN_DRIVER";
                case BUNDLED -> "bundled";
            });
            driver.put("path", at.path());
            driver.put("origin", at.origin().toString());
            if (at.origin() == EmulatedDriverLibrary.Origin.PROPERTY) {
                driver.put("pinned", NativeFolder.pinnedDriver());
            }
            boolean present = !at.path().contains("/") || Files.isRegularFile(Path.of(at.path()));
            driver.put("present", present);
            if (!present) {
                problems.add("its driver " + at.path() + " (" + at.origin() + ") is missing: no chip can open");
            }
        }
        return new Report(variant, o, problems);
    }

    /** The library's defined dynamic symbols: from its file, else (deleted after load) from its resource. */
    private static Set<String> exportedSymbols(HostRuntime runtime, String resource, ObjectNode symbols,
                                               List<String> problems) {
        Path file = runtime.libraryFile();
        try {
            if (Files.isRegularFile(file)) {
                return ElfSymbols.definedGlobals(file);
            }
            try (InputStream in = Inspect.class.getClassLoader().getResourceAsStream(resource)) {
                if (in == null) {
                    problems.add("cannot read its symbols: " + file + " is gone and " + resource
                            + " is not on the classpath");
                    return null;
                }
                return ElfSymbols.definedGlobals(in.readAllBytes(), resource);
            }
        } catch (IOException e) {
            problems.add("cannot read its symbols: " + e.getMessage());
            return null;
        }
    }

    private static void image(ObjectNode images, String key, String fileName, List<String> problems) {
        String resource = LibraryLoader.resourcePath(fileName);
        ObjectNode o = images.putObject(key);
        o.put("resource", resource);
        try (InputStream in = Inspect.class.getClassLoader().getResourceAsStream(resource)) {
            if (in == null) {
                o.put("present", false);
                problems.add("device image " + resource + " is not on the classpath");
            } else {
                o.put("present", true);
                o.put("bytes", in.readAllBytes().length);
            }
        } catch (IOException e) {
            o.put("present", false);
            problems.add("cannot read device image " + resource + ": " + e.getMessage());
        }
    }

    /**
     * Where the library came from: {@code origin} "jar" (extracted from a jar on the class
     * path into the process's private folder), "directory" (loaded in place from a directory
     * on the class path) or "library path" (no resource: found by JNA on
     * {@code jna.library.path} or the system's), {@code from} the jar, directory or file, and
     * {@code file} the file the dynamic loader opened (for a jar, a temporary copy deleted when
     * the JVM exits).
     */
    private static void origin(ObjectNode lib, String resource, Path file) {
        URL url = Inspect.class.getClassLoader().getResource(resource);
        String origin;
        String from;
        if (url == null) {
            origin = "library path";
            from = file.toString();
        } else if ("jar".equals(url.getProtocol())) {
            origin = "jar";
            String spec = url.getPath(); // file:/…/x.jar!/linux-x86-64/…
            int bang = spec.indexOf("!/");
            from = spec.substring(0, bang < 0 ? spec.length() : bang);
            try {
                from = Path.of(new URI(from)).toString();
            } catch (URISyntaxException | IllegalArgumentException e) {
                // keep the URL's text
            }
        } else if ("file".equals(url.getProtocol())) {
            origin = "directory";
            try {
                Path at = Path.of(url.toURI());
                Path dir = at;
                for (int i = 0; i < Path.of(resource).getNameCount() && dir != null; i++) {
                    dir = dir.getParent();
                }
                from = dir == null ? at.toString() : dir.toString();
            } catch (URISyntaxException | IllegalArgumentException e) {
                from = url.toString();
            }
        } else {
            origin = url.getProtocol();
            from = url.toString();
        }
        lib.put("origin", origin);
        lib.put("from", from);
        lib.put("file", file.toString());
    }

    /** How many runs a chip of the library holds at once, in words. */
    static String inFlight(int depth, boolean overlap) {
        if (overlap) {
            return depth + " runs at most: the next run is prepared while one executes";
        }
        return depth > 1 ? "1 run: this library does not prepare a run while another executes"
                : "1 run: the library's pipeline has depth 1";
    }

    private static void printText(Report r, PrintWriter out) {
        ObjectNode o = r.json();
        out.println(r.variant());
        ObjectNode lib = (ObjectNode) o.get("library");
        if (!o.get("loaded").asBoolean()) {
            out.printf("  library       %s: DOES NOT LOAD: %s%n", lib.get("fileName").asText(), o.get("error").asText());
            return;
        }
        String origin = lib.get("origin").asText();
        out.printf("  library       %s%n", switch (origin) {
            case "jar" -> lib.get("fileName").asText() + " from the jar " + lib.get("from").asText();
            case "directory" -> lib.get("fileName").asText() + " from the directory " + lib.get("from").asText()
                    + " (loaded in place)";
            case "library path" -> lib.get("from").asText() + " (not on the class path: found on the library path)";
            default -> lib.get("fileName").asText() + " from " + lib.get("from").asText();
        });
        ObjectNode s = (ObjectNode) o.get("symbols");
        if (s.has("exported")) {
            out.printf(Locale.ROOT, "  contract      %s%n", s.get("exactlyTheContract").asBoolean()
                    ? "ok, " + s.get("contractSize").asInt() + " functions"
                    : "BROKEN: missing " + s.get("missing") + ", unexpected " + s.get("unexpected") + " (of "
                            + s.get("contractSize").asInt() + " functions)");
        } else {
            out.printf("  contract      NOT CHECKED: its symbols could not be read%n");
        }
        ObjectNode c = (ObjectNode) o.get("pipelineContract");
        if (c.has("words")) {
            out.printf("  in flight     %s%n", c.get("words").asText());
        }
        ObjectNode st = (ObjectNode) o.get("runStorage");
        out.printf(Locale.ROOT, "  run storage   %,d B per run, aligned to %d B (off-heap, owned by the caller)%n",
                st.get("size").asLong(), st.get("alignment").asLong());
        ObjectNode images = (ObjectNode) o.get("deviceImages");
        for (String key : List.of("aicpu", "aicore")) {
            ObjectNode im = (ObjectNode) images.get(key);
            out.printf(Locale.ROOT, "  %-13s %s%s%n", key + " image", im.get("resource").asText(),
                    im.get("present").asBoolean() ? String.format(Locale.ROOT, ", %,d B", im.get("bytes").asLong())
                            : " MISSING");
        }
        ObjectNode d = (ObjectNode) o.get("driver");
        if (d.has("path")) {
            String missing = d.get("present").asBoolean() ? "" : " MISSING: no chip can open";
            out.printf("  driver        %s%s%n", switch (d.get("kind").asText()) {
                case "bundled" -> "the emulated driver bundled with ptorun (" + EmulatedDriverLibrary.BUNDLED_FILE_NAME
                        + ", next to the library)";
                case "ptorun.driver" -> d.get("pinned").asText() + " (-D" + NativeFolder.DRIVER_PROPERTY + ")";
                default -> d.get("path").asText() + " (" + d.get("origin").asText() + ")";
            }, missing);
        } else {
            out.printf("  driver        none: %s%n", d.get("note").asText());
        }
    }

    private static String lower(Enum<?> e) {
        return e.name().toLowerCase(Locale.ROOT);
    }
}

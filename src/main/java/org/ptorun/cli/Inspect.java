package org.ptorun.cli;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
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

/**
 * {@code ptorun inspect}: what each library is — its file, the symbols its ELF dynamic
 * symbol table exports against the contract (and the absence of the four ambient-selection
 * setters the design removed), its admitted pipeline contract, run storage shape, the device
 * images a chip of its arch is opened with, and the driver an onboard library loads.
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
        lib.put("file", runtime.libraryFile().toString());

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
            ObjectNode removed = o.putObject("removedSetters");
            for (String setter : NativeApi.FORBIDDEN_SYMBOLS) {
                boolean present = exported.contains(setter);
                removed.put(setter, present ? "PRESENT" : "absent");
                if (present) {
                    problems.add("exports the removed setter " + setter);
                }
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
            driver.put("note", "the sim platform runs the device in-process");
        } else {
            EmulatedDriverLibrary.Location at = EmulatedDriverLibrary.locate(runtime.libraryFile());
            driver.put("kind", switch (at.origin()) {
                case PROPERTY -> "ptorun.driver";
                case ENVIRONMENT -> "PTORUN_DRIVER";
                case BUNDLED -> "bundled";
            });
            driver.put("path", at.path());
            driver.put("origin", at.origin().toString());
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
                symbols.put("readFrom", file.toString());
                return ElfSymbols.definedGlobals(file);
            }
            try (InputStream in = Inspect.class.getClassLoader().getResourceAsStream(resource)) {
                if (in == null) {
                    problems.add("cannot read its symbols: " + file + " is gone and " + resource
                            + " is not on the classpath");
                    return null;
                }
                symbols.put("readFrom", "classpath:" + resource);
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

    private static void printText(Report r, PrintWriter out) {
        ObjectNode o = r.json();
        out.println(r.variant());
        ObjectNode lib = (ObjectNode) o.get("library");
        if (!o.get("loaded").asBoolean()) {
            out.printf("  library         %s: DOES NOT LOAD: %s%n", lib.get("fileName").asText(), o.get("error").asText());
            return;
        }
        out.printf("  library         %s (%s)%n", lib.get("file").asText(), lib.get("fileName").asText());
        ObjectNode s = (ObjectNode) o.get("symbols");
        if (s.has("exported")) {
            out.printf(Locale.ROOT, "  symbols         %d exported, %s%n", s.get("exported").size(),
                    s.get("exactlyTheContract").asBoolean() ? "exactly the contract"
                            : "NOT the contract: missing " + s.get("missing") + ", unexpected " + s.get("unexpected"));
            StringBuilder removed = new StringBuilder();
            o.get("removedSetters").fields().forEachRemaining(e -> removed.append(removed.length() == 0 ? "" : ", ")
                    .append(e.getKey()).append(' ').append(e.getValue().asText()));
            out.printf("  removed setters %s%n", removed);
        }
        ObjectNode c = (ObjectNode) o.get("pipelineContract");
        out.printf("  contract        abi %d, %s, bank(slot)=%s%n", c.get("abiVersion").asInt(), c.get("text").asText(),
                c.get("bankOfSlot"));
        ObjectNode st = (ObjectNode) o.get("runStorage");
        out.printf(Locale.ROOT, "  run storage     %d B, aligned %d%n", st.get("size").asLong(),
                st.get("alignment").asLong());
        ObjectNode images = (ObjectNode) o.get("deviceImages");
        for (String key : List.of("aicpu", "aicore")) {
            ObjectNode im = (ObjectNode) images.get(key);
            out.printf("  %-15s %s%s%n", key + " image", im.get("resource").asText(),
                    im.get("present").asBoolean() ? " (" + im.get("bytes").asLong() + " B)" : " MISSING");
        }
        ObjectNode d = (ObjectNode) o.get("driver");
        if (d.has("path")) {
            out.printf("  driver          %s (%s)%s%n", d.get("path").asText(), d.get("origin").asText(),
                    d.get("present").asBoolean() ? "" : " MISSING");
        } else {
            out.printf("  driver          none: %s%n", d.get("note").asText());
        }
    }

    private static String lower(Enum<?> e) {
        return e.name().toLowerCase(Locale.ROOT);
    }
}

package org.ptorun.cli;

import java.io.PrintStream;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import org.ptorun.Variant;
import picocli.CommandLine;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * The ptorun command line (docs/cli.md).
 *
 * <pre>
 * ptorun demo [--variant V] [--runs N] [--trace FILE]
 *                                            the vector chain on a chip, pipelined; --trace: the last
 *                                            run's Chrome/Perfetto trace to FILE
 * ptorun inspect [--variant V ... | --all] [--json]
 *                                            where each library came from, contract ok, runs in flight, run
 *                                            storage, device images, driver
 * ptorun bench [--variant V] [--runs N] [--worker] [--json]
 *                                            p50/p90/p99 of one trivial run's full cycle through ChipWorker;
 *                                            --worker: runs/s through a background Worker against that loop
 * ptorun idle [V ...]                        CPU a ChipWorker burns while it has no run (should be ~0)
 * ptorun replay FILE [--variant V] [--against V2] [--trace FILE]
 *                                            reruns a captured run (docs/replay.md): the same failure, or
 *                                            the same outputs; --against: compares two variants' outputs
 * </pre>
 *
 * Exit codes: 0 ok, 1 a failure (a library that does not load or breaks its contract, a
 * run that fails or computes a wrong result), 2 a usage error. Progress of long commands
 * goes to stderr, results to stdout.
 */
@Command(name = "ptorun", mixinStandardHelpOptions = true, versionProvider = Main.Version.class,
        description = "Drives accelerator chips through native runs: the demo, a look at the eight "
                + "host-runtime libraries, a quick benchmark.",
        subcommands = {Main.DemoCommand.class, Main.InspectCommand.class, Main.BenchCommand.class,
            Main.IdleCommand.class, Main.ReplayCommand.class, CommandLine.HelpCommand.class},
        exitCodeListHeading = "%nExit codes:%n",
        exitCodeList = {"0:ok", "1:failure: a library does not load or breaks its contract, a run fails or is wrong,"
                + " a replay does not match its capture",
            "2:usage: unknown command or option, bad value"},
        footer = {"", "Variants: a2a3|a5 / sim|onboard / hbg|trb, e.g. a2a3/sim/hbg (the default)."})
public final class Main implements Callable<Integer> {

    /** Exit code of a failure. */
    public static final int FAILURE = 1;
    /** Exit code of a usage error. */
    public static final int USAGE = 2;

    @Spec
    CommandSpec spec;

    public static void main(String[] args) {
        int rc = execute(args, new PrintWriter(System.out, true, StandardCharsets.UTF_8),
                new PrintWriter(System.err, true, StandardCharsets.UTF_8));
        System.exit(rc);
    }

    /** Runs the command line in this JVM: the exit code. */
    static int execute(String[] args, PrintWriter out, PrintWriter err) {
        CommandLine cmd = commandLine();
        cmd.setOut(out);
        cmd.setErr(err);
        int rc = cmd.execute(args);
        out.flush();
        err.flush();
        return rc;
    }

    /** The same, to {@link PrintStream}s. */
    static int execute(String[] args, PrintStream out, PrintStream err) {
        return execute(args, new PrintWriter(out, true, StandardCharsets.UTF_8),
                new PrintWriter(err, true, StandardCharsets.UTF_8));
    }

    static CommandLine commandLine() {
        CommandLine cmd = new CommandLine(new Main());
        cmd.setExecutionExceptionHandler((e, line, parsed) -> {
            line.getErr().println("ptorun " + line.getCommandName() + ": " + describe(e));
            if (Boolean.getBoolean("ptorun.stacktrace")) {
                e.printStackTrace(line.getErr());
            }
            return FAILURE;
        });
        return cmd;
    }

    static String describe(Throwable e) {
        StringBuilder sb = new StringBuilder(e.getClass().getSimpleName()).append(": ").append(e.getMessage());
        for (Throwable c = e.getCause(); c != null && c != c.getCause(); c = c.getCause()) {
            sb.append("; caused by ").append(c.getClass().getSimpleName()).append(": ").append(c.getMessage());
        }
        return sb.toString();
    }

    /** No subcommand: the usage, on stderr, and exit code 2. */
    @Override
    public Integer call() {
        spec.commandLine().getErr().println("ptorun: a command is required");
        spec.commandLine().usage(spec.commandLine().getErr());
        return USAGE;
    }

    /** {@code value} when it is at least {@code min}; else a usage error found while parsing. */
    static int atLeast(CommandSpec spec, String option, int value, int min) {
        if (value < min) {
            throw new CommandLine.ParameterException(spec.commandLine(), option + " must be >= " + min + ", got "
                    + value);
        }
        return value;
    }

    /** Parses a variant for picocli; a bad one is a usage error. */
    static final class VariantConverter implements CommandLine.ITypeConverter<Variant> {
        @Override
        public Variant convert(String value) {
            try {
                return Variant.parse(value);
            } catch (IllegalArgumentException e) {
                throw new CommandLine.TypeConversionException(e.getMessage());
            }
        }
    }

    /** The jar's Implementation-Version. */
    static final class Version implements CommandLine.IVersionProvider {
        @Override
        public String[] getVersion() {
            String v = Main.class.getPackage().getImplementationVersion();
            return new String[] {"ptorun " + (v == null ? "(development build)" : v),
                "Java " + System.getProperty("java.version") + " on " + System.getProperty("os.name") + " "
                        + System.getProperty("os.arch")};
        }
    }

    @Command(name = "demo", mixinStandardHelpOptions = true,
            description = "Runs the vector chain f = (a+b+1)*(a+b+2)+(a+b) as five dependent tasks, the next run "
                    + "prepared while the current one executes, every result checked against plain Java.")
    static final class DemoCommand implements Callable<Integer> {
        @Spec
        CommandSpec spec;

        @Option(names = {"-v", "--variant"}, converter = VariantConverter.class, paramLabel = "V",
                description = "the library (default: ${DEFAULT-VALUE})", defaultValue = "a2a3/sim/hbg")
        Variant variant;

        int runs;

        @Option(names = {"-n", "--runs"}, paramLabel = "N", defaultValue = "6",
                description = "runs of the chain, >= 1 (default: ${DEFAULT-VALUE})")
        void runs(int n) {
            runs = atLeast(spec, "--runs", n, 1);
        }

        @Option(names = "--trace", paramLabel = "FILE",
                description = "write the last run's Chrome/Perfetto trace (CallConfig.enableTrace) to FILE; open it "
                        + "in ui.perfetto.dev or chrome://tracing")
        java.nio.file.Path trace;

        @Override
        public Integer call() throws java.io.IOException {
            return Demo.run(variant, runs, trace, spec.commandLine().getOut(), spec.commandLine().getErr());
        }
    }

    @Command(name = "inspect", mixinStandardHelpOptions = true,
            description = "Loads libraries and shows, for each: where it came from, whether it exports exactly the "
                    + "functions of the contract, how many runs a chip of it holds at once, its run storage, the "
                    + "device images and, onboard, the driver it uses. Exit 1 if one does not load or breaks the "
                    + "contract.")
    static final class InspectCommand implements Callable<Integer> {
        @Spec
        CommandSpec spec;

        static final class Selection {
            @Option(names = {"-v", "--variant"}, converter = VariantConverter.class, paramLabel = "V",
                    description = "a library (repeatable; default a2a3/sim/hbg)")
            List<Variant> variants = new ArrayList<>();

            @Option(names = {"-a", "--all"}, description = "all eight libraries")
            boolean all;
        }

        @ArgGroup(exclusive = true, multiplicity = "0..1")
        Selection selection;

        @Option(names = "--json", description = "one JSON document on stdout")
        boolean json;

        @Override
        public Integer call() {
            List<Variant> selected = selection == null ? List.of(Variant.DEFAULT)
                    : selection.all ? Variant.all() : selection.variants;
            return Inspect.run(selected, json, spec.commandLine().getOut(), spec.commandLine().getErr());
        }
    }

    @Command(name = "bench", mixinStandardHelpOptions = true,
            description = "A quick look at one trivial run's cost (one noop task): the full cycle prepare, launch, "
                    + "poll/await, finalize through ChipWorker, p50/p90/p99 after a warm-up, with a Java "
                    + "park/unpark round trip for scale. The benchmark suite proper is `mvn -q -Pbench verify`.")
    static final class BenchCommand implements Callable<Integer> {
        @Spec
        CommandSpec spec;

        @Option(names = {"-v", "--variant"}, converter = VariantConverter.class, paramLabel = "V",
                description = "the library (default: ${DEFAULT-VALUE})", defaultValue = "a2a3/sim/hbg")
        Variant variant;

        int runs;

        @Option(names = {"-n", "--runs"}, paramLabel = "N", defaultValue = "20000",
                description = "measured runs, >= 100 (default: ${DEFAULT-VALUE}; plus a warm-up of a fifth, "
                        + ">= 1000)")
        void runs(int n) {
            runs = atLeast(spec, "--runs", n, 100);
        }

        @Option(names = "--json", description = "one JSON document on stdout")
        boolean json;

        @Option(names = "--worker", description = "one run at a time through a background Worker against the "
                + "bare ChipWorker loop: runs/s, voluntary context switches per run, their ratio (P9)")
        boolean worker;

        @Override
        public Integer call() {
            if (worker) {
                return Bench.runWorker(variant, runs, json, spec.commandLine().getOut(),
                        spec.commandLine().getErr());
            }
            return Bench.run(variant, runs, json, spec.commandLine().getOut(), spec.commandLine().getErr());
        }
    }

    @Command(name = "idle", mixinStandardHelpOptions = true,
            description = "The process CPU an open, idle ChipWorker costs over two seconds, per library "
                    + "(benchmark P7; should be ~0).")
    static final class IdleCommand implements Callable<Integer> {
        @Spec
        CommandSpec spec;

        @Parameters(paramLabel = "V", arity = "0..*", converter = VariantConverter.class,
                description = "libraries (default: all eight)")
        List<Variant> variants = new ArrayList<>();

        @Override
        public Integer call() {
            return Bench.idle(variants.isEmpty() ? Variant.all() : variants, spec.commandLine().getOut(),
                    spec.commandLine().getErr());
        }
    }

    @Command(name = "replay", mixinStandardHelpOptions = true,
            description = "Reruns a captured run (a .ptocap file: RunCapture, Worker.Builder.captureFailures) on a "
                    + "library, without the service that ran it, and says whether it matches the capture: the same "
                    + "failure (exception class and code), or outputs equal bit for bit (the first differing "
                    + "element otherwise). Exit 0 when it matches, 1 when not.")
    static final class ReplayCommand implements Callable<Integer> {
        @Spec
        CommandSpec spec;

        @Parameters(index = "0", paramLabel = "FILE", description = "the capture file")
        java.nio.file.Path file;

        @Option(names = {"-v", "--variant"}, converter = VariantConverter.class, paramLabel = "V",
                description = "the library to replay on (default: the captured one)")
        Variant variant;

        @Option(names = "--against", converter = VariantConverter.class, paramLabel = "V2",
                description = "run on V and on V2 and compare V2's outputs (or failure) with V's")
        Variant against;

        @Option(names = "--trace", paramLabel = "FILE",
                description = "write the replay's Chrome/Perfetto trace (CallConfig.enableTrace) to FILE; a trace is "
                        + "written only when the run succeeds")
        java.nio.file.Path trace;

        @Override
        public Integer call() throws java.io.IOException {
            if (trace != null && against != null) {
                throw new CommandLine.ParameterException(spec.commandLine(), "--trace and --against are exclusive");
            }
            return Replay.run(file, variant, against, trace, spec.commandLine().getOut());
        }
    }
}

package org.ptorun;

import static org.ptorun.callable.Direction.IN;
import static org.ptorun.callable.Direction.OUT;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.ptorun.callable.ChipCallable;
import org.ptorun.callable.Kernel;
import org.ptorun.callable.Param;
import org.ptorun.callable.Program;
import org.ptorun.worker.RunTicket;
import org.ptorun.worker.Worker;

/**
 * The program {@link CleanExitE2ETest} starts in a child JVM: a user's first program — a
 * vector add on a {@link ChipWorker}, then one through a background {@link Worker} — on
 * the public API only. {@code main} returns; nothing calls {@code System.exit}.
 *
 * <ul>
 *   <li>{@code plain <variant>}: closes everything and prints {@code closed-at <epoch ms>}
 *       right after the last close;</li>
 *   <li>{@code exec <variant>}: runs the program as {@code mvn exec:java} does — on a
 *       thread of a thread group of its own — leaving the Worker and an acceptance word
 *       open (so the leak net's and the dispatcher's threads are alive), then does what
 *       exec:java does next: interrupts every thread of the group and joins it, at most
 *       10 s in all (exec:java waits 15 s). Prints {@code group-threads <names>} (what it
 *       found) and {@code lingering <names>} (what outlived the join), or
 *       {@code lingering none}.</li>
 * </ul>
 */
public final class CleanExitMain {

    private static final int N = 1024;
    private static final int ADD = 7;
    /** exec mode: what the program leaves open, as a careless program would. */
    private static final List<AutoCloseable> LEFT_OPEN = new ArrayList<>();

    private CleanExitMain() {
    }

    public static void main(String[] args) throws Exception {
        Variant variant = Variant.parse(args[1]);
        switch (args[0]) {
            case "plain" -> program(variant, true);
            case "exec" -> likeExecJava(variant);
            default -> throw new IllegalArgumentException("plain|exec, not " + args[0]);
        }
    }

    private static void program(Variant variant, boolean closeAll) throws Exception {
        HostRuntime runtime = HostRuntime.load(variant);
        ChipCallable add = ChipCallable.builder()
                .signature(IN, IN, OUT)
                .child(0, Kernel.vadd())
                .program(Program.builder()
                        .submit(0, Param.tensor(0, IN, 0, 4L * N), Param.tensor(1, IN, 0, 4L * N),
                                Param.tensor(2, OUT, 0, 4L * N))
                        .build())
                .build();
        try (ChipWorker chip = ChipWorker.open(runtime, 0)) {
            chip.registerCallable(ADD, add);
            float[] c = new float[N];
            chip.run(ADD, args(c), CallConfig.DEFAULT);
            check(c);
        }
        Worker worker = Worker.builder().runtime(runtime).background(true).build();
        worker.register(ADD, add).get(60, TimeUnit.SECONDS);
        float[] c = new float[N];
        RunTicket ticket = worker.enqueue(ADD, args(c), CallConfig.DEFAULT);
        ticket.result().get(60, TimeUnit.SECONDS);
        check(c);
        if (closeAll) {
            worker.close();
            System.out.println("closed-at " + System.currentTimeMillis());
        } else {
            LEFT_OPEN.add(worker);
            LEFT_OPEN.add(AcceptanceWord.allocate());
        }
    }

    private static TaskArgs args(float[] c) {
        float[] a = new float[N];
        float[] b = new float[N];
        for (int i = 0; i < N; i++) {
            a[i] = i;
            b[i] = 2 * i;
        }
        return TaskArgs.of(Tensor.of(a), Tensor.of(b), Tensor.of(c));
    }

    private static void check(float[] c) {
        for (int i = 0; i < N; i++) {
            if (c[i] != 3 * i) {
                throw new AssertionError("c[" + i + "] = " + c[i] + ", expected " + 3 * i);
            }
        }
    }

    private static void likeExecJava(Variant variant) throws Exception {
        ThreadGroup group = new ThreadGroup("exec-like");
        Throwable[] failure = new Throwable[1];
        Thread app = new Thread(group, () -> {
            try {
                program(variant, false);
            } catch (Throwable e) {
                failure[0] = e;
            }
        }, "exec-like-main");
        app.start();
        app.join();
        if (failure[0] != null) {
            throw new AssertionError("the program failed", failure[0]);
        }
        System.out.println("group-threads " + names(alive(group)));
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        List<Thread> lingering = new ArrayList<>();
        for (List<Thread> threads = alive(group); !threads.isEmpty(); threads = alive(group)) {
            threads.removeAll(lingering);
            if (threads.isEmpty()) {
                break;
            }
            threads.forEach(Thread::interrupt);
            for (Thread t : threads) {
                long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
                if (left > 0) {
                    t.join(left);
                }
                if (t.isAlive()) {
                    lingering.add(t);
                }
            }
        }
        System.out.println("lingering " + (lingering.isEmpty() ? "none" : names(lingering)));
    }

    /** The live threads of {@code group} and its subgroups. */
    static List<Thread> alive(ThreadGroup group) {
        Thread[] threads = new Thread[group.activeCount() + 16];
        int n = group.enumerate(threads, true);
        List<Thread> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            if (threads[i].isAlive()) {
                out.add(threads[i]);
            }
        }
        return out;
    }

    private static String names(List<Thread> threads) {
        List<String> names = new ArrayList<>();
        for (Thread t : threads) {
            names.add(t.getName());
        }
        return String.join(",", names);
    }
}

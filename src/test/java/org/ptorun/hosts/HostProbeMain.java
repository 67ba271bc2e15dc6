package org.ptorun.hosts;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The probes {@link NetnsHostsTest} runs in its hosts. Each prints what it did on standard
 * output; exit status 0 when the probe saw what it looks for, 2 when not (the reason on
 * standard error).
 *
 * <ul>
 *   <li>{@code listen <address>}: listens on an ephemeral port of {@code address}, prints
 *       {@code listening <port>}, then answers every connection's line {@code x} with
 *       {@code pong x <address>} until its standard input ends.
 *   <li>{@code connect <address> <port> <timeoutMs>}: connects (within the timeout), sends
 *       {@code ping}, prints the answer.
 *   <li>{@code shm-hold <name>}: creates /dev/shm/name, prints {@code created}, and keeps it
 *       (and its /dev/shm) until its standard input ends.
 *   <li>{@code shm-absent <name>}: status 0 when /dev/shm/name does not exist here.
 *   <li>{@code tcp-sink <address>}: listens on an ephemeral port of {@code address}, prints
 *       {@code listening <port>}, then reads every connection to its end and answers one byte,
 *       until its standard input ends (raw TCP bandwidth, P16).
 *   <li>{@code tcp-source <address> <port> <bytes> <transfers>}: {@code transfers} times, over a
 *       new connection each, writes {@code bytes} bytes, shuts its output and waits for the
 *       sink's byte; prints {@code sent bytes=<bytes> ns=<connect to the answer>} per transfer.
 * </ul>
 */
public final class HostProbeMain {

    private HostProbeMain() {
    }

    public static void main(String[] args) throws Exception {
        try {
            switch (args[0]) {
                case "listen" -> listen(args[1]);
                case "connect" -> connect(args[1], Integer.parseInt(args[2]), Integer.parseInt(args[3]));
                case "shm-hold" -> shmHold(args[1]);
                case "shm-absent" -> shmAbsent(args[1]);
                case "tcp-sink" -> tcpSink(args[1]);
                case "tcp-source" -> tcpSource(args[1], Integer.parseInt(args[2]), Long.parseLong(args[3]),
                        Integer.parseInt(args[4]));
                default -> throw new IllegalArgumentException("unknown probe " + args[0]);
            }
        } catch (Exception e) {
            System.err.println("probe " + String.join(" ", args) + " failed: " + e);
            System.exit(2);
        }
        System.exit(0);
    }

    private static void listen(String address) throws Exception {
        try (ServerSocket server = new ServerSocket()) {
            server.bind(new InetSocketAddress(InetAddress.getByName(address), 0));
            Thread serve = new Thread(() -> {
                while (true) {
                    try (Socket s = server.accept();
                         BufferedReader in = new BufferedReader(new InputStreamReader(s.getInputStream(),
                                 StandardCharsets.UTF_8));
                         PrintWriter out = new PrintWriter(s.getOutputStream(), true, StandardCharsets.UTF_8)) {
                        out.println("pong " + in.readLine() + " " + address);
                    } catch (Exception e) {
                        return; // the server socket closed
                    }
                }
            }, "listen");
            serve.setDaemon(true);
            serve.start();
            System.out.println("listening " + server.getLocalPort());
            System.out.flush();
            System.in.transferTo(java.io.OutputStream.nullOutputStream()); // until the test closes our input
        }
    }

    private static void connect(String address, int port, int timeoutMs) throws Exception {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress(InetAddress.getByName(address), port), timeoutMs);
            s.setSoTimeout(timeoutMs);
            PrintWriter out = new PrintWriter(s.getOutputStream(), true, StandardCharsets.UTF_8);
            BufferedReader in = new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.UTF_8));
            out.println("ping");
            System.out.println(in.readLine());
        }
    }

    private static void shmHold(String name) throws Exception {
        Path file = Path.of("/dev/shm", name);
        Files.writeString(file, "held");
        System.out.println("created " + file);
        System.out.flush();
        System.in.transferTo(java.io.OutputStream.nullOutputStream());
        Files.delete(file);
    }

    private static void shmAbsent(String name) {
        Path file = Path.of("/dev/shm", name);
        if (Files.exists(file)) {
            throw new IllegalStateException(file + " exists here");
        }
        System.out.println("absent " + file);
    }

    /** Bytes per read or write of the TCP probes: as a large collective's socket calls. */
    private static final int TCP_CHUNK = 4 << 20;

    private static void tcpSink(String address) throws Exception {
        try (java.nio.channels.ServerSocketChannel server = java.nio.channels.ServerSocketChannel.open()) {
            server.bind(new InetSocketAddress(InetAddress.getByName(address), 0));
            Thread serve = new Thread(() -> {
                java.nio.ByteBuffer buffer = java.nio.ByteBuffer.allocateDirect(TCP_CHUNK);
                while (true) {
                    try (java.nio.channels.SocketChannel s = server.accept()) {
                        while (s.read(buffer.clear()) >= 0) {
                            // discard
                        }
                        s.write(java.nio.ByteBuffer.wrap(new byte[] {1}));
                    } catch (Exception e) {
                        return; // the server socket closed
                    }
                }
            }, "tcp-sink");
            serve.setDaemon(true);
            serve.start();
            System.out.println("listening " + ((InetSocketAddress) server.getLocalAddress()).getPort());
            System.out.flush();
            System.in.transferTo(java.io.OutputStream.nullOutputStream()); // until the parent closes our input
        }
    }

    private static void tcpSource(String address, int port, long bytes, int transfers) throws Exception {
        java.nio.ByteBuffer buffer = java.nio.ByteBuffer.allocateDirect(TCP_CHUNK);
        for (int i = 0; i < buffer.capacity(); i++) {
            buffer.put(i, (byte) i);
        }
        for (int t = 0; t < transfers; t++) {
            long t0 = System.nanoTime();
            try (java.nio.channels.SocketChannel s = java.nio.channels.SocketChannel.open(
                    new InetSocketAddress(InetAddress.getByName(address), port))) {
                long left = bytes;
                while (left > 0) {
                    buffer.clear().limit((int) Math.min(buffer.capacity(), left));
                    while (buffer.hasRemaining()) {
                        left -= s.write(buffer);
                    }
                }
                s.shutdownOutput();
                java.nio.ByteBuffer ack = java.nio.ByteBuffer.allocate(1);
                while (ack.hasRemaining()) {
                    if (s.read(ack) < 0) {
                        throw new IllegalStateException("the sink closed without its answer");
                    }
                }
            }
            System.out.println("sent bytes=" + bytes + " ns=" + (System.nanoTime() - t0));
            System.out.flush();
        }
    }
}

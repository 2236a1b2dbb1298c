package io.rdmachannel.demo.bench;

import io.rdmachannel.channel.spi.RdmaProviders;

import java.io.EOFException;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.AsynchronousCloseException;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The benchmark's server, in the second JVM: it listens on each transport it is given, prints
 * {@code listen TRANSPORT ADDRESS} per transport and then {@code ready} on stdout, and serves each accepted
 * connection on a thread of its own as its {@link SessionHeader} asks. It answers requests on stdin (its JIT's
 * compilation time), and exits when its stdin reaches the end: the client closes it when done, or dies.
 */
final class BenchServer {
    static final String LISTEN = "listen";
    static final String READY = "ready";
    /** The request for the JIT's compilation time, see {@link #answer}. */
    static final String COMPILE_MILLIS = "compile-ms";
    private static final int BANDWIDTH_READ_BUFFER = 256 * 1024;

    private final AtomicLong sessions = new AtomicLong();

    private BenchServer() {
    }

    /**
     * The answer to a request on stdin: {@value #COMPILE_MILLIS} asks for this JVM's total JIT compilation time in
     * ms (-1 where it is not measured), so that the client can wait for both JVMs' compilers to go quiet.
     */
    private static String answer(final String request) {
        if (request.equals(COMPILE_MILLIS)) {
            final CompilationMXBean compiler = ManagementFactory.getCompilationMXBean();
            return Long.toString(compiler == null || !compiler.isCompilationTimeMonitoringSupported() ? -1
                : compiler.getTotalCompilationTime());
        }
        return "error: not a request: " + request;
    }

    /**
     * Serve until stdin ends.
     *
     * @param args a comma-separated list of transports, then optionally the IP address to listen on.
     */
    static void main(final String[] args) throws IOException {
        if (args.length != 1 && args.length != 2) {
            System.err.println("usage: BenchServer rdma,tcp,uds [ADDRESS] (started by BenchMain)");
            System.exit(2);
        }
        final InetAddress address = args.length == 2 ? InetAddress.ofLiteral(args[1]) : null;
        final List<Transport> transports = new ArrayList<>();
        for (final String label : args[0].split(",")) {
            transports.add(Transport.of(label));
        }
        final BenchServer server = new BenchServer();
        final Path socketDirectory = Files.createTempDirectory("rdmachannel-bench-");
        final List<ServerSocketChannel> listeners = new ArrayList<>();
        final PrintStream out = System.out;
        try {
            for (final Transport transport : transports) {
                final ServerSocketChannel listener = transport.listen(socketDirectory, address);
                listeners.add(listener);
                Thread.ofPlatform().daemon().name("bench-accept-" + transport.label())
                    .start(() -> server.accept(transport, listener));
                out.println(LISTEN + " " + transport.label() + " " + Transport.format(listener.getLocalAddress()));
            }
            out.println(READY + " pid " + ProcessHandle.current().pid() + (transports.contains(Transport.RDMA)
                ? " provider " + RdmaProviders.defaultProvider().name() : ""));
            out.flush();
            ServerProcess.serveRequests(out, BenchServer::answer);
        } finally {
            for (final ServerSocketChannel listener : listeners) {
                listener.close();
            }
            try (var files = Files.list(socketDirectory)) {
                for (final Path file : files.toList()) {
                    Files.deleteIfExists(file);
                }
            }
            Files.deleteIfExists(socketDirectory);
        }
        System.exit(0);
    }

    private void accept(final Transport transport, final ServerSocketChannel listener) {
        while (listener.isOpen()) {
            try {
                final SocketChannel channel = listener.accept();
                final long session = sessions.incrementAndGet();
                Thread.ofPlatform().daemon().name("bench-serve-" + transport.label() + "-" + session)
                    .start(() -> serve(session, channel));
            } catch (final AsynchronousCloseException ex) {
                return;
            } catch (final IOException | RuntimeException ex) {
                System.err.println("bench server: accept on " + transport.label() + " failed: " + ex);
                ex.printStackTrace();
                return;
            }
        }
    }

    private void serve(final long session, final SocketChannel channel) {
        SessionHeader header = null;
        try {
            if (channel.supportedOptions().contains(StandardSocketOptions.TCP_NODELAY)) {
                channel.setOption(StandardSocketOptions.TCP_NODELAY, true);
            }
            final ByteBuffer headerBuffer = ByteBuffer.allocate(SessionHeader.LENGTH);
            while (headerBuffer.hasRemaining()) {
                if (channel.read(headerBuffer) < 0) {
                    throw new EOFException("end of stream in the session header");
                }
            }
            header = SessionHeader.decode(headerBuffer.flip());
            try (MessageChannel messages = MessageChannel.of(channel, header.mode(), header.busyPollMicros())) {
                if (header.workload() == Workload.LATENCY || header.workload() == Workload.CHURN) {
                    echo(messages, header);
                } else {
                    sink(messages, header);
                }
                awaitEndOfStream(messages);
            }
        } catch (final IOException | RuntimeException ex) {
            System.err.println("bench server: session " + session + " (" + header + ") failed: " + ex + "; "
                + channel);
            ex.printStackTrace();
            try {
                channel.close();
            } catch (final IOException closing) {
                ex.addSuppressed(closing);
            }
        }
    }

    /**
     * Latency: read each whole message, then write it back.
     */
    private static void echo(final MessageChannel messages, final SessionHeader header) throws IOException {
        final ByteBuffer buffer = ByteBuffer.allocateDirect(header.size());
        final long total = header.warmUp() + header.count();
        for (long i = 0; i < total; i++) {
            buffer.clear();
            if (!messages.readFully(buffer)) {
                throw new EOFException("end of stream after " + i + " of " + total + " messages");
            }
            buffer.flip();
            messages.writeFully(buffer);
        }
    }

    /**
     * Bandwidth: read the warm-up bytes in whatever pieces they come and acknowledge them, then the timed ones.
     */
    private static void sink(final MessageChannel messages, final SessionHeader header) throws IOException {
        final ByteBuffer buffer = ByteBuffer.allocateDirect(Math.max(header.size(), BANDWIDTH_READ_BUFFER));
        final ByteBuffer ack = ByteBuffer.allocateDirect(Long.BYTES).order(ByteOrder.LITTLE_ENDIAN);
        for (final long bytes : new long[] {header.warmUp(), header.count()}) {
            long received = 0;
            while (received < bytes) {
                buffer.clear();
                if (bytes - received < buffer.capacity()) {
                    buffer.limit((int) (bytes - received));
                }
                final int read = messages.readSome(buffer);
                if (read < 0) {
                    throw new EOFException("end of stream after " + received + " of " + bytes + " bytes");
                }
                received += read;
            }
            ack.clear().putLong(0, received);
            messages.writeFully(ack);
        }
    }

    private static void awaitEndOfStream(final MessageChannel messages) throws IOException {
        final ByteBuffer rest = ByteBuffer.allocateDirect(64);
        int read;
        while ((read = messages.readSome(rest.clear())) >= 0) {
            if (read > 0) {
                throw new IOException(read + " bytes after the end of the session");
            }
        }
    }
}

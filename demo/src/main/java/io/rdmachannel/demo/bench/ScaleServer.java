package io.rdmachannel.demo.bench;

import io.rdmachannel.channel.spi.RdmaProviders;
import io.rdmachannel.nio.RdmaServerSocketChannel;
import io.rdmachannel.nio.RdmaSocketOptions;

import java.io.IOException;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedSelectorException;
import java.nio.channels.NetworkChannel;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The server of {@code ./rdmachannel scale}, in the second JVM: one RDMA listener and one selector thread that
 * accepts every connection, echoes what each sends and keeps it open until the client closes it. It prints
 * {@code listen rdma ADDRESS} and its ready line on stdout as {@link BenchServer} does, answers
 * {@value #USAGE} requests on stdin with its own usage, and exits when its stdin ends.
 */
final class ScaleServer {
    /** The first argument for RC streams (each connection with queues of its own). */
    static final String RC = "rc";
    /** The first argument that puts the listener in SRQ mode. */
    static final String SRQ = "srq";
    /** The first argument that puts the listener in the stream's XRC mode. */
    static final String XRC = "xrc";
    /**
     * The request {@code usage CONNECTIONS MILLIS} on stdin, and the first word of its answer on stdout: this
     * process's usage once its devices list CONNECTIONS connections (waiting at most MILLIS ms).
     */
    static final String USAGE = "usage";
    /** The listener's backlog: connection requests wait while the selector thread echoes. */
    private static final int BACKLOG = 4096;

    private ScaleServer() {
    }

    /**
     * Serve until stdin ends.
     *
     * @param args the mode ({@value #RC}, {@value #SRQ} or {@value #XRC}), then optionally the IP address to listen
     *     on (the loopback by default).
     */
    static void main(final String[] args) throws IOException {
        if (args.length < 1 || args.length > 2 || !List.of(RC, SRQ, XRC).contains(args[0])) {
            System.err.println("usage: ScaleServer rc|srq|xrc [ADDRESS] (started by ScaleMain)");
            System.exit(2);
        }
        final InetAddress address = args.length == 2 ? InetAddress.ofLiteral(args[1])
            : InetAddress.getLoopbackAddress();
        final PrintStream out = System.out;
        try (ServerSocketChannel listener = RdmaServerSocketChannel.open()) {
            final Selector selector = listener.provider().openSelector();
            try {
                setMode(listener, args[0]);
                listener.bind(new InetSocketAddress(address, 0), BACKLOG);
                listener.configureBlocking(false);
                listener.register(selector, SelectionKey.OP_ACCEPT);
                Thread.ofPlatform().daemon().name("scale-select").start(() -> serve(selector));
                out.println(BenchServer.LISTEN + " " + Transport.RDMA.label() + " "
                    + Transport.format(listener.getLocalAddress()));
                out.println(BenchServer.READY + " pid " + ProcessHandle.current().pid() + " provider "
                    + RdmaProviders.defaultProvider().name());
                out.flush();
                ServerProcess.serveRequests(out, ScaleServer::answer);
            } finally {
                // ends the selector thread's select with a ClosedSelectorException
                selector.close();
            }
        }
        System.exit(0);
    }

    private static String answer(final String request) {
        final String[] words = request.trim().split(" ");
        try {
            if (words.length == 3 && words[0].equals(USAGE)) {
                final long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(Long.parseLong(words[2]));
                return ScaleMain.awaitConnections(ProcessHandle.current().pid(), Integer.parseInt(words[1]),
                    deadline, System.err).format();
            }
        } catch (final NumberFormatException ex) {
            // answered below
        }
        return "error: not a request: " + request;
    }

    /**
     * Put {@code channel} (a client or a listener) in {@code mode}.
     */
    static void setMode(final NetworkChannel channel, final String mode) throws IOException {
        channel.setOption(RdmaSocketOptions.RDMA_SHARED_RECEIVE_QUEUE, mode.equals(SRQ));
        channel.setOption(RdmaSocketOptions.RDMA_XRC, mode.equals(XRC));
    }

    private static void serve(final Selector selector) {
        final ByteBuffer buffer = ByteBuffer.allocateDirect(4096);
        try {
            while (selector.isOpen()) {
                selector.select();
                final Iterator<SelectionKey> keys = selector.selectedKeys().iterator();
                while (keys.hasNext()) {
                    final SelectionKey key = keys.next();
                    keys.remove();
                    if (key.isValid() && key.isAcceptable()) {
                        acceptAll((ServerSocketChannel) key.channel(), selector);
                    } else if (key.isValid() && key.isReadable()) {
                        echo((SocketChannel) key.channel(), buffer);
                    }
                }
            }
        } catch (final ClosedSelectorException ex) {
            // stdin ended
        } catch (final IOException | RuntimeException ex) {
            System.err.println("scale server: the selector failed: " + ex);
            ex.printStackTrace();
            System.exit(1);
        }
    }

    private static void acceptAll(final ServerSocketChannel listener, final Selector selector) throws IOException {
        SocketChannel channel;
        while ((channel = listener.accept()) != null) {
            channel.configureBlocking(false);
            channel.register(selector, SelectionKey.OP_READ);
        }
    }

    /**
     * Echo what arrived; the client sends a byte and waits for it, so the write never meets a full ring. A
     * connection whose write falls short, or that fails, is closed and reported.
     */
    private static void echo(final SocketChannel channel, final ByteBuffer buffer) {
        try {
            buffer.clear();
            final int read = channel.read(buffer);
            if (read < 0) {
                channel.close();
                return;
            }
            buffer.flip();
            channel.write(buffer);
            if (buffer.hasRemaining()) {
                throw new IOException("the echo of " + read + " bytes was written short: " + buffer.remaining()
                    + " left");
            }
        } catch (final IOException ex) {
            System.err.println("scale server: " + channel + ": " + ex);
            try {
                channel.close();
            } catch (final IOException closing) {
                ex.addSuppressed(closing);
            }
        }
    }
}

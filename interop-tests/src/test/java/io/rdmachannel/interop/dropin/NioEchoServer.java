package io.rdmachannel.interop.dropin;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.Iterator;

/**
 * An unmodified NIO echo server: {@code ServerSocketChannel.open()}, then either a {@code Selector.open()} loop or
 * a virtual thread per connection with blocking channels. It echoes every byte and, at a client's end of stream,
 * shuts its output down and closes. Prints {@code LISTENING <port> <channel>}, then {@code ACCEPTED <channel>} per
 * connection (unless a third argument says {@code quiet}); answers a stdin line {@code USAGE} with a line
 * {@code USAGE <what the process holds>} ({@link ProcessUsage}); stops when its stdin ends.
 *
 * <p>Arguments: {@code address selector|blocking [quiet]}.
 */
public final class NioEchoServer {
    private NioEchoServer() {
    }

    public static void main(final String[] args) throws IOException {
        final InetAddress address = InetAddress.getByName(args[0]);
        final boolean selector = "selector".equals(args[1]);
        final boolean quiet = args.length > 2 && "quiet".equals(args[2]);
        final ServerSocketChannel server = ServerSocketChannel.open();
        server.bind(new InetSocketAddress(address, 0));
        System.out.println("LISTENING " + ((InetSocketAddress) server.getLocalAddress()).getPort() + " " + server);
        Thread.ofPlatform().daemon().start(() -> exitAtEndOfInput(System.in));
        if (selector) {
            selectLoop(server, quiet);
        } else {
            while (true) {
                final SocketChannel accepted = server.accept();
                if (!quiet) {
                    System.out.println("ACCEPTED " + accepted);
                }
                Thread.ofVirtual().start(() -> echoBlocking(accepted));
            }
        }
    }

    private static void exitAtEndOfInput(final InputStream in) {
        try (BufferedReader lines = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
            String line;
            while ((line = lines.readLine()) != null) {
                if ("USAGE".equals(line)) {
                    System.out.println("USAGE " + ProcessUsage.now());
                }
            }
        } catch (final IOException ignore) {
            // the parent is gone
        }
        System.exit(0);
    }

    private static void echoBlocking(final SocketChannel channel) {
        final ByteBuffer buffer = ByteBuffer.allocateDirect(64 * 1024);
        try (channel) {
            while (channel.read(buffer.clear()) >= 0) {
                buffer.flip();
                while (buffer.hasRemaining()) {
                    channel.write(buffer);
                }
            }
            channel.shutdownOutput();
        } catch (final IOException ex) {
            throw new UncheckedIOException(ex);
        }
    }

    private static void selectLoop(final ServerSocketChannel server, final boolean quiet) throws IOException {
        final Selector selector = Selector.open();
        server.configureBlocking(false);
        server.register(selector, SelectionKey.OP_ACCEPT);
        while (true) {
            selector.select();
            for (final Iterator<SelectionKey> it = selector.selectedKeys().iterator(); it.hasNext(); ) {
                final SelectionKey key = it.next();
                it.remove();
                if (key.isAcceptable()) {
                    final SocketChannel accepted = server.accept();
                    if (accepted != null) {
                        if (!quiet) {
                            System.out.println("ACCEPTED " + accepted);
                        }
                        accepted.configureBlocking(false);
                        accepted.register(selector, SelectionKey.OP_READ, ByteBuffer.allocate(64 * 1024));
                    }
                } else {
                    serve(key);
                }
            }
        }
    }

    /**
     * Read what arrived and write it back; while bytes wait to be written, write instead of reading.
     */
    private static void serve(final SelectionKey key) throws IOException {
        final SocketChannel channel = (SocketChannel) key.channel();
        final ByteBuffer buffer = (ByteBuffer) key.attachment();
        try {
            if (key.isWritable()) {
                channel.write(buffer);
                if (!buffer.hasRemaining()) {
                    buffer.clear();
                    key.interestOps(SelectionKey.OP_READ);
                }
                return;
            }
            final int read = channel.read(buffer);
            if (read < 0) {
                channel.shutdownOutput();
                channel.close();
                return;
            }
            buffer.flip();
            channel.write(buffer);
            if (buffer.hasRemaining()) {
                key.interestOps(SelectionKey.OP_WRITE);
            } else {
                buffer.clear();
            }
        } catch (final IOException ex) {
            System.out.println("CONNECTION FAILED " + ex);
            channel.close();
        }
    }
}

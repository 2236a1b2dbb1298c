package io.rdmachannel.demo;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.channels.spi.SelectorProvider;
import java.util.ArrayList;
import java.util.List;

/**
 * A single-threaded, selector-based echo server over the channels of one provider (rdmachannel's, or the JDK's for
 * the same workload over TCP): every byte a connection reads is written back
 * on it. Each connection has its own buffer; it is registered for {@code OP_READ} while its buffer has room and its
 * peer has not shut down output, and for {@code OP_WRITE} only while echoed bytes are waiting to be written. When
 * the peer has shut down its output and everything has been written back, the connection is closed, which the
 * client reads as the end of the stream.
 */
final class EchoServer implements AutoCloseable {
    private static final int BUFFER_SIZE = 256 * 1024;

    private final Selector selector;
    private final ServerSocketChannel server;
    private final InetSocketAddress address;
    private long accepted;
    private long served;
    private long failed;
    private long bytesEchoed;
    private long writeWaits;

    private EchoServer(final Selector selector, final ServerSocketChannel server) throws IOException {
        this.selector = selector;
        this.server = server;
        this.address = (InetSocketAddress) server.getLocalAddress();
    }

    /**
     * Bind a non-blocking server channel and register it with a new selector, both of {@code provider}.
     */
    static EchoServer open(final SelectorProvider provider, final InetSocketAddress local) throws IOException {
        final Selector selector = provider.openSelector();
        ServerSocketChannel server = null;
        try {
            server = provider.openServerSocketChannel();
            server.bind(local);
            server.configureBlocking(false);
            server.register(selector, SelectionKey.OP_ACCEPT);
            return new EchoServer(selector, server);
        } catch (final IOException | RuntimeException ex) {
            closeQuietly(server, ex);
            closeQuietly(selector, ex);
            throw ex;
        }
    }

    InetSocketAddress address() {
        return address;
    }

    /**
     * Wait up to {@code timeoutMillis} for ready channels and serve them.
     */
    void poll(final long timeoutMillis) throws IOException {
        selector.select(this::serve, timeoutMillis);
    }

    private void serve(final SelectionKey key) {
        if (!key.isValid()) {
            return;
        }
        if (key.isAcceptable()) {
            accept();
            return;
        }
        final Connection connection = (Connection) key.attachment();
        try {
            connection.transfer(key);
        } catch (final IOException | RuntimeException ex) {
            failed++;
            System.err.println("server: connection " + connection.id + " failed: " + ex + "; " + connection.channel);
            ex.printStackTrace();
            closeQuietly(connection.channel, ex);
        }
    }

    private void accept() {
        SocketChannel channel = null;
        try {
            channel = server.accept();
            if (channel == null) {
                return;
            }
            channel.configureBlocking(false);
            channel.register(selector, SelectionKey.OP_READ, new Connection(++accepted, channel));
        } catch (final IOException | RuntimeException ex) {
            failed++;
            System.err.println("server: accept failed: " + ex + "; " + server + (channel == null ? "" : "; "
                + channel));
            closeQuietly(channel, ex);
        }
    }

    long accepted() {
        return accepted;
    }

    long served() {
        return served;
    }

    long failed() {
        return failed;
    }

    long bytesEchoed() {
        return bytesEchoed;
    }

    /**
     * How often a write could not take all pending bytes, so the connection waited for {@code OP_WRITE}.
     */
    long writeWaits() {
        return writeWaits;
    }

    /**
     * The connections still open: accepted but not yet served to the end of the stream.
     */
    List<String> openConnections() {
        final List<String> open = new ArrayList<>();
        for (final SelectionKey key : selector.keys()) {
            if (key.attachment() instanceof Connection connection && connection.channel.isOpen()) {
                open.add("connection " + connection.id + ": " + connection.channel + ", " + connection.buffer
                    .position() + " bytes pending, input ended " + connection.inputEnded);
            }
        }
        return open;
    }

    /**
     * Close every connection still open, the server channel and the selector.
     */
    @Override
    public void close() throws IOException {
        IOException failure = null;
        for (final SelectionKey key : selector.keys()) {
            try {
                key.channel().close();
            } catch (final IOException ex) {
                failure = failure == null ? ex : failure;
            }
        }
        try {
            server.close();
        } finally {
            selector.close();
        }
        if (failure != null) {
            throw failure;
        }
    }

    private static void closeQuietly(final AutoCloseable closeable, final Exception cause) {
        if (closeable != null) {
            try {
                closeable.close();
            } catch (final Exception ex) {
                cause.addSuppressed(ex);
            }
        }
    }

    /**
     * One accepted connection. Its buffer is in fill mode: position is the number of bytes read and not yet
     * written back.
     */
    private final class Connection {
        private final long id;
        private final SocketChannel channel;
        private final ByteBuffer buffer = ByteBuffer.allocateDirect(BUFFER_SIZE);
        private boolean inputEnded;

        Connection(final long id, final SocketChannel channel) {
            this.id = id;
            this.channel = channel;
        }

        void transfer(final SelectionKey key) throws IOException {
            if (key.isReadable() && channel.read(buffer) < 0) {
                inputEnded = true;
            }
            // Write what is pending at once rather than wait for OP_WRITE: the send ring usually has room.
            if (buffer.position() > 0) {
                buffer.flip();
                bytesEchoed += channel.write(buffer);
                buffer.compact();
                if (buffer.position() > 0 && (key.interestOps() & SelectionKey.OP_WRITE) == 0) {
                    writeWaits++;
                }
            }
            final int interest = (inputEnded || !buffer.hasRemaining() ? 0 : SelectionKey.OP_READ)
                | (buffer.position() > 0 ? SelectionKey.OP_WRITE : 0);
            if (interest == 0) {
                served++;
                channel.close();
            } else if (interest != key.interestOps()) {
                key.interestOps(interest);
            }
        }
    }
}

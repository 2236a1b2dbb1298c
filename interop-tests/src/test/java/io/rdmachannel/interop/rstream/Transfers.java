package io.rdmachannel.interop.rstream;

import java.io.EOFException;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.SelectableChannel;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;

/**
 * rstream's {@code send_xfer}/{@code recv_xfer} over one connected channel: move exactly the requested number of
 * bytes, however many calls that takes (the stream has no framing).
 *
 * <ul>
 *   <li>Blocking ({@code -T b}): blocking reads and writes.</li>
 *   <li>Non-blocking ({@code -T n}, the default): try the call; when it moves nothing, wait in a {@link Selector}
 *   for the channel to become ready. rstream busy-spins on EAGAIN instead; the bytes on the wire are the same.</li>
 *   <li>Async ({@code -T a}): wait in the selector before every call, as rstream calls {@code rpoll} first.</li>
 * </ul>
 */
final class Transfers implements AutoCloseable {

    private final SocketChannel channel;
    private final boolean async;
    private final Selector selector;
    private final SelectionKey key;

    private Transfers(final SocketChannel channel, final boolean async, final Selector selector) throws IOException {
        this.channel = channel;
        this.async = async;
        this.selector = selector;
        this.key = selector == null ? null : channel.register(selector, 0);
    }

    /**
     * @param channel a connected channel; blocking or not decides the mode.
     * @param async   whether to wait for readiness before every call (non-blocking channels only).
     * @return the transfers.
     * @throws IOException if the selector cannot be opened or the channel not registered.
     */
    static Transfers over(final SocketChannel channel, final boolean async) throws IOException {
        if (channel.isBlocking()) {
            return new Transfers(channel, false, null);
        }
        return new Transfers(channel, async, channel.provider().openSelector());
    }

    /**
     * Waits until {@code channel} is ready for {@code ops} in a fresh selector of its provider (used for accept and
     * connect, before a {@link Transfers} exists).
     *
     * @param channel a non-blocking channel.
     * @param ops     the interest set.
     * @throws IOException if selecting fails or the thread is interrupted.
     */
    static void awaitReady(final SelectableChannel channel, final int ops) throws IOException {
        try (Selector selector = channel.provider().openSelector()) {
            final SelectionKey key = channel.register(selector, ops);
            select(selector, key, ops);
        }
    }

    /**
     * @return the channel the transfers run on.
     */
    SocketChannel channel() {
        return channel;
    }

    /**
     * Sends {@code buffer[0, length)}.
     *
     * @param buffer the data.
     * @param length how many bytes.
     * @throws IOException if the channel fails.
     */
    void send(final ByteBuffer buffer, final int length) throws IOException {
        buffer.clear().limit(length);
        while (buffer.hasRemaining()) {
            if (async) {
                select(selector, key, SelectionKey.OP_WRITE);
            }
            if (channel.write(buffer) == 0 && !async && key != null) {
                select(selector, key, SelectionKey.OP_WRITE);
            }
        }
    }

    /**
     * Receives exactly {@code length} bytes into {@code buffer[0, length)}.
     *
     * @param buffer the buffer.
     * @param length how many bytes.
     * @throws EOFException if the peer closes its side first.
     * @throws IOException  if the channel fails.
     */
    void receive(final ByteBuffer buffer, final int length) throws IOException {
        buffer.clear().limit(length);
        while (buffer.hasRemaining()) {
            if (async) {
                select(selector, key, SelectionKey.OP_READ);
            }
            final int read = channel.read(buffer);
            if (read < 0) {
                throw new EOFException("Connection closed by peer after " + buffer.position() + " of " + length
                    + " bytes");
            }
            if (read == 0 && !async && key != null) {
                select(selector, key, SelectionKey.OP_READ);
            }
        }
    }

    private static void select(final Selector selector, final SelectionKey key, final int ops) throws IOException {
        key.interestOps(ops);
        while (true) {
            selector.select();
            final boolean ready = selector.selectedKeys().remove(key);
            if (Thread.interrupted()) {
                throw new InterruptedIOException("interrupted while waiting for the channel");
            }
            if (ready) {
                break;
            }
        }
        key.interestOps(0);
    }

    /**
     * As rstream: {@code rshutdown(SHUT_RDWR)} then {@code rclose}. Shutdown failures (the peer may be gone) are
     * ignored, as rstream ignores them.
     *
     * @throws IOException if closing fails.
     */
    @Override
    public void close() throws IOException {
        try {
            if (channel.isConnected()) {
                try {
                    channel.shutdownOutput();
                    channel.shutdownInput();
                } catch (final IOException ignored) {
                    // rstream does not check rshutdown either.
                }
            }
        } finally {
            try {
                if (selector != null) {
                    selector.close();
                }
            } finally {
                channel.close();
            }
        }
    }
}

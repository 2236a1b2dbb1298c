package io.rdmachannel.demo.bench;

import io.rdmachannel.nio.RdmaSocketOptions;

import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;

/**
 * A connected channel that reads and writes whole buffers in one {@link Mode}, the same on both ends. Nothing here
 * allocates per call: the measured loops run through it.
 */
final class MessageChannel implements AutoCloseable {
    private final SocketChannel channel;
    private final Mode mode;
    private final boolean spin;
    private final Selector selector;
    private final SelectionKey key;

    private MessageChannel(final SocketChannel channel, final Mode mode, final boolean spin, final Selector selector)
        throws IOException {
        this.channel = channel;
        this.mode = mode;
        this.spin = spin;
        this.selector = selector;
        this.key = selector == null ? null : channel.register(selector, 0);
    }

    /**
     * Put a connected blocking channel into {@code mode}; the returned object owns it.
     *
     * @param busyPollMicros {@code RDMA_BUSY_POLL} for an RDMA channel in busy-poll mode.
     */
    static MessageChannel of(final SocketChannel channel, final Mode mode, final int busyPollMicros)
        throws IOException {
        try {
            switch (mode) {
                case BLOCKING -> {
                    return new MessageChannel(channel, mode, false, null);
                }
                case SELECTOR -> {
                    channel.configureBlocking(false);
                    return new MessageChannel(channel, mode, false, channel.provider().openSelector());
                }
                default -> {
                    if (channel.supportedOptions().contains(RdmaSocketOptions.RDMA_BUSY_POLL)) {
                        channel.setOption(RdmaSocketOptions.RDMA_BUSY_POLL, busyPollMicros);
                        return new MessageChannel(channel, mode, false, null);
                    }
                    channel.configureBlocking(false);
                    return new MessageChannel(channel, mode, true, null);
                }
            }
        } catch (final IOException | RuntimeException ex) {
            try {
                channel.close();
            } catch (final IOException closing) {
                ex.addSuppressed(closing);
            }
            throw ex;
        }
    }

    /**
     * Read until {@code buffer} is full.
     *
     * @return false at the end of the stream before the first byte.
     * @throws EOFException at the end of the stream within the buffer.
     */
    boolean readFully(final ByteBuffer buffer) throws IOException {
        final int start = buffer.position();
        while (buffer.hasRemaining()) {
            final int read = channel.read(buffer);
            if (read < 0) {
                if (buffer.position() == start) {
                    return false;
                }
                throw new EOFException("end of stream after " + (buffer.position() - start) + " of "
                    + (buffer.limit() - start) + " bytes");
            }
            if (read == 0) {
                await(SelectionKey.OP_READ);
            }
        }
        return true;
    }

    /**
     * Write all of {@code buffer}.
     */
    void writeFully(final ByteBuffer buffer) throws IOException {
        while (buffer.hasRemaining()) {
            if (channel.write(buffer) == 0) {
                await(SelectionKey.OP_WRITE);
            }
        }
    }

    /**
     * Read up to {@code buffer}'s remaining bytes, at least one unless at the end of the stream.
     *
     * @return the bytes read, -1 at the end of the stream.
     */
    int readSome(final ByteBuffer buffer) throws IOException {
        int read;
        while ((read = channel.read(buffer)) == 0) {
            await(SelectionKey.OP_READ);
        }
        return read;
    }

    private void await(final int operation) throws IOException {
        if (spin) {
            Thread.onSpinWait();
            return;
        }
        if (key == null) {
            throw new IllegalStateException("a blocking channel made no progress: " + channel);
        }
        if (key.interestOps() != operation) {
            key.interestOps(operation);
        }
        selector.select();
        selector.selectedKeys().clear();
    }

    SocketChannel channel() {
        return channel;
    }

    Mode mode() {
        return mode;
    }

    @Override
    public void close() throws IOException {
        try {
            channel.close();
        } finally {
            if (selector != null) {
                selector.close();
            }
        }
    }

    @Override
    public String toString() {
        return mode.label() + " " + channel;
    }
}

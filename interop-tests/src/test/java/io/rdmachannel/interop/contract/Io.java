package io.rdmachannel.interop.contract;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SelectableChannel;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.Callable;

/**
 * Small I/O steps that work on blocking and non-blocking channels alike: a non-blocking channel waits for readiness
 * on a selector of its own provider.
 */
final class Io {

    private static final Duration STEP_TIMEOUT = Duration.ofSeconds(20);

    private Io() {
    }

    /**
     * Runs a test body in a mode: on a virtual thread for {@link IoMode#VIRTUAL_THREADS}, on the calling thread
     * otherwise.
     *
     * @param mode the mode.
     * @param body the body.
     * @param <T>  its result type.
     * @return its result.
     * @throws Exception its failure.
     */
    static <T> T inMode(final IoMode mode, final Callable<T> body) throws Exception {
        if (mode == IoMode.VIRTUAL_THREADS) {
            return mode.fork("test-body", body).join(STEP_TIMEOUT.multipliedBy(2));
        }
        return body.call();
    }

    /**
     * Sets the channels' blocking mode to the mode's.
     *
     * @param mode     the mode.
     * @param channels the channels.
     * @throws IOException from configureBlocking.
     */
    static void configure(final IoMode mode, final SelectableChannel... channels) throws IOException {
        for (final SelectableChannel channel : channels) {
            channel.configureBlocking(mode.blockingChannels());
        }
    }

    /**
     * One read that returns data or end of stream: a non-blocking channel waits for OP_READ first.
     *
     * @param channel the channel.
     * @param buffer  the buffer.
     * @return bytes read (at least 1), or -1.
     * @throws IOException from the channel.
     */
    static int read(final SocketChannel channel, final ByteBuffer buffer) throws IOException {
        if (channel.isBlocking()) {
            return channel.read(buffer);
        }
        int read;
        while ((read = channel.read(buffer)) == 0) {
            awaitReady(channel, SelectionKey.OP_READ);
        }
        return read;
    }

    /**
     * One read into a {@link PatternReceiver}: a non-blocking channel waits for OP_READ when the read returns 0.
     *
     * @param channel  the channel.
     * @param receiver the receiver.
     * @param state    the test's state.
     * @return bytes read (at least 1), or -1.
     * @throws IOException from the channel.
     */
    static int read(final SocketChannel channel, final PatternReceiver receiver, final ConnectionState state)
        throws IOException {
        int read;
        while ((read = receiver.readOnce(channel)) == 0) {
            state.step("await OP_READ");
            awaitReady(channel, SelectionKey.OP_READ);
        }
        return read;
    }

    /**
     * Reads exactly {@code length} bytes, failing on an early end of stream.
     *
     * @param channel the channel.
     * @param length  the number of bytes.
     * @return the bytes as ISO-8859-1 text.
     * @throws IOException from the channel.
     */
    static String readString(final SocketChannel channel, final int length) throws IOException {
        final ByteBuffer buffer = ByteBuffer.allocate(length);
        while (buffer.hasRemaining()) {
            if (read(channel, buffer) < 0) {
                throw new AssertionError("end of stream after " + buffer.position() + " of " + length + " bytes");
            }
        }
        return new String(buffer.array(), StandardCharsets.ISO_8859_1);
    }

    /**
     * Writes all of {@code text}: a non-blocking channel waits for OP_WRITE when the write returns 0.
     *
     * @param channel the channel.
     * @param text    ISO-8859-1 text.
     * @throws IOException from the channel.
     */
    static void writeString(final SocketChannel channel, final String text) throws IOException {
        final ByteBuffer buffer = ByteBuffer.wrap(text.getBytes(StandardCharsets.ISO_8859_1));
        while (buffer.hasRemaining()) {
            if (channel.write(buffer) == 0) {
                awaitReady(channel, SelectionKey.OP_WRITE);
            }
        }
    }

    /**
     * Waits on a fresh selector until the non-blocking channel is ready for {@code ops}.
     *
     * @param channel the channel.
     * @param ops     the interest set.
     * @return the ready set.
     * @throws IOException from the selector.
     */
    static int awaitReady(final SelectableChannel channel, final int ops) throws IOException {
        try (Selector selector = channel.provider().openSelector()) {
            final SelectionKey key = channel.register(selector, ops);
            final long deadline = System.nanoTime() + STEP_TIMEOUT.toNanos();
            while (selector.select(1_000) == 0) {
                if (System.nanoTime() - deadline > 0) {
                    throw new AssertionError("not ready for ops " + ops + " within " + STEP_TIMEOUT + ": " + channel);
                }
            }
            final int ready = key.readyOps();
            key.cancel();
            selector.selectNow();
            return ready;
        }
    }
}

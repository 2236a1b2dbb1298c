package io.rdmachannel.interop.contract;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.channels.AsynchronousCloseException;
import java.nio.channels.ClosedByInterruptException;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.Timeout;

/**
 * A thread blocked in read, write or accept is woken by close() (or shutdownOutput) from another thread with
 * exactly {@link AsynchronousCloseException}; a writer blocked against a peer that does not read is woken by an
 * interrupt with {@link ClosedByInterruptException}.
 */
@ContractTest
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class AsyncCloseContractTest {

    private static final Duration WAKE_UP = Duration.ofSeconds(10);

    /**
     * Fixed socket buffers: a send path that cannot grow (no receive-buffer auto-tuning) stays full once filled.
     */
    private static final int SMALL_BUFFER = 64 * 1024;
    private static final int MAX_ATTEMPTS = 5;

    @AcrossBlockingModes
    void shouldWakeBlockedReaderOnClose(final ContractTransport transport, final IoMode mode,
        final ConnectionState state) throws Exception {
        final ConnectedPair pair = ConnectedPair.open(transport, state);
        final SocketChannel client = pair.client();
        final Forked<Integer> reader = mode.fork("reader", () -> client.read(ByteBuffer.allocate(16)));
        Await.awaitBlockedIn(reader.thread(), client, "read");
        state.step("close");
        client.close();
        assertSame(AsynchronousCloseException.class, reader.failure(WAKE_UP).getClass());
        assertFalse(client.isOpen());

        state.step("peer reads end of stream");
        assertEquals(-1, pair.server().read(ByteBuffer.allocate(16)), "closed gracefully, not reset");
    }

    @AcrossBlockingModes
    void shouldWakeBlockedWriterOnClose(final ContractTransport transport, final IoMode mode,
        final ConnectionState state) throws Exception {
        final Throwable failure = blockWriterThen(transport, mode, state, "close",
            (channel, writer) -> channel.close());
        assertSame(AsynchronousCloseException.class, failure.getClass());
    }

    @AcrossBlockingModes
    void shouldWakeBlockedWriterOnShutdownOutput(final ContractTransport transport, final IoMode mode,
        final ConnectionState state) throws Exception {
        final Throwable failure = blockWriterThen(transport, mode, state, "shutdownOutput",
            (channel, writer) -> channel.shutdownOutput());
        assertSame(AsynchronousCloseException.class, failure.getClass());
    }

    @AcrossBlockingModes
    void shouldCloseChannelWhenBlockedWriterIsInterrupted(final ContractTransport transport, final IoMode mode,
        final ConnectionState state) throws Exception {
        final AtomicReference<SocketChannel> interrupted = new AtomicReference<>();
        final AtomicBoolean stillInterrupted = new AtomicBoolean();
        final Throwable failure = blockWriterThen(transport, mode, state, "interrupt", (channel, writer) -> {
            interrupted.set(channel);
            writer.interrupt();
        }, stillInterrupted);
        assertSame(ClosedByInterruptException.class, failure.getClass());
        assertTrue(stillInterrupted.get(), "interrupt status kept");
        assertFalse(interrupted.get().isOpen(), "channel closed by the interrupt");
    }

    @AcrossBlockingModes
    void shouldWakeBlockedAcceptOnClose(final ContractTransport transport, final IoMode mode,
        final ConnectionState state) throws Exception {
        final ServerSocketChannel listener = state.closeAtEnd(transport.openServerSocketChannel());
        listener.bind(transport.bindAddress());
        final Forked<SocketChannel> acceptor = mode.fork("acceptor", listener::accept);
        Await.awaitBlockedIn(acceptor.thread(), listener, "accept");
        state.step("close");
        listener.close();
        assertSame(AsynchronousCloseException.class, acceptor.failure(WAKE_UP).getClass());
        assertFalse(listener.isOpen());
    }

    /**
     * Blocks a writer against a peer that never reads, then applies {@code action} to the channel from this thread
     * and returns what the writer threw.
     * <p>
     * The send path is filled without blocking first, so that the writer's next blocking write blocks before it
     * transfers a byte: a blocking write that has transferred bytes may return them instead of throwing. A write can
     * still complete between "blocked" and the action when the stack frees space late; such an attempt shows up as
     * a write completed after the action began, and is repeated on a fresh connection.
     */
    private static Throwable blockWriterThen(final ContractTransport transport, final IoMode mode,
        final ConnectionState state, final String actionName, final ChannelAction action) throws Exception {
        return blockWriterThen(transport, mode, state, actionName, action, new AtomicBoolean());
    }

    /**
     * As {@link #blockWriterThen(ContractTransport, IoMode, ConnectionState, String, ChannelAction)}, recording in
     * {@code writerInterrupted} whether the writer's interrupt status was set when its write ended.
     */
    private static Throwable blockWriterThen(final ContractTransport transport, final IoMode mode,
        final ConnectionState state, final String actionName, final ChannelAction action,
        final AtomicBoolean writerInterrupted) throws Exception {
        for (int attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
            state.put("attempt", attempt);
            final ConnectedPair pair = ConnectedPair.openWithFixedBuffers(transport, SMALL_BUFFER, state);
            final SocketChannel client = pair.client();
            final AtomicLong written = fillSendPath(client, state);
            final AtomicBoolean acting = new AtomicBoolean();
            final AtomicBoolean raced = new AtomicBoolean();
            final Forked<Void> writer = mode.fork("writer-" + attempt, () -> {
                final ByteBuffer one = ByteBuffer.allocate(1);
                try {
                    while (true) {
                        written.addAndGet(client.write(one.clear()));
                        if (acting.get()) {
                            raced.set(true);
                        }
                    }
                } finally {
                    writerInterrupted.set(Thread.currentThread().isInterrupted());
                }
            });
            Await.awaitBlockedIn(writer.thread(), client, "write");
            state.step(actionName);
            acting.set(true);
            action.apply(client, writer.thread());
            final Throwable failure = writer.failure(WAKE_UP);
            state.put("writer.raced", raced.get());
            if (!raced.get()) {
                return failure;
            }
            client.close();
        }
        throw new AssertionError("the writer completed a write after " + actionName + " in all " + MAX_ATTEMPTS
            + " attempts");
    }

    /**
     * Writes without blocking until the channel takes no more (three zero-length writes in a row); the peer never
     * reads. Leaves the channel blocking.
     */
    private static AtomicLong fillSendPath(final SocketChannel channel, final ConnectionState state)
        throws Exception {
        final AtomicLong written = new AtomicLong();
        state.watch("client.written", written::get);
        state.step("fill send path");
        channel.configureBlocking(false);
        final ByteBuffer chunk = ByteBuffer.allocate(256 * 1024);
        long stalls = 0;
        while (stalls < 3) {
            final int n = channel.write(chunk.clear());
            written.addAndGet(n);
            stalls = n == 0 ? stalls + 1 : 0;
        }
        channel.configureBlocking(true);
        return written;
    }

    @FunctionalInterface
    private interface ChannelAction {
        void apply(SocketChannel channel, Thread writer) throws Exception;
    }
}

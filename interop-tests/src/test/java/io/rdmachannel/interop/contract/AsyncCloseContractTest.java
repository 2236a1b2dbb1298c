package io.rdmachannel.interop.contract;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.nio.ByteBuffer;
import java.nio.channels.AsynchronousCloseException;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.junit.jupiter.api.Timeout;

/**
 * A thread blocked in read, write or accept is woken by close() (or shutdownOutput) from another thread with
 * exactly {@link AsynchronousCloseException}.
 */
@ContractTest
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class AsyncCloseContractTest {

    private static final Duration WAKE_UP = Duration.ofSeconds(10);

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
        final ConnectedPair pair = ConnectedPair.open(transport, state);
        final SocketChannel client = pair.client();
        final AtomicLong written = fillSendPath(client, state);
        final Forked<Void> writer = mode.fork("writer", () -> writeOneByteAtATime(client, written));
        Await.awaitBlockedIn(writer.thread(), client, "write");
        state.step("close");
        client.close();
        assertSame(AsynchronousCloseException.class, writer.failure(WAKE_UP).getClass());
        assertFalse(client.isOpen());
    }

    @AcrossBlockingModes
    void shouldWakeBlockedWriterOnShutdownOutput(final ContractTransport transport, final IoMode mode,
        final ConnectionState state) throws Exception {
        final ConnectedPair pair = ConnectedPair.open(transport, state);
        final SocketChannel client = pair.client();
        final AtomicLong written = fillSendPath(client, state);
        final Forked<Void> writer = mode.fork("writer", () -> writeOneByteAtATime(client, written));
        Await.awaitBlockedIn(writer.thread(), client, "write");
        state.step("shutdownOutput");
        client.shutdownOutput();
        assertSame(AsynchronousCloseException.class, writer.failure(WAKE_UP).getClass());
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
     * Writes without blocking until the channel takes no more, so that the next blocking write blocks before it
     * transfers a byte (a blocking write that has transferred some bytes may legitimately return them instead of
     * throwing). The peer never reads.
     */
    static AtomicLong fillSendPath(final SocketChannel channel, final ConnectionState state) throws Exception {
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

    private static Void writeOneByteAtATime(final SocketChannel channel, final AtomicLong written) throws Exception {
        final ByteBuffer one = ByteBuffer.allocate(1);
        while (true) {
            written.addAndGet(channel.write(one.clear()));
        }
    }
}

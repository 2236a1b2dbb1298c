package io.rdmachannel.interop.contract;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.channels.ClosedByInterruptException;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import org.junit.jupiter.api.Timeout;

/**
 * Interrupting a thread blocked in read or accept closes the channel and throws {@link ClosedByInterruptException}
 * with the interrupt status kept; an already-interrupted thread fails at once the same way. On platform and virtual
 * threads.
 */
@ContractTest
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class InterruptContractTest {

    private static final Duration WAKE_UP = Duration.ofSeconds(10);

    @AcrossBlockingModes
    void shouldCloseChannelWhenReaderIsInterrupted(final ContractTransport transport, final IoMode mode,
        final ConnectionState state) throws Exception {
        final ConnectedPair pair = ConnectedPair.open(transport, state);
        final SocketChannel client = pair.client();
        final AtomicBoolean stillInterrupted = new AtomicBoolean();
        final Forked<Integer> reader = mode.fork("reader",
            keepingInterruptStatus(() -> client.read(ByteBuffer.allocate(16)), stillInterrupted));
        Await.awaitBlockedIn(reader.thread(), client, "read");
        state.step("interrupt");
        reader.thread().interrupt();
        assertSame(ClosedByInterruptException.class, reader.failure(WAKE_UP).getClass());
        assertTrue(stillInterrupted.get(), "interrupt status kept");
        assertFalse(client.isOpen(), "channel closed by the interrupt");
        assertEquals(-1, pair.server().read(ByteBuffer.allocate(16)), "peer sees end of stream");
    }

    @AcrossBlockingModes
    void shouldCloseListenerWhenAcceptIsInterrupted(final ContractTransport transport, final IoMode mode,
        final ConnectionState state) throws Exception {
        final ServerSocketChannel listener = state.closeAtEnd(transport.openServerSocketChannel());
        listener.bind(transport.bindAddress());
        final AtomicBoolean stillInterrupted = new AtomicBoolean();
        final Forked<SocketChannel> acceptor = mode.fork("acceptor",
            keepingInterruptStatus(listener::accept, stillInterrupted));
        Await.awaitBlockedIn(acceptor.thread(), listener, "accept");
        state.step("interrupt");
        acceptor.thread().interrupt();
        assertSame(ClosedByInterruptException.class, acceptor.failure(WAKE_UP).getClass());
        assertTrue(stillInterrupted.get(), "interrupt status kept");
        assertFalse(listener.isOpen(), "listener closed by the interrupt");
    }

    @AcrossBlockingModes
    void shouldFailAtOnceWhenAlreadyInterrupted(final ContractTransport transport, final IoMode mode,
        final ConnectionState state) throws Exception {
        final ConnectedPair pair = ConnectedPair.open(transport, state);
        final ServerSocketChannel otherListener = state.closeAtEnd(transport.openServerSocketChannel());
        otherListener.bind(transport.bindAddress());
        final Forked<Void> body = mode.fork("interrupted", () -> {
            assertAlreadyInterruptedFails(() -> pair.client().read(ByteBuffer.allocate(1)));
            assertFalse(pair.client().isOpen(), "reader's channel closed");
            assertAlreadyInterruptedFails(() -> pair.server().write(ByteBuffer.allocate(1)));
            assertFalse(pair.server().isOpen(), "writer's channel closed");
            assertAlreadyInterruptedFails(otherListener::accept);
            assertFalse(otherListener.isOpen(), "listener closed");
            return null;
        });
        body.join(WAKE_UP);
    }

    private static void assertAlreadyInterruptedFails(final Callable<?> operation) throws Exception {
        Thread.currentThread().interrupt();
        try {
            final Object result = operation.call();
            throw new AssertionError("interrupted operation returned " + result);
        } catch (final ClosedByInterruptException expected) {
            assertTrue(Thread.interrupted(), "interrupt status kept (and cleared here for the next step)");
        }
    }

    private static <T> Callable<T> keepingInterruptStatus(final Callable<T> operation, final AtomicBoolean status) {
        return () -> {
            try {
                return operation.call();
            } finally {
                status.set(Thread.currentThread().isInterrupted());
            }
        };
    }
}

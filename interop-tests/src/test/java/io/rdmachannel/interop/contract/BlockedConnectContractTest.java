package io.rdmachannel.interop.contract;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.ConnectException;
import java.net.SocketAddress;
import java.nio.channels.AsynchronousCloseException;
import java.nio.channels.ClosedByInterruptException;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import org.junit.jupiter.api.Timeout;

/**
 * A blocking connect that does not complete at once: interrupting its thread closes the channel with
 * {@link ClosedByInterruptException}, closing the channel from another thread ends it with
 * {@link AsynchronousCloseException}.
 * <p>
 * A connect is kept in progress by connecting to a listener whose backlog is full. Over TCP the listener drops the
 * SYN and the client retries, so the connect blocks; the RDMA transports, as rsockets over rdma_cm, reject the request
 * at once, so no connect of theirs stays in progress long enough to be interrupted (a loopback connect completes in
 * well under a millisecond). On those transports the tests assert that documented behaviour instead: the blocking
 * connect fails promptly with {@link ConnectException} and closes the channel. The interrupt status already set on
 * entry is checked on every transport.
 */
@ContractTest
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class BlockedConnectContractTest {

    private static final int BACKLOG = 1;
    /**
     * Non-blocking connects that fill the backlog (TCP queues backlog + 1, the rest stay in progress).
     */
    private static final int FILLERS = 3;
    private static final Duration WAKE_UP = Duration.ofSeconds(10);

    @AcrossBlockingModes
    void shouldCloseChannelWhenBlockedConnectIsInterrupted(final ContractTransport transport, final IoMode mode,
        final ConnectionState state) throws Exception {
        final BusyListener busy = listenerWithFullBacklog(transport, state);
        final SocketChannel client = state.closeAtEnd(transport.openSocketChannel());
        if (!transport.queuesConnectsBeyondBacklog()) {
            assertRefusedAtOnce(mode, client, busy, state);
            return;
        }
        final AtomicBoolean stillInterrupted = new AtomicBoolean();
        final Forked<Boolean> connecting = mode.fork("connecting", () -> {
            try {
                return client.connect(busy.address());
            } finally {
                stillInterrupted.set(Thread.currentThread().isInterrupted());
            }
        });
        Await.awaitBlockedIn(connecting.thread(), client, "connect");
        state.step("interrupt");
        connecting.thread().interrupt();
        assertSame(ClosedByInterruptException.class, connecting.failure(WAKE_UP).getClass());
        assertTrue(stillInterrupted.get(), "interrupt status kept");
        assertFalse(client.isOpen(), "channel closed by the interrupt");
        assertFalse(client.isConnectionPending());
    }

    @AcrossBlockingModes
    void shouldWakeBlockedConnectOnClose(final ContractTransport transport, final IoMode mode,
        final ConnectionState state) throws Exception {
        final BusyListener busy = listenerWithFullBacklog(transport, state);
        final SocketChannel client = state.closeAtEnd(transport.openSocketChannel());
        if (!transport.queuesConnectsBeyondBacklog()) {
            assertRefusedAtOnce(mode, client, busy, state);
            return;
        }
        final Forked<Boolean> connecting = mode.fork("connecting", () -> client.connect(busy.address()));
        Await.awaitBlockedIn(connecting.thread(), client, "connect");
        state.step("close");
        client.close();
        assertSame(AsynchronousCloseException.class, connecting.failure(WAKE_UP).getClass());
        assertFalse(client.isOpen());
    }

    @AcrossBlockingModes
    void shouldFailConnectAtOnceWhenAlreadyInterrupted(final ContractTransport transport, final IoMode mode,
        final ConnectionState state) throws Exception {
        final ServerSocketChannel listener = state.closeAtEnd(transport.openServerSocketChannel());
        listener.bind(transport.bindAddress());
        final SocketChannel client = state.closeAtEnd(transport.openSocketChannel());
        final Forked<Boolean> body = mode.fork("interrupted", () -> {
            Thread.currentThread().interrupt();
            assertThrows(ClosedByInterruptException.class, () -> client.connect(listener.getLocalAddress()));
            return Thread.interrupted();
        });
        assertTrue(body.join(WAKE_UP), "interrupt status kept");
        assertFalse(client.isOpen(), "channel closed");
    }

    /**
     * Binds a listener with a backlog of one and fills it with non-blocking connects that are never accepted.
     */
    static BusyListener listenerWithFullBacklog(final ContractTransport transport, final ConnectionState state)
        throws IOException {
        final ServerSocketChannel listener = state.closeAtEnd(transport.openServerSocketChannel());
        listener.bind(transport.bindAddress(), BACKLOG);
        final SocketAddress address = listener.getLocalAddress();
        state.put("busyListener", address);
        final List<SocketChannel> fillers = new ArrayList<>();
        for (int i = 0; i < FILLERS; i++) {
            state.step("filler " + i);
            final SocketChannel filler = state.closeAtEnd(transport.openSocketChannel());
            filler.configureBlocking(false);
            fillers.add(filler);
            try {
                filler.connect(address);
            } catch (final ConnectException refused) {
                // a non-blocking connect may learn at once that the backlog is full (RDMA): the filler is closed
                state.put("filler " + i, refused);
            }
        }
        state.watch("fillers", () -> fillers);
        return new BusyListener(address, fillers);
    }

    /**
     * The RDMA behaviour: a connect beyond the backlog is refused at once, and closes the channel.
     */
    static void assertRefusedAtOnce(final IoMode mode, final SocketChannel client, final BusyListener busy,
        final ConnectionState state) throws Exception {
        state.step("await the fillers: one holds the only slot, the others are refused");
        busy.awaitFillersSettled();
        state.step("connect beyond the backlog");
        final Throwable refused = mode.fork("connecting", () -> client.connect(busy.address())).failure(WAKE_UP);
        assertSame(ConnectException.class, refused.getClass(), "refused with " + refused);
        assertFalse(client.isOpen(), "a failed connect closes the channel");
    }

    /**
     * A listener whose backlog is full of connections it never accepts.
     *
     * @param address the listener's address.
     * @param fillers the non-blocking channels that connected to it.
     */
    record BusyListener(SocketAddress address, List<SocketChannel> fillers) {

        /**
         * Waits until no filler's connect is in progress any more: each is connected or was refused.
         */
        void awaitFillersSettled() {
            Await.awaitCondition(Await.DEFAULT_TIMEOUT, () -> fillers.stream().noneMatch(BusyListener::inProgress),
                () -> "fillers settled: " + fillers);
        }

        private static boolean inProgress(final SocketChannel filler) {
            try {
                return filler.isOpen() && !filler.finishConnect();
            } catch (final IOException ex) {
                return false;
            }
        }
    }
}

package io.rdmachannel.nio;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.BindException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.AlreadyBoundException;
import java.nio.channels.AsynchronousCloseException;
import java.nio.channels.ClosedByInterruptException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.NotYetBoundException;
import java.nio.channels.SocketChannel;
import java.nio.channels.UnsupportedAddressTypeException;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

@Timeout(10)
class ServerSocketChannelTest {
    private final ChannelFixture fixture = new ChannelFixture();

    @AfterEach
    void close() throws IOException {
        fixture.close();
    }

    private static Throwable failureOf(final boolean virtual, final Callable<?> task, final Runnable whileBlocked)
        throws Exception {
        final FutureTask<?> future = new FutureTask<>(task);
        final Thread thread = virtual ? Thread.ofVirtual().start(future) : Thread.ofPlatform().start(future);
        ChannelFixture.awaitBlocked(thread);
        whileBlocked.run();
        try {
            future.get(5, TimeUnit.SECONDS);
            throw new AssertionError("no failure");
        } catch (final ExecutionException ex) {
            return ex.getCause();
        }
    }

    @Test
    void shouldCheckClosedThenBoundOnAccept() throws IOException {
        final RdmaServerSocketChannel server = fixture.server();

        assertThrows(NotYetBoundException.class, server::accept);
        server.close();
        assertSame(ClosedChannelException.class, assertThrows(ClosedChannelException.class, server::accept).getClass());
    }

    @Test
    void shouldBindOnceToAnEphemeralPort() throws IOException {
        final RdmaServerSocketChannel server = fixture.server();
        assertNull(server.getLocalAddress());

        server.bind(null);

        final InetSocketAddress local = (InetSocketAddress) server.getLocalAddress();
        assertTrue(local.getPort() > 0);
        assertThrows(AlreadyBoundException.class, () -> server.bind(null));
        assertThrows(UnsupportedAddressTypeException.class,
            () -> fixture.server().bind(UnixDomainSocketAddress.of("x")));
    }

    @Test
    void shouldReportABindConflictAsBindException() throws IOException {
        final InetSocketAddress address = fixture.serverAddress();

        assertEquals("Address already in use",
            assertThrows(BindException.class, () -> fixture.server().bind(address)).getMessage());
    }

    @Test
    void shouldAcceptConnectedBlockingChannelsOfTheSameProvider() throws IOException {
        final SocketChannel[] pair = fixture.pair();

        assertInstanceOf(RdmaSocketChannel.class, pair[1]);
        assertTrue(pair[1].isConnected());
        assertTrue(pair[1].isBlocking());
        assertSame(fixture.provider, pair[1].provider());
        assertEquals(pair[0].getLocalAddress(), pair[1].getRemoteAddress());
        assertEquals(fixture.serverAddress(), pair[1].getLocalAddress());
    }

    @Test
    void shouldReturnNullWhenNonBlockingWithNothingPending() throws IOException {
        final RdmaServerSocketChannel server = fixture.listening();
        server.configureBlocking(false);

        assertNull(server.accept());
    }

    @Test
    void shouldLetAcceptedChannelsInheritTheRdmaOptions() throws IOException {
        final RdmaServerSocketChannel server = fixture.server();
        server.setOption(StandardSocketOptions.SO_RCVBUF, 10_000);
        server.setOption(RdmaSocketOptions.RDMA_BUSY_POLL, 7);
        server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
        final RdmaSocketChannel client = fixture.socket();
        client.connect(server.getLocalAddress());

        final SocketChannel accepted = fixture.track(server.accept());

        assertEquals(10_000, accepted.getOption(StandardSocketOptions.SO_RCVBUF));
        assertEquals(7, accepted.getOption(RdmaSocketOptions.RDMA_BUSY_POLL));
        assertEquals(Set.of(StandardSocketOptions.SO_RCVBUF, StandardSocketOptions.SO_REUSEADDR,
            RdmaSocketOptions.RDMA_SEND_QUEUE_SIZE, RdmaSocketOptions.RDMA_RECEIVE_QUEUE_SIZE,
            RdmaSocketOptions.RDMA_INLINE_SIZE, RdmaSocketOptions.RDMA_BUSY_POLL, RdmaSocketOptions.RDMA_PATH_POLICY,
            RdmaSocketOptions.RDMA_PATH, RdmaSocketOptions.RDMA_CONNECTION_FILTER,
            RdmaSocketOptions.RDMA_CONNECTION_MANAGER, RdmaSocketOptions.RDMA_SHARED_RECEIVE_QUEUE,
            RdmaSocketOptions.RDMA_XRC), server.supportedOptions());
        assertEquals(true, server.getOption(StandardSocketOptions.SO_REUSEADDR));
        assertThrows(UnsupportedOperationException.class,
            () -> server.setOption(StandardSocketOptions.SO_SNDBUF, 1));
    }

    @Test
    void shouldAskTheEngineForTheXrcModeWhereTheChannelsSetIt() throws IOException {
        final RdmaServerSocketChannel server = fixture.server();
        assertEquals(false, server.getOption(RdmaSocketOptions.RDMA_XRC));
        server.setOption(RdmaSocketOptions.RDMA_XRC, true);
        server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
        final RdmaSocketChannel client = fixture.socket();
        client.setOption(RdmaSocketOptions.RDMA_XRC, true);
        assertEquals(true, client.getOption(RdmaSocketOptions.RDMA_XRC));
        client.connect(server.getLocalAddress());
        final SocketChannel accepted = fixture.track(server.accept());
        assertEquals(true, accepted.getOption(RdmaSocketOptions.RDMA_XRC));
        assertTrue(fixture.transport.listenOptions.get(0).xrc(), "the listener's connections");
        assertTrue(fixture.transport.connectOptions.get(0).xrc(), "the client");
    }

    @Test
    void shouldListenInSrqModeWhenAsked() throws IOException {
        final RdmaServerSocketChannel server = fixture.server();
        assertEquals(false, server.getOption(RdmaSocketOptions.RDMA_SHARED_RECEIVE_QUEUE));
        server.setOption(RdmaSocketOptions.RDMA_SHARED_RECEIVE_QUEUE, true);
        server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
        final RdmaSocketChannel client = fixture.socket();
        client.connect(server.getLocalAddress());
        final SocketChannel accepted = fixture.track(server.accept());

        assertEquals(true, accepted.getOption(RdmaSocketOptions.RDMA_SHARED_RECEIVE_QUEUE));
        assertTrue(fixture.transport.listenOptions.get(0).sharedReceiveQueue(), "the listener's connections");
        assertFalse(fixture.transport.connectOptions.get(0).sharedReceiveQueue(), "the client did not ask");
        // a message each way
        client.write(ByteBuffer.wrap(new byte[] {1, 2, 3}));
        final ByteBuffer in = ByteBuffer.allocate(8);
        while (in.position() < 3) {
            accepted.read(in);
        }
        accepted.write(in.flip());
        final ByteBuffer back = ByteBuffer.allocate(8);
        while (back.position() < 3) {
            client.read(back);
        }
        assertEquals(ByteBuffer.wrap(new byte[] {1, 2, 3}), back.flip());
    }

    @ParameterizedTest
    @ValueSource(booleans = {false, true})
    void shouldWakeABlockedAcceptOnClose(final boolean virtual) throws Exception {
        final RdmaServerSocketChannel server = fixture.listening();

        final Throwable failure = failureOf(virtual, server::accept, () -> {
            try {
                server.close();
            } catch (final IOException ex) {
                throw new AssertionError(ex);
            }
        });

        assertEquals(AsynchronousCloseException.class, failure.getClass());
        ChannelFixture.await("the listener to close", () -> fixture.transport.listeners().isEmpty());
    }

    @ParameterizedTest
    @ValueSource(booleans = {false, true})
    void shouldCloseOnInterruptOfABlockedAccept(final boolean virtual) throws Exception {
        final RdmaServerSocketChannel server = fixture.listening();
        final Thread[] acceptor = new Thread[1];

        final Throwable failure = failureOf(virtual, () -> {
            acceptor[0] = Thread.currentThread();
            return server.accept();
        }, () -> acceptor[0].interrupt());

        assertEquals(ClosedByInterruptException.class, failure.getClass());
        assertFalse(server.isOpen());
    }

    @Test
    void shouldAcceptOnAVirtualThreadWhenAClientArrives() throws Exception {
        final RdmaServerSocketChannel server = fixture.listening();
        final FutureTask<SocketChannel> accept = new FutureTask<>(server::accept);
        final Thread thread = Thread.ofVirtual().start(accept);
        ChannelFixture.awaitBlocked(thread);

        fixture.socket().connect(fixture.serverAddress());

        assertTrue(fixture.track(accept.get(5, TimeUnit.SECONDS)).isConnected());
    }
}

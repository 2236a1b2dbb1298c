package io.rdmachannel.nio;

import static java.net.StandardSocketOptions.IP_TOS;
import static java.net.StandardSocketOptions.SO_KEEPALIVE;
import static java.net.StandardSocketOptions.SO_LINGER;
import static java.net.StandardSocketOptions.SO_RCVBUF;
import static java.net.StandardSocketOptions.SO_REUSEADDR;
import static java.net.StandardSocketOptions.SO_SNDBUF;
import static java.net.StandardSocketOptions.TCP_NODELAY;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ProtocolFamily;
import java.net.SocketAddress;
import java.net.SocketOption;
import java.net.StandardProtocolFamily;
import java.net.StandardSocketOptions;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.AlreadyBoundException;
import java.nio.channels.AlreadyConnectedException;
import java.nio.channels.AsynchronousCloseException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ConnectionPendingException;
import java.nio.channels.DatagramChannel;
import java.nio.channels.NoConnectionPendingException;
import java.nio.channels.NotYetConnectedException;
import java.nio.channels.Pipe;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.channels.UnresolvedAddressException;
import java.nio.channels.UnsupportedAddressTypeException;
import java.nio.channels.spi.SelectorProvider;
import java.util.Set;

import io.rdmachannel.channel.IbSocketAddress;
import io.rdmachannel.channel.stream.StreamConfiguration;
import io.rdmachannel.channel.stream.StreamOptions;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(10)
class SocketChannelStateTest {
    private final ChannelFixture fixture = new ChannelFixture();

    @AfterEach
    void close() throws IOException {
        fixture.close();
    }

    @Test
    void shouldStartUnconnectedBlockingAndOpen() throws IOException {
        final RdmaSocketChannel channel = fixture.socket();

        assertTrue(channel.isOpen());
        assertTrue(channel.isBlocking());
        assertFalse(channel.isConnected());
        assertFalse(channel.isConnectionPending());
        assertNull(channel.getLocalAddress());
        assertNull(channel.getRemoteAddress());
        assertSame(fixture.provider, channel.provider());
    }

    @Test
    void shouldCheckTheAddressBeforeTheState() throws IOException {
        final RdmaSocketChannel channel = fixture.socket();
        channel.close();

        assertThrows(NullPointerException.class, () -> channel.connect(null));
        assertThrows(UnsupportedAddressTypeException.class, () -> channel.connect(UnixDomainSocketAddress.of("x")));
        assertThrows(UnresolvedAddressException.class,
            () -> channel.connect(InetSocketAddress.createUnresolved("nowhere.invalid", 1)));
        assertSame(ClosedChannelException.class,
            assertThrows(ClosedChannelException.class, () -> channel.connect(fixture.serverAddress())).getClass());
    }

    @Test
    void shouldRefuseIpv6OnAnInetChannel() throws IOException {
        final RdmaSocketChannel channel =
            fixture.track((RdmaSocketChannel) fixture.provider.openSocketChannel(StandardProtocolFamily.INET));

        assertThrows(UnsupportedAddressTypeException.class,
            () -> channel.connect(new InetSocketAddress(InetAddress.getByName("::1"), 80)));
        assertTrue(channel.isOpen());
    }

    @Test
    void shouldConnectBlockingAndReportAddresses() throws IOException {
        final SocketChannel[] pair = fixture.pair();

        assertTrue(pair[0].isConnected());
        assertFalse(pair[0].isConnectionPending());
        assertEquals(fixture.serverAddress(), pair[0].getRemoteAddress());
        assertEquals(pair[0].getLocalAddress(), pair[1].getRemoteAddress());
        assertTrue(pair[0].finishConnect());
        assertThrows(AlreadyConnectedException.class, () -> pair[0].connect(fixture.serverAddress()));
        assertThrows(AlreadyBoundException.class, () -> pair[0].bind(null));
    }

    @Test
    void shouldConnectAWildcardAddressToLoopback() throws IOException {
        final RdmaSocketChannel channel = fixture.socket();
        final int port = fixture.serverAddress().getPort();

        channel.connect(new InetSocketAddress(port));

        assertTrue(((InetSocketAddress) channel.getRemoteAddress()).getAddress().isLoopbackAddress());
    }

    @Test
    void shouldConnectNonBlockingThroughPendingState() throws IOException {
        final RdmaSocketChannel channel = fixture.socket();
        channel.configureBlocking(false);
        fixture.transport.unanswered.add(fixture.serverAddress().getPort());

        assertFalse(channel.connect(fixture.serverAddress()));
        assertTrue(channel.isConnectionPending());
        assertFalse(channel.finishConnect());
        assertThrows(ConnectionPendingException.class, () -> channel.connect(fixture.serverAddress()));
        assertThrows(ConnectionPendingException.class, () -> channel.bind(null));
        assertEquals(fixture.serverAddress(), channel.getRemoteAddress());
        fixture.transport.release();
        ChannelFixture.await("finishConnect", () -> {
            try {
                return channel.finishConnect();
            } catch (final IOException ex) {
                throw new AssertionError(ex);
            }
        });

        assertTrue(channel.isConnected());
        assertFalse(channel.isConnectionPending());
    }

    @Test
    void shouldRefuseFinishConnectWithoutConnect() throws IOException {
        final RdmaSocketChannel channel = fixture.socket();

        assertThrows(NoConnectionPendingException.class, channel::finishConnect);
        channel.close();
        assertThrows(ClosedChannelException.class, channel::finishConnect);
    }

    @Test
    void shouldCloseTheChannelWhenTheConnectionIsRefused() throws IOException {
        final RdmaSocketChannel channel = fixture.socket();

        final ConnectException failure = assertThrows(ConnectException.class,
            () -> channel.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), 9)));

        assertTrue(failure.getMessage().startsWith("Connection refused"), failure.getMessage());
        assertFalse(channel.isOpen());
        assertTrue(fixture.transport.allReleased());
    }

    @Test
    void shouldCloseTheChannelWhenFinishConnectFails() throws IOException {
        final RdmaSocketChannel channel = fixture.socket();
        channel.configureBlocking(false);
        fixture.transport.unanswered.add(9);

        assertFalse(channel.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), 9)));
        fixture.transport.release();
        ChannelFixture.await("failure", () -> {
            try {
                channel.finishConnect();
                return false;
            } catch (final ConnectException ex) {
                return true;
            } catch (final IOException ex) {
                throw new AssertionError(ex);
            }
        });

        assertFalse(channel.isOpen());
    }

    @Test
    void shouldFailOpenWithAddressWhenNobodyListens() {
        // RdmaSocketChannel.open(SocketAddress) uses the default provider (shm here); the channel it opened is closed
        final ConnectException failure = assertThrows(ConnectException.class,
            () -> RdmaSocketChannel.open(new InetSocketAddress(InetAddress.getLoopbackAddress(), 1)));

        assertTrue(failure.getMessage().startsWith("Connection refused"), failure.getMessage());
    }

    @Test
    void shouldConnectToAnInfiniBandAddressAsGiven() throws IOException {
        final IbSocketAddress address = IbSocketAddress.parse("ib:[fe80::1]:7471?pkey=0x8001");
        final RdmaServerSocketChannel server = fixture.server();
        server.bind(address);
        final RdmaSocketChannel channel = fixture.socket();

        channel.connect(address);

        assertSame(address, channel.getRemoteAddress());
        assertEquals(address, server.getLocalAddress());
        assertEquals(channel.getLocalAddress(), fixture.track(server.accept()).getRemoteAddress());
    }

    @Test
    void shouldBindOnceAndPassTheAddressToConnect() throws IOException {
        final RdmaSocketChannel channel = fixture.socket();
        final InetSocketAddress local = new InetSocketAddress(InetAddress.getLoopbackAddress(), 50_001);

        channel.bind(local);

        assertEquals(local, channel.getLocalAddress());
        assertThrows(AlreadyBoundException.class, () -> channel.bind(null));
        channel.connect(fixture.serverAddress());
        assertEquals(local, channel.getLocalAddress());
    }

    @Test
    void shouldBindNullToAnEphemeralWildcardAddress() throws IOException {
        final RdmaSocketChannel channel = fixture.socket();

        channel.bind(null);

        final InetSocketAddress local = (InetSocketAddress) channel.getLocalAddress();
        assertTrue(local.getAddress().isAnyLocalAddress());
        assertEquals(0, local.getPort());
    }

    @Test
    void shouldRefuseBadBindAddresses() throws IOException {
        final RdmaSocketChannel channel = fixture.socket();

        assertThrows(UnsupportedAddressTypeException.class, () -> channel.bind(UnixDomainSocketAddress.of("x")));
        assertThrows(UnresolvedAddressException.class,
            () -> channel.bind(InetSocketAddress.createUnresolved("nowhere.invalid", 1)));
        channel.close();
        assertThrows(ClosedChannelException.class, () -> channel.bind(null));
    }

    @Test
    void shouldCheckReadAndWriteArgumentsThenState() throws IOException {
        final RdmaSocketChannel channel = fixture.socket();
        final ByteBuffer buffer = ByteBuffer.allocate(8);

        assertThrows(NullPointerException.class, () -> channel.read((ByteBuffer) null));
        assertThrows(IndexOutOfBoundsException.class, () -> channel.read(new ByteBuffer[1], 1, 1));
        assertThrows(IndexOutOfBoundsException.class, () -> channel.write(new ByteBuffer[1], -1, 1));
        assertThrows(NotYetConnectedException.class, () -> channel.read(buffer));
        assertThrows(NotYetConnectedException.class, () -> channel.write(buffer));
        assertThrows(NotYetConnectedException.class, channel::shutdownInput);
        assertThrows(NotYetConnectedException.class, channel::shutdownOutput);
        channel.close();
        assertSame(ClosedChannelException.class, assertThrows(ClosedChannelException.class,
            () -> channel.read(buffer)).getClass());
        assertSame(ClosedChannelException.class, assertThrows(ClosedChannelException.class,
            () -> channel.write(new ByteBuffer[] {buffer})).getClass());
        assertThrows(ClosedChannelException.class, channel::shutdownInput);
        assertThrows(ClosedChannelException.class, channel::getLocalAddress);
        assertThrows(ClosedChannelException.class, channel::getRemoteAddress);
    }

    @Test
    void shouldRefuseAReadOnlyBuffer() throws IOException {
        final SocketChannel[] pair = fixture.pair();

        final IllegalArgumentException failure = assertThrows(IllegalArgumentException.class,
            () -> pair[0].read(ByteBuffer.allocate(1).asReadOnlyBuffer()));

        assertEquals("Read-only buffer", failure.getMessage());
    }

    @Test
    void shouldStopReadingAtEndOfStreamAfterShutdownInputAndWritingAfterShutdownOutput() throws IOException {
        final SocketChannel[] pair = fixture.pair();

        pair[0].shutdownInput().shutdownInput();
        pair[0].shutdownOutput().shutdownOutput();

        assertEquals(-1, pair[0].read(ByteBuffer.allocate(1)));
        assertEquals(-1, pair[0].read(ByteBuffer.allocate(1)));
        // the JDK's SocketChannelImpl throws this subclass of ClosedChannelException (the contract suite's oracle)
        assertSame(AsynchronousCloseException.class, assertThrows(ClosedChannelException.class,
            () -> pair[0].write(ByteBuffer.allocate(1))).getClass());
        assertEquals(-1, pair[1].read(ByteBuffer.allocate(1)));
        assertTrue(pair[0].socket().isInputShutdown());
        assertTrue(pair[0].socket().isOutputShutdown());
    }

    @Test
    void shouldSupportTheStandardAndRdmaOptions() throws IOException {
        final RdmaSocketChannel channel = fixture.socket();

        assertEquals(Set.of(SO_SNDBUF, SO_RCVBUF, SO_KEEPALIVE, SO_REUSEADDR, SO_LINGER, TCP_NODELAY, IP_TOS,
            RdmaSocketOptions.RDMA_SEND_QUEUE_SIZE, RdmaSocketOptions.RDMA_RECEIVE_QUEUE_SIZE,
            RdmaSocketOptions.RDMA_INLINE_SIZE, RdmaSocketOptions.RDMA_BUSY_POLL, RdmaSocketOptions.RDMA_PATH_POLICY,
            RdmaSocketOptions.RDMA_PATH, RdmaSocketOptions.RDMA_CONNECTION_MANAGER,
            RdmaSocketOptions.RDMA_SHARED_RECEIVE_QUEUE, RdmaSocketOptions.RDMA_XRC), channel.supportedOptions());
        assertEquals(StreamConfiguration.SEND_BUFFER_LENGTH_DEFAULT, channel.getOption(SO_SNDBUF));
        assertEquals(-1, channel.getOption(SO_LINGER));
        assertEquals(false, channel.getOption(TCP_NODELAY));
        assertEquals(StreamConfiguration.POLLING_TIME_DEFAULT, channel.getOption(RdmaSocketOptions.RDMA_BUSY_POLL));
    }

    @Test
    void shouldRoundTripOptionValuesAndPassRingSizesToTheEngine() throws IOException {
        final RdmaSocketChannel channel = fixture.socket();

        channel.setOption(SO_SNDBUF, 5000).setOption(SO_RCVBUF, 1).setOption(SO_KEEPALIVE, true)
            .setOption(SO_REUSEADDR, true).setOption(SO_LINGER, 100_000).setOption(TCP_NODELAY, true)
            .setOption(IP_TOS, 0x10).setOption(RdmaSocketOptions.RDMA_SEND_QUEUE_SIZE, 64)
            .setOption(RdmaSocketOptions.RDMA_RECEIVE_QUEUE_SIZE, 32)
            .setOption(RdmaSocketOptions.RDMA_INLINE_SIZE, 128).setOption(RdmaSocketOptions.RDMA_BUSY_POLL, 50);
        channel.connect(fixture.serverAddress());

        assertEquals(5000, channel.getOption(SO_SNDBUF));
        assertEquals(1, channel.getOption(SO_RCVBUF));
        assertEquals(true, channel.getOption(SO_KEEPALIVE));
        assertEquals(true, channel.getOption(SO_REUSEADDR));
        assertEquals(65535, channel.getOption(SO_LINGER));
        assertEquals(true, channel.getOption(TCP_NODELAY));
        assertEquals(0x10, channel.getOption(IP_TOS));
        assertEquals(50, channel.getOption(RdmaSocketOptions.RDMA_BUSY_POLL));
        final StreamOptions given = fixture.transport.connectOptions.getFirst();
        assertEquals(8192, given.sendBufferSize());
        assertEquals(StreamOptions.MIN_BUFFER, given.receiveBufferSize());
        assertTrue(given.keepAlive());
        assertEquals(64, given.sendQueueSize());
        assertEquals(32, given.receiveQueueSize());
        assertEquals(128, given.inlineSize());
        assertEquals(50_000, given.busyPollNanos());
    }

    @Test
    void shouldApplyKeepAliveToAnEstablishedConnection() throws IOException {
        final RdmaSocketChannel channel = fixture.socket();
        channel.connect(fixture.serverAddress());
        final FakeConnection connection = fixture.transport.connections.getFirst();
        assertNull(connection.keepAlive);

        channel.setOption(SO_KEEPALIVE, true);
        assertEquals(true, connection.keepAlive);
        assertEquals(true, channel.getOption(SO_KEEPALIVE));
        channel.setOption(SO_KEEPALIVE, false);
        assertEquals(false, connection.keepAlive);
        channel.setOption(SO_SNDBUF, 4096);
        assertEquals(false, connection.keepAlive);
    }

    @Test
    void shouldCheckOptionArgumentsBeforeTheState() throws IOException {
        final RdmaSocketChannel channel = fixture.socket();
        @SuppressWarnings("unchecked")
        final SocketOption<Object> raw = (SocketOption<Object>) (SocketOption<?>) SO_SNDBUF;

        assertThrows(NullPointerException.class, () -> channel.setOption(null, 1));
        assertEquals("'SO_REUSEPORT' not supported", assertThrows(UnsupportedOperationException.class,
            () -> channel.setOption(StandardSocketOptions.SO_REUSEPORT, true)).getMessage());
        assertThrows(UnsupportedOperationException.class,
            () -> channel.getOption(StandardSocketOptions.SO_BROADCAST));
        assertEquals("Invalid value 'x'", assertThrows(IllegalArgumentException.class,
            () -> channel.setOption(raw, "x")).getMessage());
        assertEquals("Invalid send/receive buffer size", assertThrows(IllegalArgumentException.class,
            () -> channel.setOption(SO_RCVBUF, -1)).getMessage());
        assertEquals("Invalid IP_TOS value", assertThrows(IllegalArgumentException.class,
            () -> channel.setOption(IP_TOS, 256)).getMessage());
        assertEquals("sendQueueSize must be in [16, 65534]: sendQueueSize=1", assertThrows(
            IllegalArgumentException.class, () -> channel.setOption(RdmaSocketOptions.RDMA_SEND_QUEUE_SIZE, 1))
            .getMessage());
        assertEquals("RDMA_BUSY_POLL must be at least 0: RDMA_BUSY_POLL=-1", assertThrows(
            IllegalArgumentException.class, () -> channel.setOption(RdmaSocketOptions.RDMA_BUSY_POLL, -1))
            .getMessage());
        channel.close();
        assertThrows(IllegalArgumentException.class, () -> channel.setOption(raw, "x"));
        assertThrows(ClosedChannelException.class, () -> channel.setOption(SO_SNDBUF, 1));
        assertThrows(ClosedChannelException.class, () -> channel.getOption(SO_SNDBUF));
    }

    @Test
    void shouldHandOtherChannelKindsToThePlatform() throws IOException {
        final RdmaSelectorProvider provider = fixture.provider;
        final SelectorProvider platform = SelectorProvider.provider();

        assertThrows(NullPointerException.class, () -> provider.openSocketChannel(null));
        assertThrows(NullPointerException.class, () -> provider.openServerSocketChannel(null));
        final ProtocolFamily unknown = new ProtocolFamily() {
            @Override
            public String name() {
                return "APPLETALK";
            }

            @Override
            public String toString() {
                return name();
            }
        };
        assertEquals("Protocol family not supported: APPLETALK (RDMA channels support INET and INET6)",
            assertThrows(UnsupportedOperationException.class, () -> provider.openSocketChannel(unknown))
                .getMessage());
        try (SocketChannel unix = provider.openSocketChannel(StandardProtocolFamily.UNIX);
            ServerSocketChannel unixServer = provider.openServerSocketChannel(StandardProtocolFamily.UNIX);
            DatagramChannel datagram = provider.openDatagramChannel();
            DatagramChannel datagram4 = provider.openDatagramChannel(StandardProtocolFamily.INET)) {
            assertSame(platform, unix.provider());
            assertSame(platform, unixServer.provider());
            assertSame(platform, datagram.provider());
            assertSame(platform, datagram4.provider());
        }
        final Pipe pipe = provider.openPipe();
        assertSame(platform, pipe.source().provider());
        pipe.source().close();
        pipe.sink().close();
        assertSame(platform, RdmaSelectorProvider.platformProvider());
    }

    @Test
    void shouldOpenTheDefaultProviderLazily() throws IOException {
        final RdmaSelectorProvider provider = new RdmaSelectorProvider();

        provider.openSelector().close();
        try (SocketChannel channel = provider.openSocketChannel()) {
            assertFalse(channel.isConnected());
        }
        assertSame(RdmaSelectorProvider.provider(), RdmaSelectorProvider.provider());
    }

    @Test
    void shouldDescribeItsState() throws IOException {
        final RdmaSocketChannel channel = fixture.socket();
        final SocketAddress server = fixture.serverAddress();

        assertEquals("io.rdmachannel.nio.RdmaSocketChannel[unconnected]", channel.toString());
        channel.connect(server);
        assertTrue(channel.toString().startsWith("io.rdmachannel.nio.RdmaSocketChannel[connected local="),
            channel.toString());
        channel.close();
        assertEquals("io.rdmachannel.nio.RdmaSocketChannel[closed]", channel.toString());
    }
}

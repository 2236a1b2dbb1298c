package io.rdmachannel.interop.cm;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmachannel.channel.IbSocketAddress;
import io.rdmachannel.channel.cm.oob.OobConnectionManager;
import io.rdmachannel.channel.spi.RdmaProviders;
import io.rdmachannel.channel.stream.StreamTransport;
import io.rdmachannel.channel.stream.StreamTransports;
import io.rdmachannel.nio.RdmaSelectorProvider;
import io.rdmachannel.nio.RdmaSocketOptions;

import java.io.IOException;
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The connection manager chosen per channel ({@link RdmaSocketOptions#RDMA_CONNECTION_MANAGER}) on two shm nodes
 * whose JVM-wide manager is {@code shm}: a server channel and a client that both choose {@code oob} connect through
 * its TCP side channel (by IP address and by the loopback's RoCE GID), a client that keeps the default finds no
 * listener there, an unknown name fails the connect with the names the provider offers; a client in the XRC mode
 * connects in RC through either manager to a server without it.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class ConnectionManagerOptionTest {
    private static final InetAddress LOOPBACK = InetAddress.getLoopbackAddress();

    private StreamTransport serverTransport;
    private StreamTransport clientTransport;
    private RdmaSelectorProvider server;
    private RdmaSelectorProvider client;

    @BeforeEach
    void open() {
        serverTransport = StreamTransports.open(RdmaProviders.byName("shm"));
        clientTransport = StreamTransports.open(RdmaProviders.byName("shm"));
        server = new RdmaSelectorProvider(serverTransport);
        client = new RdmaSelectorProvider(clientTransport);
    }

    @AfterEach
    void close() {
        StreamTransports.close(clientTransport);
        StreamTransports.close(serverTransport);
    }

    @Test
    void shouldConnectThroughTheManagerBothChannelsChose() throws Exception {
        try (ServerSocketChannel listener = server.openServerSocketChannel();
            SocketChannel channel = client.openSocketChannel()) {
            assertNull(listener.getOption(RdmaSocketOptions.RDMA_CONNECTION_MANAGER), "the JVM's by default");
            listener.setOption(RdmaSocketOptions.RDMA_CONNECTION_MANAGER, OobConnectionManager.NAME);
            listener.bind(new InetSocketAddress(LOOPBACK, 0));
            final int port = ((InetSocketAddress) listener.getLocalAddress()).getPort();
            // oob's side channel listens on the RDMA port plus the offset: the listener is oob's
            try (SocketChannel probe = SocketChannel.open(new InetSocketAddress(LOOPBACK, sidePort(port)))) {
                assertTrue(probe.isConnected());
            }
            channel.setOption(RdmaSocketOptions.RDMA_CONNECTION_MANAGER, OobConnectionManager.NAME);
            assertEquals(OobConnectionManager.NAME, channel.getOption(RdmaSocketOptions.RDMA_CONNECTION_MANAGER));
            assertTrue(channel.connect(listener.getLocalAddress()));
            try (SocketChannel accepted = listener.accept()) {
                assertEquals(channel.getLocalAddress(), accepted.getRemoteAddress());
                echo(channel, accepted, "through oob");
            }
        }
    }

    @Test
    void shouldConnectByTheLoopbacksGidThroughOob() throws Exception {
        final byte[] gid = new byte[IbSocketAddress.GID_LENGTH];
        gid[10] = (byte) 0xff;
        gid[11] = (byte) 0xff;
        System.arraycopy(LOOPBACK.getAddress(), 0, gid, 12, 4);
        try (ServerSocketChannel listener = server.openServerSocketChannel();
            SocketChannel channel = client.openSocketChannel()) {
            listener.setOption(RdmaSocketOptions.RDMA_CONNECTION_MANAGER, OobConnectionManager.NAME);
            listener.bind(IbSocketAddress.of(gid, 0));
            final IbSocketAddress bound = (IbSocketAddress) listener.getLocalAddress();
            assertArrayEquals(gid, bound.gid());
            channel.setOption(RdmaSocketOptions.RDMA_CONNECTION_MANAGER, OobConnectionManager.NAME);
            assertTrue(channel.connect(bound));
            assertEquals(bound, channel.getRemoteAddress());
            try (SocketChannel accepted = listener.accept()) {
                assertEquals(channel.getLocalAddress(), accepted.getRemoteAddress());
                assertArrayEquals(gid, ((IbSocketAddress) accepted.getRemoteAddress()).gid());
                echo(channel, accepted, "by GID");
            }
        }
    }

    @Test
    void shouldFindNoListenerWithAnotherManager() throws Exception {
        try (ServerSocketChannel listener = server.openServerSocketChannel();
            SocketChannel channel = client.openSocketChannel()) {
            listener.setOption(RdmaSocketOptions.RDMA_CONNECTION_MANAGER, OobConnectionManager.NAME);
            listener.bind(new InetSocketAddress(LOOPBACK, 0));
            // the shm manager's rendezvous has no listener on that port: the server only listens through oob
            final ConnectException refused = assertThrows(ConnectException.class,
                () -> channel.connect(listener.getLocalAddress()));
            assertEquals("Connection refused", refused.getMessage());
            assertFalse(channel.isOpen());
        }
    }

    @Test
    void shouldNameTheManagersOnOfferForAnUnknownName() throws Exception {
        try (SocketChannel channel = client.openSocketChannel()) {
            channel.setOption(RdmaSocketOptions.RDMA_CONNECTION_MANAGER, "ucx");
            final IOException unknown = assertThrows(IOException.class,
                () -> channel.connect(new InetSocketAddress(LOOPBACK, 7471)));
            assertEquals("the shm provider has no connection manager named 'ucx'; it offers shm, and every "
                + "provider offers oob", unknown.getMessage());
        }
        try (SocketChannel channel = client.openSocketChannel()) {
            assertThrows(IllegalArgumentException.class,
                () -> channel.setOption(RdmaSocketOptions.RDMA_CONNECTION_MANAGER, " "));
        }
    }

    /**
     * A client channel in the XRC mode ({@link RdmaSocketOptions#RDMA_XRC}) against a server channel without it,
     * through each manager that lets the stream make its own queue pairs: the listener refuses the XRC request, and
     * the connect still completes, in RC, as one connect to the application: a non-blocking one is selected once for
     * {@code OP_CONNECT} and {@code finishConnect()} then returns true; a blocking one returns connected; the next
     * connect there asks for RC at once (the engine's {@code XrcStreamTest} checks the mode and the memory).
     */
    @ParameterizedTest
    @ValueSource(strings = {"shm", OobConnectionManager.NAME})
    void shouldConnectInRcWhereTheServerDoesNotTakeXrc(final String manager) throws Exception {
        try (ServerSocketChannel listener = server.openServerSocketChannel();
            Selector selector = client.openSelector()) {
            listener.setOption(RdmaSocketOptions.RDMA_CONNECTION_MANAGER, manager);
            listener.bind(new InetSocketAddress(LOOPBACK, 0));
            try (SocketChannel channel = client.openSocketChannel()) {
                channel.setOption(RdmaSocketOptions.RDMA_CONNECTION_MANAGER, manager);
                channel.setOption(RdmaSocketOptions.RDMA_XRC, true);
                channel.configureBlocking(false);
                if (!channel.connect(listener.getLocalAddress())) {
                    channel.register(selector, SelectionKey.OP_CONNECT);
                    assertEquals(1, selector.select(TimeUnit.SECONDS.toMillis(30)), channel::toString);
                    assertTrue(channel.finishConnect(), "one selection for one connect: " + channel);
                }
                assertTrue(channel.getOption(RdmaSocketOptions.RDMA_PATH).isRdma(), channel::toString);
                channel.keyFor(selector).cancel();
                selector.selectNow();
                channel.configureBlocking(true);
                try (SocketChannel accepted = listener.accept()) {
                    echo(channel, accepted, "after the refusal, in RC");
                    echo(accepted, channel, "and back");
                }
            }
            try (SocketChannel again = client.openSocketChannel()) {
                again.setOption(RdmaSocketOptions.RDMA_CONNECTION_MANAGER, manager);
                again.setOption(RdmaSocketOptions.RDMA_XRC, true);
                assertTrue(again.connect(listener.getLocalAddress()));
                assertTrue(again.getOption(RdmaSocketOptions.RDMA_PATH).isRdma(), again::toString);
                try (SocketChannel accepted = listener.accept()) {
                    echo(again, accepted, "remembered");
                }
            }
        }
    }

    private static void echo(final SocketChannel from, final SocketChannel to, final String text) throws IOException {
        final byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
        final ByteBuffer out = ByteBuffer.wrap(bytes);
        while (out.hasRemaining()) {
            from.write(out);
        }
        final ByteBuffer in = ByteBuffer.allocate(bytes.length);
        while (in.hasRemaining()) {
            assertTrue(to.read(in) > 0, "end of stream");
        }
        assertArrayEquals(bytes, in.array());
    }

    private static int sidePort(final int port) {
        return (port - 1 + OobConnectionManager.PORT_OFFSET_DEFAULT) % 65535 + 1;
    }
}

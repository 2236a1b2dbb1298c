package io.rdmachannel.interop.cm;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmachannel.channel.spi.RdmaProviders;
import io.rdmachannel.channel.stream.StreamTransport;
import io.rdmachannel.channel.stream.StreamTransports;
import io.rdmachannel.nio.RdmaPath;
import io.rdmachannel.nio.RdmaSelectorProvider;
import io.rdmachannel.nio.RdmaSocketOptions;

import java.io.IOException;
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
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A client channel in the XRC mode ({@link RdmaSocketOptions#RDMA_XRC}) against a server channel without it, on two
 * shm nodes, through each connection manager that lets the stream make its own queue pairs: the listener refuses
 * the XRC request, and the connect still completes, in RC, as the application sees one connect: a non-blocking one
 * is selected once for {@code OP_CONNECT} and {@code finishConnect()} then returns true, a blocking one returns
 * connected; the next connect to that server asks for RC at once. (The engine's test, {@code XrcStreamTest}, checks
 * the mode and the memory of the refusal.)
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class XrcFallbackTest {
    private static final InetAddress LOOPBACK = InetAddress.getLoopbackAddress();
    private static final long SECONDS = 30;

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

    @ParameterizedTest
    @ValueSource(strings = {"shm", "oob"})
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
                    assertEquals(1, selector.select(TimeUnit.SECONDS.toMillis(SECONDS)), channel::toString);
                    assertTrue(channel.finishConnect(), "one selection for one connect: " + channel);
                }
                assertRdma(channel);
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
                assertRdma(again);
                try (SocketChannel accepted = listener.accept()) {
                    echo(again, accepted, "remembered");
                }
            }
        }
    }

    private static void assertRdma(final SocketChannel channel) throws IOException {
        final RdmaPath path = channel.getOption(RdmaSocketOptions.RDMA_PATH);
        assertTrue(path.isRdma(), path::toString);
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
}

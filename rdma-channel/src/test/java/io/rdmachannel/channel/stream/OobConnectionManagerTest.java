package io.rdmachannel.channel.stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmachannel.channel.IbSocketAddress;
import io.rdmachannel.channel.cm.CmEndpoint;
import io.rdmachannel.channel.cm.ConnectionRequest;
import io.rdmachannel.channel.cm.RejectReason;
import io.rdmachannel.channel.cm.Rejection;
import io.rdmachannel.channel.cm.oob.OobConnectionManager;
import io.rdmachannel.channel.spi.QueuePair;
import io.rdmachannel.channel.spi.RdmaDevice;
import io.rdmachannel.channel.spi.RdmaProviders;
import java.io.IOException;
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.channels.UnsupportedAddressTypeException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The {@code oob} connection manager on the shm provider, between two transports (two devices, as two processes
 * have): a stream over a TCP side channel's handshake, the listener's filter and its words at the requester, the
 * addresses both ends see, and the failures a side channel can bring: nobody listening, a silent listener, a
 * request that is malformed or of another version. Every test ends with both transports closed, which fails if a
 * queue pair or completion queue was left behind.
 */
@Timeout(30)
class OobConnectionManagerTest {
    private static final InetAddress LOOPBACK = InetAddress.getLoopbackAddress();
    private static final int MAGIC = 0x52444f42;

    private StreamTransport server;
    private StreamTransport client;
    private StreamListener listener;
    private final List<ConnectionRequest> requests = new CopyOnWriteArrayList<>();
    private volatile Rejection answer;

    @BeforeEach
    void open() throws IOException {
        server = StreamTransports.open(RdmaProviders.byName("shm"), OobConnectionManager.NAME);
        client = WithProperty.open(OobConnectionManager.CONNECT_TIMEOUT_PROP_NAME, "1500",
            () -> StreamTransports.open(RdmaProviders.byName("shm"), OobConnectionManager.NAME));
        listener = server.listen(new InetSocketAddress(LOOPBACK, 0), 8, new StreamOptions().requestFilter(request -> {
            requests.add(request);
            return answer;
        }), new BlockingStream.Waker());
    }

    @AfterEach
    void close() throws IOException {
        listener.close();
        StreamTransports.close(client);
        StreamTransports.close(server);
    }

    @Test
    void shouldCarryAStreamOverQueuePairsConnectedThroughTheSideChannel() throws Exception {
        final int port = ((InetSocketAddress) listener.localAddress()).getPort();
        try (SocketChannel probe = SocketChannel.open()) {
            // the side channel listens on the RDMA port plus the offset, not on the RDMA port
            probe.connect(new InetSocketAddress(LOOPBACK, sidePort(port)));
        }
        final BlockingStream.Waker waker = new BlockingStream.Waker();
        final byte[] data = new byte[1 << 20];
        new Random(7).nextBytes(data);
        try (StreamConnection connector = connect(waker);
            StreamConnection accepted = BlockingStream.accept(listener, waker)) {
            assertEquals(listener.localAddress(), connector.remoteAddress());
            assertEquals(connector.localAddress(), accepted.remoteAddress());
            assertEquals(requests.getFirst().remoteAddress(), accepted.remoteAddress());
            assertEquals("shm0", requests.getFirst().deviceName());
            final Thread writer = Thread.ofVirtual().start(() -> {
                try {
                    BlockingStream.writeFully(connector, ByteBuffer.wrap(data), waker);
                } catch (final IOException ex) {
                    throw new IllegalStateException(ex);
                }
            });
            final ByteBuffer received = ByteBuffer.allocate(data.length);
            while (received.hasRemaining()) {
                assertTrue(BlockingStream.read(accepted, received, waker) > 0, "end of stream after "
                    + received.position() + " bytes");
            }
            writer.join();
            assertArrayEquals(data, received.array());
        }
    }

    @Test
    void shouldGiveTheRequesterTheListenersReason() {
        answer = new Rejection(RejectReason.POLICY, "tenant 7 may not connect");
        final ConnectException refused = assertThrows(ConnectException.class,
            () -> connect(new BlockingStream.Waker()).close());
        assertTrue(refused.getMessage().contains("Connection refused by policy")
            && refused.getMessage().contains("tenant 7 may not connect"), refused.getMessage());
        assertEquals(1, requests.size());
    }

    @Test
    void shouldRefuseWhereNobodyListens() throws IOException {
        final int port = ((InetSocketAddress) listener.localAddress()).getPort();
        listener.close();
        final ConnectException refused = assertThrows(ConnectException.class,
            () -> BlockingStream.connect(client.connect(new InetSocketAddress(LOOPBACK, port), null,
                new StreamOptions(), new BlockingStream.Waker()), new BlockingStream.Waker()).close());
        assertEquals("Connection refused", refused.getMessage());
    }

    @Test
    void shouldStopOnlyOnceAFailingAttemptHasReleasedItsEndpoint() throws Exception {
        // the attempt has left its side channel behind and is in its endpoint's failed(), releasing what it holds:
        // a stop must wait for that, as the transport closes the devices right after
        final int port = ((InetSocketAddress) listener.localAddress()).getPort();
        listener.close();
        final CountDownLatch failing = new CountDownLatch(1);
        final AtomicBoolean released = new AtomicBoolean();
        final CmEndpoint endpoint = new CmEndpoint() {
            @Override
            public QueuePairSetup prepare(final RdmaDevice device) throws IOException {
                throw new IOException("not reached: nobody listens");
            }

            @Override
            public ByteBuffer bind(final QueuePair queuePair, final ByteBuffer peerPrivateData) {
                throw new AssertionError("not reached");
            }

            @Override
            public void established(final ByteBuffer peerPrivateData, final SocketAddress localAddress,
                final SocketAddress remoteAddress) {
                throw new AssertionError("not reached");
            }

            @Override
            public void failed(final IOException cause) {
                failing.countDown();
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(300));
                released.set(true);
            }
        };
        final OobConnectionManager manager = new OobConnectionManager(RdmaProviders.byName("shm"));
        try {
            manager.connect(new InetSocketAddress(LOOPBACK, port), null, endpoint);
            assertTrue(failing.await(10, TimeUnit.SECONDS), "the attempt never failed");
            manager.stop();
            assertTrue(released.get(), "stop() returned while the attempt was still releasing");
        } finally {
            manager.close();
        }
    }

    @Test
    void shouldTimeOutWhenTheSideChannelSaysNothing() throws IOException {
        try (ServerSocketChannel silent = ServerSocketChannel.open()) {
            silent.bind(new InetSocketAddress(LOOPBACK, 0));
            final int rdmaPort = (silent.socket().getLocalPort() - 1 - OobConnectionManager.PORT_OFFSET_DEFAULT
                + 65535) % 65535 + 1;
            assertEquals(silent.socket().getLocalPort(), sidePort(rdmaPort));
            final long start = System.nanoTime();
            final SocketTimeoutException timeout = assertThrows(SocketTimeoutException.class,
                () -> BlockingStream.connect(client.connect(new InetSocketAddress(LOOPBACK, rdmaPort), null,
                    new StreamOptions(), new BlockingStream.Waker()), new BlockingStream.Waker()).close());
            assertEquals("Connect timed out", timeout.getMessage());
            assertTrue(System.nanoTime() - start >= TimeUnit.MILLISECONDS.toNanos(1400), "timed out too soon");
        }
    }

    @Test
    void shouldRejectARequestOfAnotherVersionWithItsReason() throws IOException {
        final ByteBuffer reply = exchange(request(2, 1024));
        reply.getInt();
        assertEquals(MAGIC, reply.getInt());
        assertEquals(3, reply.get());
        assertEquals(RejectReason.UNSUPPORTED_PROTOCOL.code(), reply.get());
        assertTrue(requests.isEmpty(), "the filter saw " + requests);
    }

    @Test
    void shouldDropAMalformedRequestBeforeTheFilter() throws IOException {
        // a path MTU that is no MTU: the listener answers nothing and closes
        final ByteBuffer reply = exchange(request(1, 1000));
        assertEquals(0, reply.remaining(), "an answer to a malformed request");
        assertTrue(requests.isEmpty(), "the filter saw " + requests);
    }

    @Test
    void shouldFreeTheSideChannelsPortWhenTheListenerCloses() throws IOException {
        // a virtual thread blocked in accept keeps the socket until it wakes: close must wait for it
        for (int round = 0; round < 50; round++) {
            final StreamListener once = server.listen(new InetSocketAddress(LOOPBACK, 0), 8, new StreamOptions(),
                new BlockingStream.Waker());
            final int port = ((InetSocketAddress) once.localAddress()).getPort();
            once.close();
            try (ServerSocketChannel again = ServerSocketChannel.open()) {
                again.bind(new InetSocketAddress(LOOPBACK, sidePort(port)));
            }
        }
    }

    @Test
    void shouldConnectByGidThroughTheAddressItEmbeds() throws Exception {
        // ::ffff:127.0.0.1 is the RoCE GID of the loopback address: the side channel goes there
        final byte[] gid = new byte[16];
        gid[10] = (byte) 0xff;
        gid[11] = (byte) 0xff;
        System.arraycopy(LOOPBACK.getAddress(), 0, gid, 12, 4);
        final BlockingStream.Waker waker = new BlockingStream.Waker();
        try (StreamListener byGid = server.listen(IbSocketAddress.of(gid, 0), 8, new StreamOptions().requestFilter(
            request -> {
                requests.add(request);
                return null;
            }), waker)) {
            final IbSocketAddress bound = (IbSocketAddress) byGid.localAddress();
            assertArrayEquals(gid, bound.gid());
            assertTrue(bound.port() > 0, bound.toString());
            try (StreamConnection connector = BlockingStream.connect(client.connect(bound, null,
                new StreamOptions(), waker), waker);
                StreamConnection accepted = BlockingStream.accept(byGid, waker)) {
                assertEquals(bound, connector.remoteAddress());
                final IbSocketAddress requester = (IbSocketAddress) accepted.remoteAddress();
                assertArrayEquals(gid, requester.gid());
                assertEquals(connector.localAddress(), requester);
                assertEquals(requester, requests.getFirst().remoteAddress());
                final byte[] hello = "hello by GID".getBytes(StandardCharsets.US_ASCII);
                BlockingStream.writeFully(connector, ByteBuffer.wrap(hello), waker);
                final ByteBuffer received = ByteBuffer.allocate(hello.length);
                while (received.hasRemaining()) {
                    assertTrue(BlockingStream.read(accepted, received, waker) > 0, "end of stream");
                }
                assertArrayEquals(hello, received.array());
            }
        }
    }

    @Test
    void shouldSayWhichGidAddressesTheSideChannelCannotReach() {
        final byte[] loopbackGid = new byte[16];
        loopbackGid[15] = 1;
        final UnsupportedAddressTypeException serviceId = assertThrows(UnsupportedAddressTypeException.class,
            () -> client.connect(IbSocketAddress.of(loopbackGid, IbSocketAddress.DEFAULT_PKEY, 0x1000000000000001L),
                null, new StreamOptions(), new BlockingStream.Waker()));
        assertTrue(serviceId.getMessage().contains("stream port-space addresses"), serviceId.getMessage());
        final UnsupportedAddressTypeException partition = assertThrows(UnsupportedAddressTypeException.class,
            () -> client.connect(IbSocketAddress.parse("ib:[::1]:7471?pkey=0x8001"), null, new StreamOptions(),
                new BlockingStream.Waker()));
        assertTrue(partition.getMessage().contains("default partition"), partition.getMessage());
        final UnsupportedAddressTypeException notOurs = assertThrows(UnsupportedAddressTypeException.class,
            () -> server.listen(IbSocketAddress.parse("ib:[fe80::6:5:4:3]:7471"), 8, new StreamOptions(),
                new BlockingStream.Waker()));
        assertTrue(notOurs.getMessage().contains("no interface of this host has the link-local address"),
            notOurs.getMessage());
    }

    /** The side channel's port of an RDMA port, with the default offset: past 65535 it wraps to 1. */
    private static int sidePort(final int port) {
        return (port - 1 + OobConnectionManager.PORT_OFFSET_DEFAULT) % 65535 + 1;
    }

    private StreamConnection connect(final BlockingStream.Waker waker) throws IOException {
        return BlockingStream.connect(client.connect(listener.localAddress(), null, new StreamOptions(), waker),
            waker);
    }

    private static ByteBuffer request(final int version, final int mtu) {
        final ByteBuffer out = ByteBuffer.allocate(64);
        out.putInt(0).putInt(MAGIC).put((byte) 1).put((byte) version);
        out.put(new byte[] {(byte) 0xfe, (byte) 0x80, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8});
        out.putInt(0x123).putInt(0x456).putInt(mtu).putShort((short) 0);
        return out.putInt(0, out.position() - Integer.BYTES).flip();
    }

    /** Send a frame to the listener's side channel; what it answered until it closed. */
    private ByteBuffer exchange(final ByteBuffer frame) throws IOException {
        final int port = ((InetSocketAddress) listener.localAddress()).getPort();
        try (SocketChannel raw = SocketChannel.open(new InetSocketAddress(LOOPBACK, sidePort(port)))) {
            while (frame.hasRemaining()) {
                raw.write(frame);
            }
            final ByteBuffer in = ByteBuffer.allocate(512);
            raw.socket().setSoTimeout(10_000);
            final var stream = raw.socket().getInputStream();
            int n;
            while ((n = stream.read(in.array(), in.position(), in.remaining())) > 0) {
                in.position(in.position() + n);
            }
            return in.flip();
        }
    }
}

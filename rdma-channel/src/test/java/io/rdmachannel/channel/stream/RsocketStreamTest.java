package io.rdmachannel.channel.stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmachannel.channel.IbSocketAddress;
import io.rdmachannel.channel.cm.CmEndpoint;
import io.rdmachannel.channel.cm.ConnectionManager;
import io.rdmachannel.channel.cm.NoRdmaPathException;
import io.rdmachannel.channel.spi.QueuePair;
import io.rdmachannel.channel.spi.RdmaDevice;
import io.rdmachannel.channel.spi.RdmaProviders;

import java.io.IOException;
import java.net.BindException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.nio.ByteBuffer;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.zip.CRC32;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RsocketStreamTest {
    private StreamTransport transport;
    private ExecutorService threads;

    @BeforeEach
    void open() {
        transport = StreamTransports.open(RdmaProviders.byName("shm"));
        threads = Executors.newThreadPerTaskExecutor(Thread.ofPlatform().daemon().factory());
    }

    @AfterEach
    void close() {
        threads.shutdownNow();
        StreamTransports.close(transport);
    }

    @Test
    void shouldEchoAndHalfClose() throws Exception {
        final BlockingStream.Waker serverWaker = new BlockingStream.Waker();
        try (StreamListener listener = transport.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0),
            8, new StreamOptions(), serverWaker)) {
            final StreamConnection[] accepted = new StreamConnection[1];
            final CompletableFuture<Long> server = CompletableFuture.supplyAsync(() -> {
                try (StreamConnection connection = BlockingStream.accept(listener, serverWaker)) {
                    accepted[0] = connection;
                    final ByteBuffer buffer = ByteBuffer.allocate(70_000);
                    long total = 0;
                    int count;
                    while ((count = BlockingStream.read(connection, buffer.clear(), serverWaker)) > 0) {
                        total += count;
                        BlockingStream.writeFully(connection, buffer.flip(), serverWaker);
                    }
                    connection.shutdownOutput();
                    return total;
                } catch (final IOException ex) {
                    throw new IllegalStateException(ex);
                }
            }, threads);
            final BlockingStream.Waker clientWaker = new BlockingStream.Waker();
            final StreamConnector connector = transport.connect(listener.localAddress(), null, new StreamOptions(),
                clientWaker);
            try (StreamConnection client = BlockingStream.connect(connector, clientWaker)) {
                final byte[] message = new byte[200_000];
                new Random(1).nextBytes(message);
                final BlockingStream.Waker readerWaker = new BlockingStream.Waker();
                final CompletableFuture<byte[]> echoed = CompletableFuture.supplyAsync(() -> {
                    final ByteBuffer received = ByteBuffer.allocate(message.length);
                    try {
                        while (received.hasRemaining() && BlockingStream.read(client, received, readerWaker) > 0) {
                            // keep reading
                        }
                        assertEquals(-1, BlockingStream.read(client, ByteBuffer.allocate(1), readerWaker));
                    } catch (final IOException ex) {
                        throw new IllegalStateException(ex);
                    }
                    return received.array();
                }, threads);
                final Thread watchdog = Thread.ofPlatform().daemon().start(() -> {
                    try {
                        Thread.sleep(5000);
                        System.out.println("STALL client " + client.describe());
                        System.out.println("STALL server " + (accepted[0] == null ? "-" : accepted[0].describe()));
                    } catch (final InterruptedException ignore) {
                        // finished in time
                    }
                });
                BlockingStream.writeFully(client, ByteBuffer.wrap(message), clientWaker);
                client.shutdownOutput();
                assertArrayEquals(message, echoed.get(30, TimeUnit.SECONDS), client.describe());
                watchdog.interrupt();
                assertEquals(message.length, server.get(30, TimeUnit.SECONDS));
            }
        }
    }

    @Test
    void shouldTransferWithChecksums() throws Exception {
        final long total = 256L << 20;
        final BlockingStream.Waker serverWaker = new BlockingStream.Waker();
        try (StreamListener listener = transport.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0),
            8, new StreamOptions(), serverWaker)) {
            final CompletableFuture<Long> server = CompletableFuture.supplyAsync(() -> {
                try (StreamConnection connection = BlockingStream.accept(listener, serverWaker)) {
                    final CRC32 crc = new CRC32();
                    final ByteBuffer buffer = ByteBuffer.allocateDirect(1 << 20);
                    final Random sizes = new Random(7);
                    while (BlockingStream.read(connection, buffer.clear().limit(1 + sizes.nextInt(1 << 20)),
                        serverWaker) > 0) {
                        crc.update(buffer.flip());
                    }
                    return crc.getValue();
                } catch (final IOException ex) {
                    throw new IllegalStateException(ex);
                }
            }, threads);
            final BlockingStream.Waker clientWaker = new BlockingStream.Waker();
            try (StreamConnection client = BlockingStream.connect(transport.connect(listener.localAddress(), null,
                new StreamOptions(), clientWaker), clientWaker)) {
                final CRC32 crc = new CRC32();
                final Random random = new Random(3);
                final byte[] chunk = new byte[1 << 20];
                long sent = 0;
                final long start = System.nanoTime();
                while (sent < total) {
                    final int size = (int) Math.min(total - sent, 1 + random.nextInt(chunk.length));
                    random.nextBytes(chunk);
                    crc.update(chunk, 0, size);
                    BlockingStream.writeFully(client, ByteBuffer.wrap(chunk, 0, size), clientWaker);
                    sent += size;
                }
                client.shutdownOutput();
                assertEquals(crc.getValue(), server.get(60, TimeUnit.SECONDS), client.describe());
                System.out.printf("shm stream: %d MiB in %.1f ms%n", total >> 20,
                    (System.nanoTime() - start) / 1e6);
            }
        }
    }

    @Test
    void shouldConnectOverInfiniBandAddresses() throws Exception {
        final BlockingStream.Waker serverWaker = new BlockingStream.Waker();
        final IbSocketAddress wildcard = IbSocketAddress.of(new byte[IbSocketAddress.GID_LENGTH], 0);
        // the GID of a live shm device of this host: the listener on the wildcard GID serves this host's GIDs
        try (RdmaDevice localGid = RdmaProviders.byName("shm").openDevice(null);
            StreamListener listener = transport.listen(wildcard, 4, new StreamOptions(), serverWaker)) {
            final IbSocketAddress bound = (IbSocketAddress) listener.localAddress();
            final IbSocketAddress target = IbSocketAddress.of(localGid.queryGid(1, 0), bound.port());
            final BlockingStream.Waker clientWaker = new BlockingStream.Waker();
            try (StreamConnection client = BlockingStream.connect(transport.connect(target, null,
                new StreamOptions(), clientWaker), clientWaker);
                StreamConnection server = BlockingStream.accept(listener, serverWaker)) {
                assertEquals(target, client.remoteAddress());
                assertEquals(client.localAddress(), server.remoteAddress());
                BlockingStream.writeFully(client, ByteBuffer.wrap(new byte[] {1, 2, 3}), clientWaker);
                final ByteBuffer received = ByteBuffer.allocate(3);
                while (received.hasRemaining()) {
                    BlockingStream.read(server, received, serverWaker);
                }
                assertArrayEquals(new byte[] {1, 2, 3}, received.array());
            }
        }
    }

    /**
     * A connector closed while its connection manager is establishing the connection (the manager is done with the
     * attempt, the connection not yet established): the connection closes itself once established, so the server
     * reads end of stream and nothing stays allocated.
     */
    @Test
    void shouldCloseAConnectionWhoseConnectorClosedWhileItWasBeingEstablished() throws Exception {
        final ConnectionManager manager = RdmaProviders.byName("shm").openConnectionManager(null);
        final BlockingStream.Waker serverWaker = new BlockingStream.Waker();
        try (StreamListener listener = transport.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0),
            4, new StreamOptions(), serverWaker)) {
            final RsocketConnection connection = new RsocketConnection((RsocketTransport) transport,
                new StreamOptions(), null);
            final CountDownLatch inEstablished = new CountDownLatch(1);
            final CountDownLatch proceed = new CountDownLatch(1);
            final CmEndpoint heldBack = new CmEndpoint() {
                @Override
                public QueuePairSetup prepare(final RdmaDevice device) throws IOException {
                    return connection.prepare(device);
                }

                @Override
                public ByteBuffer bind(final QueuePair pair, final ByteBuffer peerPrivateData) throws IOException {
                    return connection.bind(pair, peerPrivateData);
                }

                @Override
                public void established(final ByteBuffer peerPrivateData, final SocketAddress local,
                    final SocketAddress remote) throws IOException {
                    inEstablished.countDown();
                    try {
                        proceed.await();
                    } catch (final InterruptedException ex) {
                        throw new IOException(ex);
                    }
                    connection.established(peerPrivateData, local, remote);
                }

                @Override
                public void failed(final IOException cause) {
                    connection.failed(cause);
                }
            };
            final RsocketConnector connector = new RsocketConnector((RsocketTransport) transport, connection,
                listener.localAddress(), null, new StreamOptions(), null);
            connector.started(manager.connect(listener.localAddress(), null, heldBack));
            assertTrue(inEstablished.await(10, TimeUnit.SECONDS), connection::describe);
            connector.close();
            proceed.countDown();
            try (StreamConnection server = BlockingStream.accept(listener, serverWaker)) {
                assertEquals(-1, BlockingStream.read(server, ByteBuffer.allocate(1), serverWaker), server::describe);
            }
            final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (connection.queuePairState() != null && System.nanoTime() - deadline < 0) {
                Thread.sleep(1);
            }
            assertNull(connection.queuePairState(), connection::describe);
            assertEquals("the connection attempt was closed", assertThrows(IOException.class, connector::finish)
                .getMessage());
        } finally {
            // the transport holds resources on the manager's device: it goes first
            StreamTransports.close(transport);
            manager.close();
        }
    }

    /**
     * A peer that closes right after connecting leaves after its DISCONNECT; what the server sends meanwhile (its
     * first credit grant) is flushed. The server must still read end of stream, not a reset: the DISCONNECT came
     * before the failure. Many rounds, since the server's grant races with the peer's release.
     */
    @Test
    void shouldReadEndOfStreamWhenThePeerClosesRightAfterConnecting() throws Exception {
        final BlockingStream.Waker serverWaker = new BlockingStream.Waker();
        final BlockingStream.Waker clientWaker = new BlockingStream.Waker();
        try (StreamListener listener = transport.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0),
            8, new StreamOptions(), serverWaker)) {
            for (int round = 0; round < 300; round++) {
                final StreamConnection client = BlockingStream.connect(transport.connect(listener.localAddress(),
                    null, new StreamOptions(), clientWaker), clientWaker);
                client.close();
                try (StreamConnection server = BlockingStream.accept(listener, serverWaker)) {
                    final int round0 = round;
                    assertEquals(-1, BlockingStream.read(server, ByteBuffer.allocate(1), serverWaker),
                        () -> "round " + round0 + ": " + server.describe());
                }
            }
        }
    }

    @Test
    void shouldProbeWithKeepAlivesWithoutDisturbingTheStream() throws Exception {
        final String previous = System.getProperty(StreamConfiguration.KEEP_ALIVE_TIME_PROP_NAME);
        System.setProperty(StreamConfiguration.KEEP_ALIVE_TIME_PROP_NAME, "1");
        final StreamTransport probing = StreamTransports.open(RdmaProviders.byName("shm"));
        try {
            final BlockingStream.Waker serverWaker = new BlockingStream.Waker();
            try (StreamListener listener = probing.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(),
                0), 4, new StreamOptions(), serverWaker)) {
                final BlockingStream.Waker clientWaker = new BlockingStream.Waker();
                try (StreamConnection client = BlockingStream.connect(probing.connect(listener.localAddress(), null,
                    new StreamOptions().keepAlive(true), clientWaker), clientWaker);
                    StreamConnection server = BlockingStream.accept(listener, serverWaker)) {
                    final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                    while (((RsocketConnection) client).keepAlivesSent() < 2 && System.nanoTime() < deadline) {
                        clientWaker.waitFor();
                    }
                    assertTrue(((RsocketConnection) client).keepAlivesSent() >= 2, client.describe());
                    // an accepted connection starts probing when asked, and stops
                    assertEquals(0, ((RsocketConnection) server).keepAlivesSent(), server.describe());
                    server.keepAlive(true);
                    while (((RsocketConnection) server).keepAlivesSent() < 2 && System.nanoTime() - deadline < 0) {
                        serverWaker.waitFor();
                    }
                    assertTrue(((RsocketConnection) server).keepAlivesSent() >= 2, server.describe());
                    server.keepAlive(false);
                    final long probes = ((RsocketConnection) server).keepAlivesSent();
                    Thread.sleep(2500);
                    assertEquals(probes, ((RsocketConnection) server).keepAlivesSent(), server.describe());
                    BlockingStream.writeFully(client, ByteBuffer.wrap(new byte[] {7}), clientWaker);
                    final ByteBuffer received = ByteBuffer.allocate(1);
                    assertEquals(1, BlockingStream.read(server, received, serverWaker), server.describe());
                    assertEquals(7, received.get(0));
                    assertEquals(0, client.readyOps() & StreamReadiness.READ, client.describe());
                }
            }
        } finally {
            StreamTransports.close(probing);
            if (previous == null) {
                System.clearProperty(StreamConfiguration.KEEP_ALIVE_TIME_PROP_NAME);
            } else {
                System.setProperty(StreamConfiguration.KEEP_ALIVE_TIME_PROP_NAME, previous);
            }
        }
    }

    /**
     * A listener on the wildcard serves this host's addresses only: a connect to another host's address with the
     * same port is refused at once, as not reachable over shm (it used to reach the local listener).
     */
    @Test
    void shouldReachOnlyThisHostsAddresses() throws Exception {
        final BlockingStream.Waker serverWaker = new BlockingStream.Waker();
        try (StreamListener ipListener = transport.listen(new InetSocketAddress(0), 4, new StreamOptions(),
            serverWaker);
            StreamListener ibListener = transport.listen(IbSocketAddress.of(new byte[IbSocketAddress.GID_LENGTH], 0),
                4, new StreamOptions(), serverWaker)) {
            final int port = ((InetSocketAddress) ipListener.localAddress()).getPort();
            final InetSocketAddress elsewhere = new InetSocketAddress(InetAddress.getByName("203.0.113.7"), port);
            final NoRdmaPathException notLocal = assertThrows(NoRdmaPathException.class,
                () -> transport.connect(elsewhere, null, new StreamOptions(), new BlockingStream.Waker()));
            assertEquals(NoRdmaPathException.Reason.NOT_LOCAL, notLocal.reason());
            assertTrue(notLocal.getMessage().startsWith("203.0.113.7 is not an address of this host"),
                notLocal.getMessage());

            final IbSocketAddress foreignGid = IbSocketAddress.parse("ib:[fe80::1]:"
                + ((IbSocketAddress) ibListener.localAddress()).port());
            assertEquals(NoRdmaPathException.Reason.NOT_LOCAL, assertThrows(NoRdmaPathException.class,
                () -> transport.connect(foreignGid, null, new StreamOptions(), new BlockingStream.Waker())).reason());

            // this host's own addresses still reach the wildcard listener
            final BlockingStream.Waker clientWaker = new BlockingStream.Waker();
            try (StreamConnection client = BlockingStream.connect(transport.connect(
                new InetSocketAddress(InetAddress.getLoopbackAddress(), port), null, new StreamOptions(),
                clientWaker), clientWaker);
                StreamConnection server = BlockingStream.accept(ipListener, serverWaker)) {
                assertEquals(client.localAddress(), server.remoteAddress());
            }
        }
        final BindException notHere = assertThrows(BindException.class, () -> transport.listen(
            new InetSocketAddress(InetAddress.getByName("203.0.113.7"), 0), 4, new StreamOptions(), serverWaker));
        assertTrue(notHere.getMessage().startsWith("Cannot assign requested address"), notHere.getMessage());
    }

    @Test
    void shouldRefuseWhenNobodyListens() throws Exception {
        final BlockingStream.Waker waker = new BlockingStream.Waker();
        final StreamConnector connector = transport.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(),
            1), null, new StreamOptions(), waker);
        final NoRdmaPathException refused = assertThrows(NoRdmaPathException.class,
            () -> BlockingStream.connect(connector, waker));
        assertEquals("Connection refused", refused.getMessage());
        assertEquals(NoRdmaPathException.Reason.NO_LISTENER, refused.reason());
    }
}

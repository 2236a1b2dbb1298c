package io.rdmachannel.channel.stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.zip.CRC32;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The engine in message mode end to end: client and server on two shm devices emulating iWARP
 * ({@code rdmachannel.shm.transport=iwarp}), where RDMA WRITE WITH IMMEDIATE is refused and the passive side must not
 * send first; a slip fails the connection. Whether the passive side holds back is checked deterministically by
 * {@link MessageModeHostilePeerTest}, whose active side stays silent; here the two sides race as real ones do.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class RsocketMessageModeTest {
    private StreamTransport transport;
    private StreamTransport clientTransport;
    private ExecutorService threads;
    private StreamListener listener;
    private final BlockingStream.Waker serverWaker = new BlockingStream.Waker();

    @BeforeEach
    void open() throws IOException {
        transport = IwarpEmulation.transport();
        clientTransport = IwarpEmulation.transport();
        threads = Executors.newThreadPerTaskExecutor(Thread.ofPlatform().daemon().factory());
    }

    @AfterEach
    void close() {
        threads.shutdownNow();
        if (listener != null) {
            listener.close();
        }
        StreamTransports.close(clientTransport);
        StreamTransports.close(transport);
    }

    private record Pair(StreamConnection client, BlockingStream.Waker clientWaker, StreamConnection server)
        implements AutoCloseable {
        @Override
        public void close() {
            client.close();
            server.close();
        }

        String describe() {
            return "client " + client.describe() + "; server " + server.describe();
        }
    }

    private Pair connect(final StreamOptions options) throws IOException {
        listener = transport.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 8, options,
            serverWaker);
        final BlockingStream.Waker clientWaker = new BlockingStream.Waker();
        final StreamConnection client = BlockingStream.connect(clientTransport.connect(listener.localAddress(), null,
            options, clientWaker), clientWaker);
        return new Pair(client, clientWaker, BlockingStream.accept(listener, serverWaker));
    }

    @Test
    void shouldSpeakMessageModeOnADeviceWithoutWriteWithImmediate() throws Exception {
        try (Pair pair = connect(new StreamOptions())) {
            BlockingStream.writeFully(pair.client(), ByteBuffer.wrap(new byte[] {1}), pair.clientWaker());
            BlockingStream.writeFully(pair.server(), ByteBuffer.wrap(new byte[] {2}), serverWaker);
            final ByteBuffer atServer = ByteBuffer.allocate(1);
            final ByteBuffer atClient = ByteBuffer.allocate(1);
            assertEquals(1, BlockingStream.read(pair.server(), atServer, serverWaker), pair::describe);
            assertEquals(1, BlockingStream.read(pair.client(), atClient, pair.clientWaker()), pair::describe);
            assertEquals(1, atServer.get(0));
            assertEquals(2, atClient.get(0));
            assertTrue(pair.client().describe().contains("messageMode=true"), pair::describe);
            assertTrue(pair.server().describe().contains("messageMode=true, awaitingFirstMessage=false"),
                pair::describe);
        }
    }

    @Test
    void shouldEchoAndHalfClose() throws Exception {
        try (Pair pair = connect(new StreamOptions())) {
            final CompletableFuture<Long> echo = CompletableFuture.supplyAsync(() -> echo(pair.server()), threads);
            final byte[] message = new byte[200_000];
            new Random(1).nextBytes(message);
            final CompletableFuture<byte[]> echoed = readAllAsync(pair.client(), pair.clientWaker(), message.length);
            BlockingStream.writeFully(pair.client(), ByteBuffer.wrap(message), pair.clientWaker());
            pair.client().shutdownOutput();
            assertArrayEquals(message, echoed.get(60, TimeUnit.SECONDS), pair::describe);
            assertEquals(message.length, echo.get(60, TimeUnit.SECONDS), pair::describe);
        }
    }

    @Test
    void shouldDeliverEverythingWrittenBeforeClose() throws Exception {
        try (Pair pair = connect(new StreamOptions())) {
            final byte[] data = new byte[1 << 20];
            new Random(2).nextBytes(data);
            final CompletableFuture<byte[]> received = CompletableFuture.supplyAsync(() -> {
                try {
                    final ByteBuffer buffer = ByteBuffer.allocate(data.length);
                    while (buffer.hasRemaining()) {
                        if (BlockingStream.read(pair.server(), buffer, serverWaker) < 0) {
                            throw new IllegalStateException("end of stream after " + buffer.position() + " bytes");
                        }
                    }
                    if (BlockingStream.read(pair.server(), ByteBuffer.allocate(1), serverWaker) != -1) {
                        throw new IllegalStateException("more bytes than were written");
                    }
                    return buffer.array();
                } catch (final IOException ex) {
                    throw new UncheckedIOException(ex);
                }
            }, threads);
            BlockingStream.writeFully(pair.client(), ByteBuffer.wrap(data), pair.clientWaker());
            pair.client().close();
            assertArrayEquals(data, received.get(60, TimeUnit.SECONDS), pair::describe);
        }
    }

    @Test
    void shouldTellTheActiveSideOfAPassiveSideClosedAtOnce() throws Exception {
        try (Pair pair = connect(new StreamOptions())) {
            // the passive side's DISCONNECT waits for the active side's first message, which is already on its way
            pair.server().close();
            assertEquals(-1, BlockingStream.read(pair.client(), ByteBuffer.allocate(1), pair.clientWaker()),
                pair::describe);
            final IOException broken = assertThrows(IOException.class,
                () -> pair.client().write(ByteBuffer.wrap(new byte[] {1})));
            assertEquals(IOException.class, broken.getClass());
            assertEquals("Broken pipe", broken.getMessage());
        }
    }

    @Test
    void shouldTransfer64MegabytesWithChecksums() throws Exception {
        try (Pair pair = connect(new StreamOptions())) {
            final CompletableFuture<Long> atServer = checksumAtServer(pair, 1 << 20);
            final long sent = checksumStream(pair, 64L << 20, 1 << 20, 3);
            assertEquals(sent, atServer.get(60, TimeUnit.SECONDS), pair::describe);
        }
    }

    @Test
    void shouldKeepCreditsFlowingThroughSmallBuffersBothWays() throws Exception {
        // rings of two 2 KiB halves, 16 credits, 12 data send slots (6 messages), inline raised from 0 to 4 bytes
        final StreamOptions small = new StreamOptions().receiveBufferSize(4096).sendBufferSize(4096)
            .receiveQueueSize(16).sendQueueSize(16).inlineSize(0);
        try (Pair pair = connect(small)) {
            final CompletableFuture<Long> serverToClient = CompletableFuture.supplyAsync(() -> {
                try {
                    return sendRandom(pair.server(), serverWaker, 4L << 20, 11);
                } catch (final IOException ex) {
                    throw new UncheckedIOException(ex);
                }
            }, threads);
            final CompletableFuture<Long> atClient = CompletableFuture.supplyAsync(() -> checksum(pair.client(),
                pair.clientWaker(), 5000), threads);
            final CompletableFuture<Long> atServer = checksumAtServer(pair, 5000);
            final long clientToServer = sendRandom(pair.client(), pair.clientWaker(), 4L << 20, 13);
            assertEquals(clientToServer, atServer.get(60, TimeUnit.SECONDS), pair::describe);
            assertEquals(serverToClient.get(60, TimeUnit.SECONDS), atClient.get(60, TimeUnit.SECONDS),
                pair::describe);
        }
    }

    // ----- helpers -----

    private long echo(final StreamConnection connection) {
        try {
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
            throw new UncheckedIOException(ex);
        }
    }

    private CompletableFuture<byte[]> readAllAsync(final StreamConnection connection,
        final BlockingStream.Waker waker, final int length) {
        return CompletableFuture.supplyAsync(() -> {
            final ByteBuffer received = ByteBuffer.allocate(length);
            try {
                while (received.hasRemaining() && BlockingStream.read(connection, received, waker) > 0) {
                    // keep reading
                }
                if (BlockingStream.read(connection, ByteBuffer.allocate(1), waker) != -1) {
                    throw new IllegalStateException("no end of stream after " + received.position() + " bytes");
                }
            } catch (final IOException ex) {
                throw new UncheckedIOException(ex);
            }
            return received.array();
        }, threads);
    }

    /**
     * Write {@code total} random bytes in random-sized writes from the client, then shut its output; return the
     * CRC32 of what was written.
     */
    private static long checksumStream(final Pair pair, final long total, final int maxWrite, final long seed)
        throws IOException {
        final CRC32 crc = new CRC32();
        final Random random = new Random(seed);
        final byte[] chunk = new byte[maxWrite];
        long sent = 0;
        while (sent < total) {
            final int size = (int) Math.min(total - sent, 1 + random.nextInt(maxWrite));
            random.nextBytes(chunk);
            crc.update(chunk, 0, size);
            BlockingStream.writeFully(pair.client(), ByteBuffer.wrap(chunk, 0, size), pair.clientWaker());
            sent += size;
        }
        pair.client().shutdownOutput();
        return crc.getValue();
    }

    private CompletableFuture<Long> checksumAtServer(final Pair pair, final int maxRead) {
        return CompletableFuture.supplyAsync(() -> checksum(pair.server(), serverWaker, maxRead), threads);
    }

    /**
     * Read to the end of the stream in random-sized reads; return the CRC32.
     */
    private static long checksum(final StreamConnection connection, final BlockingStream.Waker waker,
        final int maxRead) {
        final CRC32 crc = new CRC32();
        final ByteBuffer buffer = ByteBuffer.allocateDirect(maxRead);
        final Random sizes = new Random(7);
        try {
            while (BlockingStream.read(connection, buffer.clear().limit(1 + sizes.nextInt(maxRead)), waker) > 0) {
                crc.update(buffer.flip());
            }
        } catch (final IOException ex) {
            throw new UncheckedIOException(ex);
        }
        return crc.getValue();
    }

    /**
     * Write {@code total} random bytes, a third of the writes of 1 to 8 bytes (inline), the rest up to 10000 bytes,
     * then shut the output; return the CRC32.
     */
    private static long sendRandom(final StreamConnection connection, final BlockingStream.Waker waker,
        final long total, final long seed) throws IOException {
        final CRC32 crc = new CRC32();
        final Random random = new Random(seed);
        final byte[] chunk = new byte[10_000];
        long sent = 0;
        while (sent < total) {
            final int wanted = random.nextInt(3) == 0 ? 1 + random.nextInt(8) : 1 + random.nextInt(chunk.length);
            final int size = (int) Math.min(total - sent, wanted);
            random.nextBytes(chunk);
            crc.update(chunk, 0, size);
            BlockingStream.writeFully(connection, ByteBuffer.wrap(chunk, 0, size), waker);
            sent += size;
        }
        connection.shutdownOutput();
        return crc.getValue();
    }
}

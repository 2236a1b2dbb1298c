package io.rdmachannel.channel.stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmachannel.channel.RegisteredBuffers;
import io.rdmachannel.channel.spi.RdmaProviders;

import java.io.IOException;
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
 * Writes from {@link RegisteredBuffers}: sent straight from the buffer, which may be reused as soon as the write
 * returns, and the same bytes on the wire as a copied write.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RegisteredBufferStreamTest {
    private StreamTransport transport;
    private ExecutorService threads;
    private StreamListener listener;
    private final BlockingStream.Waker serverWaker = new BlockingStream.Waker();
    private final BlockingStream.Waker clientWaker = new BlockingStream.Waker();

    @BeforeEach
    void open() throws IOException {
        transport = StreamTransports.open(RdmaProviders.byName("shm"));
        threads = Executors.newThreadPerTaskExecutor(Thread.ofPlatform().daemon().factory());
        listener = transport.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 8, new StreamOptions(),
            serverWaker);
    }

    @AfterEach
    void close() {
        listener.close();
        threads.shutdownNow();
        StreamTransports.close(transport);
    }

    /** A server that reads until the end of the stream and returns the CRC-32 of what it read. */
    private CompletableFuture<Long> checksummingServer() {
        return CompletableFuture.supplyAsync(() -> {
            try (StreamConnection connection = BlockingStream.accept(listener, serverWaker)) {
                final CRC32 crc = new CRC32();
                final ByteBuffer buffer = ByteBuffer.allocateDirect(1 << 20);
                while (BlockingStream.read(connection, buffer.clear(), serverWaker) > 0) {
                    crc.update(buffer.flip());
                }
                return crc.getValue();
            } catch (final IOException ex) {
                throw new IllegalStateException(ex);
            }
        }, threads);
    }

    private StreamConnection connect() throws IOException {
        return BlockingStream.connect(transport.connect(listener.localAddress(), null, new StreamOptions(),
            clientWaker), clientWaker);
    }

    /**
     * Write {@code total} bytes from random slices of {@code buffer}, zeroing each slice as soon as its write returned
     * (the bytes have left the buffer then, so scribbling on it changes nothing); then shut the output down and check
     * the server's checksum.
     */
    private void writeRandomSlices(final StreamConnection client, final ByteBuffer buffer, final long total,
        final CompletableFuture<Long> server) throws Exception {
        final CRC32 crc = new CRC32();
        final Random random = new Random(11);
        final byte[] bytes = new byte[buffer.capacity()];
        final int half = buffer.capacity() / 2;
        long sent = 0;
        while (sent < total) {
            final int offset = random.nextInt(half);
            final int size = (int) Math.min(total - sent, 1 + random.nextInt(buffer.capacity() - offset));
            random.nextBytes(bytes);
            buffer.clear().put(offset, bytes, 0, size);
            crc.update(bytes, 0, size);
            BlockingStream.writeFully(client, buffer.slice(offset, size), clientWaker);
            buffer.clear().put(offset, new byte[size]);
            sent += size;
        }
        client.shutdownOutput();
        assertEquals(crc.getValue(), server.get(60, TimeUnit.SECONDS), client.describe());
    }

    @Test
    void shouldSendStraightFromARegisteredBufferThatMayBeReusedWhenTheWriteReturns() throws Exception {
        final ByteBuffer registered = RegisteredBuffers.allocate(1 << 20);
        try {
            final CompletableFuture<Long> server = checksummingServer();
            final long total = 64L << 20;
            try (StreamConnection client = connect()) {
                // any view inside the allocation goes without the copy
                writeRandomSlices(client, registered, total, server);
                final long zeroCopy = ((RsocketConnection) client).zeroCopyBytes();
                // only chunks up to the inline size (64 bytes, at the ends of some writes) go another way
                assertTrue(zeroCopy > total - 64L * 2 * 1024, "zeroCopyBytes=" + zeroCopy + " of " + total);
                assertEquals(0, ((RsocketConnection) client).directBytes());
            }
        } finally {
            RegisteredBuffers.release(registered);
        }
    }

    @Test
    void shouldSendStraightFromAnyDirectBufferOnADeviceThatReadsLocalMemory() throws Exception {
        // the shm device reads local sources with the posting thread: a plain direct buffer goes without the copy
        // into the send ring too, and may be reused when the write returns
        final CompletableFuture<Long> server = checksummingServer();
        final long total = 16L << 20;
        try (StreamConnection client = connect()) {
            writeRandomSlices(client, ByteBuffer.allocateDirect(1 << 20), total, server);
            final long straight = ((RsocketConnection) client).directBytes();
            assertTrue(straight > total - 64L * 2 * 1024, "directBytes=" + straight + " of " + total);
            assertEquals(0, ((RsocketConnection) client).zeroCopyBytes());
        }
    }

    @Test
    void shouldCopyFromAHeapBuffer() throws Exception {
        final CompletableFuture<Long> server = checksummingServer();
        try (StreamConnection client = connect()) {
            final byte[] bytes = new byte[300_000];
            new Random(5).nextBytes(bytes);
            BlockingStream.writeFully(client, ByteBuffer.wrap(bytes), clientWaker);
            client.shutdownOutput();
            final CRC32 crc = new CRC32();
            crc.update(bytes);
            assertEquals(crc.getValue(), server.get(30, TimeUnit.SECONDS));
            assertEquals(0, ((RsocketConnection) client).zeroCopyBytes());
            assertEquals(0, ((RsocketConnection) client).directBytes());
        }
    }

    @Test
    void shouldRegisterAgainWhenABufferWasReleasedAndAnotherTookItsPlace() throws Exception {
        final CompletableFuture<Long> server = checksummingServer();
        try (StreamConnection client = connect()) {
            final CRC32 crc = new CRC32();
            final Random random = new Random(9);
            for (int round = 0; round < 8; round++) {
                final ByteBuffer buffer = RegisteredBuffers.allocate(100_000 + round * 4096);
                final byte[] bytes = new byte[buffer.capacity()];
                random.nextBytes(bytes);
                buffer.put(bytes).flip();
                crc.update(bytes);
                BlockingStream.writeFully(client, buffer, clientWaker);
                RegisteredBuffers.release(buffer);
            }
            client.shutdownOutput();
            assertEquals(crc.getValue(), server.get(30, TimeUnit.SECONDS), client.describe());
            assertTrue(((RsocketConnection) client).zeroCopyBytes() > 8 * 99_000L);
        }
    }

    @Test
    void shouldRefuseBadArguments() {
        assertEquals("capacity must be at least 1: capacity=0",
            assertThrows(IllegalArgumentException.class, () -> RegisteredBuffers.allocate(0)).getMessage());
        final ByteBuffer plain = ByteBuffer.allocateDirect(16);
        assertThrows(IllegalArgumentException.class, () -> RegisteredBuffers.release(plain));
        assertThrows(IllegalArgumentException.class, () -> RegisteredBuffers.release(ByteBuffer.allocate(16)));
        assertFalse(RegisteredBuffers.isRegistered(plain));

        final ByteBuffer buffer = RegisteredBuffers.allocate(8192);
        assertTrue(RegisteredBuffers.isRegistered(buffer));
        assertTrue(RegisteredBuffers.isRegistered(buffer.slice(4096, 4096)));
        RegisteredBuffers.release(buffer.slice(100, 10));
        assertThrows(IllegalArgumentException.class, () -> RegisteredBuffers.release(buffer));
    }
}

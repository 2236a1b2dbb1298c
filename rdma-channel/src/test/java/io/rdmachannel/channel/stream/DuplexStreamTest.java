package io.rdmachannel.channel.stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import io.rdmachannel.channel.spi.RdmaProviders;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import java.util.stream.Stream;
import java.util.zip.CRC32;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * A reader and a writer of one connection at once: each side of the engine has its own lock, so neither waits for
 * the other (but for a credit grant, which the reader posts under the send lock).
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class DuplexStreamTest {
    private static final long LOCK_HOLD_TIMEOUT_SECONDS = 10;

    private StreamTransport transport;
    private ExecutorService threads;
    private StreamListener listener;
    private final BlockingStream.Waker serverWaker = new BlockingStream.Waker();
    private final BlockingStream.Waker clientWaker = new BlockingStream.Waker();
    private StreamConnection client;
    private StreamConnection server;

    @BeforeEach
    void open() {
        transport = StreamTransports.open(RdmaProviders.byName("shm"));
        threads = Executors.newThreadPerTaskExecutor(Thread.ofPlatform().daemon().factory());
    }

    @AfterEach
    void close() {
        if (client != null) {
            client.close();
        }
        if (server != null) {
            server.close();
        }
        if (listener != null) {
            listener.close();
        }
        threads.shutdownNow();
        StreamTransports.close(transport);
    }

    private void connect(final StreamOptions options) throws IOException {
        listener = transport.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 8, options,
            serverWaker);
        client = BlockingStream.connect(transport.connect(listener.localAddress(), null, options, clientWaker),
            clientWaker);
        server = BlockingStream.accept(listener, serverWaker);
    }

    private String describe() {
        return "client " + client.describe() + "; server " + server.describe();
    }

    static Stream<Arguments> rings() {
        return Stream.of(
            Arguments.of("default rings", new StreamOptions(), 64 << 20),
            // 4 KiB halves and 16 credits: grants all the time, often while the writer holds the send lock
            Arguments.of("small rings", new StreamOptions().receiveBufferSize(8192).sendBufferSize(8192)
                .receiveQueueSize(16).sendQueueSize(32), 8 << 20));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("rings")
    void shouldReadAndWriteConcurrentlyBothWays(final String name, final StreamOptions options, final int total)
        throws Exception {
        connect(options);
        final CompletableFuture<Long> clientSent = writer(client, clientWaker, total, 1);
        final CompletableFuture<Long> serverSent = writer(server, serverWaker, total, 2);
        final CompletableFuture<Long> clientReceived = reader(client, clientWaker);
        final CompletableFuture<Long> serverReceived = reader(server, serverWaker);
        assertEquals(clientSent.get(60, TimeUnit.SECONDS), serverReceived.get(60, TimeUnit.SECONDS), this::describe);
        assertEquals(serverSent.get(60, TimeUnit.SECONDS), clientReceived.get(60, TimeUnit.SECONDS), this::describe);
    }

    /**
     * Write {@code total} random bytes in random pieces, then shut the output down; the CRC-32 of what was written.
     */
    private CompletableFuture<Long> writer(final StreamConnection connection, final BlockingStream.Waker waker,
        final int total, final long seed) {
        return CompletableFuture.supplyAsync(() -> {
            final Random random = new Random(seed);
            final byte[] chunk = new byte[300_000];
            final CRC32 crc = new CRC32();
            try {
                int sent = 0;
                while (sent < total) {
                    final int size = Math.min(total - sent, 1 + random.nextInt(chunk.length));
                    random.nextBytes(chunk);
                    crc.update(chunk, 0, size);
                    BlockingStream.writeFully(connection, ByteBuffer.wrap(chunk, 0, size), waker);
                    sent += size;
                }
                connection.shutdownOutput();
            } catch (final IOException ex) {
                throw new IllegalStateException(ex);
            }
            return crc.getValue();
        }, threads);
    }

    /**
     * Read until the end of the stream in random pieces; the CRC-32 of what was read.
     */
    private CompletableFuture<Long> reader(final StreamConnection connection, final BlockingStream.Waker waker) {
        return CompletableFuture.supplyAsync(() -> {
            final Random sizes = new Random(connection == client ? 3 : 4);
            final ByteBuffer buffer = ByteBuffer.allocate(200_000);
            final CRC32 crc = new CRC32();
            try {
                while (BlockingStream.read(connection, buffer.clear().limit(1 + sizes.nextInt(buffer.capacity())),
                    waker) > 0) {
                    crc.update(buffer.flip());
                }
            } catch (final IOException ex) {
                throw new IllegalStateException(ex);
            }
            return crc.getValue();
        }, threads);
    }

    /**
     * A reader copying out of the ring holds the receive lock only: here another thread holds the send lock all
     * along (as a writer copying into its ring would), and the reader still gets what arrived. With one lock for
     * both sides it would wait for the writer.
     */
    @Test
    void shouldReadWhileTheSendLockIsHeld() throws Exception {
        connect(new StreamOptions());
        final byte[] data = randomBytes(32 << 10);
        BlockingStream.writeFully(client, ByteBuffer.wrap(data), clientWaker);
        final ByteBuffer received = ByteBuffer.allocate(data.length);
        whileHeld(((RsocketConnection) server).sendLock(), () -> {
            while (received.hasRemaining()) {
                BlockingStream.read(server, received, serverWaker);
            }
            return null;
        });
        assertArrayEquals(data, received.array(), this::describe);
    }

    /**
     * A writer holds the send lock only: here another thread holds the receive lock all along (as a reader copying
     * out of the ring would), and the writer still sends within the credits and regions it has.
     */
    @Test
    void shouldWriteWhileTheReceiveLockIsHeld() throws Exception {
        connect(new StreamOptions());
        final byte[] data = randomBytes(32 << 10);
        whileHeld(((RsocketConnection) client).receiveLock(), () -> {
            BlockingStream.writeFully(client, ByteBuffer.wrap(data), clientWaker);
            return null;
        });
        final ByteBuffer received = ByteBuffer.allocate(data.length);
        while (received.hasRemaining()) {
            BlockingStream.read(server, received, serverWaker);
        }
        assertArrayEquals(data, received.array(), this::describe);
    }

    /**
     * Run {@code work} on another thread while this test's holder thread holds {@code lock}; fail if it does not
     * finish in time.
     */
    private void whileHeld(final ReentrantLock lock, final java.util.concurrent.Callable<Void> work)
        throws Exception {
        final CountDownLatch held = new CountDownLatch(1);
        final CountDownLatch done = new CountDownLatch(1);
        final CompletableFuture<Void> holder = CompletableFuture.runAsync(() -> {
            lock.lock();
            try {
                held.countDown();
                done.await(LOCK_HOLD_TIMEOUT_SECONDS * 2, TimeUnit.SECONDS);
            } catch (final InterruptedException ex) {
                Thread.currentThread().interrupt();
            } finally {
                lock.unlock();
            }
        }, threads);
        held.await();
        try {
            final CompletableFuture<Void> result = CompletableFuture.supplyAsync(() -> {
                try {
                    return work.call();
                } catch (final Exception ex) {
                    throw new IllegalStateException(ex);
                }
            }, threads);
            result.get(LOCK_HOLD_TIMEOUT_SECONDS, TimeUnit.SECONDS);
            assertFalse(holder.isDone(), "the lock was held all along");
        } finally {
            done.countDown();
            holder.get(LOCK_HOLD_TIMEOUT_SECONDS, TimeUnit.SECONDS);
        }
    }

    private static byte[] randomBytes(final int length) {
        final byte[] bytes = new byte[length];
        new Random(length).nextBytes(bytes);
        return bytes;
    }
}

package io.rdmachannel.channel.stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import java.util.stream.Stream;
import java.util.zip.CRC32;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
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

    @RegisterExtension
    final StreamPairFixture pair = new StreamPairFixture();

    static Stream<Arguments> rings() {
        return Stream.of(
            Arguments.of("default rings", new StreamOptions(), 64 << 20),
            // 4 KiB halves and 16 credits: grants all the time, often while the writer holds the send lock
            Arguments.of("small rings", new StreamOptions().receiveBufferSize(8192).sendBufferSize(8192)
                .receiveQueueSize(16).sendQueueSize(32), 8 << 20),
            // SRQ mode: the credit window grows and shrinks; grants for a ring half alone come between
            Arguments.of("SRQ mode", new StreamOptions().sharedReceiveQueue(true), 64 << 20),
            Arguments.of("small rings, SRQ mode", new StreamOptions().receiveBufferSize(8192).sendBufferSize(8192)
                .receiveQueueSize(64).sendQueueSize(32).sharedReceiveQueue(true), 8 << 20));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("rings")
    void shouldReadAndWriteConcurrentlyBothWays(final String name, final StreamOptions options, final int total)
        throws Exception {
        pair.connect(options);
        final CompletableFuture<Long> clientSent = writer(pair.client, pair.clientWaker, total, 1);
        final CompletableFuture<Long> serverSent = writer(pair.server, pair.serverWaker, total, 2);
        final CompletableFuture<Long> clientReceived = reader(pair.client, pair.clientWaker);
        final CompletableFuture<Long> serverReceived = reader(pair.server, pair.serverWaker);
        assertEquals(clientSent.get(60, TimeUnit.SECONDS), serverReceived.get(60, TimeUnit.SECONDS), pair::describe);
        assertEquals(serverSent.get(60, TimeUnit.SECONDS), clientReceived.get(60, TimeUnit.SECONDS), pair::describe);
    }

    /**
     * Write {@code total} random bytes in random pieces, then shut the output down; the CRC-32 of what was written.
     */
    private CompletableFuture<Long> writer(final StreamConnection connection, final BlockingStream.Waker waker,
        final int total, final long seed) {
        return CompletableFuture.supplyAsync(() -> {
            try {
                return BlockingStream.writeRandom(connection, waker, total, 300_000, seed);
            } catch (final IOException ex) {
                throw new IllegalStateException(ex);
            }
        }, pair.threads);
    }

    /**
     * Read until the end of the stream in random pieces; the CRC-32 of what was read.
     */
    private CompletableFuture<Long> reader(final StreamConnection connection, final BlockingStream.Waker waker) {
        return CompletableFuture.supplyAsync(() -> {
            final Random sizes = new Random(connection == pair.client ? 3 : 4);
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
        }, pair.threads);
    }

    /**
     * A reader copying out of the ring holds the receive lock only: here another thread holds the send lock all
     * along (as a writer copying into its ring would), and the reader still gets what arrived. With one lock for
     * both sides it would wait for the writer.
     */
    @Test
    void shouldReadWhileTheSendLockIsHeld() throws Exception {
        pair.connect(new StreamOptions());
        final byte[] data = randomBytes(32 << 10);
        BlockingStream.writeFully(pair.client, ByteBuffer.wrap(data), pair.clientWaker);
        final ByteBuffer received = ByteBuffer.allocate(data.length);
        whileHeld(((RsocketConnection) pair.server).sendLock(), () -> {
            while (received.hasRemaining()) {
                BlockingStream.read(pair.server, received, pair.serverWaker);
            }
            return null;
        });
        assertArrayEquals(data, received.array(), pair::describe);
    }

    /**
     * A writer holds the send lock only: here another thread holds the receive lock all along (as a reader copying
     * out of the ring would), and the writer still sends within the credits and regions it has.
     */
    @Test
    void shouldWriteWhileTheReceiveLockIsHeld() throws Exception {
        pair.connect(new StreamOptions());
        final byte[] data = randomBytes(32 << 10);
        whileHeld(((RsocketConnection) pair.client).receiveLock(), () -> {
            BlockingStream.writeFully(pair.client, ByteBuffer.wrap(data), pair.clientWaker);
            return null;
        });
        final ByteBuffer received = ByteBuffer.allocate(data.length);
        while (received.hasRemaining()) {
            BlockingStream.read(pair.server, received, pair.serverWaker);
        }
        assertArrayEquals(data, received.array(), pair::describe);
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
        }, pair.threads);
        held.await();
        try {
            final CompletableFuture<Void> result = CompletableFuture.supplyAsync(() -> {
                try {
                    return work.call();
                } catch (final Exception ex) {
                    throw new IllegalStateException(ex);
                }
            }, pair.threads);
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

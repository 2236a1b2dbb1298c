package io.rdmachannel.channel.stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A platform thread waiting on a connection itself ({@link StreamConnection#awaitDirect}): woken by the event it
 * waits for, by nothing else, and by {@link StreamConnection#wakeDirectWaiters()}. No readiness observer takes part:
 * the connections here are never armed.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class DirectWaitStreamTest {
    private static final long WAKE_SECONDS = 10;
    /** How long a waiter that nothing should wake is watched. */
    private static final long QUIET_MILLIS = 300;
    /** How long establishment's grants and a new waiter are given to settle. */
    private static final long SETTLE_MILLIS = 100;

    @RegisterExtension
    final StreamPairFixture pair = new StreamPairFixture();

    private final AtomicInteger returns = new AtomicInteger();

    private void connect(final StreamOptions options) throws IOException {
        pair.connect(options);
        assertTrue(pair.client.supportsDirectWait(), "shm completion queues wake a waiting thread directly");
    }

    /**
     * A thread that waits directly until {@code done}, as a blocking channel does (spurious returns wait again);
     * each return counts in {@link #returns}.
     */
    private Future<?> waiter(final int interest, final BooleanSupplier done) {
        return pair.threads.submit(() -> {
            while (!done.getAsBoolean()) {
                pair.client.awaitDirect(interest, -1, () -> !done.getAsBoolean());
                returns.incrementAndGet();
            }
        });
    }

    private boolean readable() {
        return (pair.client.readyOps() & StreamReadiness.READ) != 0;
    }

    /**
     * Let the grants of establishment arrive and be taken, and the waiter park: what happens next is the test's.
     */
    private void settle() throws InterruptedException {
        Thread.sleep(SETTLE_MILLIS);
        pair.client.readyOps();
        pair.server.readyOps();
    }

    @Test
    void shouldWakeAReaderWhenThePeerWrites() throws Exception {
        connect(new StreamOptions());
        settle();
        final Future<?> waiting = waiter(StreamReadiness.READ, this::readable);
        Thread.sleep(SETTLE_MILLIS);
        final byte[] data = {1, 2, 3, 4, 5, 6, 7, 8};
        BlockingStream.writeFully(pair.server, ByteBuffer.wrap(data), pair.serverWaker);
        waiting.get(WAKE_SECONDS, TimeUnit.SECONDS);
        final ByteBuffer received = ByteBuffer.allocate(data.length);
        assertEquals(data.length, pair.client.read(received), pair::describe);
        assertArrayEquals(data, received.array());
    }

    @Test
    void shouldNotWakeAReaderForItsOwnSends() throws Exception {
        connect(new StreamOptions());
        settle();
        final AtomicBoolean stop = new AtomicBoolean();
        final Future<?> waiting = waiter(StreamReadiness.READ, stop::get);
        Thread.sleep(SETTLE_MILLIS);
        final int before = returns.get();
        for (int i = 0; i < 16; i++) {
            BlockingStream.writeFully(pair.client, ByteBuffer.allocate(64), pair.clientWaker);
        }
        Thread.sleep(QUIET_MILLIS);
        assertEquals(before, returns.get(), () -> "a send completion woke the reader: " + pair.describe());
        stop.set(true);
        pair.client.wakeDirectWaiters();
        waiting.get(WAKE_SECONDS, TimeUnit.SECONDS);
    }

    /**
     * A writer out of credits waits on the receive side, where the peer's grant arrives once it reads.
     */
    @Test
    void shouldWakeAWriterWhenThePeerGrantsCredits() throws Exception {
        connect(new StreamOptions().receiveBufferSize(8192).sendBufferSize(8192).receiveQueueSize(16)
            .sendQueueSize(32));
        settle();
        final ByteBuffer chunk = ByteBuffer.allocate(4096);
        long written = 0;
        while (true) {
            final int n = pair.client.write(chunk.clear());
            if (n == 0 && (pair.client.readyOps() & StreamReadiness.WRITE) == 0) {
                break;
            }
            written += n;
        }
        final Future<?> waiting = waiter(StreamReadiness.WRITE,
            () -> (pair.client.readyOps() & StreamReadiness.WRITE) != 0);
        Thread.sleep(SETTLE_MILLIS);
        final ByteBuffer sink = ByteBuffer.allocate(64 << 10);
        long read = 0;
        while (read < written) {
            read += BlockingStream.read(pair.server, sink.clear(), pair.serverWaker);
        }
        waiting.get(WAKE_SECONDS, TimeUnit.SECONDS);
    }

    @Test
    void shouldWakeOnRequest() throws Exception {
        connect(new StreamOptions());
        settle();
        final AtomicBoolean stop = new AtomicBoolean();
        final Future<?> waiting = waiter(StreamReadiness.READ, stop::get);
        Thread.sleep(SETTLE_MILLIS);
        assertFalse(waiting.isDone());
        stop.set(true);
        pair.client.wakeDirectWaiters();
        waiting.get(WAKE_SECONDS, TimeUnit.SECONDS);
    }

    @Test
    void shouldReturnAtOnceWhenNoLongerWaiting() throws Exception {
        connect(new StreamOptions());
        settle();
        final AtomicBoolean asked = new AtomicBoolean();
        pair.threads.submit(() -> pair.client.awaitDirect(StreamReadiness.READ, -1, () -> {
            asked.set(true);
            return false;
        })).get(WAKE_SECONDS, TimeUnit.SECONDS);
        assertTrue(asked.get(), "the caller's state is checked after registering");
    }

    @Test
    void shouldReturnWhenThePeerCloses() throws Exception {
        connect(new StreamOptions());
        settle();
        final Future<?> waiting = waiter(StreamReadiness.READ, this::readable);
        Thread.sleep(SETTLE_MILLIS);
        pair.server.close();
        pair.server = null;
        try {
            waiting.get(WAKE_SECONDS, TimeUnit.SECONDS);
        } catch (final ExecutionException ex) {
            throw new AssertionError(ex.getCause());
        }
    }
}

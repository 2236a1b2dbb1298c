package io.rdmachannel.channel.stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmachannel.channel.spi.RdmaProviders;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

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

    private StreamTransport transport;
    private ExecutorService threads;
    private StreamListener listener;
    private final BlockingStream.Waker serverWaker = new BlockingStream.Waker();
    private final BlockingStream.Waker clientWaker = new BlockingStream.Waker();
    private StreamConnection client;
    private StreamConnection server;
    private final AtomicInteger returns = new AtomicInteger();

    @BeforeEach
    void open() {
        transport = StreamTransports.open(RdmaProviders.byName("shm"));
        threads = Executors.newThreadPerTaskExecutor(Thread.ofPlatform().daemon().factory());
    }

    @AfterEach
    void close() {
        if (client != null) {
            client.wakeDirectWaiters();
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
        assertTrue(client.supportsDirectWait(), "shm completion queues wake a waiting thread directly");
    }

    private String describe() {
        return "client " + client.describe() + "; server " + server.describe();
    }

    /**
     * A thread that waits directly until {@code done}, as a blocking channel does (spurious returns wait again);
     * each return counts in {@link #returns}.
     */
    private Future<?> waiter(final int interest, final BooleanSupplier done) {
        return threads.submit(() -> {
            while (!done.getAsBoolean()) {
                client.awaitDirect(interest, -1, () -> !done.getAsBoolean());
                returns.incrementAndGet();
            }
        });
    }

    private boolean readable() {
        return (client.readyOps() & StreamReadiness.READ) != 0;
    }

    /**
     * Let the grants of establishment arrive and be taken, and the waiter park: what happens next is the test's.
     */
    private void settle() throws InterruptedException {
        Thread.sleep(SETTLE_MILLIS);
        client.readyOps();
        server.readyOps();
    }

    @Test
    void shouldWakeAReaderWhenThePeerWrites() throws Exception {
        connect(new StreamOptions());
        settle();
        final Future<?> waiting = waiter(StreamReadiness.READ, this::readable);
        Thread.sleep(SETTLE_MILLIS);
        final byte[] data = {1, 2, 3, 4, 5, 6, 7, 8};
        BlockingStream.writeFully(server, ByteBuffer.wrap(data), serverWaker);
        waiting.get(WAKE_SECONDS, TimeUnit.SECONDS);
        final ByteBuffer received = ByteBuffer.allocate(data.length);
        assertEquals(data.length, client.read(received), this::describe);
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
            BlockingStream.writeFully(client, ByteBuffer.allocate(64), clientWaker);
        }
        Thread.sleep(QUIET_MILLIS);
        assertEquals(before, returns.get(), () -> "a send completion woke the reader: " + describe());
        stop.set(true);
        client.wakeDirectWaiters();
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
            final int n = client.write(chunk.clear());
            if (n == 0 && (client.readyOps() & StreamReadiness.WRITE) == 0) {
                break;
            }
            written += n;
        }
        final Future<?> waiting = waiter(StreamReadiness.WRITE,
            () -> (client.readyOps() & StreamReadiness.WRITE) != 0);
        Thread.sleep(SETTLE_MILLIS);
        final ByteBuffer sink = ByteBuffer.allocate(64 << 10);
        long read = 0;
        while (read < written) {
            read += BlockingStream.read(server, sink.clear(), serverWaker);
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
        client.wakeDirectWaiters();
        waiting.get(WAKE_SECONDS, TimeUnit.SECONDS);
    }

    @Test
    void shouldReturnAtOnceWhenNoLongerWaiting() throws Exception {
        connect(new StreamOptions());
        settle();
        final AtomicBoolean asked = new AtomicBoolean();
        threads.submit(() -> client.awaitDirect(StreamReadiness.READ, -1, () -> {
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
        server.close();
        server = null;
        try {
            waiting.get(WAKE_SECONDS, TimeUnit.SECONDS);
        } catch (final ExecutionException ex) {
            throw new AssertionError(ex.getCause());
        }
    }
}

package io.rdmachannel.interop.allocation;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.rdmachannel.channel.spi.RdmaProviders;
import io.rdmachannel.channel.stream.StreamTransport;
import io.rdmachannel.channel.stream.StreamTransports;
import io.rdmachannel.nio.RdmaSelectorProvider;
import io.rdmachannel.nio.RdmaSocketOptions;

import java.io.EOFException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The parked paths allocate nothing: blocking ping-pong over {@code RdmaSocketChannel}s on the shm provider with no
 * busy poll ({@code RDMA_BUSY_POLL} 0), so every read parks and every write wakes a parked reader. An echo thread per
 * connection reads each message and writes it back; one client thread sends a message on each connection in turn and
 * waits for the echo. The allocated-bytes counters of the client thread and of every echo thread (the waiting and
 * the waking threads) stay where they were, with one connection and with 100 on one device. The threads are platform
 * threads, which wait on the connection itself.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class ParkedAllocationTest {
    static final int WARM_UP_ROUND_TRIPS = 20_000;
    static final int MEASURED_ROUND_TRIPS = 10_000;
    /** Per round trip and thread, as {@link ChannelAllocationTest}'s slack: below the smallest object. */
    static final double SLACK_BYTES_PER_ROUND_TRIP = 1.0;
    static final int SIZE = 64;

    private static final com.sun.management.ThreadMXBean THREADS =
        (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();

    private StreamTransport transport;
    private ServerSocketChannel listener;
    private final List<SocketChannel> clients = new ArrayList<>();
    private final List<SocketChannel> servers = new ArrayList<>();
    private final List<Thread> echoes = new ArrayList<>();
    private final AtomicReference<Throwable> echoFailure = new AtomicReference<>();

    @BeforeEach
    void open() throws IOException {
        assumeTrue(THREADS.isThreadAllocatedMemorySupported() && THREADS.isThreadAllocatedMemoryEnabled(),
            "this JVM does not count allocated bytes per thread");
        transport = StreamTransports.open(RdmaProviders.byName("shm"));
        listener = new RdmaSelectorProvider(transport).openServerSocketChannel()
            .bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 128);
    }

    @AfterEach
    void close() throws Exception {
        try {
            for (final SocketChannel client : clients) {
                client.close();
            }
            for (final Thread echo : echoes) {
                echo.join(TimeUnit.SECONDS.toMillis(10));
            }
            for (final SocketChannel server : servers) {
                server.close();
            }
            if (listener != null) {
                listener.close();
            }
        } finally {
            if (transport != null) {
                StreamTransports.close(transport);
            }
        }
    }

    @ParameterizedTest(name = "{0} connections")
    @ValueSource(ints = {1, 100})
    void shouldNotAllocateWhileParkingAndWaking(final int connections) throws Exception {
        final RdmaSelectorProvider provider = new RdmaSelectorProvider(transport);
        final long[] echoBefore = new long[connections];
        final long[] echoAfter = new long[connections];
        final CountDownLatch echoesDone = new CountDownLatch(connections);
        for (int i = 0; i < connections; i++) {
            final SocketChannel server = connect(provider);
            final int index = i;
            final Runnable echo = () -> echo(server, connections, echoBefore, echoAfter, index,
                echoesDone);
            echoes.add(Thread.ofPlatform().daemon().start(echo));
        }
        final ByteBuffer message = ByteBuffer.allocateDirect(SIZE);
        final ByteBuffer reply = ByteBuffer.allocateDirect(SIZE);
        roundTrips(WARM_UP_ROUND_TRIPS, message, reply);
        final long before = THREADS.getCurrentThreadAllocatedBytes();
        roundTrips(MEASURED_ROUND_TRIPS, message, reply);
        final long allocated = THREADS.getCurrentThreadAllocatedBytes() - before;
        // one more round on each connection ends the echo threads' measurement (see echo)
        roundTrips(connections, message, reply);
        assertTrue(echoesDone.await(30, TimeUnit.SECONDS), "echo threads did not finish");
        assertEquals(null, echoFailure.get(), "an echo thread failed");

        assertTrue(allocated < SLACK_BYTES_PER_ROUND_TRIP * MEASURED_ROUND_TRIPS, allocated
            + " bytes allocated by the client thread in " + MEASURED_ROUND_TRIPS + " parked round trips");
        long echoed = 0;
        for (int i = 0; i < connections; i++) {
            echoed += echoAfter[i] - echoBefore[i];
        }
        assertTrue(echoed < SLACK_BYTES_PER_ROUND_TRIP * MEASURED_ROUND_TRIPS, echoed
            + " bytes allocated by the echo threads in " + MEASURED_ROUND_TRIPS + " parked round trips");
    }

    /**
     * The same with the echo side one selector thread serving every connection (non-blocking channels, no busy poll):
     * each selection parks, and the client's message wakes it. Up to {@code RdmaSelector}'s limit of keys the
     * selector waits on the connections' completion queues itself (shm), with 100 keys through the relays; neither
     * the selector's thread nor the client's allocates.
     */
    @ParameterizedTest(name = "{0} connections")
    @ValueSource(ints = {1, 40, 100})
    void shouldNotAllocateWhileASelectorParksAndIsWoken(final int connections) throws Exception {
        final RdmaSelectorProvider provider = new RdmaSelectorProvider(transport);
        final Selector selector = provider.openSelector();
        for (int i = 0; i < connections; i++) {
            final SocketChannel server = connect(provider);
            server.configureBlocking(false);
            server.register(selector, SelectionKey.OP_READ, ByteBuffer.allocateDirect(SIZE));
        }
        final SelectorEcho echo = new SelectorEcho(selector);
        final Thread thread = Thread.ofPlatform().daemon().name("selector-echo").start(echo);
        echoes.add(thread);
        final ByteBuffer message = ByteBuffer.allocateDirect(SIZE);
        final ByteBuffer reply = ByteBuffer.allocateDirect(SIZE);
        roundTrips(WARM_UP_ROUND_TRIPS, message, reply);
        final long echoBefore = THREADS.getThreadAllocatedBytes(thread.threadId());
        final long before = THREADS.getCurrentThreadAllocatedBytes();
        roundTrips(MEASURED_ROUND_TRIPS, message, reply);
        final long allocated = THREADS.getCurrentThreadAllocatedBytes() - before;
        final long echoed = THREADS.getThreadAllocatedBytes(thread.threadId()) - echoBefore;
        echo.stop();
        thread.join(TimeUnit.SECONDS.toMillis(10));
        assertEquals(null, echoFailure.get(), "the selector thread failed");

        assertTrue(allocated < SLACK_BYTES_PER_ROUND_TRIP * MEASURED_ROUND_TRIPS, allocated
            + " bytes allocated by the client thread in " + MEASURED_ROUND_TRIPS + " round trips");
        assertTrue(echoed < SLACK_BYTES_PER_ROUND_TRIP * MEASURED_ROUND_TRIPS, echoed
            + " bytes allocated by the selector thread in " + MEASURED_ROUND_TRIPS + " round trips");
    }

    /**
     * Connect a client with no busy poll and accept its server side, both kept for closing.
     *
     * @return the server side.
     */
    private SocketChannel connect(final RdmaSelectorProvider provider) throws IOException {
        final SocketChannel client = provider.openSocketChannel();
        client.setOption(RdmaSocketOptions.RDMA_BUSY_POLL, 0);
        client.connect(listener.getLocalAddress());
        final SocketChannel server = listener.accept();
        server.setOption(RdmaSocketOptions.RDMA_BUSY_POLL, 0);
        clients.add(client);
        servers.add(server);
        return server;
    }

    /**
     * One selector thread echoing every registered connection's messages: each key's attachment collects one message,
     * written back once whole. Selects with an action made once, so a selection allocates nothing of its own.
     */
    private final class SelectorEcho implements Runnable {
        private final Selector selector;
        private final Consumer<SelectionKey> onReady = this::echo;
        private volatile boolean stopped;

        SelectorEcho(final Selector selector) {
            this.selector = selector;
        }

        @Override
        public void run() {
            try (Selector owned = selector) {
                while (!stopped) {
                    owned.select(onReady);
                }
            } catch (final IOException | RuntimeException ex) {
                echoFailure.compareAndSet(null, ex);
            }
        }

        private void echo(final SelectionKey key) {
            final SocketChannel channel = (SocketChannel) key.channel();
            final ByteBuffer buffer = (ByteBuffer) key.attachment();
            try {
                if (channel.read(buffer) < 0) {
                    key.cancel();
                    return;
                }
                if (!buffer.hasRemaining()) {
                    buffer.flip();
                    while (buffer.hasRemaining()) {
                        channel.write(buffer);
                    }
                    buffer.clear();
                }
            } catch (final IOException ex) {
                throw new UncheckedIOException(ex);
            }
        }

        void stop() {
            stopped = true;
            selector.wakeup();
        }
    }

    /**
     * Send one message on each connection in turn and wait for its echo, {@code count} round trips in all.
     */
    private void roundTrips(final int count, final ByteBuffer message, final ByteBuffer reply) throws IOException {
        for (int i = 0; i < count; i++) {
            final SocketChannel client = clients.get(i % clients.size());
            message.clear();
            while (message.hasRemaining()) {
                client.write(message);
            }
            reply.clear();
            while (reply.hasRemaining()) {
                if (client.read(reply) < 0) {
                    throw new EOFException("end of stream: " + client);
                }
            }
        }
    }

    /**
     * Echo this connection's messages of the warm-up, the measurement and the final round. The measured window of
     * this thread spans the messages of the client's measurement.
     */
    private void echo(final SocketChannel server, final int connections, final long[] before, final long[] after,
        final int index, final CountDownLatch done) {
        final ByteBuffer buffer = ByteBuffer.allocateDirect(SIZE);
        final long self = Thread.currentThread().threadId();
        // messages of this connection in the warm-up, the measurement and the final round
        final int warmUp = messagesOf(index, WARM_UP_ROUND_TRIPS, connections);
        final int measured = messagesOf(index, MEASURED_ROUND_TRIPS, connections);
        try {
            for (int n = 0; n < warmUp + measured + 1; n++) {
                if (n == warmUp) {
                    before[index] = THREADS.getThreadAllocatedBytes(self);
                } else if (n == warmUp + measured) {
                    after[index] = THREADS.getThreadAllocatedBytes(self);
                }
                buffer.clear();
                while (buffer.hasRemaining()) {
                    if (server.read(buffer) < 0) {
                        throw new EOFException("end of stream: " + server);
                    }
                }
                buffer.flip();
                while (buffer.hasRemaining()) {
                    server.write(buffer);
                }
            }
        } catch (final IOException | RuntimeException ex) {
            echoFailure.compareAndSet(null, ex);
        } finally {
            done.countDown();
        }
    }

    /** How many of {@code total} round-robin round trips go to connection {@code index}. */
    private static int messagesOf(final int index, final int total, final int connections) {
        return total / connections + (index < total % connections ? 1 : 0);
    }
}

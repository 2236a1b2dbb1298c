package io.rdmachannel.channel.stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.rdmachannel.channel.spi.RdmaProviders;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The stream engine's data path allocates nothing: write and read round trips on a connected pair, driven by one
 * thread, leave that thread's allocated-bytes counter where it was. Not a timing test: it counts bytes.
 *
 * <p>The average may be below {@link #SLACK_BYTES_PER_ROUND_TRIP} per round trip rather than exactly zero: the
 * counter also sees what the JVM itself may allocate on this thread now and then (a deoptimisation materialising an
 * object the compiler had eliminated, a lazily initialised class). One allocation per round trip, even the smallest
 * object (16 bytes), exceeds it; a round trip of 64 KiB is several messages.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class StreamAllocationTest {
    static final int WARM_UP_ROUND_TRIPS = 20_000;
    static final int MEASURED_ROUND_TRIPS = 10_000;
    static final double SLACK_BYTES_PER_ROUND_TRIP = 1.0;

    private static final com.sun.management.ThreadMXBean THREADS =
        (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();

    private final BlockingStream.Waker waker = new BlockingStream.Waker();
    private StreamTransport transport;
    private StreamListener listener;
    private StreamConnection client;
    private StreamConnection server;

    /** Both ends with receive queues of their own, or both in SRQ mode (receives from the shared queue). */
    private void connect(final boolean sharedReceiveQueue) throws IOException {
        assumeTrue(THREADS.isThreadAllocatedMemorySupported() && THREADS.isThreadAllocatedMemoryEnabled(),
            "this JVM does not count allocated bytes per thread");
        transport = StreamTransports.open(RdmaProviders.byName("shm"));
        final StreamOptions options = new StreamOptions().sharedReceiveQueue(sharedReceiveQueue);
        listener = transport.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 4, options, waker);
        client = BlockingStream.connect(transport.connect(listener.localAddress(), null, options, waker), waker);
        server = BlockingStream.accept(listener, waker);
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
        if (transport != null) {
            StreamTransports.close(transport);
        }
    }

    @ParameterizedTest(name = "{0} bytes, SRQ mode {1}")
    @CsvSource({"64, false", "65536, false", "64, true", "65536, true"})
    void shouldNotAllocateWhileWritingAndReading(final int size, final boolean sharedReceiveQueue)
        throws IOException {
        connect(sharedReceiveQueue);
        final ByteBuffer source = ByteBuffer.allocateDirect(size);
        final ByteBuffer destination = ByteBuffer.allocate(size);
        roundTrips(WARM_UP_ROUND_TRIPS, source, destination);

        final long before = THREADS.getCurrentThreadAllocatedBytes();
        roundTrips(MEASURED_ROUND_TRIPS, source, destination);
        final long allocated = THREADS.getCurrentThreadAllocatedBytes() - before;

        assertTrue(allocated < SLACK_BYTES_PER_ROUND_TRIP * MEASURED_ROUND_TRIPS, allocated + " bytes allocated in "
            + MEASURED_ROUND_TRIPS + " round trips of " + size + " bytes; client " + client.describe());
    }

    /**
     * Write {@code source} on the client and read it all on the server, {@code count} times, on this thread.
     */
    private void roundTrips(final int count, final ByteBuffer source, final ByteBuffer destination)
        throws IOException {
        for (int i = 0; i < count; i++) {
            source.clear();
            destination.clear();
            while (destination.hasRemaining()) {
                if (source.hasRemaining()) {
                    client.write(source);
                }
                if (server.read(destination) < 0) {
                    throw new IOException("end of stream: " + server.describe());
                }
            }
        }
        assertEquals(0, client.readyOps() & StreamReadiness.READ & server.readyOps());
    }
}

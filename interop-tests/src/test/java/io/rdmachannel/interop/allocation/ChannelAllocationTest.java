package io.rdmachannel.interop.allocation;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.rdmachannel.channel.spi.RdmaProviders;
import io.rdmachannel.channel.stream.StreamTransport;
import io.rdmachannel.channel.stream.StreamTransports;
import io.rdmachannel.nio.RdmaSelectorProvider;

import java.io.EOFException;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The RDMA channels' write and read paths allocate nothing: round trips on a connected pair of
 * {@code RdmaSocketChannel}s over the shm provider (a client and the channel its listener accepted), driven by one
 * thread, leave that thread's allocated-bytes counter where it was. Blocking and non-blocking, heap and direct
 * buffers, one small and one large size. Not a timing test: it counts bytes.
 *
 * <p>The average may be below {@link #SLACK_BYTES_PER_ROUND_TRIP} per round trip rather than exactly zero: the
 * counter also sees what the JVM itself may allocate on this thread now and then (a deoptimisation materialising an
 * object the compiler had eliminated, a lazily initialised class). One allocation per round trip, even the smallest
 * object (16 bytes), exceeds it.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ChannelAllocationTest {
    static final int WARM_UP_ROUND_TRIPS = 20_000;
    static final int MEASURED_ROUND_TRIPS = 10_000;
    static final double SLACK_BYTES_PER_ROUND_TRIP = 1.0;

    private static final com.sun.management.ThreadMXBean THREADS =
        (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();

    private StreamTransport transport;
    private ServerSocketChannel listener;
    private SocketChannel client;
    private SocketChannel server;

    @BeforeEach
    void connect() throws IOException {
        assumeTrue(THREADS.isThreadAllocatedMemorySupported() && THREADS.isThreadAllocatedMemoryEnabled(),
            "this JVM does not count allocated bytes per thread");
        transport = StreamTransports.open(RdmaProviders.byName("shm"));
        final RdmaSelectorProvider provider = new RdmaSelectorProvider(transport);
        listener = provider.openServerSocketChannel().bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
        client = provider.openSocketChannel();
        client.connect(listener.getLocalAddress());
        server = listener.accept();
    }

    @AfterEach
    void close() throws IOException {
        try {
            if (client != null) {
                client.close();
            }
            if (server != null) {
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

    @ParameterizedTest(name = "{0} bytes, blocking {1}, direct {2}")
    @CsvSource({
        "64, true, true", "64, true, false", "64, false, true", "64, false, false",
        "65536, true, true", "65536, true, false", "65536, false, true", "65536, false, false"})
    void shouldNotAllocateWhileWritingAndReading(final int size, final boolean blocking, final boolean direct)
        throws IOException {
        client.configureBlocking(blocking);
        server.configureBlocking(blocking);
        final ByteBuffer source = direct ? ByteBuffer.allocateDirect(size) : ByteBuffer.allocate(size);
        final ByteBuffer destination = direct ? ByteBuffer.allocateDirect(size) : ByteBuffer.allocate(size);
        roundTrips(WARM_UP_ROUND_TRIPS, source, destination);

        final long before = THREADS.getCurrentThreadAllocatedBytes();
        roundTrips(MEASURED_ROUND_TRIPS, source, destination);
        final long allocated = THREADS.getCurrentThreadAllocatedBytes() - before;

        assertTrue(allocated < SLACK_BYTES_PER_ROUND_TRIP * MEASURED_ROUND_TRIPS, allocated + " bytes allocated in "
            + MEASURED_ROUND_TRIPS + " round trips of " + size + " bytes; client " + client + "; server " + server);
    }

    /**
     * Write {@code source} on the client and read it all on the server, {@code count} times, on this thread. A
     * blocking write takes everything at once: the receive window of a fresh pair holds a whole round trip.
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
                    throw new EOFException("end of stream: " + server);
                }
            }
        }
    }
}

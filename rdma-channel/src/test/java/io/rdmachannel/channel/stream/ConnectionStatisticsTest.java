package io.rdmachannel.channel.stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;
import io.rdmachannel.channel.ConnectionStatistics;
import io.rdmachannel.channel.spi.RdmaProviders;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The per-connection counters: bytes and messages each way, stalls, spins and waits, kept on both ends of a shm
 * connection and readable after close.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ConnectionStatisticsTest {
    private StreamTransport transport;
    private StreamListener listener;
    private final BlockingStream.Waker serverWaker = new BlockingStream.Waker();
    private final BlockingStream.Waker clientWaker = new BlockingStream.Waker();
    private StreamConnection client;
    private StreamConnection server;

    @BeforeEach
    void connect() throws IOException {
        transport = StreamTransports.open(RdmaProviders.byName("shm"));
        listener = transport.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 4,
            new StreamOptions(), serverWaker);
        client = BlockingStream.connect(transport.connect(listener.localAddress(), null, new StreamOptions(),
            clientWaker), clientWaker);
        server = BlockingStream.accept(listener, serverWaker);
        awaitSecondRingHalf();
    }

    /**
     * Taken at the reply, the server grants the second half of its ring once the client's RTU arrived, after the
     * connect returned: a grant that lands while a test counts the client's wake-ups is one wake-up more. The tests
     * start once the client has taken it.
     */
    private void awaitSecondRingHalf() {
        final int half = StreamConfiguration.RECEIVE_BUFFER_LENGTH_DEFAULT / 2;
        final String granted = "targetLength=" + half + "/" + half + ",";
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!client.describe().contains(granted)) {
            assertTrue(System.nanoTime() - deadline < 0, () -> "no second ring half: " + client.describe());
            client.readyOps();
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1));
        }
    }

    @AfterEach
    void close() throws Exception {
        try {
            for (final AutoCloseable resource : new AutoCloseable[] {server, client, listener}) {
                if (resource != null) {
                    resource.close();
                }
            }
        } finally {
            StreamTransports.close(transport);
        }
    }

    @Test
    void shouldCountTheBytesAndMessagesOfEachDirection() throws IOException {
        final ConnectionStatistics before = client.statistics();
        // connecting may have armed the connection (and been woken) already
        assertEquals(new ConnectionStatistics(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, before.readinessArms(),
            before.readinessWakeups()), before);
        for (int i = 0; i < 10; i++) {
            BlockingStream.writeFully(client, ByteBuffer.allocate(1000), clientWaker);
        }
        final ByteBuffer direct = ByteBuffer.allocateDirect(64 * 1024);
        BlockingStream.writeFully(client, direct, clientWaker);
        final long total = 10 * 1000 + direct.capacity();
        readFully(server, total);
        BlockingStream.writeFully(server, ByteBuffer.allocate(7), serverWaker);
        readFully(client, 7);

        final ConnectionStatistics sent = client.statistics();
        final ConnectionStatistics received = server.statistics();
        assertEquals(total, sent.bytesSent(), sent::toString);
        assertTrue(sent.messagesSent() >= 11, sent::toString);
        assertEquals(sent.messagesSent(), received.messagesReceived(), received::toString);
        assertEquals(total, received.bytesReceived(), received::toString);
        assertEquals(7, sent.bytesReceived(), sent::toString);
        assertEquals(1, sent.messagesReceived(), sent::toString);
        assertEquals(7, received.bytesSent(), received::toString);
        // shm reads the caller's direct buffer itself: its chunks over the inline size go straight from it
        assertTrue(sent.directBytes() > 0 && sent.directBytes() <= direct.capacity(), sent::toString);
        assertEquals(0, sent.zeroCopyBytes(), sent::toString);
        assertEquals(0, sent.completionErrors() + received.completionErrors(), sent::toString);

        client.close();
        assertEquals(sent.bytesSent(), client.statistics().bytesSent(), "readable after close");
    }

    @Test
    void shouldCountAWriteStalledForThePeersCreditsWhenThePeerDoesNotRead() throws IOException {
        final ByteBuffer chunk = ByteBuffer.allocate(64 * 1024);
        long written = 0;
        while (client.write(chunk.clear()) > 0) {
            written += chunk.position();
        }
        final ConnectionStatistics stalled = client.statistics();
        assertEquals(1, stalled.creditStalls(), stalled::toString);
        assertEquals(0, stalled.bufferStalls(), stalled::toString);
        assertEquals(written, stalled.bytesSent(), stalled::toString);
    }

    @Test
    void shouldCountSpinsThatCaughtAMessageAndDirectWaits() throws IOException {
        assertEquals(0, client.spin(TimeUnit.MICROSECONDS.toNanos(100), StreamReadiness.READ)
            & StreamReadiness.READ);
        assertEquals(0, client.statistics().spinsCaught());
        BlockingStream.writeFully(server, ByteBuffer.allocate(1), serverWaker);
        assertEquals(StreamReadiness.READ, client.spin(TimeUnit.SECONDS.toNanos(10), StreamReadiness.READ)
            & StreamReadiness.READ);
        assertEquals(1, client.statistics().spinsCaught(), client::describe);
        readFully(client, 1);

        assumeTrue(client.supportsDirectWait(), "the device has no direct waits");
        client.awaitDirect(StreamReadiness.READ, TimeUnit.MILLISECONDS.toNanos(1), () -> true);
        assertEquals(1, client.statistics().directWaits(), client::describe);
    }

    @Test
    void shouldCountArmingsAndTheWakeupsTheyBring() throws IOException {
        final ConnectionStatistics unarmed = client.statistics();
        client.arm();
        assertEquals(unarmed.readinessArms() + 1, client.statistics().readinessArms(), client::describe);
        assertEquals(unarmed.readinessWakeups(), client.statistics().readinessWakeups(), client::describe);
        BlockingStream.writeFully(server, ByteBuffer.allocate(1), serverWaker);
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (client.statistics().readinessWakeups() == unarmed.readinessWakeups() && System.nanoTime() < deadline) {
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1));
        }
        assertEquals(unarmed.readinessWakeups() + 1, client.statistics().readinessWakeups(), client::describe);
        readFully(client, 1);
    }

    private ByteBuffer readFully(final StreamConnection connection, final long length) throws IOException {
        final ByteBuffer buffer = ByteBuffer.allocate(64 * 1024);
        long left = length;
        final BlockingStream.Waker waker = connection == client ? clientWaker : serverWaker;
        while (left > 0) {
            final int count = BlockingStream.read(connection, buffer.clear().limit((int) Math.min(left,
                buffer.capacity())), waker);
            assertTrue(count > 0, connection::describe);
            left -= count;
        }
        return buffer;
    }
}

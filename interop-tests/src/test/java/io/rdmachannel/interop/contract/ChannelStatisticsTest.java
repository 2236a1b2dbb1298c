package io.rdmachannel.interop.contract;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import io.rdmachannel.channel.ConnectionStatistics;
import io.rdmachannel.nio.RdmaSocketChannel;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@link RdmaSocketChannel#statistics()} on shm channels: empty until connected, the bytes of each direction on
 * both ends, the final counts after close, and how blocked readers waited: parked on the channel's relay (virtual
 * threads) or directly on the connection (platform threads on shm).
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class ChannelStatisticsTest {

    @Test
    void shouldReportWhatEachEndOfAnEchoSentAndReceived() throws Exception {
        final InetAddress loopback = InetAddress.getLoopbackAddress();
        final RdmaTransport transport = new RdmaTransport(RdmaTransport.SHM, "shm", loopback);
        final int length = 10_000;
        final RdmaSocketChannel client = (RdmaSocketChannel) transport.openSocketChannel();
        final ConnectionStatistics ours;
        try (ServerSocketChannel listener = transport.openServerSocketChannel(); client) {
            listener.bind(new InetSocketAddress(loopback, 0));
            assertTrue(client.statistics().isEmpty(), "not connected yet");
            client.connect(listener.getLocalAddress());
            final CompletableFuture<ConnectionStatistics> echoed = CompletableFuture.supplyAsync(() -> {
                try (SocketChannel accepted = listener.accept()) {
                    final ByteBuffer buffer = ByteBuffer.allocate(length);
                    while (buffer.hasRemaining()) {
                        accepted.read(buffer);
                    }
                    accepted.write(buffer.flip());
                    return ((RdmaSocketChannel) accepted).statistics().orElseThrow();
                } catch (final Exception ex) {
                    throw new IllegalStateException(ex);
                }
            });
            client.write(ByteBuffer.allocate(length));
            final ByteBuffer reply = ByteBuffer.allocate(length);
            while (reply.hasRemaining() && client.read(reply) >= 0) {
                // until the whole echo is back
            }
            final ConnectionStatistics server = echoed.get(20, TimeUnit.SECONDS);
            ours = client.statistics().orElseThrow();
            assertEquals(length, ours.bytesSent(), ours::toString);
            assertEquals(length, ours.bytesReceived(), ours::toString);
            assertEquals(length, server.bytesReceived(), server::toString);
            assertEquals(length, server.bytesSent(), server::toString);
            assertEquals(ours.messagesSent(), server.messagesReceived(), server::toString);
            assertEquals(0, ours.completionErrors(), ours::toString);
        }
        assertEquals(ours.bytesSent(), client.statistics().orElseThrow().bytesSent(), "the final counts after close");
    }
    @Test
    void shouldCountAVirtualThreadsParksOnTheRelayAndAPlatformThreadsWaitsOnTheConnection() throws Exception {
        final InetAddress loopback = InetAddress.getLoopbackAddress();
        final RdmaTransport transport = new RdmaTransport(RdmaTransport.SHM, "shm", loopback);
        try (ServerSocketChannel listener = transport.openServerSocketChannel();
            RdmaSocketChannel client = (RdmaSocketChannel) transport.openSocketChannel()) {
            listener.bind(new InetSocketAddress(loopback, 0));
            client.connect(listener.getLocalAddress());
            try (SocketChannel accepted = listener.accept()) {
                final ConnectionStatistics before = client.statistics().orElseThrow();
                final ConnectionStatistics relayed = blockedRead(IoMode.VIRTUAL_THREADS, client, accepted);
                assertTrue(relayed.readinessArms() > before.readinessArms(), relayed::toString);
                assertTrue(relayed.readinessWakeups() > before.readinessWakeups(), relayed::toString);
                assertEquals(before.directWaits(), relayed.directWaits(), "a virtual thread never waits directly");

                final ConnectionStatistics direct = blockedRead(IoMode.BLOCKING, client, accepted);
                assertEquals(relayed.directWaits() + 1, direct.directWaits(), direct::toString);
                assertEquals(relayed.readinessArms(), direct.readinessArms(), "shm waits on the connection itself");
                assertEquals(relayed.readinessWakeups(), direct.readinessWakeups(), direct::toString);
            }
        }
    }

    /**
     * A read in {@code mode} that blocks until the peer writes a byte; the reader's statistics after it.
     */
    private static ConnectionStatistics blockedRead(final IoMode mode, final RdmaSocketChannel client,
        final SocketChannel peer) throws Exception {
        final Forked<Integer> reader = mode.fork("reader", () -> client.read(ByteBuffer.allocate(1)));
        Await.awaitBlockedIn(reader.thread(), client, "read");
        peer.write(ByteBuffer.allocate(1));
        assertEquals(1, reader.join(Await.DEFAULT_TIMEOUT));
        return client.statistics().orElseThrow();
    }
}

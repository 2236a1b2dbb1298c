package io.rdmachannel.channel.shm;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmachannel.channel.spi.CompletionQueue;
import io.rdmachannel.channel.spi.ProtectionDomain;
import io.rdmachannel.channel.spi.QueuePair;
import io.rdmachannel.channel.spi.QueuePairInitAttributes;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Properties;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Connecting a queue pair links its device to the peer's agent; a peer process that accepts no link (stopped, hung,
 * its backlog full) must make the connect fail after {@link ShmConfiguration#LINK_CONNECT_TIMEOUT_MILLIS_PROP_NAME},
 * not wait without end.
 */
@Timeout(30)
class ShmLinkConnectTest {
    private static final int TIMEOUT_MILLIS = 300;

    @RegisterExtension
    final ShmFixture fixture = new ShmFixture();

    @Test
    void shouldFailTheConnectWhenThePeersAgentAcceptsNoLink() throws Exception {
        final Properties properties = new Properties(System.getProperties());
        properties.setProperty(ShmConfiguration.LINK_CONNECT_TIMEOUT_MILLIS_PROP_NAME,
            Integer.toString(TIMEOUT_MILLIS));
        final ShmDevice one = device(properties);
        final ShmDevice two = device(properties);
        // the device with the lower GID opens the link; the other one's agent is the one that must accept it
        final boolean oneInitiates = Arrays.compareUnsigned(one.gid(), two.gid()) < 0;
        final ShmDevice initiator = oneInitiates ? one : two;
        final ShmDevice acceptor = oneInitiates ? two : one;
        final QueuePair active = queuePair(initiator);
        final QueuePair passive = queuePair(acceptor);
        final Path socket = acceptor.folder().resolve(ShmAgent.SOCKET_FILE);
        Files.delete(socket);
        final List<AutoCloseable> stalled = new ArrayList<>();
        try (ServerSocketChannel listener = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
            // a listener that never accepts, in the agent's place, with its backlog full
            listener.bind(UnixDomainSocketAddress.of(socket), 1);
            for (int i = 0; i < 2; i++) {
                stalled.add(SocketChannel.open(UnixDomainSocketAddress.of(socket)));
            }
            final long start = System.nanoTime();
            final IOException failure = assertThrows(IOException.class, () -> ShmFixture.connect(active,
                ShmFixture.FULL_ACCESS, acceptor.gid(), passive.number(), UnaryOperator.identity()));
            final long tookMillis = (System.nanoTime() - start) / 1_000_000;
            assertTrue(failure.getMessage().contains("accepted no link within " + TIMEOUT_MILLIS + " ms"),
                failure::toString);
            assertTrue(tookMillis >= TIMEOUT_MILLIS && tookMillis < 10 * TIMEOUT_MILLIS + 2000,
                () -> "the connect failed after " + tookMillis + " ms; the timeout is " + TIMEOUT_MILLIS + " ms");
        } finally {
            for (final AutoCloseable client : stalled) {
                client.close();
            }
        }
    }

    private ShmDevice device(final Properties properties) throws IOException {
        return fixture.own(ShmDevice.open((ShmProvider) ShmFixture.provider(),
            ShmConfiguration.fromProperties(properties)));
    }

    private QueuePair queuePair(final ShmDevice device) throws IOException {
        final ProtectionDomain pd = fixture.own(device.allocateProtectionDomain());
        final CompletionQueue cq = fixture.own(device.createCompletionQueue(16, null, 0));
        return fixture.own(pd.createQueuePair(new QueuePairInitAttributes().sendCompletionQueue(cq)
            .receiveCompletionQueue(cq)));
    }
}

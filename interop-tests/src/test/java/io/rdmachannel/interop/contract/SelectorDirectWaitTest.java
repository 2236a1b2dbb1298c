package io.rdmachannel.interop.contract;

import static java.nio.channels.SelectionKey.OP_READ;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.Pipe;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import io.rdmachannel.channel.ConnectionStatistics;
import io.rdmachannel.nio.RdmaSocketChannel;
import io.rdmachannel.nio.RdmaSocketOptions;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * A selector whose thread waits on the completion queues itself: the peer's write wakes it with no relay arming and
 * no device or poller thread in between (counted as the connection's direct waits), and it still sees every key when
 * it must wait another way (a platform channel joins it, a virtual thread selects). On shm the thread sleeps on the
 * queues' words, the two ends on two shm nodes, so the wake-up comes from the peer's mapping of the queue, as between
 * two processes; on the native provider (the soft-RoCE guest, when {@code rdma-native} is among the contract
 * transports) it sleeps in {@code poll(2)} on the queues' completion channels.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class SelectorDirectWaitTest {
    private static final String DIRECT_WAIT_PROP = "rdmachannel.selector.directWait";

    /**
     * Argument source: shm across two nodes, and the native provider where the contract transports include it.
     *
     * @return one argument set per transport.
     */
    static Stream<Arguments> transports() {
        return ContractTransports.ALL.stream()
            .filter(t -> t.name().equals(RdmaTransport.SHM_NODES) || t.name().equals(RdmaTransport.NATIVE))
            .map(t -> Arguments.of(ContractTransports.named(t)));
    }

    @AfterEach
    void clearProperty() {
        System.clearProperty(DIRECT_WAIT_PROP);
    }

    @ParameterizedTest
    @MethodSource("transports")
    void shouldWakeAPlatformThreadsSelectionFromThePeersWriteWithoutArmingTheRelay(final ContractTransport transport)
        throws Exception {
        try (Connected connected = new Connected(transport)) {
            try (Selector selector = transport.openSelector()) {
                final SelectionKey key = connected.client.register(selector, OP_READ);
                final ConnectionStatistics before = connected.statistics();
                selectWokenByPeer(selector, key, connected, IoMode.BLOCKING);
                final ConnectionStatistics after = connected.statistics();
                assertTrue(after.directWaits() > before.directWaits(), after::toString);
                assertEquals(before.readinessArms(), after.readinessArms(), "no relay arming: " + after);
            }

            System.setProperty(DIRECT_WAIT_PROP, "false");
            try (Selector relayed = transport.openSelector()) {
                final SelectionKey key = connected.client.register(relayed, OP_READ);
                final ConnectionStatistics before = connected.statistics();
                selectWokenByPeer(relayed, key, connected, IoMode.BLOCKING);
                final ConnectionStatistics after = connected.statistics();
                assertEquals(before.directWaits(), after.directWaits(), "turned off: " + after);
                assertTrue(after.readinessArms() > before.readinessArms(), after::toString);
            }
        }
    }

    /**
     * Direct waits leave the keys unarmed between selections; once a platform channel is registered the selection
     * waits in the platform selector, where only armed keys report: the selection must arm them first.
     */
    @ParameterizedTest
    @MethodSource("transports")
    void shouldStillSeeTheRdmaKeyOnceAPlatformChannelMakesTheSelectionWaitInThePlatformSelector(
        final ContractTransport transport) throws Exception {
        try (Connected connected = new Connected(transport); Selector selector = transport.openSelector()) {
            final SelectionKey key = registerAfterDirectWaits(selector, connected);
            final Pipe pipe = Pipe.open();
            try (Pipe.SourceChannel source = pipe.source(); Pipe.SinkChannel sink = pipe.sink()) {
                source.configureBlocking(false);
                source.register(selector, OP_READ);
                assertEquals(0, selector.select(20), "now in the platform selector");
                selectWokenByPeer(selector, key, connected, IoMode.BLOCKING);
                sink.write(ByteBuffer.wrap(new byte[] {1}));
                assertEquals(1, selector.select(5_000), "the platform channel is seen too");
            }
        }
    }

    @ParameterizedTest
    @MethodSource("transports")
    void shouldStillSeeTheRdmaKeyWhenAVirtualThreadSelectsAfterDirectWaits(final ContractTransport transport)
        throws Exception {
        try (Connected connected = new Connected(transport); Selector selector = transport.openSelector()) {
            final SelectionKey key = registerAfterDirectWaits(selector, connected);
            selectWokenByPeer(selector, key, connected, IoMode.VIRTUAL_THREADS);
            selectWokenByPeer(selector, key, connected, IoMode.BLOCKING);
        }
    }

    @ParameterizedTest
    @MethodSource("transports")
    void shouldEndADirectWaitOnWakeupAndOnClose(final ContractTransport transport)
        throws Exception {
        try (Connected connected = new Connected(transport)) {
            final Selector selector = transport.openSelector();
            connected.client.register(selector, OP_READ);
            Forked<Integer> selecting = IoMode.BLOCKING.fork("selector", selector::select);
            Await.awaitBlockedIn(selecting.thread(), selector, "select");
            selector.wakeup();
            assertEquals(0, selecting.join(Await.DEFAULT_TIMEOUT));

            selecting = IoMode.BLOCKING.fork("selector", selector::select);
            Await.awaitBlockedIn(selecting.thread(), selector, "select");
            selector.close();
            assertEquals(0, selecting.join(Await.DEFAULT_TIMEOUT));
        }
    }

    /**
     * Register the client for reading and leave it as direct waits leave a key, unarmed: a first message uses up
     * whatever arming the connection had from before its registration, then a direct wait times out.
     */
    private static SelectionKey registerAfterDirectWaits(final Selector selector, final Connected connected)
        throws Exception {
        final SelectionKey key = connected.client.register(selector, OP_READ);
        selectWokenByPeer(selector, key, connected, IoMode.BLOCKING);
        assertEquals(0, selector.select(20), "a direct wait that times out");
        return key;
    }

    /**
     * Select on a thread of {@code mode} until the peer writes one byte, which the client then reads.
     */
    private static void selectWokenByPeer(final Selector selector, final SelectionKey key, final Connected connected,
        final IoMode mode) throws Exception {
        selector.selectedKeys().clear();
        final Forked<Integer> selecting = mode.fork("selector", selector::select);
        Await.awaitBlockedIn(selecting.thread(), selector, "select");
        connected.server.write(ByteBuffer.wrap(new byte[] {42}));
        assertEquals(1, selecting.join(Await.DEFAULT_TIMEOUT));
        assertSame(key, selector.selectedKeys().iterator().next());
        final ByteBuffer read = ByteBuffer.allocate(2);
        assertEquals(1, connected.client.read(read));
        assertEquals(42, read.get(0));
    }

    /** A non-blocking client connected to a server channel (on shm, each on its own node). */
    private static final class Connected implements AutoCloseable {
        final ServerSocketChannel listener;
        final RdmaSocketChannel client;
        final SocketChannel server;

        Connected(final ContractTransport transport) throws Exception {
            listener = transport.openServerSocketChannel();
            listener.bind(transport.bindAddress());
            client = (RdmaSocketChannel) transport.openSocketChannel();
            client.connect(listener.getLocalAddress());
            server = listener.accept();
            client.configureBlocking(false);
            // no busy poll: a selection that finds nothing ready arms and waits at once, so nothing but the arming
            // under test (not a spin's last look) prepares the key for the wait
            client.setOption(RdmaSocketOptions.RDMA_BUSY_POLL, 0);
        }

        ConnectionStatistics statistics() {
            return client.statistics().orElseThrow();
        }

        @Override
        public void close() throws IOException {
            server.close();
            client.close();
            listener.close();
        }
    }
}

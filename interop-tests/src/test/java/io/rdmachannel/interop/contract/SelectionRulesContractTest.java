package io.rdmachannel.interop.contract;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.IllegalSelectorException;
import java.nio.channels.SelectableChannel;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import io.rdmachannel.nio.RdmaSelectorProvider;
import org.junit.jupiter.api.Timeout;

/**
 * Selector rules beyond single-threaded selection: channels of another provider, re-entrant selection, changing
 * interest and registering while another thread is blocked in select, and the connectable state after
 * finishConnect.
 */
@ContractTest
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class SelectionRulesContractTest {

    /**
     * How long interestOps or register may take while another thread selects: "must not block" with room for a
     * slow machine.
     */
    private static final Duration NOT_BLOCKING = Duration.ofSeconds(2);
    private static final long SHORT_SELECT_MILLIS = 100;

    /**
     * The JDK's selectors take only the JDK's channels; an RDMA selector takes the platform's channels (here the
     * JDK's TCP channels) next to its own, and reports readiness of both kinds in one selection.
     */
    @AcrossTransports
    void shouldMixPlatformChannelsOnlyOnRdmaSelectors(final ContractTransport transport,
        final ConnectionState state) throws Exception {
        final ContractTransport foreign = ContractTransports.foreignTo(transport);
        final boolean rdmaUnderTest = transport.provider() instanceof RdmaSelectorProvider;
        final ContractTransport rdma = rdmaUnderTest ? transport : foreign;
        final ContractTransport platform = rdmaUnderTest ? foreign : transport;
        state.put("rdma", rdma);
        state.put("platform", platform);
        final Selector rdmaSelector = state.closeAtEnd(rdma.openSelector());
        final Selector platformSelector = state.closeAtEnd(platform.openSelector());
        final SocketChannel rdmaChannel = state.closeAtEnd(rdma.openSocketChannel());
        final SocketChannel platformChannel = state.closeAtEnd(platform.openSocketChannel());
        final ServerSocketChannel rdmaListener = state.closeAtEnd(rdma.openServerSocketChannel());
        final ServerSocketChannel platformListener = state.closeAtEnd(platform.openServerSocketChannel());
        for (final SelectableChannel channel : List.of(rdmaChannel, platformChannel,
            rdmaListener, platformListener)) {
            channel.configureBlocking(false);
        }

        assertThrows(IllegalSelectorException.class, () -> rdmaChannel.register(platformSelector,
            SelectionKey.OP_READ), "a channel of " + rdma + " on a selector of " + platform);
        assertThrows(IllegalSelectorException.class, () -> rdmaListener.register(platformSelector,
            SelectionKey.OP_ACCEPT));
        assertFalse(rdmaChannel.isRegistered(), "the refused channel is not registered");
        assertTrue(platformSelector.keys().isEmpty(), "no key was added");

        state.step("register both kinds with the RDMA selector");
        rdmaListener.bind(rdma.bindAddress());
        platformListener.bind(platform.bindAddress());
        final SelectionKey rdmaAccept = rdmaListener.register(rdmaSelector, SelectionKey.OP_ACCEPT);
        final SelectionKey platformAccept = platformListener.register(rdmaSelector, SelectionKey.OP_ACCEPT);
        final SelectionKey rdmaConnect = rdmaChannel.register(rdmaSelector, SelectionKey.OP_CONNECT);
        final SelectionKey platformConnect = platformChannel.register(rdmaSelector, SelectionKey.OP_CONNECT);
        assertEquals(4, rdmaSelector.keys().size());
        assertTrue(platformConnect.selector() == rdmaSelector && platformChannel.keyFor(rdmaSelector)
            == platformConnect, "the platform channel's key is the RDMA selector's");

        state.step("connect both and select until every key was ready");
        // a non-blocking connect may complete at once; then its channel never reports OP_CONNECT (as the JDK's)
        final Set<SelectionKey> expected = new HashSet<>(Set.of(rdmaAccept, platformAccept));
        if (!rdmaChannel.connect(rdmaListener.getLocalAddress())) {
            expected.add(rdmaConnect);
        }
        if (!platformChannel.connect(platformListener.getLocalAddress())) {
            expected.add(platformConnect);
        }
        final Set<SelectionKey> seen = new HashSet<>();
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (!seen.containsAll(expected) && System.nanoTime() - deadline < 0) {
            rdmaSelector.select(key -> seen.add(key), 1000);
        }
        assertEquals(expected, seen);
        assertTrue(rdmaChannel.finishConnect() && platformChannel.finishConnect());
    }

    @AcrossTransports
    void shouldRefuseSelectFromInsideTheSelectAction(final ContractTransport transport, final ConnectionState state)
        throws Exception {
        final ConnectedPair pair = ConnectedPair.open(transport, state);
        final Selector selector = state.closeAtEnd(transport.openSelector());
        pair.server().configureBlocking(false);
        pair.server().register(selector, SelectionKey.OP_READ);
        pair.client().write(ByteBuffer.wrap(new byte[] {1}));
        state.step("select with an action that selects");
        final IllegalStateException selectNow = assertThrows(IllegalStateException.class,
            () -> selector.select(key -> selectUnchecked(selector, 0), 10_000));
        state.put("reentrant.selectNow", selectNow);
        assertThrows(IllegalStateException.class, () -> selector.select(key -> selectUnchecked(selector, 10), 10_000));
        assertThrows(IllegalStateException.class, () -> selector.selectNow(key -> selectUnchecked(selector, -1)));
        assertTrue(selector.isOpen(), "the selector stays usable");
        assertEquals(1, selector.select(10_000), "the data is still there");
    }

    @AcrossTransports
    void shouldChangeInterestWithoutBlockingWhileAnotherThreadSelects(final ContractTransport transport,
        final ConnectionState state) throws Exception {
        final ConnectedPair pair = ConnectedPair.open(transport, state);
        final Selector selector = state.closeAtEnd(transport.openSelector());
        final SocketChannel server = pair.server();
        server.configureBlocking(false);
        final SelectionKey key = server.register(selector, 0);
        pair.client().write(ByteBuffer.wrap(new byte[] {1}));

        final Forked<Integer> selecting = IoMode.BLOCKING.fork("selecting", selector::select);
        Await.awaitBlockedIn(selecting.thread(), selector, "select");
        state.step("interestOps while the other thread selects");
        IoMode.BLOCKING.fork("interest", () -> key.interestOps(SelectionKey.OP_READ)).join(NOT_BLOCKING);
        assertEquals(SelectionKey.OP_READ, key.interestOps(), "the new interest set is visible at once");
        // whether the selection in progress sees the change is up to the implementation: the JDK's does not
        selector.wakeup();
        selecting.join(Duration.ofSeconds(10));
        selector.selectedKeys().clear();

        state.step("the next selection uses the new interest");
        assertEquals(1, selector.select(10_000));
        assertTrue(key.isReadable());
    }

    @AcrossTransports
    void shouldRegisterWithoutBlockingWhileAnotherThreadSelects(final ContractTransport transport,
        final ConnectionState state) throws Exception {
        final ConnectedPair pair = ConnectedPair.open(transport, state);
        final Selector selector = state.closeAtEnd(transport.openSelector());
        final SocketChannel server = pair.server();
        server.configureBlocking(false);
        pair.client().write(ByteBuffer.wrap(new byte[] {1}));

        final Forked<Integer> selecting = IoMode.BLOCKING.fork("selecting", selector::select);
        Await.awaitBlockedIn(selecting.thread(), selector, "select");
        state.step("register while the other thread selects");
        final SelectionKey key = IoMode.BLOCKING.fork("register",
            () -> server.register(selector, SelectionKey.OP_READ)).join(NOT_BLOCKING);
        assertTrue(selector.keys().contains(key), "registered at once");
        selector.wakeup();
        selecting.join(Duration.ofSeconds(10));
        selector.selectedKeys().clear();

        state.step("the next selection sees the new key");
        assertEquals(1, selector.select(10_000));
        assertTrue(key.isReadable());
    }

    @AcrossTransports
    void shouldNotStayConnectableAfterFinishConnect(final ContractTransport transport, final ConnectionState state)
        throws Exception {
        final ServerSocketChannel listener = state.closeAtEnd(transport.openServerSocketChannel());
        listener.bind(transport.bindAddress());
        final Selector selector = state.closeAtEnd(transport.openSelector());
        final SocketChannel client = state.closeAtEnd(transport.openSocketChannel());
        client.configureBlocking(false);
        final SelectionKey key = client.register(selector, SelectionKey.OP_CONNECT);
        state.step("connect");
        if (!client.connect(listener.getLocalAddress())) {
            state.step("await OP_CONNECT");
            assertEquals(1, selector.select(10_000));
            assertTrue(key.isConnectable());
            assertTrue(client.finishConnect());
        }
        selector.selectedKeys().clear();

        state.step("select with OP_CONNECT interest on a connected channel");
        assertEquals(0, selector.select(SHORT_SELECT_MILLIS), "a connected channel is not connectable");
        assertTrue(selector.selectedKeys().isEmpty());
        key.interestOps(SelectionKey.OP_CONNECT | SelectionKey.OP_WRITE);
        assertEquals(1, selector.select(10_000));
        assertEquals(SelectionKey.OP_WRITE, key.readyOps(), "writable, and still not connectable");
    }

    private static void selectUnchecked(final Selector selector, final long timeout) {
        try {
            if (timeout < 0) {
                selector.selectNow();
            } else if (timeout == 0) {
                selector.selectNow(key -> { });
            } else {
                selector.select(timeout);
            }
        } catch (final IOException ex) {
            throw new UncheckedIOException(ex);
        }
    }
}

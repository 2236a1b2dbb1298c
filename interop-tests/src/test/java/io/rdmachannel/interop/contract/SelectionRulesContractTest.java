package io.rdmachannel.interop.contract;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.IllegalSelectorException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

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

    @AcrossTransports
    void shouldRefuseChannelsOfAnotherProvider(final ContractTransport transport, final ConnectionState state)
        throws Exception {
        final ContractTransport foreign = ContractTransports.foreignTo(transport);
        state.put("foreign", foreign);
        final Selector selector = state.closeAtEnd(transport.openSelector());
        final Selector foreignSelector = state.closeAtEnd(foreign.openSelector());
        final SocketChannel channel = state.closeAtEnd(transport.openSocketChannel());
        final SocketChannel foreignChannel = state.closeAtEnd(foreign.openSocketChannel());
        final ServerSocketChannel foreignListener = state.closeAtEnd(foreign.openServerSocketChannel());
        channel.configureBlocking(false);
        foreignChannel.configureBlocking(false);
        foreignListener.configureBlocking(false);

        assertThrows(IllegalSelectorException.class, () -> foreignChannel.register(selector, SelectionKey.OP_READ),
            "a channel of " + foreign + " on a selector of " + transport);
        assertThrows(IllegalSelectorException.class,
            () -> foreignListener.register(selector, SelectionKey.OP_ACCEPT));
        assertThrows(IllegalSelectorException.class, () -> channel.register(foreignSelector, SelectionKey.OP_READ),
            "a channel of " + transport + " on a selector of " + foreign);
        assertFalse(foreignChannel.isRegistered(), "the refused channel is not registered");
        assertFalse(channel.isRegistered());
        assertTrue(selector.keys().isEmpty() && foreignSelector.keys().isEmpty(), "no key was added");

        state.step("both still work with their own provider");
        channel.register(selector, SelectionKey.OP_CONNECT);
        foreignChannel.register(foreignSelector, SelectionKey.OP_CONNECT);
        assertEquals(1, selector.keys().size());
        assertEquals(1, foreignSelector.keys().size());
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

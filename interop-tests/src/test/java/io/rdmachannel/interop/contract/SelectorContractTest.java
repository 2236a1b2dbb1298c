package io.rdmachannel.interop.contract;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.CancelledKeyException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ClosedSelectorException;
import java.nio.channels.IllegalBlockingModeException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Timeout;

/**
 * Selector, SelectionKey and wakeup rules of the checklist.
 */
@ContractTest
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class SelectorContractTest {

    private static final long SHORT_SELECT_MILLIS = 100;

    @AcrossTransports
    void shouldCheckRegistration(final ContractTransport transport, final ConnectionState state) throws Exception {
        final Selector selector = state.closeAtEnd(transport.openSelector());
        final SocketChannel channel = state.closeAtEnd(transport.openSocketChannel());
        final ServerSocketChannel listener = state.closeAtEnd(transport.openServerSocketChannel());
        assertThrows(IllegalBlockingModeException.class, () -> channel.register(selector, SelectionKey.OP_READ));
        channel.configureBlocking(false);
        listener.configureBlocking(false);
        assertThrows(IllegalArgumentException.class, () -> channel.register(selector, SelectionKey.OP_ACCEPT));
        assertThrows(IllegalArgumentException.class, () -> listener.register(selector, SelectionKey.OP_READ));

        final SelectionKey key = channel.register(selector, SelectionKey.OP_CONNECT);
        assertSame(key, channel.register(selector, SelectionKey.OP_READ, "attachment"), "re-register updates the key");
        assertEquals(SelectionKey.OP_READ, key.interestOps());
        assertEquals("attachment", key.attachment());
        assertThrows(IllegalArgumentException.class, () -> key.interestOps(SelectionKey.OP_ACCEPT));
        assertThrows(IllegalBlockingModeException.class, () -> channel.configureBlocking(true));
        assertThrows(UnsupportedOperationException.class, () -> selector.selectedKeys().add(key));
        assertThrows(UnsupportedOperationException.class, () -> selector.keys().add(key));

        key.cancel();
        assertFalse(key.isValid());
        assertThrows(CancelledKeyException.class, key::interestOps);
        assertThrows(CancelledKeyException.class, () -> key.interestOps(SelectionKey.OP_READ));
        assertThrows(CancelledKeyException.class, key::readyOps);
        selector.selectNow();
        assertFalse(channel.isRegistered(), "deregistered by the next selection");
        channel.configureBlocking(true);

        final SocketChannel closed = transport.openSocketChannel();
        closed.configureBlocking(false);
        closed.close();
        assertSame(ClosedChannelException.class, assertThrows(ClosedChannelException.class,
            () -> closed.register(selector, SelectionKey.OP_READ)).getClass());
    }

    @AcrossTransports
    void shouldRejectUseOfClosedSelector(final ContractTransport transport, final ConnectionState state)
        throws Exception {
        final Selector selector = transport.openSelector();
        final SocketChannel channel = state.closeAtEnd(transport.openSocketChannel());
        channel.configureBlocking(false);
        final SelectionKey key = channel.register(selector, SelectionKey.OP_READ);
        selector.close();
        selector.close();
        assertFalse(selector.isOpen());
        assertFalse(key.isValid(), "closing the selector invalidates its keys");
        assertThrows(ClosedSelectorException.class, () -> channel.register(selector, SelectionKey.OP_READ));
        assertThrows(ClosedSelectorException.class, selector::select);
        assertThrows(ClosedSelectorException.class, () -> selector.select(10));
        assertThrows(ClosedSelectorException.class, selector::selectNow);
        assertThrows(ClosedSelectorException.class, () -> selector.select(k -> { }));
        assertThrows(ClosedSelectorException.class, selector::keys);
        assertThrows(ClosedSelectorException.class, selector::selectedKeys);
        assertSame(selector, selector.wakeup(), "wakeup on a closed selector is a no-op");
        assertFalse(channel.isRegistered(), "closing the selector deregisters");
    }

    @AcrossBlockingModes
    void shouldHonourWakeupBeforeAndDuringSelect(final ContractTransport transport, final IoMode mode,
        final ConnectionState state) throws Exception {
        final Selector selector = state.closeAtEnd(transport.openSelector());
        Io.inMode(mode, () -> {
            selector.wakeup();
            selector.wakeup();
            state.step("select after two wakeups");
            assertEquals(0, selector.select(), "wakeup before select makes select return at once");

            selector.wakeup();
            assertEquals(0, selector.selectNow());
            state.step("select after selectNow cleared the wakeup");
            final long start = System.nanoTime();
            assertEquals(0, selector.select(SHORT_SELECT_MILLIS));
            final long elapsedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            assertTrue(elapsedMillis >= SHORT_SELECT_MILLIS / 2, "select waited only " + elapsedMillis + " ms");
            return null;
        });
        final Forked<Integer> selecting = mode.fork("selecting", selector::select);
        Await.awaitBlockedIn(selecting.thread(), selector, "select");
        state.step("wakeup from another thread");
        selector.wakeup();
        assertEquals(0, selecting.join(Duration.ofSeconds(10)));
    }

    @AcrossBlockingModes
    void shouldReturnAtOnceFromSelectOnInterruptedThread(final ContractTransport transport, final IoMode mode,
        final ConnectionState state) throws Exception {
        final Selector selector = state.closeAtEnd(transport.openSelector());
        final Forked<Void> body = mode.fork("interrupted-selector", () -> {
            for (int i = 0; i < 1_000; i++) {
                Thread.currentThread().interrupt();
                selector.select();
                assertTrue(Thread.currentThread().isInterrupted(), "interrupt status kept");
            }
            assertTrue(Thread.interrupted());
            assertTrue(selector.isOpen(), "interrupt does not close the selector");
            return null;
        });
        body.join(Duration.ofSeconds(20));
        final Forked<Integer> selecting = mode.fork("selecting", selector::select);
        Await.awaitBlockedIn(selecting.thread(), selector, "select");
        selecting.thread().interrupt();
        assertEquals(0, selecting.join(Duration.ofSeconds(10)));
        assertTrue(selector.isOpen());
    }

    @AcrossTransports
    void shouldSelectWithAction(final ContractTransport transport, final ConnectionState state) throws Exception {
        final ConnectedPair pair = ConnectedPair.open(transport, state);
        final Selector selector = state.closeAtEnd(transport.openSelector());
        final SocketChannel server = pair.server();
        server.configureBlocking(false);
        final SelectionKey key = server.register(selector, SelectionKey.OP_READ);
        assertThrows(NullPointerException.class, () -> selector.select(null, 10));
        assertThrows(IllegalArgumentException.class, () -> selector.select(k -> { }, -1));
        assertThrows(IllegalArgumentException.class, () -> selector.select(-1));
        assertEquals(0, selector.selectNow(k -> {
            throw new AssertionError("nothing is ready");
        }));

        pair.client().write(ByteBuffer.wrap(new byte[] {1}));
        final List<Integer> seen = new ArrayList<>();
        state.step("select with action");
        final int selected = selector.select(k -> {
            assertSame(key, k);
            seen.add(k.readyOps());
        }, 10_000);
        assertEquals(1, selected);
        assertEquals(List.of(SelectionKey.OP_READ), seen);
        assertTrue(selector.selectedKeys().isEmpty(), "the action variant leaves the selected-key set alone");

        pair.client().shutdownOutput();
        assertThrows(ClosedSelectorException.class, () -> selector.select(k -> {
            try {
                k.selector().close();
            } catch (final IOException ex) {
                throw new UncheckedIOException(ex);
            }
        }, 10_000));
    }

    @AcrossTransports
    void shouldReportReadinessForDataEndOfStreamAndSpace(final ContractTransport transport,
        final ConnectionState state) throws Exception {
        final ConnectedPair pair = ConnectedPair.open(transport, state);
        final Selector selector = state.closeAtEnd(transport.openSelector());
        final SocketChannel server = pair.server();
        server.configureBlocking(false);
        final SelectionKey key = server.register(selector, SelectionKey.OP_READ | SelectionKey.OP_WRITE);
        assertEquals(1, selector.select(10_000));
        assertEquals(SelectionKey.OP_WRITE, key.readyOps(), "an idle connected channel is writable, not readable");
        selector.selectedKeys().clear();

        key.interestOps(SelectionKey.OP_READ);
        pair.client().shutdownOutput();
        assertEquals(1, selector.select(10_000));
        assertTrue(key.isReadable(), "end of stream makes the channel readable");
        assertEquals(-1, server.read(ByteBuffer.allocate(1)));
        assertEquals(0, selector.select(SHORT_SELECT_MILLIS),
            "an already-selected key with no new bits is not counted");
    }
}

package io.rdmachannel.interop.contract;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.SocketException;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Timeout;

/**
 * Closing a connected channel: the deferred close of a channel still registered with a selector, and the reset
 * that SO_LINGER=0 sends instead of end of stream.
 */
@ContractTest
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class CloseContractTest {

    /**
     * How soon the peer of a closed channel must see end of stream or the reset (the JDK's conformance tests allow
     * 10 s before failing; a working implementation needs milliseconds).
     */
    private static final Duration PROMPTLY = Duration.ofSeconds(5);
    private static final String CONNECTION_RESET = "Connection reset";

    @AcrossTransports
    void shouldLetPeerReadEndOfStreamWhenRegisteredChannelIsClosed(final ContractTransport transport,
        final ConnectionState state) throws Exception {
        final ConnectedPair pair = ConnectedPair.open(transport, state);
        final Selector selector = state.closeAtEnd(transport.openSelector());
        final SocketChannel server = pair.server();
        server.configureBlocking(false);
        final SelectionKey key = server.register(selector, SelectionKey.OP_READ);
        state.watch("key.valid", key::isValid);
        final Forked<Integer> peer = IoMode.BLOCKING.fork("peer-reader",
            () -> pair.client().read(ByteBuffer.allocate(16)));
        Await.awaitBlockedIn(peer.thread(), pair.client(), "read");

        state.step("close the registered channel");
        server.close();
        assertFalse(key.isValid(), "closing the channel cancels its key");
        assertTrue(server.isRegistered(), "the key stays in the channel's key set until the selector drops it");
        assertEquals(-1, peer.join(PROMPTLY), "the peer reads end of stream before the selector releases the channel");

        state.step("next selection");
        assertEquals(0, selector.selectNow());
        assertFalse(server.isRegistered(), "deregistered by the next selection");
        assertTrue(selector.keys().isEmpty());
        assertEquals(-1, pair.client().read(ByteBuffer.allocate(16)), "end of stream stays");
    }

    @AcrossModes
    void shouldReportConnectionResetAfterPeerClosesWithZeroLinger(final ContractTransport transport,
        final IoMode mode, final ConnectionState state) throws Exception {
        final ConnectedPair pair = ConnectedPair.open(transport, state);
        final SocketChannel server = pair.server();
        Io.configure(mode, server);
        state.step("client closes with SO_LINGER=0");
        pair.client().setOption(StandardSocketOptions.SO_LINGER, 0);
        pair.client().close();
        Io.inMode(mode, () -> {
            assertReset(server, state);
            return null;
        });
    }

    @AcrossBlockingModes
    void shouldResetReaderBlockedWhenPeerClosesWithZeroLinger(final ContractTransport transport,
        final IoMode mode, final ConnectionState state) throws Exception {
        final ConnectedPair pair = ConnectedPair.open(transport, state);
        final SocketChannel server = pair.server();
        final Forked<Integer> reader = mode.fork("reader", () -> server.read(ByteBuffer.allocate(16)));
        Await.awaitBlockedIn(reader.thread(), server, "read");
        state.step("client closes with SO_LINGER=0");
        pair.client().setOption(StandardSocketOptions.SO_LINGER, 0);
        pair.client().close();
        final Throwable failure = reader.failure(PROMPTLY);
        assertEquals(SocketException.class, failure.getClass(), "blocked reader fails with " + failure);
        assertEquals(CONNECTION_RESET, failure.getMessage());
        assertTrue(server.isOpen(), "a reset does not close the channel");
        assertReset(server, state);
    }

    /**
     * The reset is sticky: every later read throws it again; a write fails too (the JDK: "Broken pipe").
     */
    private static void assertReset(final SocketChannel server, final ConnectionState state) {
        for (int i = 0; i < 2; i++) {
            state.step("read after reset " + i);
            final SocketException reset = assertThrows(SocketException.class,
                () -> Io.read(server, ByteBuffer.allocate(16)));
            assertEquals(CONNECTION_RESET, reset.getMessage());
        }
        assertTrue(server.isOpen(), "a reset does not close the channel");
        state.step("write after reset");
        assertThrows(IOException.class, () -> {
            for (int i = 0; i < 3; i++) {
                Io.writeString(server, "x");
            }
        });
    }
}

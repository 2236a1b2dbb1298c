package io.rdmachannel.interop.contract;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.AlreadyConnectedException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ConnectionPendingException;
import java.nio.channels.NoConnectionPendingException;
import java.nio.channels.SelectionKey;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.channels.UnresolvedAddressException;
import java.nio.channels.UnsupportedAddressTypeException;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Timeout;

/**
 * connect / finishConnect: the state machine, refusal, and the address and state checks in their order.
 */
@ContractTest
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class ConnectContractTest {

    @AcrossModesAndFamilies
    void shouldConnect(final ContractTransport transport, final IoMode mode, final ConnectionState state)
        throws Exception {
        final ServerSocketChannel listener = state.closeAtEnd(transport.openServerSocketChannel());
        listener.bind(transport.bindAddress());
        final SocketAddress remote = listener.getLocalAddress();
        final SocketChannel client = state.closeAtEnd(transport.openSocketChannel());
        Io.configure(mode, client);
        Io.inMode(mode, () -> {
            state.step("connect");
            final boolean connected = client.connect(remote);
            if (mode.blockingChannels()) {
                assertTrue(connected, "blocking connect completes");
            } else if (!connected) {
                assertTrue(client.isConnectionPending(), "pending after connect returned false");
                assertFalse(client.isConnected());
                state.step("await OP_CONNECT");
                assertEquals(SelectionKey.OP_CONNECT, Io.awaitReady(client, SelectionKey.OP_CONNECT));
                state.step("finishConnect");
                assertTrue(client.finishConnect());
            }
            assertFalse(client.isConnectionPending(), "no longer pending");
            assertTrue(client.isConnected());
            assertTrue(client.finishConnect(), "finishConnect on a connected channel is true");
            assertEquals(remote, client.getRemoteAddress(), "remote address equals the address connected to");
            assertNotEquals(null, client.getLocalAddress(), "connect binds the channel");
            return null;
        });
        final SocketChannel accepted = state.closeAtEnd(listener.accept());
        assertEquals(client.getLocalAddress(), accepted.getRemoteAddress(), "accepted side sees the client address");
    }

    @AcrossModesAndFamilies
    void shouldFailConnectToPortWithoutListenerWithConnectException(final ContractTransport transport,
        final IoMode mode, final ConnectionState state) throws Exception {
        final SocketChannel placeholder = state.closeAtEnd(transport.openSocketChannel());
        placeholder.bind(transport.bindAddress());
        final SocketAddress noListener = placeholder.getLocalAddress();
        state.put("noListener", noListener);
        final SocketChannel client = state.closeAtEnd(transport.openSocketChannel());
        Io.configure(mode, client);
        final ConnectException refused = Io.inMode(mode, () -> {
            try {
                state.step("connect");
                if (client.connect(noListener)) {
                    throw new AssertionError("connected to a port without listener");
                }
                assertFalse(mode.blockingChannels(), "blocking connect returned false");
                state.step("await OP_CONNECT");
                assertEquals(SelectionKey.OP_CONNECT, Io.awaitReady(client, SelectionKey.OP_CONNECT),
                    "OP_CONNECT fires on failure too");
                state.step("finishConnect");
                client.finishConnect();
                throw new AssertionError("finishConnect succeeded to a port without listener");
            } catch (final ConnectException expected) {
                return expected;
            }
        });
        assertTrue(refused.getMessage().startsWith("Connection refused"), refused.getMessage());
        assertFalse(client.isOpen(), "a failed connect closes the channel");
        assertSame(ClosedChannelException.class,
            assertThrows(ClosedChannelException.class, () -> client.connect(noListener)).getClass());
    }

    @AcrossTransports
    void shouldRejectFinishConnectWithoutPendingConnect(final ContractTransport transport,
        final ConnectionState state) throws Exception {
        final SocketChannel channel = state.closeAtEnd(transport.openSocketChannel());
        assertThrows(NoConnectionPendingException.class, channel::finishConnect);
        channel.configureBlocking(false);
        assertThrows(NoConnectionPendingException.class, channel::finishConnect);
        channel.close();
        assertSame(ClosedChannelException.class,
            assertThrows(ClosedChannelException.class, channel::finishConnect).getClass());
    }

    @AcrossTransports
    void shouldRejectConnectWhenConnectedOrPending(final ContractTransport transport, final ConnectionState state)
        throws Exception {
        final ConnectedPair pair = ConnectedPair.open(transport, state);
        final SocketAddress remote = pair.listenerAddress();
        assertThrows(AlreadyConnectedException.class, () -> pair.client().connect(remote));
        assertTrue(pair.client().isOpen(), "a rejected connect leaves the channel open");

        final SocketChannel pending = state.closeAtEnd(transport.openSocketChannel());
        pending.configureBlocking(false);
        assumeFalse(pending.connect(remote), "connected at once: no pending state to check");
        assertTrue(pending.isConnectionPending());
        assertThrows(ConnectionPendingException.class, () -> pending.connect(remote));
        assertThrows(ConnectionPendingException.class, () -> pending.bind(transport.bindAddress()));
        Io.awaitReady(pending, SelectionKey.OP_CONNECT);
        assertTrue(pending.finishConnect());
        assertThrows(AlreadyConnectedException.class, () -> pending.connect(remote));
    }

    @AcrossTransports
    void shouldCheckAddressBeforeState(final ContractTransport transport, final ConnectionState state)
        throws Exception {
        final SocketChannel channel = state.closeAtEnd(transport.openSocketChannel());
        final InetSocketAddress unresolved = InetSocketAddress.createUnresolved("host.invalid", 80);
        final SocketAddress unixAddress = UnixDomainSocketAddress.of("contract.sock");
        final SocketAddress foreignAddress = new SocketAddress() {
            private static final long serialVersionUID = 1L;
        };
        assertThrows(NullPointerException.class, () -> channel.connect(null));
        assertThrows(UnresolvedAddressException.class, () -> channel.connect(unresolved));
        assertThrows(UnsupportedAddressTypeException.class, () -> channel.connect(unixAddress));
        assertThrows(UnsupportedAddressTypeException.class, () -> channel.connect(foreignAddress));
        assertThrows(UnresolvedAddressException.class, () -> channel.bind(unresolved));
        assertThrows(UnsupportedAddressTypeException.class, () -> channel.bind(foreignAddress));
        assertTrue(channel.isOpen(), "address errors leave the channel open");

        channel.close();
        assertThrows(UnresolvedAddressException.class, () -> channel.connect(unresolved),
            "the address is checked before the open state");
        assertThrows(UnsupportedAddressTypeException.class, () -> channel.connect(foreignAddress));
        assertSame(ClosedChannelException.class, assertThrows(ClosedChannelException.class,
            () -> channel.connect(transport.bindAddress())).getClass());
    }
}

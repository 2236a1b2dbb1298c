package io.rdmachannel.interop.contract;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.SocketAddress;
import java.nio.channels.AlreadyBoundException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.NotYetBoundException;
import java.nio.channels.SelectionKey;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.channels.UnsupportedAddressTypeException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Timeout;

/**
 * ServerSocketChannel: backlog, accept in each mode, and the bind/accept state checks.
 */
@ContractTest
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class AcceptContractTest {

    private static final int BACKLOG = 8;
    private static final int CLIENTS = 5;

    @AcrossModesAndFamilies
    void shouldAcceptEveryClientThatConnectedBeforeAccept(final ContractTransport transport, final IoMode mode,
        final ConnectionState state) throws Exception {
        final ServerSocketChannel listener = state.closeAtEnd(transport.openServerSocketChannel());
        listener.bind(transport.bindAddress(), BACKLOG);
        final SocketAddress address = listener.getLocalAddress();
        assertNotEquals(0, ContractTransport.portOf(address), "ephemeral port assigned");

        final Set<SocketAddress> clientAddresses = new HashSet<>();
        for (int i = 0; i < CLIENTS; i++) {
            state.step("connect client " + i);
            final SocketChannel client = state.closeAtEnd(transport.openSocketChannel());
            assertTrue(client.connect(address), "connect completes while the listener has not accepted");
            clientAddresses.add(client.getLocalAddress());
        }
        state.put("clients", clientAddresses);

        Io.configure(mode, listener);
        final List<SocketChannel> accepted = Io.inMode(mode, () -> {
            final List<SocketChannel> channels = new ArrayList<>();
            while (channels.size() < CLIENTS) {
                state.step("accept " + channels.size());
                final SocketChannel channel = listener.accept();
                if (channel == null) {
                    assertEquals(SelectionKey.OP_ACCEPT, Io.awaitReady(listener, SelectionKey.OP_ACCEPT));
                } else {
                    channels.add(state.closeAtEnd(channel));
                }
            }
            return channels;
        });
        final Set<SocketAddress> remoteAddresses = new HashSet<>();
        for (final SocketChannel channel : accepted) {
            assertTrue(channel.isConnected(), "accepted channel is connected");
            assertTrue(channel.isBlocking(), "accepted channel is blocking");
            assertSame(transport.provider(), channel.provider(), "accepted channel has the listener's provider");
            assertEquals(address, channel.getLocalAddress(), "accepted channel's local address is the listener's");
            remoteAddresses.add(channel.getRemoteAddress());
        }
        assertEquals(clientAddresses, remoteAddresses, "every client accepted once");

        listener.configureBlocking(false);
        assertNull(listener.accept(), "non-blocking accept with nothing pending returns null");
    }

    @AcrossTransports
    void shouldCheckBindAndAcceptState(final ContractTransport transport, final ConnectionState state)
        throws Exception {
        final ServerSocketChannel listener = state.closeAtEnd(transport.openServerSocketChannel());
        assertNull(listener.getLocalAddress(), "unbound listener has no local address");
        assertThrows(NotYetBoundException.class, listener::accept);
        listener.configureBlocking(false);
        assertThrows(NotYetBoundException.class, listener::accept);
        final SocketAddress foreignAddress = new SocketAddress() {
            private static final long serialVersionUID = 1L;
        };
        assertThrows(UnsupportedAddressTypeException.class, () -> listener.bind(foreignAddress));

        listener.bind(transport.bindAddress(), 0);
        assertThrows(AlreadyBoundException.class, () -> listener.bind(transport.bindAddress()));
        assertNull(listener.accept());

        listener.close();
        assertSame(ClosedChannelException.class, assertThrows(ClosedChannelException.class,
            listener::accept).getClass());
        assertSame(ClosedChannelException.class, assertThrows(ClosedChannelException.class,
            () -> listener.bind(transport.bindAddress())).getClass());
        assertSame(ClosedChannelException.class, assertThrows(ClosedChannelException.class,
            listener::getLocalAddress).getClass());
    }
}

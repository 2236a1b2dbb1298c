package io.rdmachannel.interop.contract;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.net.BindException;
import io.rdmachannel.channel.IbSocketAddress;

import java.net.InetSocketAddress;
import java.net.NoRouteToHostException;
import java.net.SocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Timeout;

/**
 * Addresses: wildcard binds reached through the loopback, ephemeral ports, what getLocalAddress and getRemoteAddress
 * report on both ends, and bind conflicts. Over IPv4 and IPv6.
 */
@ContractTest
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class AddressContractTest {

    @AcrossTransportsAndFamilies
    void shouldAcceptThroughLoopbackOnWildcardListener(final ContractTransport transport,
        final ConnectionState state) throws Exception {
        assumeTrue(transport.addressedByIp(), "wildcards and ports of IP addresses");
        final ServerSocketChannel listener = state.closeAtEnd(transport.openServerSocketChannel());
        listener.bind(new InetSocketAddress(transport.wildcardAddress(), 0));
        final InetSocketAddress bound = (InetSocketAddress) listener.getLocalAddress();
        state.put("listener", bound);
        // a dual-stack JDK listener bound to 0.0.0.0 reports ::, so only "a wildcard" is the contract
        assertTrue(bound.getAddress().isAnyLocalAddress(), "listener reports a wildcard: " + bound);
        assertNotEquals(0, bound.getPort(), "ephemeral port assigned");

        state.step("connect to the loopback");
        final InetSocketAddress viaLoopback = new InetSocketAddress(transport.loopbackAddress(), bound.getPort());
        final SocketChannel client = state.closeAtEnd(transport.openSocketChannel());
        assertTrue(client.connect(viaLoopback));
        assertEquals(viaLoopback, client.getRemoteAddress(), "remote address is the address connected to");
        final SocketChannel accepted = state.closeAtEnd(listener.accept());
        assertEquals(viaLoopback, accepted.getLocalAddress(), "accepted side is local to the address connected to");
        assertEquals(client.getLocalAddress(), accepted.getRemoteAddress());

        state.step("connect to the wildcard");
        final SocketChannel toWildcard = state.closeAtEnd(transport.openSocketChannel());
        if (!transport.connectsWildcardViaLoopback()) {
            // a real RDMA device does not serve the loopback: refused at route resolution, the channel closed
            assertThrows(NoRouteToHostException.class,
                () -> toWildcard.connect(new InetSocketAddress(transport.wildcardAddress(), bound.getPort())));
            assertFalse(toWildcard.isOpen());
            return;
        }
        assertTrue(toWildcard.connect(new InetSocketAddress(transport.wildcardAddress(), bound.getPort())));
        assertEquals(viaLoopback, toWildcard.getRemoteAddress(), "a wildcard target means the loopback");
        final SocketChannel second = state.closeAtEnd(listener.accept());
        assertEquals(toWildcard.getLocalAddress(), second.getRemoteAddress());
        Io.writeString(toWildcard, "hello");
        assertEquals("hello", Io.readString(second, 5));
    }

    @AcrossTransportsAndFamilies
    void shouldAssignEphemeralPorts(final ContractTransport transport, final ConnectionState state)
        throws Exception {
        assumeTrue(transport.addressedByIp(), "wildcards and ports of IP addresses");
        final ServerSocketChannel anyListener = state.closeAtEnd(transport.openServerSocketChannel());
        anyListener.bind(null);
        final InetSocketAddress anyBound = (InetSocketAddress) anyListener.getLocalAddress();
        state.put("anyListener", anyBound);
        assertTrue(anyBound.getAddress().isAnyLocalAddress(), "bind(null) binds the wildcard: " + anyBound);
        assertNotEquals(0, anyBound.getPort(), "bind(null) assigns a port");

        final ServerSocketChannel listener = state.closeAtEnd(transport.openServerSocketChannel());
        listener.bind(transport.bindAddress());
        final InetSocketAddress bound = (InetSocketAddress) listener.getLocalAddress();
        assertEquals(transport.loopbackAddress(), bound.getAddress());
        assertNotEquals(0, bound.getPort(), "port 0 assigns a port");
        assertNotEquals(anyBound.getPort(), bound.getPort(), "two listeners, two ports");

        state.step("client bind(null)");
        final SocketChannel anyClient = state.closeAtEnd(transport.openSocketChannel());
        anyClient.bind(null);
        final InetSocketAddress anyClientBound = (InetSocketAddress) anyClient.getLocalAddress();
        assertTrue(anyClientBound.getAddress().isAnyLocalAddress(), "bind(null) binds the wildcard");
        assertClientPort(transport, anyClientBound);

        state.step("client bind to port 0 then connect");
        final SocketChannel client = state.closeAtEnd(transport.openSocketChannel());
        client.bind(transport.bindAddress());
        final InetSocketAddress clientBound = (InetSocketAddress) client.getLocalAddress();
        state.put("clientBound", clientBound);
        assertEquals(transport.loopbackAddress(), clientBound.getAddress());
        assertClientPort(transport, clientBound);
        client.connect(bound);
        final InetSocketAddress clientLocal = (InetSocketAddress) client.getLocalAddress();
        assertNotEquals(0, clientLocal.getPort(), "a connected channel has its port");
        assertEquals(clientBound.getAddress(), clientLocal.getAddress(), "connect keeps the bound address");
        if (transport.assignsClientPortAtBind()) {
            assertEquals(clientBound.getPort(), clientLocal.getPort(), "connect keeps the bound port");
        }
        final SocketChannel accepted = state.closeAtEnd(listener.accept());
        assertEquals(clientLocal, accepted.getRemoteAddress(), "the peer sees the client's address and port");
    }

    /**
     * A client bound to port 0 has its port at once (TCP), or port 0 until it connects (see
     * {@link ContractTransport#assignsClientPortAtBind()}).
     */
    private static void assertClientPort(final ContractTransport transport, final InetSocketAddress bound) {
        if (transport.assignsClientPortAtBind()) {
            assertNotEquals(0, bound.getPort(), "client bind to port 0 assigns a port");
        } else {
            assertEquals(0, bound.getPort(), "the port is assigned at connect");
        }
    }

    @AcrossTransportsAndFamilies
    void shouldReportBothEndsOfAConnection(final ContractTransport transport, final ConnectionState state)
        throws Exception {
        final ConnectedPair pair = ConnectedPair.open(transport, state);
        final SocketAddress listenerAddress = pair.listenerAddress();
        final SocketAddress clientLocal = pair.client().getLocalAddress();
        assertEquals(listenerAddress, pair.client().getRemoteAddress(), "client's remote is what it connected to");
        assertEquals(clientLocal, pair.server().getRemoteAddress(), "accepted remote is the client's local");
        assertEquals(listenerAddress, pair.server().getLocalAddress(), "accepted local is the listener's");
        assertEquals(pair.client().getRemoteAddress(), pair.client().socket().getRemoteSocketAddress());
        assertEquals(clientLocal, pair.client().socket().getLocalSocketAddress());
        if (clientLocal instanceof IbSocketAddress byGid) {
            // a transport addressed by GID: the client is at the GID it connected from, with a port of its own
            assertArrayEquals(((IbSocketAddress) transport.bindAddress()).gid(), byGid.gid(),
                "client is local to the GID");
            assertNotEquals(0, byGid.port());
        } else {
            final InetSocketAddress listenerInet = (InetSocketAddress) listenerAddress;
            final InetSocketAddress clientInet = (InetSocketAddress) clientLocal;
            assertEquals(transport.loopbackAddress(), clientInet.getAddress(), "client is local to the loopback");
            assertNotEquals(0, clientInet.getPort());
            assertEquals(listenerInet.getPort(), pair.client().socket().getPort());
            assertEquals(clientInet.getPort(), pair.client().socket().getLocalPort());
            assertEquals(listenerInet.getAddress(), pair.client().socket().getInetAddress());
        }

        state.step("addresses survive shutdown");
        pair.client().shutdownOutput();
        assertEquals(-1, pair.server().read(ByteBuffer.allocate(1)));
        assertEquals(clientLocal, pair.server().getRemoteAddress(), "shutdown keeps the addresses");
        assertEquals(listenerAddress, pair.client().getRemoteAddress());
    }

    @AcrossTransportsAndFamilies
    void shouldFailSecondListenerOnSameAddressWithBindException(final ContractTransport transport,
        final ConnectionState state) throws Exception {
        assumeTrue(transport.addressedByIp(), "wildcards and ports of IP addresses");
        final ServerSocketChannel first = state.closeAtEnd(transport.openServerSocketChannel());
        first.bind(transport.bindAddress());
        final InetSocketAddress taken = (InetSocketAddress) first.getLocalAddress();
        state.put("taken", taken);
        final ServerSocketChannel second = state.closeAtEnd(transport.openServerSocketChannel());
        final BindException conflict = assertThrows(BindException.class, () -> second.bind(taken));
        assertInstanceOf(String.class, conflict.getMessage(), "BindException has a message");
        assertTrue(conflict.getMessage().startsWith("Address already in use"), conflict.getMessage());
        assertTrue(second.isOpen(), "a failed bind leaves the channel open");
        assertEquals(null, second.getLocalAddress(), "and unbound");

        state.step("wildcard on the same port");
        final ServerSocketChannel wildcard = state.closeAtEnd(transport.openServerSocketChannel());
        assertThrows(BindException.class,
            () -> wildcard.bind(new InetSocketAddress(transport.wildcardAddress(), taken.getPort())));

        state.step("the port is free again after close");
        first.close();
        second.bind(taken);
        assertEquals(taken, second.getLocalAddress());

        state.step("specific address on the port of a wildcard listener");
        final ServerSocketChannel anyListener = state.closeAtEnd(transport.openServerSocketChannel());
        anyListener.bind(new InetSocketAddress(transport.wildcardAddress(), 0));
        final int anyPort = ((InetSocketAddress) anyListener.getLocalAddress()).getPort();
        final ServerSocketChannel specific = state.closeAtEnd(transport.openServerSocketChannel());
        assertThrows(BindException.class,
            () -> specific.bind(new InetSocketAddress(transport.loopbackAddress(), anyPort)));
    }
}

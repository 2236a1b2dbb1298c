package io.rdmachannel.interop.contract;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.rdmachannel.nio.RdmaConnectionFilter;
import io.rdmachannel.nio.RdmaConnectionRequest;
import io.rdmachannel.nio.RdmaSelectorProvider;
import io.rdmachannel.nio.RdmaSocketOptions;

import java.net.ConnectException;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Timeout;

/**
 * A server's host policy ({@link RdmaSocketOptions#RDMA_CONNECTION_FILTER}): what the filter is shown of a request,
 * a request it lets through, one it refuses and the reason the client reads, a filter set after bind, and one that
 * throws. The JDK's channels have no such option: the RDMA transports only (shm, shm across nodes, where the
 * rejection crosses the handshake socket, and native over rdma_cm in the guest, where it crosses the REJ).
 */
@ContractTest
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class ConnectionFilterContractTest {
    /** The first byte of the rsockets connection data: its protocol version. */
    private static final int RSOCKETS_VERSION = 1;

    @AcrossTransports
    void shouldShowTheRequestAndAcceptWhatItLetsThrough(final ContractTransport transport,
        final ConnectionState state) throws Exception {
        final ServerSocketChannel listener = listener(transport, state);
        final List<RdmaConnectionRequest> seen = new CopyOnWriteArrayList<>();
        final List<Integer> versions = new CopyOnWriteArrayList<>();
        listener.setOption(RdmaSocketOptions.RDMA_CONNECTION_FILTER, request -> {
            seen.add(request);
            // read during the call: the private data is not the filter's to keep
            versions.add(request.privateData().isReadOnly() ? Byte.toUnsignedInt(request.privateData().get(0)) : -1);
            return null;
        });
        listener.bind(transport.bindAddress());

        final SocketChannel client = state.closeAtEnd(transport.openSocketChannel());
        assertTrue(client.connect(listener.getLocalAddress()));
        final SocketChannel accepted = state.closeAtEnd(listener.accept());
        Io.writeString(client, "let in");
        assertEquals("let in", Io.readString(accepted, 6));

        assertEquals(1, seen.size(), seen::toString);
        final RdmaConnectionRequest request = seen.getFirst();
        assertEquals(accepted.getRemoteAddress(), request.remoteAddress(), request::toString);
        assertEquals(accepted.getLocalAddress(), request.localAddress(), request::toString);
        assertFalse(request.device().isBlank(), request::toString);
        assertEquals(List.of(RSOCKETS_VERSION), versions, "the read-only connection data, version first");
    }

    @AcrossTransports
    void shouldRefuseWithTheFiltersReason(final ContractTransport transport, final ConnectionState state)
        throws Exception {
        final ServerSocketChannel listener = listener(transport, state);
        listener.setOption(RdmaSocketOptions.RDMA_CONNECTION_FILTER,
            request -> "not from " + request.device() + ", d\u00e9j\u00e0 vu\n");
        listener.bind(transport.bindAddress());
        listener.configureBlocking(false);

        final SocketChannel client = state.closeAtEnd(transport.openSocketChannel());
        final ConnectException refused = assertThrows(ConnectException.class,
            () -> client.connect(listener.getLocalAddress()));
        // the reason as the filter gave it, from the listener's process, its control character left out
        assertTrue(refused.getMessage().matches("Connection refused by policy: not from \\S+, d\u00e9j\u00e0 vu"),
            refused::getMessage);
        assertFalse(client.isOpen(), "a failed connect closes the channel");
        assertNull(listener.accept(), "nothing to accept");
    }

    @AcrossTransports
    void shouldApplyAFilterSetAfterBindAndRemoved(final ContractTransport transport, final ConnectionState state)
        throws Exception {
        final ServerSocketChannel listener = listener(transport, state);
        listener.bind(transport.bindAddress());
        final RdmaConnectionFilter closed = request -> "closed for maintenance";
        listener.setOption(RdmaSocketOptions.RDMA_CONNECTION_FILTER, closed);
        assertEquals(closed, listener.getOption(RdmaSocketOptions.RDMA_CONNECTION_FILTER));

        final SocketChannel refusedClient = state.closeAtEnd(transport.openSocketChannel());
        assertEquals("Connection refused by policy: closed for maintenance", assertThrows(ConnectException.class,
            () -> refusedClient.connect(listener.getLocalAddress())).getMessage());

        listener.setOption(RdmaSocketOptions.RDMA_CONNECTION_FILTER, null);
        assertNull(listener.getOption(RdmaSocketOptions.RDMA_CONNECTION_FILTER));
        final SocketChannel client = state.closeAtEnd(transport.openSocketChannel());
        assertTrue(client.connect(listener.getLocalAddress()));
        final SocketChannel accepted = state.closeAtEnd(listener.accept());
        Io.writeString(accepted, "open");
        assertEquals("open", Io.readString(client, 4));
    }

    @AcrossTransports
    void shouldRefuseWhenTheFilterThrows(final ContractTransport transport, final ConnectionState state)
        throws Exception {
        final ServerSocketChannel listener = listener(transport, state);
        listener.setOption(RdmaSocketOptions.RDMA_CONNECTION_FILTER, request -> {
            throw new IllegalStateException("a broken filter");
        });
        listener.bind(transport.bindAddress());

        final SocketChannel client = state.closeAtEnd(transport.openSocketChannel());
        assertEquals("Connection refused by policy: the listener's filter failed",
            assertThrows(ConnectException.class, () -> client.connect(listener.getLocalAddress())).getMessage());

        // the listener serves on
        listener.setOption(RdmaSocketOptions.RDMA_CONNECTION_FILTER, request -> null);
        final SocketChannel next = state.closeAtEnd(transport.openSocketChannel());
        assertTrue(next.connect(listener.getLocalAddress()));
        state.closeAtEnd(listener.accept());
    }

    private static ServerSocketChannel listener(final ContractTransport transport, final ConnectionState state)
        throws Exception {
        assumeTrue(transport.provider() instanceof RdmaSelectorProvider,
            "the JDK's channels have no connection filter");
        final ServerSocketChannel listener = state.closeAtEnd(transport.openServerSocketChannel());
        assumeTrue(listener.supportedOptions().contains(RdmaSocketOptions.RDMA_CONNECTION_FILTER),
            "a listener of " + transport.name() + " has no connection filter");
        return listener;
    }
}

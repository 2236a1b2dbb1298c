package io.rdmachannel.interop.policy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmachannel.channel.spi.RdmaProviders;
import io.rdmachannel.channel.stream.HostPolicy;
import io.rdmachannel.channel.stream.StreamTransport;
import io.rdmachannel.channel.stream.StreamTransports;
import io.rdmachannel.nio.RdmaSelectorProvider;
import io.rdmachannel.nio.RdmaSocketOptions;

import java.io.IOException;
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The JVM's allow and deny lists ({@link HostPolicy}: {@code rdmachannel.policy.allow} and
 * {@code rdmachannel.policy.deny}) on real shm channels, the server on a node of its own so that every request
 * crosses the handshake socket as one from another process does: a request denied by prefix and by port, one let in
 * by the allow list, one left out of it, the reason each refused client reads, and the listener's own filter asked
 * only after the lists.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class HostPolicyTest {
    private static final InetAddress LOOPBACK = InetAddress.getLoopbackAddress();

    private StreamTransport serverTransport;
    private StreamTransport clientTransport;

    /** Open the server's node with these lists, and a client node without any. */
    private RdmaSelectorProvider[] nodes(final String allow, final String deny) {
        final String previousAllow = set(HostPolicy.ALLOW_PROP_NAME, allow);
        final String previousDeny = set(HostPolicy.DENY_PROP_NAME, deny);
        try {
            serverTransport = StreamTransports.open(RdmaProviders.byName("shm"));
        } finally {
            set(HostPolicy.ALLOW_PROP_NAME, previousAllow);
            set(HostPolicy.DENY_PROP_NAME, previousDeny);
        }
        clientTransport = StreamTransports.open(RdmaProviders.byName("shm"));
        return new RdmaSelectorProvider[] {new RdmaSelectorProvider(serverTransport),
            new RdmaSelectorProvider(clientTransport)};
    }

    private static String set(final String name, final String value) {
        return value == null ? System.clearProperty(name) : System.setProperty(name, value);
    }

    @AfterEach
    void close() {
        if (clientTransport != null) {
            StreamTransports.close(clientTransport);
        }
        if (serverTransport != null) {
            StreamTransports.close(serverTransport);
        }
    }

    @Test
    void shouldRefuseARequesterTheDenyListNames() throws Exception {
        final RdmaSelectorProvider[] nodes = nodes(null, "127.0.0.0/8");
        try (ServerSocketChannel listener = nodes[0].openServerSocketChannel();
            SocketChannel client = nodes[1].openSocketChannel()) {
            listener.bind(new InetSocketAddress(LOOPBACK, 0));
            listener.configureBlocking(false);
            final ConnectException refused = assertThrows(ConnectException.class,
                () -> client.connect(listener.getLocalAddress()));
            assertEquals("Connection refused by policy: rdmachannel.policy.deny 127.0.0.0/8", refused.getMessage());
            assertNull(listener.accept());
        }
    }

    @Test
    void shouldRefuseByLocalPortOnly() throws Exception {
        final int port = freePort();
        final RdmaSelectorProvider[] nodes = nodes(null, "*@" + port);
        try (ServerSocketChannel denied = nodes[0].openServerSocketChannel();
            ServerSocketChannel open = nodes[0].openServerSocketChannel()) {
            denied.bind(new InetSocketAddress(LOOPBACK, port));
            open.bind(new InetSocketAddress(LOOPBACK, 0));
            try (SocketChannel client = nodes[1].openSocketChannel()) {
                assertEquals("Connection refused by policy: rdmachannel.policy.deny *@" + port,
                    assertThrows(ConnectException.class, () -> client.connect(denied.getLocalAddress())).getMessage());
            }
            try (SocketChannel client = nodes[1].openSocketChannel();
                SocketChannel accepted = connect(client, open)) {
                echoOneByte(client, accepted);
            }
        }
    }

    @Test
    void shouldLetInOnlyWhatTheAllowListNamesAndAskTheFilterAfter() throws Exception {
        final int port = freePort();
        final RdmaSelectorProvider[] nodes = nodes("10.0.0.0/8,*@" + port, null);
        try (ServerSocketChannel allowed = nodes[0].openServerSocketChannel();
            ServerSocketChannel other = nodes[0].openServerSocketChannel()) {
            allowed.bind(new InetSocketAddress(LOOPBACK, port));
            other.bind(new InetSocketAddress(LOOPBACK, 0));
            final int[] asked = new int[1];
            other.setOption(RdmaSocketOptions.RDMA_CONNECTION_FILTER, request -> {
                asked[0]++;
                return null;
            });
            try (SocketChannel client = nodes[1].openSocketChannel()) {
                assertEquals("Connection refused by policy: not in rdmachannel.policy.allow",
                    assertThrows(ConnectException.class, () -> client.connect(other.getLocalAddress())).getMessage());
            }
            assertEquals(0, asked[0], "the lists refused it: the listener's filter was not asked");
            try (SocketChannel client = nodes[1].openSocketChannel();
                SocketChannel accepted = connect(client, allowed)) {
                echoOneByte(client, accepted);
            }
        }
    }

    @Test
    void shouldNameABadListWhenTheTransportOpens() {
        final IllegalArgumentException bad = assertThrows(IllegalArgumentException.class,
            () -> nodes(null, "10.0.0.0/33"));
        assertTrue(bad.getMessage().startsWith("rdmachannel.policy.deny: entry '10.0.0.0/33'"), bad::getMessage);
    }

    private static SocketChannel connect(final SocketChannel client, final ServerSocketChannel listener)
        throws IOException {
        assertTrue(client.connect(listener.getLocalAddress()));
        return listener.accept();
    }

    private static void echoOneByte(final SocketChannel client, final SocketChannel accepted) throws IOException {
        client.write(ByteBuffer.wrap(new byte[] {42}));
        final ByteBuffer in = ByteBuffer.allocate(1);
        while (in.hasRemaining()) {
            assertTrue(accepted.read(in) >= 0);
        }
        assertEquals(42, in.get(0));
    }

    /** A port nothing listens on right now (the shm listener takes it next). */
    private static int freePort() throws IOException {
        try (ServerSocket probe = new ServerSocket(0, 1, LOOPBACK)) {
            return probe.getLocalPort();
        }
    }
}

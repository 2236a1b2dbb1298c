package io.rdmachannel.nio;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.net.UnknownHostException;
import java.nio.channels.IllegalBlockingModeException;
import java.nio.channels.SocketChannel;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(10)
class SocketAdaptorTest {
    private final ChannelFixture fixture = new ChannelFixture(4096);

    @AfterEach
    void close() throws IOException {
        fixture.close();
    }

    @Test
    void shouldStreamThroughTheAdaptorAndReturnTheChannel() throws IOException {
        final SocketChannel[] pair = fixture.pair();
        final Socket client = pair[0].socket();
        final Socket server = pair[1].socket();

        assertSame(client, pair[0].socket());
        assertSame(pair[0], client.getChannel());
        client.getOutputStream().write(new byte[] {1, 2, 3});
        final byte[] received = new byte[3];
        assertEquals(3, server.getInputStream().readNBytes(received, 0, 3));
        assertArrayEquals(new byte[] {1, 2, 3}, received);
        assertTrue(client.isConnected());
        assertTrue(client.isBound());
        assertEquals(fixture.serverAddress(), client.getRemoteSocketAddress());
        assertEquals(fixture.serverAddress().getPort(), client.getPort());
        assertEquals(InetAddress.getLoopbackAddress(), client.getInetAddress());
        assertEquals(pair[0].getLocalAddress(), client.getLocalSocketAddress());
        client.shutdownOutput();
        assertTrue(client.isOutputShutdown());
        assertEquals(-1, server.getInputStream().read());
        assertEquals("Socket output is shutdown",
            assertThrows(SocketException.class, client::getOutputStream).getMessage());
        client.close();
        assertTrue(client.isClosed());
        assertFalse(pair[0].isOpen());
    }

    @Test
    void shouldTimeOutAStreamReadButNotCloseTheSocket() throws IOException {
        final Socket socket = fixture.pair()[1].socket();
        socket.setSoTimeout(50);

        assertEquals("Read timed out",
            assertThrows(SocketTimeoutException.class, () -> socket.getInputStream().read()).getMessage());
        assertFalse(socket.isClosed());
        assertEquals(50, socket.getSoTimeout());
    }

    @Test
    void shouldNotBlockAStreamWriteBehindABlockedStreamRead() throws Exception {
        final SocketChannel[] pair = fixture.pair();
        final InputStream in = pair[0].socket().getInputStream();
        final FutureTask<Integer> reader = new FutureTask<>(in::read);
        ChannelFixture.awaitBlocked(Thread.ofVirtual().start(reader));

        pair[0].socket().getOutputStream().write(7);

        assertEquals(7, pair[1].socket().getInputStream().read());
        pair[1].socket().getOutputStream().write(8);
        assertEquals(8, reader.get(5, TimeUnit.SECONDS));
    }

    @Test
    void shouldTranslateChannelExceptions() throws IOException {
        final RdmaSocketChannel channel = fixture.socket();
        final Socket socket = channel.socket();

        assertEquals("Socket[unconnected]", socket.toString());
        assertEquals("Socket is not connected",
            assertThrows(SocketException.class, socket::getInputStream).getMessage());
        assertEquals("Socket is not connected",
            assertThrows(SocketException.class, socket::shutdownInput).getMessage());
        socket.bind(null);
        assertEquals("Already bound", assertThrows(SocketException.class, () -> socket.bind(null)).getMessage());
        assertEquals("connect: The address can't be null",
            assertThrows(IllegalArgumentException.class, () -> socket.connect(null)).getMessage());
        assertEquals("connect: timeout can't be negative", assertThrows(IllegalArgumentException.class,
            () -> socket.connect(fixture.serverAddress(), -1)).getMessage());
        assertThrows(IllegalArgumentException.class, () -> socket.setSendBufferSize(0));
        socket.setSendBufferSize(10_000);
        assertEquals(10_000, socket.getSendBufferSize());
        socket.setSoLinger(true, 5);
        assertEquals(5, socket.getSoLinger());
        socket.setTcpNoDelay(true);
        assertTrue(socket.getTcpNoDelay());
        assertEquals("Urgent data not supported",
            assertThrows(SocketException.class, () -> socket.sendUrgentData(1)).getMessage());
        socket.close();
        assertEquals("Socket is closed", assertThrows(SocketException.class, socket::getInputStream).getMessage());
        assertEquals("Socket is closed",
            assertThrows(SocketException.class, () -> socket.setKeepAlive(true)).getMessage());
        assertEquals("Socket is closed", assertThrows(SocketException.class, socket::getSoTimeout).getMessage());
    }

    @Test
    void shouldCloseOnAnUnresolvedAddressAndTimeOutAConnect() throws IOException {
        final Socket unresolved = fixture.socket().socket();
        assertThrows(UnknownHostException.class,
            () -> unresolved.connect(InetSocketAddress.createUnresolved("nowhere.invalid", 80)));
        assertTrue(unresolved.isClosed());

        fixture.transport.unanswered.add(7);
        final Socket socket = fixture.socket().socket();
        assertEquals("Connect timed out", assertThrows(SocketTimeoutException.class,
            () -> socket.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), 7), 50)).getMessage());
        assertTrue(socket.isClosed());
    }

    @Test
    void shouldRefuseStreamIoOnANonBlockingChannel() throws IOException {
        final SocketChannel[] pair = fixture.pair();
        final InputStream in = pair[0].socket().getInputStream();
        final OutputStream out = pair[0].socket().getOutputStream();
        pair[0].configureBlocking(false);

        assertThrows(IllegalBlockingModeException.class, in::read);
        assertThrows(IllegalBlockingModeException.class, () -> out.write(1));
    }

    @Test
    void shouldAcceptThroughTheServerAdaptor() throws Exception {
        final RdmaServerSocketChannel channel = fixture.server();
        final ServerSocket server = channel.socket();
        assertEquals("ServerSocket[unbound]", server.toString());
        assertEquals(-1, server.getLocalPort());

        server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));

        assertSame(channel, server.getChannel());
        assertTrue(server.isBound());
        assertEquals("Already bound", assertThrows(SocketException.class, () -> server.bind(null)).getMessage());
        server.setSoTimeout(50);
        assertEquals("Accept timed out", assertThrows(SocketTimeoutException.class, server::accept).getMessage());
        server.setSoTimeout(0);
        final RdmaSocketChannel client = fixture.socket();
        client.connect(channel.getLocalAddress());
        final Socket accepted = server.accept();
        fixture.track(accepted.getChannel());
        assertTrue(accepted.isConnected());
        assertEquals(client.getLocalAddress(), accepted.getRemoteSocketAddress());
        assertTrue(server.getReuseAddress());
        server.setReceiveBufferSize(8192);
        assertEquals(8192, server.getReceiveBufferSize());
        channel.configureBlocking(false);
        assertThrows(IllegalBlockingModeException.class, server::accept);
        server.close();
        assertTrue(server.isClosed());
        // as the JDK's adaptor: IOExceptions pass through untranslated
        assertThrows(java.nio.channels.ClosedChannelException.class, server::accept);
        assertEquals("Socket is closed", assertThrows(SocketException.class, server::getSoTimeout).getMessage());
    }
}

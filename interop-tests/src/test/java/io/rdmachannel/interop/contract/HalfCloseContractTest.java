package io.rdmachannel.interop.contract;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.InputStream;
import java.net.Socket;
import java.net.SocketException;
import java.nio.ByteBuffer;
import java.nio.channels.AsynchronousCloseException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.NotYetConnectedException;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Timeout;

/**
 * shutdownOutput / shutdownInput: end of stream, the direction left open, and the socket adaptor's view.
 */
@ContractTest
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class HalfCloseContractTest {

    @AcrossModesAndFamilies
    void shouldKeepReturningEndOfStreamAfterPeerShutdownOutputWhileOtherDirectionWorks(
        final ContractTransport transport, final IoMode mode, final ConnectionState state) throws Exception {
        final ConnectedPair pair = ConnectedPair.open(transport, state);
        final SocketChannel client = pair.client();
        final SocketChannel server = pair.server();
        Io.configure(mode, client, server);
        Io.inMode(mode, () -> {
            state.step("client writes then shuts down output");
            Io.writeString(client, "request");
            client.shutdownOutput();

            state.step("server reads request then end of stream, twice");
            assertEquals("request", Io.readString(server, 7));
            assertEquals(-1, Io.read(server, ByteBuffer.allocate(16)));
            assertEquals(-1, Io.read(server, ByteBuffer.allocate(16)));

            state.step("server replies over the open direction");
            Io.writeString(server, "reply");
            assertEquals("reply", Io.readString(client, 5));
            server.shutdownOutput();
            assertEquals(-1, Io.read(client, ByteBuffer.allocate(16)));

            state.step("adaptor flags");
            assertTrue(client.socket().isOutputShutdown(), "client output shut down");
            assertFalse(client.socket().isInputShutdown(), "client input still open");
            assertFalse(server.socket().isInputShutdown(), "peer's shutdown does not shut the server's input");
            assertTrue(server.socket().isOutputShutdown(), "server output shut down");
            assertTrue(client.isOpen() && client.isConnected(), "half-closed channel stays open and connected");
            return null;
        });
    }

    @AcrossModes
    void shouldFailWritesAfterShutdownOutputWithClosedChannelException(final ContractTransport transport,
        final IoMode mode, final ConnectionState state) throws Exception {
        final ConnectedPair pair = ConnectedPair.open(transport, state);
        final SocketChannel client = pair.client();
        Io.configure(mode, client);
        Io.inMode(mode, () -> {
            client.shutdownOutput();
            client.shutdownOutput();
            // The javadoc promises a ClosedChannelException; the JDK throws its subclass AsynchronousCloseException
            // (SocketChannelImpl.endWrite), and a drop-in does the same.
            assertSame(AsynchronousCloseException.class,
                assertThrows(ClosedChannelException.class, () -> client.write(ByteBuffer.allocate(1))).getClass());
            assertSame(AsynchronousCloseException.class, assertThrows(ClosedChannelException.class,
                () -> client.write(new ByteBuffer[] {ByteBuffer.allocate(1), ByteBuffer.allocateDirect(1)}))
                .getClass());
            assertTrue(client.isOpen(), "shutdownOutput does not close the channel");
            return null;
        });
    }

    @AcrossModes
    void shouldReturnEndOfStreamAtOnceAfterShutdownInput(final ContractTransport transport, final IoMode mode,
        final ConnectionState state) throws Exception {
        final ConnectedPair pair = ConnectedPair.open(transport, state);
        final SocketChannel client = pair.client();
        final SocketChannel server = pair.server();
        Io.configure(mode, client, server);
        Io.inMode(mode, () -> {
            server.shutdownInput();
            server.shutdownInput();
            assertTrue(server.socket().isInputShutdown(), "adaptor sees input shut down");
            assertFalse(server.socket().isOutputShutdown(), "output still open");
            assertEquals(-1, server.read(ByteBuffer.allocate(16)));
            assertEquals(-1, server.read(ByteBuffer.allocate(16)));
            assertEquals(-1L, server.read(new ByteBuffer[] {ByteBuffer.allocate(4)}));

            state.step("server still writes");
            Io.writeString(server, "still open");
            assertEquals("still open", Io.readString(client, 10));
            return null;
        });
    }

    @AcrossBlockingModes
    void shouldReturnEndOfStreamToReaderBlockedWhenInputIsShutDown(final ContractTransport transport,
        final IoMode mode, final ConnectionState state) throws Exception {
        final ConnectedPair pair = ConnectedPair.open(transport, state);
        final SocketChannel server = pair.server();
        final Forked<Integer> reader = mode.fork("reader", () -> server.read(ByteBuffer.allocate(16)));
        state.watch("reader", () -> reader.thread().getState());
        Await.awaitBlockedIn(reader.thread(), server, "read");
        state.step("shutdownInput");
        server.shutdownInput();
        assertEquals(-1, reader.join(Duration.ofSeconds(10)));
        assertTrue(server.isOpen(), "asynchronous shutdown does not close the channel");
    }

    @AcrossTransports
    void shouldRejectShutdownBeforeConnectAndAfterClose(final ContractTransport transport,
        final ConnectionState state) throws Exception {
        final SocketChannel channel = state.closeAtEnd(transport.openSocketChannel());
        assertThrows(NotYetConnectedException.class, channel::shutdownInput);
        assertThrows(NotYetConnectedException.class, channel::shutdownOutput);
        channel.close();
        assertSame(ClosedChannelException.class, assertThrows(ClosedChannelException.class,
            channel::shutdownInput).getClass());
        assertSame(ClosedChannelException.class, assertThrows(ClosedChannelException.class,
            channel::shutdownOutput).getClass());
    }

    @AcrossTransports
    void shouldTranslateStatesInTheSocketAdaptorStreams(final ContractTransport transport,
        final ConnectionState state) throws Exception {
        final SocketChannel unconnected = state.closeAtEnd(transport.openSocketChannel());
        final Socket unconnectedSocket = unconnected.socket();
        assertSame(unconnected, unconnectedSocket.getChannel());
        assertEquals("Socket is not connected",
            assertThrows(SocketException.class, unconnectedSocket::getInputStream).getMessage());

        final ConnectedPair pair = ConnectedPair.open(transport, state);
        final Socket socket = pair.server().socket();
        assertSame(socket, pair.server().socket(), "socket() returns one adaptor");
        final InputStream in = socket.getInputStream();
        pair.client().write(ByteBuffer.wrap(new byte[] {42}));
        assertEquals(42, in.read());
        socket.shutdownInput();
        assertTrue(pair.server().socket().isInputShutdown());
        assertEquals("Socket input is shutdown",
            assertThrows(SocketException.class, socket::getInputStream).getMessage());
        pair.server().close();
        assertTrue(socket.isClosed());
        assertEquals("Socket is closed", assertThrows(SocketException.class, socket::getInputStream).getMessage());
        assertEquals("Socket is closed", assertThrows(SocketException.class, socket::getOutputStream).getMessage());
    }
}

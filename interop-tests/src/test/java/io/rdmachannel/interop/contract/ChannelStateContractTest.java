package io.rdmachannel.interop.contract;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.SocketOption;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.AlreadyBoundException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.NotYetConnectedException;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.function.Executable;

/**
 * The exception checklist for reads, writes, binds and socket options: which exception, in which order, and the
 * exact {@link ClosedChannelException} class after close.
 */
@ContractTest
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class ChannelStateContractTest {

    private static final Set<SocketOption<?>> CLIENT_OPTIONS = Set.of(StandardSocketOptions.SO_SNDBUF,
        StandardSocketOptions.SO_RCVBUF, StandardSocketOptions.SO_KEEPALIVE, StandardSocketOptions.SO_REUSEADDR,
        StandardSocketOptions.SO_LINGER, StandardSocketOptions.TCP_NODELAY);

    @AcrossModes
    void shouldRejectIoBeforeConnect(final ContractTransport transport, final IoMode mode,
        final ConnectionState state) throws Exception {
        final SocketChannel channel = state.closeAtEnd(transport.openSocketChannel());
        Io.configure(mode, channel);
        Io.inMode(mode, () -> {
            assertThrows(NotYetConnectedException.class, () -> channel.read(ByteBuffer.allocate(1)));
            assertThrows(NotYetConnectedException.class, () -> channel.write(ByteBuffer.allocate(1)));
            assertThrows(NotYetConnectedException.class, () -> channel.read(new ByteBuffer[] {ByteBuffer.allocate(1)}));
            assertThrows(NotYetConnectedException.class,
                () -> channel.write(new ByteBuffer[] {ByteBuffer.allocate(1)}));
            assertNull(channel.getRemoteAddress(), "no remote address before connect");
            assertNull(channel.getLocalAddress(), "no local address before bind");
            assertTrue(channel.isOpen(), "NotYetConnectedException leaves the channel open");
            return null;
        });
    }

    @AcrossModes
    void shouldThrowExactlyClosedChannelExceptionAfterClose(final ContractTransport transport, final IoMode mode,
        final ConnectionState state) throws Exception {
        final ConnectedPair pair = ConnectedPair.open(transport, state);
        final SocketChannel connected = pair.client();
        final SocketChannel neverConnected = state.closeAtEnd(transport.openSocketChannel());
        Io.configure(mode, connected, neverConnected);
        connected.close();
        neverConnected.close();
        Io.inMode(mode, () -> {
            for (final SocketChannel channel : List.of(connected, neverConnected)) {
                assertClosed(() -> channel.read(ByteBuffer.allocate(1)));
                assertClosed(() -> channel.write(ByteBuffer.allocate(1)));
                assertClosed(() -> channel.read(new ByteBuffer[] {ByteBuffer.allocate(1)}, 0, 1));
                assertClosed(() -> channel.write(new ByteBuffer[] {ByteBuffer.allocate(1)}, 0, 1));
                assertClosed(() -> channel.connect(pair.listenerAddress()));
                assertClosed(channel::finishConnect);
                assertClosed(channel::shutdownInput);
                assertClosed(channel::shutdownOutput);
                assertClosed(() -> channel.bind(transport.bindAddress()));
                assertClosed(channel::getLocalAddress);
                assertClosed(channel::getRemoteAddress);
                assertClosed(() -> channel.getOption(StandardSocketOptions.SO_RCVBUF));
                assertClosed(() -> channel.setOption(StandardSocketOptions.SO_RCVBUF, 1024));
                assertClosed(() -> channel.configureBlocking(true));
            }
            return null;
        });
        assertEquals(-1, pair.server().read(ByteBuffer.allocate(1)), "peer of the closed channel reads end of stream");
    }

    @AcrossTransports
    void shouldCheckBuffersBeforeState(final ContractTransport transport, final ConnectionState state)
        throws Exception {
        final SocketChannel unconnected = state.closeAtEnd(transport.openSocketChannel());
        assertThrows(NullPointerException.class, () -> unconnected.read((ByteBuffer) null));
        assertThrows(NullPointerException.class, () -> unconnected.write((ByteBuffer) null));
        final ByteBuffer[] two = {ByteBuffer.allocate(1), ByteBuffer.allocate(1)};
        assertThrows(IndexOutOfBoundsException.class, () -> unconnected.read(two, 1, 2));
        assertThrows(IndexOutOfBoundsException.class, () -> unconnected.write(two, -1, 1));

        final ConnectedPair pair = ConnectedPair.open(transport, state);
        assertEquals(0, pair.client().read(ByteBuffer.allocate(0)), "a full buffer reads 0 at once");
        assertEquals(0L, pair.client().read(new ByteBuffer[0]), "no buffers read 0 at once");
        assertEquals(0, pair.client().write(ByteBuffer.allocate(0)), "an empty buffer writes 0");
    }

    @AcrossTransports
    void shouldRejectSecondBind(final ContractTransport transport, final ConnectionState state) throws Exception {
        final SocketChannel channel = state.closeAtEnd(transport.openSocketChannel());
        channel.bind(transport.bindAddress());
        assertThrows(AlreadyBoundException.class, () -> channel.bind(transport.bindAddress()));
        final ConnectedPair pair = ConnectedPair.open(transport, state);
        assertThrows(AlreadyBoundException.class, () -> pair.client().bind(transport.bindAddress()),
            "connect binds the channel");
    }

    @AcrossTransports
    void shouldValidateSocketOptions(final ContractTransport transport, final ConnectionState state)
        throws Exception {
        final SocketChannel channel = state.closeAtEnd(transport.openSocketChannel());
        assertTrue(channel.supportedOptions().containsAll(CLIENT_OPTIONS),
            "supported options " + channel.supportedOptions() + " include " + CLIENT_OPTIONS);
        assertThrows(NullPointerException.class, () -> channel.setOption(null, 1));
        assertThrows(NullPointerException.class, () -> channel.getOption(null));
        assertThrows(UnsupportedOperationException.class,
            () -> channel.setOption(StandardSocketOptions.IP_MULTICAST_TTL, 1));
        assertThrows(UnsupportedOperationException.class,
            () -> channel.getOption(StandardSocketOptions.IP_MULTICAST_TTL));
        assertThrows(IllegalArgumentException.class, () -> channel.setOption(StandardSocketOptions.SO_RCVBUF, -1));
        assertThrows(IllegalArgumentException.class, () -> channel.setOption(StandardSocketOptions.SO_SNDBUF, -1));

        channel.setOption(StandardSocketOptions.TCP_NODELAY, true);
        assertEquals(true, channel.getOption(StandardSocketOptions.TCP_NODELAY));
        channel.setOption(StandardSocketOptions.SO_KEEPALIVE, true);
        assertEquals(true, channel.getOption(StandardSocketOptions.SO_KEEPALIVE));
        channel.setOption(StandardSocketOptions.SO_LINGER, 5);
        assertEquals(5, channel.getOption(StandardSocketOptions.SO_LINGER));

        final ServerSocketChannel listener = state.closeAtEnd(transport.openServerSocketChannel());
        assertTrue(listener.supportedOptions().containsAll(
            Set.of(StandardSocketOptions.SO_RCVBUF, StandardSocketOptions.SO_REUSEADDR)),
            "listener options " + listener.supportedOptions());
        assertThrows(NullPointerException.class, () -> listener.setOption(null, 1));
        assertThrows(UnsupportedOperationException.class,
            () -> listener.setOption(StandardSocketOptions.TCP_NODELAY, true));
        assertThrows(IllegalArgumentException.class, () -> listener.setOption(StandardSocketOptions.SO_RCVBUF, -1));
        listener.setOption(StandardSocketOptions.SO_REUSEADDR, true);
        assertEquals(true, listener.getOption(StandardSocketOptions.SO_REUSEADDR));
        listener.close();
        assertClosed(() -> listener.getOption(StandardSocketOptions.SO_RCVBUF));
        assertClosed(() -> listener.setOption(StandardSocketOptions.SO_RCVBUF, 1024));
    }

    private static void assertClosed(final Executable operation) {
        final ClosedChannelException thrown = assertThrows(ClosedChannelException.class, operation);
        assertSame(ClosedChannelException.class, thrown.getClass(), "exactly ClosedChannelException, not a subclass");
    }
}

package io.rdmachannel.interop.contract;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.ConnectException;
import java.net.Socket;
import java.net.SocketAddress;
import java.net.SocketTimeoutException;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.Random;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Timeout;

/**
 * The socket adaptor ({@code socket()}) through the suite: stream echo, SO_TIMEOUT on stream reads, timed connect and
 * the shutdown flags.
 */
@ContractTest
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class SocketAdaptorContractTest {

    private static final int ECHO_BYTES = 256 * 1024;
    private static final int SO_TIMEOUT_MILLIS = 200;
    private static final int CONNECT_TIMEOUT_MILLIS = 5_000;
    private static final int SHORT_CONNECT_TIMEOUT_MILLIS = 200;
    private static final Duration STEP = Duration.ofSeconds(20);

    @AcrossBlockingModes
    void shouldEchoThroughTheAdaptorStreams(final ContractTransport transport, final IoMode mode,
        final ConnectionState state) throws Exception {
        final long seed = ContractConfiguration.seed();
        state.put("seed", seed);
        final byte[] sent = new byte[ECHO_BYTES];
        new Random(seed).nextBytes(sent);
        final EchoServer server = EchoServer.start(transport, mode, 0, state);
        final SocketChannel channel = state.closeAtEnd(transport.openSocketChannel());
        final Socket socket = channel.socket();
        state.step("timed connect");
        socket.connect(server.address(), CONNECT_TIMEOUT_MILLIS);
        assertTrue(socket.isConnected() && channel.isConnected(), "timed connect connects the channel");
        assertEquals(server.address(), socket.getRemoteSocketAddress());

        final OutputStream out = socket.getOutputStream();
        final Forked<Void> writer = mode.fork("stream-writer", () -> {
            for (int offset = 0; offset < sent.length; offset += 10_000) {
                out.write(sent, offset, Math.min(10_000, sent.length - offset));
            }
            socket.shutdownOutput();
            return null;
        });
        final ByteArrayOutputStream received = new ByteArrayOutputStream();
        state.watch("received", received::size);
        Io.inMode(mode, () -> {
            final InputStream in = socket.getInputStream();
            final byte[] chunk = new byte[8192];
            int n;
            while ((n = in.read(chunk)) >= 0) {
                received.write(chunk, 0, n);
            }
            assertEquals(-1, in.read(), "end of stream stays");
            return null;
        });
        writer.join(STEP);
        assertArrayEquals(sent, received.toByteArray(), "every byte echoed in order");
        assertTrue(socket.isOutputShutdown(), "output shut down through the adaptor");
        assertFalse(socket.isInputShutdown(), "end of stream does not shut input down");
        socket.shutdownInput();
        assertTrue(socket.isInputShutdown() && socket.isOutputShutdown());
        assertTrue(socket.isConnected() && !socket.isClosed(), "half-closed both ways, still open");
        socket.close();
        assertTrue(socket.isClosed());
        assertFalse(channel.isOpen(), "closing the adaptor closes the channel");
    }

    @AcrossBlockingModes
    void shouldTimeOutStreamReadsWithSoTimeout(final ContractTransport transport, final IoMode mode,
        final ConnectionState state) throws Exception {
        final ConnectedPair pair = ConnectedPair.open(transport, state);
        final Socket socket = pair.server().socket();
        socket.setSoTimeout(SO_TIMEOUT_MILLIS);
        assertEquals(SO_TIMEOUT_MILLIS, socket.getSoTimeout());
        Io.inMode(mode, () -> {
            final InputStream in = socket.getInputStream();
            state.step("read with nothing to read");
            final long start = System.nanoTime();
            final SocketTimeoutException timeout = assertThrows(SocketTimeoutException.class, in::read);
            final long elapsedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            assertEquals("Read timed out", timeout.getMessage());
            assertTrue(elapsedMillis >= SO_TIMEOUT_MILLIS / 2, "timed out after only " + elapsedMillis + " ms");
            assertTrue(pair.server().isOpen(), "a read timeout does not close the socket");

            state.step("read after the timeout");
            pair.client().socket().getOutputStream().write(7);
            assertEquals(7, in.read(), "the socket still reads after a timeout");
            return null;
        });
    }

    @AcrossBlockingModes
    void shouldFailTimedConnect(final ContractTransport transport, final IoMode mode, final ConnectionState state)
        throws Exception {
        final SocketChannel placeholder = state.closeAtEnd(transport.openSocketChannel());
        placeholder.bind(transport.bindAddress());
        final SocketAddress noListener = transport.addressWithPort(
            ContractTransport.portOf(placeholder.getLocalAddress()));
        final BlockedConnectContractTest.BusyListener busyListener =
            BlockedConnectContractTest.listenerWithFullBacklog(transport, state);
        final SocketAddress busy = busyListener.address();
        final SocketChannel refusedChannel = state.closeAtEnd(transport.openSocketChannel());
        final SocketChannel busyChannel = state.closeAtEnd(transport.openSocketChannel());
        Io.inMode(mode, () -> {
            state.step("timed connect to a port without listener");
            final ConnectException refused = assertThrows(ConnectException.class,
                () -> refusedChannel.socket().connect(noListener, CONNECT_TIMEOUT_MILLIS));
            assertTrue(refused.getMessage().startsWith("Connection refused"), refused.getMessage());
            assertFalse(refusedChannel.isOpen(), "a failed connect closes the channel");
            assertThrows(IllegalArgumentException.class,
                () -> busyChannel.socket().connect(busy, -1), "negative timeout");

            state.step("timed connect to a full backlog");
            if (!transport.queuesConnectsBeyondBacklog()) {
                busyListener.awaitFillersSettled();
            }
            // TCP queues the request, so a short timeout expires; RDMA rejects it, which under emulation (the
            // soft-RoCE guest) took longer than the short timeout: give the rejection the full timeout
            final int timeout = transport.queuesConnectsBeyondBacklog() ? SHORT_CONNECT_TIMEOUT_MILLIS
                : CONNECT_TIMEOUT_MILLIS;
            final Exception failure = assertThrows(Exception.class, () -> busyChannel.socket().connect(busy, timeout));
            if (transport.queuesConnectsBeyondBacklog()) {
                assertSame(SocketTimeoutException.class, failure.getClass(), "failed with " + failure);
                assertEquals("Connect timed out", failure.getMessage());
            } else {
                // see BlockedConnectContractTest: RDMA refuses a request beyond the backlog at once
                assertSame(ConnectException.class, failure.getClass(), "failed with " + failure);
            }
            assertFalse(busyChannel.isOpen(), "a failed timed connect closes the channel");
            return null;
        });
    }
}

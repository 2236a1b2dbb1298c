package io.rdmachannel.channel.stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmachannel.channel.spi.RdmaProviders;

import java.io.IOException;
import java.net.SocketException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.zip.CRC32;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The XRC mode on the shm provider, first form (docs/xrc-stream-mode.md, "In what order"): each connection with an
 * XRC initiator, a target queue pair offered to the peer and an XRC shared receive queue of its own, negotiated in
 * the connection data; the stream carries data both ways as in RC.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class XrcStreamTest {
    private final ExecutorService threads = Executors.newThreadPerTaskExecutor(
        Thread.ofPlatform().daemon().factory());
    private final List<StreamConnection> open = new ArrayList<>();
    private final BlockingStream.Waker serverWaker = new BlockingStream.Waker();
    private final BlockingStream.Waker clientWaker = new BlockingStream.Waker();
    private StreamTransport transport;
    private StreamListener listener;

    @AfterEach
    void closeAll() {
        for (final StreamConnection connection : open) {
            connection.wakeDirectWaiters();
            connection.close();
        }
        if (listener != null) {
            listener.close();
        }
        threads.shutdownNow();
        if (transport != null) {
            StreamTransports.close(transport);
        }
    }

    @Test
    void shouldCarryAStreamBothWaysOverXrcQueuePairs() throws Exception {
        transport = StreamTransports.open(RdmaProviders.byName("shm"));
        listener = transport.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 8,
            new StreamOptions().xrc(true), serverWaker);
        final StreamConnection client = BlockingStream.connect(transport.connect(listener.localAddress(), null,
            new StreamOptions().xrc(true), clientWaker), clientWaker);
        open.add(client);
        final StreamConnection server = BlockingStream.accept(listener, serverWaker);
        open.add(server);
        assertTrue(server.describe().contains("xrc=true"), server::describe);
        assertTrue(client.describe().contains("xrc=true"), client::describe);
        assertEquals("XRC", ((RsocketConnection) server).info().mode());

        transfer(client, clientWaker, server, serverWaker, 8 << 20, 5000);
        transfer(server, serverWaker, client, clientWaker, 1 << 20, 100);
    }

    /**
     * A listener not in XRC mode refuses an XRC request, saying why (an RC queue pair cannot answer XRC queue
     * pairs); the connector then connects again in RC, once, and remembers the listener, so the next connect there
     * asks for RC at once. The other way round a plain request to an XRC listener gets plain RC.
     */
    @Test
    void shouldAnswerAPlainRequestInRcAndFallBackToRcWhereTheListenerRefusesXrc() throws Exception {
        transport = StreamTransports.open(RdmaProviders.byName("shm"));
        listener = transport.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 8,
            new StreamOptions().xrc(true), serverWaker);
        final StreamConnection plain = BlockingStream.connect(transport.connect(listener.localAddress(), null,
            new StreamOptions(), clientWaker), clientWaker);
        open.add(plain);
        final StreamConnection accepted = BlockingStream.accept(listener, serverWaker);
        open.add(accepted);
        assertFalse(accepted.describe().contains("xrc=true"), accepted::describe);
        transfer(plain, clientWaker, accepted, serverWaker, 1 << 16, 1000);

        final RsocketTransport engine = (RsocketTransport) transport;
        final StreamListener plainListener = transport.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(),
            0), 8, new StreamOptions(), serverWaker);
        try {
            final long failedBefore = engine.getConnectionsFailed();
            final StreamConnection fellBack = BlockingStream.connect(transport.connect(plainListener.localAddress(),
                null, new StreamOptions().xrc(true), clientWaker), clientWaker);
            open.add(fellBack);
            final StreamConnection server = BlockingStream.accept(plainListener, serverWaker);
            open.add(server);
            assertEquals("RC", ((RsocketConnection) fellBack).info().mode());
            assertTrue(fellBack.describe().contains("xrc=false (the listener refused it: Connection refused: "
                + "unsupported protocol: the listener does not take XRC connections (RDMA_XRC / "
                + "rdmachannel.stream.xrc is not set on it))"), fellBack::describe);
            // the refused attempt, on each side
            assertEquals(failedBefore + 2, engine.getConnectionsFailed());
            transfer(fellBack, clientWaker, server, serverWaker, 1 << 16, 1000);

            final StreamConnection second = BlockingStream.connect(transport.connect(plainListener.localAddress(),
                null, new StreamOptions().xrc(true), clientWaker), clientWaker);
            open.add(second);
            final StreamConnection secondServer = BlockingStream.accept(plainListener, serverWaker);
            open.add(secondServer);
            assertTrue(second.describe().contains("xrc=false (the listener refused it lately: "), second::describe);
            assertEquals(failedBefore + 2, engine.getConnectionsFailed());
            transfer(second, clientWaker, secondServer, serverWaker, 1 << 12, 10);
        } finally {
            plainListener.close();
        }
    }

    /**
     * The connection manager's lifeline ended (the peer died or let go without a word): a connection whose peer said
     * nothing more is reset, with the cause; one whose peer's DISCONNECT had arrived just ends.
     */
    @Test
    void shouldResetAConnectionWhosePeerLeftWithoutAWordAndEndOneWhosePeerSaidGoodbye() throws Exception {
        transport = StreamTransports.open(RdmaProviders.byName("shm"));
        listener = transport.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 8,
            new StreamOptions().xrc(true), serverWaker);
        final StreamConnection silent = connectXrc();
        final RsocketConnection silentServer = (RsocketConnection) BlockingStream.accept(listener, serverWaker);
        open.add(silentServer);
        silentServer.peerGone(new IOException("the peer closed the connection's lifeline"));
        final SocketException reset = assertThrows(SocketException.class,
            () -> BlockingStream.read(silentServer, ByteBuffer.allocate(8), serverWaker));
        assertEquals("Connection reset", reset.getMessage());
        assertTrue(java.util.Arrays.stream(reset.getSuppressed()).anyMatch(s -> s.getMessage().contains(
            "the peer let go of the connection (the peer closed the connection's lifeline)")), reset::toString);

        final StreamConnection polite = connectXrc();
        final RsocketConnection politeServer = (RsocketConnection) BlockingStream.accept(listener, serverWaker);
        open.add(politeServer);
        polite.close();
        assertEquals(-1, BlockingStream.read(politeServer, ByteBuffer.allocate(8), serverWaker));
        politeServer.peerGone(new IOException("the peer closed the connection's lifeline"));
        assertEquals(-1, BlockingStream.read(politeServer, ByteBuffer.allocate(8), serverWaker));
        assertTrue(silent.describe().contains("xrc=true"), silent::describe);
    }

    private StreamConnection connectXrc() throws IOException {
        final StreamConnection client = BlockingStream.connect(transport.connect(listener.localAddress(), null,
            new StreamOptions().xrc(true), clientWaker), clientWaker);
        open.add(client);
        return client;
    }

    /** {@code total} random bytes in pieces of up to {@code piece} from one end to the other, then its end. */
    private void transfer(final StreamConnection from, final BlockingStream.Waker fromWaker,
        final StreamConnection to, final BlockingStream.Waker toWaker, final int total, final int piece)
        throws Exception {
        final CompletableFuture<Long> sent = CompletableFuture.supplyAsync(() -> {
            try {
                return BlockingStream.writeRandom(from, fromWaker, total, piece, total);
            } catch (final IOException ex) {
                throw new IllegalStateException(ex);
            }
        }, threads);
        final CompletableFuture<Long> received = CompletableFuture.supplyAsync(() -> {
            try {
                return readAll(to, toWaker);
            } catch (final IOException ex) {
                throw new IllegalStateException(ex);
            }
        }, threads);
        try {
            assertEquals(sent.get(60, TimeUnit.SECONDS), received.get(60, TimeUnit.SECONDS));
        } catch (final Exception | AssertionError ex) {
            throw new AssertionError("sender " + from.describe() + "; receiver " + to.describe(), ex);
        }
    }

    private static long readAll(final StreamConnection connection, final BlockingStream.Waker waker)
        throws IOException {
        final CRC32 crc = new CRC32();
        final ByteBuffer in = ByteBuffer.allocate(16384);
        while (true) {
            in.clear();
            final int n = BlockingStream.read(connection, in, waker);
            if (n < 0) {
                return crc.getValue();
            }
            crc.update(in.array(), 0, n);
        }
    }
}

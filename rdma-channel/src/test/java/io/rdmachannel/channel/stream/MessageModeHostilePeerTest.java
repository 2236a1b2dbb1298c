package io.rdmachannel.channel.stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.rdmachannel.channel.cm.ConnectionManager;
import io.rdmachannel.channel.spi.CompletionStatus;
import io.rdmachannel.channel.spi.QueuePairState;

import java.io.IOException;
import java.net.SocketException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

import org.junit.jupiter.api.Test;

/**
 * The whole hostile-peer suite again in message mode, the engine and the peer on shm devices emulating iWARP
 * ({@code rdmachannel.shm.transport=iwarp}): every message a 4-byte SEND, every refusal the same. Plus what only
 * message mode has: the 4-byte encoding on the wire, messages of the wrong length, and the rule that the active side
 * sends first.
 */
class MessageModeHostilePeerTest extends HostilePeerTest {
    /** SGL|384: the initial grant of an engine with the default 384 credits, little-endian. */
    private static final byte[] SGL_384 = {(byte) 0x80, 0x01, 0x00, (byte) 0x80};
    /** SGL|16, little-endian. */
    private static final byte[] SGL_16 = {0x10, 0x00, 0x00, (byte) 0x80};
    /** CTRL|SHUTDOWN, little-endian. */
    private static final byte[] CTRL_SHUTDOWN = {0x02, 0x00, 0x00, (byte) 0xE0};

    @Override
    StreamTransport openTransport() throws IOException {
        return IwarpEmulation.transport();
    }

    @Override
    ConnectionManager openConnectionManager() throws IOException {
        return IwarpEmulation.connectionManager();
    }

    @Override
    String emptySendRefusal() {
        return "a message must be a 4-byte SEND in message mode: byteLength=0";
    }

    /**
     * The passive engine grants its second half only after our first message, so send one first.
     */
    @Test
    @Override
    void shouldRefuseDataLargerThanTheRegionItLandsIn() throws Exception {
        final Connected connected = connectToSmallEngine();
        final HostilePeer peer = connected.peer();
        awaitSecondHalf(peer);
        // both halves are advertised, so 4096 more bytes fit the ring, but not the region they start in
        peer.write(ImmediateData.data(4096), peer.slotAddress(), peer.slotKey(), new byte[4096]);
        assertRefused(connected, "the peer wrote across the end of a receive region: receivedBytes=1, length=4096,"
            + " regionEnd=4096");
    }

    /**
     * The engine's poller takes the first message as soon as it arrives, so the violation comes second here: then
     * everything after it arrives before the engine looks.
     */
    @Test
    @Override
    void shouldTrustNothingThePeerSendsAfterAViolation() throws Exception {
        final Connected connected = connectToSmallEngine();
        final HostilePeer peer = connected.peer();
        awaitSecondHalf(peer);
        peer.message(ImmediateData.encode(ImmediateData.RSVD, 1));
        peer.sendData(new byte[] {42});
        peer.message(ImmediateData.ctrl(ImmediateData.CTRL_SHUTDOWN));
        final StreamConnection engine = connected.engine();
        final ByteBuffer received = ByteBuffer.allocate(16);
        // the byte that came before the violation is delivered; neither the one after it nor a clean end of stream
        assertEquals(1, BlockingStream.read(engine, received, connected.waker()), engine::describe);
        assertEquals(0, received.get(0));
        final SocketException reset = assertThrows(SocketException.class, () -> BlockingStream.read(engine,
            received, connected.waker()), engine::describe);
        final ProtocolException cause = assertInstanceOf(ProtocolException.class, reset.getCause(), engine::describe);
        assertEquals("message op not allowed on the wire: op=5 (RSVD), immediate=0xa0000001", cause.getMessage());
        assertEquals(QueuePairState.ERROR, ((RsocketConnection) engine).queuePairState(), engine::describe);
    }

    /**
     * Send one byte, the active side's first message, and wait for the engine's grant of its second half.
     */
    private static void awaitSecondHalf(final HostilePeer peer) {
        peer.sendData(new byte[] {0});
        peer.await(() -> peer.slotLength(1) == 4096, "the engine's grant of its second half");
    }

    @Test
    void shouldRefuseAMessageShorterThanFourBytes() throws Exception {
        final Connected connected = connectToSmallEngine();
        connected.peer().sendBytes(new byte[] {0x02, 0x00, 0x00});
        assertRefused(connected, "a message must be a 4-byte SEND in message mode: byteLength=3");
    }

    @Test
    void shouldFailOnAMessageLongerThanItsBuffer() throws Exception {
        final Connected connected = connectToSmallEngine();
        // the engine's receive holds 4 bytes: the device fails the SEND at both ends
        assertEquals(CompletionStatus.REMOTE_INVALID_REQUEST, connected.peer().trySendBytes(new byte[5]));
        final StreamConnection engine = connected.engine();
        final SocketException reset = assertThrows(SocketException.class, () -> BlockingStream.read(engine,
            ByteBuffer.allocate(1), connected.waker()), engine::describe);
        assertEquals("Connection reset", reset.getMessage());
        assertTrue(reset.getSuppressed()[0].getMessage().startsWith("receive completed with local length error"),
            engine::describe);
    }

    @Test
    void shouldReadTheMessageInThePeersByteOrder() throws Exception {
        assumeTrue(ByteOrder.nativeOrder() == ByteOrder.LITTLE_ENDIAN, "the peer announces its host's order");
        final Connected connected = connectToSmallEngine();
        connected.peer().sendBytes(CTRL_SHUTDOWN);
        assertEquals(-1, BlockingStream.read(connected.engine(), ByteBuffer.allocate(1), connected.waker()),
            connected.engine()::describe);
    }

    @Test
    void shouldSendItsFirstGrantAtOnceAsTheActiveSide() throws Exception {
        assumeTrue(ByteOrder.nativeOrder() == ByteOrder.LITTLE_ENDIAN, "the engine sends in its host's order");
        final HostilePeer peer = track(HostilePeer.listen(cm, HostilePeer.ConnectionDataEditor.NONE));
        final BlockingStream.Waker waker = new BlockingStream.Waker();
        final StreamConnection engine = track(BlockingStream.connect(transport.connect(peer.address(), null,
            new StreamOptions(), waker), waker));
        peer.awaitEstablished();
        // an RDMA WRITE of the second ring half into our slot 1, then SGL|384 as a 4-byte SEND
        assertArrayEquals(SGL_384, peer.awaitInboundBytes(1).getFirst(), engine::describe);
        assertEquals(StreamConfiguration.RECEIVE_BUFFER_LENGTH_DEFAULT / 2, peer.slotLength(1), peer::toString);
        assertTrue(engine.describe().contains("messageMode=true, awaitingFirstMessage=false"), engine::describe);
    }

    @Test
    void shouldPostNothingAsThePassiveSideBeforeTheActiveSidesFirstMessage() throws Exception {
        assumeTrue(ByteOrder.nativeOrder() == ByteOrder.LITTLE_ENDIAN, "the engine sends in its host's order");
        final Connected connected = connectToSmallEngine();
        final HostilePeer peer = connected.peer();
        final StreamConnection engine = connected.engine();
        // every call that could post: nothing may go out, and nothing breaks iWARP's rule
        assertEquals(0, engine.readyOps() & StreamReadiness.WRITE, engine::describe);
        assertEquals(0, engine.write(ByteBuffer.wrap(new byte[] {1})), engine::describe);
        engine.shutdownOutput();
        assertEquals(0, engine.read(ByteBuffer.allocate(1)), engine::describe);
        assertTrue(engine.describe().contains("awaitingFirstMessage=true"), engine::describe);
        assertEquals(List.of(), peer.awaitInboundBytes(0), peer::toString);
        assertEquals(QueuePairState.READY_TO_SEND, peer.queuePair().state(), peer::toString);
        // our first message: the engine now flushes the SHUTDOWN it held back and grants its second half
        peer.sendData(new byte[] {42});
        final ByteBuffer received = ByteBuffer.allocate(2);
        assertEquals(1, BlockingStream.read(engine, received, connected.waker()), engine::describe);
        assertEquals(42, received.get(0));
        assertEquals(-1, peer.receive(ByteBuffer.allocate(1)), peer::toString);
        final List<byte[]> messages = peer.awaitInboundBytes(2);
        assertArrayEquals(CTRL_SHUTDOWN, messages.get(0), peer::toString);
        assertArrayEquals(SGL_16, messages.get(1), peer::toString);
        assertEquals(QueuePairState.READY_TO_SEND, peer.queuePair().state(), peer::toString);
    }

    @Test
    void shouldGrantAsSoonAsTheFirstMessageArrivesWithoutTheApplication() throws Exception {
        final Connected connected = connectToSmallEngine();
        final HostilePeer peer = connected.peer();
        peer.sendData(new byte[] {7});
        // nobody calls the engine: its poller takes the message and grants the second half
        peer.await(() -> peer.slotLength(1) == 4096, "the engine's grant of its second half");
        peer.sendData(new byte[8191]);
        final ByteBuffer received = ByteBuffer.allocate(8192);
        while (received.hasRemaining()) {
            BlockingStream.read(connected.engine(), received, connected.waker());
        }
        assertEquals(7, received.get(0));
    }

    @Test
    void shouldCatchAPassiveSideThatSendsFirst() throws Exception {
        final HostilePeer passive = track(HostilePeer.listen(cm, HostilePeer.ConnectionDataEditor.NONE));
        final HostilePeer active = track(HostilePeer.connect(cm, passive.address(),
            HostilePeer.ConnectionDataEditor.NONE));
        active.awaitEstablished();
        passive.awaitEstablished();
        // the shm connection manager marked the accepted queue pair passive: its SEND before any of ours breaks MPA
        assertEquals(CompletionStatus.REMOTE_OPERATION_ERROR, passive.trySendBytes(SGL_16));
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (active.queuePair().state() != QueuePairState.ERROR && System.nanoTime() - deadline < 0) {
            LockSupport.parkNanos(100_000);
        }
        assertEquals(QueuePairState.ERROR, active.queuePair().state(), active::toString);
        assertEquals(QueuePairState.ERROR, passive.queuePair().state(), passive::toString);
        assertEquals(0, active.awaitInboundBytes(0).size(), active::toString);
    }

    @Test
    void shouldReleaseAClosedPassiveConnectionWhoseHeldBackDisconnectCanNeverGo() throws Exception {
        // the peer (active) never sends its first message, so the closed engine may not send its DISCONNECT and
        // lingers; once the peer is gone the DISCONNECT can never go, and the connection is released then, not at
        // rdmachannel.stream.closeLingerMillis (a minute)
        final Connected connected = connectToEngine(new StreamOptions());
        final RsocketConnection engine = (RsocketConnection) connected.engine();
        engine.close();
        assertEquals(1, ((RsocketTransport) transport).lingering(), engine::describe);
        assertNotNull(engine.queuePairState(), engine::describe);
        // the hold is kept: nothing came from the engine
        assertEquals(0, connected.peer().awaitInboundBytes(0).size(), connected.peer()::toString);
        connected.peer().close();
        awaitCondition(() -> engine.queuePairState() == null, engine::describe);
        awaitCondition(() -> ((RsocketTransport) transport).lingering() == 0, engine::describe);
    }
}

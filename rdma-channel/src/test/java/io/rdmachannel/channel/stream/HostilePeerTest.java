package io.rdmachannel.channel.stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.rdmachannel.channel.ConnectionStatistics;
import io.rdmachannel.channel.cm.ConnectionManager;
import io.rdmachannel.channel.spi.QueuePairState;
import io.rdmachannel.channel.spi.RdmaProviders;

import java.io.IOException;
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import java.util.stream.Stream;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The engine against a peer that breaks the rsockets protocol ({@link HostilePeer}): every impossible value it
 * advertises or sends is refused, and the engine never writes outside what the peer advertised.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class HostilePeerTest {
    private static final long WRAPPING_ADDRESS = 0xFFFF_FFFF_FFFF_F000L;
    private static final long REFUSAL_TIMEOUT_NANOS = TimeUnit.SECONDS.toNanos(10);

    StreamTransport transport;
    ConnectionManager cm;
    private ExecutorService threads;
    private final List<AutoCloseable> resources = new ArrayList<>();

    @BeforeEach
    void open() throws IOException {
        transport = openTransport();
        cm = openConnectionManager();
        threads = Executors.newThreadPerTaskExecutor(Thread.ofPlatform().daemon().factory());
    }

    /**
     * The engine's transport; {@link MessageModeHostilePeerTest} opens one in message mode.
     */
    StreamTransport openTransport() throws IOException {
        return StreamTransports.open(RdmaProviders.byName("shm"));
    }

    /**
     * The hostile peer's connection manager, over a device of the same transport as the engine's.
     */
    ConnectionManager openConnectionManager() throws IOException {
        return RdmaProviders.byName("shm").openConnectionManager(null);
    }

    /**
     * How the engine refuses a message that carries nothing: a zero-length SEND.
     */
    String emptySendRefusal() {
        return "a message without immediate data arrived";
    }

    @AfterEach
    void close() throws Exception {
        threads.shutdownNow();
        for (int i = resources.size() - 1; i >= 0; i--) {
            resources.get(i).close();
        }
        cm.close();
        StreamTransports.close(transport);
    }

    /**
     * Close what the test tracked so far, in reverse order, before a transport of its own is closed.
     */
    private void closeTracked() throws Exception {
        for (int i = resources.size() - 1; i >= 0; i--) {
            resources.remove(i).close();
        }
    }

    <T extends AutoCloseable> T track(final T resource) {
        resources.add(resource);
        return resource;
    }

    // ----- connection data -----

    static Stream<Arguments> impossibleConnectionData() {
        return Stream.of(
            Arguments.of("unknown version", (HostilePeer.ConnectionDataEditor) (data, peer) -> data.version(2),
                "unsupported connection data version: version=2"),
            Arguments.of("zero-sized ring", (HostilePeer.ConnectionDataEditor) (data, peer) -> data.dataBuffer(
                data.dataBufferAddress(), data.dataBufferKey(), 0), "data buffer length must be in [1, 1073741824]:"
                + " dataBufferLength=0"),
            Arguments.of("ring over the cap", (HostilePeer.ConnectionDataEditor) (data, peer) -> data.dataBuffer(
                data.dataBufferAddress(), data.dataBufferKey(), 0xFFFF_FFFFL), "data buffer length must be in [1,"
                + " 1073741824]: dataBufferLength=4294967295"),
            Arguments.of("zero credits", (HostilePeer.ConnectionDataEditor) (data, peer) -> data.credits(0),
                "peer advertised no receive credits: credits=0"),
            Arguments.of("no target SGL entries", (HostilePeer.ConnectionDataEditor) (data, peer) -> data.targetSgl(
                data.targetSglAddress(), data.targetSglKey(), 0), "target SGL entries must be in [1, 256]:"
                + " targetSglEntries=0"),
            Arguments.of("too many target SGL entries", (HostilePeer.ConnectionDataEditor) (data, peer) ->
                data.targetSgl(data.targetSglAddress(), data.targetSglKey(), 257), "target SGL entries must be in"
                + " [1, 256]: targetSglEntries=257"),
            Arguments.of("ring wrapping past 2^64", (HostilePeer.ConnectionDataEditor) (data, peer) ->
                data.dataBuffer(WRAPPING_ADDRESS, data.dataBufferKey(), 8192), "remote range wraps the 64-bit address"
                + " space: dataBufferAddress=0xfffffffffffff000, dataBufferLength=8192"),
            Arguments.of("target SGL wrapping past 2^64", (HostilePeer.ConnectionDataEditor) (data, peer) ->
                data.targetSgl(0xFFFF_FFFF_FFFF_FFF0L, data.targetSglKey(), 2), "remote range wraps the 64-bit"
                + " address space: targetSglAddress=0xfffffffffffffff0, targetSglBytes=32"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("impossibleConnectionData")
    void shouldFailTheConnectorOnImpossibleConnectionData(final String name,
        final HostilePeer.ConnectionDataEditor editor, final String message) throws Exception {
        final HostilePeer peer = track(HostilePeer.listen(cm, editor));
        final BlockingStream.Waker waker = new BlockingStream.Waker();
        final StreamConnector connector = track(transport.connect(peer.address(), null, new StreamOptions(),
            waker));
        final IOException failure = assertThrows(IOException.class, () -> BlockingStream.connect(connector, waker));
        Throwable cause = failure;
        while (cause != null && !(cause instanceof ProtocolException)) {
            cause = cause.getCause();
        }
        assertNotNull(cause, () -> "no ProtocolException in the cause chain of " + failure);
        assertEquals(message, cause.getMessage());
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("impossibleConnectionData")
    void shouldRejectImpossibleConnectionDataAtTheListener(final String name,
        final HostilePeer.ConnectionDataEditor editor, final String message) throws Exception {
        final BlockingStream.Waker waker = new BlockingStream.Waker();
        final StreamListener listener = track(transport.listen(new InetSocketAddress(
            InetAddress.getLoopbackAddress(), 0), 4, new StreamOptions(), waker));
        try (HostilePeer peer = HostilePeer.connect(cm, listener.localAddress(), editor)) {
            final Throwable refused = peer.awaitFailed();
            assertInstanceOf(ConnectException.class, refused, () -> "expected a rejection, got " + refused);
            // the requester hears why its connection data was refused
            assertEquals("Connection refused: unsupported protocol: " + message, refused.getMessage());
            awaitCondition(() -> ((RsocketListener) listener).inProgress() == 0, listener::toString);
            assertNull(listener.accept(waker), listener::toString);
        }
        listener.close();
        // every queue pair, region and completion queue of the refused connection was released: closing the
        // protection domain and the device would throw otherwise
        assertDoesNotThrow(() -> StreamTransports.close(transport));
    }

    // ----- the data path -----

    record Connected(HostilePeer peer, StreamConnection engine, BlockingStream.Waker waker) {
    }

    Connected connectToEngine(final StreamOptions options) throws Exception {
        final BlockingStream.Waker waker = new BlockingStream.Waker();
        final StreamListener listener = track(transport.listen(new InetSocketAddress(
            InetAddress.getLoopbackAddress(), 0), 4, options, waker));
        final HostilePeer peer = track(HostilePeer.connect(cm, listener.localAddress(),
            HostilePeer.ConnectionDataEditor.NONE));
        peer.awaitEstablished();
        final StreamConnection engine = track(BlockingStream.accept(listener, waker));
        if (!peer.messageMode()) {
            // taken at the reply, the engine grants its second ring half once the peer's RTU arrived: the tests count
            // on both halves being advertised (in message mode the engine waits for the peer's first message)
            peer.await(() -> peer.slotLength(1) != 0, "the engine's grant of its second ring half");
        }
        return new Connected(peer, engine, waker);
    }

    /**
     * A small engine: 16 credits, and a ring of two 4 KiB halves.
     */
    Connected connectToSmallEngine() throws Exception {
        return connectToEngine(new StreamOptions().receiveBufferSize(8192).receiveQueueSize(16));
    }

    /**
     * Read until the engine fails; then check it failed as a refusal does.
     */
    static void assertRefused(final Connected connected, final String message) {
        final StreamConnection engine = connected.engine();
        final SocketException reset = assertThrows(SocketException.class, () -> readUntilFailure(connected),
            engine::describe);
        assertEquals("Connection reset", reset.getMessage(), engine::describe);
        final ProtocolException cause = assertInstanceOf(ProtocolException.class, reset.getCause(), engine::describe);
        assertEquals(message, cause.getMessage(), engine::describe);
        assertEquals(QueuePairState.ERROR, ((RsocketConnection) engine).queuePairState(), engine::describe);
    }

    private static void readUntilFailure(final Connected connected) throws IOException {
        final StreamConnection engine = connected.engine();
        final ByteBuffer buffer = ByteBuffer.allocate(1 << 16);
        final long deadline = System.nanoTime() + REFUSAL_TIMEOUT_NANOS;
        while (System.nanoTime() - deadline < 0) {
            int count = engine.read(buffer.clear());
            if (count == 0) {
                engine.arm();
                count = engine.read(buffer.clear());
                if (count == 0) {
                    connected.waker().waitFor();
                }
            }
            if (count < 0) {
                fail("the engine reached the end of the stream instead of failing: " + engine.describe());
            }
        }
        fail("the engine accepted what it should refuse: " + engine.describe());
    }

    @Test
    void shouldRefuseDataLargerThanTheRegionItLandsIn() throws Exception {
        final Connected connected = connectToSmallEngine();
        final HostilePeer peer = connected.peer();
        // both halves are advertised, so 4097 bytes fit the ring, but no region: a sender never crosses one
        peer.write(ImmediateData.data(4097), peer.slotAddress(), peer.slotKey(), new byte[4097]);
        assertRefused(connected, "the peer wrote across the end of a receive region: receivedBytes=0, length=4097,"
            + " regionEnd=4096");
    }

    @Test
    void shouldRefuseDataBeyondTheSpaceGranted() throws Exception {
        final Connected connected = connectToSmallEngine();
        final HostilePeer peer = connected.peer();
        peer.sendData(new byte[4096]);
        peer.sendData(new byte[4096]);
        // the ring is full and nothing was read: one more byte would overwrite unread data
        peer.write(ImmediateData.data(1), peer.engine().dataBufferAddress(), peer.engine().dataBufferKey(),
            new byte[1]);
        assertRefused(connected, "the peer wrote beyond the receive space granted: receivedBytes=8192, length=1,"
            + " advertisedBytes=8192");
    }

    @Test
    void shouldRefuseMoreMessagesThanTheCreditsGranted() throws Exception {
        final Connected connected = connectToSmallEngine();
        final HostilePeer peer = connected.peer();
        for (int i = 0; i < 16; i++) {
            peer.sendData(new byte[] {(byte) i});
        }
        peer.write(ImmediateData.data(1), peer.slotAddress(), peer.slotKey(), new byte[] {16});
        assertRefused(connected, "the peer sent more messages than the credits granted: received=16,"
            + " creditLimit=16");
    }

    @Test
    void shouldRefuseACreditLimitMovingBackwards() throws Exception {
        final Connected connected = connectToSmallEngine();
        connected.peer().message(ImmediateData.sgl(HostilePeer.CREDITS - 1));
        assertRefused(connected, "credit limit moved backwards: creditLimit=63, currentLimit=64, sent=0");
    }

    @Test
    void shouldRefuseACreditLimitBeyondTheAdvertisedWindow() throws Exception {
        final Connected connected = connectToSmallEngine();
        connected.peer().message(ImmediateData.sgl(HostilePeer.CREDITS + 1));
        assertRefused(connected, "credit limit beyond the peer's receive window: creditLimit=65, sent=0,"
            + " receiveWindow=64");
    }

    @ParameterizedTest(name = "op {0}")
    @ValueSource(ints = {ImmediateData.RSVD_DATA_MORE, ImmediateData.WRITE, ImmediateData.RSVD_DRA_MORE,
        ImmediateData.RSVD})
    void shouldRefuseReservedOps(final int op) throws Exception {
        final Connected connected = connectToSmallEngine();
        final int immediate = ImmediateData.encode(op, 1);
        connected.peer().message(immediate);
        assertRefused(connected, "message op not allowed on the wire: op=" + op + " (" + ImmediateData.opName(op)
            + "), immediate=0x" + Integer.toHexString(immediate));
    }

    @Test
    void shouldRefuseAnUnknownControl() throws Exception {
        final Connected connected = connectToSmallEngine();
        connected.peer().message(ImmediateData.encode(ImmediateData.CTRL, 3));
        assertRefused(connected, "unknown control message: operand=3, immediate=0xe0000003");
    }

    @Test
    void shouldRefuseAMessageWithoutImmediate() throws Exception {
        final Connected connected = connectToSmallEngine();
        connected.peer().plainSend();
        assertRefused(connected, emptySendRefusal());
    }

    @Test
    void shouldTrustNothingThePeerSendsAfterAViolation() throws Exception {
        final Connected connected = connectToSmallEngine();
        final HostilePeer peer = connected.peer();
        peer.message(ImmediateData.encode(ImmediateData.RSVD, 1));
        peer.sendData(new byte[] {42});
        peer.message(ImmediateData.ctrl(ImmediateData.CTRL_SHUTDOWN));
        // all three arrive before the engine looks: neither the byte nor a clean end of stream may hide the failure
        final StreamConnection engine = connected.engine();
        final SocketException reset = assertThrows(SocketException.class, () -> BlockingStream.read(engine,
            ByteBuffer.allocate(16), connected.waker()), engine::describe);
        final ProtocolException cause = assertInstanceOf(ProtocolException.class, reset.getCause(), engine::describe);
        assertEquals("message op not allowed on the wire: op=5 (RSVD), immediate=0xa0000001", cause.getMessage());
        assertEquals(QueuePairState.ERROR, ((RsocketConnection) engine).queuePairState(), engine::describe);
    }

    static Stream<Arguments> impossibleTargetRegions() {
        return Stream.of(
            Arguments.of(0x1000L, -1, "address=0x1000, length=4294967295"),
            Arguments.of(0x1000L, (1 << 30) + 1, "address=0x1000, length=1073741825"),
            Arguments.of(0xFFFF_FFFF_FFFF_FF00L, 0x200, "address=0xffffffffffffff00, length=512"),
            Arguments.of(0x7FFF_FFFF_FFFF_FF00L, 0x200, null));
    }

    @ParameterizedTest(name = "address={0}, length={1}")
    @MethodSource("impossibleTargetRegions")
    void shouldRefuseAnImpossibleTargetRegion(final long address, final int length, final String values)
        throws Exception {
        final Connected connected = connectToSmallEngine();
        connected.peer().writeSge(1, address, 1, length, ImmediateData.sgl(HostilePeer.CREDITS));
        if (values != null) {
            assertRefused(connected, "the peer advertised an impossible target region: " + values);
        } else {
            // crossing 2^63 is no wrap: the region is possible, and the engine takes it
            connected.peer().message(ImmediateData.ctrl(ImmediateData.CTRL_SHUTDOWN));
            assertEquals(-1, BlockingStream.read(connected.engine(), ByteBuffer.allocate(1), connected.waker()),
                connected.engine()::describe);
        }
    }

    // ----- where the engine writes -----

    @Test
    void shouldNeverWriteOutsideTheAdvertisedRegions() throws Exception {
        final Connected connected = connectToEngine(new StreamOptions());
        final HostilePeer peer = connected.peer();
        final StreamConnection engine = connected.engine();
        final int total = 6 << 20;
        final byte[] stream = new byte[total];
        for (int i = 0; i < total; i++) {
            stream[i] = HostilePeer.streamByte(i);
        }
        final CompletableFuture<Void> writer = writeAndShutdown(engine, stream, connected.waker());
        final Random random = new Random(11);
        final ByteBuffer received = ByteBuffer.allocate(total);
        try {
            advertiseRandomRegion(peer, 1, random);
            while (peer.receive(received) >= 0) {
                for (int window = 0; window < 2; window++) {
                    if (peer.isFree(window)) {
                        advertiseRandomRegion(peer, window, random);
                    }
                }
            }
            peer.checkRing();
        } catch (final AssertionError ex) {
            throw new AssertionError(ex.getMessage() + "; engine " + engine.describe(), ex);
        }
        writer.get(30, TimeUnit.SECONDS);
        assertEquals(total, received.position(), engine::describe);
        assertArrayEquals(stream, received.array(), engine::describe);
    }

    /**
     * A region inside a window: the whole window half the time, else a random length at a random offset.
     */
    private static void advertiseRandomRegion(final HostilePeer peer, final int window, final Random random) {
        if (random.nextBoolean()) {
            peer.advertise(window, 0, HostilePeer.WINDOW);
        } else {
            final int length = 1 + random.nextInt(HostilePeer.WINDOW);
            peer.advertise(window, random.nextInt(HostilePeer.WINDOW - length + 1), length);
        }
    }

    /**
     * Write on another thread; {@code waker} must be the connection's observer, which a blocked writer waits on.
     */
    private CompletableFuture<Void> writeAndShutdown(final StreamConnection engine, final byte[] data,
        final BlockingStream.Waker waker) {
        return CompletableFuture.runAsync(() -> {
            try {
                BlockingStream.writeFully(engine, ByteBuffer.wrap(data), waker);
                engine.shutdownOutput();
            } catch (final IOException ex) {
                throw new IllegalStateException(ex);
            }
        }, threads);
    }

    @Test
    @Timeout(value = 30, unit = TimeUnit.SECONDS, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
    void shouldFailAWriteWhosePeerTakesNotWhatItGrantedCreditsFor() throws Exception {
        // the peer grants 200 credits and room for them, but posted 72 receives and never posts more: a message past
        // those waits for a receive for ever (RNR retries are infinite); a write sent straight from the caller's
        // buffer must not wait with it
        final StreamTransport impatient = WithProperty.open(StreamConfiguration.SEND_COMPLETION_TIMEOUT_PROP_NAME,
            "300", this::openTransport);
        try {
            final HostilePeer peer = track(HostilePeer.listen(cm, (data, hostile) -> data
                .header(data.flags(), 200)
                .dataBuffer(data.dataBufferAddress(), data.dataBufferKey(), 3 * HostilePeer.WINDOW)));
            final BlockingStream.Waker waker = new BlockingStream.Waker();
            final StreamConnection engine = track(BlockingStream.connect(impatient.connect(peer.address(), null,
                new StreamOptions(), waker), waker));
            peer.awaitEstablished();
            final ByteBuffer message = ByteBuffer.allocateDirect(100);
            final SocketException reset = assertThrows(SocketException.class, () -> {
                for (int i = 0; i < 120; i++) {
                    BlockingStream.writeFully(engine, message.clear(), waker);
                }
            }, engine::describe);
            assertEquals("Connection reset", reset.getMessage(), engine::describe);
            assertEquals("1 sends from the caller's buffer did not complete within 300 ms; the peer does not take"
                + " what it granted credits for", reset.getCause().getMessage(), engine::describe);
            assertEquals(QueuePairState.ERROR, ((RsocketConnection) engine).queuePairState(), engine::describe);
            assertThrows(SocketException.class, () -> engine.write(message.clear()), engine::describe);
        } finally {
            closeTracked();
            StreamTransports.close(impatient);
        }
    }

    @Test
    @Timeout(value = 30, unit = TimeUnit.SECONDS, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
    void shouldCountWritesStalledForTheirOwnSendQueueApartFromCreditStalls() throws Exception {
        // the peer grants 200 credits and room for 122 messages but posted 72 receives and never posts more: the
        // messages past those stay in flight (RNR retries) and hold the slots of the engine's send queue (16, 4 of
        // them for control messages) while credits and the peer's ring still have room. A write cut short then
        // stalls for the engine's own resources, not for the peer's.
        final int sendQueueSize = StreamConfiguration.QUEUE_PAIR_MIN_SIZE;
        final HostilePeer peer = track(HostilePeer.listen(cm, (data, hostile) -> data
            .header(data.flags(), 200)
            .dataBuffer(data.dataBufferAddress(), data.dataBufferKey(), 3 * HostilePeer.WINDOW)));
        final BlockingStream.Waker waker = new BlockingStream.Waker();
        final StreamConnection engine = track(BlockingStream.connect(transport.connect(peer.address(), null,
            new StreamOptions().sendQueueSize(sendQueueSize), waker), waker));
        peer.awaitEstablished();
        final ByteBuffer message = ByteBuffer.allocate(100);
        int whole = 0;
        while (whole < 200 && engine.write(message.clear()) == message.capacity()) {
            whole++;
        }
        final int sent = whole;
        assertTrue(sent >= 72 && sent <= 72 + sendQueueSize, () -> sent + " whole writes; " + engine.describe());
        final ConnectionStatistics stalled = engine.statistics();
        assertEquals(1, stalled.bufferStalls(), stalled::toString);
        assertEquals(0, stalled.creditStalls(), stalled::toString);
        assertEquals(0, engine.write(message.clear()), engine::describe);
        assertEquals(2, engine.statistics().bufferStalls(), () -> engine.statistics().toString());
        assertEquals(0, engine.statistics().creditStalls(), () -> engine.statistics().toString());
    }

    @Test
    @Timeout(value = 30, unit = TimeUnit.SECONDS, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
    void shouldCloseAtOnceAndReleaseAtTheDeadlineWhenThePeerTakesNotTheDisconnect() throws Exception {
        // the peer posted 72 receives and never posts more: once the engine's messages used them, its DISCONNECT
        // waits for a receive for ever (RNR retries are infinite); close must not wait with it, and the connection
        // is released at rdmachannel.stream.closeLingerMillis
        final StreamTransport brief = WithProperty.open(StreamConfiguration.CLOSE_LINGER_PROP_NAME, "1500",
            this::openTransport);
        try {
            final HostilePeer peer = track(listenTakingNoMoreThan72Messages());
            final long start = System.nanoTime();
            final RsocketConnection engine = closeWithTheDisconnectUndelivered(brief, peer);
            awaitCondition(() -> engine.queuePairState() == null, engine::describe);
            final long releasedNanos = System.nanoTime() - start;
            assertTrue(releasedNanos >= TimeUnit.MILLISECONDS.toNanos(1500), () -> "released after "
                + releasedNanos / 1000 + " us");
            awaitCondition(() -> ((RsocketTransport) brief).lingering() == 0, engine::describe);
        } finally {
            closeTracked();
            StreamTransports.close(brief);
        }
    }

    @Test
    @Timeout(value = 30, unit = TimeUnit.SECONDS, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
    void shouldDeliverTheDisconnectOfAClosedConnectionToAPeerThatTakesItLate() throws Exception {
        // as above, but the peer takes its messages 3 s after the close (a loaded machine, a device retrying lost
        // packets): the closed connection lingers until its DISCONNECT is delivered, behind every message written
        // before it, and is released then; a close that gave up earlier made the peer read a reset
        final HostilePeer peer = track(listenTakingNoMoreThan72Messages());
        final RsocketConnection engine = closeWithTheDisconnectUndelivered(transport, peer);
        Thread.sleep(3000);
        assertNotNull(engine.queuePairState(), () -> "released before its DISCONNECT was delivered; "
            + engine.describe());
        final List<Integer> messages = peer.awaitControl(ImmediateData.CTRL_DISCONNECT);
        assertEquals(101, messages.size(), messages::toString);
        for (int i = 0; i < 100; i++) {
            assertEquals(ImmediateData.DATA, ImmediateData.op(messages.get(i)), messages::toString);
        }
        assertEquals(ImmediateData.ctrl(ImmediateData.CTRL_DISCONNECT), messages.get(100), messages::toString);
        awaitCondition(() -> engine.queuePairState() == null, engine::describe);
        awaitCondition(() -> ((RsocketTransport) transport).lingering() == 0, engine::describe);
    }

    /**
     * A peer that grants 200 credits and room for them but posted 72 receives and posts more only when polled.
     */
    private HostilePeer listenTakingNoMoreThan72Messages() throws IOException {
        return HostilePeer.listen(cm, (data, hostile) -> data
            .header(data.flags(), 200)
            .dataBuffer(data.dataBufferAddress(), data.dataBufferKey(), 3 * HostilePeer.WINDOW));
    }

    /**
     * Connect to {@code peer}, write 100 messages of 100 bytes (28 more than it has receives for) and close: the
     * close returns at once and leaves the connection lingering on the transport's timer, unreleased.
     */
    private static RsocketConnection closeWithTheDisconnectUndelivered(final StreamTransport through,
        final HostilePeer peer) throws Exception {
        final BlockingStream.Waker waker = new BlockingStream.Waker();
        final RsocketConnection engine = (RsocketConnection) BlockingStream.connect(through.connect(peer.address(),
            null, new StreamOptions(), waker), waker);
        peer.awaitEstablished();
        final ByteBuffer message = ByteBuffer.allocate(100);
        int written = 0;
        while (written < 100 && engine.write(message.clear()) == message.capacity()) {
            written++;
        }
        assertEquals(100, written, engine::describe);
        final long start = System.nanoTime();
        engine.close();
        final long closeNanos = System.nanoTime() - start;
        // a close that waited would take the linger (1.5 s or a minute in the callers), a loaded machine less
        assertTrue(closeNanos < TimeUnit.MILLISECONDS.toNanos(1000), () -> "close took " + closeNanos / 1000
            + " us; " + engine.describe());
        assertEquals(1, ((RsocketTransport) through).lingering(), engine::describe);
        assertNotNull(engine.queuePairState(), "released before the deadline; " + engine.describe());
        return engine;
    }

    // ----- the harness itself -----

    @Test
    void shouldExchangeDataBothWaysWithAWellBehavedPeer() throws Exception {
        final HostilePeer peer = track(HostilePeer.listen(cm, HostilePeer.ConnectionDataEditor.NONE));
        final BlockingStream.Waker waker = new BlockingStream.Waker();
        final StreamConnection engine = track(BlockingStream.connect(transport.connect(peer.address(), null,
            new StreamOptions(), waker), waker));
        peer.awaitEstablished();
        final byte[] outbound = new byte[1 << 20];
        new Random(5).nextBytes(outbound);
        final CompletableFuture<byte[]> engineRead = CompletableFuture.supplyAsync(() -> {
            final ByteBuffer buffer = ByteBuffer.allocate(outbound.length);
            try {
                while (buffer.hasRemaining()) {
                    BlockingStream.read(engine, buffer, waker);
                }
            } catch (final IOException ex) {
                throw new IllegalStateException(ex);
            }
            return buffer.array();
        }, threads);
        final byte[] inbound = new byte[300_000];
        for (int i = 0; i < inbound.length; i++) {
            inbound[i] = HostilePeer.streamByte(i);
        }
        final CompletableFuture<Void> engineWrite = writeAndShutdown(engine, inbound, waker);
        peer.sendData(outbound);
        assertArrayEquals(outbound, engineRead.get(30, TimeUnit.SECONDS), engine::describe);
        final ByteBuffer received = ByteBuffer.allocate(inbound.length);
        peer.advertise(1, 0, HostilePeer.WINDOW);
        while (peer.receive(received) >= 0) {
            for (int window = 0; window < 2; window++) {
                if (peer.isFree(window)) {
                    peer.advertise(window, 0, HostilePeer.WINDOW);
                }
            }
        }
        engineWrite.get(30, TimeUnit.SECONDS);
        assertArrayEquals(inbound, received.array(), engine::describe);
        peer.message(ImmediateData.ctrl(ImmediateData.CTRL_SHUTDOWN));
        assertEquals(-1, BlockingStream.read(engine, ByteBuffer.allocate(1), waker), engine::describe);
    }

    static void awaitCondition(final BooleanSupplier condition,
        final Supplier<String> state) {
        final long deadline = System.nanoTime() + REFUSAL_TIMEOUT_NANOS;
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                fail("timed out; " + state.get());
            }
            LockSupport.parkNanos(100_000);
        }
    }
}

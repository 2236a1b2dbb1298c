package io.rdmachannel.nio;

import static java.nio.channels.SelectionKey.OP_ACCEPT;
import static java.nio.channels.SelectionKey.OP_CONNECT;
import static java.nio.channels.SelectionKey.OP_READ;
import static java.nio.channels.SelectionKey.OP_WRITE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.ProtocolFamily;
import java.nio.ByteBuffer;
import java.nio.channels.CancelledKeyException;
import java.nio.channels.ClosedSelectorException;
import java.nio.channels.DatagramChannel;
import java.nio.channels.IllegalBlockingModeException;
import java.nio.channels.IllegalSelectorException;
import java.nio.channels.Pipe;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.channels.spi.AbstractSelectableChannel;
import java.nio.channels.spi.AbstractSelector;
import java.nio.channels.spi.SelectorProvider;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Set;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

@Timeout(20)
class SelectorTest {
    private final ChannelFixture fixture = new ChannelFixture();
    private final Selector selector;

    SelectorTest() throws IOException {
        selector = fixture.provider.openSelector();
    }

    @AfterEach
    void close() throws IOException {
        selector.close();
        fixture.close();
    }

    private SocketChannel[] nonBlockingPair() throws IOException {
        final SocketChannel[] pair = fixture.pair();
        pair[0].configureBlocking(false);
        pair[1].configureBlocking(false);
        return pair;
    }

    private static <T> FutureTask<T> startVirtual(final java.util.concurrent.Callable<T> task) {
        final FutureTask<T> future = new FutureTask<>(task);
        Thread.ofVirtual().start(future);
        return future;
    }

    @Test
    void shouldNotAllocatePerSelection() throws IOException {
        final SocketChannel[] pair = nonBlockingPair();
        pair[1].register(selector, OP_READ);

        SelectionAllocation.assertNoAllocation(selector, pair[0]);
    }

    /**
     * A busy-polling selection that returns because one key is ready (and stays ready: its data is never read)
     * leaves the keys it found not ready unarmed; it must look at them again, or they are never reported.
     */
    @Test
    void shouldNotStarveAKeyWhileAnotherStaysReadyUnderBusyPolling() throws Exception {
        final SocketChannel[] always = nonBlockingPair();
        final SocketChannel[] later = nonBlockingPair();
        always[0].setOption(RdmaSocketOptions.RDMA_BUSY_POLL, 50);
        later[0].setOption(RdmaSocketOptions.RDMA_BUSY_POLL, 50);
        final SelectionKey alwaysKey = always[0].register(selector, OP_READ);
        final SelectionKey laterKey = later[0].register(selector, OP_READ);
        always[1].write(ByteBuffer.wrap(new byte[] {1}));
        selectUntilSelected(alwaysKey);

        later[1].write(ByteBuffer.wrap(new byte[] {2}));

        selectUntilSelected(laterKey);
    }

    private void selectUntilSelected(final SelectionKey key) {
        ChannelFixture.await(key + " to be selected", () -> {
            try {
                selector.select(100);
            } catch (final IOException ex) {
                throw new java.io.UncheckedIOException(ex);
            }
            return selector.selectedKeys().contains(key);
        });
    }

    /**
     * A selector with more RDMA keys than it busy-polls does not spin over them: the idle ones are looked at and
     * armed when registered, and not again at each selection of the one busy connection, although every channel asks
     * for busy polling (before, each selection polled every key while it spun and armed every one afterwards, so a
     * server with thousands of idle connections spent its time there).
     */
    @Test
    void shouldLeaveIdleKeysAloneWhenTooManyToBusyPoll() throws Exception {
        final int idle = RdmaSelector.MAX_SPIN_KEYS + 1;
        for (int i = 0; i < idle; i++) {
            final SocketChannel[] pair = nonBlockingPair();
            pair[0].setOption(RdmaSocketOptions.RDMA_BUSY_POLL, 100);
            pair[0].register(selector, OP_READ);
        }
        final SocketChannel[] busy = nonBlockingPair();
        busy[0].setOption(RdmaSocketOptions.RDMA_BUSY_POLL, 100);
        final SelectionKey busyKey = busy[0].register(selector, OP_READ);
        final List<FakeConnection> idleConnections = List.copyOf(fixture.transport.connections.subList(0, 2 * idle));
        assertEquals(0, selector.selectNow());
        final int checksBefore = idleConnections.stream().mapToInt(c -> c.readyChecks.get()).sum();
        final int armsBefore = fixture.transport.arms.get();
        final ByteBuffer buffer = ByteBuffer.allocate(1);

        for (int i = 0; i < 20; i++) {
            busy[1].write(ByteBuffer.wrap(new byte[] {(byte) i}));
            assertEquals(1, selector.select(10_000));
            assertEquals(Set.of(busyKey), selector.selectedKeys());
            selector.selectedKeys().clear();
            buffer.clear();
            assertEquals(1, busy[0].read(buffer));
        }

        assertEquals(checksBefore, idleConnections.stream().mapToInt(c -> c.readyChecks.get()).sum(),
            "the selections looked at idle keys again");
        assertTrue(fixture.transport.arms.get() - armsBefore <= 2 * 20,
            "the selections armed more than the busy key: " + (fixture.transport.arms.get() - armsBefore));
    }

    /**
     * A busy-polling selection that finds a key ready while it spins carries the keys it checked but did not arm over
     * to the next selection, once each: a quiet key must not pile up in what the next selection checks (before, each
     * such selection added it once more, so a selector's work grew with every message).
     */
    @Test
    void shouldCarryAnUnarmedKeyOverOnce() throws Exception {
        final SocketChannel[] quiet = nonBlockingPair();
        final SocketChannel[] busy = nonBlockingPair();
        quiet[0].setOption(RdmaSocketOptions.RDMA_BUSY_POLL, 30_000_000);
        busy[0].setOption(RdmaSocketOptions.RDMA_BUSY_POLL, 30_000_000);
        quiet[0].register(selector, OP_READ);
        final SelectionKey busyKey = busy[0].register(selector, OP_READ);
        final FakeConnection busyConnection = fixture.transport.connections.get(2);
        final ByteBuffer buffer = ByteBuffer.allocate(1);

        for (int i = 0; i < 50; i++) {
            final byte value = (byte) i;
            // written while the selection spins: found by its poll of every key, not by the first look
            final FutureTask<Integer> writer = startVirtual(() -> {
                busyConnection.awaitReadyChecks(3);
                return busy[1].write(ByteBuffer.wrap(new byte[] {value}));
            });
            assertEquals(1, selector.select(10_000));
            assertEquals(Set.of(busyKey), selector.selectedKeys());
            assertEquals(1, writer.get(10, TimeUnit.SECONDS));
            selector.selectedKeys().clear();
            buffer.clear();
            assertEquals(1, busy[0].read(buffer));
        }

        // each key at most once as found ready and once as carried
        assertTrue(((RdmaSelector) selector).carriedKeys() <= 4,
            "keys carried over: " + ((RdmaSelector) selector).carriedKeys());
    }

    @Test
    void shouldBusyPollASelectionWithoutArming() throws Exception {
        final SocketChannel[] pair = nonBlockingPair();
        pair[1].setOption(RdmaSocketOptions.RDMA_BUSY_POLL, 30_000_000);
        pair[1].register(selector, OP_READ);
        final int armsBefore = fixture.transport.arms.get();
        final FutureTask<Integer> selection = startVirtual(() -> selector.select(10_000));
        fixture.transport.connections.get(1).awaitReadyChecks(10_000);

        pair[0].write(ByteBuffer.wrap(new byte[] {1}));

        assertEquals(1, selection.get(10, TimeUnit.SECONDS));
        assertEquals(armsBefore, fixture.transport.arms.get(), "the spinning selection armed a key");
        assertEquals(OP_READ, selector.selectedKeys().iterator().next().readyOps());
    }

    @Test
    void shouldEndABusyPolledSelectionOnWakeup() throws Exception {
        final SocketChannel[] pair = nonBlockingPair();
        pair[1].setOption(RdmaSocketOptions.RDMA_BUSY_POLL, 30_000_000);
        pair[1].register(selector, OP_READ);
        final FutureTask<Integer> selection = startVirtual(() -> selector.select());
        fixture.transport.connections.get(1).awaitReadyChecks(10_000);

        selector.wakeup();

        assertEquals(0, selection.get(10, TimeUnit.SECONDS));
    }

    @Test
    void shouldArmAndParkWhenTheBusyPollRunsOut() throws Exception {
        final SocketChannel[] pair = nonBlockingPair();
        pair[1].setOption(RdmaSocketOptions.RDMA_BUSY_POLL, 1000);
        pair[1].register(selector, OP_READ);
        final int armsBefore = fixture.transport.arms.get();
        final FutureTask<Integer> selection = startVirtual(() -> selector.select(10_000));
        while (fixture.transport.arms.get() == armsBefore) {
            Thread.onSpinWait();
        }

        pair[0].write(ByteBuffer.wrap(new byte[] {1}));

        assertEquals(1, selection.get(10, TimeUnit.SECONDS));
    }

    @Test
    void shouldRefuseBadRegistrations() throws IOException {
        final RdmaSocketChannel channel = fixture.socket();

        assertThrows(IllegalBlockingModeException.class, () -> channel.register(selector, OP_READ));
        channel.configureBlocking(false);
        assertThrows(IllegalArgumentException.class, () -> channel.register(selector, OP_ACCEPT));
        try (ForeignChannel foreign = new ForeignChannel()) {
            foreign.configureBlocking(false);
            assertThrows(IllegalSelectorException.class, () -> foreign.register(selector, OP_READ));
        }
        final SelectionKey key = channel.register(selector, OP_READ);
        assertThrows(IllegalBlockingModeException.class, () -> channel.configureBlocking(true));
        assertSame(key, channel.keyFor(selector));
        assertSame(key, channel.register(selector, OP_WRITE, "again"));
        assertEquals(OP_WRITE, key.interestOps());
        assertEquals("again", key.attachment());
        selector.close();
        final RdmaSocketChannel other = fixture.socket();
        other.configureBlocking(false);
        assertThrows(ClosedSelectorException.class, () -> other.register(selector, OP_READ));
        assertThrows(ClosedSelectorException.class, selector::keys);
        assertThrows(ClosedSelectorException.class, selector::selectedKeys);
        assertThrows(ClosedSelectorException.class, selector::selectNow);
        assertFalse(key.isValid());
        selector.wakeup();
    }

    @Test
    void shouldExposeUnmodifiableKeysAndUngrowableSelectedKeys() throws IOException {
        final SocketChannel[] pair = nonBlockingPair();
        final SelectionKey key = pair[0].register(selector, OP_WRITE);

        assertThrows(UnsupportedOperationException.class, () -> selector.keys().remove(key));
        assertEquals(1, selector.selectNow());
        assertThrows(UnsupportedOperationException.class, () -> selector.selectedKeys().add(key));
        assertTrue(selector.selectedKeys().remove(key));
        assertTrue(selector.selectedKeys().isEmpty());
    }

    @Test
    void shouldSelectAcceptConnectReadAndWrite() throws Exception {
        final RdmaServerSocketChannel server = fixture.listening();
        server.configureBlocking(false);
        final SelectionKey acceptKey = server.register(selector, OP_ACCEPT);
        final RdmaSocketChannel client = fixture.socket();
        client.configureBlocking(false);
        final SelectionKey connectKey = client.register(selector, OP_CONNECT);
        fixture.transport.unanswered.add(fixture.serverAddress().getPort());

        assertFalse(client.connect(fixture.serverAddress()));
        assertEquals(0, selector.selectNow());
        fixture.transport.release();
        ChannelFixture.await("both keys", () -> {
            try {
                selector.select(100);
            } catch (final IOException ex) {
                throw new AssertionError(ex);
            }
            return selector.selectedKeys().size() == 2;
        });
        assertEquals(OP_ACCEPT, acceptKey.readyOps());
        assertEquals(OP_CONNECT, connectKey.readyOps());
        assertTrue(client.finishConnect());
        final SocketChannel accepted = fixture.track(server.accept());
        accepted.configureBlocking(false);
        selector.selectedKeys().clear();
        connectKey.interestOps(OP_READ | OP_WRITE);

        assertEquals(1, selector.select(5_000));
        assertEquals(OP_WRITE, connectKey.readyOps());
        selector.selectedKeys().clear();
        connectKey.interestOps(OP_READ);
        accepted.write(ByteBuffer.wrap(new byte[] {5}));
        assertEquals(1, selector.select(5_000));
        assertEquals(OP_READ, connectKey.readyOps());
    }

    @Test
    void shouldNotReportConnectAfterFinishConnect() throws Exception {
        fixture.listening();
        final RdmaSocketChannel client = fixture.socket();
        client.configureBlocking(false);
        final SelectionKey key = client.register(selector, OP_CONNECT);
        fixture.transport.unanswered.add(fixture.serverAddress().getPort());
        assertFalse(client.connect(fixture.serverAddress()));
        fixture.transport.release();
        assertEquals(1, selector.select(5_000));
        assertTrue(client.finishConnect());
        selector.selectedKeys().clear();

        assertEquals(0, selector.selectNow());
        assertTrue(selector.selectedKeys().isEmpty());
        assertEquals(0, key.readyOps());
    }

    @Test
    void shouldReportAFailedConnectAsConnectable() throws Exception {
        final RdmaSocketChannel client = fixture.socket();
        client.configureBlocking(false);
        final SelectionKey key = client.register(selector, OP_CONNECT);
        fixture.transport.unanswered.add(9);

        assertFalse(client.connect(new java.net.InetSocketAddress(java.net.InetAddress.getLoopbackAddress(), 9)));
        fixture.transport.release();

        assertEquals(1, selector.select(5_000));
        assertEquals(OP_CONNECT, key.readyOps());
        assertThrows(java.net.ConnectException.class, client::finishConnect);
    }

    @Test
    void shouldReplaceTheReadySetOfANewKeyAndOrIntoASelectedOne() throws IOException {
        final SocketChannel[] pair = nonBlockingPair();
        final SelectionKey key = pair[0].register(selector, OP_WRITE);
        assertEquals(1, selector.selectNow());
        assertEquals(OP_WRITE, key.readyOps());

        assertEquals(0, selector.selectNow());

        pair[1].write(ByteBuffer.wrap(new byte[] {1}));
        key.interestOps(OP_READ | OP_WRITE);
        assertEquals(1, selector.selectNow());
        assertEquals(OP_READ | OP_WRITE, key.readyOps());
        selector.selectedKeys().clear();
        key.interestOps(OP_READ);
        assertEquals(1, selector.selectNow());
        assertEquals(OP_READ, key.readyOps());
    }

    @Test
    void shouldUpdateNothingWhenNoKeyHasInterest() throws IOException {
        final SocketChannel[] pair = nonBlockingPair();
        final SelectionKey key = pair[0].register(selector, 0);
        pair[1].write(ByteBuffer.wrap(new byte[] {1}));

        assertEquals(0, selector.select(50));
        assertEquals(0, key.readyOps());
    }

    @Test
    void shouldNotSpinOnIdleOrHungUpKeys() throws IOException {
        final SocketChannel[] pair = nonBlockingPair();
        // no busy poll: a selection that spins arms its keys once when the spin runs out
        pair[0].setOption(RdmaSocketOptions.RDMA_BUSY_POLL, 0);
        pair[0].register(selector, OP_READ);
        final SocketChannel[] hungUp = nonBlockingPair();
        hungUp[0].register(selector, 0);
        hungUp[1].close();
        selector.selectNow();
        final int arms = fixture.transport.arms.get();

        assertEquals(0, selector.select(200));

        assertEquals(arms, fixture.transport.arms.get());
    }

    @Test
    void shouldMakeTheNextSelectReturnAfterOneOrManyWakeups() throws IOException {
        selector.wakeup();
        selector.wakeup();

        assertEquals(0, selector.select());
        assertEquals(0, selector.select(50));
        selector.wakeup();
        assertEquals(0, selector.selectNow());
        assertEquals(0, selector.select(50));
    }

    @ParameterizedTest
    @ValueSource(booleans = {false, true})
    void shouldWakeABlockedSelect(final boolean close) throws Exception {
        final FutureTask<Integer> select = new FutureTask<>(selector::select);
        ChannelFixture.awaitBlocked(Thread.ofVirtual().start(select));

        if (close) {
            selector.close();
        } else {
            selector.wakeup();
        }

        assertEquals(0, select.get(5, TimeUnit.SECONDS));
        assertEquals(!close, selector.isOpen());
    }

    @Test
    void shouldReturnAtOnceWhenInterruptedTenThousandTimesOnAVirtualThread() throws Exception {
        final FutureTask<Integer> loop = startVirtual(() -> {
            int interrupted = 0;
            for (int i = 0; i < 10_000; i++) {
                Thread.currentThread().interrupt();
                selector.select();
                if (Thread.interrupted()) {
                    interrupted++;
                }
            }
            return interrupted;
        });

        assertEquals(10_000, loop.get(15, TimeUnit.SECONDS));
        assertTrue(selector.isOpen());
    }

    @ParameterizedTest
    @ValueSource(booleans = {false, true})
    void shouldReturnWhenABlockedSelectIsInterrupted(final boolean virtual) throws Exception {
        for (int i = 0; i < 200; i++) {
            final FutureTask<Boolean> select = new FutureTask<>(() -> {
                selector.select();
                return Thread.currentThread().isInterrupted();
            });
            final Thread thread = virtual ? Thread.ofVirtual().start(select) : Thread.ofPlatform().start(select);
            ChannelFixture.awaitBlocked(thread);

            thread.interrupt();

            assertTrue(select.get(5, TimeUnit.SECONDS));
            // the JDK wakes the selector after the interrupt is delivered (Interruptible.postInterrupt), possibly
            // after the select returned; as with the JDK's selectors that wakeup then stays pending
            selector.selectNow();
        }
        assertTrue(selector.isOpen());
    }

    @Test
    void shouldRefuseReentrantSelectAndCloseInTheAction() throws IOException {
        final SocketChannel[] pair = nonBlockingPair();
        pair[0].register(selector, OP_WRITE);

        assertEquals("select in progress", assertThrows(IllegalStateException.class,
            () -> selector.selectNow(key -> {
                try {
                    selector.selectNow();
                } catch (final IOException ex) {
                    throw new AssertionError(ex);
                }
            })).getMessage());
        assertThrows(NullPointerException.class, () -> selector.select(null, 1));
        assertThrows(IllegalArgumentException.class, () -> selector.select(key -> { }, -1));
        assertThrows(IllegalArgumentException.class, () -> selector.select(-1));
        assertThrows(ClosedSelectorException.class, () -> selector.selectNow(key -> {
            try {
                selector.close();
            } catch (final IOException ex) {
                throw new AssertionError(ex);
            }
        }));
    }

    @Test
    void shouldRunTheActionWithoutTouchingTheSelectedSet() throws IOException {
        final SocketChannel[] pair = nonBlockingPair();
        final SelectionKey key = pair[0].register(selector, OP_WRITE);
        final List<SelectionKey> seen = new ArrayList<>();

        assertEquals(1, selector.selectNow(seen::add));

        assertEquals(List.of(key), seen);
        assertTrue(selector.selectedKeys().isEmpty());
        assertEquals(OP_WRITE, key.readyOps());
    }

    @Test
    void shouldChangeInterestWithoutBlockingWhileAnotherThreadSelects() throws Exception {
        final SocketChannel[] pair = nonBlockingPair();
        final SelectionKey key = pair[0].register(selector, 0);
        final FutureTask<Integer> select = startVirtual(() -> selector.select());
        pair[1].write(ByteBuffer.wrap(new byte[] {1}));
        ChannelFixture.await("nothing selected yet", () -> !select.isDone());

        key.interestOps(OP_READ);

        assertEquals(1, select.get(5, TimeUnit.SECONDS));
        assertEquals(OP_READ, key.readyOps());
        assertEquals(OP_READ, key.interestOpsAnd(~0 & ~OP_WRITE | 0x4000_0000));
        assertThrows(IllegalArgumentException.class, () -> key.interestOpsOr(OP_ACCEPT));
    }

    @Test
    void shouldRegisterWithoutBlockingWhileAnotherThreadSelects() throws Exception {
        final FutureTask<Integer> select = startVirtual(() -> selector.select());
        final SocketChannel[] pair = nonBlockingPair();

        pair[0].register(selector, OP_WRITE);

        assertEquals(1, select.get(5, TimeUnit.SECONDS));
    }

    @Test
    void shouldDeregisterCancelledKeysAtTheNextSelection() throws IOException {
        final SocketChannel[] pair = nonBlockingPair();
        final SelectionKey key = pair[0].register(selector, OP_WRITE);
        selector.selectNow();

        key.cancel();

        assertThrows(CancelledKeyException.class, key::interestOps);
        assertThrows(CancelledKeyException.class, key::readyOps);
        assertThrows(CancelledKeyException.class, () -> key.interestOps(OP_READ));
        assertTrue(pair[0].isRegistered());
        assertEquals(0, selector.selectNow());
        assertFalse(pair[0].isRegistered());
        assertTrue(selector.keys().isEmpty());
        assertTrue(selector.selectedKeys().isEmpty());
        assertNull(pair[0].keyFor(selector));
    }

    @Test
    void shouldDeferTheCloseOfARegisteredChannelButLetThePeerSeeEndOfStream() throws IOException {
        final SocketChannel[] pair = fixture.pair();
        pair[0].configureBlocking(false);
        pair[0].register(selector, OP_READ);
        final FakeConnection client = fixture.transport.connections.get(0);

        pair[0].close();

        assertTrue(pair[0].isRegistered());
        assertFalse(client.isReleased());
        assertEquals(-1, pair[1].read(ByteBuffer.allocate(1)));
        selector.selectNow();
        assertFalse(pair[0].isRegistered());
        assertTrue(client.isReleased());
        assertFalse(client.isAborted());
    }

    @Test
    void shouldWaitForEverySelectorBeforeReleasing() throws IOException {
        final SocketChannel[] pair = nonBlockingPair();
        try (Selector second = fixture.provider.openSelector()) {
            pair[0].register(selector, OP_READ);
            pair[0].register(second, OP_READ);
            final FakeConnection client = fixture.transport.connections.get(0);

            pair[0].close();
            selector.selectNow();

            assertFalse(client.isReleased());
            second.selectNow();
            assertTrue(client.isReleased());
        }
    }

    @Test
    void shouldServeTwoHundredChannelsThroughOneSelector() throws Exception {
        final RdmaServerSocketChannel server = fixture.server();
        server.bind(new java.net.InetSocketAddress(java.net.InetAddress.getLoopbackAddress(), 0), 256);
        server.configureBlocking(false);
        server.register(selector, OP_ACCEPT);
        final int clients = 200;
        final AtomicInteger echoed = new AtomicInteger();
        final FutureTask<Integer> loop = startVirtual(() -> serve(clients, echoed));
        final List<SocketChannel> connected = new ArrayList<>();
        for (int i = 0; i < clients; i++) {
            final RdmaSocketChannel client = fixture.socket();
            client.connect(server.getLocalAddress());
            connected.add(client);
        }
        for (int i = 0; i < clients; i++) {
            connected.get(i).write(ByteBuffer.wrap(new byte[] {(byte) i}));
        }
        for (int i = 0; i < clients; i++) {
            final ByteBuffer reply = ByteBuffer.allocate(1);
            assertEquals(1, connected.get(i).read(reply));
            assertEquals((byte) i, reply.get(0));
        }

        assertEquals(clients, loop.get(15, TimeUnit.SECONDS));
        assertEquals(clients + 1, selector.keys().size());
    }

    private int serve(final int clients, final AtomicInteger echoed) throws IOException {
        final ByteBuffer buffer = ByteBuffer.allocate(16);
        while (echoed.get() < clients) {
            selector.select();
            for (final Iterator<SelectionKey> it = selector.selectedKeys().iterator(); it.hasNext(); ) {
                final SelectionKey key = it.next();
                it.remove();
                if (key.isAcceptable()) {
                    SocketChannel accepted;
                    while ((accepted = ((RdmaServerSocketChannel) key.channel()).accept()) != null) {
                        fixture.track(accepted).configureBlocking(false);
                        accepted.register(selector, OP_READ);
                    }
                } else if (key.isReadable()) {
                    final SocketChannel channel = (SocketChannel) key.channel();
                    buffer.clear();
                    if (channel.read(buffer) > 0) {
                        buffer.flip();
                        channel.write(buffer);
                        echoed.incrementAndGet();
                    }
                }
            }
        }
        return echoed.get();
    }

    /**
     * A selectable channel of a provider that is neither rdmachannel's nor the platform's.
     */
    private static final class ForeignChannel extends AbstractSelectableChannel {
        ForeignChannel() {
            super(new ForeignProvider());
        }

        @Override
        protected void implCloseSelectableChannel() {
        }

        @Override
        protected void implConfigureBlocking(final boolean block) {
        }

        @Override
        public int validOps() {
            return OP_READ;
        }
    }

    private static final class ForeignProvider extends SelectorProvider {
        @Override
        public DatagramChannel openDatagramChannel() {
            throw new UnsupportedOperationException();
        }

        @Override
        public DatagramChannel openDatagramChannel(final ProtocolFamily family) {
            throw new UnsupportedOperationException();
        }

        @Override
        public Pipe openPipe() {
            throw new UnsupportedOperationException();
        }

        @Override
        public AbstractSelector openSelector() {
            throw new UnsupportedOperationException();
        }

        @Override
        public ServerSocketChannel openServerSocketChannel() {
            throw new UnsupportedOperationException();
        }

        @Override
        public SocketChannel openSocketChannel() {
            throw new UnsupportedOperationException();
        }
    }
}

package io.rdmachannel.channel.cm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmachannel.channel.cm.oob.OobConnectionManager;
import io.rdmachannel.channel.spi.AccessFlags;
import io.rdmachannel.channel.spi.CompletionQueue;
import io.rdmachannel.channel.spi.CompletionStatus;
import io.rdmachannel.channel.spi.MemoryRegion;
import io.rdmachannel.channel.spi.ProtectionDomain;
import io.rdmachannel.channel.spi.QueuePair;
import io.rdmachannel.channel.spi.QueuePairAttributes;
import io.rdmachannel.channel.spi.QueuePairInitAttributes;
import io.rdmachannel.channel.spi.QueuePairState;
import io.rdmachannel.channel.spi.RdmaDevice;
import io.rdmachannel.channel.spi.RdmaProvider;
import io.rdmachannel.channel.spi.RdmaProviders;
import io.rdmachannel.channel.spi.SendFlags;
import io.rdmachannel.channel.spi.SendWorkRequest;
import io.rdmachannel.channel.spi.WorkCompletion;
import io.rdmachannel.channel.spi.WorkRequestOpcode;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A connection whose endpoint makes and moves its own queue pairs (the XRC mode's need: a shared initiator, an
 * offered target), through the shm and oob connection managers: the CM creates none, carries the number the endpoint
 * advertises, hands the endpoint the way to the peer, and on the active side lets the endpoint take the connection
 * before the listener hears that the handshake is over. A refusal there ends both sides' attempts.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class OwnQueuePairHandshakeTest {
    private static final int ADVERTISED = 0xABCDE;
    private static final int MESSAGE = 8;

    private final List<AutoCloseable> opened = new ArrayList<>();
    private final AtomicInteger clock = new AtomicInteger();
    private final LinkedBlockingQueue<OwnEndpoint> accepted = new LinkedBlockingQueue<>();

    @AfterEach
    void close() throws Exception {
        for (int i = opened.size() - 1; i >= 0; i--) {
            opened.get(i).close();
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"shm", "oob"})
    void shouldConnectQueuePairsTheEndpointsMadeThemselves(final String name) throws Exception {
        final ConnectionManager server = open(name);
        final ConnectionManager client = open(name);
        assertTrue(server.supportsOwnQueuePairs());
        final CmListener listener = listen(server);
        final OwnEndpoint active = new OwnEndpoint("active", null);
        final CmConnection attempt = client.connect(listener.localAddress(), null, active);
        active.outcome.get(10, TimeUnit.SECONDS);
        final OwnEndpoint passive = accepted.poll(10, TimeUnit.SECONDS);
        passive.outcome.get(10, TimeUnit.SECONDS);

        assertEquals(List.of("prepare", "bind(no queue pair)", "peerKnown", "established"), active.calls);
        assertEquals(List.of("prepare(request of 4 bytes)", "peerKnown", "bind(no queue pair)", "established"),
            passive.calls);
        assertTrue(active.establishedAt < passive.establishedAt,
            "the listener took the connection before the connector had: " + active.establishedAt + " against "
                + passive.establishedAt);
        // the queue pairs the endpoints moved through the CM's paths carry messages both ways
        active.send(0x1122334455667788L);
        assertEquals(0x1122334455667788L, passive.receive());
        passive.send(0x0102030405060708L);
        assertEquals(0x0102030405060708L, active.receive());
        attempt.close();
        active.release();
        passive.release();
        listener.close();
    }

    @ParameterizedTest
    @ValueSource(strings = {"shm", "oob"})
    void shouldEndBothAttemptsWhenTheConnectorRefusesBeforeTheListenerHeardTheEnd(final String name)
        throws Exception {
        final ConnectionManager server = open(name);
        final ConnectionManager client = open(name);
        final CmListener listener = listen(server);
        final IOException refusal = new IOException("the connector's target could not be moved");
        final OwnEndpoint active = new OwnEndpoint("active", refusal);
        client.connect(listener.localAddress(), null, active);
        final ExecutionException failed = assertThrows(ExecutionException.class,
            () -> active.outcome.get(10, TimeUnit.SECONDS));
        assertEquals(refusal, failed.getCause());
        final OwnEndpoint passive = accepted.poll(10, TimeUnit.SECONDS);
        final ExecutionException passiveFailed = assertThrows(ExecutionException.class,
            () -> passive.outcome.get(10, TimeUnit.SECONDS));
        assertEquals("shm".equals(name) ? "shm connection handshake failed: the peer closed the handshake socket"
            : "the peer closed the oob handshake socket", passiveFailed.getCause().getMessage());
        assertEquals(List.of("prepare(request of 4 bytes)", "peerKnown", "bind(no queue pair)", "failed"),
            passive.calls);
        assertFalse(passive.calls.contains("established"));
        assertEquals(0, passive.openQueuePairs, "the refused attempt's queue pair is still open");
        listener.close();
    }

    /**
     * The handshake socket (shm) or side channel (oob) stays as the connection's lifeline: when one side closes its
     * path (it released the connection; a process that dies closes it too), the other hears that its peer is gone,
     * and the side that closed hears nothing.
     */
    @ParameterizedTest
    @ValueSource(strings = {"shm", "oob"})
    void shouldTellEachSideWhenTheOtherLetGoOfTheLifeline(final String name) throws Exception {
        final ConnectionManager server = open(name);
        final ConnectionManager client = open(name);
        final CmListener listener = listen(server);
        final String closed = "shm".equals(name) ? "the peer closed the connection's lifeline"
            : "the peer closed the oob side channel";
        for (final boolean listenerLetsGo : new boolean[] {true, false}) {
            final OwnEndpoint active = new OwnEndpoint("active", null);
            client.connect(listener.localAddress(), null, active);
            active.outcome.get(10, TimeUnit.SECONDS);
            final OwnEndpoint passive = accepted.poll(10, TimeUnit.SECONDS);
            passive.outcome.get(10, TimeUnit.SECONDS);
            final OwnEndpoint leaving = listenerLetsGo ? passive : active;
            final OwnEndpoint staying = listenerLetsGo ? active : passive;
            assertFalse(staying.gone.isDone(), "the peer was gone before it let go");
            leaving.release();
            assertEquals(closed, staying.gone.get(10, TimeUnit.SECONDS).getMessage());
            staying.release();
            Thread.sleep(100);
            assertFalse(leaving.gone.isDone(), "the side that let go heard of its own end: " + leaving.calls);
        }
        listener.close();
    }

    @Test
    void shouldCheckTheSetupsForms() {
        final CmEndpoint.QueuePairSetup own = CmEndpoint.QueuePairSetup.ownQueuePairs(ADVERTISED, 7, 7);
        assertFalse(own.createsQueuePair());
        assertNull(own.protectionDomain());
        assertEquals(ADVERTISED, own.advertisedQueuePairNumber());
        assertEquals("an endpoint's own queue pairs need no protection domain here and a queue pair number of 24 "
            + "bits to advertise, not 16777216", assertThrows(IllegalArgumentException.class,
                () -> CmEndpoint.QueuePairSetup.ownQueuePairs(1 << 24, 7, 7)).getMessage());
        assertThrows(IllegalArgumentException.class, () -> CmEndpoint.QueuePairSetup.ownQueuePairs(-1, 7, 7));
        assertEquals("retry counts are 0 to 7: retryCount=8, rnrRetryCount=7", assertThrows(
            IllegalArgumentException.class, () -> CmEndpoint.QueuePairSetup.ownQueuePairs(1, 8, 7)).getMessage());
        assertEquals("a queue pair the CM creates needs its attributes", assertThrows(IllegalArgumentException.class,
            () -> new CmEndpoint.QueuePairSetup(null, null, 0, 7, 7)).getMessage());
        assertEquals("a queue pair the CM creates needs a protection domain and advertises its own number",
            assertThrows(IllegalArgumentException.class, () -> new CmEndpoint.QueuePairSetup(null,
                new QueuePairInitAttributes(), 0, 7, 7)).getMessage());
        assertFalse(new ConnectionManager() {
            @Override
            public String name() {
                return "plain";
            }

            @Override
            public CmListener listen(final SocketAddress local, final int backlog,
                final ConnectionRequestFilter filter, final CmEndpointFactory factory) {
                throw new UnsupportedOperationException();
            }

            @Override
            public CmConnection connect(final SocketAddress remote, final SocketAddress local,
                final CmEndpoint endpoint) {
                throw new UnsupportedOperationException();
            }

            @Override
            public void close() {
            }
        }.supportsOwnQueuePairs(), "a CM allows endpoints' own queue pairs only if it says so");
    }

    private ConnectionManager open(final String name) throws IOException {
        final RdmaProvider shm = RdmaProviders.byName("shm");
        final ConnectionManager manager = "shm".equals(name) ? shm.openConnectionManager(null)
            : new OobConnectionManager(shm);
        opened.add(manager);
        return manager;
    }

    private CmListener listen(final ConnectionManager manager) throws IOException {
        final CmListener listener = manager.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 8,
            ConnectionRequestFilter.ACCEPT_ALL, remote -> {
                final OwnEndpoint endpoint = new OwnEndpoint("passive", null);
                accepted.add(endpoint);
                return endpoint;
            });
        opened.add(listener::close);
        return listener;
    }

    private record Seen(CompletionStatus status, int byteLength) {
        static Seen of(final WorkCompletion completion) {
            return new Seen(completion.status(), completion.byteLength());
        }
    }

    /**
     * An endpoint with an RC queue pair of its own, in INIT before the CM hears of it; the private data carries its
     * number, and it moves it through the CM's path: the passive side in bind, the active side when established.
     */
    private final class OwnEndpoint implements CmEndpoint {
        final CompletableFuture<Void> outcome = new CompletableFuture<>();
        final CompletableFuture<IOException> gone = new CompletableFuture<>();
        final List<String> calls = Collections.synchronizedList(new ArrayList<>());
        private final String side;
        private final IOException refuseEstablished;
        private ProtectionDomain domain;
        private CompletionQueue queue;
        private MemoryRegion region;
        private QueuePair own;
        private PeerPath path;
        volatile int establishedAt = -1;
        volatile int openQueuePairs = -1;

        OwnEndpoint(final String side, final IOException refuseEstablished) {
            this.side = side;
            this.refuseEstablished = refuseEstablished;
        }

        @Override
        public QueuePairSetup prepare(final RdmaDevice device) throws IOException {
            calls.add("prepare");
            return makeOwn(device);
        }

        @Override
        public QueuePairSetup prepare(final RdmaDevice device, final ByteBuffer requestPrivateData)
            throws IOException {
            // a listener chooses its form from the request (the XRC mode: a plain request gets the CM's queue pair)
            calls.add("prepare(request of " + requestPrivateData.remaining() + " bytes)");
            return makeOwn(device);
        }

        private QueuePairSetup makeOwn(final RdmaDevice device) throws IOException {
            domain = device.allocateProtectionDomain();
            queue = device.createCompletionQueue(16, null, 0);
            region = domain.allocate(4096, AccessFlags.LOCAL_WRITE);
            own = domain.createQueuePair(new QueuePairInitAttributes().sendCompletionQueue(queue)
                .receiveCompletionQueue(queue).maxSendWorkRequests(4).maxReceiveWorkRequests(4));
            own.modify(QueuePairState.INIT, new QueuePairAttributes().accessFlags(AccessFlags.LOCAL_WRITE));
            return QueuePairSetup.ownQueuePairs(ADVERTISED, 6, 6);
        }

        @Override
        public void peerKnown(final PeerPath peer) {
            calls.add("peerKnown");
            this.path = peer;
        }

        @Override
        public ByteBuffer bind(final QueuePair queuePair, final ByteBuffer peerPrivateData) throws IOException {
            calls.add(queuePair == null ? "bind(no queue pair)" : "bind(" + queuePair + ")");
            own.postReceive(own.createReceiveWorkRequest().id(1).sgeCount(1).sge(0, region.address() + 2048,
                MESSAGE, region.localKey()));
            if (peerPrivateData != null) {
                moveToward(peerPrivateData.getInt());
            }
            return ByteBuffer.allocate(Integer.BYTES).putInt(own.number()).flip();
        }

        @Override
        public void established(final ByteBuffer peerPrivateData, final SocketAddress localAddress,
            final SocketAddress remoteAddress) throws IOException {
            calls.add("established");
            if (refuseEstablished != null) {
                throw refuseEstablished;
            }
            if (own.state() != QueuePairState.READY_TO_SEND) {
                moveToward(peerPrivateData.getInt());
            }
            establishedAt = clock.incrementAndGet();
            outcome.complete(null);
        }

        private void moveToward(final int remote) throws IOException {
            path.readyToReceive(own, remote);
            path.readyToSend(own);
        }

        @Override
        public void peerGone(final IOException cause) {
            calls.add("peerGone");
            gone.complete(cause);
        }

        @Override
        public void failed(final IOException cause) {
            calls.add("failed");
            release();
            openQueuePairs = domain == null ? 0 : domain.device().resources().queuePairs();
            outcome.completeExceptionally(cause);
        }

        void send(final long value) {
            region.segment().set(java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED, 0, value);
            final SendWorkRequest request = own.createSendWorkRequest().id(2).opcode(WorkRequestOpcode.SEND)
                .flags(SendFlags.SIGNALED).sgeCount(1).sge(0, region.address(), MESSAGE, region.localKey());
            own.postSend(request);
            assertEquals(new Seen(CompletionStatus.SUCCESS, MESSAGE), next(), side + "'s send");
        }

        long receive() {
            assertEquals(new Seen(CompletionStatus.SUCCESS, MESSAGE), next(), side + "'s receive");
            return region.segment().asSlice(2048, MESSAGE).asByteBuffer().order(ByteOrder.nativeOrder()).getLong();
        }

        /** The next completion, as seen during the poll (a provider may reuse the object afterwards). */
        private Seen next() {
            final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            final Seen[] seen = new Seen[1];
            while (queue.poll(completion -> seen[0] = Seen.of(completion), 1) == 0) {
                assertTrue(System.nanoTime() < deadline, side + " saw no completion");
                Thread.onSpinWait();
            }
            return seen[0];
        }

        /** Let go of everything, the lifeline first: as an endpoint releasing its connection. */
        void release() {
            if (path != null) {
                path.close();
            }
            if (own != null) {
                own.close();
            }
            if (region != null) {
                region.close();
            }
            if (queue != null) {
                queue.close();
            }
            if (domain != null) {
                domain.close();
            }
        }
    }
}

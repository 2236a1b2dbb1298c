package io.rdmachannel.channel.stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmachannel.channel.cm.ConnectionRequest;
import io.rdmachannel.channel.cm.RejectReason;
import io.rdmachannel.channel.cm.Rejection;
import io.rdmachannel.channel.shm.ShmConfiguration;
import io.rdmachannel.channel.spi.CompletionQueue;
import io.rdmachannel.channel.spi.ProtectionDomain;
import io.rdmachannel.channel.spi.QueuePair;
import io.rdmachannel.channel.spi.QueuePairInitAttributes;
import io.rdmachannel.channel.spi.RdmaDevice;
import io.rdmachannel.channel.spi.RdmaProviders;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.SocketChannel;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A shm requester is a process of this host, and a listener's policy never sees a foreign address: a request whose
 * claimed address is not one of this host's is refused before the listener's filter is asked, and the requester
 * reads why; a well-formed request is seen with the host address it connected from. A requester that speaks out of
 * turn (an RTU before its request, a second request after the reply) has its handshake ended and its socket closed.
 * Requesters that flood the listener do not keep it from serving the others. The listener's connection is accepted
 * once the reply went out, sends nothing before the requester's RTU, and resets if the requester never sends it.
 */
@Timeout(20)
class ShmRequesterIdentityTest {
    private static final int MAGIC = 0x5244434d;
    private static final int REQ = 1;
    private static final int REP = 2;
    private static final int REJ = 3;
    private static final int RTU = 4;
    /** The port a requester that feeds the listener with the next request claims. */
    private static final int FEEDING_PORT = 5001;

    private StreamTransport transport;
    private StreamListener listener;
    private final List<ConnectionRequest> filtered = new CopyOnWriteArrayList<>();

    @BeforeEach
    void listen() throws IOException {
        transport = StreamTransports.open(RdmaProviders.byName("shm"));
        listener = transport.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 8,
            new StreamOptions().requestFilter(request -> {
                filtered.add(request);
                return null;
            }), new BlockingStream.Waker());
    }

    @AfterEach
    void close() throws IOException {
        listener.close();
        StreamTransports.close(transport);
    }

    @Test
    void shouldRefuseARequesterClaimingAForeignAddressBeforeTheFilter() throws Exception {
        final Rejection rejection = requestClaiming(new byte[] {10, 1, 2, 3}, 5000);
        assertEquals(new Rejection(RejectReason.POLICY, "the requester claims 10.1.2.3, not an address of this host"),
            rejection);
        assertTrue(filtered.isEmpty(), "the listener's filter saw " + filtered);
    }

    @Test
    void shouldShowTheFilterTheHostAddressARequesterConnectsFrom() throws Exception {
        final BlockingStream.Waker waker = new BlockingStream.Waker();
        try (StreamConnection client = BlockingStream.connect(transport.connect(listener.localAddress(), null,
            new StreamOptions(), waker), waker)) {
            assertEquals(1, filtered.size());
            final InetSocketAddress seen = (InetSocketAddress) filtered.getFirst().remoteAddress();
            assertTrue(seen.getAddress().isLoopbackAddress(), seen::toString);
            assertEquals(client.localAddress(), seen);
            assertEquals("shm0", filtered.getFirst().deviceName());
            // the passive side is established when the requester's last frame arrives, after the requester's own
            // end: take it, so that nothing is still being set up when the transport closes
            acceptOne().close();
        }
    }

    private StreamConnection acceptOne() throws IOException, InterruptedException {
        return acceptOne(listener);
    }

    private static StreamConnection acceptOne(final StreamListener from) throws IOException, InterruptedException {
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        StreamConnection accepted;
        while ((accepted = from.accept(null)) == null) {
            assertTrue(System.nanoTime() - deadline < 0, () -> "nothing to accept: " + from);
            Thread.sleep(1);
        }
        return accepted;
    }

    @Test
    void shouldEndAHandshakeWhoseRequesterSendsItsRtuBeforeAnyRequest() throws Exception {
        try (SocketChannel hostile = hostile()) {
            write(hostile, frame(RTU));
            awaitEndOfStream(hostile);
        }
        assertTrue(filtered.isEmpty(), "the listener's filter saw " + filtered);
        assertServing();
    }

    /**
     * Local processes connect to the listener's socket and close at once, as fast as they can: the connection
     * manager's thread must still come back to its other sockets, and a well-formed connection goes through, waiting
     * for room when it finds the listener's backlog full, as a TCP connect sends its SYN again (before, it was
     * refused at once). How long it waits is not asserted: it is a race for backlog slots that a loaded machine
     * (CI: 6.4 s once) can make long; the connect's own timeout is the bound.
     */
    @Test
    void shouldKeepServingWhileLocalProcessesFloodTheListenerWithConnections() throws Exception {
        final AtomicBoolean flooding = new AtomicBoolean(true);
        final AtomicLong floods = new AtomicLong();
        final List<Thread> flooders = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            flooders.add(Thread.ofPlatform().name("flooder-" + i).start(() -> {
                while (flooding.get()) {
                    try {
                        hostile().close();
                        floods.incrementAndGet();
                    } catch (final IOException backlogFull) {
                        // refused: pause as a connect that retries would, so that the measure is whether the
                        // listener serves at all, not which thread wins a free backlog slot
                        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1));
                    }
                }
            }));
        }
        try {
            while (floods.get() < 1000) {
                Thread.sleep(1);
            }
            // a full backlog is waited out, bounded by the connect timeout (10 s by default); before, it was
            // refused at once and this connect failed; how long it takes is the machine's business
            assertServing();
        } finally {
            flooding.set(false);
            for (final Thread flooder : flooders) {
                flooder.join();
            }
        }
    }

    /**
     * Connections keep arriving while the listener accepts (here each request the listener's filter sees brings the
     * next one, so one is always queued): the manager's thread must still read the handshakes it accepted, here a
     * requester that sends its request a while after it connected; it must be answered. Before, the listener
     * accepted for as long as one was queued, for ever, and read nothing else.
     */
    @Test
    void shouldReadAcceptedHandshakesWhileConnectionsKeepArriving() throws Exception {
        final AtomicBoolean feeding = new AtomicBoolean(true);
        final AtomicLong fed = new AtomicLong();
        final AtomicReference<StreamListener> busy = new AtomicReference<>();
        busy.set(transport.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 8,
            new StreamOptions().requestFilter(request -> {
                if (((InetSocketAddress) request.remoteAddress()).getPort() != FEEDING_PORT) {
                    return new Rejection(RejectReason.POLICY, "seen");
                }
                if (feeding.get()) {
                    feed(busy.get());
                    fed.incrementAndGet();
                }
                return new Rejection(RejectReason.POLICY, "fed");
            }), new BlockingStream.Waker()));
        try {
            feed(busy.get());
            while (fed.get() < 100) {
                Thread.sleep(1);
            }
            final byte[] loopback = InetAddress.getLoopbackAddress().getAddress();
            try (SocketChannel late = connectTo(busy.get())) {
                // accepted meanwhile, with nothing to read yet
                Thread.sleep(100);
                final long fedBefore = fed.get();
                write(late, request(new byte[16], 7, loopback, 5000, busy.get()).put(connectionData()));
                assertEquals(REJ, readFrame(late).get(), "the late requester's answer");
                // served within a round of the selector, not once the process ran out of descriptors (the
                // unserved handshakes' sockets are closed by the thread's tasks, which ran no more either)
                final long fedMeanwhile = fed.get() - fedBefore;
                assertTrue(fedMeanwhile < 2000, "answered after " + fedMeanwhile + " other requests");
            }
            assertTrue(fed.get() > 100, "the feeding stopped: " + fed);
        } finally {
            feeding.set(false);
            busy.get().close();
        }
    }

    /** A request from {@link #FEEDING_PORT} of the loopback to the listener, its socket closed once written. */
    private static void feed(final StreamListener target) {
        final byte[] loopback = InetAddress.getLoopbackAddress().getAddress();
        try (SocketChannel feeder = connectTo(target)) {
            write(feeder, request(new byte[16], 7, loopback, FEEDING_PORT, target).put(connectionData()));
        } catch (final IOException ex) {
            throw new UncheckedIOException(ex);
        }
    }

    @Test
    void shouldEndAHandshakeWhoseRequesterAsksAgainAfterTheReply() throws Exception {
        final byte[] loopback = InetAddress.getLoopbackAddress().getAddress();
        // a queue pair of its own for the listener's to be moved towards, as a requester's would be
        try (RdmaDevice device = RdmaProviders.byName("shm").openDevice(null);
             ProtectionDomain pd = device.allocateProtectionDomain();
             CompletionQueue cq = device.createCompletionQueue(16, null, 0);
             QueuePair own = pd.createQueuePair(new QueuePairInitAttributes().sendCompletionQueue(cq)
                 .receiveCompletionQueue(cq));
             SocketChannel hostile = hostile()) {
            final byte[] gid = device.queryGid(1, 0);
            write(hostile, request(gid, own.number(), loopback, 5000).put(connectionData()));
            assertEquals(REP, readFrame(hostile).get());
            write(hostile, request(gid, own.number(), loopback, 5000).put(connectionData()));
            awaitEndOfStream(hostile);
        }
        assertEquals(1, filtered.size(), "the listener's filter saw " + filtered);
        assertServing();
    }

    @Test
    void shouldHandOverTheConnectionAtTheReplyAndResetItWhenTheRequesterNeverConfirms() throws Exception {
        final byte[] loopback = InetAddress.getLoopbackAddress().getAddress();
        try (RdmaDevice device = RdmaProviders.byName("shm").openDevice(null);
             ProtectionDomain pd = device.allocateProtectionDomain();
             CompletionQueue cq = device.createCompletionQueue(16, null, 0);
             QueuePair own = pd.createQueuePair(new QueuePairInitAttributes().sendCompletionQueue(cq)
                 .receiveCompletionQueue(cq))) {
            final StreamConnection accepted;
            try (SocketChannel hostile = hostile()) {
                write(hostile, request(device.queryGid(1, 0), own.number(), loopback, 5000).put(connectionData()));
                assertEquals(REP, readFrame(hostile).get());
                // no RTU: the application has the connection already, which may send nothing yet
                accepted = acceptOne();
                assertEquals(new InetSocketAddress(InetAddress.getLoopbackAddress(), 5000), accepted.remoteAddress());
                assertEquals(0, accepted.write(ByteBuffer.wrap(new byte[] {1, 2, 3})), accepted::describe);
                assertEquals(0, accepted.readyOps() & StreamReadiness.WRITE, accepted::describe);
            }
            try (accepted) {
                final ByteBuffer sink = ByteBuffer.allocate(16);
                final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                final IOException reset = assertThrows(IOException.class, () -> {
                    while (accepted.read(sink) == 0) {
                        assertTrue(System.nanoTime() - deadline < 0, accepted::describe);
                        Thread.sleep(1);
                    }
                });
                assertEquals("Connection reset", reset.getMessage());
            }
        }
    }

    /**
     * Connections handed to the application at the reply whose requesters have not sent their RTU yet are the
     * application's: once it accepted them they do not count against the listener's backlog (here 1), and the next
     * request is served. Before, a listener whose accept loop took several quick requesters in a row refused the next
     * one as "backlog full".
     */
    @Test
    void shouldNotCountConnectionsTakenAtTheReplyAgainstTheBacklog() throws Exception {
        final byte[] loopback = InetAddress.getLoopbackAddress().getAddress();
        try (StreamListener small = transport.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 1,
                 new StreamOptions(), new BlockingStream.Waker());
             RdmaDevice device = RdmaProviders.byName("shm").openDevice(null);
             ProtectionDomain pd = device.allocateProtectionDomain();
             CompletionQueue cq = device.createCompletionQueue(16, null, 0);
             QueuePair first = pd.createQueuePair(new QueuePairInitAttributes().sendCompletionQueue(cq)
                 .receiveCompletionQueue(cq));
             QueuePair second = pd.createQueuePair(new QueuePairInitAttributes().sendCompletionQueue(cq)
                 .receiveCompletionQueue(cq));
             SocketChannel unconfirmed = connectTo(small)) {
            write(unconfirmed, request(device.queryGid(1, 0), first.number(), loopback, 5000, small)
                .put(connectionData()));
            assertEquals(REP, readFrame(unconfirmed).get());
            // the application takes each (its accept queue is bounded by the backlog too); one requester at a time:
            // a connected socket counts against the backlog from its accept
            try (StreamConnection taken = acceptOne(small); SocketChannel alsoUnconfirmed = connectTo(small)) {
                write(alsoUnconfirmed, request(device.queryGid(1, 0), second.number(), loopback, 5001, small)
                    .put(connectionData()));
                assertEquals(REP, readFrame(alsoUnconfirmed).get(), "the second requester's answer");
                assertEquals(5000, ((InetSocketAddress) taken.remoteAddress()).getPort());
                acceptOne(small).close();
                final BlockingStream.Waker waker = new BlockingStream.Waker();
                try (StreamConnection client = BlockingStream.connect(transport.connect(small.localAddress(), null,
                    new StreamOptions(), waker), waker)) {
                    awaitAccepted(small, client);
                }
            }
        }
    }

    /** Accept from {@code from} until {@code client}'s connection comes, closing the others. */
    private static void awaitAccepted(final StreamListener from, final StreamConnection client)
        throws IOException, InterruptedException {
        while (true) {
            try (StreamConnection accepted = acceptOne(from)) {
                if (accepted.remoteAddress().equals(client.localAddress())) {
                    return;
                }
            }
        }
    }

    /**
     * A well-formed connection still goes through the listener and is accepted (after what a hostile requester's
     * reply handed over, which is closed).
     */
    private void assertServing() throws IOException, InterruptedException {
        final BlockingStream.Waker waker = new BlockingStream.Waker();
        try (StreamConnection client = BlockingStream.connect(transport.connect(listener.localAddress(), null,
            new StreamOptions(), waker), waker)) {
            awaitAccepted(listener, client);
        }
    }

    private SocketChannel hostile() throws IOException {
        return connectTo(listener);
    }

    private static SocketChannel connectTo(final StreamListener target) throws IOException {
        final int listening = ((InetSocketAddress) target.localAddress()).getPort();
        final Path socket = Path.of(System.getProperty(ShmConfiguration.DIRECTORY_PROP_NAME,
            ShmConfiguration.DIRECTORY_DEFAULT)).toAbsolutePath().resolve("ports").resolve("127.0.0.1_" + listening);
        final SocketChannel hostile = SocketChannel.open(StandardProtocolFamily.UNIX);
        hostile.connect(UnixDomainSocketAddress.of(socket));
        return hostile;
    }

    /** Connection data a listener takes (its length first): the requester's memory is never touched here. */
    private static ByteBuffer connectionData() {
        final byte[] data = new byte[ConnectionDataDescriptor.LENGTH];
        new ConnectionDataFlyweight().wrap(new UnsafeBuffer(data), 0)
            .header(ConnectionDataDescriptor.localFlags(ByteOrder.nativeOrder()), 64)
            .iomapEntries(0)
            .targetSgl(0x10000L, 1, 2)
            .dataBuffer(0x20000L, 2, 65536);
        return ByteBuffer.allocate(Short.BYTES + data.length).putShort((short) data.length).put(data).flip();
    }

    /**
     * A request, as a connector writes it, from a queue pair and an IPv4 address, without its private data (put
     * next).
     */
    private ByteBuffer request(final byte[] gid, final int queuePair, final byte[] ipv4, final int port) {
        return request(gid, queuePair, ipv4, port, listener);
    }

    private static ByteBuffer request(final byte[] gid, final int queuePair, final byte[] ipv4, final int port,
        final StreamListener target) {
        final ByteBuffer out = frame(REQ);
        out.put((byte) 1).put(gid).putInt(queuePair).putInt(8);
        out.put((byte) 1).put((byte) 4).put(ipv4).putShort((short) port);
        out.put((byte) 1).put((byte) 4).put(InetAddress.getLoopbackAddress().getAddress())
            .putShort((short) ((InetSocketAddress) target.localAddress()).getPort());
        return out;
    }

    private static ByteBuffer frame(final int type) {
        return ByteBuffer.allocate(256).putInt(0).putInt(MAGIC).put((byte) type);
    }

    private static void write(final SocketChannel hostile, final ByteBuffer frame) throws IOException {
        frame.putInt(0, frame.position() - Integer.BYTES).flip();
        while (frame.hasRemaining()) {
            hostile.write(frame);
        }
    }

    /** The listener's next frame, positioned at its type. */
    private static ByteBuffer readFrame(final SocketChannel hostile) throws IOException {
        final ByteBuffer in = ByteBuffer.allocate(512);
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (in.position() < Integer.BYTES || in.position() < Integer.BYTES + in.getInt(0)) {
            assertTrue(hostile.read(in) >= 0 && System.nanoTime() - deadline < 0, "no complete answer: " + in);
        }
        in.flip().getInt();
        assertEquals(MAGIC, in.getInt());
        return in;
    }

    /** The listener closes the socket (end of stream or reset) within 10 s, and sends nothing more first. */
    private static void awaitEndOfStream(final SocketChannel hostile) throws IOException, InterruptedException {
        hostile.configureBlocking(false);
        final ByteBuffer sink = ByteBuffer.allocate(512);
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (true) {
            final int count;
            try {
                count = hostile.read(sink);
            } catch (final IOException reset) {
                return;
            }
            if (count < 0) {
                return;
            }
            assertEquals(0, sink.position(), "the listener answered out of turn instead of ending the handshake");
            assertTrue(System.nanoTime() - deadline < 0, "the listener kept the handshake open for 10 s");
            Thread.sleep(1);
        }
    }

    /**
     * Speak the handshake as a hostile local process would: a request whose source is the given IPv4 address, then
     * read the listener's answer, which must be a rejection.
     */
    private Rejection requestClaiming(final byte[] ipv4, final int port) throws IOException {
        try (SocketChannel hostile = hostile()) {
            write(hostile, request(new byte[16], 7, ipv4, port).putShort((short) 0));
            final ByteBuffer in = readFrame(hostile);
            assertEquals(REJ, in.get());
            final int code = in.get();
            final int length = Short.toUnsignedInt(in.getShort());
            final Rejection rejection = Rejection.decode(in.slice(in.position(), length));
            assertEquals(code, rejection.reason().code());
            return rejection;
        }
    }
}

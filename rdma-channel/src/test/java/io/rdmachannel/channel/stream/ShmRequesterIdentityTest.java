package io.rdmachannel.channel.stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
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
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.SocketChannel;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
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
 */
@Timeout(20)
class ShmRequesterIdentityTest {
    private static final int MAGIC = 0x5244434d;
    private static final int REQ = 1;
    private static final int REP = 2;
    private static final int REJ = 3;
    private static final int RTU = 4;

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
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        StreamConnection accepted;
        while ((accepted = listener.accept(null)) == null) {
            assertTrue(System.nanoTime() - deadline < 0, () -> "nothing to accept: " + listener);
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

    /** A well-formed connection still goes through the listener, and is the one accepted. */
    private void assertServing() throws IOException, InterruptedException {
        final BlockingStream.Waker waker = new BlockingStream.Waker();
        try (StreamConnection client = BlockingStream.connect(transport.connect(listener.localAddress(), null,
            new StreamOptions(), waker), waker); StreamConnection accepted = acceptOne()) {
            assertEquals(client.localAddress(), accepted.remoteAddress());
        }
    }

    private SocketChannel hostile() throws IOException {
        final int listening = ((InetSocketAddress) listener.localAddress()).getPort();
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
        final ByteBuffer out = frame(REQ);
        out.put((byte) 1).put(gid).putInt(queuePair).putInt(8);
        out.put((byte) 1).put((byte) 4).put(ipv4).putShort((short) port);
        out.put((byte) 1).put((byte) 4).put(InetAddress.getLoopbackAddress().getAddress())
            .putShort((short) ((InetSocketAddress) listener.localAddress()).getPort());
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

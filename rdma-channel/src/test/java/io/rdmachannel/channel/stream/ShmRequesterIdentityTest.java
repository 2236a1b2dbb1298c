package io.rdmachannel.channel.stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmachannel.channel.cm.ConnectionRequest;
import io.rdmachannel.channel.cm.RejectReason;
import io.rdmachannel.channel.cm.Rejection;
import io.rdmachannel.channel.shm.ShmConfiguration;
import io.rdmachannel.channel.spi.RdmaProviders;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A shm requester is a process of this host, and a listener's policy never sees a foreign address: a request whose
 * claimed address is not one of this host's is refused before the listener's filter is asked, and the requester
 * reads why; a well-formed request is seen with the host address it connected from.
 */
@Timeout(20)
class ShmRequesterIdentityTest {
    private static final int MAGIC = 0x5244434d;
    private static final int REQ = 1;
    private static final int REJ = 3;

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

    /**
     * Speak the handshake as a hostile local process would: a request whose source is the given IPv4 address, then
     * read the listener's answer, which must be a rejection.
     */
    private Rejection requestClaiming(final byte[] ipv4, final int port) throws IOException {
        final int listening = ((InetSocketAddress) listener.localAddress()).getPort();
        final Path socket = Path.of(System.getProperty(ShmConfiguration.DIRECTORY_PROP_NAME,
            ShmConfiguration.DIRECTORY_DEFAULT)).toAbsolutePath().resolve("ports").resolve("127.0.0.1_" + listening);
        try (SocketChannel hostile = SocketChannel.open(StandardProtocolFamily.UNIX)) {
            hostile.connect(UnixDomainSocketAddress.of(socket));
            final ByteBuffer out = ByteBuffer.allocate(256);
            out.putInt(0).putInt(MAGIC).put((byte) REQ).put((byte) 1).put(new byte[16]).putInt(7).putInt(8);
            out.put((byte) 1).put((byte) 4).put(ipv4).putShort((short) port);
            out.put((byte) 1).put((byte) 4).put(InetAddress.getLoopbackAddress().getAddress())
                .putShort((short) listening);
            out.putShort((short) 0);
            out.putInt(0, out.position() - Integer.BYTES).flip();
            while (out.hasRemaining()) {
                hostile.write(out);
            }
            final ByteBuffer in = ByteBuffer.allocate(512);
            final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (in.position() < Integer.BYTES || in.position() < Integer.BYTES + in.getInt(0)) {
                assertTrue(hostile.read(in) >= 0 && System.nanoTime() - deadline < 0, "no complete answer: " + in);
            }
            in.flip().getInt();
            assertEquals(MAGIC, in.getInt());
            assertEquals(REJ, in.get());
            final int code = in.get();
            final int length = Short.toUnsignedInt(in.getShort());
            final Rejection rejection = Rejection.decode(in.slice(in.position(), length));
            assertEquals(code, rejection.reason().code());
            return rejection;
        }
    }
}

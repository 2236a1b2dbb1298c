package io.rdmachannel.channel.stream;

import static org.junit.jupiter.api.Assertions.assertTrue;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;
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
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;

/**
 * What a local process can send to a shm listener's socket before any connection exists: frames of any length, type
 * and content (a request with any version, GID, queue pair number, addresses and private data; replies, rejections
 * and RTUs where none belongs), or bytes that are no frame at all, then the end of its stream. The connection manager
 * must end that handshake, close the socket, and go on serving: after every input a well-formed connection through
 * the same listener must be established and accepted. Runs its corpus in every build; {@code ./rdmachannel fuzz}
 * fuzzes it.
 */
class ShmHandshakeFuzzTest {
    private static final int MAGIC = 0x5244434d;
    private static final long TIMEOUT_NANOS = TimeUnit.SECONDS.toNanos(10);

    private static StreamTransport transport;
    private static StreamListener listener;
    private static BlockingStream.Waker listenerWaker;
    private static Path socket;

    private static synchronized void open() throws IOException {
        if (transport == null) {
            transport = StreamTransports.open(RdmaProviders.byName("shm"));
            listenerWaker = new BlockingStream.Waker();
            listener = transport.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 64,
                new StreamOptions(), listenerWaker);
            final int port = ((InetSocketAddress) listener.localAddress()).getPort();
            socket = Path.of(System.getProperty(ShmConfiguration.DIRECTORY_PROP_NAME,
                ShmConfiguration.DIRECTORY_DEFAULT)).toAbsolutePath().resolve("ports").resolve("127.0.0.1_" + port);
        }
    }

    @AfterAll
    static synchronized void close() throws IOException {
        if (transport != null) {
            listener.close();
            StreamTransports.close(transport);
            transport = null;
        }
    }

    @FuzzTest
    void shouldEndAMalformedHandshakeAndKeepServing(final FuzzedDataProvider data) throws Exception {
        open();
        final ByteBuffer bytes = switch (data.consumeInt(0, 2)) {
            case 0 -> request(data);
            case 1 -> frames(data);
            default -> ByteBuffer.wrap(data.consumeRemainingAsBytes());
        };
        try (SocketChannel hostile = SocketChannel.open(StandardProtocolFamily.UNIX)) {
            hostile.connect(UnixDomainSocketAddress.of(socket));
            try {
                while (bytes.hasRemaining()) {
                    hostile.write(bytes);
                }
                hostile.shutdownOutput();
            } catch (final IOException closedEarly) {
                // the manager may close the socket before it read everything: that ends this handshake too
            }
            awaitEndOfStream(hostile);
        }
        assertServing();
    }

    /**
     * A request frame as a connector writes it, each field chosen by the fuzzer (the version mostly right, the target
     * mostly the listener's), maybe followed by an RTU: it gets as far as a queue pair moved towards the claimed peer.
     */
    private static ByteBuffer request(final FuzzedDataProvider data) {
        final ByteBuffer out = ByteBuffer.allocate(8192);
        out.putInt(0).putInt(MAGIC).put((byte) 1);
        out.put((byte) (data.consumeInt(0, 7) == 0 ? data.consumeInt() : 1));
        final byte[] gid = data.consumeBytes(16);
        out.put(gid).put(new byte[16 - gid.length]);
        out.putInt(data.consumeInt()).putInt(data.consumeInt());
        address(out, data, false);
        address(out, data, true);
        final byte[] privateData = data.consumeBytes(data.consumeInt(0, 1100));
        out.putShort((short) (data.consumeInt(0, 15) == 0 ? data.consumeInt(0, 0xFFFF) : privateData.length));
        out.put(privateData);
        out.putInt(0, out.position() - Integer.BYTES);
        if (data.consumeBoolean()) {
            out.putInt(5).putInt(MAGIC).put((byte) 4);
        }
        return out.flip();
    }

    private static void address(final ByteBuffer out, final FuzzedDataProvider data, final boolean target) {
        final int kind = data.consumeInt(0, 3);
        if (target && kind != 3) {
            final InetSocketAddress listening = (InetSocketAddress) listener.localAddress();
            out.put((byte) 1).put((byte) 4).put(listening.getAddress().getAddress())
                .putShort((short) listening.getPort());
        } else if (kind == 0 || kind == 1) {
            final int length = kind == 0 ? 4 : 16;
            out.put((byte) 1).put((byte) length);
            final byte[] bytes = data.consumeBytes(length);
            out.put(bytes).put(new byte[length - bytes.length]).putShort((short) data.consumeInt());
        } else {
            out.put((byte) data.consumeInt(0, 3)).put(data.consumeBytes(data.consumeInt(0, 40)));
        }
    }

    /**
     * Up to four frames, each with a length that fits or not, the magic or not, and a type and body of any kind.
     */
    private static ByteBuffer frames(final FuzzedDataProvider data) {
        final ByteBuffer out = ByteBuffer.allocate(4 * 4200);
        final int count = data.consumeInt(1, 4);
        for (int i = 0; i < count; i++) {
            final byte[] body = data.consumeBytes(data.consumeInt(0, 4096));
            final boolean fits = data.consumeBoolean();
            out.putInt(fits ? 5 + body.length : data.consumeInt());
            out.putInt(data.consumeBoolean() ? MAGIC : data.consumeInt());
            out.put((byte) data.consumeInt(0, 5));
            out.put(body);
        }
        return out.flip();
    }

    private static void awaitEndOfStream(final SocketChannel hostile) throws IOException, InterruptedException {
        hostile.configureBlocking(false);
        final ByteBuffer sink = ByteBuffer.allocate(8192);
        final long deadline = System.nanoTime() + TIMEOUT_NANOS;
        while (true) {
            final int count;
            try {
                count = hostile.read(sink.clear());
            } catch (final IOException reset) {
                return;
            }
            if (count < 0) {
                return;
            }
            assertTrue(System.nanoTime() - deadline < 0, "the connection manager neither finished nor closed the "
                + "handshake within 10 s");
            if (count == 0) {
                Thread.sleep(0, 100_000);
            }
        }
    }

    /**
     * A well-formed connection through the listener is established and accepted; anything the hostile bytes managed
     * to establish before it is accepted and closed.
     */
    private static void assertServing() throws IOException {
        final BlockingStream.Waker waker = new BlockingStream.Waker();
        try (StreamConnection client = BlockingStream.connect(transport.connect(listener.localAddress(), null,
            new StreamOptions(), waker), waker)) {
            final long deadline = System.nanoTime() + TIMEOUT_NANOS;
            while (true) {
                final StreamConnection accepted = listener.accept(listenerWaker);
                if (accepted == null) {
                    assertTrue(System.nanoTime() - deadline < 0, "the well-formed connection was never accepted");
                    Thread.onSpinWait();
                    continue;
                }
                try (accepted) {
                    if (accepted.remoteAddress().equals(client.localAddress())) {
                        return;
                    }
                }
            }
        }
    }
}

package io.rdmachannel.interop.dropin;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.DatagramChannel;
import java.nio.channels.Pipe;
import java.nio.channels.SelectableChannel;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Iterator;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;

/**
 * An unmodified program with one {@code Selector.open()} for a datagram channel, a pipe, a Unix-domain connection
 * and a stream connection to an echo server, as event loops mix them. It checks that every event arrives, that
 * {@code wakeup()} ends a blocked selection, that {@code select(timeout)} does not return early, and that closing a
 * registered channel drops its key. Prints {@code KINDS ...} (the channel classes), then {@code OK}, or
 * {@code FAILED <exception>} and exits 1.
 *
 * <p>Arguments: {@code echoAddress echoPort}.
 */
public final class MixedSelectorProgram {
    private static final long EVENT_TIMEOUT_MILLIS = 20_000;

    private MixedSelectorProgram() {
    }

    public static void main(final String[] args) {
        try {
            run(new InetSocketAddress(InetAddress.getByName(args[0]), Integer.parseInt(args[1])));
            System.out.println("OK");
        } catch (final IOException | RuntimeException | InterruptedException ex) {
            System.out.println("FAILED " + ex);
            ex.printStackTrace(System.out);
            System.exit(1);
        }
    }

    private static void run(final InetSocketAddress echo) throws IOException, InterruptedException {
        final Path udsPath = Files.createTempDirectory("mixed-selector").resolve("uds");
        try (Selector selector = Selector.open();
            DatagramChannel datagram = DatagramChannel.open();
            ServerSocketChannel udsServer = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
            SocketChannel udsClient = SocketChannel.open(StandardProtocolFamily.UNIX);
            SocketChannel stream = SocketChannel.open()) {
            final Pipe pipe = Pipe.open();
            datagram.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            udsServer.bind(UnixDomainSocketAddress.of(udsPath));
            System.out.println("KINDS datagram=" + datagram.getClass().getName() + " pipe="
                + pipe.source().getClass().getName() + " unix=" + udsServer.getClass().getName() + " stream="
                + stream);
            register(selector, datagram, SelectionKey.OP_READ);
            register(selector, pipe.source(), SelectionKey.OP_READ);
            register(selector, udsServer, SelectionKey.OP_ACCEPT);
            stream.configureBlocking(false);
            final boolean connected = stream.connect(echo);
            stream.register(selector, connected ? SelectionKey.OP_READ : SelectionKey.OP_CONNECT);
            if (connected) {
                stream.write(text("stream"));
            }

            datagram.send(text("datagram"), datagram.getLocalAddress());
            pipe.sink().write(text("pipe"));
            udsClient.connect(UnixDomainSocketAddress.of(udsPath));
            udsClient.write(text("unix"));

            final Set<String> received = new TreeSet<>();
            final long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(EVENT_TIMEOUT_MILLIS);
            while (received.size() < 4) {
                if (System.nanoTime() - deadline > 0) {
                    throw new IllegalStateException("only " + received + " arrived; keys: " + selector.keys());
                }
                selector.select(1000);
                for (final Iterator<SelectionKey> it = selector.selectedKeys().iterator(); it.hasNext(); ) {
                    final SelectionKey key = it.next();
                    it.remove();
                    handle(key, selector, received);
                }
            }
            System.out.println("RECEIVED " + received);

            final long woken = selectWokenAfter(selector, 100);
            if (woken > 5_000) {
                throw new IllegalStateException("wakeup() ended the selection only after " + woken + " ms");
            }
            final long start = System.nanoTime();
            final int none = selector.select(300);
            final long waited = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            if (none != 0 || waited < 290) {
                throw new IllegalStateException("select(300) with nothing ready returned " + none + " after "
                    + waited + " ms");
            }

            final SelectionKey pipeKey = pipe.source().keyFor(selector);
            final int before = selector.keys().size();
            pipe.source().close();
            selector.selectNow();
            if (pipeKey.isValid() || selector.keys().size() != before - 1) {
                throw new IllegalStateException("closing a registered channel left its key: " + selector.keys());
            }
            pipe.sink().close();
        } finally {
            Files.deleteIfExists(udsPath);
            Files.deleteIfExists(udsPath.getParent());
        }
    }

    private static void register(final Selector selector, final SelectableChannel channel, final int ops)
        throws IOException {
        channel.configureBlocking(false);
        channel.register(selector, ops);
    }

    private static void handle(final SelectionKey key, final Selector selector, final Set<String> received)
        throws IOException {
        final ByteBuffer buffer = ByteBuffer.allocate(64);
        if (key.isAcceptable()) {
            final SocketChannel accepted = ((ServerSocketChannel) key.channel()).accept();
            if (accepted != null) {
                register(selector, accepted, SelectionKey.OP_READ);
            }
        } else if (key.isConnectable()) {
            final SocketChannel stream = (SocketChannel) key.channel();
            if (stream.finishConnect()) {
                key.interestOps(SelectionKey.OP_READ);
                stream.write(text("stream"));
            }
        } else if (key.isReadable()) {
            if (key.channel() instanceof DatagramChannel datagram) {
                datagram.receive(buffer);
            } else if (key.channel() instanceof Pipe.SourceChannel source) {
                source.read(buffer);
            } else {
                ((SocketChannel) key.channel()).read(buffer);
            }
            received.add(StandardCharsets.US_ASCII.decode(buffer.flip()).toString());
        }
    }

    /**
     * Select with nothing ready while another thread calls {@code wakeup()} after {@code delayMillis}.
     *
     * @return how long the selection took, in milliseconds.
     */
    private static long selectWokenAfter(final Selector selector, final long delayMillis)
        throws IOException, InterruptedException {
        final Thread waker = Thread.ofPlatform().start(() -> {
            try {
                Thread.sleep(delayMillis);
            } catch (final InterruptedException ex) {
                Thread.currentThread().interrupt();
            }
            selector.wakeup();
        });
        final long start = System.nanoTime();
        selector.select(60_000);
        final long took = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        waker.join();
        return took;
    }

    private static ByteBuffer text(final String text) {
        return ByteBuffer.wrap(text.getBytes(StandardCharsets.US_ASCII));
    }
}

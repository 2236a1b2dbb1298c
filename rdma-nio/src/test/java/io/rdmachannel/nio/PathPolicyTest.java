package io.rdmachannel.nio;

import static java.nio.channels.SelectionKey.OP_ACCEPT;
import static java.nio.channels.SelectionKey.OP_CONNECT;
import static java.nio.channels.SelectionKey.OP_READ;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.net.StandardProtocolFamily;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.AsynchronousCloseException;
import java.nio.channels.ClosedByInterruptException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import io.rdmachannel.channel.cm.NoRdmaPathException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The path a channel takes by policy and rule: RDMA, TCP, or RDMA falling back to TCP inside the same channel, and
 * server channels listening for RDMA and TCP peers on one port. RDMA is the fake engine here; TCP is the JDK's.
 */
@Timeout(30)
class PathPolicyTest {
    private static final long FALLBACK_TIMEOUT_MILLIS = 300;
    private static final InetAddress LOOPBACK = InetAddress.getLoopbackAddress();

    private final FakeTransport transport = new FakeTransport();
    private final List<AutoCloseable> opened = new ArrayList<>();
    private RdmaSelectorProvider provider = providerWith(new Properties());

    private RdmaSelectorProvider providerWith(final Properties properties) {
        properties.setProperty(DropInConfiguration.FALLBACK_TIMEOUT_PROP_NAME,
            Long.toString(FALLBACK_TIMEOUT_MILLIS));
        return new RdmaSelectorProvider(transport, DropInConfiguration.from(properties));
    }

    @AfterEach
    void close() throws Exception {
        for (int i = opened.size() - 1; i >= 0; i--) {
            opened.get(i).close();
        }
        transport.close();
    }

    private <T extends AutoCloseable> T track(final T channel) {
        opened.add(channel);
        return channel;
    }

    /** A JDK TCP server on the loopback: a peer without RDMA. */
    private ServerSocketChannel tcpServer() throws IOException {
        return track(ServerSocketChannel.open().bind(new InetSocketAddress(LOOPBACK, 0)));
    }

    private RdmaSocketChannel socket(final RdmaPathPolicy policy) throws IOException {
        final RdmaSocketChannel channel = track(provider.openSocketChannel(StandardProtocolFamily.INET, false));
        channel.setOption(RdmaSocketOptions.RDMA_PATH_POLICY, policy);
        return channel;
    }

    private RdmaServerSocketChannel server(final RdmaPathPolicy policy) throws IOException {
        final RdmaServerSocketChannel server = track(provider.openServerSocketChannel(StandardProtocolFamily.INET,
            false));
        server.setOption(RdmaSocketOptions.RDMA_PATH_POLICY, policy);
        server.bind(new InetSocketAddress(LOOPBACK, 0));
        return server;
    }

    private static void exchange(final SocketChannel one, final SocketChannel other) throws IOException {
        one.write(ByteBuffer.wrap("ping".getBytes(StandardCharsets.US_ASCII)));
        assertEquals("ping", readText(other, 4));
        other.write(ByteBuffer.wrap("pong".getBytes(StandardCharsets.US_ASCII)));
        assertEquals("pong", readText(one, 4));
    }

    private static String readText(final SocketChannel channel, final int length) throws IOException {
        final ByteBuffer buffer = ByteBuffer.allocate(length);
        while (buffer.hasRemaining()) {
            if (channel.read(buffer) < 0) {
                throw new IOException("end of stream");
            }
        }
        return StandardCharsets.US_ASCII.decode(buffer.flip()).toString();
    }

    private static <T> FutureTask<T> start(final String name, final java.util.concurrent.Callable<T> task) {
        final FutureTask<T> future = new FutureTask<>(task);
        Thread.ofPlatform().name(name).daemon().start(future);
        return future;
    }

    // -- connect

    @Test
    void shouldContinueOverTcpWhenRdmaHasNoListener() throws Exception {
        final ServerSocketChannel jdk = tcpServer();
        final RdmaSocketChannel channel = socket(RdmaPathPolicy.RDMA_PREFERRED);

        assertTrue(channel.connect(jdk.getLocalAddress()));
        final SocketChannel accepted = track(jdk.accept());

        final RdmaPath path = channel.getOption(RdmaSocketOptions.RDMA_PATH);
        assertEquals(RdmaPath.Kind.TCP, path.kind());
        assertEquals("fallback: no RDMA listener (Connection refused)", path.reason());
        assertTrue(channel.toString().contains(" path=tcp (fallback: no RDMA listener"), channel.toString());
        assertEquals(accepted.getRemoteAddress(), channel.getLocalAddress());
        assertEquals(accepted.getLocalAddress(), channel.getRemoteAddress());
        exchange(channel, accepted);
        try (SocketChannel plain = SocketChannel.open(jdk.getLocalAddress())) {
            assertEquals(plain.getOption(StandardSocketOptions.SO_SNDBUF),
                channel.getOption(StandardSocketOptions.SO_SNDBUF), "standard options are the platform channel's");
        }
        channel.shutdownOutput();
        assertEquals(-1, accepted.read(ByteBuffer.allocate(1)));
    }

    @Test
    void shouldFinishAFallbackConnectThroughASelectionWithAPreciseOpConnect() throws Exception {
        final ServerSocketChannel jdk = tcpServer();
        final RdmaSocketChannel channel = socket(RdmaPathPolicy.RDMA_PREFERRED);
        channel.configureBlocking(false);
        final Selector selector = track(provider.openSelector());

        // the fake engine refuses on its own thread: pending unless the TCP leg connected at once
        final boolean connected = channel.connect(jdk.getLocalAddress());
        final SelectionKey key = channel.register(selector, connected ? 0 : OP_CONNECT);
        while (!channel.isConnected()) {
            assertTrue(selector.select(10_000) > 0, "no OP_CONNECT: " + channel);
            selector.selectedKeys().clear();
            // as Netty does: OP_CONNECT must mean finishConnect completes
            assertTrue(channel.finishConnect(), "OP_CONNECT before the connect could finish: " + channel);
        }
        assertEquals(RdmaPath.Kind.TCP, channel.getOption(RdmaSocketOptions.RDMA_PATH).kind());

        final SocketChannel accepted = track(jdk.accept());
        key.interestOps(OP_READ);
        accepted.write(ByteBuffer.wrap(new byte[] {42}));
        assertEquals(1, selector.select(10_000));
        assertTrue(key.isReadable());
        final ByteBuffer one = ByteBuffer.allocate(1);
        assertEquals(1, channel.read(one));
        assertEquals(42, one.get(0));
    }

    @Test
    void shouldFallBackWhenRdmaDoesNotAnswerInTime() throws Exception {
        final ServerSocketChannel jdk = tcpServer();
        transport.unanswered.add(FakeTransport.key(jdk.getLocalAddress()));
        final RdmaSocketChannel channel = socket(RdmaPathPolicy.RDMA_PREFERRED);

        final long start = System.nanoTime();
        assertTrue(channel.connect(jdk.getLocalAddress()));
        final long took = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);

        assertTrue(took >= FALLBACK_TIMEOUT_MILLIS * 9 / 10, "fell back after only " + took + " ms");
        assertTrue(channel.getOption(RdmaSocketOptions.RDMA_PATH).reason()
            .startsWith("fallback: no RDMA answer in time"), channel.toString());
        exchange(channel, track(jdk.accept()));
    }

    @Test
    void shouldFallBackWhenRdmaDoesNotAnswerInTimeWithoutAnApplicationCall() throws Exception {
        final ServerSocketChannel jdk = tcpServer();
        transport.unanswered.add(FakeTransport.key(jdk.getLocalAddress()));
        final RdmaSocketChannel channel = socket(RdmaPathPolicy.RDMA_PREFERRED);
        channel.configureBlocking(false);
        final Selector selector = track(provider.openSelector());

        assertFalse(channel.connect(jdk.getLocalAddress()));
        channel.register(selector, OP_CONNECT);

        // the timer wakes the selection, which moves the attempt over to TCP
        while (!channel.isConnected()) {
            assertTrue(selector.select(10_000) > 0, "no OP_CONNECT: " + channel);
            selector.selectedKeys().clear();
            assertTrue(channel.finishConnect(), channel.toString());
        }
        assertEquals(RdmaPath.Kind.TCP, channel.getOption(RdmaSocketOptions.RDMA_PATH).kind());
    }

    @Test
    void shouldGoStraightToTcpForADestinationRdmaCouldNotReachLately() throws Exception {
        final ServerSocketChannel jdk = tcpServer();
        socket(RdmaPathPolicy.RDMA_PREFERRED).connect(jdk.getLocalAddress());
        final int attempts = transport.connectOptions.size();

        final RdmaSocketChannel again = socket(RdmaPathPolicy.RDMA_PREFERRED);
        again.connect(jdk.getLocalAddress());

        assertEquals(attempts, transport.connectOptions.size(), "no second RDMA attempt");
        assertEquals("fallback (remembered): no RDMA listener (Connection refused)",
            again.getOption(RdmaSocketOptions.RDMA_PATH).reason());
    }

    @Test
    void shouldFailAsTheJdkWhenNeitherRdmaNorTcpListens() throws Exception {
        final ServerSocketChannel gone = tcpServer();
        final InetSocketAddress nobody = (InetSocketAddress) gone.getLocalAddress();
        gone.close();
        final RdmaSocketChannel channel = socket(RdmaPathPolicy.RDMA_PREFERRED);

        final ConnectException refused = assertThrows(ConnectException.class, () -> channel.connect(nobody));

        assertSame(ConnectException.class, refused.getClass());
        assertEquals("Connection refused", refused.getMessage());
        assertFalse(channel.isOpen(), "a failed connect closes the channel");
    }

    @Test
    void shouldNotFallBackWhenRdmaOnly() throws Exception {
        final ServerSocketChannel jdk = tcpServer();
        final RdmaSocketChannel channel = socket(RdmaPathPolicy.RDMA_ONLY);

        final ConnectException refused = assertThrows(ConnectException.class,
            () -> channel.connect(jdk.getLocalAddress()));

        assertSame(ConnectException.class, refused.getClass(), "the JDK's exception, not the engine's");
        assertEquals("Connection refused", refused.getMessage());
        assertInstanceOf(NoRdmaPathException.class, refused.getCause());
        assertFalse(channel.isOpen());
    }

    @Test
    void shouldNotFallBackWhenTheRdmaPeerRefusedTheConnection() throws Exception {
        final RdmaServerSocketChannel full = track(provider.openServerSocketChannel(StandardProtocolFamily.INET,
            false));
        full.bind(new InetSocketAddress(LOOPBACK, 0), 1);
        socket(RdmaPathPolicy.RDMA_ONLY).connect(full.getLocalAddress());
        final RdmaSocketChannel channel = socket(RdmaPathPolicy.RDMA_PREFERRED);

        final ConnectException refused = assertThrows(ConnectException.class,
            () -> channel.connect(full.getLocalAddress()));

        assertEquals("Connection refused: backlog full", refused.getMessage());
    }

    @Test
    void shouldUseTcpOnlyWhenTold() throws Exception {
        final ServerSocketChannel jdk = tcpServer();
        final RdmaSocketChannel channel = socket(RdmaPathPolicy.TCP_ONLY);
        final int attempts = transport.connectOptions.size();

        channel.connect(jdk.getLocalAddress());

        assertEquals(attempts, transport.connectOptions.size(), "no RDMA attempt");
        assertEquals("tcp (policy TCP_ONLY)", channel.getOption(RdmaSocketOptions.RDMA_PATH).toString());
        assertEquals(RdmaPathPolicy.TCP_ONLY, channel.getOption(RdmaSocketOptions.RDMA_PATH_POLICY));
        exchange(channel, track(jdk.accept()));
    }

    @Test
    void shouldFollowTheDestinationRulesInADropInChannel() throws Exception {
        final ServerSocketChannel jdk = tcpServer();
        final int port = ((InetSocketAddress) jdk.getLocalAddress()).getPort();
        final Properties rules = new Properties();
        rules.setProperty(DropInConfiguration.RULES_PROP_NAME, "rdma-only connect 127.0.0.1 " + port
            + "; tcp connect 127.0.0.0/8");
        provider = providerWith(rules);

        final SocketChannel refused = track(provider.openSocketChannel(StandardProtocolFamily.INET, true));
        assertNull(refused.getOption(RdmaSocketOptions.RDMA_PATH_POLICY), "the rules decide at connect");
        assertThrows(ConnectException.class, () -> refused.connect(jdk.getLocalAddress()));

        final SocketChannel overTcp = track(provider.openSocketChannel(StandardProtocolFamily.INET, true));
        final ServerSocketChannel other = tcpServer();
        overTcp.connect(other.getLocalAddress());
        assertEquals("tcp (rule 'tcp connect 127.0.0.0/8')",
            overTcp.getOption(RdmaSocketOptions.RDMA_PATH).toString());
        assertEquals(RdmaPathPolicy.TCP_ONLY, overTcp.getOption(RdmaSocketOptions.RDMA_PATH_POLICY));
    }

    @Test
    void shouldRefuseToSetThePath() throws IOException {
        final RdmaSocketChannel channel = socket(RdmaPathPolicy.RDMA_ONLY);

        assertEquals("RDMA_PATH cannot be set", assertThrows(SocketException.class,
            () -> channel.setOption(RdmaSocketOptions.RDMA_PATH, RdmaPath.tcp("wanted"))).getMessage());
        assertNull(channel.getOption(RdmaSocketOptions.RDMA_PATH), "no path before a connection");
    }

    // -- TCP-path channels

    @Test
    void shouldLetACancelledTcpChannelBlockAtOnce() throws Exception {
        final ServerSocketChannel jdk = tcpServer();
        final RdmaSocketChannel channel = socket(RdmaPathPolicy.TCP_ONLY);
        channel.connect(jdk.getLocalAddress());
        final SocketChannel accepted = track(jdk.accept());
        channel.configureBlocking(false);
        final Selector selector = track(provider.openSelector());
        final SelectionKey key = channel.register(selector, OP_READ);
        selector.selectNow();

        key.cancel();
        channel.configureBlocking(true);

        accepted.write(ByteBuffer.wrap(new byte[] {7}));
        assertEquals(1, channel.read(ByteBuffer.allocate(1)), "a blocking read over the platform channel");
    }

    /**
     * A TCP-path channel with a reader blocked in the platform channel's read.
     */
    private record BlockedReader(RdmaSocketChannel channel, Thread thread, FutureTask<Integer> result) {
    }

    private BlockedReader blockedTcpReader() throws Exception {
        final ServerSocketChannel jdk = tcpServer();
        final RdmaSocketChannel channel = socket(RdmaPathPolicy.TCP_ONLY);
        channel.connect(jdk.getLocalAddress());
        track(jdk.accept());
        final AtomicReference<Thread> reader = new AtomicReference<>();
        final FutureTask<Integer> read = start("tcp-reader", () -> {
            reader.set(Thread.currentThread());
            return channel.read(ByteBuffer.allocate(1));
        });
        ChannelFixture.await("the reader to start", () -> reader.get() != null);
        ChannelFixture.await("the reader to block in read", () -> isIn(reader.get(), "read"));
        return new BlockedReader(channel, reader.get(), read);
    }

    @Test
    void shouldCloseATcpChannelWhoseBlockedReaderIsInterrupted() throws Exception {
        final BlockedReader reader = blockedTcpReader();

        reader.thread().interrupt();

        final Exception failure = assertThrows(Exception.class, () -> reader.result().get(10, TimeUnit.SECONDS));
        assertInstanceOf(ClosedByInterruptException.class, failure.getCause());
        assertFalse(reader.channel().isOpen(), "an interrupt closes the channel, as the JDK's");
    }

    @Test
    void shouldFailABlockedTcpReaderWithAsynchronousCloseOnClose() throws Exception {
        final BlockedReader reader = blockedTcpReader();

        reader.channel().close();

        final Exception failure = assertThrows(Exception.class, () -> reader.result().get(10, TimeUnit.SECONDS));
        assertInstanceOf(AsynchronousCloseException.class, failure.getCause());
    }

    @Test
    void shouldTimeOutAdaptorReadsOverTcp() throws Exception {
        final ServerSocketChannel jdk = tcpServer();
        final RdmaSocketChannel channel = socket(RdmaPathPolicy.TCP_ONLY);
        channel.connect(jdk.getLocalAddress());
        final SocketChannel accepted = track(jdk.accept());
        final Socket socket = channel.socket();
        socket.setSoTimeout(100);
        final InputStream in = socket.getInputStream();

        assertEquals("Read timed out", assertThrows(SocketTimeoutException.class, in::read).getMessage());
        socket.getOutputStream().write(new byte[] {1, 2});
        assertEquals(2, accepted.read(ByteBuffer.allocate(2)));
        accepted.write(ByteBuffer.wrap(new byte[] {9}));
        assertEquals(9, in.read());
    }

    /**
     * Whether the thread is blocked in the platform channel's {@code method}: the frame is on its stack and the
     * thread is in a native call or parked.
     */
    private static boolean isIn(final Thread thread, final String method) {
        final StackTraceElement[] stack = thread.getStackTrace();
        boolean inMethod = false;
        for (final StackTraceElement frame : stack) {
            inMethod |= frame.getClassName().equals("sun.nio.ch.SocketChannelImpl")
                && frame.getMethodName().equals(method);
        }
        return inMethod && stack.length > 0 && (stack[0].isNativeMethod()
            || thread.getState() == Thread.State.WAITING || thread.getState() == Thread.State.TIMED_WAITING);
    }

    /**
     * A blocking accept on its own thread, which records whether it is still interrupted when the accept ends.
     */
    private record Accepting(Thread thread, FutureTask<SocketChannel> result, AtomicBoolean interruptedAtEnd) {
    }

    /**
     * Start a blocking accept on its own thread and return once it waits.
     */
    private static Accepting waitingAccept(final RdmaServerSocketChannel server) {
        final AtomicReference<Thread> thread = new AtomicReference<>();
        final AtomicBoolean interruptedAtEnd = new AtomicBoolean();
        final FutureTask<SocketChannel> result = start("acceptor", () -> {
            thread.set(Thread.currentThread());
            try {
                return server.accept();
            } finally {
                interruptedAtEnd.set(Thread.currentThread().isInterrupted());
            }
        });
        ChannelFixture.await("the acceptor to start", () -> thread.get() != null);
        awaitWaiting(thread.get());
        return new Accepting(thread.get(), result, interruptedAtEnd);
    }

    /**
     * Wait until the thread waits: parked, or in a native wait (a platform selector's epoll_wait).
     */
    private static void awaitWaiting(final Thread thread) {
        ChannelFixture.await(thread.getName() + " to wait", () -> {
            final Thread.State state = thread.getState();
            if (state == Thread.State.WAITING || state == Thread.State.TIMED_WAITING) {
                return true;
            }
            final StackTraceElement[] stack = thread.getStackTrace();
            return stack.length > 0 && stack[0].isNativeMethod() && stack[0].getClassName().equals("sun.nio.ch.EPoll");
        });
    }

    // -- server channels

    @Test
    void shouldListenForRdmaAndTcpPeersOnOnePort() throws Exception {
        final RdmaServerSocketChannel server = server(RdmaPathPolicy.RDMA_PREFERRED);
        final RdmaPath listening = server.getOption(RdmaSocketOptions.RDMA_PATH);
        assertEquals(RdmaPath.Kind.RDMA_AND_TCP, listening.kind());
        assertEquals("fake", listening.provider());
        assertTrue(server.toString().contains(" path=rdma:fake+tcp (policy RDMA_PREFERRED)"), server.toString());

        final SocketChannel jdkClient = track(SocketChannel.open(server.getLocalAddress()));
        final SocketChannel overTcp = track(server.accept());
        assertEquals("tcp (accepted over TCP)", overTcp.getOption(RdmaSocketOptions.RDMA_PATH).toString());
        exchange(jdkClient, overTcp);

        final RdmaSocketChannel rdmaClient = socket(RdmaPathPolicy.RDMA_ONLY);
        rdmaClient.connect(server.getLocalAddress());
        final SocketChannel overRdma = track(server.accept());
        assertEquals("rdma:fake (accepted over RDMA)", overRdma.getOption(RdmaSocketOptions.RDMA_PATH).toString());
        exchange(rdmaClient, overRdma);
    }

    @Test
    void shouldWakeABlockedAcceptForEitherKindOfPeer() throws Exception {
        final RdmaServerSocketChannel server = server(RdmaPathPolicy.RDMA_PREFERRED);
        final FutureTask<SocketChannel> first = waitingAccept(server).result();
        socket(RdmaPathPolicy.RDMA_ONLY).connect(server.getLocalAddress());
        assertEquals(RdmaPath.Kind.RDMA, track(first.get(10, TimeUnit.SECONDS))
            .getOption(RdmaSocketOptions.RDMA_PATH).kind());

        final FutureTask<SocketChannel> second = waitingAccept(server).result();
        track(SocketChannel.open(server.getLocalAddress()));
        assertEquals(RdmaPath.Kind.TCP, track(second.get(10, TimeUnit.SECONDS))
            .getOption(RdmaSocketOptions.RDMA_PATH).kind());
    }

    @Test
    void shouldEndABlockedAcceptOnCloseAndOnInterrupt() throws Exception {
        final RdmaServerSocketChannel closed = server(RdmaPathPolicy.RDMA_PREFERRED);
        final FutureTask<SocketChannel> accept = waitingAccept(closed).result();
        closed.close();
        assertInstanceOf(AsynchronousCloseException.class,
            assertThrows(Exception.class, () -> accept.get(10, TimeUnit.SECONDS)).getCause());

        final RdmaServerSocketChannel interrupted = server(RdmaPathPolicy.RDMA_PREFERRED);
        final Accepting accepting = waitingAccept(interrupted);
        accepting.thread().interrupt();
        assertInstanceOf(ClosedByInterruptException.class,
            assertThrows(Exception.class, () -> accepting.result().get(10, TimeUnit.SECONDS)).getCause());
        assertFalse(interrupted.isOpen(), "an interrupt closes the channel");
        assertTrue(accepting.interruptedAtEnd().get(), "the interrupt status is kept");
    }

    @Test
    void shouldTimeOutAnAdaptorAcceptWaitingForBoth() throws Exception {
        final RdmaServerSocketChannel server = server(RdmaPathPolicy.RDMA_PREFERRED);
        server.socket().setSoTimeout(100);

        assertEquals("Accept timed out", assertThrows(SocketTimeoutException.class, () -> server.socket().accept())
            .getMessage());
        assertTrue(server.isOpen());
    }

    @Test
    void shouldSelectAcceptsOfEitherKind() throws Exception {
        final RdmaServerSocketChannel server = server(RdmaPathPolicy.RDMA_PREFERRED);
        server.configureBlocking(false);
        final Selector selector = track(provider.openSelector());
        final SelectionKey key = server.register(selector, OP_ACCEPT);

        track(SocketChannel.open(server.getLocalAddress()));
        assertEquals(1, selector.select(10_000));
        assertTrue(key.isAcceptable());
        assertEquals(RdmaPath.Kind.TCP, track(server.accept()).getOption(RdmaSocketOptions.RDMA_PATH).kind());
        selector.selectedKeys().clear();

        socket(RdmaPathPolicy.RDMA_ONLY).connect(server.getLocalAddress());
        assertEquals(1, selector.select(10_000));
        assertEquals(RdmaPath.Kind.RDMA, track(server.accept()).getOption(RdmaSocketOptions.RDMA_PATH).kind());
        selector.selectedKeys().clear();
        assertEquals(0, selector.selectNow());
        assertNull(server.accept());
    }

    @Test
    void shouldListenOverTcpAloneWhereRdmaCannot() throws Exception {
        transport.refuseListen = true;

        final RdmaServerSocketChannel server = server(RdmaPathPolicy.RDMA_PREFERRED);

        assertTrue(server.getOption(RdmaSocketOptions.RDMA_PATH).toString().startsWith("tcp (RDMA cannot listen "
            + "here: BindException: Cannot assign requested address: no RDMA device has "),
            server.getOption(RdmaSocketOptions.RDMA_PATH).toString());
        track(SocketChannel.open(server.getLocalAddress()));
        assertEquals(RdmaPath.Kind.TCP, track(server.accept()).getOption(RdmaSocketOptions.RDMA_PATH).kind());
    }

    @Test
    void shouldListenOverTcpOnlyWhenTold() throws Exception {
        final RdmaServerSocketChannel server = server(RdmaPathPolicy.TCP_ONLY);

        assertEquals("tcp (policy TCP_ONLY)", server.getOption(RdmaSocketOptions.RDMA_PATH).toString());
        final RdmaSocketChannel rdma = socket(RdmaPathPolicy.RDMA_ONLY);
        assertThrows(ConnectException.class, () -> rdma.connect(server.getLocalAddress()));
    }
}

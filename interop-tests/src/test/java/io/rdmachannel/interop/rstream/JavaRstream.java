package io.rdmachannel.interop.rstream;

import io.rdmachannel.nio.RdmaSelectorProvider;
import io.rdmachannel.nio.RdmaSocketOptions;

import java.io.IOException;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.net.UnknownHostException;
import java.nio.ByteBuffer;
import java.nio.channels.NetworkChannel;
import java.nio.channels.SelectionKey;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.channels.spi.SelectorProvider;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;

/**
 * A twin of rdma-core 44's {@code rstream} over {@link io.rdmachannel.nio.RdmaSocketChannel}s, so that the C tool
 * and this program can test each other: the same options ({@link RstreamOptions}), the same two-connection default
 * mode and custom mode, the same 16-byte sync per test, the same {@code -T v} pattern ({@link VerifyPattern}) and
 * the same output ({@link PerfReport}).
 *
 * <pre>
 * java ... io.rdmachannel.interop.rstream.JavaRstream -b 10.0.0.1 -S 65536 -C 100 -I 100 -T v -T b   (server)
 * java ... io.rdmachannel.interop.rstream.JavaRstream -s 10.0.0.1 -S 65536 -C 100 -I 100 -T v -T b   (client)
 * </pre>
 *
 * <p>Exit status as rstream: 0; 255 when listening or connecting fails, or in custom mode when the test fails
 * (including {@code data verification failed byte N}); in default mode a failed test is only printed. Usage errors
 * exit with 1. A server prints the header once it listens, so a harness can wait for that line before it starts
 * the client.
 */
public final class JavaRstream {

    static final int EXIT_SUCCESS = 0;
    static final int EXIT_USAGE = 1;
    static final int EXIT_FAILURE = 255;

    private static final int SYNC_LENGTH = 16;

    private enum Optimization {
        NONE, LATENCY, BANDWIDTH
    }

    private final RstreamOptions options;
    private final PrintStream out;
    private final PrintStream err;
    private final VerifyPattern pattern = new VerifyPattern();
    private final SelectorProvider provider;
    private final CompletableFuture<InetSocketAddress> listening = new CompletableFuture<>();
    private ByteBuffer buffer;
    private ServerSocketChannel listener;

    /**
     * @param options the parsed command line.
     * @param out     where results and verification failures go (rstream's stdout).
     * @param err     where call failures go (rstream's perror lines on stderr).
     */
    JavaRstream(final RstreamOptions options, final PrintStream out, final PrintStream err) {
        this.options = options;
        this.out = out;
        this.err = err;
        this.provider = options.useSockets() ? SelectorProvider.provider() : RdmaSelectorProvider.provider();
        if (options.corruptedSentByte() >= 0) {
            pattern.corruptSentByte(options.corruptedSentByte());
        }
    }

    /**
     * Runs rstream with a command line and exits with its status.
     *
     * @param args rstream's options.
     */
    public static void main(final String[] args) {
        System.exit(run(System.out, System.err, args));
    }

    /**
     * Runs rstream with a command line.
     *
     * @param out  standard output.
     * @param err  standard error.
     * @param args rstream's options.
     * @return the exit status.
     */
    static int run(final PrintStream out, final PrintStream err, final String... args) {
        final RstreamOptions options;
        try {
            options = RstreamOptions.parse(args);
        } catch (final IllegalArgumentException e) {
            out.println(e.getMessage());
            out.println(RstreamOptions.USAGE);
            out.flush();
            return EXIT_USAGE;
        }
        return new JavaRstream(options, out, err).run();
    }

    /**
     * @return completed with the listening address once a server listens (useful with {@code -p 0}); completed
     *     exceptionally if it never will.
     */
    CompletableFuture<InetSocketAddress> listening() {
        return listening;
    }

    /**
     * Runs the tests.
     *
     * @return the exit status.
     */
    int run() {
        try {
            return options.isCustom() ? runCustom() : runDefault();
        } finally {
            listening.completeExceptionally(new IllegalStateException("not listening"));
            closeQuietly(listener);
            out.flush();
            err.flush();
        }
    }

    private int runCustom() {
        final TestSpec test = options.customTest();
        if (!prepare(test.size())) {
            return EXIT_FAILURE;
        }
        final Transfers transfers = connect(Optimization.NONE);
        if (transfers == null) {
            return EXIT_FAILURE;
        }
        try {
            return runTest(transfers, test) ? EXIT_SUCCESS : EXIT_FAILURE;
        } finally {
            closeQuietly(transfers);
        }
    }

    private int runDefault() {
        final List<TestSpec> latency = options.latencyTests();
        final List<TestSpec> bandwidth = options.bandwidthTests();
        final int largest = latency.stream().mapToInt(TestSpec::size).max().orElse(0);
        if (!prepare(largest)) {
            return EXIT_FAILURE;
        }
        for (final Optimization optimization : List.of(Optimization.LATENCY, Optimization.BANDWIDTH)) {
            final Transfers transfers = connect(optimization);
            if (transfers == null) {
                return EXIT_FAILURE;
            }
            try {
                for (final TestSpec test : optimization == Optimization.LATENCY ? latency : bandwidth) {
                    runTest(transfers, test);
                }
            } finally {
                closeQuietly(transfers);
            }
        }
        return EXIT_SUCCESS;
    }

    // As rstream's run(): the buffer, then a server listens, then both print the header.
    private boolean prepare(final int largestTransfer) {
        buffer = ByteBuffer.allocateDirect(Math.max(SYNC_LENGTH, largestTransfer));
        if (!options.isClient() && !listen()) {
            return false;
        }
        out.println(PerfReport.HEADER);
        out.flush();
        return true;
    }

    private boolean runTest(final Transfers transfers, final TestSpec test) {
        final boolean client = options.isClient();
        if (!(client ? sendTransfer(transfers, SYNC_LENGTH) : receiveTransfer(transfers, SYNC_LENGTH))
            || !(client ? receiveTransfer(transfers, SYNC_LENGTH) : sendTransfer(transfers, SYNC_LENGTH))) {
            return false;
        }
        final long start = System.nanoTime();
        for (int i = 0; i < test.iterations(); i++) {
            for (int t = 0; t < test.count(); t++) {
                if (!(client ? sendTransfer(transfers, test.size()) : receiveTransfer(transfers, test.size()))) {
                    return false;
                }
            }
            for (int t = 0; t < test.count(); t++) {
                if (!(client ? receiveTransfer(transfers, test.size()) : sendTransfer(transfers, test.size()))) {
                    return false;
                }
            }
        }
        final long elapsedMicros = (System.nanoTime() - start) / 1000;
        out.println(PerfReport.line(test, elapsedMicros));
        out.flush();
        return true;
    }

    private boolean sendTransfer(final Transfers transfers, final int size) {
        if (options.verify()) {
            pattern.fill(buffer, size);
        }
        try {
            transfers.send(buffer, size);
            return true;
        } catch (final IOException e) {
            perror("rsend", e);
            explain(err, e, transfers.channel());
            return false;
        }
    }

    private boolean receiveTransfer(final Transfers transfers, final int size) {
        try {
            transfers.receive(buffer, size);
        } catch (final IOException e) {
            perror("rrecv", e);
            explain(err, e, transfers.channel());
            return false;
        }
        if (options.verify()) {
            final long failed = pattern.check(buffer, size);
            if (failed != VerifyPattern.VERIFIED) {
                out.println("data verification failed byte " + failed);
                out.flush();
                return false;
            }
        }
        return true;
    }

    private Transfers connect(final Optimization optimization) {
        final SocketChannel channel = options.isClient() ? clientConnect(optimization) : serverAccept(optimization);
        if (channel == null) {
            return null;
        }
        try {
            return Transfers.over(channel, options.isAsync());
        } catch (final IOException e) {
            perror("rpoll", e);
            closeQuietly(channel);
            return null;
        }
    }

    private boolean listen() {
        final InetAddress address;
        try {
            address = options.bindAddress() == null ? null : InetAddress.getByName(options.bindAddress());
        } catch (final UnknownHostException e) {
            out.println("getaddrinfo: " + e.getMessage());
            return false;
        }
        try {
            listener = provider.openServerSocketChannel();
            listener.setOption(StandardSocketOptions.SO_REUSEADDR, true);
            listener.bind(address == null ? new InetSocketAddress(options.port())
                : new InetSocketAddress(address, options.port()), 1);
            listening.complete((InetSocketAddress) listener.getLocalAddress());
            return true;
        } catch (final IOException | RuntimeException e) {
            perror("rbind", e);
            return false;
        }
    }

    private SocketChannel serverAccept(final Optimization optimization) {
        SocketChannel channel = null;
        try {
            // As rstream: the listener's settings are what the accepted connection is created with.
            setOptions(listener, optimization);
            listener.configureBlocking(options.isBlocking());
            while (channel == null) {
                if (!options.isBlocking() && options.isAsync()) {
                    Transfers.awaitReady(listener, SelectionKey.OP_ACCEPT);
                }
                channel = listener.accept();
                if (channel == null && !options.isAsync()) {
                    Transfers.awaitReady(listener, SelectionKey.OP_ACCEPT);
                }
            }
            setOptions(channel, optimization);
            channel.configureBlocking(options.isBlocking());
            return channel;
        } catch (final IOException | RuntimeException e) {
            perror(channel == null ? "raccept" : "rsetsockopt", e);
            closeQuietly(channel);
            return null;
        }
    }

    private SocketChannel clientConnect(final Optimization optimization) {
        final InetSocketAddress remote;
        final InetSocketAddress local;
        try {
            remote = new InetSocketAddress(InetAddress.getByName(options.serverAddress()), options.port());
        } catch (final UnknownHostException e) {
            out.println("getaddrinfo: " + e.getMessage());
            return null;
        }
        try {
            // rstream binds the client to the bind address with the same port number.
            local = options.bindAddress() == null ? null
                : new InetSocketAddress(InetAddress.getByName(options.bindAddress()), options.port());
        } catch (final UnknownHostException e) {
            out.println("getaddrinfo src_addr: " + e.getMessage());
            return null;
        }
        SocketChannel channel = null;
        String call = "rsocket";
        try {
            channel = provider.openSocketChannel();
            setOptions(channel, optimization);
            channel.configureBlocking(options.isBlocking());
            if (local != null) {
                call = "rbind";
                channel.bind(local);
            }
            call = "rconnect";
            if (!channel.connect(remote)) {
                call = "async rconnect";
                do {
                    Transfers.awaitReady(channel, SelectionKey.OP_CONNECT);
                } while (!channel.finishConnect());
            }
            return channel;
        } catch (final IOException | RuntimeException e) {
            perror(call, e);
            closeQuietly(channel);
            return null;
        }
    }

    // rstream's set_options. rsockets doubles SO_SNDBUF/SO_RCVBUF into its ring sizes (as Linux doubles socket
    // buffers); our channels take the value as the ring size, so they get the doubled value.
    private void setOptions(final NetworkChannel channel, final Optimization optimization) throws IOException {
        final boolean rdma = !options.useSockets();
        final int buffers = rdma ? 2 * options.bufferSize() : options.bufferSize();
        if (channel.supportedOptions().contains(StandardSocketOptions.SO_SNDBUF)) {
            channel.setOption(StandardSocketOptions.SO_SNDBUF, buffers);
        }
        channel.setOption(StandardSocketOptions.SO_RCVBUF, buffers);
        if (channel.supportedOptions().contains(StandardSocketOptions.TCP_NODELAY)) {
            channel.setOption(StandardSocketOptions.TCP_NODELAY, true);
        }
        if (rdma && optimization != Optimization.NONE) {
            channel.setOption(RdmaSocketOptions.RDMA_INLINE_SIZE,
                optimization == Optimization.LATENCY ? options.inlineSize() : 0);
        }
    }

    // As perror: the call, then the reason (the exception's message, which for a channel is the errno text).
    private void perror(final String call, final Exception e) {
        err.println(call + ": " + (e.getMessage() != null ? e.getMessage() : e.toString()));
        err.flush();
    }

    /**
     * After a transfer's perror line, more than rstream says: what the failure came from (its causes and suppressed
     * exceptions, one line each, indented by depth) and the channel's state (for ours, the connection's counters,
     * credits and queue pair), so that a failure in a harness's log can be explained without running it again.
     *
     * @param err     where the lines go.
     * @param failure the failure perror reported.
     * @param channel the channel it happened on.
     */
    static void explain(final PrintStream err, final Throwable failure, final SocketChannel channel) {
        final Set<Throwable> seen = Collections.newSetFromMap(new IdentityHashMap<>());
        seen.add(failure);
        explainCauses(err, failure, "  ", seen);
        err.println("  on " + channel);
        err.flush();
    }

    // seen: what was printed already; a chain that leads back to one of them (as printStackTrace, it can) stops there
    private static void explainCauses(final PrintStream err, final Throwable failure, final String indent,
        final Set<Throwable> seen) {
        for (final Throwable suppressed : failure.getSuppressed()) {
            explainOne(err, "suppressed: ", suppressed, indent, seen);
        }
        if (failure.getCause() != null) {
            explainOne(err, "caused by: ", failure.getCause(), indent, seen);
        }
    }

    private static void explainOne(final PrintStream err, final String relation, final Throwable related,
        final String indent, final Set<Throwable> seen) {
        if (!seen.add(related)) {
            err.println(indent + relation + "[circular reference: " + related + "]");
            return;
        }
        err.println(indent + relation + related);
        explainCauses(err, related, indent + "  ", seen);
    }

    private static void closeQuietly(final AutoCloseable closeable) {
        if (closeable != null) {
            try {
                closeable.close();
            } catch (final Exception ignored) {
                // rstream ignores rshutdown and rclose failures.
            }
        }
    }
}

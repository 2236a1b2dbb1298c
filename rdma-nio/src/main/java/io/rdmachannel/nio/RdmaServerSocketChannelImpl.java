package io.rdmachannel.nio;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.BindException;
import java.net.InetSocketAddress;
import java.net.ProtocolFamily;
import java.net.ServerSocket;
import java.net.SocketAddress;
import java.net.SocketOption;
import java.net.SocketTimeoutException;
import java.nio.channels.AlreadyBoundException;
import java.nio.channels.AsynchronousCloseException;
import java.nio.channels.ClosedByInterruptException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.IllegalBlockingModeException;
import java.nio.channels.NotYetBoundException;
import java.nio.channels.SelectableChannel;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.channels.UnsupportedAddressTypeException;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;

import io.rdmachannel.channel.stream.StreamConnection;
import io.rdmachannel.channel.stream.StreamListener;
import io.rdmachannel.channel.stream.StreamReadiness;
import io.rdmachannel.channel.stream.StreamTransport;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The server channel state machine (after the JDK's ServerSocketChannelImpl).
 *
 * <p>It listens over RDMA (a stream listener), over TCP (a platform {@link ServerSocketChannel}, always
 * non-blocking), or both on the same address and port, as its path policy says: the one set, else the destination
 * rules for a drop-in channel, else RDMA only. Listening on both, it accepts RDMA peers and TCP peers (a plain
 * {@link java.net.Socket} among them) alike: a blocking accept then waits in a platform selector of its own, which
 * the RDMA listener's readiness wakes, and a selector of this provider registers the platform listener in its
 * platform selector ({@link #platformChannel()}).
 */
final class RdmaServerSocketChannelImpl extends RdmaServerSocketChannel implements RdmaSelectableChannel {
    private static final Logger LOG = LoggerFactory.getLogger(RdmaServerSocketChannel.class);
    private static final int ST_INUSE = 0;
    private static final int ST_CLOSING = 1;
    private static final int ST_CLOSED = 2;
    private static final int DEFAULT_BACKLOG = 50;
    /** Binding both listeners to one ephemeral port: attempts before giving up. */
    private static final int EPHEMERAL_ATTEMPTS = 32;

    private final RdmaSelectorProvider provider;
    private final ProtocolFamily family;
    /** Whether the destination rules decide what it listens on. */
    private final boolean dropIn;
    private final ReadinessRelay relay = new ReadinessRelay();
    private final Consumer<SelectionKey> ignoreReady = key -> { };

    // Lock held by the thread in accept
    private final ReentrantLock acceptLock = new ReentrantLock();
    // Lock for the fields below; never held while parking
    private final Object stateLock = new Object();

    // -- The following fields are protected by stateLock
    private volatile int state;
    private Thread acceptThread;
    private StreamTransport transport;
    private volatile StreamListener listener;
    private volatile ServerSocketChannel tcpServer;
    private SocketAddress localAddress;
    private final OptionValues options = new OptionValues(true);
    private ServerSocket socket;
    private RdmaPathPolicy policy;
    private volatile RdmaPath path;
    // -- End of fields protected by stateLock

    // -- Used by the thread in accept (acceptLock), closed with the channel
    private Selector waitSelector;
    private boolean tcpFirst;

    RdmaServerSocketChannelImpl(final RdmaSelectorProvider provider, final ProtocolFamily family,
        final boolean dropIn) {
        super(provider);
        this.provider = provider;
        this.family = family;
        this.dropIn = dropIn;
        this.transport = dropIn ? null : provider.transport();
    }

    @Override
    public ServerSocket socket() {
        synchronized (stateLock) {
            if (socket == null) {
                socket = new RdmaServerSocketAdaptor(this);
            }
            return socket;
        }
    }

    @Override
    public SocketAddress getLocalAddress() throws IOException {
        synchronized (stateLock) {
            ensureOpen();
            return localAddress;
        }
    }

    SocketAddress localAddress() {
        synchronized (stateLock) {
            return localAddress;
        }
    }

    boolean isBound() {
        synchronized (stateLock) {
            return localAddress != null;
        }
    }

    @Override
    public <T> ServerSocketChannel setOption(final SocketOption<T> name, final T value) throws IOException {
        OptionValues.checkType(OptionValues.SERVER_OPTIONS, name, value);
        OptionValues.checkSettable(name);
        synchronized (stateLock) {
            ensureOpen();
            options.set(name, value);
            final ServerSocketChannel platform = tcpServer;
            if (platform != null && OptionValues.isPlatformOption(name)) {
                platform.setOption(name, value);
            }
            return this;
        }
    }

    @Override
    @SuppressWarnings("unchecked")
    public <T> T getOption(final SocketOption<T> name) throws IOException {
        OptionValues.checkSupported(OptionValues.SERVER_OPTIONS, name);
        synchronized (stateLock) {
            ensureOpen();
            if (name == RdmaSocketOptions.RDMA_PATH) {
                return (T) path;
            }
            if (name == RdmaSocketOptions.RDMA_PATH_POLICY && options.pathPolicy() == null) {
                return (T) (policy != null ? policy : dropIn ? null : RdmaPathPolicy.RDMA_ONLY);
            }
            final ServerSocketChannel platform = tcpServer;
            if (platform != null && OptionValues.isPlatformOption(name)) {
                return platform.getOption(name);
            }
            return (T) options.get(name);
        }
    }

    @Override
    public Set<SocketOption<?>> supportedOptions() {
        return OptionValues.SERVER_OPTIONS;
    }

    @Override
    public ServerSocketChannel bind(final SocketAddress local, final int backlog) throws IOException {
        synchronized (stateLock) {
            ensureOpen();
            if (localAddress != null) {
                throw new AlreadyBoundException();
            }
            final SocketAddress address = local == null ? Addresses.anyLocal(family) : Addresses.check(local, family);
            final int queue = backlog < 1 ? DEFAULT_BACKLOG : backlog;
            final PathRules.Decision decision = decide(address);
            policy = decision.policy();
            switch (decision.policy()) {
                case RDMA_ONLY -> {
                    final StreamListener bound = transport().listen(address, queue, options.stream(), relay);
                    listener = bound;
                    localAddress = bound.localAddress();
                    path = RdmaPath.rdma(transport.providerName(), decision.reason());
                }
                case TCP_ONLY -> {
                    final ServerSocketChannel platform = bindPlatform(address, queue);
                    tcpServer = platform;
                    localAddress = platform.getLocalAddress();
                    path = RdmaPath.tcp(decision.reason());
                }
                case RDMA_PREFERRED -> bindBoth((InetSocketAddress) address, queue, decision.reason());
                default -> throw new AssertionError(decision.policy());
            }
            LOG.debug("listening on {} over {}", localAddress, path);
        }
        relay.onReadiness();
        return this;
    }

    /**
     * What to listen on: the policy set, else the destination rules (drop-in), else RDMA only. Only IP addresses
     * can be listened on over TCP.
     */
    private PathRules.Decision decide(final SocketAddress address) {
        final RdmaPathPolicy set = options.pathPolicy();
        final PathRules.Decision decision;
        if (set != null) {
            decision = new PathRules.Decision(set, "policy " + set);
        } else if (dropIn && address instanceof InetSocketAddress inet) {
            decision = provider.dropIn().rules().forBind(inet);
        } else {
            decision = new PathRules.Decision(RdmaPathPolicy.RDMA_ONLY, dropIn ? "not an IP address"
                : "opened as an RDMA channel");
        }
        if (!(address instanceof InetSocketAddress) && decision.policy() != RdmaPathPolicy.RDMA_ONLY) {
            if (decision.policy() == RdmaPathPolicy.TCP_ONLY) {
                throw new UnsupportedAddressTypeException();
            }
            return new PathRules.Decision(RdmaPathPolicy.RDMA_ONLY, decision.reason());
        }
        return decision;
    }

    /**
     * Listen over TCP and RDMA on one address and port: TCP first (it picks an ephemeral port when asked), then RDMA
     * on the same port, again on another port if RDMA has that one taken. Where RDMA cannot listen at all (no device
     * serves the address, no engine), TCP alone.
     */
    private void bindBoth(final InetSocketAddress address, final int backlog, final String reason)
        throws IOException {
        for (int attempt = 1; ; attempt++) {
            final ServerSocketChannel platform = bindPlatform(address, backlog);
            final InetSocketAddress bound = (InetSocketAddress) platform.getLocalAddress();
            final StreamListener rdma;
            try {
                rdma = transport().listen(new InetSocketAddress(address.getAddress(), bound.getPort()), backlog,
                    options.stream(), relay);
            } catch (final BindException ex) {
                if (isAddressInUse(ex) && address.getPort() == 0 && attempt < EPHEMERAL_ATTEMPTS) {
                    // RDMA has this ephemeral port taken: another one
                    platform.close();
                    continue;
                }
                if (isAddressInUse(ex)) {
                    platform.close();
                    throw ex;
                }
                listenTcpOnly(platform, ex);
                return;
            } catch (final IOException | RuntimeException ex) {
                listenTcpOnly(platform, ex);
                return;
            }
            tcpServer = platform;
            listener = rdma;
            localAddress = bound;
            path = RdmaPath.both(transport.providerName(), reason);
            return;
        }
    }

    private void listenTcpOnly(final ServerSocketChannel platform, final Exception why) throws IOException {
        tcpServer = platform;
        localAddress = platform.getLocalAddress();
        path = RdmaPath.tcp("RDMA cannot listen here: " + why.getClass().getSimpleName() + ": " + why.getMessage());
    }

    private static boolean isAddressInUse(final BindException failure) {
        return failure.getMessage() != null && failure.getMessage().startsWith("Address already in use");
    }

    private ServerSocketChannel bindPlatform(final SocketAddress address, final int backlog) throws IOException {
        final ServerSocketChannel platform = RdmaSelectorProvider.platformProvider().openServerSocketChannel(family);
        try {
            options.applyTo(platform);
            platform.bind(address, backlog);
            platform.configureBlocking(false);
            return platform;
        } catch (final IOException | RuntimeException ex) {
            platform.close();
            throw ex;
        }
    }

    /**
     * The stream engine (under the state lock): fixed for an explicitly opened channel, opened on first use for a
     * drop-in channel.
     */
    private StreamTransport transport() throws BindException {
        if (transport == null) {
            try {
                transport = provider.transport();
            } catch (final IllegalStateException | UncheckedIOException ex) {
                final BindException failure = new BindException("Cannot assign requested address: no RDMA stream"
                    + " engine: " + ex.getMessage());
                failure.initCause(ex);
                throw failure;
            }
        }
        return transport;
    }

    private void ensureOpen() throws ClosedChannelException {
        if (!isOpen()) {
            throw new ClosedChannelException();
        }
    }

    @Override
    public SocketChannel accept() throws IOException {
        return implAccept(isBlocking(), 0);
    }

    /**
     * A blocking accept with a timeout, for the server socket adaptor.
     *
     * @throws IllegalBlockingModeException if the channel is non-blocking.
     * @throws SocketTimeoutException "Accept timed out".
     */
    SocketChannel blockingAccept(final long nanos) throws IOException {
        acceptLock.lock();
        try {
            if (!isBlocking()) {
                throw new IllegalBlockingModeException();
            }
            return implAccept(true, ReadinessRelay.deadline(nanos));
        } finally {
            acceptLock.unlock();
        }
    }

    private SocketChannel implAccept(final boolean blocking, final long deadline) throws IOException {
        acceptLock.lock();
        try {
            ensureOpen();
            final ServerSocketChannel platform;
            synchronized (stateLock) {
                if (localAddress == null) {
                    throw new NotYetBoundException();
                }
                platform = tcpServer;
            }
            return platform == null ? acceptRdma(blocking, deadline) : acceptEither(platform, blocking, deadline);
        } finally {
            acceptLock.unlock();
        }
    }

    /**
     * Accept over RDMA only: park on the relay.
     */
    private SocketChannel acceptRdma(final boolean blocking, final long deadline) throws IOException {
        final ReadinessRelay childRelay = new ReadinessRelay();
        StreamConnection accepted = null;
        try {
            begin(blocking);
            final StreamListener bound = listener;
            accepted = bound.accept(childRelay);
            while (blocking && accepted == null && isOpen()) {
                final long seen = relay.generation();
                if (!isOpen()) {
                    break;
                }
                bound.arm();
                accepted = bound.accept(childRelay);
                if (accepted == null && !relay.await(seen, deadline)) {
                    throw new SocketTimeoutException("Accept timed out");
                }
                if (accepted == null && isOpen()) {
                    accepted = bound.accept(childRelay);
                }
            }
        } finally {
            end(blocking, accepted != null);
        }
        return accepted == null ? null : acceptedOverRdma(childRelay, accepted);
    }

    /**
     * Accept over RDMA or TCP, whichever has a connection waiting (taking turns); a blocking accept waits for both in
     * a platform selector of its own, which the RDMA listener's readiness wakes. Interrupts and asynchronous close
     * are handled here, as the JDK handles them: the platform selector's wait does not report them as a channel
     * would.
     */
    private SocketChannel acceptEither(final ServerSocketChannel platform, final boolean blocking,
        final long deadline) throws IOException {
        if (!blocking) {
            return acceptOnce(platform);
        }
        synchronized (stateLock) {
            ensureOpen();
            acceptThread = Thread.currentThread();
        }
        try {
            final Selector waiter = waitSelector(platform);
            while (true) {
                if (!isOpen()) {
                    throw new AsynchronousCloseException();
                }
                if (Thread.currentThread().isInterrupted()) {
                    close();
                    throw new ClosedByInterruptException();
                }
                final long seen = relay.generation();
                SocketChannel accepted = acceptOnce(platform);
                if (accepted != null) {
                    return accepted;
                }
                final StreamListener bound = listener;
                if (bound != null) {
                    bound.arm();
                    accepted = acceptOnce(platform);
                    if (accepted != null) {
                        return accepted;
                    }
                }
                if (relay.generation() != seen) {
                    continue;
                }
                if (deadline == 0) {
                    waiter.select(ignoreReady);
                } else {
                    final long remaining = deadline - System.nanoTime();
                    if (remaining <= 0) {
                        throw new SocketTimeoutException("Accept timed out");
                    }
                    waiter.select(ignoreReady, Math.max(1, TimeUnit.NANOSECONDS.toMillis(remaining + 999_999)));
                }
            }
        } finally {
            synchronized (stateLock) {
                acceptThread = null;
                if (state == ST_CLOSING) {
                    tryClose();
                }
            }
        }
    }

    private SocketChannel acceptOnce(final ServerSocketChannel platform) throws IOException {
        tcpFirst = !tcpFirst;
        if (tcpFirst) {
            final SocketChannel viaTcp = platform.accept();
            if (viaTcp != null) {
                return acceptedOverTcp(viaTcp);
            }
        }
        final StreamListener bound = listener;
        if (bound != null) {
            final ReadinessRelay childRelay = new ReadinessRelay();
            final StreamConnection viaRdma = bound.accept(childRelay);
            if (viaRdma != null) {
                return acceptedOverRdma(childRelay, viaRdma);
            }
        }
        if (!tcpFirst) {
            final SocketChannel viaTcp = platform.accept();
            if (viaTcp != null) {
                return acceptedOverTcp(viaTcp);
            }
        }
        return null;
    }

    private Selector waitSelector(final ServerSocketChannel platform) throws IOException {
        if (waitSelector == null) {
            final Selector opened = RdmaSelectorProvider.platformProvider().openSelector();
            try {
                platform.register(opened, SelectionKey.OP_ACCEPT);
            } catch (final IOException | RuntimeException ex) {
                opened.close();
                throw ex;
            }
            waitSelector = opened;
            relay.wakeAlso(opened);
        }
        return waitSelector;
    }

    private SocketChannel acceptedOverRdma(final ReadinessRelay childRelay, final StreamConnection accepted) {
        final OptionValues inherited;
        final StreamTransport engine;
        synchronized (stateLock) {
            inherited = options.inherit();
            engine = transport;
        }
        final RdmaPath over = RdmaPath.rdma(engine.providerName(), "accepted over RDMA");
        LOG.debug("accepted {} on {} over {}", accepted.remoteAddress(),
            accepted.localAddress(), over);
        return new RdmaSocketChannelImpl(provider, engine, family, childRelay, accepted, inherited, over);
    }

    private SocketChannel acceptedOverTcp(final SocketChannel accepted) throws IOException {
        try {
            final RdmaSocketChannelImpl channel = new RdmaSocketChannelImpl(provider, family, accepted,
                RdmaPath.tcp("accepted over TCP"));
            LOG.debug("accepted {} on {} over {}", channel.remoteAddress(),
                channel.localAddress(), channel.path());
            return channel;
        } catch (final IOException | RuntimeException ex) {
            accepted.close();
            throw ex;
        }
    }

    private void begin(final boolean blocking) throws ClosedChannelException {
        if (blocking) {
            begin();
        }
        synchronized (stateLock) {
            ensureOpen();
            if (localAddress == null) {
                throw new NotYetBoundException();
            }
            if (blocking) {
                acceptThread = Thread.currentThread();
            }
        }
    }

    private void end(final boolean blocking, final boolean completed) throws IOException {
        if (blocking) {
            synchronized (stateLock) {
                acceptThread = null;
                if (state == ST_CLOSING) {
                    tryClose();
                }
            }
            end(completed);
        }
    }

    // -- selection

    @Override
    public ReadinessRelay relay() {
        return relay;
    }

    @Override
    public SelectableChannel platformChannel() {
        return tcpServer;
    }

    @Override
    public int translateReadyOps(final int interestOps) {
        final StreamListener bound = listener;
        if (state == ST_INUSE && bound != null && (bound.readyOps() & StreamReadiness.ACCEPT) != 0) {
            return SelectionKey.OP_ACCEPT & interestOps;
        }
        return 0;
    }

    @Override
    public void armEndpoint() {
        final StreamListener bound = listener;
        if (state == ST_INUSE && bound != null) {
            bound.arm();
        }
    }

    // -- close

    @Override
    protected void implConfigureBlocking(final boolean block) throws IOException {
        synchronized (stateLock) {
            ensureOpen();
        }
    }

    @Override
    protected void implCloseSelectableChannel() throws IOException {
        synchronized (stateLock) {
            state = ST_CLOSING;
        }
        relay.signal();
        if (!isBlocking()) {
            acceptLock.lock();
            acceptLock.unlock();
        }
        synchronized (stateLock) {
            if (state == ST_CLOSING) {
                tryClose();
            }
        }
    }

    private boolean tryClose() {
        assert Thread.holdsLock(stateLock) && state == ST_CLOSING;
        if (acceptThread == null && !isRegistered()) {
            state = ST_CLOSED;
            final StreamListener bound = listener;
            if (bound != null) {
                bound.close();
            }
            final ServerSocketChannel platform = tcpServer;
            if (platform != null) {
                try {
                    platform.close();
                    if (waitSelector != null) {
                        // drops the platform listener's registration, which releases its socket
                        waitSelector.close();
                    }
                } catch (final IOException ex) {
                    LOG.debug("closing the TCP listener of {}", localAddress, ex);
                }
            }
            return true;
        }
        return false;
    }

    @Override
    public void kill() {
        acceptLock.lock();
        acceptLock.unlock();
        synchronized (stateLock) {
            if (state == ST_CLOSING) {
                tryClose();
            }
        }
    }

    @Override
    public String toString() {
        final StringBuilder text = new StringBuilder(RdmaServerSocketChannel.class.getName()).append('[');
        if (!isOpen()) {
            text.append("closed");
        } else {
            final SocketAddress local = localAddress();
            text.append(local == null ? "unbound" : local.toString());
            final RdmaPath current = path;
            if (current != null) {
                text.append(" path=").append(current);
            }
        }
        return text.append(']').toString();
    }
}

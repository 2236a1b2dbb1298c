package io.rdmachannel.nio;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.NoRouteToHostException;
import java.net.ProtocolFamily;
import java.net.Socket;
import java.net.SocketAddress;
import java.net.SocketOption;
import java.net.SocketTimeoutException;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.AlreadyBoundException;
import java.nio.channels.AlreadyConnectedException;
import java.nio.channels.AsynchronousCloseException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ConnectionPendingException;
import java.nio.channels.IllegalBlockingModeException;
import java.nio.channels.NoConnectionPendingException;
import java.nio.channels.NotYetConnectedException;
import java.nio.channels.SelectableChannel;
import java.nio.channels.SelectionKey;
import java.nio.channels.SocketChannel;
import java.nio.channels.UnsupportedAddressTypeException;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;

import io.rdmachannel.channel.ConnectionStatistics;
import io.rdmachannel.channel.cm.NoRdmaPathException;
import io.rdmachannel.channel.spi.WaitSet;
import io.rdmachannel.channel.stream.StreamConnection;
import io.rdmachannel.channel.stream.StreamConnector;
import io.rdmachannel.channel.stream.StreamOptions;
import io.rdmachannel.channel.stream.StreamReadiness;
import io.rdmachannel.channel.stream.StreamTransport;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The socket channel state machine (after the JDK's SocketChannelImpl). Every blocking operation is
 * {@code begin()}, a non-blocking attempt on the endpoint, then arm / attempt again / park on the relay, and
 * {@code end()}; close wakes parked threads through the relay and defers releasing the endpoint until no thread is in
 * a blocking operation and no selector holds a key.
 *
 * <p>A connection runs over RDMA (a stream endpoint) or over TCP (a platform {@link SocketChannel}, {@link #tcp}),
 * chosen at connect by the path policy: the one set, else the destination rules for a drop-in channel, else RDMA
 * only. Over TCP every operation is the platform channel's (same exceptions, same blocking, interrupt and
 * virtual-thread behaviour); the platform channel's blocking mode follows this channel's, and a selector of this
 * provider registers it in its platform selector ({@link #platformChannel()}). A connect that may fall back tries
 * RDMA first, for at most the fallback timeout, and continues over TCP, inside this channel, when RDMA cannot reach
 * the peer ({@link NoRdmaPathException}, no route, no answer in time).
 */
final class RdmaSocketChannelImpl extends RdmaSocketChannel implements RdmaSelectableChannel {
    private static final Logger LOG = LoggerFactory.getLogger(RdmaSocketChannel.class);

    private static final int ST_UNCONNECTED = 0;
    private static final int ST_CONNECTIONPENDING = 1;
    private static final int ST_CONNECTED = 2;
    private static final int ST_CLOSING = 3;
    private static final int ST_CLOSED = 4;

    private final RdmaSelectorProvider provider;
    private final ProtocolFamily family;
    /** Whether the destination rules decide the path (opened by the JVM-wide provider for an unmodified program). */
    private final boolean dropIn;
    private final ReadinessRelay relay;

    // Lock held by the current reader (and by connect and finishConnect)
    private final ReentrantLock readLock = new ReentrantLock();
    // How long a blocked reader and a blocked writer spin before they park; guarded by readLock and writeLock
    private final AdaptiveSpin readSpin;
    private final AdaptiveSpin writeSpin;
    private final BooleanSupplier readerStillWaiting = () -> isOpen() && !this.isInputClosed;
    private final BooleanSupplier writerStillWaiting = () -> isOpen() && !this.isOutputClosed;
    // Lock held by the current writer (and by connect and finishConnect)
    private final ReentrantLock writeLock = new ReentrantLock();
    // Lock for the fields below; never held while parking or in a blocking call
    private final Object stateLock = new Object();

    // -- The following fields are protected by stateLock
    private volatile int state;
    private Thread readerThread;
    private Thread writerThread;
    private SocketAddress localAddress;
    private SocketAddress remoteAddress;
    private StreamTransport transport;
    private volatile StreamConnector connector;
    private volatile StreamConnection connection;
    /** The platform channel once the connection goes over TCP; never replaced. */
    private volatile SocketChannel tcp;
    /** Whether the platform channel's connect has finished (this channel may still be connection-pending). */
    private volatile boolean tcpConnected;
    /** A connect failure found while no application thread was in connect, thrown by the next finishConnect. */
    private IOException connectFailure;
    /** The policy of the connect in progress or done. */
    private RdmaPathPolicy policy;
    /** While an RDMA attempt may still fall back to TCP: when it is abandoned (nanoTime), 0 otherwise. */
    private long fallbackDeadline;
    /** Wakes a selection when the RDMA attempt's time is up, so that it falls back without an application call. */
    private ScheduledFuture<?> fallbackTimer;
    /** Why the connect goes over TCP, once decided; the blocking connect then opens the platform channel. */
    private String tcpReason;
    private volatile RdmaPath path;
    private volatile boolean isInputClosed;
    private volatile boolean isOutputClosed;
    private final OptionValues options;
    private volatile long busyPollNanos;
    private Socket socket;
    // -- End of fields protected by stateLock

    /**
     * An unconnected channel.
     *
     * @param dropIn whether the destination rules decide its path; otherwise it is RDMA-only (unless its policy is
     *     set), and the stream engine must be usable now.
     */
    RdmaSocketChannelImpl(final RdmaSelectorProvider provider, final ProtocolFamily family, final boolean dropIn) {
        super(provider);
        this.provider = provider;
        this.readSpin = new AdaptiveSpin(provider.firstWaits(false, true));
        this.writeSpin = new AdaptiveSpin(provider.firstWaits(false, false));
        this.family = family;
        this.dropIn = dropIn;
        this.relay = new ReadinessRelay();
        this.options = new OptionValues(false);
        this.busyPollNanos = options.busyPollNanos();
        this.transport = dropIn ? null : provider.transport();
    }

    /**
     * A channel accepted over RDMA: connected, blocking.
     */
    RdmaSocketChannelImpl(final RdmaSelectorProvider provider, final StreamTransport transport,
        final ProtocolFamily family, final ReadinessRelay relay, final StreamConnection connection,
        final OptionValues options, final RdmaPath path) {
        super(provider);
        this.provider = provider;
        this.readSpin = new AdaptiveSpin(provider.firstWaits(true, true));
        this.writeSpin = new AdaptiveSpin(provider.firstWaits(true, false));
        this.transport = transport;
        this.family = family;
        this.dropIn = false;
        this.relay = relay;
        this.options = options;
        this.busyPollNanos = options.busyPollNanos();
        this.connection = connection;
        this.localAddress = connection.localAddress();
        this.remoteAddress = connection.remoteAddress();
        this.path = path;
        this.state = ST_CONNECTED;
    }

    /**
     * A channel accepted over TCP: connected, blocking, over the platform channel {@code accepted}.
     */
    RdmaSocketChannelImpl(final RdmaSelectorProvider provider, final ProtocolFamily family,
        final SocketChannel accepted, final RdmaPath path) throws IOException {
        super(provider);
        this.provider = provider;
        this.readSpin = new AdaptiveSpin(provider.firstWaits(true, true));
        this.writeSpin = new AdaptiveSpin(provider.firstWaits(true, false));
        this.family = family;
        this.dropIn = false;
        this.relay = new ReadinessRelay();
        this.options = new OptionValues(false);
        this.busyPollNanos = options.busyPollNanos();
        this.tcp = accepted;
        this.tcpConnected = true;
        this.localAddress = accepted.getLocalAddress();
        this.remoteAddress = accepted.getRemoteAddress();
        this.path = path;
        this.state = ST_CONNECTED;
    }

    // -- addresses, options, adaptor

    @Override
    public Socket socket() {
        synchronized (stateLock) {
            if (socket == null) {
                socket = RdmaSocketAdaptor.create(this);
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

    @Override
    public SocketAddress getRemoteAddress() throws IOException {
        synchronized (stateLock) {
            ensureOpen();
            return remoteAddress;
        }
    }

    SocketAddress localAddress() {
        synchronized (stateLock) {
            return localAddress;
        }
    }

    SocketAddress remoteAddress() {
        synchronized (stateLock) {
            return remoteAddress;
        }
    }

    RdmaPath path() {
        return path;
    }

    @Override
    public <T> SocketChannel setOption(final SocketOption<T> name, final T value) throws IOException {
        OptionValues.checkType(OptionValues.CLIENT_OPTIONS, name, value);
        OptionValues.checkSettable(name);
        final SocketChannel platform;
        synchronized (stateLock) {
            ensureOpen();
            options.set(name, value);
            busyPollNanos = options.busyPollNanos();
            platform = tcp;
            final StreamConnection stream = connection;
            if (name == StandardSocketOptions.SO_KEEPALIVE && stream != null) {
                // the connection took a copy of the options when it was made: this one also applies from now on
                stream.keepAlive((Boolean) value);
            }
        }
        if (platform != null && OptionValues.isPlatformOption(name)) {
            platform.setOption(name, value);
        }
        return this;
    }

    @Override
    public Optional<ConnectionStatistics> statistics() {
        final StreamConnection stream = connection;
        return stream == null ? Optional.empty() : Optional.of(stream.statistics());
    }

    @Override
    @SuppressWarnings("unchecked")
    public <T> T getOption(final SocketOption<T> name) throws IOException {
        OptionValues.checkSupported(OptionValues.CLIENT_OPTIONS, name);
        final SocketChannel platform;
        synchronized (stateLock) {
            ensureOpen();
            if (name == RdmaSocketOptions.RDMA_PATH) {
                return (T) path;
            }
            if (name == RdmaSocketOptions.RDMA_PATH_POLICY && options.pathPolicy() == null) {
                return (T) (policy != null ? policy : dropIn ? null : RdmaPathPolicy.RDMA_ONLY);
            }
            platform = tcp;
            if (platform == null || !OptionValues.isPlatformOption(name)) {
                return (T) options.get(name);
            }
        }
        return platform.getOption(name);
    }

    @Override
    public Set<SocketOption<?>> supportedOptions() {
        return OptionValues.CLIENT_OPTIONS;
    }

    @Override
    public SocketChannel bind(final SocketAddress local) throws IOException {
        readLock.lock();
        try {
            writeLock.lock();
            try {
                synchronized (stateLock) {
                    ensureOpen();
                    if (state == ST_CONNECTIONPENDING) {
                        throw new ConnectionPendingException();
                    }
                    if (localAddress != null) {
                        throw new AlreadyBoundException();
                    }
                    localAddress = local == null ? Addresses.anyLocal(family) : Addresses.check(local, family);
                }
            } finally {
                writeLock.unlock();
            }
        } finally {
            readLock.unlock();
        }
        return this;
    }

    // -- state

    @Override
    public boolean isConnected() {
        return state == ST_CONNECTED;
    }

    @Override
    public boolean isConnectionPending() {
        return state == ST_CONNECTIONPENDING;
    }

    boolean isInputOpen() {
        return !isInputClosed;
    }

    boolean isOutputOpen() {
        return !isOutputClosed;
    }

    private void ensureOpen() throws ClosedChannelException {
        if (!isOpen()) {
            throw new ClosedChannelException();
        }
    }

    private void ensureOpenAndConnected() throws ClosedChannelException {
        final int current = state;
        if (current < ST_CONNECTED) {
            throw new NotYetConnectedException();
        } else if (current > ST_CONNECTED) {
            throw new ClosedChannelException();
        }
    }

    /**
     * The platform channel when the connection runs over TCP, else null.
     */
    private SocketChannel connectedTcp() {
        return state == ST_CONNECTED ? tcp : null;
    }

    // -- connect

    @Override
    public boolean connect(final SocketAddress remote) throws IOException {
        final SocketAddress address = Addresses.checkRemote(remote, family);
        try {
            readLock.lock();
            try {
                writeLock.lock();
                try {
                    ensureOpen();
                    return implConnect(address, isBlocking(), 0, false);
                } finally {
                    writeLock.unlock();
                }
            } finally {
                readLock.unlock();
            }
        } catch (final IOException ex) {
            close();
            throw ex;
        }
    }

    /**
     * Connect with a timeout, for the socket adaptor; closes the channel if the connection cannot be made.
     *
     * @throws IllegalBlockingModeException if the channel is non-blocking.
     * @throws SocketTimeoutException "Connect timed out".
     */
    void blockingConnect(final SocketAddress remote, final long nanos) throws IOException {
        final SocketAddress address = Addresses.checkRemote(remote, family);
        try {
            readLock.lock();
            try {
                writeLock.lock();
                try {
                    if (!isBlocking()) {
                        throw new IllegalBlockingModeException();
                    }
                    implConnect(address, true, ReadinessRelay.deadline(nanos), true);
                } finally {
                    writeLock.unlock();
                }
            } finally {
                readLock.unlock();
            }
        } catch (final IOException ex) {
            close();
            throw ex;
        }
    }

    /**
     * @param deadline a {@link System#nanoTime()} deadline, 0 for none.
     * @param adaptor whether the socket adaptor connects (a TCP leg then uses the platform adaptor's timeout).
     */
    private boolean implConnect(final SocketAddress address, final boolean blocking, final long deadline,
        final boolean adaptor) throws IOException {
        boolean connected = false;
        try {
            beginConnect(blocking, address);
            startConnect(address, blocking);
            connected = pollConnect(blocking);
            if (!connected && blocking && !fallingBack()) {
                connected = awaitConnect(deadline);
            }
        } finally {
            endConnect(blocking, connected);
        }
        if (!connected && blocking && fallingBack()) {
            connected = blockingTcpConnect(address, deadline, adaptor);
        }
        return connected;
    }

    private void beginConnect(final boolean blocking, final SocketAddress address) throws ClosedChannelException {
        if (blocking) {
            begin();
        }
        synchronized (stateLock) {
            ensureOpen();
            if (state == ST_CONNECTED) {
                throw new AlreadyConnectedException();
            }
            if (state == ST_CONNECTIONPENDING) {
                throw new ConnectionPendingException();
            }
            state = ST_CONNECTIONPENDING;
            remoteAddress = address;
            if (blocking) {
                readerThread = Thread.currentThread();
            }
        }
    }

    /**
     * Decide the path and start: an RDMA attempt, or TCP (started here for a non-blocking connect; for a blocking
     * one the reason is recorded and {@link #blockingTcpConnect} connects).
     */
    private void startConnect(final SocketAddress address, final boolean blocking) throws IOException {
        final PathRules.Decision decision = decide(address);
        final boolean mayFallBack = decision.policy() == RdmaPathPolicy.RDMA_PREFERRED;
        synchronized (stateLock) {
            policy = decision.policy();
            if (decision.policy() == RdmaPathPolicy.TCP_ONLY) {
                decideTcpLocked(decision.reason(), !blocking);
                return;
            }
            if (mayFallBack) {
                final String unreachable = provider.dropIn().unreachableReason((InetSocketAddress) address);
                if (unreachable != null) {
                    decideTcpLocked("fallback (remembered): " + unreachable, !blocking);
                    return;
                }
            }
        }
        final StreamConnector attempt;
        try {
            attempt = transport().connect(address, localAddress(), streamOptions(), relay);
        } catch (final IOException ex) {
            if (!mayFallBack || !isNoRdmaPath(ex)) {
                throw asThrown(ex);
            }
            synchronized (stateLock) {
                fallBackLocked(address, ex, !blocking);
            }
            return;
        }
        synchronized (stateLock) {
            if (state != ST_CONNECTIONPENDING) {
                attempt.close();
                return;
            }
            connector = attempt;
            path = RdmaPath.rdma(transport.providerName(), decision.reason());
            if (mayFallBack) {
                final long timeout = provider.dropIn().fallbackTimeoutNanos();
                fallbackDeadline = ReadinessRelay.deadline(timeout);
                if (!blocking) {
                    fallbackTimer = DropInConfiguration.schedule(relay::onReadiness, timeout);
                }
            }
        }
    }

    /**
     * The policy of a connect to {@code address}: the one set, else the destination rules (drop-in), else RDMA only.
     * Only IP addresses can go over TCP.
     */
    private PathRules.Decision decide(final SocketAddress address) {
        final RdmaPathPolicy set;
        synchronized (stateLock) {
            set = options.pathPolicy();
        }
        final PathRules.Decision decision;
        if (set != null) {
            decision = new PathRules.Decision(set, "policy " + set);
        } else if (dropIn && address instanceof InetSocketAddress inet) {
            decision = provider.dropIn().rules().forConnect(inet);
        } else {
            decision = new PathRules.Decision(RdmaPathPolicy.RDMA_ONLY, dropIn ? "not an IP address"
                : "opened as an RDMA channel");
        }
        if (!(address instanceof InetSocketAddress)) {
            if (decision.policy() == RdmaPathPolicy.TCP_ONLY) {
                throw new UnsupportedAddressTypeException();
            }
            return new PathRules.Decision(RdmaPathPolicy.RDMA_ONLY, decision.reason());
        }
        return decision;
    }

    /**
     * The stream engine: fixed for an explicitly opened channel, opened on first use for a drop-in channel, where a
     * failure to open it means no RDMA device.
     */
    private StreamTransport transport() throws NoRdmaPathException {
        synchronized (stateLock) {
            if (transport != null) {
                return transport;
            }
        }
        final StreamTransport opened;
        try {
            opened = provider.transport();
        } catch (final IllegalStateException | UncheckedIOException ex) {
            final NoRdmaPathException failure = new NoRdmaPathException(NoRdmaPathException.Reason.NO_DEVICE,
                "no RDMA stream engine: " + ex.getMessage());
            failure.initCause(ex);
            throw failure;
        }
        synchronized (stateLock) {
            transport = opened;
            return opened;
        }
    }

    private StreamOptions streamOptions() {
        synchronized (stateLock) {
            return options.stream().busyPollNanos(busyPollNanos);
        }
    }

    /**
     * Whether an RDMA connect failure means that RDMA cannot reach the peer (so TCP may be tried), as opposed to a
     * peer that refused the connection.
     */
    private static boolean isNoRdmaPath(final IOException failure) {
        return failure instanceof NoRdmaPathException || failure instanceof NoRouteToHostException
            || failure instanceof SocketTimeoutException;
    }

    /**
     * A connect failure as the application sees it: the engine's {@link NoRdmaPathException} (a classification for
     * the fallback) becomes the plain {@link ConnectException} the JDK throws, with the same message.
     */
    private static IOException asThrown(final IOException failure) {
        if (failure instanceof NoRdmaPathException) {
            final ConnectException plain = new ConnectException(failure.getMessage());
            plain.initCause(failure);
            return plain;
        }
        return failure;
    }

    private static String describeNoRdmaPath(final IOException cause) {
        final String why;
        if (cause instanceof NoRdmaPathException noPath) {
            why = switch (noPath.reason()) {
                case NO_LISTENER -> "no RDMA listener";
                case UNSUPPORTED_PROTOCOL -> "the RDMA listener speaks another protocol";
                case NOT_LOCAL -> "the provider reaches only this host";
                case NO_DEVICE -> "no RDMA device";
            };
        } else if (cause instanceof NoRouteToHostException) {
            why = "no RDMA route";
        } else {
            why = "no RDMA answer in time";
        }
        return why + " (" + cause.getMessage() + ")";
    }

    /**
     * RDMA cannot reach the peer: remember it, and go over TCP.
     */
    private void fallBackLocked(final SocketAddress address, final IOException cause, final boolean startNow) {
        assert Thread.holdsLock(stateLock);
        final String reason = describeNoRdmaPath(cause);
        provider.dropIn().rememberUnreachable((InetSocketAddress) address, reason);
        decideTcpLocked("fallback: " + reason, startNow);
    }

    /**
     * The connection goes over TCP: start the platform connect now (non-blocking), or record why for the blocking
     * connect.
     */
    private void decideTcpLocked(final String reason, final boolean startNow) {
        assert Thread.holdsLock(stateLock);
        tcpReason = reason;
        path = RdmaPath.tcp(reason);
        stopFallbackTimerLocked();
        if (!startNow) {
            return;
        }
        SocketChannel platform = null;
        try {
            platform = openPlatformLocked(false);
            tcp = platform;
            // the selectors of this channel's keys must register the platform channel, also one whose selection
            // thread is the caller (it falls back from a readiness check): tell them as for any readiness change
            relay.onReadiness();
            tcpConnected = platform.connect(remoteAddress);
        } catch (final IOException ex) {
            connectFailure = ex;
            if (platform != null) {
                closeQuietly(platform);
            }
        }
    }

    /**
     * A platform channel for the TCP path with the application's options, bound where this channel was bound.
     */
    private SocketChannel openPlatformLocked(final boolean blocking) throws IOException {
        final SocketChannel platform = RdmaSelectorProvider.platformProvider().openSocketChannel(family);
        try {
            options.applyTo(platform);
            if (localAddress != null) {
                platform.bind(localAddress);
            }
            platform.configureBlocking(blocking);
            return platform;
        } catch (final IOException | RuntimeException ex) {
            closeQuietly(platform);
            throw ex;
        }
    }

    private void stopFallbackTimerLocked() {
        fallbackDeadline = 0;
        if (fallbackTimer != null) {
            fallbackTimer.cancel(false);
            fallbackTimer = null;
        }
    }

    private boolean fallingBack() {
        synchronized (stateLock) {
            return tcpReason != null && tcp == null && connectFailure == null;
        }
    }

    /**
     * Move the RDMA attempt on without blocking: take the connection once established, fall back to TCP when RDMA
     * cannot reach the peer or did not answer in time, else record the failure.
     *
     * @param startTcp whether to start a fallback's TCP connect now (non-blocking callers).
     * @return an abandoned attempt the caller closes after releasing the state lock, or null.
     */
    private StreamConnector advanceLocked(final boolean startTcp) {
        assert Thread.holdsLock(stateLock);
        final StreamConnector attempt = connector;
        if (state != ST_CONNECTIONPENDING || attempt == null) {
            return null;
        }
        if ((attempt.readyOps() & StreamReadiness.CONNECT) != 0) {
            try {
                final StreamConnection established = attempt.finish();
                if (established != null) {
                    connector = null;
                    connection = established;
                    stopFallbackTimerLocked();
                }
            } catch (final IOException ex) {
                connector = null;
                if (fallbackDeadline != 0 && isNoRdmaPath(ex)) {
                    fallBackLocked(remoteAddress, ex, startTcp);
                } else {
                    stopFallbackTimerLocked();
                    connectFailure = ex;
                }
            }
            return null;
        }
        if (fallbackDeadline != 0 && System.nanoTime() - fallbackDeadline >= 0) {
            connector = null;
            final long waited = TimeUnit.NANOSECONDS.toMillis(provider.dropIn().fallbackTimeoutNanos());
            fallBackLocked(remoteAddress, new SocketTimeoutException("no RDMA connection within " + waited + " ms"),
                startTcp);
            return attempt;
        }
        return null;
    }

    /**
     * Finish the attempt if it is done.
     *
     * @param blocking whether the caller blocks (it then connects a fallback's TCP itself, and a TCP connect in
     *     progress is finished in blocking mode).
     * @return true once the connection is established (RDMA connection held, or the platform channel connected).
     */
    private boolean pollConnect(final boolean blocking) throws IOException {
        final StreamConnector abandoned;
        synchronized (stateLock) {
            abandoned = advanceLocked(!blocking);
            if (connectFailure != null) {
                final IOException failure = connectFailure;
                connectFailure = null;
                throw asThrown(failure);
            }
        }
        if (abandoned != null) {
            abandoned.close();
        }
        if (connection != null) {
            return isOpen();
        }
        final SocketChannel platform = tcp;
        if (platform == null) {
            return false;
        }
        if (!tcpConnected) {
            tcpConnected = platform.finishConnect();
        }
        return tcpConnected;
    }

    private boolean awaitConnect(final long deadline) throws IOException {
        while (isOpen()) {
            final long seen = relay.generation();
            final StreamConnector attempt = connector;
            if (attempt == null || !isOpen()) {
                return false;
            }
            attempt.arm();
            if (pollConnect(true)) {
                return true;
            }
            if (fallingBack()) {
                return false;
            }
            final long fallbackAt;
            synchronized (stateLock) {
                fallbackAt = fallbackDeadline;
            }
            final long wake = deadline == 0 || fallbackAt != 0 && fallbackAt - deadline < 0 ? fallbackAt : deadline;
            if (!relay.await(seen, wake) && wake == deadline) {
                throw new SocketTimeoutException("Connect timed out");
            }
            if (pollConnect(true)) {
                return true;
            }
            if (fallingBack()) {
                return false;
            }
        }
        return false;
    }

    /**
     * The TCP leg of a blocking connect: a blocking platform channel connects (with the adaptor's timeout, through
     * its own adaptor). Runs after {@code end()}: the platform channel handles interrupts and asynchronous close.
     */
    private boolean blockingTcpConnect(final SocketAddress address, final long deadline, final boolean adaptor)
        throws IOException {
        final SocketChannel platform;
        synchronized (stateLock) {
            if (!isOpen() || state != ST_CONNECTIONPENDING) {
                throw new AsynchronousCloseException();
            }
            platform = openPlatformLocked(true);
            tcp = platform;
        }
        if (adaptor && deadline != 0) {
            final long remaining = deadline - System.nanoTime();
            if (remaining <= 0) {
                throw new SocketTimeoutException("Connect timed out");
            }
            platform.socket().connect(address, (int) Math.max(1, Math.min(Integer.MAX_VALUE,
                TimeUnit.NANOSECONDS.toMillis(remaining + 999_999))));
        } else {
            platform.connect(address);
        }
        tcpConnected = true;
        synchronized (stateLock) {
            if (state != ST_CONNECTIONPENDING) {
                throw new AsynchronousCloseException();
            }
            connected();
        }
        relay.onReadiness();
        return true;
    }

    /**
     * The connection is established (RDMA or TCP): connected state, local address, the path's log line.
     */
    private void connected() throws IOException {
        assert Thread.holdsLock(stateLock);
        final SocketAddress local = connection != null ? connection.localAddress() : tcp.getLocalAddress();
        if (local != null) {
            localAddress = local;
        }
        state = ST_CONNECTED;
        LOG.debug("connected {} -> {} over {}", localAddress, remoteAddress, path);
    }

    private void endConnect(final boolean blocking, final boolean completed) throws IOException {
        try {
            endRead(blocking, completed);
            if (completed) {
                synchronized (stateLock) {
                    if (state == ST_CONNECTIONPENDING) {
                        connected();
                    }
                }
            }
        } finally {
            // selectors re-check the key: OP_CONNECT may now be pending, or the connection's ops apply
            relay.onReadiness();
        }
    }

    @Override
    public boolean finishConnect() throws IOException {
        try {
            readLock.lock();
            try {
                writeLock.lock();
                try {
                    if (isConnected()) {
                        return true;
                    }
                    ensureOpen();
                    final boolean blocking = isBlocking();
                    boolean connected = false;
                    try {
                        beginFinishConnect(blocking);
                        connected = pollConnect(blocking);
                        if (!connected && blocking && !fallingBack()) {
                            connected = awaitConnect(0);
                        }
                    } finally {
                        endConnect(blocking, connected);
                    }
                    if (!connected && blocking && fallingBack()) {
                        connected = blockingTcpConnect(remoteAddress(), 0, false);
                    }
                    return connected;
                } finally {
                    writeLock.unlock();
                }
            } finally {
                readLock.unlock();
            }
        } catch (final IOException ex) {
            close();
            throw ex;
        }
    }

    private void beginFinishConnect(final boolean blocking) throws ClosedChannelException {
        if (blocking) {
            begin();
        }
        synchronized (stateLock) {
            ensureOpen();
            if (state != ST_CONNECTIONPENDING) {
                throw new NoConnectionPendingException();
            }
            if (blocking) {
                readerThread = Thread.currentThread();
            }
        }
    }

    // -- read

    @Override
    public int read(final ByteBuffer dst) throws IOException {
        Objects.requireNonNull(dst);
        final SocketChannel platform = connectedTcp();
        if (platform != null) {
            try {
                return platform.read(dst);
            } catch (final IOException ex) {
                throw platformFailed(platform, ex);
            }
        }
        readLock.lock();
        try {
            ensureOpenAndConnected();
            checkWritable(dst);
            final boolean blocking = isBlocking();
            int n = 0;
            try {
                beginRead(blocking);
                if (isInputClosed) {
                    return -1;
                }
                final StreamConnection stream = connection;
                n = stream.read(dst);
                while (blocking && n == 0 && dst.hasRemaining() && awaitReady(stream, StreamReadiness.READ, 0)) {
                    n = stream.read(dst);
                }
            } finally {
                endRead(blocking, n > 0);
            }
            return n <= 0 && isInputClosed ? -1 : n;
        } finally {
            readLock.unlock();
        }
    }

    @Override
    public long read(final ByteBuffer[] dsts, final int offset, final int length) throws IOException {
        Objects.checkFromIndexSize(offset, length, dsts.length);
        for (int i = offset; i < offset + length; i++) {
            Objects.requireNonNull(dsts[i]);
        }
        final SocketChannel platform = connectedTcp();
        if (platform != null) {
            try {
                return platform.read(dsts, offset, length);
            } catch (final IOException ex) {
                throw platformFailed(platform, ex);
            }
        }
        readLock.lock();
        try {
            ensureOpenAndConnected();
            for (int i = offset; i < offset + length; i++) {
                checkWritable(dsts[i]);
            }
            final boolean blocking = isBlocking();
            long n = 0;
            try {
                beginRead(blocking);
                if (isInputClosed) {
                    return -1;
                }
                final StreamConnection stream = connection;
                n = stream.read(dsts, offset, length);
                while (blocking && n == 0 && hasRemaining(dsts, offset, length)
                    && awaitReady(stream, StreamReadiness.READ, 0)) {
                    n = stream.read(dsts, offset, length);
                }
            } finally {
                endRead(blocking, n > 0);
            }
            return n <= 0 && isInputClosed ? -1 : n;
        } finally {
            readLock.unlock();
        }
    }

    /**
     * A blocking read with a timeout, for the socket adaptor's input stream.
     *
     * @param nanos the timeout, 0 for none.
     * @throws IllegalBlockingModeException if the channel is non-blocking.
     * @throws SocketTimeoutException "Read timed out".
     */
    int blockingRead(final byte[] bytes, final int offset, final int length, final long nanos) throws IOException {
        Objects.checkFromIndexSize(offset, length, bytes.length);
        if (length == 0) {
            return 0;
        }
        final SocketChannel platform = connectedTcp();
        if (platform != null) {
            try {
                final Socket platformSocket = platform.socket();
                platformSocket.setSoTimeout((int) Math.min(Integer.MAX_VALUE,
                    TimeUnit.NANOSECONDS.toMillis(nanos + 999_999)));
                return platformSocket.getInputStream().read(bytes, offset, length);
            } catch (final IOException ex) {
                throw platformFailed(platform, ex);
            }
        }
        readLock.lock();
        try {
            ensureOpenAndConnected();
            if (!isBlocking()) {
                throw new IllegalBlockingModeException();
            }
            final ByteBuffer dst = ByteBuffer.wrap(bytes, offset, length);
            final long deadline = ReadinessRelay.deadline(nanos);
            int n = 0;
            try {
                beginRead(true);
                if (isInputClosed) {
                    return -1;
                }
                final StreamConnection stream = connection;
                n = stream.read(dst);
                while (n == 0 && awaitReady(stream, StreamReadiness.READ, deadline)) {
                    n = stream.read(dst);
                }
            } finally {
                endRead(true, n > 0);
            }
            return n <= 0 && isInputClosed ? -1 : n;
        } finally {
            readLock.unlock();
        }
    }

    private void beginRead(final boolean blocking) throws ClosedChannelException {
        if (blocking) {
            begin();
            synchronized (stateLock) {
                ensureOpen();
                readerThread = Thread.currentThread();
            }
        }
    }

    private void endRead(final boolean blocking, final boolean completed) throws AsynchronousCloseException {
        if (blocking) {
            synchronized (stateLock) {
                readerThread = null;
                if (state == ST_CLOSING) {
                    tryClose();
                }
            }
            end(completed);
        }
    }

    // -- write

    @Override
    public int write(final ByteBuffer src) throws IOException {
        Objects.requireNonNull(src);
        final SocketChannel platform = connectedTcp();
        if (platform != null) {
            try {
                return platform.write(src);
            } catch (final IOException ex) {
                throw platformFailed(platform, ex);
            }
        }
        writeLock.lock();
        try {
            ensureOpenAndConnected();
            final boolean blocking = isBlocking();
            int n = 0;
            boolean completed = false;
            try {
                beginWrite(blocking);
                final StreamConnection stream = connection;
                if (blocking) {
                    final int length = src.remaining();
                    try {
                        n = stream.write(src);
                        while (src.hasRemaining() && (n > 0 || awaitReady(stream, StreamReadiness.WRITE, 0))) {
                            n = stream.write(src);
                        }
                    } catch (final IOException ex) {
                        rethrowUnlessShut(ex);
                    }
                    n = length - src.remaining();
                    completed = !src.hasRemaining();
                } else {
                    n = stream.write(src);
                    completed = n > 0;
                }
            } finally {
                endWrite(blocking, completed);
            }
            if (!completed && isOutputClosed) {
                throw new AsynchronousCloseException();
            }
            return n;
        } finally {
            writeLock.unlock();
        }
    }

    @Override
    public long write(final ByteBuffer[] srcs, final int offset, final int length) throws IOException {
        Objects.checkFromIndexSize(offset, length, srcs.length);
        for (int i = offset; i < offset + length; i++) {
            Objects.requireNonNull(srcs[i]);
        }
        final SocketChannel platform = connectedTcp();
        if (platform != null) {
            try {
                return platform.write(srcs, offset, length);
            } catch (final IOException ex) {
                throw platformFailed(platform, ex);
            }
        }
        writeLock.lock();
        try {
            ensureOpenAndConnected();
            final boolean blocking = isBlocking();
            long n = 0;
            boolean completed = false;
            try {
                beginWrite(blocking);
                final StreamConnection stream = connection;
                if (blocking) {
                    final long length0 = remaining(srcs, offset, length);
                    try {
                        long step = stream.write(srcs, offset, length);
                        while (hasRemaining(srcs, offset, length)
                            && (step > 0 || awaitReady(stream, StreamReadiness.WRITE, 0))) {
                            step = stream.write(srcs, offset, length);
                        }
                    } catch (final IOException ex) {
                        rethrowUnlessShut(ex);
                    }
                    n = length0 - remaining(srcs, offset, length);
                    completed = !hasRemaining(srcs, offset, length);
                } else {
                    n = stream.write(srcs, offset, length);
                    completed = n > 0;
                }
            } finally {
                endWrite(blocking, completed);
            }
            if (!completed && isOutputClosed) {
                throw new AsynchronousCloseException();
            }
            return n;
        } finally {
            writeLock.unlock();
        }
    }

    /**
     * Write every byte, for the socket adaptor's output stream.
     *
     * @throws IllegalBlockingModeException if the channel is non-blocking.
     */
    void blockingWriteFully(final byte[] bytes, final int offset, final int length) throws IOException {
        Objects.checkFromIndexSize(offset, length, bytes.length);
        if (length == 0) {
            return;
        }
        final SocketChannel platform = connectedTcp();
        if (platform != null) {
            try {
                platform.socket().getOutputStream().write(bytes, offset, length);
            } catch (final IOException ex) {
                throw platformFailed(platform, ex);
            }
            return;
        }
        writeLock.lock();
        try {
            ensureOpenAndConnected();
            if (!isBlocking()) {
                throw new IllegalBlockingModeException();
            }
            final ByteBuffer src = ByteBuffer.wrap(bytes, offset, length);
            try {
                beginWrite(true);
                final StreamConnection stream = connection;
                int n = stream.write(src);
                while (src.hasRemaining() && (n > 0 || awaitReady(stream, StreamReadiness.WRITE, 0))) {
                    n = stream.write(src);
                }
            } catch (final IOException ex) {
                rethrowUnlessShut(ex);
            } finally {
                endWrite(true, !src.hasRemaining());
            }
            if (src.hasRemaining() && isOutputClosed) {
                throw new AsynchronousCloseException();
            }
        } finally {
            writeLock.unlock();
        }
    }

    private void beginWrite(final boolean blocking) throws ClosedChannelException {
        if (blocking) {
            begin();
        }
        synchronized (stateLock) {
            ensureOpen();
            if (isOutputClosed) {
                // as the JDK's SocketChannelImpl: a write after shutdownOutput fails with this subclass
                throw new AsynchronousCloseException();
            }
            if (blocking) {
                writerThread = Thread.currentThread();
            }
        }
    }

    private void endWrite(final boolean blocking, final boolean completed) throws AsynchronousCloseException {
        if (blocking) {
            synchronized (stateLock) {
                writerThread = null;
                if (state == ST_CLOSING) {
                    tryClose();
                }
            }
            end(completed);
        }
    }

    /**
     * Wait for the endpoint to become ready for {@code op}: busy-poll first if configured, then arm, look again,
     * and park on the relay.
     *
     * @return true to try the operation again, false if the channel closed or the direction was shut down.
     * @throws SocketTimeoutException "Read timed out" if the deadline passed.
     */
    private boolean awaitReady(final StreamConnection stream, final int op, final long deadline)
        throws SocketTimeoutException {
        final long ceiling = busyPollNanos;
        final AdaptiveSpin adaptive = op == StreamReadiness.READ ? readSpin : writeSpin;
        final long spin = adaptive.next(ceiling);
        if (spin > 0) {
            final boolean caught = (stream.spin(spin, op) & op) != 0;
            adaptive.ended(caught, ceiling);
            if (caught) {
                return true;
            }
        }
        if (!Thread.currentThread().isVirtual() && stream.supportsDirectWait()) {
            return awaitDirect(stream, op, deadline);
        }
        final long seen = relay.generation();
        if (!isOpen() || (op == StreamReadiness.READ ? isInputClosed : isOutputClosed)) {
            return false;
        }
        stream.arm();
        if ((stream.readyOps() & op) != 0) {
            return true;
        }
        if (!relay.await(seen, deadline)) {
            throw new SocketTimeoutException("Read timed out");
        }
        return isOpen() && !(op == StreamReadiness.READ ? isInputClosed : isOutputClosed);
    }

    /**
     * A platform thread waits on the connection itself, woken by the event it waits for: one wake-up, no poller
     * thread. A close or shutdown from another thread wakes it ({@link StreamConnection#wakeDirectWaiters()}).
     */
    private boolean awaitDirect(final StreamConnection stream, final int op, final long deadline)
        throws SocketTimeoutException {
        long timeout = -1;
        if (deadline != 0) {
            timeout = deadline - System.nanoTime();
            if (timeout <= 0) {
                throw new SocketTimeoutException("Read timed out");
            }
        }
        final BooleanSupplier stillWaiting = op == StreamReadiness.READ ? readerStillWaiting : writerStillWaiting;
        stream.awaitDirect(op, timeout, stillWaiting);
        return stillWaiting.getAsBoolean();
    }

    /**
     * Wake every thread blocked in this channel: parked on the relay, or waiting on the connection directly.
     */
    private void wakeBlockedThreads() {
        relay.onReadiness();
        wakeDirectWaiters();
    }

    private void wakeDirectWaiters() {
        final StreamConnection stream = connection;
        if (stream != null) {
            stream.wakeDirectWaiters();
        }
    }

    /**
     * A blocked write that fails because another thread closed the channel or shut its output down ends as an
     * asynchronous close (reported by the caller), not with the engine's exception.
     */
    private void rethrowUnlessShut(final IOException failure) throws IOException {
        if (isOpen() && !isOutputClosed) {
            throw failure;
        }
    }

    private static void checkWritable(final ByteBuffer dst) {
        if (dst.isReadOnly()) {
            throw new IllegalArgumentException("Read-only buffer");
        }
    }

    private static boolean hasRemaining(final ByteBuffer[] buffers, final int offset, final int length) {
        for (int i = offset; i < offset + length; i++) {
            if (buffers[i].hasRemaining()) {
                return true;
            }
        }
        return false;
    }

    private static long remaining(final ByteBuffer[] buffers, final int offset, final int length) {
        long total = 0;
        for (int i = offset; i < offset + length; i++) {
            total += buffers[i].remaining();
        }
        return total;
    }

    // -- shutdown

    @Override
    public SocketChannel shutdownInput() throws IOException {
        final SocketChannel platform;
        synchronized (stateLock) {
            ensureOpen();
            if (!isConnected()) {
                throw new NotYetConnectedException();
            }
            platform = tcp;
            if (platform == null && !isInputClosed) {
                // flag first: a reader woken by the engine must see it
                isInputClosed = true;
                connection.shutdownInput();
            }
        }
        if (platform != null) {
            platform.shutdownInput();
            isInputClosed = true;
        }
        wakeBlockedThreads();
        return this;
    }

    @Override
    public SocketChannel shutdownOutput() throws IOException {
        final SocketChannel platform;
        synchronized (stateLock) {
            ensureOpen();
            if (!isConnected()) {
                throw new NotYetConnectedException();
            }
            platform = tcp;
            if (platform == null && !isOutputClosed) {
                // flag first: a writer woken by the engine must see it
                isOutputClosed = true;
                connection.shutdownOutput();
            }
        }
        if (platform != null) {
            platform.shutdownOutput();
            isOutputClosed = true;
        }
        wakeBlockedThreads();
        return this;
    }

    // -- selection

    @Override
    public ReadinessRelay relay() {
        return relay;
    }

    @Override
    public SelectableChannel platformChannel() {
        return tcp;
    }

    @Override
    public int translateReadyOps(final int interestOps) {
        final int current = state;
        int ready = 0;
        if (current == ST_CONNECTIONPENDING) {
            final StreamConnector abandoned;
            synchronized (stateLock) {
                // a selection moves the attempt on, so a fallback to TCP starts without an application call
                abandoned = advanceLocked(true);
                if (connection != null || connectFailure != null || tcpConnected) {
                    ready = SelectionKey.OP_CONNECT;
                }
            }
            if (abandoned != null) {
                abandoned.close();
            }
        } else if (current == ST_CONNECTED && tcp == null) {
            final int streamOps = connection.readyOps();
            if ((streamOps & StreamReadiness.READ) != 0 || isInputClosed) {
                ready |= SelectionKey.OP_READ;
            }
            if ((streamOps & StreamReadiness.WRITE) != 0 || isOutputClosed) {
                ready |= SelectionKey.OP_WRITE;
            }
        }
        return ready & interestOps;
    }

    @Override
    public long busyPollNanos() {
        return tcp == null ? busyPollNanos : 0;
    }

    @Override
    public boolean canWaitDirectly() {
        final StreamConnection stream = connection;
        return state == ST_CONNECTED && tcp == null && stream != null && stream.supportsWaitSet();
    }

    @Override
    public WaitSet newWaitSet() {
        final StreamConnection stream = connection;
        return canWaitDirectly() ? stream.newWaitSet() : null;
    }

    @Override
    public StreamConnection armEndpointDirect(final int interestOps, final WaitSet set) {
        final StreamConnection stream = connection;
        if (!canWaitDirectly()) {
            return null;
        }
        int interest = 0;
        if ((interestOps & SelectionKey.OP_READ) != 0) {
            interest |= StreamReadiness.READ;
        }
        if ((interestOps & SelectionKey.OP_WRITE) != 0) {
            interest |= StreamReadiness.WRITE;
        }
        return stream.armDirect(interest, set) ? stream : null;
    }

    @Override
    public void armEndpoint() {
        final int current = state;
        if (current == ST_CONNECTIONPENDING) {
            final StreamConnector attempt = connector;
            if (attempt != null) {
                attempt.arm();
            }
        } else if (current == ST_CONNECTED && tcp == null) {
            connection.arm();
        }
    }

    // -- close

    @Override
    protected void implConfigureBlocking(final boolean block) throws IOException {
        readLock.lock();
        try {
            writeLock.lock();
            try {
                synchronized (stateLock) {
                    ensureOpen();
                }
                final SocketChannel platform = tcp;
                if (platform != null) {
                    if (block) {
                        // keys of ours that were cancelled may still hold the platform channel registered until
                        // their selector's next selection; the platform channel may only block without valid keys
                        relay.releasePlatformRegistrations();
                    }
                    platform.configureBlocking(block);
                }
            } finally {
                writeLock.unlock();
            }
        } finally {
            readLock.unlock();
        }
    }

    @Override
    protected void implCloseSelectableChannel() throws IOException {
        final boolean connected;
        final SocketChannel platform;
        synchronized (stateLock) {
            connected = state == ST_CONNECTED;
            state = ST_CLOSING;
            stopFallbackTimerLocked();
            platform = tcp;
        }
        if (platform != null) {
            // wakes threads blocked in the platform channel; a registered platform channel is released by the JDK
            // once its platform selectors drop it
            platform.close();
        }
        // wake threads parked in read, write or connect: they see the channel closed
        relay.signal();
        wakeDirectWaiters();
        if (!isBlocking()) {
            // wait for non-blocking operations in progress to finish
            readLock.lock();
            readLock.unlock();
            writeLock.lock();
            writeLock.unlock();
        }
        synchronized (stateLock) {
            if (state == ST_CLOSING && !tryClose() && connected && platform == null && isRegistered()
                && options.linger() != 0 && !isOutputClosed) {
                // the release waits for the selectors; let the peer read end of stream now
                try {
                    connection.shutdownOutput();
                } catch (final IOException ignore) {
                    // the close will release everything anyway
                }
            }
        }
        relay.onReadiness();
    }

    /**
     * Release the endpoint if no thread is in a blocking operation and no selector holds a key.
     */
    private boolean tryClose() {
        assert Thread.holdsLock(stateLock) && state == ST_CLOSING;
        if (readerThread == null && writerThread == null && !isRegistered()) {
            state = ST_CLOSED;
            final StreamConnection stream = connection;
            final StreamConnector attempt = connector;
            if (stream != null) {
                if (options.linger() == 0) {
                    stream.abort();
                } else {
                    stream.close();
                }
            } else if (attempt != null) {
                attempt.close();
            }
            return true;
        }
        return false;
    }

    @Override
    public void kill() {
        readLock.lock();
        readLock.unlock();
        writeLock.lock();
        writeLock.unlock();
        synchronized (stateLock) {
            if (state == ST_CLOSING) {
                tryClose();
            }
        }
    }

    /**
     * A platform operation failed. If the platform channel closed under it (an interrupt of the thread in it closes
     * it, as the JDK does), this channel is closed too: it is the channel the application interrupted.
     */
    private IOException platformFailed(final SocketChannel platform, final IOException failure) {
        if (!platform.isOpen() && isOpen()) {
            try {
                close();
            } catch (final IOException suppressed) {
                failure.addSuppressed(suppressed);
            }
        }
        return failure;
    }

    private static void closeQuietly(final SocketChannel channel) {
        try {
            channel.close();
        } catch (final IOException ignore) {
            // nothing was connected over it
        }
    }

    @Override
    public String toString() {
        final StringBuilder text = new StringBuilder(RdmaSocketChannel.class.getName()).append('[');
        if (!isOpen()) {
            text.append("closed");
        } else {
            synchronized (stateLock) {
                switch (state) {
                    case ST_UNCONNECTED -> text.append("unconnected");
                    case ST_CONNECTIONPENDING -> text.append("connection-pending");
                    case ST_CONNECTED -> {
                        text.append("connected");
                        if (isInputClosed) {
                            text.append(" ishut");
                        }
                        if (isOutputClosed) {
                            text.append(" oshut");
                        }
                    }
                    default -> text.append("closing");
                }
                if (localAddress != null) {
                    text.append(" local=").append(localAddress);
                }
                if (remoteAddress != null) {
                    text.append(" remote=").append(remoteAddress);
                }
                if (path != null) {
                    text.append(" path=").append(path);
                }
                final StreamConnection stream = connection;
                if (stream != null) {
                    text.append(' ').append(stream.describe());
                }
            }
        }
        return text.append(']').toString();
    }
}

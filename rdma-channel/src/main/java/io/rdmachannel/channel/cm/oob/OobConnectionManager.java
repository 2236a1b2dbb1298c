package io.rdmachannel.channel.cm.oob;

import io.rdmachannel.channel.IbSocketAddress;
import io.rdmachannel.channel.cm.CmConnection;
import io.rdmachannel.channel.cm.CmEndpoint;
import io.rdmachannel.channel.cm.CmEndpointFactory;
import io.rdmachannel.channel.cm.CmListener;
import io.rdmachannel.channel.cm.ConnectionManager;
import io.rdmachannel.channel.cm.ConnectionRequestFilter;
import io.rdmachannel.channel.internal.PlatformChannels;
import io.rdmachannel.channel.spi.RdmaProvider;

import java.io.IOException;
import java.net.BindException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.security.SecureRandom;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The out-of-band connection manager: a TCP side channel, opened through the platform's channels, carries what the
 * RDMA CM would (GID, queue pair number, first packet sequence number, path MTU and the same private data), then
 * each side moves its queue pair to INIT, READY_TO_RECEIVE and READY_TO_SEND by hand. It needs nothing but the verbs
 * SPI, so it runs on every provider: on the native one it works where librdmacm cannot (no route resolution, no
 * kernel CM), on shm it is the same rendezvous as {@code shm}'s over TCP.
 *
 * <p>Addresses: an RDMA listener on port {@code P} listens on TCP port {@code P + offset} (wrapping past 65535,
 * {@value #PORT_OFFSET_PROP_NAME}, default {@value #PORT_OFFSET_DEFAULT}), so that a drop-in server's TCP listener
 * on {@code P} does not collide with it. The addresses a connection reports (and a listener's filter sees) are the
 * side channel's, ports mapped back: the requester's is the one the kernel saw, never one it claims. The device is
 * the one whose GID is the side channel's local address (RoCE), else the provider's first. An
 * {@link IbSocketAddress} is taken as a RoCE GID, which is an IP address ({@link OobAddresses}): the side channel
 * goes to that address, and the connection's addresses are reported as GIDs.
 *
 * <p>Each handshake runs on a virtual thread of its own with blocking I/O, bounded by
 * {@value #CONNECT_TIMEOUT_PROP_NAME} (default {@value #CONNECT_TIMEOUT_DEFAULT} ms) from its start; the wire
 * format is in {@link OobHandshake}. A listener's filter runs before any queue pair or memory is committed; a
 * rejection carries its reason and words to the requester, who reads them in its {@code ConnectException}.
 */
public final class OobConnectionManager implements ConnectionManager {
    /** The name of this connection manager. */
    public static final String NAME = "oob";
    /** System property: what is added to an RDMA port to get its side channel's TCP port. */
    public static final String PORT_OFFSET_PROP_NAME = "rdmachannel.oob.portOffset";
    /** Default of {@link #PORT_OFFSET_PROP_NAME}. */
    public static final int PORT_OFFSET_DEFAULT = 10_000;
    /** System property: how long a handshake may take, in milliseconds. */
    public static final String CONNECT_TIMEOUT_PROP_NAME = "rdmachannel.oob.connectTimeoutMillis";
    /** Default of {@link #CONNECT_TIMEOUT_PROP_NAME}. */
    public static final long CONNECT_TIMEOUT_DEFAULT = 10_000;

    private static final Logger LOG = LoggerFactory.getLogger(OobConnectionManager.class);
    private static final int EPHEMERAL_LOW = 32768;
    private static final int EPHEMERAL_HIGH = 61000;
    private static final int EPHEMERAL_ATTEMPTS = 100;
    private static final int MAX_PORT = 65535;
    private static final long CLOSE_WAIT_MILLIS = 5_000;
    private static final SecureRandom RANDOM = new SecureRandom();

    private final RdmaProvider provider;
    private final OobDevices devices;
    private final int portOffset;
    private final long timeoutNanos;
    private final Set<OobHandshake> handshakes = ConcurrentHashMap.newKeySet();
    private final Set<OobListener> listeners = ConcurrentHashMap.newKeySet();
    /** Established connections whose side channel is their lifeline. */
    private final Set<OobHandshake> watched = ConcurrentHashMap.newKeySet();
    private volatile boolean closed;
    private final AtomicBoolean devicesClosed = new AtomicBoolean();

    /**
     * A manager over a provider's devices, with the settings of the system properties.
     *
     * @param provider the verbs provider.
     */
    public OobConnectionManager(final RdmaProvider provider) {
        this(provider, Integer.getInteger(PORT_OFFSET_PROP_NAME, PORT_OFFSET_DEFAULT),
            Long.getLong(CONNECT_TIMEOUT_PROP_NAME, CONNECT_TIMEOUT_DEFAULT));
    }

    /**
     * A manager with explicit settings.
     *
     * @param provider the verbs provider.
     * @param portOffset added to an RDMA port to get the side channel's TCP port, in [0, 65534].
     * @param timeoutMillis how long a handshake may take, above 0.
     */
    public OobConnectionManager(final RdmaProvider provider, final int portOffset, final long timeoutMillis) {
        if (portOffset < 0 || portOffset >= MAX_PORT) {
            throw new IllegalArgumentException(PORT_OFFSET_PROP_NAME + "=" + portOffset + " is outside [0, "
                + (MAX_PORT - 1) + "]");
        }
        if (timeoutMillis <= 0) {
            throw new IllegalArgumentException(CONNECT_TIMEOUT_PROP_NAME + "=" + timeoutMillis + " must be above 0");
        }
        this.provider = provider;
        this.devices = new OobDevices(provider);
        this.portOffset = portOffset;
        this.timeoutNanos = TimeUnit.MILLISECONDS.toNanos(timeoutMillis);
    }

    @Override
    public boolean supportsOwnQueuePairs() {
        return true;
    }

    @Override
    public String name() {
        return NAME;
    }

    // ----- ports -----

    /** The side channel's TCP port of an RDMA port; 0 stays 0. */
    int sidePort(final int port) {
        return port == 0 ? 0 : (port - 1 + portOffset) % MAX_PORT + 1;
    }

    /** The RDMA port of a side channel's TCP port. */
    int rdmaPort(final int sidePort) {
        return sidePort == 0 ? 0 : ((sidePort - 1 - portOffset) % MAX_PORT + MAX_PORT) % MAX_PORT + 1;
    }

    /** The address a side channel's address stands for, in the family the user chose. */
    SocketAddress rdmaAddress(final InetSocketAddress side, final boolean gidAddressing) {
        return OobAddresses.present(new InetSocketAddress(side.getAddress(), rdmaPort(side.getPort())),
            gidAddressing);
    }

    // ----- listening -----

    @Override
    public CmListener listen(final SocketAddress local, final int backlog, final ConnectionRequestFilter filter,
        final CmEndpointFactory factory) throws IOException {
        final InetSocketAddress address = OobAddresses.toInet(local, true, devices::hasGid);
        ensureOpen();
        final ServerSocketChannel server = bind(address, backlog < 1 ? 50 : backlog);
        final OobListener listener = new OobListener(this, server, backlog < 1 ? 50 : backlog, filter, factory,
            local instanceof IbSocketAddress);
        listeners.add(listener);
        if (closed) {
            listener.close();
            throw new IOException("the oob connection manager is closed");
        }
        listener.start();
        LOG.debug("oob listener on {} (side channel {})", listener.localAddress(), server.getLocalAddress());
        return listener;
    }

    /**
     * Bind the side channel of an RDMA address: its mapped port, or for port 0 the mapped port of a random RDMA port
     * whose side port is free.
     */
    private ServerSocketChannel bind(final InetSocketAddress address, final int backlog) throws IOException {
        for (int attempt = 1; ; attempt++) {
            final int port = address.getPort() != 0 ? address.getPort()
                : EPHEMERAL_LOW + RANDOM.nextInt(EPHEMERAL_HIGH - EPHEMERAL_LOW);
            final ServerSocketChannel server = PlatformChannels.provider().openServerSocketChannel();
            try {
                server.bind(new InetSocketAddress(address.getAddress(), sidePort(port)), backlog);
                return server;
            } catch (final BindException ex) {
                server.close();
                if (address.getPort() != 0 || attempt >= EPHEMERAL_ATTEMPTS) {
                    throw ex;
                }
            } catch (final IOException | RuntimeException ex) {
                server.close();
                throw ex;
            }
        }
    }

    void forget(final OobListener listener) {
        listeners.remove(listener);
    }

    // ----- connecting -----

    @Override
    public CmConnection connect(final SocketAddress remote, final SocketAddress local, final CmEndpoint endpoint)
        throws IOException {
        final InetSocketAddress target = OobAddresses.toInet(remote, false, devices::hasGid);
        final InetSocketAddress source = local == null ? null : OobAddresses.toInet(local, true, devices::hasGid);
        ensureOpen();
        final OobHandshake handshake = OobHandshake.connector(this, endpoint,
            new InetSocketAddress(target.getAddress(), sidePort(target.getPort())),
            source == null ? null : new InetSocketAddress(source.getAddress(), sidePort(source.getPort())),
            remote instanceof IbSocketAddress);
        handshake.start();
        return handshake;
    }

    // ----- what the handshakes use -----

    OobDevices.Local deviceFor(final InetAddress localAddress) throws IOException {
        return devices.forAddress(localAddress);
    }

    long timeoutNanos() {
        return timeoutNanos;
    }

    static int newPacketSequenceNumber() {
        return RANDOM.nextInt(1 << 24);
    }

    /** Track a handshake until it ends; false if the manager is closed (the handshake must not start). */
    boolean register(final OobHandshake handshake) {
        handshakes.add(handshake);
        if (closed) {
            handshakes.remove(handshake);
            return false;
        }
        return true;
    }

    void unregister(final OobHandshake handshake) {
        handshakes.remove(handshake);
    }

    /** An established connection's side channel stays open until it or its queue pair closes. */
    void watch(final OobHandshake connection) {
        watched.add(connection);
        if (closed) {
            connection.stopWatching();
        }
    }

    void unwatch(final OobHandshake connection) {
        watched.remove(connection);
    }

    private void ensureOpen() throws IOException {
        if (closed) {
            throw new IOException("the oob connection manager is closed");
        }
    }

    /**
     * Listeners close, handshakes in progress fail and the side channels of established connections close (their
     * threads are waited for, a bounded time, so that nothing uses a device after it closed); the devices stay open.
     */
    @Override
    public void stop() {
        if (closed) {
            return;
        }
        closed = true;
        for (final OobListener listener : List.copyOf(listeners)) {
            listener.close();
        }
        // a handshake stays in the set until its thread has released everything; what is cancelled is waited for
        final List<OobHandshake> inFlight = List.copyOf(handshakes);
        final List<OobHandshake> sideChannels = List.copyOf(watched);
        final long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(CLOSE_WAIT_MILLIS);
        for (final OobHandshake handshake : inFlight) {
            handshake.cancel("the oob connection manager is closed");
        }
        for (final OobHandshake connection : sideChannels) {
            connection.stopWatching();
        }
        for (final OobHandshake handshake : inFlight) {
            handshake.awaitEnd(deadline);
        }
        for (final OobHandshake connection : sideChannels) {
            connection.awaitEnd(deadline);
        }
    }

    /**
     * {@link #stop()}, then the devices close.
     */
    @Override
    public void close() {
        if (!devicesClosed.compareAndSet(false, true)) {
            return;
        }
        stop();
        devices.close();
    }

    @Override
    public String toString() {
        return "OobConnectionManager{provider=" + provider.name() + ", portOffset=" + portOffset + ", handshakes="
            + handshakes.size() + ", listeners=" + listeners.size() + ", watched=" + watched.size() + '}';
    }
}

package io.rdmachannel.channel.stream;

import io.rdmachannel.channel.ConnectionInfo;
import io.rdmachannel.channel.DeviceInfo;
import io.rdmachannel.channel.RdmaTransportMXBean;
import io.rdmachannel.channel.cm.CmConnection;
import io.rdmachannel.channel.cm.CmListener;
import io.rdmachannel.channel.cm.ConnectionManager;
import io.rdmachannel.channel.cm.oob.OobConnectionManager;
import io.rdmachannel.channel.spi.RdmaDevice;
import io.rdmachannel.channel.spi.RdmaProvider;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.net.SocketAddress;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import javax.management.JMException;
import javax.management.ObjectName;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The rsockets stream transport over one provider: one connection manager, and per device a {@link DeviceContext}.
 */
final class RsocketTransport implements StreamTransport, AutoCloseable, RdmaTransportMXBean {
    /** Whether transports register their {@link RdmaTransportMXBean} (default true). */
    static final String JMX_PROP_NAME = "rdmachannel.jmx";
    private static final Logger LOG = LoggerFactory.getLogger(RsocketTransport.class);
    private static final AtomicLong IDS = new AtomicLong();

    private final RdmaProvider provider;
    private final StreamConfiguration configuration;
    private final HostPolicy hostPolicy;
    private final ConnectionManager connectionManager;
    /** Managers other than the default that channels asked for, by name, in the order they were opened. */
    private final Map<String, ConnectionManager> otherManagers = new LinkedHashMap<>();
    private final Map<RdmaDevice, DeviceContext> contexts = new IdentityHashMap<>();
    /** Listeners that refused the XRC mode lately: connects to them ask for RC at once. */
    private final XrcRefusals xrcRefusals = new XrcRefusals();
    private static final long LINGER_TICK_MICROS = 1000;

    private ScheduledExecutorService keepAlive;
    private final Map<RsocketConnection, Long> lingering = new IdentityHashMap<>();
    private ScheduledFuture<?> lingerTask;
    private boolean closed;

    // the management view: lifecycle only, never the data path
    private final Set<RsocketConnection> live = ConcurrentHashMap.newKeySet();
    private final LongAdder establishedCount = new LongAdder();
    private final LongAdder failedCount = new LongAdder();
    private final LongAdder rejectedCount = new LongAdder();
    private final Object mbeanLock = new Object();
    private ObjectName mbeanName;
    private boolean mbeanClosed;

    RsocketTransport(final RdmaProvider provider, final String connectionManagerName) throws IOException {
        provider.ensureAvailability();
        this.provider = provider;
        this.configuration = StreamConfiguration.fromSystemProperties();
        this.hostPolicy = HostPolicy.fromSystemProperties();
        if (configuration.iomapEntries() != 0) {
            throw new UnsupportedOperationException(StreamConfiguration.IOMAP_ENTRIES_PROP_NAME + "="
                + configuration.iomapEntries() + ": direct placement (riomap/riowrite) is not implemented yet; use 0");
        }
        // oob needs nothing but the verbs SPI: every provider has it, besides its own managers
        this.connectionManager = openManager(provider, connectionManagerName);
        if (Boolean.parseBoolean(System.getProperty(JMX_PROP_NAME, "true"))) {
            // the platform MBean server takes a while to start the first time: not on the caller's path
            Thread.ofVirtual().name("rdmachannel-jmx").start(this::registerMBean);
        }
    }

    private static ConnectionManager openManager(final RdmaProvider provider, final String name) throws IOException {
        return OobConnectionManager.NAME.equals(name) ? new OobConnectionManager(provider)
            : provider.openConnectionManager(name);
    }

    /**
     * Whether the connection manager of {@code options} lets an endpoint make its own queue pairs (the XRC mode).
     */
    boolean supportsOwnQueuePairs(final StreamOptions options) throws IOException {
        return manager(options).supportsOwnQueuePairs();
    }

    /**
     * The connection manager a listener or connection asked for ({@link StreamOptions#connectionManager()}): the
     * transport's own, or another this provider offers, opened on first use and kept until the transport closes.
     *
     * @throws IOException if the transport is closed, or the provider has no manager of that name.
     */
    private ConnectionManager manager(final StreamOptions options) throws IOException {
        final String name = options.connectionManager();
        if (name == null || name.equals(connectionManager.name())) {
            return connectionManager;
        }
        synchronized (this) {
            if (closed) {
                throw new IOException("the stream transport is closed");
            }
            ConnectionManager manager = otherManagers.get(name);
            if (manager == null) {
                try {
                    manager = openManager(provider, name);
                } catch (final IllegalArgumentException ex) {
                    throw new IOException(ex.getMessage(), ex);
                }
                otherManagers.put(name, manager);
            }
            return manager;
        }
    }

    private void registerMBean() {
        try {
            final ObjectName name = new ObjectName(DOMAIN + ":type=Transport,provider=" + ObjectName.quote(
                provider.name()) + ",id=" + IDS.incrementAndGet());
            synchronized (mbeanLock) {
                if (!mbeanClosed) {
                    ManagementFactory.getPlatformMBeanServer().registerMBean(this, name);
                    mbeanName = name;
                    System.setProperty(REGISTERED_PROPERTY, "true");
                }
            }
        } catch (final JMException | RuntimeException ex) {
            LOG.debug("cannot register the management view of {}", this, ex);
        }
    }

    private void unregisterMBean() {
        synchronized (mbeanLock) {
            mbeanClosed = true;
            if (mbeanName != null) {
                try {
                    ManagementFactory.getPlatformMBeanServer().unregisterMBean(mbeanName);
                } catch (final JMException ex) {
                    LOG.debug("cannot unregister {}", mbeanName, ex);
                }
                mbeanName = null;
            }
        }
    }

    /**
     * The name of this transport's MBean once registered (in the background), else null; for tests.
     */
    ObjectName mbeanName() {
        synchronized (mbeanLock) {
            return mbeanName;
        }
    }

    // ----- lifecycle, for the management view -----

    void onEstablished(final RsocketConnection connection) {
        establishedCount.increment();
        live.add(connection);
    }

    void onReleased(final RsocketConnection connection) {
        live.remove(connection);
    }

    void onFailed() {
        failedCount.increment();
    }

    void onRejected() {
        rejectedCount.increment();
    }

    @Override
    public String getProvider() {
        return provider.name();
    }

    @Override
    public ConnectionInfo[] getConnections() {
        return live.stream().map(RsocketConnection::info).toArray(ConnectionInfo[]::new);
    }

    /**
     * The device contexts opened so far; for tests.
     */
    synchronized List<DeviceContext> contexts() {
        return List.copyOf(contexts.values());
    }

    @Override
    public DeviceInfo[] getDevices() {
        final DeviceContext[] current;
        synchronized (this) {
            current = contexts.values().toArray(DeviceContext[]::new);
        }
        final DeviceInfo[] devices = new DeviceInfo[current.length];
        for (int i = 0; i < current.length; i++) {
            final RdmaDevice device = current[i].device();
            final SharedReceivePool pool = current[i].sharedReceivePoolIfAny();
            devices[i] = new DeviceInfo(provider.name(), device.name(), current[i].connectionCount(),
                current[i].registeredBufferCount(), device.resources(), device.events(),
                current[i].ownPostedReceives() + (pool == null ? 0 : pool.posted()),
                pool == null ? 0 : pool.posted() - pool.unreserved());
        }
        return devices;
    }

    @Override
    public int getConnectionCount() {
        return live.size();
    }

    @Override
    public long getConnectionsEstablished() {
        return establishedCount.sum();
    }

    @Override
    public long getConnectionsFailed() {
        return failedCount.sum();
    }

    @Override
    public long getRequestsRejected() {
        return rejectedCount.sum();
    }

    StreamConfiguration configuration() {
        return configuration;
    }

    /** The allow and deny lists every listener of this transport applies. */
    HostPolicy hostPolicy() {
        return hostPolicy;
    }

    /**
     * Run a connection's keepalive every period on a timer thread started on first use.
     */
    synchronized ScheduledFuture<?> scheduleKeepAlive(final Runnable probe) {
        final long period = configuration.keepAliveSeconds();
        return timer().scheduleAtFixedRate(probe, period, period, TimeUnit.SECONDS);
    }

    /**
     * Run a task once on the same timer thread, soon: work that an event thread (which may be a provider's
     * signalling thread, holding another connection's lock) must not do itself. Dropped after close.
     */
    synchronized void runOnTimer(final Runnable task) {
        if (closed) {
            return;
        }
        timer().execute(task);
    }

    /**
     * Run a task once on the timer thread after a delay; false (and it never runs) once the transport is closed.
     */
    synchronized boolean runOnTimer(final Runnable task, final long delayNanos) {
        if (closed) {
            return false;
        }
        timer().schedule(task, delayNanos, TimeUnit.NANOSECONDS);
        return true;
    }

    /**
     * Finish a closed connection's release on the timer thread: it looks every {@link #LINGER_TICK_MICROS} us
     * whether its DISCONNECT completed, and releases it then or at {@code deadline}. Closing the transport releases
     * what still lingers.
     *
     * @return false if the transport is closed: the caller releases the connection itself.
     */
    synchronized boolean linger(final RsocketConnection connection, final long deadline) {
        if (closed) {
            return false;
        }
        lingering.put(connection, deadline);
        if (lingerTask == null) {
            lingerTask = timer().scheduleWithFixedDelay(this::lingerTick, LINGER_TICK_MICROS, LINGER_TICK_MICROS,
                TimeUnit.MICROSECONDS);
        }
        return true;
    }

    private void lingerTick() {
        final RsocketConnection[] connections;
        final long[] deadlines;
        synchronized (this) {
            connections = lingering.keySet().toArray(RsocketConnection[]::new);
            deadlines = new long[connections.length];
            for (int i = 0; i < connections.length; i++) {
                deadlines[i] = lingering.get(connections[i]);
            }
        }
        final long now = System.nanoTime();
        for (int i = 0; i < connections.length; i++) {
            if (connections[i].lingerStep(now, deadlines[i])) {
                synchronized (this) {
                    lingering.remove(connections[i]);
                }
            }
        }
        synchronized (this) {
            if (lingering.isEmpty() && lingerTask != null) {
                lingerTask.cancel(false);
                lingerTask = null;
            }
        }
    }

    /**
     * Connections closed whose release waits for their DISCONNECT, for tests and diagnostics.
     */
    synchronized int lingering() {
        return lingering.size();
    }

    private ScheduledExecutorService timer() {
        assert Thread.holdsLock(this);
        if (keepAlive == null) {
            keepAlive = Executors.newSingleThreadScheduledExecutor(Thread.ofPlatform().daemon()
                .name("rdmachannel-keepalive").factory());
        }
        return keepAlive;
    }

    @Override
    public String providerName() {
        return provider.name();
    }

    @Override
    public StreamListener listen(final SocketAddress local, final int backlog, final StreamOptions options,
        final ReadinessObserver observer) throws IOException {
        Objects.requireNonNull(local, "local");
        final RsocketListener listener = new RsocketListener(this, options.copy(), backlog < 1 ? 50 : backlog,
            observer);
        final CmListener cmListener = manager(options).listen(local, backlog, listener::check,
            listener::newEndpoint);
        listener.bind(cmListener);
        return listener;
    }

    @Override
    public StreamConnector connect(final SocketAddress remote, final SocketAddress local,
        final StreamOptions options, final ReadinessObserver observer) throws IOException {
        Objects.requireNonNull(remote, "remote");
        final StreamOptions own = options.copy();
        final String refused = own.xrc() ? xrcRefusals.refusal(remote) : null;
        if (refused != null) {
            own.xrc(false);
        }
        final RsocketConnection connection = newConnection(remote, own, observer);
        if (refused != null) {
            connection.rcBecause("the listener refused it lately: " + refused);
        }
        final RsocketConnector connector = new RsocketConnector(this, connection, remote, local, own, observer);
        connection.connector(connector);
        connector.start();
        return connector;
    }

    /**
     * A connection to {@code remote}, not yet started ({@link #startAttempt}).
     */
    RsocketConnection newConnection(final SocketAddress remote, final StreamOptions options,
        final ReadinessObserver observer) {
        final RsocketConnection connection = new RsocketConnection(this, options, null);
        connection.peerAddress(remote);
        connection.observer(observer);
        return connection;
    }

    /**
     * Start {@code connection}'s attempt through the connection manager {@code options} name.
     */
    CmConnection startAttempt(final RsocketConnection connection, final SocketAddress remote,
        final SocketAddress local, final StreamOptions options) throws IOException {
        return manager(options).connect(remote, local, connection);
    }

    /**
     * The listener at {@code remote} refused the XRC mode: connects there ask for RC for a while.
     */
    void rememberXrcRefusal(final SocketAddress remote, final String reason) {
        xrcRefusals.remember(remote, reason);
    }

    /**
     * The engine's resources on a device, created on first use.
     */
    synchronized DeviceContext context(final RdmaDevice device) throws IOException {
        if (closed) {
            throw new IOException("the stream transport is closed");
        }
        DeviceContext context = contexts.get(device);
        if (context == null) {
            context = new DeviceContext(device, configuration.memoryPoolSize(),
                configuration.memoryPoolIdleMillis(), this::runOnTimer);
            contexts.put(device, context);
        }
        return context;
    }

    @Override
    public void close() {
        final RsocketConnection[] stillLingering;
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
            stillLingering = lingering.keySet().toArray(RsocketConnection[]::new);
            lingering.clear();
        }
        unregisterMBean();
        if (keepAlive != null) {
            keepAlive.shutdownNow();
        }
        for (final RsocketConnection connection : stillLingering) {
            connection.abort();
        }
        final List<ConnectionManager> managers = new ArrayList<>();
        synchronized (this) {
            managers.addAll(List.copyOf(otherManagers.values()).reversed());
            otherManagers.clear();
        }
        managers.add(connectionManager);
        // attempts in flight release what they hold on the contexts first; the managers' devices stay open meanwhile
        RuntimeException failure = null;
        for (final ConnectionManager manager : managers) {
            failure = Closing.close(manager::stop, failure);
        }
        for (final DeviceContext context : contexts.values()) {
            failure = Closing.close(context::close, failure);
        }
        for (final ConnectionManager manager : managers) {
            failure = Closing.close(manager::close, failure);
        }
        if (failure != null) {
            throw failure;
        }
    }

    @Override
    public String toString() {
        return "RsocketTransport{provider=" + provider.name() + ", cm=" + connectionManager.name() + '}';
    }
}

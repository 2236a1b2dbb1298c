package io.rdmachannel.channel.shm;

import io.rdmachannel.channel.cm.CmConnection;
import io.rdmachannel.channel.cm.CmEndpoint;
import io.rdmachannel.channel.cm.CmEndpointFactory;
import io.rdmachannel.channel.cm.CmListener;
import io.rdmachannel.channel.cm.ConnectionManager;
import io.rdmachannel.channel.cm.ConnectionRequest;
import io.rdmachannel.channel.cm.ConnectionRequestFilter;
import io.rdmachannel.channel.cm.NoRdmaPathException;
import io.rdmachannel.channel.cm.RejectReason;
import io.rdmachannel.channel.cm.Rejection;
import io.rdmachannel.channel.IbSocketAddress;
import io.rdmachannel.channel.internal.LocalAddresses;
import io.rdmachannel.channel.internal.PlatformChannels;
import io.rdmachannel.channel.spi.QueuePair;
import io.rdmachannel.channel.spi.QueuePairAttributes;
import io.rdmachannel.channel.spi.QueuePairState;

import java.io.IOException;
import java.net.BindException;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedByInterruptException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ClosedSelectorException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.channels.UnsupportedAddressTypeException;
import java.nio.file.DirectoryIteratorException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.PriorityQueue;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Stream;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The shared-memory provider's connection manager: the rendezvous of the host-local fabric. A listener is a
 * Unix-domain socket named by its address under {@code <dir>/ports}; connecting opens a socket to it and runs a
 * three-way handshake (REQ with the requester's GID, QP number and private data; REP or REJ; RTU) on one event
 * thread, like librdmacm's event channel. The socket closes once the connection is established: the queue pairs'
 * own link then carries wake-ups and tells each side when the other is gone.
 *
 * <pre>
 *  frame: length u32 (of what follows), magic u32 "RDCM", type u8, then by type (big-endian):
 *   REQ 1: version u8, gid[16], qpn u32, psn u32, source address, target address (ShmAddresses),
 *          private data (len u16 + bytes)
 *   REP 2: gid[16], qpn u32, psn u32, private data (len u16 + bytes)
 *   REJ 3: reason u8, private data (len u16 + bytes)
 *   RTU 4: nothing
 * </pre>
 */
final class ShmConnectionManager implements ConnectionManager {
    static final String NAME = "shm";
    /** How long a handshake may take, in milliseconds. */
    static final String CONNECT_TIMEOUT_PROP_NAME = "rdmachannel.shm.connectTimeoutMillis";
    /** Default for {@link #CONNECT_TIMEOUT_PROP_NAME}. */
    static final long CONNECT_TIMEOUT_DEFAULT = 10_000;

    private static final Logger LOG = LoggerFactory.getLogger(ShmConnectionManager.class);
    private static final int MAGIC = 0x5244434d;
    private static final int VERSION = 1;
    private static final int REQ = 1;
    private static final int REP = 2;
    private static final int REJ = 3;
    private static final int RTU = 4;
    private static final int MAX_FRAME = 4096;
    private static final int MAX_PRIVATE_DATA = 1024;
    private static final int EPHEMERAL_LOW = 32768;
    private static final int EPHEMERAL_HIGH = 61000;
    private static final SecureRandom RANDOM = new SecureRandom();
    /** The age under which a listener socket nobody accepts on is left alone: it may be between bind and listen. */
    private static final long STALE_LISTENER_MILLIS = 10_000;
    /**
     * How many connections a listener accepts per readiness before its thread serves its other sockets: accepting
     * for as long as connections arrive would leave the handshakes it accepted unread (a socket joins the selector
     * only when it next selects).
     */
    private static final int ACCEPTS_PER_READINESS = 16;
    /** The first and the longest wait before a requester tries a listener whose backlog was full again. */
    private static final long BACKLOG_RETRY_FIRST_NANOS = TimeUnit.MILLISECONDS.toNanos(1);
    private static final long BACKLOG_RETRY_MAX_NANOS = TimeUnit.MILLISECONDS.toNanos(64);
    private static final long SELECT_MILLIS = 100;

    private final ShmDevice device;
    private final Path directory;
    private final Path ports;
    private final long connectTimeoutNanos;
    private final Selector selector;
    private final Thread thread;
    private final Queue<Runnable> tasks = new ConcurrentLinkedQueue<>();
    /** Set under the queue's monitor once the manager's thread has taken its last tasks. */
    private boolean drained;
    private final List<Handshake> handshakes = new ArrayList<>();
    /** Requesters waiting for room in a listener's backlog, earliest retry first. Manager's thread. */
    private final PriorityQueue<Handshake> backlogWaits = new PriorityQueue<>(
        (one, other) -> Long.signum(one.retryAt - other.retryAt));
    /** Established connections of endpoints with their own queue pairs, whose sockets are their lifelines. */
    private final Set<Handshake> lifelines = new HashSet<>();
    private volatile boolean running = true;
    private final AtomicBoolean closed = new AtomicBoolean();

    ShmConnectionManager(final ShmDevice device, final ShmConfiguration configuration) throws IOException {
        this.device = device;
        this.directory = configuration.directory();
        this.ports = directory.resolve("ports");
        Files.createDirectories(ports);
        reclaimStaleListeners(ports, STALE_LISTENER_MILLIS);
        this.connectTimeoutNanos = TimeUnit.MILLISECONDS.toNanos(
            Long.getLong(CONNECT_TIMEOUT_PROP_NAME, CONNECT_TIMEOUT_DEFAULT));
        this.selector = PlatformChannels.provider().openSelector();
        this.thread = Thread.ofPlatform().daemon().name("rdmachannel-shm-cm-" + device.gidHex().substring(0, 8))
            .start(this::run);
    }

    @Override
    public boolean supportsOwnQueuePairs() {
        return true;
    }

    @Override
    public String name() {
        return NAME;
    }

    // ----- listening -----

    @Override
    public CmListener listen(final SocketAddress local, final int backlog, final ConnectionRequestFilter filter,
        final CmEndpointFactory factory) throws IOException {
        final SocketAddress address = ShmAddresses.check(local);
        if (!ShmAddresses.hasPort(address)) {
            throw new UnsupportedAddressTypeException();
        }
        if (!ShmAddresses.isWildcard(address) && !isLocal(address)) {
            throw new BindException("Cannot assign requested address: " + describe(address)
                + " is not an address of this host");
        }
        final ServerSocketChannel server = PlatformChannels.provider()
            .openServerSocketChannel(StandardProtocolFamily.UNIX);
        try {
            SocketAddress bound = address;
            final boolean ephemeral = ShmAddresses.port(address) == 0;
            for (int attempt = 0; ; attempt++) {
                if (ephemeral) {
                    bound = ShmAddresses.withPort(address, EPHEMERAL_LOW + RANDOM.nextInt(EPHEMERAL_HIGH
                        - EPHEMERAL_LOW));
                }
                if (bindListener(server, bound)) {
                    break;
                }
                if (!ephemeral || attempt > 1000) {
                    throw new BindException("Address already in use");
                }
            }
            server.configureBlocking(false);
            final ShmListener listener = new ShmListener(server, bound, listenerPath(bound, false),
                backlog < 1 ? 50 : backlog, filter, factory);
            ShmExitCleanup.deleteAtExit(listener.path);
            if (!execute(listener::register)) {
                listener.close();
                throw new IOException("the shm connection manager is closed");
            }
            return listener;
        } catch (final IOException | RuntimeException ex) {
            server.close();
            throw ex;
        }
    }

    private boolean bindListener(final ServerSocketChannel server, final SocketAddress address) throws IOException {
        final Path path = listenerPath(address, false);
        if (Files.exists(path) && !isStale(path) || overlapsLiveListener(address)) {
            return false;
        }
        Files.deleteIfExists(path);
        try {
            server.bind(UnixDomainSocketAddress.of(path));
            return true;
        } catch (final BindException ex) {
            return false;
        }
    }

    /**
     * Whether a live listener holds the same port on an overlapping address, as a TCP bind conflicts: the wildcard
     * of the family for a specific address, any address of the family for the wildcard.
     */
    private boolean overlapsLiveListener(final SocketAddress address) throws IOException {
        if (!ShmAddresses.isWildcard(address)) {
            final Path wildcard = listenerPath(address, true);
            return Files.exists(wildcard) && !isStale(wildcard);
        }
        final String wildcardName = ShmAddresses.listenerName(address, true);
        final boolean ib = !(address instanceof InetSocketAddress);
        final String portSuffix = wildcardName.substring(wildcardName.lastIndexOf('_'));
        try (Stream<Path> names = Files.list(ports)) {
            return names.anyMatch(other -> {
                final String name = other.getFileName().toString();
                return name.endsWith(portSuffix) && name.startsWith("ib_") == ib && !name.equals(wildcardName)
                    && !isStale(other);
            });
        }
    }

    /**
     * Delete the listener sockets that processes which died without closing their listeners left in the {@code
     * ports} folder: a socket nobody accepts on, and at least {@code minAgeMillis} old, so that a listener between
     * its bind and its listen in another process is never taken for a dead one. A port is also reclaimed when a
     * listener binds it ({@link #bindListener}); this sweep, run when a process opens its connection manager, keeps
     * the folder from growing with ports nobody binds again.
     *
     * @return the number of sockets deleted.
     */
    static int reclaimStaleListeners(final Path ports, final long minAgeMillis) {
        int reclaimed = 0;
        try (DirectoryStream<Path> sockets = Files.newDirectoryStream(ports)) {
            for (final Path socket : sockets) {
                if (isOlderThan(socket, minAgeMillis) && isStale(socket) && deleteQuietly(socket)) {
                    LOG.debug("reclaimed the shm listener socket {} of a dead process", socket);
                    reclaimed++;
                }
            }
        } catch (final IOException | DirectoryIteratorException ex) {
            LOG.debug("cannot scan {} for stale shm listener sockets", ports, ex);
        }
        return reclaimed;
    }

    private static boolean deleteQuietly(final Path path) {
        try {
            return Files.deleteIfExists(path);
        } catch (final IOException ex) {
            return false;
        }
    }

    /** Whether a path is a socket (nor file, folder or link) last changed at least {@code millis} ago. */
    private static boolean isOlderThan(final Path path, final long millis) {
        try {
            final BasicFileAttributes attributes = Files.readAttributes(path, BasicFileAttributes.class,
                LinkOption.NOFOLLOW_LINKS);
            return attributes.isOther()
                && System.currentTimeMillis() - attributes.lastModifiedTime().toMillis() >= millis;
        } catch (final IOException ex) {
            return false;
        }
    }

    private static boolean isStale(final Path path) {
        try (SocketChannel probe = PlatformChannels.provider()
            .openSocketChannel(StandardProtocolFamily.UNIX)) {
            probe.connect(UnixDomainSocketAddress.of(path));
            return false;
        } catch (final IOException ex) {
            return true;
        }
    }

    /**
     * Whether an address is this host's: for IP a loopback or local interface address, for InfiniBand the GID of a
     * live shm device of this host (its folder exists; a dead process's folder is gone or reclaimed soon).
     */
    private boolean isLocal(final SocketAddress address) {
        if (address instanceof InetSocketAddress inet) {
            return LocalAddresses.isLocal(inet.getAddress());
        }
        final byte[] gid = ((IbSocketAddress) address).gid();
        return Files.isDirectory(directory.resolve(HexFormat.of().formatHex(gid)));
    }

    private static String describe(final SocketAddress address) {
        return address instanceof InetSocketAddress inet ? inet.getAddress().getHostAddress()
            : address.toString();
    }

    private Path listenerPath(final SocketAddress address, final boolean wildcard) {
        return ports.resolve(ShmAddresses.listenerName(address, wildcard));
    }

    // ----- connecting -----

    @Override
    public CmConnection connect(final SocketAddress remote, final SocketAddress local, final CmEndpoint endpoint)
        throws IOException {
        if (!running) {
            throw new IOException("the shm connection manager is closed");
        }
        final SocketAddress target = ShmAddresses.target(ShmAddresses.check(remote));
        if (local != null && ShmAddresses.check(local).getClass() != target.getClass()) {
            throw new UnsupportedAddressTypeException();
        }
        if (!isLocal(target)) {
            // a listener on the wildcard serves this host's addresses only, as a TCP listener does
            throw new NoRdmaPathException(NoRdmaPathException.Reason.NOT_LOCAL, describe(target)
                + " is not an address of this host: the shm provider reaches only this host's addresses (the"
                + " loopback, the local interfaces' addresses, the GIDs of this host's shm devices)");
        }
        final SocketAddress source = ShmAddresses.source(local, target, device.gid(),
            EPHEMERAL_LOW + RANDOM.nextInt(EPHEMERAL_HIGH - EPHEMERAL_LOW));
        final Handshake handshake = new Handshake(null, endpoint, source, target);
        final boolean handedOver;
        if (Thread.currentThread().isInterrupted()) {
            // the caller's interrupt status would close the socket: the manager's thread makes the request instead
            handedOver = execute(handshake::start);
        } else {
            // the request leaves from the caller's thread, without waiting for the manager's; the reply comes there
            handshake.request();
            handedOver = execute(handshake::adopt);
        }
        if (!handedOver) {
            // the manager stopped since the check above and its thread is gone: nobody else will end the attempt
            handshake.fail(new IOException("the shm connection manager is closed"), RejectReason.CLOSING);
        }
        return handshake;
    }

    // ----- the event thread -----

    /**
     * Run a task on the manager's thread.
     *
     * @return false if the thread has stopped and taken its last tasks: the task will never run.
     */
    boolean execute(final Runnable task) {
        synchronized (tasks) {
            if (drained) {
                return false;
            }
            tasks.add(task);
        }
        selector.wakeup();
        return true;
    }

    /**
     * Run a task on the manager's thread, or on the caller's once that thread is gone (nobody else would run it).
     */
    void executeOrRunHere(final Runnable task) {
        if (!execute(task)) {
            task.run();
        }
    }

    private void run() {
        try {
            while (running) {
                selector.select(this::onSelected, selectMillis());
                runTasks();
                retryFullBacklogs();
                expireHandshakes();
            }
        } catch (final IOException | ClosedSelectorException ex) {
            if (running) {
                LOG.error("shm connection manager failed", ex);
            }
        } finally {
            // attempts handed over before the stop are taken over first, so that they fail below like the others;
            // from then on execute() refuses, and its caller ends what it would have handed over
            runTasks();
            synchronized (tasks) {
                drained = true;
            }
            runTasks();
            for (final Handshake handshake : List.copyOf(handshakes)) {
                handshake.fail(new IOException("the shm connection manager is closed"), RejectReason.CLOSING);
            }
            for (final Handshake handshake : List.copyOf(lifelines)) {
                // the connections stay; nothing tells their endpoints of their peers any more
                handshake.closeLifeline();
            }
            runTasks();
            for (final SelectionKey key : selector.keys()) {
                if (key.attachment() instanceof ShmListener listener) {
                    listener.close();
                }
            }
        }
    }

    private void runTasks() {
        Runnable task;
        while ((task = tasks.poll()) != null) {
            try {
                task.run();
            } catch (final RuntimeException ex) {
                LOG.error("shm connection manager task failed", ex);
            }
        }
    }

    private void onSelected(final SelectionKey key) {
        if (key.attachment() instanceof ShmListener listener) {
            listener.onAcceptable();
        } else if (key.attachment() instanceof Handshake handshake) {
            handshake.onReady(key);
        }
    }

    /** How long the manager's thread may wait for its sockets: until the next retry of a full backlog, if any. */
    private long selectMillis() {
        final Handshake next = backlogWaits.peek();
        if (next == null) {
            return SELECT_MILLIS;
        }
        final long millis = TimeUnit.NANOSECONDS.toMillis(next.retryAt - System.nanoTime());
        return Math.clamp(millis, 1, SELECT_MILLIS);
    }

    private void retryFullBacklogs() {
        final long now = System.nanoTime();
        Handshake waiting;
        while ((waiting = backlogWaits.peek()) != null && now - waiting.retryAt >= 0) {
            backlogWaits.poll();
            waiting.retryConnect();
        }
    }

    private void expireHandshakes() {
        final long now = System.nanoTime();
        for (final Handshake handshake : List.copyOf(handshakes)) {
            if (now - handshake.deadline > 0) {
                handshake.fail(new SocketTimeoutException("Connect timed out"), null);
            }
        }
    }

    @Override
    public void stop() {
        if (!running) {
            return;
        }
        running = false;
        selector.wakeup();
        if (Thread.currentThread() != thread) {
            try {
                thread.join(TimeUnit.SECONDS.toMillis(5));
            } catch (final InterruptedException ex) {
                Thread.currentThread().interrupt();
            }
        }
    }

    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        stop();
        try {
            selector.close();
        } catch (final IOException ex) {
            LOG.debug("closing the shm connection manager", ex);
        }
        device.close();
    }

    // ----- listener -----

    private final class ShmListener implements CmListener {
        private final ServerSocketChannel server;
        private final SocketAddress localAddress;
        private final Path path;
        private final int backlog;
        private final ConnectionRequestFilter filter;
        private final CmEndpointFactory factory;
        /**
         * Requests of this listener not yet handed to the application, which its backlog bounds (a connection taken at
         * the reply no longer counts while its handshake ends).
         */
        private int inProgress;
        private volatile boolean closed;

        ShmListener(final ServerSocketChannel server, final SocketAddress localAddress, final Path path,
            final int backlog, final ConnectionRequestFilter filter, final CmEndpointFactory factory) {
            this.server = server;
            this.localAddress = localAddress;
            this.path = path;
            this.backlog = backlog;
            this.filter = filter;
            this.factory = factory;
        }

        void register() {
            try {
                server.register(selector, SelectionKey.OP_ACCEPT, this);
            } catch (final ClosedChannelException ex) {
                // closed by its owner before this thread came to serve it: nothing to serve, nothing went wrong
                LOG.debug("shm listener {} closed before it was served", localAddress);
                close();
            }
        }

        void onAcceptable() {
            try {
                SocketChannel channel;
                for (int i = 0; i < ACCEPTS_PER_READINESS && (channel = server.accept()) != null; i++) {
                    channel.configureBlocking(false);
                    final Handshake handshake = new Handshake(this, null, null, null);
                    handshake.attach(channel, SelectionKey.OP_READ);
                    // a requester sends its request as soon as it is connected: often it is here already, and
                    // reading it now saves a round of the selector (a wake-up of this thread)
                    handshake.readEarly();
                }
            } catch (final IOException ex) {
                LOG.debug("accept on shm listener {} failed", localAddress, ex);
            }
        }

        @Override
        public SocketAddress localAddress() {
            return localAddress;
        }

        @Override
        public void close() {
            if (closed) {
                return;
            }
            closed = true;
            try {
                server.close();
                Files.deleteIfExists(path);
                ShmExitCleanup.forget(path);
            } catch (final IOException ex) {
                LOG.debug("closing shm listener {}", localAddress, ex);
            }
        }
    }

    // ----- one handshake, active or passive -----

    private final class Handshake implements CmConnection {
        private final ShmListener listener;
        private final ByteBuffer in = ByteBuffer.allocate(MAX_FRAME);
        private final long deadline = System.nanoTime() + connectTimeoutNanos;
        private final int psn = RANDOM.nextInt(1 << 24);
        private CmEndpoint endpoint;
        private SocketAddress source;
        private SocketAddress target;
        private SocketChannel channel;
        private SelectionKey key;
        private QueuePair queuePair;
        private CmEndpoint.QueuePairSetup setup;
        private ByteBuffer pendingOut;
        private ByteBuffer peerPrivateData;
        private boolean bound;
        private boolean done;
        /** Active side: whether the socket is connected, and what failed before the manager's thread took over. */
        private boolean socketConnected;
        private IOException startFailure;
        /**
         * Active side: the listener's backlog was full (the socket is closed; a Unix socket refuses at once where a
         * TCP connect would send its SYN again), so the request waits and tries again at {@code retryAt}.
         */
        private boolean backlogFull;
        private long retryAt;
        private long retryDelayNanos;
        /**
         * An endpoint's own queue pairs, established: the socket stays open as the connection's lifeline
         * ({@link CmEndpoint#peerGone}) until either side closes it. Manager's thread.
         */
        private boolean lifeline;
        /**
         * Passive side: the endpoint took the connection when the reply went out
         * ({@link CmEndpoint#establishedAtReply}); the RTU confirms it, anything else that ends the handshake is the
         * endpoint's {@link CmEndpoint#peerGone}.
         */
        private boolean establishedAtReply;
        /** The endpoint closed its path: no lifeline is kept, or the one kept ends. Any thread. */
        private volatile boolean lifelineClosed;

        Handshake(final ShmListener listener, final CmEndpoint endpoint, final SocketAddress source,
            final SocketAddress target) {
            this.listener = listener;
            this.endpoint = endpoint;
            this.source = source;
            this.target = target;
        }

        void attach(final SocketChannel socket, final int ops) throws IOException {
            this.channel = socket;
            this.key = socket.register(selector, ops, this);
            track();
        }

        private void track() {
            handshakes.add(this);
            if (listener != null) {
                listener.inProgress++;
            }
        }

        /** Active side, on the manager's thread: find the listener, open the socket, send the request. */
        void start() {
            request();
            adopt();
        }

        /**
         * Active side, on any thread before the manager's thread knows this handshake: find the listener, open the
         * socket and, once it is connected (a Unix socket connects at once unless the listener's backlog is full),
         * create the queue pair and send the request. What fails is kept for {@link #adopt}.
         */
        void request() {
            try {
                Path path = listenerPath(target, false);
                if (!Files.exists(path)) {
                    path = listenerPath(target, true);
                }
                final SocketChannel socket = PlatformChannels.provider()
                    .openSocketChannel(StandardProtocolFamily.UNIX);
                channel = socket;
                socket.configureBlocking(false);
                backlogFull = false;
                try {
                    socketConnected = socket.connect(UnixDomainSocketAddress.of(path));
                } catch (final SocketException ex) {
                    // a listener's socket that refuses neither as dead (refused) nor as gone (no file): its backlog
                    // is full (EAGAIN); the failed connect closed the socket
                    if (ex instanceof ConnectException || !Files.exists(path)) {
                        throw ex;
                    }
                    socket.close();
                    channel = null;
                    backlogFull = true;
                    return;
                }
                if (socketConnected) {
                    sendRequest();
                }
            } catch (final ClosedByInterruptException ex) {
                // interrupted meanwhile: the socket is closed, and the attempt ends with the interrupt as its cause
                startFailure = ex;
            } catch (final IOException ex) {
                // before the socket connected: nobody listens there; after, the request's own resources failed
                startFailure = socketConnected ? ex : RejectReason.NO_LISTENER.exception();
            } catch (final RuntimeException ex) {
                startFailure = new IOException("cannot start the connection: " + ex, ex);
            }
        }

        /**
         * Active side, on the manager's thread: take over the handshake {@link #request} began, and wait for the
         * socket's connection, the rest of the request or the reply.
         */
        void adopt() {
            if (startFailure != null) {
                fail(startFailure, null);
                return;
            }
            track();
            if (backlogFull) {
                awaitBacklogRoom();
                return;
            }
            register();
        }

        private void register() {
            try {
                key = channel.register(selector, !socketConnected ? SelectionKey.OP_CONNECT
                    : pendingOut != null ? SelectionKey.OP_READ | SelectionKey.OP_WRITE : SelectionKey.OP_READ, this);
            } catch (final IOException | RuntimeException ex) {
                fail(new IOException("shm connection handshake failed: " + ex.getMessage(), ex), null);
            }
        }

        /** Active side: try the listener again later, sooner first (until the handshake's deadline expires it). */
        private void awaitBacklogRoom() {
            retryDelayNanos = retryDelayNanos == 0 ? BACKLOG_RETRY_FIRST_NANOS
                : Math.min(retryDelayNanos * 2, BACKLOG_RETRY_MAX_NANOS);
            retryAt = System.nanoTime() + retryDelayNanos;
            backlogWaits.add(this);
        }

        /** Active side, on the manager's thread: the listener's backlog was full; try again, unless ended since. */
        void retryConnect() {
            if (done) {
                return;
            }
            request();
            if (startFailure != null) {
                fail(startFailure, null);
            } else if (backlogFull) {
                awaitBacklogRoom();
            } else {
                register();
            }
        }

        void onReady(final SelectionKey ready) {
            if (lifeline) {
                onLifeline();
                return;
            }
            try {
                if (ready.isConnectable()) {
                    if (channel.finishConnect()) {
                        socketConnected = true;
                        key.interestOps(SelectionKey.OP_READ);
                        sendRequest();
                    }
                    return;
                }
                if (ready.isWritable()) {
                    flush();
                }
                if (ready.isReadable()) {
                    read();
                }
            } catch (final IOException | RuntimeException ex) {
                failOn(ex);
            }
        }

        /** Passive side, just accepted: read what the requester sent already, if anything. */
        void readEarly() {
            try {
                read();
            } catch (final IOException | RuntimeException ex) {
                failOn(ex);
            }
        }

        private void failOn(final Exception ex) {
            fail(listener == null && !socketConnected ? RejectReason.NO_LISTENER.exception()
                : new IOException("shm connection handshake failed: " + ex.getMessage(), ex), null);
        }

        /** Active side: create the queue pair and send the request ({@link #send}, before or after {@link #attach}). */
        private void sendRequest() throws IOException {
            createQueuePair(endpoint.prepare(device));
            bound = true;
            final ByteBuffer privateData = endpoint.bind(queuePair, null);
            final ByteBuffer frame = frame(REQ);
            frame.put((byte) VERSION).put(device.gid()).putInt(advertisedNumber()).putInt(psn);
            ShmAddresses.put(frame, source);
            ShmAddresses.put(frame, target);
            putPrivateData(frame, privateData);
            send(frame);
        }

        /** Create the queue pair the setup asks for, if any (an endpoint may make its own). */
        private void createQueuePair(final CmEndpoint.QueuePairSetup setup) throws IOException {
            this.setup = setup;
            if (!setup.createsQueuePair()) {
                return;
            }
            queuePair = setup.protectionDomain().createQueuePair(setup.attributes());
            queuePair.modify(QueuePairState.INIT, new QueuePairAttributes().accessFlags(setup.accessFlags()));
        }

        /** The queue pair number the request or reply carries: the CM's queue pair's, or the endpoint's choice. */
        private int advertisedNumber() {
            return setup.createsQueuePair() ? queuePair.number() : setup.advertisedQueuePairNumber();
        }

        private void read() throws IOException {
            if (channel.read(in) < 0) {
                throw new IOException("the peer closed the handshake socket");
            }
            in.flip();
            while (!done && in.remaining() >= Integer.BYTES && in.remaining() >= Integer.BYTES + in.getInt(
                in.position())) {
                final int length = in.getInt();
                if (length < 5 || length > MAX_FRAME - Integer.BYTES) {
                    throw new IOException("malformed handshake frame: length=" + length);
                }
                final ByteBuffer message = in.slice(in.position(), length);
                in.position(in.position() + length);
                if (message.getInt() != MAGIC) {
                    throw new IOException("not an shm connection manager peer (bad magic)");
                }
                onMessage(message.get(), message);
            }
            in.compact();
        }

        private void onMessage(final int type, final ByteBuffer message) throws IOException {
            if (listener != null) {
                // a request comes first and once; the RTU only after it was answered (an endpoint exists only then:
                // a refused request ends the handshake). Out of turn, the requester ends the handshake, and its
                // socket with it, before anything is created or a second queue pair is made for it
                switch (type) {
                    case REQ -> {
                        if (endpoint != null) {
                            throw new IOException("a second request at the listener");
                        }
                        onRequest(message);
                    }
                    case RTU -> {
                        if (endpoint == null) {
                            throw new IOException("an RTU before any request at the listener");
                        }
                        established();
                    }
                    default -> throw new IOException("unexpected handshake message " + type + " at the listener");
                }
            } else {
                switch (type) {
                    case REP -> onReply(message);
                    case REJ -> fail(rejection(message).exception(), null);
                    default -> throw new IOException("unexpected handshake message " + type + " at the connector");
                }
            }
        }

        /** Passive side: a request arrived. */
        private void onRequest(final ByteBuffer message) throws IOException {
            if (message.get() != VERSION) {
                reject(RejectReason.UNSUPPORTED_PROTOCOL);
                return;
            }
            final byte[] peerGid = new byte[16];
            message.get(peerGid);
            final int peerQueuePair = message.getInt();
            final int peerPsn = message.getInt();
            source = ShmAddresses.get(message);
            target = ShmAddresses.get(message);
            peerPrivateData = getPrivateData(message);
            final String impostor = identityProblem();
            if (impostor != null) {
                reject(new Rejection(RejectReason.POLICY, impostor));
                return;
            }
            if (listener.closed) {
                reject(RejectReason.CLOSING);
                return;
            }
            if (listener.inProgress > listener.backlog) {
                reject(RejectReason.BACKLOG_FULL);
                return;
            }
            Rejection refused;
            try {
                refused = listener.filter.check(new ConnectionRequest(source, target, device.name(),
                    peerPrivateData.asReadOnlyBuffer()));
            } catch (final RuntimeException ex) {
                LOG.warn("shm listener {}: the connection request filter failed", listener.localAddress, ex);
                refused = new Rejection(RejectReason.POLICY, "the listener's filter failed");
            }
            if (refused != null) {
                reject(refused);
                return;
            }
            endpoint = listener.factory.newEndpoint(source);
            try {
                createQueuePair(endpoint.prepare(device, peerPrivateData.asReadOnlyBuffer()));
            } catch (final IOException | RuntimeException ex) {
                // the requester hears why (in short); whoever runs this process needs to know it turns requests away
                LOG.warn("shm listener {} refused {}: cannot create the connection's resources: {}",
                    listener.localAddress, source, ex.toString());
                reject(new Rejection(RejectReason.NO_RESOURCES, ex.getMessage()));
                throw ex;
            }
            if (queuePair instanceof ShmQueuePair accepted) {
                // on iWARP the passive side may send nothing before the active side's first message
                accepted.markPassive();
            }
            bound = true;
            final ByteBuffer privateData;
            try {
                if (!setup.createsQueuePair()) {
                    endpoint.peerKnown(new PeerPath(peerGid, peerPsn));
                }
                privateData = endpoint.bind(queuePair, peerPrivateData.asReadOnlyBuffer());
            } catch (final IOException ex) {
                // the requester hears why its connection data was refused
                reject(new Rejection(RejectReason.UNSUPPORTED_PROTOCOL, ex.getMessage()));
                throw ex;
            }
            if (queuePair != null) {
                moveToReadyToSend(peerGid, peerQueuePair, peerPsn);
            }
            final ByteBuffer frame = frame(REP);
            frame.put(device.gid()).putInt(advertisedNumber()).putInt(psn);
            putPrivateData(frame, privateData);
            send(frame);
            if (queuePair != null) {
                // the application may take the connection while the requester reads the reply; the endpoint sends
                // nothing before the RTU or the requester's first message says the requester's queue pair is ready
                try {
                    establishedAtReply = endpoint.establishedAtReply(peerPrivateData.asReadOnlyBuffer(), target,
                        source);
                } catch (final RuntimeException ex) {
                    throw new IOException("the endpoint refused the connection: " + ex, ex);
                }
                if (establishedAtReply) {
                    // the application has the connection: no longer a request held against the listener's backlog
                    listener.inProgress--;
                }
            }
        }

        /**
         * What is wrong with who the requester says it is, or {@code null}: a shm requester is a process of this host
         * (its address must be one of this host's, which it claims in its request and nothing else proves). A
         * listener's policy then sees an address the requester may have chosen among this host's, never a foreign
         * one. That it runs as this user the kernel saw to: connecting to a Unix socket takes search permission on
         * every folder of its path, and the device's folder is this user's with mode 0700, checked when the device
         * opened ({@code ShmDirectory.ensurePrivate}); only root passes that, and root may read this process's memory
         * anyway. (Reading the socket's peer credentials here cost the listener 12-18 us a connection, on its
         * connection manager's thread: the JDK looks the user's and group's names up on every call.)
         */
        private String identityProblem() {
            return isLocal(source) ? null
                : "the requester claims " + describe(source) + ", not an address of this host";
        }

        /** Active side: the listener accepted. */
        private void onReply(final ByteBuffer message) throws IOException {
            final byte[] peerGid = new byte[16];
            message.get(peerGid);
            final int peerQueuePair = message.getInt();
            final int peerPsn = message.getInt();
            peerPrivateData = getPrivateData(message);
            if (queuePair == null) {
                // the endpoint's own queue pairs: it connects them and takes the connection before the listener
                // hears the handshake is over, since the listener may send at once. Refused, no RTU goes out, and the
                // listener's side fails when the socket closes
                endpoint.peerKnown(new PeerPath(peerGid, peerPsn));
                end();
                if (!notifyEstablished()) {
                    closeChannelAfterLastFrame();
                    return;
                }
                keepAsLifeline();
                try {
                    send(frame(RTU));
                } catch (final IOException ex) {
                    // established already: the listener's side fails without its RTU
                    lifelineEnded(new IOException("the RTU did not reach the listener: " + ex.getMessage(), ex));
                }
                return;
            }
            moveToReadyToSend(peerGid, peerQueuePair, peerPsn);
            send(frame(RTU));
            established();
        }

        private void moveToReadyToSend(final byte[] peerGid, final int peerQueuePair, final int peerPsn)
            throws IOException {
            final PeerPath path = new PeerPath(peerGid, peerPsn);
            path.readyToReceive(queuePair, peerQueuePair);
            path.readyToSend(queuePair);
        }

        private void established() {
            if (queuePair == null) {
                // passive side, the endpoint's own queue pairs: the socket stays as the connection's lifeline
                end();
                if (notifyEstablished()) {
                    keepAsLifeline();
                } else {
                    closeChannel();
                }
                return;
            }
            finish();
            if (establishedAtReply) {
                endpoint.confirmed();
            } else {
                notifyEstablished();
            }
        }

        /** Established with the endpoint's own queue pairs: read the socket for its end, unless closed already. */
        private void keepAsLifeline() {
            if (lifelineClosed) {
                closeChannelAfterLastFrame();
                return;
            }
            lifeline = true;
            lifelines.add(this);
        }

        /** The lifeline's socket is readable: its end (or anything else: nothing is sent on it) ends it. */
        private void onLifeline() {
            String gone;
            try {
                in.clear();
                gone = channel.read(in) < 0 ? "the peer closed the connection's lifeline"
                    : "the peer sent on the connection's lifeline";
            } catch (final IOException ex) {
                gone = "the connection's lifeline failed: " + ex.getMessage();
            }
            lifelineEnded(new IOException(gone));
        }

        /** Manager's thread; {@code cause} is told unless the endpoint closed the lifeline itself. */
        private void lifelineEnded(final IOException cause) {
            if (!lifeline) {
                return;
            }
            lifeline = false;
            lifelines.remove(this);
            closeChannelAfterLastFrame();
            if (!lifelineClosed) {
                endpoint.peerGone(cause);
            }
        }

        /** The endpoint closed its path (any thread), or the manager stops. */
        void closeLifeline() {
            lifelineClosed = true;
            executeOrRunHere(() -> lifelineEnded(null));
        }

        /**
         * Tell the endpoint; if it refuses, it hears {@link CmEndpoint#failed} instead.
         *
         * @return whether it took the connection.
         */
        private boolean notifyEstablished() {
            try {
                if (listener != null) {
                    endpoint.established(peerPrivateData.asReadOnlyBuffer(), target, source);
                } else {
                    endpoint.established(peerPrivateData.asReadOnlyBuffer(), source, target);
                }
            } catch (final IOException ex) {
                endpoint.failed(ex);
                return false;
            } catch (final RuntimeException ex) {
                endpoint.failed(new IOException("the endpoint refused the connection: " + ex, ex));
                return false;
            }
            return true;
        }

        /** The peer as this handshake knows it, for the queue pairs an endpoint makes itself. */
        private final class PeerPath implements CmEndpoint.PeerPath {
            private final byte[] peerGid;
            private final int peerPsn;

            PeerPath(final byte[] peerGid, final int peerPsn) {
                this.peerGid = peerGid;
                this.peerPsn = peerPsn;
            }

            @Override
            public void readyToReceive(final QueuePair target, final int remoteQueuePairNumber) throws IOException {
                target.modify(QueuePairState.READY_TO_RECEIVE, new QueuePairAttributes().remoteGid(peerGid)
                    .remoteQueuePairNumber(remoteQueuePairNumber).receivePacketSequenceNumber(peerPsn));
            }

            @Override
            public void readyToSend(final QueuePair target) throws IOException {
                target.modify(QueuePairState.READY_TO_SEND, setup.readyToSend(psn));
            }

            @Override
            public void close() {
                closeLifeline();
            }
        }

        private void reject(final RejectReason reason) throws IOException {
            reject(Rejection.of(reason));
        }

        /** A REJ: the reason's code, then as private data the whole rejection with its detail. */
        private void reject(final Rejection rejection) throws IOException {
            final ByteBuffer frame = frame(REJ);
            frame.put((byte) rejection.reason().code());
            final ByteBuffer encoded = ByteBuffer.allocate(Rejection.MAX_ENCODED_BYTES);
            rejection.encode(encoded);
            putPrivateData(frame, encoded.flip());
            send(frame);
            LOG.debug("shm listener {} rejected {}: {}", listener.localAddress, source, rejection);
            fail(null, null);
        }

        /**
         * The connector's reading of a REJ: the reason's code, and the detail from its private data when that is
         * well formed and names the same reason (older listeners send none).
         */
        private static Rejection rejection(final ByteBuffer message) {
            final RejectReason reason = RejectReason.fromCode(message.get());
            try {
                return Rejection.received(reason, getPrivateData(message));
            } catch (final IOException | BufferUnderflowException ex) {
                return Rejection.of(reason);
            }
        }

        private ByteBuffer frame(final int type) {
            return ByteBuffer.allocate(MAX_FRAME).putInt(0).putInt(MAGIC).put((byte) type);
        }

        /**
         * Write a frame; what the socket does not take waits in {@code pendingOut} for OP_WRITE, which is asked for
         * here once the handshake is attached to the selector, or by {@link #adopt} when it attaches.
         */
        private void send(final ByteBuffer frame) throws IOException {
            frame.putInt(0, frame.position() - Integer.BYTES).flip();
            channel.write(frame);
            if (frame.hasRemaining()) {
                pendingOut = frame;
                if (key != null) {
                    key.interestOps(key.interestOps() | SelectionKey.OP_WRITE);
                }
            }
        }

        private void flush() throws IOException {
            if (pendingOut != null) {
                channel.write(pendingOut);
                if (!pendingOut.hasRemaining()) {
                    pendingOut = null;
                    key.interestOps(key.interestOps() & ~SelectionKey.OP_WRITE);
                }
            }
        }

        /** The handshake is over; the endpoint owns the queue pair. */
        private void finish() {
            if (end()) {
                closeChannelAfterLastFrame();
            }
        }

        /**
         * The handshake is over for the manager (a cancel no longer reaches the endpoint), its socket still open.
         *
         * @return false if it was over already.
         */
        private boolean end() {
            if (done) {
                return false;
            }
            done = true;
            handshakes.remove(this);
            if (listener != null && !establishedAtReply) {
                listener.inProgress--;
            }
            return true;
        }

        private void closeChannelAfterLastFrame() {
            if (pendingOut == null) {
                closeChannel();
            } else {
                // let the last frame leave first; close when written or on the next failure (or now, if the
                // manager's thread is gone)
                executeOrRunHere(this::closeChannel);
            }
        }

        private void closeChannel() {
            try {
                if (channel != null) {
                    channel.close();
                }
            } catch (final IOException ignore) {
                // nothing more to release
            }
        }

        /**
         * End the handshake unsuccessfully; tell the endpoint if it exists.
         */
        void fail(final IOException cause, final RejectReason reason) {
            if (done) {
                return;
            }
            if (reason != null && listener != null && channel != null && endpoint == null) {
                try {
                    reject(reason);
                } catch (final IOException ignore) {
                    // the peer is gone anyway
                }
                return;
            }
            finish();
            closeChannel();
            if (!bound && queuePair != null) {
                queuePair.close();
            }
            if (establishedAtReply) {
                endpoint.peerGone(new IOException("the requester did not finish the handshake"
                    + (cause != null ? ": " + cause.getMessage() : ""), cause));
            } else if (endpoint != null) {
                endpoint.failed(cause != null ? cause : RejectReason.NO_LISTENER.exception());
            }
        }

        @Override
        public void close() {
            executeOrRunHere(() -> fail(new IOException("connection attempt cancelled"), null));
        }
    }

    private static void putPrivateData(final ByteBuffer frame, final ByteBuffer privateData) {
        if (privateData == null) {
            frame.putShort((short) 0);
            return;
        }
        final ByteBuffer data = privateData.duplicate();
        if (data.remaining() > MAX_PRIVATE_DATA) {
            throw new IllegalArgumentException("private data too long: length=" + data.remaining());
        }
        frame.putShort((short) data.remaining()).put(data);
    }

    private static ByteBuffer getPrivateData(final ByteBuffer message) throws IOException {
        final int length = Short.toUnsignedInt(message.getShort());
        if (length > message.remaining()) {
            throw new IOException("malformed private data in handshake: length=" + length);
        }
        final ByteBuffer data = ByteBuffer.allocate(length);
        message.get(data.array());
        return data;
    }
}

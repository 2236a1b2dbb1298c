package io.rdmachannel.channel.shm;

import java.io.IOException;
import java.net.ConnectException;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.ClosedByInterruptException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;

import io.rdmachannel.channel.internal.PlatformChannels;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The device's service thread: accepts links from peers, reads their wake-ups, notices their end (a dead process
 * closes its sockets, so its peers' queue pairs reach ERROR at once), and retries send queues that met an RNR or a
 * not-yet-ready peer. It never runs on the data path of a successful post or poll.
 */
final class ShmAgent implements AutoCloseable {
    static final String SOCKET_FILE = "sock";
    /** How many free links to one peer a device keeps for the next connections to it. */
    static final int MAX_IDLE_LINKS_PER_PEER = 4;
    private static final Logger LOG = LoggerFactory.getLogger(ShmAgent.class);

    private final ShmDevice device;
    private final Path socketPath;
    private final Selector selector;
    private final ServerSocketChannel server;
    private final Queue<Runnable> tasks = new ConcurrentLinkedQueue<>();
    private final Set<Retry> retrying = ConcurrentHashMap.newKeySet();
    /** Links this device connected whose queue pairs let go of them, by peer socket, oldest first; none empty. */
    private final Map<String, ArrayDeque<IdleLink>> idleLinks = new HashMap<>();
    private final AtomicInteger socketsConnected = new AtomicInteger();
    /**
     * The links of this device's XRC initiators, one per peer device (by its agent socket) shared by all of them,
     * with the initiators using each: a process that talks to the XRC queues of many connections on one peer device
     * pays one socket for all of them, as one for each made the descriptors per connection grow with the peers'
     * queues. Guarded by itself.
     */
    private final Map<String, XrcLink> xrcLinks = new HashMap<>();
    // made once: a method reference written in the loop would be a new object on every wake-up
    private final Consumer<SelectionKey> selected = this::onSelected;
    private final Thread thread;
    private final long sweepIntervalNanos;
    private final long idleLinkNanos;
    private long nextSweepNanos;
    private volatile boolean running = true;
    /** Set while the agent decides how long to wait and while it waits without a deadline ({@link #nudge}). */
    private volatile boolean waitingWithoutDeadline;

    /**
     * What the agent calls back once a deadline passed: a send queue to retry, a completion ring to look at again.
     */
    interface Retry {
        /**
         * When to call {@link #progress()}, in {@link System#nanoTime()}.
         */
        long retryDeadlineNanos();

        /**
         * The deadline passed (agent thread).
         */
        void progress();
    }

    ShmAgent(final ShmDevice device, final Path socketPath) throws IOException {
        this.device = device;
        this.socketPath = socketPath;
        if (socketPath.toString().length() > 100) {
            throw new IOException("shm socket path is too long for a Unix-domain socket (" + socketPath.toString()
                .length() + " characters): choose a shorter " + ShmConfiguration.DIRECTORY_PROP_NAME);
        }
        this.selector = PlatformChannels.provider().openSelector();
        try {
            this.server = PlatformChannels.provider()
                .openServerSocketChannel(StandardProtocolFamily.UNIX);
            server.bind(UnixDomainSocketAddress.of(socketPath));
            server.configureBlocking(false);
            server.register(selector, SelectionKey.OP_ACCEPT);
        } catch (final IOException | RuntimeException ex) {
            selector.close();
            throw ex;
        }
        this.thread = Thread.ofPlatform().daemon().name("rdmachannel-shm-" + device.gidHex().substring(0, 8))
            .unstarted(this::run);
        this.sweepIntervalNanos = Math.max(TimeUnit.MILLISECONDS.toNanos(10),
            TimeUnit.MILLISECONDS.toNanos(device.configuration().poolIdleMillis()) / 2);
        this.idleLinkNanos = TimeUnit.MILLISECONDS.toNanos(device.configuration().poolIdleMillis());
    }

    void start() {
        thread.start();
    }

    /**
     * Run a task on the agent thread.
     */
    void execute(final Runnable task) {
        tasks.add(task);
        selector.wakeup();
    }

    /**
     * A thread other than the agent gave the device something to sweep later (an idle pooled file, a name to
     * remove): wake the agent only if it waits, or is about to wait, without a deadline. One that waits with one comes
     * to it by then, and is not woken for it: waking a thread costs the waker several microseconds, on the path of
     * a close. The flag is set before the agent looks at what the device has to sweep, and read after the thing was
     * added, so that one of the two sees the other.
     */
    void nudge() {
        if (waitingWithoutDeadline) {
            selector.wakeup();
        }
    }

    /**
     * Call back when the deadline passes: retry a queue pair's send queue, look at a completion ring again.
     */
    void scheduleRetry(final Retry queuePair) {
        if (retrying.add(queuePair)) {
            selector.wakeup();
        }
    }

    void cancelRetry(final Retry queuePair) {
        retrying.remove(queuePair);
    }

    /**
     * Connect a link to a peer device and introduce it; the agent then serves it.
     */
    ShmLink connect(final Path peerSocket, final ShmQueuePair local, final int remoteQueuePairNumber)
        throws IOException {
        if (remoteQueuePairNumber != ShmLink.XRC_LINK) {
            ShmLink idle;
            while ((idle = takeIdle(peerSocket.toString())) != null) {
                try {
                    idle.introduce(local, device.gid(), remoteQueuePairNumber, local.generation());
                    return idle;
                } catch (final IOException ex) {
                    // the peer went away while the link was idle: its end is on its way to the agent; another
                    LOG.debug("idle shm link {} failed; trying another", idle, ex);
                    idle.close();
                }
            }
        }
        final SocketChannel channel = connectWithin(peerSocket,
            TimeUnit.MILLISECONDS.toNanos(device.configuration().linkConnectTimeoutMillis()));
        socketsConnected.incrementAndGet();
        try {
            final ShmLink link = remoteQueuePairNumber == ShmLink.XRC_LINK ? ShmLink.xrc(this, channel)
                : new ShmLink(this, channel, peerSocket.toString());
            link.introduce(local, device.gid(), remoteQueuePairNumber, local.generation());
            execute(() -> register(link));
            return link;
        } catch (final IOException | RuntimeException ex) {
            channel.close();
            throw new IOException("cannot reach shm peer socket " + peerSocket + ": " + ex.getMessage(), ex);
        }
    }

    /**
     * The link of this device's XRC initiators to the peer device of {@code peerSocket}, connected by the first of
     * them to ask for it; {@code initiator} uses it until {@link #releaseXrcLink}. Its end (the peer device is gone)
     * is told to every initiator using it.
     *
     * @throws IOException if the peer's agent cannot be reached, or the link ended before it could be shared.
     */
    ShmLink acquireXrcLink(final Path peerSocket, final ShmQueuePair initiator) throws IOException {
        final String key = peerSocket.toString();
        synchronized (xrcLinks) {
            final XrcLink shared = xrcLinks.get(key);
            if (shared != null) {
                shared.users.add(initiator);
                return shared.link;
            }
        }
        // connected outside the lock: other initiators' links to other devices are not held up by a slow peer
        final ShmLink connected = connect(peerSocket, initiator, ShmLink.XRC_LINK);
        final ShmLink surplus;
        final XrcLink shared;
        synchronized (xrcLinks) {
            final XrcLink existing = xrcLinks.get(key);
            if (existing != null) {
                // another initiator connected one meanwhile: use that one
                shared = existing;
                surplus = connected;
            } else if (connected.isClosed()) {
                // its end was read before it was shared (xrcLinkEnded found nothing to tell)
                throw new IOException("the XRC link to shm peer socket " + peerSocket + " ended at once");
            } else {
                shared = new XrcLink(connected);
                xrcLinks.put(key, shared);
                surplus = null;
            }
            shared.users.add(initiator);
        }
        if (surplus != null) {
            surplus.close();
        }
        return shared.link;
    }

    /**
     * The initiator {@code initiator} no longer uses the XRC link {@code link}; the last user's release closes it.
     */
    void releaseXrcLink(final ShmLink link, final ShmQueuePair initiator) {
        boolean last = false;
        synchronized (xrcLinks) {
            final XrcLink shared = sharedLocked(link);
            if (shared != null) {
                shared.users.remove(initiator);
                last = shared.users.isEmpty() && xrcLinks.values().remove(shared);
            }
        }
        if (last) {
            link.close();
        }
    }

    /**
     * An XRC link's socket ended (agent thread): the peer device is gone for every initiator using the link.
     */
    void xrcLinkEnded(final ShmLink link) {
        final List<ShmQueuePair> users;
        synchronized (xrcLinks) {
            final XrcLink shared = sharedLocked(link);
            if (shared == null) {
                return;
            }
            xrcLinks.values().remove(shared);
            users = new ArrayList<>(shared.users);
        }
        for (final ShmQueuePair initiator : users) {
            initiator.onPeerFailure(link, 0, true);
        }
    }

    /** The shared entry of {@code link} (one per peer device, so few), or null once it was let go of or ended. */
    private XrcLink sharedLocked(final ShmLink link) {
        for (final XrcLink shared : xrcLinks.values()) {
            if (shared.link == link) {
                return shared;
            }
        }
        return null;
    }

    /**
     * How many XRC links this device's initiators share now, one per peer device (diagnostics and tests).
     */
    int xrcLinkCount() {
        synchronized (xrcLinks) {
            return xrcLinks.size();
        }
    }

    private static final class XrcLink {
        final ShmLink link;
        final List<ShmQueuePair> users = new ArrayList<>();

        XrcLink(final ShmLink link) {
            this.link = link;
        }
    }

    /**
     * How many sockets this device's links connected to peers so far (diagnostics and tests).
     */
    int socketsConnected() {
        return socketsConnected.get();
    }

    /**
     * A link this device connected is free (its queue pair let go of it, or the peer's did): keep it for the next
     * connection to the same peer, up to {@link #MAX_IDLE_LINKS_PER_PEER} per peer and for the pool's idle time.
     */
    void offerIdle(final ShmLink link) {
        final ShmLink surplus;
        synchronized (idleLinks) {
            final ArrayDeque<IdleLink> links = idleLinks.computeIfAbsent(link.peerSocket(), key -> new ArrayDeque<>());
            links.addLast(new IdleLink(link, System.nanoTime()));
            surplus = links.size() > MAX_IDLE_LINKS_PER_PEER ? links.removeFirst().link() : null;
        }
        if (surplus != null) {
            surplus.close();
        }
        // an agent waiting without a deadline must learn that a link will expire
        nudge();
    }

    private ShmLink takeIdle(final String peerSocket) {
        synchronized (idleLinks) {
            final ArrayDeque<IdleLink> links = idleLinks.get(peerSocket);
            if (links == null) {
                return null;
            }
            // the most recently used first: the one least likely to have been closed by an idle peer meanwhile
            final ShmLink link = links.removeLast().link();
            if (links.isEmpty()) {
                idleLinks.remove(peerSocket);
            }
            return link;
        }
    }

    /** A link's socket ended: it is no longer offered. */
    void forgetIdle(final ShmLink link) {
        synchronized (idleLinks) {
            final ArrayDeque<IdleLink> links = idleLinks.get(link.peerSocket());
            if (links != null && links.removeIf(idle -> idle.link() == link) && links.isEmpty()) {
                idleLinks.remove(link.peerSocket());
            }
        }
    }

    /** Close the links idle for longer than the pool's idle time (agent thread). */
    private void closeIdleLinks(final long now) {
        final List<ShmLink> expired = new ArrayList<>();
        synchronized (idleLinks) {
            for (final ArrayDeque<IdleLink> links : idleLinks.values()) {
                while (!links.isEmpty() && now - links.peekFirst().sinceNanos() > idleLinkNanos) {
                    expired.add(links.removeFirst().link());
                }
            }
            idleLinks.values().removeIf(ArrayDeque::isEmpty);
        }
        expired.forEach(ShmLink::close);
    }

    private boolean hasIdleLinks() {
        synchronized (idleLinks) {
            return !idleLinks.isEmpty();
        }
    }

    private record IdleLink(ShmLink link, long sinceNanos) {
    }

    /**
     * A non-blocking connect to a peer's agent socket, repeated while the peer's backlog is full, until the deadline.
     * A blocking connect would wait without end for an agent that stopped accepting (a stopped or hung process).
     */
    private static SocketChannel connectWithin(final Path peerSocket, final long timeoutNanos) throws IOException {
        final UnixDomainSocketAddress address = UnixDomainSocketAddress.of(peerSocket);
        final long deadline = System.nanoTime() + timeoutNanos;
        long pauseNanos = 50_000;
        while (true) {
            final SocketChannel channel = PlatformChannels.provider().openSocketChannel(StandardProtocolFamily.UNIX);
            try {
                channel.configureBlocking(false);
                if (!channel.connect(address)) {
                    // Linux completes or refuses a Unix-socket connect at once; finish one that did not, in time
                    while (!channel.finishConnect()) {
                        if (System.nanoTime() - deadline > 0) {
                            throw new SocketTimeoutException("connect timed out");
                        }
                        pause(pauseNanos);
                    }
                }
                return channel;
            } catch (final ConnectException ex) {
                channel.close();
                throw new IOException("cannot reach shm peer socket " + peerSocket + ": " + ex.getMessage(), ex);
            } catch (final IOException | RuntimeException ex) {
                // EAGAIN: the peer's backlog is full (SocketException, the channel closed); anything else is final
                channel.close();
                if (!(ex instanceof SocketException) || !Files.exists(peerSocket)
                    || System.nanoTime() - deadline > 0) {
                    throw new IOException("cannot reach shm peer socket " + peerSocket + ": " + ex.getMessage()
                        + (ex instanceof SocketException && Files.exists(peerSocket) ? " (its agent accepted no "
                        + "link within " + TimeUnit.NANOSECONDS.toMillis(timeoutNanos) + " ms)" : ""), ex);
                }
            }
            pause(pauseNanos);
            pauseNanos = Math.min(pauseNanos * 2, 20_000_000L);
        }
    }

    /**
     * Wait between connect attempts; an interrupt ends the connect as it ends a blocking one (the status stays set).
     */
    private static void pause(final long nanos) throws ClosedByInterruptException {
        if (Thread.currentThread().isInterrupted()) {
            throw new ClosedByInterruptException();
        }
        LockSupport.parkNanos(nanos);
    }

    void interestInWrite(final ShmLink link) {
        execute(() -> {
            final SelectionKey key = link.channel().keyFor(selector);
            if (key != null && key.isValid()) {
                key.interestOps(SelectionKey.OP_READ | SelectionKey.OP_WRITE);
            }
        });
    }

    private void register(final ShmLink link) {
        try {
            link.channel().register(selector, SelectionKey.OP_READ, link);
            if (link.hasPendingWrites()) {
                link.channel().keyFor(selector).interestOps(SelectionKey.OP_READ | SelectionKey.OP_WRITE);
            }
        } catch (final IOException | RuntimeException ex) {
            link.closed();
        }
    }

    private void run() {
        try {
            nextSweepNanos = System.nanoTime() + sweepIntervalNanos;
            while (running) {
                try {
                    waitingWithoutDeadline = true;
                    final long timeoutMillis = withSweep(retryTimeoutMillis());
                    if (timeoutMillis != 0) {
                        waitingWithoutDeadline = false;
                    }
                    if (timeoutMillis < 0) {
                        selector.selectNow(selected);
                    } else {
                        selector.select(selected, timeoutMillis);
                    }
                    waitingWithoutDeadline = false;
                    runTasks();
                    device.removeForgottenNames();
                    runRetries();
                    sweep();
                } catch (final InternalError fault) {
                    // an access to a shared file that a process truncated under our mapping (a peer's file, or one
                    // of ours): the connection it belongs to fails or stays broken; every other one is still served
                    LOG.warn("shm agent of device {}: an access to a shared file faulted", device.gidHex(), fault);
                }
            }
        } catch (final IOException | RuntimeException ex) {
            if (running) {
                LOG.error("shm agent of device {} failed; its queue pairs will not see peer events",
                    device.gidHex(), ex);
            }
        } finally {
            for (final SelectionKey key : selector.keys()) {
                if (key.attachment() instanceof ShmLink link) {
                    link.close();
                }
            }
        }
    }

    private void onSelected(final SelectionKey key) {
        try {
            if (key.isAcceptable()) {
                final SocketChannel channel = server.accept();
                if (channel != null) {
                    channel.configureBlocking(false);
                    channel.register(selector, SelectionKey.OP_READ, new ShmLink(this, channel));
                }
                return;
            }
            final ShmLink link = (ShmLink) key.attachment();
            if (key.isWritable() && link.flush()) {
                key.interestOps(SelectionKey.OP_READ);
            }
            if (key.isReadable() && !link.read(device)) {
                key.cancel();
                link.closed();
            }
        } catch (final IOException | RuntimeException | InternalError ex) {
            // InternalError: an access to a shared file that another process truncated under our mapping
            key.cancel();
            if (key.attachment() instanceof ShmLink link) {
                LOG.debug("shm link {} failed", link, ex);
                link.closed();
            }
        }
    }

    private long retryTimeoutMillis() {
        if (retrying.isEmpty()) {
            return 0;
        }
        long earliest = Long.MAX_VALUE;
        for (final Retry queuePair : retrying) {
            earliest = Math.min(earliest, queuePair.retryDeadlineNanos());
        }
        final long waitNanos = earliest - System.nanoTime();
        return waitNanos <= 0 ? -1 : Math.max(1, TimeUnit.NANOSECONDS.toMillis(waitNanos));
    }

    /**
     * Shorten the wait to the next sweep while the device has pooled files or peer mappings to let go of.
     */
    private long withSweep(final long timeoutMillis) {
        if (timeoutMillis < 0 || !device.needsSweep() && !hasIdleLinks()) {
            return timeoutMillis;
        }
        final long sweepMillis = Math.max(1, TimeUnit.NANOSECONDS.toMillis(nextSweepNanos - System.nanoTime()));
        return timeoutMillis == 0 ? sweepMillis : Math.min(timeoutMillis, sweepMillis);
    }

    private void sweep() {
        final long now = System.nanoTime();
        if (now - nextSweepNanos >= 0) {
            nextSweepNanos = now + sweepIntervalNanos;
            device.sweep();
            closeIdleLinks(now);
        }
    }

    private void runTasks() {
        Runnable task;
        while ((task = tasks.poll()) != null) {
            try {
                task.run();
            } catch (final RuntimeException | InternalError ex) {
                // InternalError: a peer truncated a file under our mapping; the agent serves every other connection
                LOG.warn("shm agent task failed", ex);
            }
        }
    }

    private void runRetries() {
        if (retrying.isEmpty()) {
            return;
        }
        final long now = System.nanoTime();
        for (final Retry queuePair : retrying) {
            if (queuePair.retryDeadlineNanos() - now <= 0) {
                retrying.remove(queuePair);
                queuePair.progress();
            }
        }
    }

    @Override
    public void close() {
        running = false;
        selector.wakeup();
        try {
            thread.join(TimeUnit.SECONDS.toMillis(5));
        } catch (final InterruptedException ex) {
            Thread.currentThread().interrupt();
        }
        try {
            selector.close();
            server.close();
        } catch (final IOException ex) {
            LOG.debug("closing shm agent of {}", device.gidHex(), ex);
        }
        LOG.debug("shm agent of {} stopped ({})", device.gidHex(), socketPath);
    }
}

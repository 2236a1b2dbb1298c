package io.rdmachannel.channel.stream;

import io.rdmachannel.channel.cm.CmEndpoint;
import io.rdmachannel.channel.cm.NoRdmaPathException;
import io.rdmachannel.channel.ConnectionInfo;
import io.rdmachannel.channel.ConnectionStatistics;
import io.rdmachannel.channel.spi.AccessFlags;
import io.rdmachannel.channel.spi.CompletionQueue;
import io.rdmachannel.channel.spi.QueuePair;
import io.rdmachannel.channel.spi.QueuePairState;
import io.rdmachannel.channel.spi.RdmaDevice;
import io.rdmachannel.channel.spi.WaitSet;

import java.io.IOException;
import java.net.SocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;
import java.util.function.Predicate;

import org.agrona.concurrent.UnsafeBuffer;

/**
 * One rsockets stream connection over a queue pair: the protocol state machine of section 2 of the wire reference,
 * running unchanged on every provider. This class is the facade: establishment, the resources
 * ({@link ConnectionResources}), readiness, shutdown and close. The protocol itself runs in two halves with a lock
 * each, so that a reader and a writer of one connection do not wait for each other: {@link SendPath} (credits, send
 * ring, target regions, data and control messages, the send completion queue) and {@link ReceivePath} (receive
 * ring, arrived messages, credit grants, the receive completion queue). What both read is in
 * {@link ConnectionState}.
 *
 * <p>Locking: the receive lock before the send lock, never the other way round. The receiver takes the send lock
 * only to post a credit grant; the sender never takes the receive lock (it only tries it, holding nothing, to poll
 * for the peer's credits when it has none). Calls that need both (establishment, release, describe) take them in that
 * order. Completions are processed by whichever thread reads, writes or asks for readiness, so the low-latency path
 * has no thread hop. Completion events (from the device's poller thread, or straight from the signalling thread where
 * the provider dispatches directly) are only reported to the observer.
 *
 * <p>Message mode ({@code RS_OPT_MSG_SEND}, section 1.9): a device without RDMA WRITE WITH IMMEDIATE (iWARP) gets
 * the same messages another way, chosen locally from the device as rsockets chooses it from the transport type (both
 * ends of a connection see the same transport): see {@link MessageProxy}, the one place that knows how a message
 * travels. Each receive is posted with a 4-byte buffer of its own, and the received word is checked exactly like an
 * immediate. The inline size is raised to at least 4, as rsockets does since v51; the connection data is the same
 * as on IB/RoCE (rsockets changes nothing there; its active side asks for initiator depth 1, which is the connection
 * manager's business).
 *
 * <p>The active side sends first (iWARP's rule, rdma_connect(3): before the active side's first message, an MPA
 * responder may put nothing on the wire). rsockets does not enforce it: its passive side may send a credit update
 * before the active side said anything. Here, in message mode, the passive side posts nothing at all, no credit
 * grant, data, control or keepalive, until its first receive completed; writes wait (the connection is not writable)
 * and a SHUTDOWN or DISCONNECT is held back until then. The active side always sends at once when established, its
 * grant of the second ring half, so the wait is one message's flight; the passive side arms its receive completion
 * queue for that message, and its signal has the transport's timer thread poll it and grant back, so the peer gets
 * the whole ring without waiting for the application, as on IB/RoCE. Against a C active side, which sends its grant
 * on its first rsend, rrecv or rpoll, the passive side waits until then. IB/RoCE has no such rule and keeps its
 * timing: the passive side grants when established. A listener's connection the CM establishes at the reply
 * ({@link #establishedAtReply}, shm), so that the application accepts it while the requester finishes, holds
 * everything the same way until the requester's RTU ({@link #confirmed}) or first message (its grant, sent as soon
 * as it is established), whichever comes first: before them the requester's queue pair may not be ready to receive.
 */
final class RsocketConnection implements StreamConnection, CmEndpoint {
    static final long CLOSE_SPIN_NANOS = TimeUnit.MICROSECONDS.toNanos(50);
    /** A spinning reader makes a full check (lock, poll) at least every this many spins (a power of two). */
    static final int FULL_CHECK_SPINS = 64;
    private static final int FULL_CHECK_MASK = FULL_CHECK_SPINS - 1;
    /** A spinning thread reads the clock every this many spins (a power of two): a spin costs less than the read. */
    private static final int CLOCK_MASK = 8 - 1;
    static final long FIRST_MESSAGE_LOCK_NANOS = TimeUnit.MILLISECONDS.toNanos(10);

    private final RsocketTransport transport;
    private final long closeLingerNanos;
    private final StreamOptions options;
    private final RsocketListener listener;
    private final boolean passive;
    private final ConnectionState state = new ConnectionState();
    private final ConnectionResources resources;
    private final SendPath send;
    private final ReceivePath receive;
    private volatile ReadinessObserver observer;
    private volatile boolean armed;
    private volatile boolean abandoned;
    private final AtomicInteger directWaiters = new AtomicInteger();
    // armings and wake-ups of the readiness observer: from readers, writers and selectors at once, so atomic
    private final AtomicLong readinessArms = new AtomicLong();
    private final AtomicLong readinessWakeups = new AtomicLong();
    // statistics of the waits, one writer each: the reader's and the writer's thread (a channel admits one of each)
    private long readSpinsCaught;
    private long writeSpinsCaught;
    private long readDirectWaits;
    private long writeDirectWaits;
    /** Selector waits on this connection's completion queues ({@link #armDirect}): from the selector's thread. */
    private final AtomicLong selectorDirectWaits = new AtomicLong();
    private volatile IOException failure;
    private PeerConnectionData peer;
    /** XRC mode: the way to the peer the connection manager gave, and the connection's lifeline. */
    private PeerPath path;
    /** XRC mode: the peer's numbers from its connection data. */
    private XrcExtension.Peer xrcPeer;
    /** The active side asked the listener for the XRC mode (set as the request is made). */
    private volatile boolean xrcAsked;
    /** The active side in XRC mode: the listener answered in plain RC. */
    private volatile boolean xrcAnsweredPlain;
    /** The active side: the connector that tries again in RC when the listener refuses the XRC mode. */
    private volatile RsocketConnector connector;
    /** Why a connection that asked for the XRC mode runs in RC (for {@link #describe()}), or null. */
    private volatile String rcBecause;
    private SocketAddress localAddress;
    private SocketAddress remoteAddress;
    /** The address connected to or accepted from, known before establishment: for events and diagnostics. */
    private volatile SocketAddress peerAddress;
    private final Object probeLock = new Object();
    // -- guarded by probeLock
    private ScheduledFuture<?> keepAliveProbe;
    private boolean released;

    RsocketConnection(final RsocketTransport transport, final StreamOptions options, final RsocketListener listener) {
        this.transport = transport;
        this.options = options;
        this.listener = listener;
        this.passive = listener != null;
        final StreamConfiguration configuration = transport.configuration();
        this.closeLingerNanos = TimeUnit.MILLISECONDS.toNanos(configuration.closeLingerMillis());
        this.resources = new ConnectionResources(options, configuration);
        this.send = new SendPath(state, configuration);
        send.stallObserver(this::stalled);
        this.receive = new ReceivePath(state, send, options);
    }

    // ----- establishment (CM event thread; an active side's prepare and bind may run on the connecting thread) -----

    @Override
    public QueuePairSetup prepare(final RdmaDevice device) throws IOException {
        return prepare(device, (ByteBuffer) null);
    }

    /**
     * The passive side: the XRC mode only for a request that asks for it (a plain peer gets RC).
     */
    @Override
    public QueuePairSetup prepare(final RdmaDevice device, final ByteBuffer requestPrivateData) throws IOException {
        resources.allocate(transport, device, this, options.inlineSize());
        final StreamConfiguration configuration = transport.configuration();
        if (resources.xrcPossible(device) && transport.supportsOwnQueuePairs(options)
            && (requestPrivateData == null || asksForXrc(requestPrivateData))) {
            try {
                resources.allocateXrc();
            } catch (final IOException | RuntimeException ex) {
                resources.release(this);
                throw ex;
            }
            xrcAsked = !passive;
            return QueuePairSetup.ownQueuePairs(resources.queuePair.number(), configuration.retryCount(),
                configuration.rnrRetryCount());
        }
        return new QueuePairSetup(resources.context.protectionDomain(), resources.queuePairAttributes(),
            AccessFlags.REMOTE_WRITE, configuration.retryCount(), configuration.rnrRetryCount());
    }

    private static boolean asksForXrc(final ByteBuffer requestPrivateData) {
        return requestPrivateData.remaining() > ConnectionDataDescriptor.FLAGS_OFFSET
            && (requestPrivateData.get(requestPrivateData.position() + ConnectionDataDescriptor.FLAGS_OFFSET)
            & ConnectionDataDescriptor.FLAG_XRC) != 0;
    }

    @Override
    public void peerKnown(final PeerPath path) {
        this.path = path;
    }

    @Override
    public ByteBuffer bind(final QueuePair pair, final ByteBuffer peerPrivateData) throws IOException {
        final boolean xrc = resources.xrcQueue != null;
        if (xrc) {
            resources.bindXrc();
        } else {
            resources.bind(pair);
        }
        send.attach(resources);
        receive.attach(resources);
        if (peerPrivateData != null) {
            peer = validate(peerPrivateData);
            if (!xrc && (peer.flags() & ConnectionDataDescriptor.FLAG_XRC) != 0) {
                // an RC queue pair cannot answer XRC queue pairs: refused, the requester hears why
                throw new ProtocolException("the listener does not take XRC connections ("
                    + (options.xrc() ? "its device, connection manager or mode cannot make them"
                    : "RDMA_XRC / " + StreamConfiguration.XRC_PROP_NAME + " is not set on it") + ")");
            }
            if (xrc) {
                // the listener: its target takes the requester's initiator now; its initiator goes to the target the
                // requester offers once established (the requester moves that target before its RTU)
                xrcPeer = XrcExtension.validateRequest(copy(peerPrivateData), 0, peerPrivateData.remaining());
                path.readyToReceive(resources.xrcTarget, xrcPeer.initiator());
            }
        }
        final ByteBuffer data = ByteBuffer.allocate(ConnectionDataDescriptor.LENGTH + (!xrc ? 0
            : peerPrivateData == null ? XrcExtension.REQUEST_LENGTH : XrcExtension.REPLY_LENGTH));
        final int flags = ConnectionDataDescriptor.localFlags(ByteOrder.nativeOrder())
            | (xrc ? ConnectionDataDescriptor.FLAG_XRC : 0);
        final UnsafeBuffer buffer = new UnsafeBuffer(data);
        if (xrc && peerPrivateData == null) {
            XrcExtension.writeRequest(buffer, 0, resources.xrcQueue.number(), resources.queuePair.number(), 0,
                resources.xrcTarget.number());
        } else if (xrc) {
            final long[] domain = resources.context.xrcDomainIdentity();
            XrcExtension.writeReply(buffer, 0, resources.xrcQueue.number(), resources.queuePair.number(), true,
                xrcPeer.offeredTarget(), resources.xrcTarget.number(), domain[0], domain[1]);
        }
        final ConnectionDataFlyweight connectionData = new ConnectionDataFlyweight().wrap(buffer, 0)
            .header(flags, resources.initialCredits());
        if (resources.sharedPool != null) {
            // SRQ mode: few credits to start with, up to the receive queue size later
            connectionData.creditWindow(resources.receiveQueueSize);
        }
        connectionData.iomapEntries(0)
            .targetSgl(resources.targetRegion.address(), resources.targetRegion.remoteKey(),
                resources.targetSglEntries)
            .dataBuffer(resources.receiveRegion.address(), resources.receiveRegion.remoteKey(),
                resources.receiveBufferSize / 2);
        return data;
    }

    private PeerConnectionData validate(final ByteBuffer privateData) throws ProtocolException {
        final ByteBuffer copy = ByteBuffer.allocate(privateData.remaining()).put(privateData.duplicate()).flip();
        return transport.configuration().newConnectionDataValidator().validate(new UnsafeBuffer(copy),
            ConnectionDataDescriptor.PRIVATE_DATA_OFFSET, copy.remaining());
    }

    private static UnsafeBuffer copy(final ByteBuffer privateData) {
        return new UnsafeBuffer(ByteBuffer.allocate(privateData.remaining()).put(privateData.duplicate()).flip());
    }

    @Override
    public void established(final ByteBuffer peerPrivateData, final SocketAddress local, final SocketAddress remote)
        throws IOException {
        establish(peerPrivateData, local, remote, false);
    }

    /**
     * A listener's connection with the CM's queue pair is taken when the reply goes out: the application may accept
     * it while the requester reads the reply. It sends nothing, the first grant included, until {@link #confirmed}
     * or the requester's first message (which it sends once its queue pair is ready): the hold of message mode's
     * passive side.
     */
    @Override
    public boolean establishedAtReply(final ByteBuffer peerPrivateData, final SocketAddress local,
        final SocketAddress remote) throws IOException {
        if (!passive || resources.xrcQueue != null) {
            return false;
        }
        establish(peerPrivateData, local, remote, true);
        return true;
    }

    /** The requester's RTU: send what was held back (in message mode, the first message still has to come). */
    @Override
    public void confirmed() {
        receive.lock();
        send.lock();
        try {
            // released meanwhile (closed, its DISCONNECT held until now or given up): nothing to send any more
            if (state.connected && state.awaitingFirstMessage && !resources.messageMode) {
                receive.endHold();
                // the first grant, which the hold kept back: polled for when the receive lock is let go
                receive.pollIfIdle();
            }
        } finally {
            send.unlock();
            receive.unlock();
        }
        afterCall();
    }

    private void establish(final ByteBuffer peerPrivateData, final SocketAddress local, final SocketAddress remote,
        final boolean beforeConfirmation) throws IOException {
        receive.lock();
        send.lock();
        try {
            if (peer == null) {
                peer = validate(peerPrivateData);
                if (resources.xrcQueue != null) {
                    connectXrcToListener(peerPrivateData);
                }
            } else if (resources.xrcQueue != null) {
                path.readyToReceive(resources.queuePair, xrcPeer.offeredTarget());
                path.readyToSend(resources.queuePair);
            }
            if (xrcPeer != null) {
                send.xrcPeer(xrcPeer.sharedReceiveQueue());
            }
            localAddress = local;
            remoteAddress = remote;
            state.connected = true;
            state.awaitingFirstMessage = passive && (resources.messageMode || beforeConfirmation);
            send.start(peer, resources.sendQueueSize);
            receive.start(peer);
            if (state.awaitingFirstMessage) {
                receive.armForFirstMessage();
            }
        } finally {
            send.unlock();
            receive.unlock();
        }
        state.phase = ConnectionState.PHASE_ESTABLISHED;
        StreamEvents.established(transport.providerName(), local, remote, passive);
        transport.onEstablished(this);
        keepAlive(options.keepAlive());
        if (listener != null) {
            listener.onEstablished(this);
        } else if (abandoned) {
            // the connector was closed while the connection manager finished: nobody will ever take it
            close();
        }
        notifyObserver();
    }

    /**
     * The connector in XRC mode, before the listener hears that the handshake is over: the listener answered in
     * XRC (a plain answer ends the attempt), and our offered target is connected to its initiator, our initiator to
     * its target.
     */
    private void connectXrcToListener(final ByteBuffer reply) throws IOException {
        if ((peer.flags() & ConnectionDataDescriptor.FLAG_XRC) == 0) {
            xrcAnsweredPlain = true;
            throw new ProtocolException("the listener answered an XRC request in plain RC");
        }
        xrcPeer = XrcExtension.validateReply(copy(reply), 0, reply.remaining(), resources.xrcTarget.number());
        path.readyToReceive(resources.xrcTarget, xrcPeer.initiator());
        path.readyToReceive(resources.queuePair, xrcPeer.offeredTarget());
        path.readyToSend(resources.queuePair);
    }

    /**
     * XRC mode: the connection manager's lifeline to the peer ended. What arrived before is taken first; unless that
     * held the peer's DISCONNECT, the connection is reset, as when a send finds the peer gone.
     */
    @Override
    public void peerGone(final IOException cause) {
        receive.lock();
        send.lock();
        try {
            resources.peerLetGo = true;
            state.deferFailure("the peer let go of the connection (" + cause.getMessage() + ")");
        } finally {
            send.unlock();
            receive.unlock();
        }
        afterCall();
    }

    /**
     * The active side's connector was closed before it handed this connection over: close it now if it is
     * established, else as soon as it is. Both this and {@link #established} write one volatile and then read the
     * other's, so at least one of them sees both and closes.
     */
    void abandon() {
        abandoned = true;
        if (state.phase == ConnectionState.PHASE_ESTABLISHED) {
            close();
        }
    }

    @Override
    public void failed(final IOException cause) {
        // release first: whoever sees the failure may close the transport and expects nothing left open; a release
        // that fails still ends the attempt (the listener's count of requests in progress included)
        receive.lock();
        send.lock();
        try {
            // the attempt's peer refused, died or broke the handshake: what it may still be sending into our queues is
            // not waited for (on the connection manager's thread, that wait held up every other connection's news)
            resources.peerLetGo = true;
            release();
        } catch (final RuntimeException ex) {
            cause.addSuppressed(ex);
        } finally {
            send.unlock();
            receive.unlock();
        }
        failure = cause;
        state.phase = ConnectionState.PHASE_FAILED;
        StreamEvents.failed(transport.providerName(), peerAddress, passive, cause);
        transport.onFailed();
        if (listener != null) {
            listener.onFailed(this);
        } else {
            final RsocketConnector current = connector;
            if (current != null && xrcRefused(cause) && current.tryAgainInRc(this, cause)) {
                // the connector's next attempt reports readiness; this one never will
                return;
            }
        }
        notifyObserver();
    }

    /**
     * The active side: whether this attempt failed because the listener does not take the XRC mode (it refused the
     * request as a protocol it does not speak, or answered in plain RC), so that an attempt in RC may succeed.
     */
    private boolean xrcRefused(final IOException cause) {
        return xrcAsked && (xrcAnsweredPlain || cause instanceof NoRdmaPathException noPath
            && noPath.reason() == NoRdmaPathException.Reason.UNSUPPORTED_PROTOCOL);
    }

    /**
     * The active side: the connector to tell when the listener refuses the XRC mode; set before the attempt starts.
     */
    void connector(final RsocketConnector newConnector) {
        this.connector = newConnector;
    }

    /**
     * Why this connection runs in RC although the XRC mode was asked for, shown by {@link #describe()}.
     */
    void rcBecause(final String reason) {
        this.rcBecause = reason;
    }

    boolean isEstablished() {
        return state.phase == ConnectionState.PHASE_ESTABLISHED;
    }

    boolean isFailed() {
        return state.phase == ConnectionState.PHASE_FAILED;
    }

    IOException failure() {
        return failure;
    }

    /**
     * The state of the queue pair, for tests and diagnostics.
     *
     * @return the state, or {@code null} once the queue pair was released.
     */
    QueuePairState queuePairState() {
        send.lock();
        try {
            final QueuePair queuePair = resources.queuePair;
            return queuePair == null ? null : queuePair.state();
        } finally {
            send.unlock();
        }
    }

    // ----- readiness -----

    /**
     * Set the observer {@link #arm()} reports to.
     */
    void observer(final ReadinessObserver newObserver) {
        this.observer = newObserver;
    }

    @Override
    public void arm() {
        readinessArms.incrementAndGet();
        armed = true;
        final CompletionQueue receiveQueue = resources.receiveCompletionQueue;
        final CompletionQueue sendQueue = resources.sendCompletionQueue;
        if (receiveQueue != null && sendQueue != null && state.phase == ConnectionState.PHASE_ESTABLISHED) {
            try {
                receiveQueue.requestNotification();
                sendQueue.requestNotification();
            } catch (final IllegalStateException ex) {
                notifyObserver();
            }
        } else if (state.phase != ConnectionState.PHASE_PENDING) {
            notifyObserver();
        }
    }

    /**
     * One of this connection's completion queues signalled. Called on the device's poller thread, or, where the
     * readiness source dispatches directly, on whatever thread raised the signal (which may hold another
     * connection's lock): so the first message of message mode is taken on the transport's timer thread, not here.
     */
    void onCompletionEvent() {
        if (state.awaitingFirstMessage) {
            transport.runOnTimer(this::takeFirstMessage);
        }
        notifyObserver();
    }

    /**
     * On the transport's timer thread: poll the first message and grant, so the peer gets the whole ring right after
     * establishment as on IB/RoCE, not only once the application first reads, writes or selects.
     */
    private void takeFirstMessage() {
        receive.takeFirstMessage(FIRST_MESSAGE_LOCK_NANOS);
        afterCall();
    }

    private void notifyObserver() {
        if (armed) {
            armed = false;
            final ReadinessObserver current = observer;
            if (current != null) {
                readinessWakeups.incrementAndGet();
                current.onReadiness();
            }
        }
    }

    /**
     * One side changed what the other side's readiness depends on: a waiter armed before may not have seen it.
     */
    private void afterCall() {
        if (state.readinessChanged) {
            state.readinessChanged = false;
            notifyObserver();
            wakeDirectWaiters();
        }
    }

    // ----- direct waits -----

    @Override
    public boolean supportsDirectWait() {
        return bothQueues(CompletionQueue::supportsDirectWait);
    }

    /**
     * Whether the connection has both its completion queues and both pass {@code test}.
     */
    private boolean bothQueues(final Predicate<CompletionQueue> test) {
        final CompletionQueue receiveQueue = resources.receiveCompletionQueue;
        final CompletionQueue sendQueue = resources.sendCompletionQueue;
        return receiveQueue != null && sendQueue != null && test.test(receiveQueue) && test.test(sendQueue);
    }

    /**
     * Arm the one queue the caller's event arrives on, look again, and park on it. A writer short of the peer's
     * credits waits on the receive queue; if, once armed, it turns out to wait for its own sends instead (or the
     * other way round: the receiver adopted credits meanwhile), it arms the other queue and looks again.
     */
    @Override
    public void awaitDirect(final int interest, final long timeoutNanos, final BooleanSupplier stillWaiting) {
        final boolean writer = (interest & StreamReadiness.WRITE) != 0;
        directWaiters.incrementAndGet();
        try {
            boolean peerSide = !writer || send.shortOfPeer();
            while (true) {
                final CompletionQueue queue = peerSide ? resources.receiveCompletionQueue
                    : resources.sendCompletionQueue;
                if (queue == null || state.phase != ConnectionState.PHASE_ESTABLISHED) {
                    return;
                }
                final int ticket;
                try {
                    ticket = queue.requestWaiterWakeup();
                } catch (final IllegalStateException closed) {
                    return;
                }
                if (((writer ? readyOps() : readableOps()) & interest) != 0 || !stillWaiting.getAsBoolean()) {
                    return;
                }
                if (writer && send.shortOfPeer() != peerSide) {
                    peerSide = !peerSide;
                    continue;
                }
                if (writer) {
                    writeDirectWaits++;
                } else {
                    readDirectWaits++;
                }
                queue.awaitWakeup(ticket, timeoutNanos);
                return;
            }
        } finally {
            endDirectWait();
        }
    }

    @Override
    public boolean supportsWaitSet() {
        return bothQueues(CompletionQueue::supportsWaitSet);
    }

    @Override
    public WaitSet newWaitSet() {
        final CompletionQueue receiveQueue = resources.receiveCompletionQueue;
        return receiveQueue != null && supportsWaitSet() ? receiveQueue.newWaitSet() : null;
    }

    @Override
    public boolean armDirect(final int interest, final WaitSet set) {
        final CompletionQueue receiveQueue = resources.receiveCompletionQueue;
        final CompletionQueue sendQueue = resources.sendCompletionQueue;
        if (receiveQueue == null || sendQueue == null || state.phase != ConnectionState.PHASE_ESTABLISHED
            || set.remaining() < 2) {
            return false;
        }
        final int mark = set.size();
        directWaiters.incrementAndGet();
        boolean added;
        try {
            added = receiveQueue.addWaiter(set)
                && ((interest & StreamReadiness.WRITE) == 0 || sendQueue.addWaiter(set));
        } catch (final IllegalStateException closed) {
            added = false;
        }
        if (!added) {
            set.truncate(mark);
            endDirectWait();
            return false;
        }
        // what is not a completion reaches the set through wakeDirectWaiters, and the selector through the observer
        armed = true;
        selectorDirectWaits.incrementAndGet();
        return true;
    }

    @Override
    public void disarmDirect() {
        endDirectWait();
    }

    /**
     * One direct waiter is done. The last one takes the queues' waiter arming back, which a wait that ended otherwise
     * than by the queue's own completion (a selector woken by another connection, a timeout, a close) leaves behind:
     * else the peer's next post would make a futex wake-up system call for nobody. A waiter that armed meanwhile may
     * have lost its arming to this: it gets it back and is woken to look again.
     */
    private void endDirectWait() {
        if (directWaiters.decrementAndGet() != 0) {
            return;
        }
        final CompletionQueue receiveQueue = resources.receiveCompletionQueue;
        final CompletionQueue sendQueue = resources.sendCompletionQueue;
        if (receiveQueue == null || sendQueue == null) {
            return;
        }
        final boolean taken = receiveQueue.cancelWaiterWakeup() | sendQueue.cancelWaiterWakeup();
        if (taken && directWaiters.get() != 0) {
            try {
                receiveQueue.requestWaiterWakeup();
                sendQueue.requestWaiterWakeup();
            } catch (final IllegalStateException closed) {
                // released meanwhile: its waiters are woken by the release
            }
            wakeDirectWaiters();
        }
    }

    @Override
    public void wakeDirectWaiters() {
        if (directWaiters.get() > 0) {
            final CompletionQueue receiveQueue = resources.receiveCompletionQueue;
            final CompletionQueue sendQueue = resources.sendCompletionQueue;
            if (receiveQueue != null) {
                receiveQueue.wakeWaiters();
            }
            if (sendQueue != null) {
                sendQueue.wakeWaiters();
            }
        }
    }

    /**
     * Both sides, each under its own lock, one after the other.
     */
    @Override
    public int readyOps() {
        if (state.phase != ConnectionState.PHASE_ESTABLISHED) {
            return StreamReadiness.READ | StreamReadiness.WRITE;
        }
        final int ops = receive.readiness() | send.readiness();
        afterCall();
        return state.error() != null ? StreamReadiness.READ | StreamReadiness.WRITE : ops;
    }

    /**
     * Spin on what {@code interest} needs: a reader spins on the receive side alone and leaves the send lock to the
     * writer. The receive side is polled for a writer too, since the peer's credits arrive there.
     */
    @Override
    public int spin(final long nanos, final int interest) {
        final boolean writer = (interest & StreamReadiness.WRITE) != 0;
        int ops = 0;
        int spins = 0;
        // the budget starts at the first clock read, after CLOCK_MASK + 1 spins: a spin that finds the event at once
        // never reads the clock (~20 ns with a vDSO clock; microseconds where it is a system call, as in an emulated
        // guest whose clock source is the HPET)
        long deadline = 0;
        boolean timed = false;
        boolean fresh;
        while (true) {
            // a reader asks the receive queue's lock-free hint between full checks (which take the receive lock and
            // poll), and makes a full one every FULL_CHECK_SPINS spins for what the hint does not cover
            fresh = writer || (spins & FULL_CHECK_MASK) == 0 || receive.mayHaveNews();
            if (fresh) {
                ops = writer ? readyOps() : readableOps();
                if ((ops & interest) != 0) {
                    if (writer) {
                        writeSpinsCaught++;
                    } else {
                        readSpinsCaught++;
                    }
                    break;
                }
            }
            Thread.onSpinWait();
            spins++;
            if ((spins & CLOCK_MASK) == 0) {
                final long now = System.nanoTime();
                if (!timed) {
                    deadline = now + nanos;
                    timed = true;
                } else if (now - deadline >= 0) {
                    break;
                }
            }
        }
        if (!fresh) {
            ops = readableOps();
        }
        if (!writer && state.phase == ConnectionState.PHASE_ESTABLISHED) {
            ops |= send.readiness();
        }
        return ops;
    }

    private int readableOps() {
        if (state.phase != ConnectionState.PHASE_ESTABLISHED) {
            return StreamReadiness.READ | StreamReadiness.WRITE;
        }
        final int ops = receive.readiness();
        afterCall();
        return state.error() != null ? StreamReadiness.READ | StreamReadiness.WRITE : ops;
    }

    // ----- reading and writing -----

    @Override
    public int read(final ByteBuffer dst) throws IOException {
        try {
            return receive.read(dst);
        } finally {
            afterCall();
        }
    }

    @Override
    public long read(final ByteBuffer[] dsts, final int offset, final int length) throws IOException {
        try {
            return receive.read(dsts, offset, length);
        } finally {
            afterCall();
        }
    }

    /**
     * A writer that last ran out of what only the peer gives (credits, a region, the first message) has the receive
     * side polled first, unless a reader is at it: then the reader polls once more before it lets go.
     */
    @Override
    public int write(final ByteBuffer src) throws IOException {
        if (send.waitingForPeer() || state.hasDeferredFailure()) {
            receive.pollIfIdle();
        }
        try {
            return (int) send.write(src);
        } finally {
            afterCall();
        }
    }

    @Override
    public long write(final ByteBuffer[] srcs, final int offset, final int length) throws IOException {
        if (send.waitingForPeer() || state.hasDeferredFailure()) {
            receive.pollIfIdle();
        }
        try {
            return send.write(srcs, offset, length);
        } finally {
            afterCall();
        }
    }

    // ----- keepalive, shutdown and close -----

    @Override
    public void keepAlive(final boolean enabled) {
        synchronized (probeLock) {
            options.keepAlive(enabled);
            if (enabled && keepAliveProbe == null && !released
                && state.phase == ConnectionState.PHASE_ESTABLISHED) {
                keepAliveProbe = transport.scheduleKeepAlive(this::sendKeepAlive);
            } else if (!enabled && keepAliveProbe != null) {
                keepAliveProbe.cancel(false);
                keepAliveProbe = null;
            }
        }
    }

    private void sendKeepAlive() {
        send.keepAlive();
        afterCall();
        notifyObserver();
    }

    @Override
    public void shutdownOutput() throws IOException {
        send.shutdownOutput();
        notifyObserver();
    }

    @Override
    public void shutdownInput() {
        receive.shutdownInput();
        notifyObserver();
    }

    @Override
    public boolean isOutputShutdown() {
        return state.outputShutdown;
    }

    @Override
    public boolean isInputShutdown() {
        return state.inputShutdown;
    }

    /**
     * Queue the DISCONNECT after everything written and return, as a socket's close does: the connection is released
     * once the DISCONNECT completed (so every byte written before it was delivered), or failed, or at the latest
     * {@code rdmachannel.stream.closeLingerMillis} later. A DISCONNECT that does not complete within
     * {@link #CLOSE_SPIN_NANOS} is left to the transport's timer thread ({@link #lingerStep}), so neither the closing
     * thread (which may hold the channel's state lock, or be a selector's) nor the timer ever waits for a peer.
     */
    @Override
    public void close() {
        if (state.phase == ConnectionState.PHASE_CLOSED) {
            return;
        }
        send.startClose();
        final long start = System.nanoTime();
        while (send.disconnectUnderWay()) {
            if (System.nanoTime() - start > CLOSE_SPIN_NANOS) {
                if (transport.linger(this, start + closeLingerNanos)) {
                    return;
                }
                break;
            }
            Thread.onSpinWait();
        }
        finishClose();
    }

    /**
     * On the transport's timer thread, for a connection {@link #close()} left lingering: one look at its DISCONNECT,
     * and the release once it completed or {@code deadline} passed. Never waits for a lock.
     *
     * @return true once released (or released by another thread).
     */
    boolean lingerStep(final long now, final long deadline) {
        if (now - deadline < 0 && send.tryDisconnectUnderWay()) {
            return false;
        }
        if (!receive.tryLock()) {
            return false;
        }
        try {
            if (!send.tryLock()) {
                return false;
            }
            try {
                releaseOnce();
            } finally {
                send.unlock();
            }
        } finally {
            receive.unlock();
        }
        notifyObserver();
        return true;
    }

    @Override
    public void abort() {
        state.closing = true;
        finishClose();
    }

    private void finishClose() {
        receive.lock();
        send.lock();
        try {
            releaseOnce();
        } finally {
            send.unlock();
            receive.unlock();
        }
        notifyObserver();
    }

    private void stalled(final boolean forPeer, final long nanos) {
        StreamEvents.stalled(transport.providerName(), localAddress, remoteAddress, forPeer, nanos);
    }

    private void releaseOnce() {
        if (state.phase != ConnectionState.PHASE_CLOSED) {
            final boolean established = state.phase == ConnectionState.PHASE_ESTABLISHED;
            state.phase = ConnectionState.PHASE_CLOSED;
            state.connected = false;
            release();
            if (established) {
                transport.onReleased(this);
            }
            if (established && StreamEvents.closedEnabled()) {
                StreamEvents.closed(transport.providerName(), localAddress, remoteAddress, statistics(),
                    state.error());
            }
        }
    }

    /**
     * This connection for the management view; from any thread.
     */
    ConnectionInfo info() {
        final IOException error = state.error();
        final String phase = error != null ? "FAILED" : state.closing ? "CLOSING"
            : state.peerDisconnected ? "PEER_CLOSED" : state.outputShutdown ? "OUTPUT_SHUTDOWN"
            : state.peerShutdown ? "PEER_SHUTDOWN" : "ESTABLISHED";
        final ConnectionStatistics statistics = statistics();
        final String mode = resources.xrcQueue != null ? "XRC" : resources.sharedPool != null ? "SRQ" : "RC";
        return new ConnectionInfo(transport.providerName(), mode, phase, StreamEvents.text(localAddress),
            StreamEvents.text(remoteAddress), error == null ? null : error.toString(), statistics);
    }

    /**
     * The address this connection goes to, or was requested from, before it is established.
     */
    void peerAddress(final SocketAddress address) {
        peerAddress = address;
    }

    /**
     * Release every resource in reverse order of creation; both locks held, so neither side is using one.
     */
    private void release() {
        synchronized (probeLock) {
            released = true;
            if (keepAliveProbe != null) {
                keepAliveProbe.cancel(false);
                keepAliveProbe = null;
            }
        }
        send.detach();
        receive.drainShared();
        receive.detach();
        final PeerPath lifeline = path;
        path = null;
        if (lifeline != null) {
            lifeline.close();
        }
        resources.release(this);
    }

    // ----- information -----

    /**
     * Bytes sent straight from registered buffers, for tests and diagnostics.
     */
    long zeroCopyBytes() {
        return send.zeroCopyBytes();
    }

    /**
     * Bytes sent straight from unregistered direct buffers (devices with
     * {@link io.rdmachannel.channel.spi.DeviceCapability#LOCAL_ACCESS_TO_ANY_MEMORY}), for tests and diagnostics.
     */
    long directBytes() {
        return send.directBytes();
    }

    long keepAlivesSent() {
        return send.keepAlivesSent();
    }

    /**
     * The writer's lock, for tests: a reader never waits for it, except to post a credit grant.
     */
    ReentrantLock sendLock() {
        return send.sendLock();
    }

    /**
     * SRQ mode: the device's shared receive pool, for tests and diagnostics; null with a receive queue of our own.
     */
    SharedReceivePool sharedReceivePool() {
        return resources.sharedPool;
    }

    /**
     * SRQ mode: the receives reserved for this connection now and its credit window, for tests: {@code [reserved,
     * window]}.
     */
    int[] sharedAccount() {
        receive.lock();
        try {
            return new int[] {resources.sharedReserved, receive.creditWindow()};
        } finally {
            receive.unlock();
        }
    }

    /**
     * The reader's lock, for tests: a writer never waits for it.
     */
    ReentrantLock receiveLock() {
        return receive.receiveLock();
    }

    @Override
    public SocketAddress localAddress() {
        return localAddress;
    }

    @Override
    public SocketAddress remoteAddress() {
        return remoteAddress;
    }

    @Override
    public String describe() {
        receive.lock();
        send.lock();
        try {
            final QueuePair queuePair = resources.queuePair;
            final StringBuilder out = new StringBuilder(640).append("RsocketConnection{phase=").append(state.phase)
                .append(", local=").append(localAddress).append(", remote=").append(remoteAddress)
                .append(", qp=").append(queuePair == null ? "none" : queuePair.number() + "/" + queuePair.state())
                .append(", ");
            send.describe(out);
            out.append(", ");
            receive.describe(out);
            out.append(", outputShutdown=").append(state.outputShutdown)
                .append(", inputShutdown=").append(state.inputShutdown)
                .append(", peerShutdown=").append(state.peerShutdown)
                .append(", peerDisconnected=").append(state.peerDisconnected)
                .append(", keepAlivesSent=").append(send.keepAlivesSent())
                .append(", lastStatus=").append(send.lastStatus()).append('/').append(receive.lastStatus());
            if (resources.messageMode) {
                out.append(", messageMode=true, awaitingFirstMessage=").append(state.awaitingFirstMessage);
            } else if (state.awaitingFirstMessage) {
                out.append(", awaitingConfirmation=true");
            }
            if (rcBecause != null) {
                out.append(", xrc=false (").append(rcBecause).append(')');
            }
            if (resources.xrcQueue != null) {
                out.append(", xrc=true, xrcSrq=").append(resources.xrcQueue.number()).append(", xrcTarget=")
                    .append(resources.xrcTarget.number());
                if (xrcPeer != null) {
                    out.append(", peerSrq=").append(xrcPeer.sharedReceiveQueue()).append(", peerInitiator=")
                        .append(xrcPeer.initiator());
                }
            }
            return out.append(", error=").append(state.error()).append('}').toString();
        } finally {
            send.unlock();
            receive.unlock();
        }
    }

    @Override
    public ConnectionStatistics statistics() {
        receive.lock();
        send.lock();
        try {
            return send.statistics(receive.bytesReceived(), receive.messagesReceived(), receive.completionErrors(),
                readSpinsCaught + writeSpinsCaught, readDirectWaits + writeDirectWaits + selectorDirectWaits.get(),
                readinessArms.get(), readinessWakeups.get());
        } finally {
            send.unlock();
            receive.unlock();
        }
    }

    @Override
    public String toString() {
        return describe();
    }
}

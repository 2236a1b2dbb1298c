package io.rdmachannel.channel.shm;

import io.rdmachannel.channel.spi.AccessFlags;
import io.rdmachannel.channel.spi.CloseActions;
import io.rdmachannel.channel.spi.CompletionHandler;
import io.rdmachannel.channel.spi.CompletionOpcode;
import io.rdmachannel.channel.spi.CompletionStatus;
import io.rdmachannel.channel.spi.ProtectionDomain;
import io.rdmachannel.channel.spi.QueuePair;
import io.rdmachannel.channel.spi.QueuePairAttributes;
import io.rdmachannel.channel.spi.QueuePairInitAttributes;
import io.rdmachannel.channel.spi.QueuePairState;
import io.rdmachannel.channel.spi.QueuePairType;
import io.rdmachannel.channel.spi.ReceiveWorkRequest;
import io.rdmachannel.channel.spi.ResourceCounter;
import io.rdmachannel.channel.spi.SendFlags;
import io.rdmachannel.channel.spi.SendWorkRequest;
import io.rdmachannel.channel.spi.SharedReceiveQueue;
import io.rdmachannel.channel.spi.WorkRequestOpcode;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;

import org.agrona.collections.Int2ObjectHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An RC queue pair, or an XRC initiator queue pair, of the shared-memory provider.
 *
 * <p>A post executes in the caller's thread: it checks states, keys, bounds and access, copies the bytes into or
 * out of the peer's mapped memory, consumes one of the peer's posted receives where the opcode needs one and
 * publishes the peer's completion. A request that meets an RNR (no receive posted) or a peer not yet ready stays at
 * the head of the send queue, and later posts wait behind it; the device's agent retries it when the peer posts a
 * receive or the RNR delay passes. A violation never touches memory: it completes with an error at the requester,
 * moves both queue pairs to ERROR and flushes their outstanding work.
 *
 * <p>On a device emulating iWARP ({@link ShmConfiguration#TRANSPORT_PROP_NAME}) the opcodes with immediate data are
 * refused at post, as siw and cxgb4 refuse them ({@code EINVAL}), and a queue pair the connection manager accepted
 * passively ({@link #markPassive()}) follows MPA's rule that the active side sends first: a request it executes before
 * any receive completed on it (before the active side's first SEND or WRITE WITH IMMEDIATE arrived) breaks the rule.
 * The initiator's RNIC would see an FPDU before its own first one and abort the stream; here the request completes
 * with {@link CompletionStatus#REMOTE_OPERATION_ERROR} and both queue pairs move to ERROR. MPA itself counts any
 * first FPDU of the initiator, a plain RDMA WRITE too; waiting for a receive is stricter, and what the stream engine
 * does anyway.
 *
 * <p>An XRC initiator ({@link QueuePairType#XRC_SEND}) has no receive side. Connected to a target queue pair
 * ({@link XrcTargetPeer}), it executes each request against the XRC shared receive queue the request names
 * ({@link SendWorkRequest#remoteSharedReceiveQueue()}), in whatever process of the target's host that queue lives
 * ({@link XrcReceivePeer}, mapped on first use and kept); its wake-ups travel over one link per device of those
 * queues. A request the target does not take (not connected to this initiator, or in ERROR, or destroyed) fails with
 * {@link CompletionStatus#TRANSPORT_RETRY_EXCEEDED} after the retries, as no responder answers; a queue number the
 * target's domain does not hold (never created, closed, its process gone) with
 * {@link CompletionStatus#REMOTE_INVALID_REQUEST}, and the target moves to ERROR (the responder's fatal error).
 *
 * <p>Locking: {@code sendLock} guards the send queue and every state change; the receive side is consumed under the
 * receive completion queue's poll lock; the link and the early-link fields under {@code linkLock}.
 */
final class ShmQueuePair implements QueuePair, InboundReceiver, ShmAgent.Retry {
    private static final Logger LOG = LoggerFactory.getLogger(ShmQueuePair.class);
    private static final int DONE = 0;
    private static final int RETRY = 1;
    private static final MemorySegment ALL_MEMORY = MemorySegment.NULL.reinterpret(Long.MAX_VALUE);
    private static final int NO_POSITION = -1;
    /** How long reporting the ERROR state of a queue pair with a shared receive queue waits for a peer access. */
    private static final long LAST_RECEIVE_WAIT_NANOS = TimeUnit.MILLISECONDS.toNanos(1);

    private final ShmProtectionDomain domain;
    private final ShmDevice device;
    private final int number;
    private final ShmCompletionQueue sendCompletionQueue;
    /** Null for an XRC initiator, which has no receive side. */
    private final ShmCompletionQueue receiveCompletionQueue;
    private final QueuePairType type;
    private final ShmSharedReceiveQueue sharedReceiveQueue;
    private final int maxSendWorkRequests;
    private final int maxSendSge;
    private final int maxReceiveSge;
    private final int maxInlineData;
    private final boolean signalAll;
    private final SharedFile block;
    private final MemorySegment blockSegment;
    private final ReceiveQueue receiveQueue;
    private final long inboundBase;
    private final int inboundCapacity;
    private final int identity;
    private final MemorySegment inlineArea;
    private final ShmSendWorkRequest[] sendSlots;
    private final ReentrantLock sendLock = new ReentrantLock();
    private final Object linkLock = new Object();
    private final PeerNode.Cursor cursor = new PeerNode.Cursor();

    // guarded by sendLock
    private long sendPosted;
    private long sendExecuted;
    private int retryAttempts;
    private boolean errorHandled;
    private boolean retryScheduled;
    /** The send slot whose inline payload is still in the caller's buffers (during its post), or -1. */
    private int inlineAtSource = -1;
    private boolean awaitingInitiator;
    private long initiatorBaseline;
    private volatile boolean brokeSendFirstRule;
    private volatile long closedHead = NO_POSITION;
    private int retryCount = 7;
    private int rnrRetry = QueuePairAttributes.RNR_RETRY_INFINITE;
    private int timeout = 14;
    private volatile RemotePeer remote;
    /** An XRC initiator's target, once connected; written under sendLock. */
    private volatile XrcTargetPeer xrcTarget;
    /** An XRC initiator's shared receive queues reached so far, by number; guarded by sendLock. */
    private final Int2ObjectHashMap<XrcReceivePeer> xrcQueues = new Int2ObjectHashMap<>();
    private volatile long retryDeadlineNanos;
    private volatile long sendRetired;
    private volatile boolean peerGone;
    private volatile boolean closed;
    /** Set once close found every peer access ended (false while open, and if one did not end in time). */
    private volatile boolean peerAccessEnded;
    private final CloseActions closeActions = new CloseActions();

    // guarded by the receive completion queue's poll lock
    private long inboundHead;
    private long flushCursor = NO_POSITION;
    /** With a shared receive queue: the ERROR state was reported ({@link SharedReceiveQueue#LAST_RECEIVE_ID}). */
    private boolean lastReceiveReported;

    // guarded by linkLock
    private ShmLink link;
    private ShmLink earlyLink;
    /** An XRC initiator's shares of its device's XRC links to the devices of the queues it reached, by GID. */
    private final Map<String, ShmLink> xrcLinks = new HashMap<>();
    private byte[] earlyGid;
    private int earlyQueuePairNumber;
    private int earlyGeneration;
    private final int[] pendingWakes = new int[8];
    private int pendingWakeCount;

    private ShmQueuePair(final ShmProtectionDomain domain, final int identity,
        final QueuePairInitAttributes attributes, final SharedFile block, final ReceiveQueue receiveQueue,
        final long inboundBase, final int inboundCapacity, final long inlineOffset) {
        this.domain = domain;
        this.device = domain.shmDevice();
        this.identity = identity;
        this.number = identity & 0xFFFFFF;
        this.sendCompletionQueue = (ShmCompletionQueue) attributes.sendCompletionQueue();
        this.receiveCompletionQueue = (ShmCompletionQueue) attributes.receiveCompletionQueue();
        this.type = attributes.type();
        this.sharedReceiveQueue = (ShmSharedReceiveQueue) attributes.sharedReceiveQueue();
        this.maxSendWorkRequests = attributes.maxSendWorkRequests();
        this.maxSendSge = attributes.maxSendSge();
        this.maxReceiveSge = attributes.maxReceiveSge();
        this.maxInlineData = attributes.maxInlineData();
        this.signalAll = attributes.signalAll();
        this.block = block;
        this.blockSegment = block.segment();
        this.receiveQueue = receiveQueue;
        this.inboundBase = inboundBase;
        this.inboundCapacity = inboundCapacity;
        this.inlineArea = blockSegment.asSlice(inlineOffset, inlineLength(attributes));
        this.sendSlots = device.sendSlotPool().take(maxSendWorkRequests, maxSendSge);
    }

    static ShmQueuePair create(final ShmProtectionDomain domain, final QueuePairInitAttributes attributes)
        throws IOException {
        final ShmDevice device = domain.shmDevice();
        final boolean xrc = attributes.type() == QueuePairType.XRC_SEND;
        if (attributes.type() != QueuePairType.RC && !xrc) {
            throw new UnsupportedOperationException("the shm provider offers RC and XRC initiator queue pairs: type="
                + attributes.type() + " (XRC target queue pairs come from XrcDomain.createTargetQueuePair())");
        }
        if (xrc && device.configuration().transport() == ShmConfiguration.Transport.IWARP) {
            throw new UnsupportedOperationException("iWARP has no XRC: an XRC initiator queue pair needs an "
                + "InfiniBand device (" + ShmConfiguration.TRANSPORT_PROP_NAME + ")");
        }
        final ShmCompletionQueue sendQueue = ownCompletionQueue(device, attributes.sendCompletionQueue());
        final ShmCompletionQueue receiveQueue = xrc ? null
            : ownCompletionQueue(device, attributes.receiveCompletionQueue());
        final ShmSharedReceiveQueue srq;
        if (xrc || attributes.sharedReceiveQueue() == null) {
            srq = null;
        } else if (attributes.sharedReceiveQueue() instanceof ShmSharedReceiveQueue shared
            && shared.domain() == domain) {
            srq = shared;
        } else {
            throw new IllegalArgumentException("the shared receive queue belongs to another protection domain");
        }
        final int rqCapacity = srq == null && !xrc ? attributes.maxReceiveWorkRequests() : 0;
        final int rqMaxSge = srq == null && !xrc ? attributes.maxReceiveSge() : 0;
        // with a shared receive queue, no more receives complete unpolled than the receive completion queue holds: one
        // more overruns it (the peer's access fails the queue pair, as a device fails one whose queue overflowed)
        final int inboundCapacity = xrc ? 1 : srq == null ? rqCapacity
            : Math.min(srq.queue().capacity(), receiveQueue.capacity());
        final int identity = device.nextQueuePairIdentity();
        final int number = identity & 0xFFFFFF;
        final long inlineOffset = QueuePairBlockDescriptor.inlineOffset(rqCapacity, rqMaxSge, inboundCapacity);
        final SharedFile block = device.filePool().acquire(inlineOffset + inlineLength(attributes));
        final Path link = device.folder().resolve(QueuePairBlockDescriptor.fileName(number));
        final ShmQueuePair queuePair;
        try {
            final MemorySegment segment = block.segment();
            segment.set(Atomics.INT, QueuePairBlockDescriptor.PD_OFFSET, domain.handle());
            segment.set(Atomics.INT, QueuePairBlockDescriptor.RECEIVE_CQ_OFFSET, xrc ? -1 : receiveQueue.id());
            segment.set(Atomics.INT, QueuePairBlockDescriptor.SRQ_OFFSET, srq == null ? -1 : srq.id());
            segment.set(Atomics.INT, QueuePairBlockDescriptor.RQ_CAPACITY_OFFSET, rqCapacity);
            segment.set(Atomics.INT, QueuePairBlockDescriptor.RQ_MAX_SGE_OFFSET, rqMaxSge);
            segment.set(Atomics.INT, QueuePairBlockDescriptor.INBOUND_CAPACITY_OFFSET, inboundCapacity);
            segment.set(Atomics.INT, QueuePairBlockDescriptor.MIN_RNR_TIMER_OFFSET, 12);
            segment.set(Atomics.INT, QueuePairBlockDescriptor.TRANSPORT_OFFSET,
                device.configuration().transport().code());
            // an XRC initiator's block names no completion queue: an RC peer finds it impossible and refuses it
            segment.set(Atomics.INT, QueuePairBlockDescriptor.RECEIVE_CQ_FILE_OFFSET, xrc ? 0 : receiveQueue.fileId());
            segment.set(Atomics.INT, QueuePairBlockDescriptor.SRQ_FILE_OFFSET, srq == null ? 0 : srq.fileId());
            final long inboundBase = QueuePairBlockDescriptor.inboundOffset(rqCapacity, rqMaxSge);
            segment.set(Atomics.INT, inboundBase + InboundCompletionDescriptor.CAPACITY_OFFSET, inboundCapacity);
            final ReceiveQueue ownQueue = srq == null && !xrc ? ReceiveQueue.format(segment,
                "receive queue of queue pair " + number, QueuePairBlockDescriptor.receiveQueueOffset(), rqCapacity,
                rqMaxSge, false) : null;
            Atomics.setIntVolatile(segment, QueuePairBlockDescriptor.STATE_OFFSET, QueuePairState.RESET.code());
            Atomics.setIntVolatile(segment, QueuePairBlockDescriptor.MAGIC_OFFSET, QueuePairBlockDescriptor.MAGIC);
            AccessGuard.publish(segment, QueuePairBlockDescriptor.GUARD_OFFSET, identity);
            queuePair = new ShmQueuePair(domain, identity, attributes, block, ownQueue, inboundBase, inboundCapacity,
                inlineOffset);
            // named for peers; a link left by a queue pair of the same number 2^24 queue pairs ago is replaced
            ShmDirectory.linkReplacing(link, Path.of(SharedFile.pooledName(block.id())));
        } catch (final IOException | RuntimeException ex) {
            AccessGuard.revoke(block.segment(), QueuePairBlockDescriptor.GUARD_OFFSET);
            device.filePool().release(block);
            throw ex;
        }
        sendQueue.attach();
        if (receiveQueue != null && receiveQueue != sendQueue) {
            receiveQueue.attach();
        }
        if (receiveQueue != null) {
            receiveQueue.attachReceiver(queuePair);
        }
        if (srq != null) {
            srq.attach();
        }
        device.addQueuePair(queuePair);
        return queuePair;
    }

    private static long inlineLength(final QueuePairInitAttributes attributes) {
        return Math.max(1L, (long) attributes.maxSendWorkRequests() * attributes.maxInlineData());
    }

    private static ShmCompletionQueue ownCompletionQueue(final ShmDevice device,
        final io.rdmachannel.channel.spi.CompletionQueue queue) {
        if (!(queue instanceof ShmCompletionQueue shmQueue) || shmQueue.device() != device) {
            throw new IllegalArgumentException("the completion queue belongs to another device");
        }
        shmQueue.ensureOpen();
        return shmQueue;
    }

    // ----- QueuePair -----

    @Override
    public int number() {
        return number;
    }

    @Override
    public QueuePairType type() {
        return type;
    }

    @Override
    public QueuePairState state() {
        if (closed) {
            // the block is unmapped once closed
            return QueuePairState.ERROR;
        }
        final int code = sharedState();
        return code == QueuePairBlockDescriptor.STATE_DESTROYED ? QueuePairState.ERROR : QueuePairState.fromCode(code);
    }

    private int sharedState() {
        return Atomics.getIntVolatile(blockSegment, QueuePairBlockDescriptor.STATE_OFFSET);
    }

    private void setSharedState(final QueuePairState state) {
        Atomics.setIntVolatile(blockSegment, QueuePairBlockDescriptor.STATE_OFFSET, state.code());
    }

    @Override
    public ProtectionDomain protectionDomain() {
        return domain;
    }

    @Override
    public int maxSendWorkRequests() {
        return maxSendWorkRequests;
    }

    @Override
    public int maxReceiveWorkRequests() {
        return receiveQueue == null ? 0 : receiveQueue.capacity();
    }

    @Override
    public int maxInlineData() {
        return maxInlineData;
    }

    @Override
    public SendWorkRequest createSendWorkRequest() {
        ensureOpen();
        return new ShmSendWorkRequest(this, maxSendSge);
    }

    @Override
    public ReceiveWorkRequest createReceiveWorkRequest() {
        ensureOpen();
        return new ShmReceiveWorkRequest(this, maxReceiveSge);
    }

    // ----- state transitions -----

    @Override
    public void modify(final QueuePairState target, final QueuePairAttributes attributes) throws IOException {
        sendLock.lock();
        try {
            ensureOpen();
            final QueuePairState current = state();
            switch (target) {
                case INIT -> {
                    requireState(current, target, QueuePairState.RESET, QueuePairState.INIT);
                    blockSegment.set(Atomics.INT, QueuePairBlockDescriptor.ACCESS_OFFSET,
                        required(attributes, target).accessFlags() & AccessFlags.REMOTE);
                    setSharedState(QueuePairState.INIT);
                }
                case READY_TO_RECEIVE -> {
                    requireState(current, target, QueuePairState.INIT);
                    connect(required(attributes, target));
                    setSharedState(QueuePairState.READY_TO_RECEIVE);
                }
                case READY_TO_SEND -> {
                    requireState(current, target, QueuePairState.READY_TO_RECEIVE, QueuePairState.READY_TO_SEND);
                    final QueuePairAttributes values = required(attributes, target);
                    retryCount = values.retryCount();
                    rnrRetry = values.rnrRetry();
                    timeout = values.timeout();
                    setSharedState(QueuePairState.READY_TO_SEND);
                }
                case ERROR -> {
                    moveToErrorLocked();
                    progressLocked();
                }
                case RESET -> reset();
                default -> throw new IllegalArgumentException("the shm provider does not support moving to "
                    + target);
            }
        } finally {
            sendLock.unlock();
        }
        if (target == QueuePairState.ERROR) {
            notifyCompletionQueues();
        }
    }

    private static QueuePairAttributes required(final QueuePairAttributes attributes, final QueuePairState target) {
        if (attributes == null) {
            throw new IllegalArgumentException("moving to " + target + " needs attributes");
        }
        return attributes;
    }

    private void requireState(final QueuePairState current, final QueuePairState target,
        final QueuePairState... allowed) {
        for (final QueuePairState state : allowed) {
            if (current == state) {
                return;
            }
        }
        throw new IllegalStateException("queue pair " + number + " cannot move from " + current + " to " + target
            + "; allowed from " + Arrays.toString(allowed));
    }

    private void connect(final QueuePairAttributes attributes) throws IOException {
        final byte[] gid = attributes.remoteGid();
        final int remoteNumber = attributes.remoteQueuePairNumber();
        if (gid == null || remoteNumber < 0 || remoteNumber > 0xFFFFFF) {
            throw new IllegalArgumentException("moving to READY_TO_RECEIVE needs the remote GID and queue pair "
                + "number: " + attributes);
        }
        blockSegment.set(Atomics.INT, QueuePairBlockDescriptor.MIN_RNR_TIMER_OFFSET, attributes.minRnrTimer());
        if (type == QueuePairType.XRC_SEND) {
            xrcTarget = XrcTargetPeer.connect(device, gid, remoteNumber, number);
            return;
        }
        final RemotePeer peer = RemotePeer.connect(device, gid, remoteNumber);
        try {
            if (!peer.isSameDevice()) {
                if (initiatesLink(gid, remoteNumber)) {
                    final ShmLink connected = device.agent().connect(
                        peer.node().folder().resolve(ShmAgent.SOCKET_FILE), this, remoteNumber);
                    attachLink(connected);
                } else {
                    adoptEarlyLink(peer);
                    return;
                }
            }
        } catch (final IOException | RuntimeException ex) {
            peer.close();
            throw ex;
        }
        remote = peer;
    }

    private boolean initiatesLink(final byte[] remoteGid, final int remoteNumber) {
        final int order = Arrays.compareUnsigned(device.gid(), remoteGid);
        return order < 0 || order == 0 && number < remoteNumber;
    }

    private void reset() {
        // a link introduced for the connection that ends here must not be taken for the next one
        Atomics.setIntVolatile(blockSegment, QueuePairBlockDescriptor.GENERATION_OFFSET, generation() + 1);
        final RemotePeer peer = remote;
        remote = null;
        closeLink();
        closeXrc();
        if (peer != null) {
            peer.close();
        }
        if (receiveQueue != null) {
            // ring and inbound positions stay equal across a reset: the flush logic relies on it
            final long position = receiveQueue.discardAll();
            inboundHead = position;
            Atomics.setLongVolatile(blockSegment, inboundBase + InboundCompletionDescriptor.HEAD_OFFSET, position);
            Atomics.setLongVolatile(blockSegment, inboundBase + InboundCompletionDescriptor.TAIL_OFFSET, position);
        }
        flushCursor = NO_POSITION;
        lastReceiveReported = false;
        awaitingInitiator = false;
        brokeSendFirstRule = false;
        sendPosted = 0;
        sendExecuted = 0;
        sendRetired = 0;
        retryAttempts = 0;
        errorHandled = false;
        closedHead = NO_POSITION;
        peerGone = false;
        retryScheduled = false;
        device.agent().cancelRetry(this);
        setSharedState(QueuePairState.RESET);
    }

    // ----- posting -----

    @Override
    public void postReceive(final ReceiveWorkRequest request) {
        final ShmReceiveWorkRequest receive = checkPostReceive(request);
        afterPostReceive(receiveQueue.post(receive));
    }

    @Override
    public void postReceives(final ReceiveWorkRequest request, final long firstId, final int count) {
        if (count < 0) {
            throw new IllegalArgumentException("count=" + count);
        }
        final ShmReceiveWorkRequest receive = checkPostReceive(request);
        if (count > 0) {
            afterPostReceive(receiveQueue.post(receive, firstId, count));
        }
    }

    private ShmReceiveWorkRequest checkPostReceive(final ReceiveWorkRequest request) {
        if (type == QueuePairType.XRC_SEND) {
            throw new IllegalStateException("XRC initiator queue pair " + number + " has no receive queue");
        }
        if (receiveQueue == null) {
            throw new IllegalStateException("queue pair " + number + " takes its receives from a shared receive "
                + "queue: post them there");
        }
        final ShmReceiveWorkRequest receive = checkReceive(request, domain, maxReceiveSge);
        if (receive.owner != this) {
            throw new IllegalArgumentException("the receive request was created by another queue pair");
        }
        ensureOpen();
        if (sharedState() == QueuePairState.RESET.code()) {
            throw new IllegalStateException("postReceive: queue pair " + number + " is in state RESET; receives "
                + "need INIT or later");
        }
        return receive;
    }

    /** Wake a sender that waited for a receive; in ERROR, tell the completion queue (its poll flushes the receives). */
    private void afterPostReceive(final boolean senderWaited) {
        if (senderWaited) {
            final RemotePeer peer = remote;
            if (peer != null) {
                sendToPeer(peer, ShmLink.RECV_POSTED, peer.queuePairNumber());
            }
        }
        if (sharedState() == QueuePairState.ERROR.code()) {
            receiveCompletionQueue.notifyIfArmed(true);
        }
    }

    /**
     * Check a receive request against a queue's limits. Entries whose key names local-only memory are refused: a
     * peer could not scatter into them.
     */
    static ShmReceiveWorkRequest checkReceive(final ReceiveWorkRequest request, final ShmProtectionDomain domain,
        final int maxSge) {
        if (!(request instanceof ShmReceiveWorkRequest receive)) {
            throw new IllegalArgumentException("the receive request was not created by this provider");
        }
        if (receive.sgeCount > maxSge) {
            throw new IllegalArgumentException("sgeCount=" + receive.sgeCount + " exceeds maxReceiveSge=" + maxSge);
        }
        for (int i = 0; i < receive.sgeCount; i++) {
            if (receive.sgeLengths[i] < 0) {
                throw new IllegalArgumentException("sge " + i + " has a negative length: length="
                    + receive.sgeLengths[i]);
            }
            final ShmMemoryRegion region = domain.shmDevice().localRegion(receive.sgeLocalKeys[i]);
            if (region != null && !region.isShared()) {
                throw new IllegalArgumentException("the shm provider can only receive into memory from "
                    + "ProtectionDomain.allocate(..): sge " + i + " uses " + region);
            }
        }
        return receive;
    }

    @Override
    public void postSend(final SendWorkRequest request) {
        final ShmSendWorkRequest send = checkSend(request);
        sendLock.lock();
        try {
            ensureOpen();
            final int state = sharedState();
            if (state != QueuePairState.READY_TO_SEND.code() && state != QueuePairState.ERROR.code()) {
                throw new IllegalStateException("postSend: queue pair " + number + " is in state " + state()
                    + "; sends need READY_TO_SEND");
            }
            if (sendPosted - sendRetired >= maxSendWorkRequests) {
                throw new IllegalStateException("send queue of queue pair " + number + " is full: "
                    + maxSendWorkRequests + " requests are outstanding; poll their completions first");
            }
            final long sequence = sendPosted;
            final int slotIndex = (int) (sequence % maxSendWorkRequests);
            sendSlots[slotIndex].copyFrom(send);
            final boolean inline = (send.flags & SendFlags.INLINE) != 0;
            // a request waiting at the head is retried by its timer or a wake-up; retrying it here would spend
            // its retries on unrelated posts
            final boolean headWaiting = sendExecuted < sendPosted;
            sendPosted++;
            if (!headWaiting || state == QueuePairState.ERROR.code()) {
                // executed now, an inline payload goes straight from the caller's buffers, still valid during the
                // post, to the peer: one copy, not two
                inlineAtSource = inline ? slotIndex : -1;
                try {
                    progressLocked();
                } finally {
                    inlineAtSource = -1;
                }
            }
            if (inline && sendExecuted <= sequence) {
                // it waits: keep its payload, the caller may reuse its buffers when the post returns
                copyInline(send, slotIndex);
            }
        } finally {
            sendLock.unlock();
        }
    }

    private ShmSendWorkRequest checkSend(final SendWorkRequest request) {
        if (!(request instanceof ShmSendWorkRequest send) || send.owner != this) {
            throw new IllegalArgumentException("the send request was not created by this queue pair");
        }
        if ((send.flags & ~SendFlags.ALL) != 0) {
            throw new IllegalArgumentException("unknown send flags: flags=0x" + Integer.toHexString(send.flags));
        }
        if (send.opcode.hasImmediate() && device.configuration().transport() == ShmConfiguration.Transport.IWARP) {
            throw new IllegalArgumentException(send.opcode + " is not supported on an iWARP device ("
                + ShmConfiguration.TRANSPORT_PROP_NAME + "=iwarp): iWARP has no immediate data; queue pair " + number);
        }
        long total = 0;
        for (int i = 0; i < send.sgeCount; i++) {
            if (send.sgeLengths[i] < 0) {
                throw new IllegalArgumentException("sge " + i + " has a negative length: length="
                    + send.sgeLengths[i]);
            }
            total += send.sgeLengths[i];
        }
        if (total > device.attributes().maxMessageSize()) {
            throw new IllegalArgumentException("the request carries " + total + " bytes, more than maxMessageSize="
                + device.attributes().maxMessageSize());
        }
        if ((send.flags & SendFlags.INLINE) != 0) {
            if (send.opcode == WorkRequestOpcode.RDMA_READ) {
                throw new IllegalArgumentException("an RDMA READ cannot be inline");
            }
            if (total > maxInlineData) {
                throw new IllegalArgumentException("inline data of " + total + " bytes exceeds maxInlineData="
                    + maxInlineData + " of queue pair " + number);
            }
        }
        return send;
    }

    private void copyInline(final ShmSendWorkRequest send, final int slotIndex) {
        long offset = (long) slotIndex * maxInlineData;
        for (int i = 0; i < send.sgeCount; i++) {
            final int length = send.sgeLengths[i];
            MemorySegment.copy(ALL_MEMORY, send.sgeAddresses[i], inlineArea, offset, length);
            offset += length;
        }
    }

    /**
     * Retry the send queue (from the agent: a receive was posted, a delay passed, an error arrived).
     */
    @Override
    public void progress() {
        sendLock.lock();
        try {
            if (!closed) {
                progressLocked();
            }
        } finally {
            sendLock.unlock();
        }
    }

    private void progressLocked() {
        while (sendExecuted < sendPosted) {
            final int slotIndex = (int) (sendExecuted % maxSendWorkRequests);
            final ShmSendWorkRequest request = sendSlots[slotIndex];
            if (sharedState() == QueuePairState.ERROR.code()) {
                flush(request, sendExecuted);
            } else if (execute(request, slotIndex, sendExecuted) == RETRY) {
                retryScheduled = true;
                device.agent().scheduleRetry(this);
                return;
            }
            sendExecuted++;
            retryAttempts = 0;
        }
        if (retryScheduled) {
            retryScheduled = false;
            device.agent().cancelRetry(this);
        }
    }

    int generation() {
        return Atomics.getIntVolatile(blockSegment, QueuePairBlockDescriptor.GENERATION_OFFSET);
    }

    @Override
    public long retryDeadlineNanos() {
        return retryDeadlineNanos;
    }

    /**
     * Polled send completions up to and including this sequence free their slots (unsignalled ones before it too).
     */
    void retireSend(final long sequence) {
        if (sequence + 1 > sendRetired) {
            sendRetired = sequence + 1;
        }
    }

    // ----- executing one request -----

    private int execute(final ShmSendWorkRequest request, final int slotIndex, final long sequence) {
        final ReceivingPeer peer;
        if (type == QueuePairType.XRC_SEND) {
            final XrcTargetPeer target = xrcTarget;
            if (target == null || target.isGone()) {
                return fail(request, sequence, CompletionStatus.TRANSPORT_RETRY_EXCEEDED, null);
            }
            peer = xrcQueue(target, request.remoteSharedReceiveQueue);
            if (peer == null) {
                // the responder answers an unknown queue number with a NAK (invalid request), fatal to both ends
                target.fail();
                return fail(request, sequence, CompletionStatus.REMOTE_INVALID_REQUEST, null);
            }
        } else {
            peer = remote;
        }
        try {
            if (peer == null || peerGone || peer.isGone() || !peer.enter()) {
                return fail(request, sequence, CompletionStatus.TRANSPORT_RETRY_EXCEEDED, null);
            }
            try {
                return executeEntered(request, slotIndex, sequence, peer);
            } finally {
                try {
                    peer.node().done(cursor);
                } finally {
                    peer.exit();
                }
            }
        } catch (final InternalError fault) {
            return failForPeerFault(request, sequence, peer, fault);
        }
    }

    /**
     * A file of the peer's that we mapped faulted (the JDK reports the SIGBUS of an access to a mapped file that was
     * truncated under the mapping as this error): only the peer's process can have done that. The connection fails
     * as if the peer were gone, so that nothing touches its files again; the peer hears of it over the link.
     */
    private int failForPeerFault(final ShmSendWorkRequest request, final long sequence, final ReceivingPeer peer,
        final InternalError fault) {
        LOG.warn("shm queue pair {}: a file of its peer faulted while executing {}; the connection fails", number,
            request.opcode, fault);
        if (peer instanceof XrcReceivePeer queue) {
            // that queue's process broke its files: it is gone for this initiator, the others are not
            queue.ownerGone();
        } else {
            peerGone = true;
        }
        if (peer != null) {
            sendToPeer(peer, ShmLink.QP_ERROR, peer.queuePairNumber());
        }
        return fail(request, sequence, CompletionStatus.REMOTE_ACCESS_ERROR, null);
    }

    /**
     * Execute inside an access to the peer's block: it cannot be reused for another queue pair meanwhile.
     */
    private int executeEntered(final ShmSendWorkRequest request, final int slotIndex, final long sequence,
        final ReceivingPeer peer) {
        if (!peer.canReceive()) {
            return retryLater(request, sequence, retryCount, timeoutNanos(timeout),
                CompletionStatus.TRANSPORT_RETRY_EXCEEDED);
        }
        if (awaitingInitiator && !heardFromInitiator()) {
            return breakSendFirstRule(request, sequence, peer);
        }
        final long length = request.totalLength();
        final boolean inline = (request.flags & SendFlags.INLINE) != 0;
        if (!inline && !checkLocal(request, request.opcode == WorkRequestOpcode.RDMA_READ)) {
            return fail(request, sequence, CompletionStatus.LOCAL_PROTECTION_ERROR, null);
        }
        return switch (request.opcode) {
            case RDMA_WRITE, RDMA_WRITE_WITH_IMM -> executeWrite(request, slotIndex, sequence, peer, length, inline);
            case SEND, SEND_WITH_IMM -> executeSend(request, slotIndex, sequence, peer, length, inline);
            case RDMA_READ -> executeRead(request, sequence, peer, length);
        };
    }

    /**
     * Whether a receive completed on this passive queue pair since it was accepted: the initiator's first SEND or
     * WRITE WITH IMMEDIATE published its completion into the inbound ring.
     */
    private boolean heardFromInitiator() {
        final long tail = Atomics.getLongVolatile(blockSegment, inboundBase + InboundCompletionDescriptor.TAIL_OFFSET);
        if (tail != initiatorBaseline) {
            awaitingInitiator = false;
            return true;
        }
        return false;
    }

    private int breakSendFirstRule(final ShmSendWorkRequest request, final long sequence, final ReceivingPeer peer) {
        brokeSendFirstRule = true;
        LOG.debug("queue pair {} (passive) executed {} before the active side's first message arrived: iWARP's "
            + "active-side-sends-first rule is broken, the connection fails", number, request.opcode);
        return fail(request, sequence, CompletionStatus.REMOTE_OPERATION_ERROR, peer);
    }

    /**
     * The connection manager accepted this queue pair's connection: on an iWARP device it may execute nothing before
     * a receive completed on it. Called before the queue pair is connected.
     */
    void markPassive() {
        sendLock.lock();
        try {
            if (device.configuration().transport() == ShmConfiguration.Transport.IWARP) {
                awaitingInitiator = true;
                initiatorBaseline = Atomics.getLongVolatile(blockSegment,
                    inboundBase + InboundCompletionDescriptor.TAIL_OFFSET);
            }
        } finally {
            sendLock.unlock();
        }
    }

    /**
     * The inbound completion ring in this queue pair's shared block, which the process executing the peer's requests
     * writes: every value in it is that process's to choose. For tests that play a hostile peer process.
     */
    MemorySegment inboundRing() {
        return blockSegment.asSlice(inboundBase, InboundCompletionDescriptor.regionLength(inboundCapacity));
    }

    /**
     * Whether this queue pair broke iWARP's rule that the active side sends first, for tests and diagnostics.
     *
     * @return true once it executed a request before the active side's first message.
     */
    boolean brokeSendFirstRule() {
        return brokeSendFirstRule;
    }

    private int executeWrite(final ShmSendWorkRequest request, final int slotIndex, final long sequence,
        final ReceivingPeer peer, final long length, final boolean inline) {
        if (length > 0 && ((peer.accessFlags() & AccessFlags.REMOTE_WRITE) == 0 || peer.node().resolve(
            request.remoteKey, request.remoteAddress, length, AccessFlags.REMOTE_WRITE, peer.protectionDomain(),
            cursor) != PeerNode.OK)) {
            return fail(request, sequence, CompletionStatus.REMOTE_ACCESS_ERROR, peer);
        }
        int slot = -1;
        if (request.opcode == WorkRequestOpcode.RDMA_WRITE_WITH_IMM) {
            final long position = claimReceive(peer);
            if (position == ReceiveQueue.EMPTY) {
                return retryLater(request, sequence, rnrRetry, rnrDelayNanos(peer),
                    CompletionStatus.RNR_RETRY_EXCEEDED);
            }
            if (position == ReceiveQueue.CLOSED) {
                return peerClosed(request, sequence);
            }
            slot = peer.receiveQueue().takeSlot(position);
            if (slot < 0) {
                return fail(request, sequence, CompletionStatus.REMOTE_OPERATION_ERROR, peer);
            }
        }
        if (length > 0) {
            gather(request, slotIndex, inline, cursor.segment, cursor.offset, length);
        }
        if (slot >= 0) {
            deliver(peer, slot, CompletionStatus.SUCCESS, CompletionOpcode.RECV_RDMA_WITH_IMM, (int) length,
                request);
        }
        complete(request, sequence, CompletionStatus.SUCCESS, (int) length, false);
        return DONE;
    }

    private int executeSend(final ShmSendWorkRequest request, final int slotIndex, final long sequence,
        final ReceivingPeer peer, final long length, final boolean inline) {
        final long position = claimReceive(peer);
        if (position == ReceiveQueue.EMPTY) {
            return retryLater(request, sequence, rnrRetry, rnrDelayNanos(peer), CompletionStatus.RNR_RETRY_EXCEEDED);
        }
        if (position == ReceiveQueue.CLOSED) {
            return peerClosed(request, sequence);
        }
        final ReceiveQueue queue = peer.receiveQueue();
        final int slot = queue.takeSlot(position);
        final int sgeCount = slot < 0 ? -1 : queue.sgeCount(slot);
        if (sgeCount < 0) {
            return fail(request, sequence, CompletionStatus.REMOTE_OPERATION_ERROR, peer);
        }
        long capacity = 0;
        for (int i = 0; i < sgeCount; i++) {
            capacity += Integer.toUnsignedLong(queue.sgeLength(slot, i));
        }
        if (length > capacity) {
            deliverError(peer, slot, CompletionStatus.LOCAL_LENGTH_ERROR);
            return fail(request, sequence, CompletionStatus.REMOTE_INVALID_REQUEST, peer);
        }
        long copied = 0;
        for (int i = 0; i < sgeCount && copied < length; i++) {
            final long chunk = Math.min(Integer.toUnsignedLong(queue.sgeLength(slot, i)), length - copied);
            if (peer.node().resolve(queue.sgeLocalKey(slot, i), queue.sgeAddress(slot, i), chunk,
                AccessFlags.LOCAL_WRITE, peer.protectionDomain(), cursor) != PeerNode.OK) {
                deliverError(peer, slot, CompletionStatus.LOCAL_PROTECTION_ERROR);
                return fail(request, sequence, CompletionStatus.REMOTE_OPERATION_ERROR, peer);
            }
            gatherRange(request, slotIndex, inline, copied, cursor.segment, cursor.offset, chunk);
            peer.node().done(cursor);
            copied += chunk;
        }
        deliver(peer, slot, CompletionStatus.SUCCESS, CompletionOpcode.RECV, (int) length, request);
        complete(request, sequence, CompletionStatus.SUCCESS, (int) length, false);
        return DONE;
    }

    private int executeRead(final ShmSendWorkRequest request, final long sequence, final ReceivingPeer peer,
        final long length) {
        if (length > 0 && ((peer.accessFlags() & AccessFlags.REMOTE_READ) == 0 || peer.node().resolve(
            request.remoteKey, request.remoteAddress, length, AccessFlags.REMOTE_READ, peer.protectionDomain(),
            cursor) != PeerNode.OK)) {
            return fail(request, sequence, CompletionStatus.REMOTE_ACCESS_ERROR, peer);
        }
        long offset = cursor.offset;
        for (int i = 0; i < request.sgeCount && length > 0; i++) {
            final ShmMemoryRegion region = device.localRegion(request.sgeLocalKeys[i]);
            final int sgeLength = request.sgeLengths[i];
            MemorySegment.copy(cursor.segment, offset, region.segment(),
                region.offsetOf(request.sgeAddresses[i], sgeLength), sgeLength);
            offset += sgeLength;
        }
        complete(request, sequence, CompletionStatus.SUCCESS, (int) length, false);
        return DONE;
    }

    /**
     * The shared receive queue this queue pair takes its receives from, or null.
     */
    ShmSharedReceiveQueue sharedReceiveQueue() {
        return sharedReceiveQueue;
    }

    private long claimReceive(final ReceivingPeer peer) {
        final ReceiveQueue queue = peer.receiveQueue();
        long position = queue.claim();
        if (position == ReceiveQueue.EMPTY && queue.markWaiting()) {
            position = queue.claim();
        }
        if (position >= 0 && peer.sharedReceiveQueueId() >= 0 && queue.takeLimitEvent(position)) {
            sendToPeer(peer, ShmLink.SRQ_LIMIT, peer.sharedReceiveQueueId());
        }
        return position;
    }

    /**
     * Check the local entries: lkey, protection domain, bounds, and local write access where data lands.
     */
    private boolean checkLocal(final ShmSendWorkRequest request, final boolean landsLocally) {
        for (int i = 0; i < request.sgeCount; i++) {
            final ShmMemoryRegion region = device.localRegion(request.sgeLocalKeys[i]);
            if (region == null || region.shmDomain() != domain || region.isClosed()
                || region.offsetOf(request.sgeAddresses[i], request.sgeLengths[i]) < 0
                || landsLocally && (region.accessFlags() & AccessFlags.LOCAL_WRITE) == 0) {
                return false;
            }
        }
        return true;
    }

    private void gather(final ShmSendWorkRequest request, final int slotIndex, final boolean inline,
        final MemorySegment target, final long targetOffset, final long length) {
        gatherRange(request, slotIndex, inline, 0, target, targetOffset, length);
    }

    /**
     * Copy {@code length} bytes of the request's payload, starting at payload offset {@code from}, to the target.
     */
    private void gatherRange(final ShmSendWorkRequest request, final int slotIndex, final boolean inline,
        final long from, final MemorySegment target, final long targetOffset, final long length) {
        if (inline && slotIndex != inlineAtSource) {
            MemorySegment.copy(inlineArea, (long) slotIndex * maxInlineData + from, target, targetOffset, length);
            return;
        }
        long skip = from;
        long done = 0;
        for (int i = 0; i < request.sgeCount && done < length; i++) {
            final long sgeLength = request.sgeLengths[i];
            if (skip >= sgeLength) {
                skip -= sgeLength;
                continue;
            }
            final long chunk = Math.min(sgeLength - skip, length - done);
            if (inline) {
                MemorySegment.copy(ALL_MEMORY, request.sgeAddresses[i] + skip, target, targetOffset + done, chunk);
            } else {
                final ShmMemoryRegion region = device.localRegion(request.sgeLocalKeys[i]);
                MemorySegment.copy(region.segment(), region.offsetOf(request.sgeAddresses[i], sgeLength) + skip,
                    target, targetOffset + done, chunk);
            }
            done += chunk;
            skip = 0;
        }
    }

    private void deliver(final ReceivingPeer peer, final int slot, final CompletionStatus status,
        final CompletionOpcode opcode, final int byteLength, final ShmSendWorkRequest request) {
        final boolean immediate = request.opcode.hasImmediate();
        final boolean solicited = (request.flags & SendFlags.SOLICITED) != 0;
        final int flags = (immediate ? InboundCompletionDescriptor.FLAG_HAS_IMMEDIATE : 0)
            | (solicited ? InboundCompletionDescriptor.FLAG_SOLICITED : 0);
        if (!peer.publish(peer.receiveQueue().workRequestId(slot), slot, status, opcode, byteLength, flags,
            immediate ? request.immediate : 0)) {
            peer.setError();
            sendToPeer(peer, ShmLink.QP_ERROR, peer.queuePairNumber());
            return;
        }
        if (peer.disarmCompletionQueue(solicited || status != CompletionStatus.SUCCESS)) {
            sendToPeer(peer, ShmLink.WAKE_CQ, peer.completionQueueId());
        }
    }

    private void deliverError(final ReceivingPeer peer, final int slot, final CompletionStatus status) {
        peer.publish(peer.receiveQueue().workRequestId(slot), slot, status, CompletionOpcode.RECV, 0, 0, 0);
    }

    /**
     * Complete a request with an error: the completion always appears, this queue pair moves to ERROR, and so does
     * the peer when the error is the peer's concern.
     */
    private int fail(final ShmSendWorkRequest request, final long sequence, final CompletionStatus status,
        final ReceivingPeer peerToFail) {
        if (peerToFail != null) {
            // the responder's ERROR first, as on hardware (it moves to ERROR as it sends the NAK): a request of its
            // own that meets our receive queue closed below then knows it was flushed (see peerClosed)
            peerToFail.setError();
        }
        // ERROR before the completion: whoever polls the failure sees the queue pair in ERROR, as on hardware
        moveToErrorLocked();
        complete(request, sequence, status, 0, true);
        if (peerToFail != null) {
            sendToPeer(peerToFail, ShmLink.QP_ERROR, peerToFail.queuePairNumber());
            if (peerToFail.disarmCompletionQueue(true)) {
                sendToPeer(peerToFail, ShmLink.WAKE_CQ, peerToFail.completionQueueId());
            }
        }
        return DONE;
    }

    /**
     * The peer's receive queue is closed: the peer moved to ERROR. If this queue pair is in ERROR too (the peer failed
     * both ends, setting our state before closing its queue), the request is flushed like every other one behind it;
     * otherwise no responder answers and the retries run out.
     */
    private int peerClosed(final ShmSendWorkRequest request, final long sequence) {
        if (sharedState() == QueuePairState.ERROR.code()) {
            return flush(request, sequence);
        }
        return fail(request, sequence, CompletionStatus.TRANSPORT_RETRY_EXCEEDED, null);
    }

    /** This queue pair is in ERROR: the request completes flushed (the receive queue closed first, once). */
    private int flush(final ShmSendWorkRequest request, final long sequence) {
        handleErrorLocked();
        complete(request, sequence, CompletionStatus.WORK_REQUEST_FLUSHED, 0, true);
        return DONE;
    }

    private int retryLater(final ShmSendWorkRequest request, final long sequence, final int limit,
        final long delayNanos, final CompletionStatus exceeded) {
        if (limit != QueuePairAttributes.RNR_RETRY_INFINITE && retryAttempts >= limit) {
            return fail(request, sequence, exceeded, null);
        }
        if (retryAttempts < Integer.MAX_VALUE) {
            retryAttempts++;
        }
        retryDeadlineNanos = System.nanoTime() + delayNanos;
        return RETRY;
    }

    private long rnrDelayNanos(final ReceivingPeer peer) {
        final long configured = device.configuration().rnrTimerMicros();
        return configured > 0 ? configured * 1000 : QueuePairAttributes.rnrTimerNanos(peer.minRnrTimer());
    }

    private static long timeoutNanos(final int code) {
        return code == 0 ? 100_000_000L : Math.max(1_000_000L, 4096L << Math.min(code, 31));
    }

    private void complete(final ShmSendWorkRequest request, final long sequence, final CompletionStatus status,
        final int byteLength, final boolean always) {
        if (always || signalAll || (request.flags & SendFlags.SIGNALED) != 0) {
            sendCompletionQueue.addSendCompletion(this, sequence, request.id, status,
                request.opcode.completionOpcode(), byteLength);
        }
    }

    // ----- errors and the peer -----

    /**
     * The peer reported an error or is gone (agent thread). Acts only if the news concerns the current connection:
     * through the current link, or for a peer on this device, from the queue pair this one is connected to. The check
     * and the move to ERROR happen under the send lock, which a RESET also holds, so news about a connection that a
     * RESET already ended cannot fail the next one.
     *
     * @param via the link the news came over, or {@code null} for a peer on this device.
     * @param peerNumber the peer queue pair's number, for a peer on this device.
     * @param gone whether the peer is gone (its link ended or it was destroyed) rather than in ERROR.
     */
    void onPeerFailure(final ShmLink via, final int peerNumber, final boolean gone) {
        if (type == QueuePairType.XRC_SEND) {
            if (via != null && gone) {
                onXrcLinkEnded(via);
            }
            return;
        }
        failConnection(() -> isCurrentPeer(via, peerNumber), gone);
    }

    /**
     * Move to ERROR if {@code current} (checked under the send lock) says the news is about this connection, then
     * signal both completion queues.
     */
    private void failConnection(final BooleanSupplier current, final boolean gone) {
        sendLock.lock();
        try {
            if (closed || !current.getAsBoolean()) {
                return;
            }
            if (gone) {
                peerGone = true;
            }
            moveToErrorLocked();
            progressLocked();
        } finally {
            sendLock.unlock();
        }
        if (gone) {
            // a peer that died may have disarmed our completion queue and not lived to send the wake-up: signal
            // regardless; a spurious wake-up costs a poll, a lost one a waiter
            sendCompletionQueue.signalAfterPeerLoss();
            if (receiveCompletionQueue != null) {
                receiveCompletionQueue.signalAfterPeerLoss();
            }
        } else {
            notifyCompletionQueues();
        }
    }

    private boolean isCurrentPeer(final ShmLink via, final int peerNumber) {
        if (via != null) {
            synchronized (linkLock) {
                if (via == earlyLink) {
                    // a link this side never adopted ended: forget it, the connection is not affected
                    earlyLink = null;
                    earlyGid = null;
                    return false;
                }
                return via == link;
            }
        }
        final RemotePeer peer = remote;
        return peer != null && peer.isSameDevice() && peer.queuePairNumber() == peerNumber;
    }

    /**
     * Set ERROR and close the receive queue; the caller flushes the send queue (the progress loop does).
     */
    private void moveToErrorLocked() {
        if (sharedState() != QueuePairBlockDescriptor.STATE_DESTROYED) {
            setSharedState(QueuePairState.ERROR);
        }
        handleErrorLocked();
    }

    private void handleErrorLocked() {
        if (!errorHandled) {
            errorHandled = true;
            closedHead = receiveQueue == null ? NO_POSITION : receiveQueue.close();
        }
    }

    private void notifyCompletionQueues() {
        sendCompletionQueue.notifyIfArmed(true);
        if (receiveCompletionQueue != null) {
            receiveCompletionQueue.notifyIfArmed(true);
        }
    }

    /**
     * A link from the peer arrived (agent thread).
     *
     * @return false to refuse it.
     */
    boolean acceptLink(final ShmLink incoming, final byte[] gid, final int remoteNumber, final int generation) {
        final RemotePeer vanished;
        synchronized (linkLock) {
            if (closed || link != null || earlyLink != null) {
                return false;
            }
            final RemotePeer peer = remote;
            if (peer == null) {
                incoming.bind(this);
                earlyLink = incoming;
                earlyGid = gid;
                earlyQueuePairNumber = remoteNumber;
                earlyGeneration = generation;
                return true;
            }
            if (peer.matches(gid, remoteNumber) && peer.generation() == generation) {
                incoming.bind(this);
                attachLinkLocked(incoming);
                return true;
            }
            // a stale link is refused; but if the peer's block no longer holds the peer, the peer was destroyed
            // before its link arrived, and the close of the refused link will not tell us: it is gone
            vanished = peer.state() == QueuePairBlockDescriptor.STATE_DESTROYED ? peer : null;
        }
        if (vanished != null) {
            onPeerVanished(vanished);
        }
        return false;
    }

    /**
     * The peer connected to was destroyed before its link was attached (agent thread).
     */
    private void onPeerVanished(final RemotePeer peer) {
        failConnection(() -> remote == peer, true);
    }

    /**
     * The accepting side: publish the peer and take a link that arrived before it, in one step under the link lock,
     * so a link arriving meanwhile finds the peer in {@link #acceptLink} instead of becoming an early link no one
     * adopts.
     */
    private void adoptEarlyLink(final RemotePeer peer) {
        synchronized (linkLock) {
            remote = peer;
            if (earlyLink != null) {
                if (peer.matches(earlyGid, earlyQueuePairNumber) && peer.generation() == earlyGeneration) {
                    attachLinkLocked(earlyLink);
                } else {
                    earlyLink.release(this);
                }
                earlyLink = null;
                earlyGid = null;
            }
        }
    }

    private void attachLink(final ShmLink connected) {
        synchronized (linkLock) {
            attachLinkLocked(connected);
        }
    }

    private void attachLinkLocked(final ShmLink attached) {
        link = attached;
        for (int i = 0; i < pendingWakeCount; i += 2) {
            attached.send(this, pendingWakes[i], pendingWakes[i + 1]);
        }
        pendingWakeCount = 0;
    }

    private void closeLink() {
        synchronized (linkLock) {
            if (link != null) {
                // the peer hears that this connection ended; the socket serves the next one between the two devices
                link.release(this);
                link = null;
            }
            if (earlyLink != null) {
                earlyLink.release(this);
                earlyLink = null;
            }
            for (final ShmLink shared : xrcLinks.values()) {
                device.agent().releaseXrcLink(shared, this);
            }
            xrcLinks.clear();
            pendingWakeCount = 0;
        }
    }

    // ----- XRC initiator -----

    /**
     * The XRC shared receive queue {@code queueNumber} of the target's domain, mapped on first use (with a link to
     * its device, for wake-ups); a mapping whose queue was closed or whose device is gone is dropped and looked up
     * again. Under the send lock.
     *
     * @return null if the domain holds no such queue.
     */
    private XrcReceivePeer xrcQueue(final XrcTargetPeer target, final int queueNumber) {
        XrcReceivePeer queue = xrcQueues.get(queueNumber);
        if (queue != null && !queue.isQueueGone()) {
            return queue;
        }
        if (queue != null) {
            xrcQueues.remove(queueNumber);
            queue.close();
        }
        try {
            queue = XrcReceivePeer.connect(device, target, queueNumber);
        } catch (final IOException | RuntimeException ex) {
            // RuntimeException: a registry another process of the target's host corrupted, or one we cannot lock
            LOG.debug("XRC initiator queue pair {}: {}", number, ex.getMessage());
            return null;
        }
        if (!queue.isSameDevice()) {
            try {
                linkTo(queue.gidHex());
            } catch (final IOException ex) {
                LOG.debug("XRC initiator queue pair {} cannot reach the device of XRC shared receive queue {}",
                    number, queueNumber, ex);
                queue.close();
                return null;
            }
        }
        xrcQueues.put(queueNumber, queue);
        return queue;
    }

    /**
     * Take a share of this device's XRC link to the device {@code gidHex} unless this initiator has one: it carries
     * the wake-ups of the device's queues, and its end tells that the device is gone.
     */
    private void linkTo(final String gidHex) throws IOException {
        synchronized (linkLock) {
            if (xrcLinks.containsKey(gidHex)) {
                return;
            }
        }
        final ShmLink shared = device.agent().acquireXrcLink(
            device.peerFolder(gidHex).resolve(ShmAgent.SOCKET_FILE), this);
        synchronized (linkLock) {
            if (closed || shared.isClosed()) {
                // closed meanwhile, or the link ended before this initiator was in the map its end is told to
                device.agent().releaseXrcLink(shared, this);
                throw new IOException(closed ? "queue pair " + number + " closed"
                    : "the link to shm device " + gidHex + " ended");
            }
            xrcLinks.put(gidHex, shared);
        }
    }

    /**
     * Tell the device of an XRC shared receive queue something: directly on this device, else over the link. An
     * error needs no message: the target's ERROR is in its domain's registry, and its handles hear the event.
     */
    private void notifyXrcQueue(final XrcReceivePeer queue, final int type, final int argument) {
        if (type == ShmLink.QP_ERROR) {
            return;
        }
        if (queue.isSameDevice()) {
            deliverLocally(type, argument);
            return;
        }
        synchronized (linkLock) {
            final ShmLink link = xrcLinks.get(queue.gidHex());
            if (link != null) {
                link.send(type == ShmLink.SRQ_LIMIT ? ShmLink.XRC_SRQ_LIMIT : type, argument);
            }
        }
    }

    /**
     * A link to the device of XRC shared receive queues ended (agent thread): that device is gone, and requests to
     * its queues fail from now on.
     */
    private void onXrcLinkEnded(final ShmLink via) {
        String gidHex = null;
        synchronized (linkLock) {
            for (final Iterator<Map.Entry<String, ShmLink>> it = xrcLinks.entrySet().iterator(); it.hasNext();) {
                final Map.Entry<String, ShmLink> entry = it.next();
                if (entry.getValue() == via) {
                    gidHex = entry.getKey();
                    it.remove();
                }
            }
        }
        if (gidHex == null) {
            return;
        }
        sendLock.lock();
        try {
            for (final XrcReceivePeer queue : xrcQueues.values()) {
                if (queue.gidHex().equals(gidHex)) {
                    queue.ownerGone();
                }
            }
        } finally {
            sendLock.unlock();
        }
    }

    /**
     * The links of this XRC initiator to devices of queues it reached, for tests and diagnostics.
     */
    int xrcLinkCount() {
        synchronized (linkLock) {
            return xrcLinks.size();
        }
    }

    /**
     * Let go of the target and the queues reached (RESET, close); under the send lock.
     */
    private void closeXrc() {
        xrcQueues.values().forEach(XrcReceivePeer::close);
        xrcQueues.clear();
        final XrcTargetPeer target = xrcTarget;
        xrcTarget = null;
        if (target != null) {
            target.close();
        }
    }

    /**
     * Tell the peer something: directly on this device, else over the link (queued until it is attached).
     */
    private void sendToPeer(final ReceivingPeer target, final int type, final int argument) {
        if (target instanceof XrcReceivePeer queue) {
            notifyXrcQueue(queue, type, argument);
            return;
        }
        final RemotePeer peer = (RemotePeer) target;
        if (peer.isSameDevice()) {
            deliverLocally(type, argument);
            return;
        }
        synchronized (linkLock) {
            if (link != null) {
                link.send(this, type, argument);
                return;
            }
            for (int i = 0; i < pendingWakeCount; i += 2) {
                if (pendingWakes[i] == type && pendingWakes[i + 1] == argument) {
                    return;
                }
            }
            if (pendingWakeCount < pendingWakes.length) {
                pendingWakes[pendingWakeCount++] = type;
                pendingWakes[pendingWakeCount++] = argument;
            }
        }
    }

    private void deliverLocally(final int type, final int argument) {
        switch (type) {
            case ShmLink.WAKE_CQ -> {
                final ShmCompletionQueue queue = device.completionQueue(argument);
                if (queue != null) {
                    queue.signal();
                }
            }
            case ShmLink.RECV_POSTED -> {
                final ShmQueuePair target = device.queuePair(argument);
                if (target != null) {
                    device.agent().execute(target::progress);
                }
            }
            case ShmLink.QP_ERROR -> {
                final ShmQueuePair target = device.queuePair(argument);
                if (target != null) {
                    device.agent().execute(() -> target.onPeerFailure(null, number, false));
                }
            }
            case ShmLink.SRQ_LIMIT -> {
                final ShmSharedReceiveQueue queue = device.sharedReceiveQueue(argument);
                if (queue != null) {
                    device.agent().execute(queue::onLimitReached);
                }
            }
            default -> throw new IllegalArgumentException("unknown wake-up type " + type);
        }
    }

    // ----- receive side, polled by the receive completion queue -----

    /**
     * Hand receive completions to the handler: those the peer published, then flushed ones once this queue pair is
     * in ERROR and the peer can publish no more. Called under the completion queue's poll lock.
     */
    @Override
    public int pollReceives(final ShmWorkCompletion completion, final CompletionHandler handler, final int limit) {
        int count = flushCursor == NO_POSITION ? drainInbound(completion, handler, limit) : 0;
        if (count < limit && receiveQueue != null && closedHead != NO_POSITION) {
            count += flushReceives(completion, handler, limit - count);
        } else if (count < limit && sharedReceiveQueue != null && !lastReceiveReported
            && sharedState() == QueuePairState.ERROR.code()) {
            count += reportLastReceive(completion, handler, limit - count);
        }
        return count;
    }

    /**
     * In ERROR with a shared receive queue: its receives belong to the queue and are not flushed, so the state is
     * reported with one flushed receive completion of id {@link SharedReceiveQueue#LAST_RECEIVE_ID}, after every
     * completion the peer published (as a device reports {@code IBV_EVENT_QP_LAST_WQE_REACHED}). A peer access under
     * way may still publish one (it began before the state changed; any later one finds ERROR): it is awaited a
     * moment (an access copies one message at most); one still under way after that (its process died in it)
     * publishes nothing.
     */
    private int reportLastReceive(final ShmWorkCompletion completion, final CompletionHandler handler,
        final int limit) {
        AccessGuard.awaitDrained(blockSegment, QueuePairBlockDescriptor.GUARD_OFFSET, LAST_RECEIVE_WAIT_NANOS);
        int count = drainInbound(completion, handler, limit);
        if (count < limit) {
            lastReceiveReported = true;
            completion.workRequestId = SharedReceiveQueue.LAST_RECEIVE_ID;
            handler.onCompletion(flushed(completion));
            count++;
        }
        return count;
    }

    /**
     * Without the poll lock: whether the peer published the next inbound completion, or this side has receives to
     * flush or (with a shared receive queue) its ERROR to report. Fields the poller owns are read racily: a stale
     * value only makes the answer a moment late or the poll that follows find nothing.
     */
    @Override
    public boolean mayHaveReceives() {
        if (flushCursor != NO_POSITION || closedHead != NO_POSITION) {
            return true;
        }
        if (sharedReceiveQueue != null && !lastReceiveReported && sharedState() == QueuePairState.ERROR.code()) {
            return true;
        }
        final long head = inboundHead;
        final long entry = inboundBase + InboundCompletionDescriptor.entryOffset(inboundCapacity, head);
        return Atomics.getLongAcquire(blockSegment, entry + InboundCompletionDescriptor.SEQUENCE_OFFSET) == head + 1;
    }

    private int drainInbound(final ShmWorkCompletion completion, final CompletionHandler handler, final int limit) {
        int count = 0;
        while (count < limit) {
            final long entry = inboundBase + InboundCompletionDescriptor.entryOffset(inboundCapacity, inboundHead);
            if (Atomics.getLongAcquire(blockSegment, entry + InboundCompletionDescriptor.SEQUENCE_OFFSET)
                != inboundHead + 1) {
                break;
            }
            readInbound(completion, entry);
            final int slot = blockSegment.get(Atomics.INT, entry + InboundCompletionDescriptor.SLOT_OFFSET);
            inboundHead++;
            Atomics.setLongRelease(blockSegment, inboundBase + InboundCompletionDescriptor.HEAD_OFFSET, inboundHead);
            final ReceiveQueue queue = receiveQueue != null ? receiveQueue : sharedReceiveQueue.queue();
            final long length = queue.release(slot, completion);
            if (length < 0) {
                // the process executing the peer's requests published a completion for no receive of ours: it is
                // not delivered, and the connection fails (its posted receives come back flushed)
                failForCorruptCompletion("a completion for receive slot " + slot + ", which holds no posted receive");
                continue;
            }
            // a SEND lands in the receive's buffers; an RDMA WRITE WITH IMMEDIATE elsewhere (its length is the write's)
            if (InboundCompletionDescriptor.overflows(completion, length)) {
                failForCorruptCompletion("a completion of " + Integer.toUnsignedString(completion.byteLength)
                    + " bytes for a receive of " + length);
                completion.status = CompletionStatus.LOCAL_LENGTH_ERROR;
                completion.byteLength = 0;
            }
            handler.onCompletion(completion);
            count++;
        }
        return count;
    }

    /**
     * The peer's process wrote something into our inbound ring no correct peer writes: fail the connection, as an HCA
     * fails a queue pair on a malformed packet. On the agent thread: the caller holds the completion queue's poll
     * lock, and failing takes the send lock.
     */
    private void failForCorruptCompletion(final String what) {
        final RemotePeer peer = remote;
        LOG.debug("queue pair {}: the peer's process published {}; the connection fails", number, what);
        device.agent().execute(() -> failConnection(() -> remote == peer, false));
    }

    private void readInbound(final ShmWorkCompletion completion, final long entry) {
        InboundCompletionDescriptor.read(blockSegment, entry, completion);
        completion.queuePairNumber = number;
    }

    private int flushReceives(final ShmWorkCompletion completion, final CompletionHandler handler,
        final int limit) {
        int count = 0;
        if (flushCursor == NO_POSITION) {
            final RemotePeer peer = remote;
            final boolean gone = peerGone || peer == null || peer.isGone();
            if (!gone && inboundHead < closedHead) {
                return 0;
            }
            if (gone) {
                // the peer published its last completions before its state changed: take them before flushing
                count = drainInbound(completion, handler, limit);
                if (count == limit) {
                    return count;
                }
            }
            flushCursor = inboundHead;
        }
        final long posted = receiveQueue.postedCount();
        while (count < limit && flushCursor < posted) {
            final int slot = receiveQueue.postedSlotAt(flushCursor);
            flushCursor++;
            if (receiveQueue.release(slot, completion) < 0) {
                // completed already: a corrupt inbound entry named it out of turn
                continue;
            }
            handler.onCompletion(flushed(completion));
            count++;
        }
        return count;
    }

    /**
     * Make {@code completion} (its id set) a flushed receive of this queue pair.
     */
    private ShmWorkCompletion flushed(final ShmWorkCompletion completion) {
        completion.status = CompletionStatus.WORK_REQUEST_FLUSHED;
        completion.opcode = CompletionOpcode.RECV;
        completion.byteLength = 0;
        completion.hasImmediate = false;
        completion.immediate = 0;
        completion.vendorError = 0;
        completion.queuePairNumber = number;
        return completion;
    }

    // ----- lifetime -----

    private void ensureOpen() {
        if (closed) {
            throw new IllegalStateException("queue pair " + number + " is closed");
        }
    }

    @Override
    public boolean peerAccessEnded() {
        return peerAccessEnded;
    }

    @Override
    public void close() {
        final RemotePeer peer;
        final boolean peerLetGo;
        sendLock.lock();
        try {
            if (closed) {
                return;
            }
            closed = true;
            peerLetGo = peerGone;
            Atomics.setIntVolatile(blockSegment, QueuePairBlockDescriptor.STATE_OFFSET,
                QueuePairBlockDescriptor.STATE_DESTROYED);
            device.agent().cancelRetry(this);
            peer = remote;
            remote = null;
            closeXrc();
        } finally {
            sendLock.unlock();
        }
        // from here no peer access starts: a peer still connected finds its identity gone
        AccessGuard.revoke(blockSegment, QueuePairBlockDescriptor.GUARD_OFFSET);
        // the name goes with the agent: a peer that still finds it meets the revoked identity
        device.forgetName(QueuePairBlockDescriptor.fileName(number), SharedFile.pooledName(block.id()));
        closeLink();
        if (peer != null) {
            if (peer.isSameDevice()) {
                final ShmQueuePair target = device.queuePair(peer.queuePairNumber());
                if (target != null && target != this) {
                    device.agent().execute(() -> target.onPeerFailure(null, number, true));
                }
            }
            peer.close();
        }
        // a peer that let go (RECYCLE, sent once its own close stopped every request) has no access under way, and
        // one whose process died never ends the access it died in: waiting for either only stalls this close
        final boolean drained = AccessGuard.awaitDrained(blockSegment, QueuePairBlockDescriptor.GUARD_OFFSET,
            peerLetGo ? 0 : ShmDevice.DRAIN_TIMEOUT_NANOS);
        peerAccessEnded = drained;
        if (!drained) {
            // a peer access never ended: nothing it may still touch is reused
            LOG.debug("queue pair {} closed while a peer access was under way; its files are not reused", number);
            if (receiveCompletionQueue != null) {
                receiveCompletionQueue.taint();
            }
            if (sharedReceiveQueue != null) {
                sharedReceiveQueue.taint();
            }
        }
        if (receiveCompletionQueue != null) {
            receiveCompletionQueue.detachReceiver(this);
        }
        if (drained && sharedReceiveQueue != null) {
            // detached: no poll of the completion queue reads the inbound ring any more
            discardUnpolledSharedReceives();
        }
        if (receiveCompletionQueue != null && receiveCompletionQueue != sendCompletionQueue) {
            receiveCompletionQueue.detach();
        }
        sendCompletionQueue.detach();
        if (sharedReceiveQueue != null) {
            sharedReceiveQueue.detach();
        }
        device.removeQueuePair(this);
        if (drained) {
            device.filePool().release(block);
        } else {
            block.close();
        }
        // closed under the send lock above: no post, retry or flush reads a slot again
        device.sendSlotPool().give(sendSlots, maxSendSge);
        domain.childClosed(ResourceCounter.Kind.QUEUE_PAIR);
        closeActions.run();
    }

    /**
     * Closing with completions of shared receives nobody polled: those receives were consumed, and their slots go
     * back to the shared queue (a device frees them as it cleans the queue pair's completions out of its completion
     * queue). Without this each would stay taken for good and the shared queue would shrink.
     */
    private void discardUnpolledSharedReceives() {
        final ShmWorkCompletion scratch = new ShmWorkCompletion();
        final ReceiveQueue queue = sharedReceiveQueue.queue();
        while (true) {
            final long entry = inboundBase + InboundCompletionDescriptor.entryOffset(inboundCapacity, inboundHead);
            if (Atomics.getLongAcquire(blockSegment, entry + InboundCompletionDescriptor.SEQUENCE_OFFSET)
                != inboundHead + 1) {
                return;
            }
            queue.release(blockSegment.get(Atomics.INT, entry + InboundCompletionDescriptor.SLOT_OFFSET), scratch);
            inboundHead++;
        }
    }

    @Override
    public void whenClosed(final Runnable action) {
        closeActions.add(action);
    }

    @Override
    public String toString() {
        final RemotePeer peer = remote;
        return "ShmQueuePair{number=" + number + ", identity=0x" + Integer.toHexString(identity) + ", state="
            + state() + ", sendPosted=" + sendPosted
            + ", sendExecuted=" + sendExecuted + ", sendRetired=" + sendRetired + ", inboundHead=" + inboundHead
            + ", closedHead=" + closedHead + ", flushCursor=" + flushCursor + ", peerGone=" + peerGone
            + (brokeSendFirstRule ? ", brokeSendFirstRule=true" : "") + ", remote=" + peer
            + (type == QueuePairType.XRC_SEND ? ", xrcTarget=" + xrcTarget + ", xrcQueues=" + xrcQueues.size() : "")
            + '}';
    }
}

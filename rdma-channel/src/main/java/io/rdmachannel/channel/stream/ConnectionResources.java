package io.rdmachannel.channel.stream;

import io.rdmachannel.channel.spi.AccessFlags;
import io.rdmachannel.channel.spi.CompletionQueue;
import io.rdmachannel.channel.spi.DeviceCapability;
import io.rdmachannel.channel.spi.MemoryRegion;
import io.rdmachannel.channel.spi.QueuePair;
import io.rdmachannel.channel.spi.QueuePairAttributes;
import io.rdmachannel.channel.spi.QueuePairInitAttributes;
import io.rdmachannel.channel.spi.QueuePairState;
import io.rdmachannel.channel.spi.QueuePairType;
import io.rdmachannel.channel.spi.RdmaDevice;
import io.rdmachannel.channel.spi.ReceiveWorkRequest;
import io.rdmachannel.channel.spi.SendWorkRequest;
import io.rdmachannel.channel.spi.XrcDomain;
import io.rdmachannel.channel.spi.XrcSharedReceiveQueue;
import io.rdmachannel.channel.spi.XrcTargetQueuePair;

import java.io.IOException;
import java.lang.foreign.MemorySegment;

/**
 * What one connection allocates on its device, and its release in reverse order of creation: the registration with
 * the device context, a send and a receive completion queue (both signal the context's readiness source with the
 * connection's token), the send ring with its inline stage and control slots, the receive ring, the target SGL the
 * peer writes, the message buffers of message mode (together a {@link ConnectionMemory}, taken from and given back
 * to the context's {@link ConnectionMemoryPool}), and the queue pair. In SRQ mode the receives are the context's
 * {@link SharedReceivePool}'s: the connection reserves some there instead of posting its own, and message buffers
 * are the pool's too. Filled by the CM's callbacks ({@link #allocate},
 * {@link #bind}), one at a time; {@link #release} runs with both of the connection's locks held, so no side is using a
 * resource while it goes.
 *
 * <p>Send memory layout: {@code [send ring | inline stage (MAX_INLINE_STAGE) | control slots (controlWindow SGEs)]}.
 */
final class ConnectionResources {
    static final int MAX_INLINE_STAGE = StreamOptions.MAX_INLINE;

    final int sendQueueSize;
    final int receiveQueueSize;
    /** Receives posted beyond the credits advertised: the peer's control messages may overshoot them. */
    final int spareReceives;
    final int sendBufferSize;
    final int receiveBufferSize;
    final int controlWindow;
    final int targetSglEntries;
    /** SRQ mode was asked for (it is on if {@link #sharedPool} is set: the device has shared receive queues). */
    final boolean sharedRequested;
    final int sharedQueueSize;
    /** SRQ mode: the credits always reserved, the initial ones. */
    final int minimumCredits;

    DeviceContext context;
    int token = -1;
    CompletionQueue sendCompletionQueue;
    CompletionQueue receiveCompletionQueue;
    ConnectionMemory memory;
    MemoryRegion sendRegion;
    MemoryRegion receiveRegion;
    MemoryRegion targetRegion;
    MemoryRegion messageRegion;
    QueuePair queuePair;
    SendWorkRequest sendRequest;
    ReceiveWorkRequest receiveRequest;
    MemorySegment sendMemory;
    boolean messageMode;
    boolean synchronousTransfer;
    int inlineSize;
    /** SRQ mode: the device's shared receive queue; null with a receive queue of our own. */
    SharedReceivePool sharedPool;
    /** SRQ mode: receives of {@link #sharedPool} reserved for this connection (its credits and spares). */
    int sharedReserved;
    /** Without SRQ mode: the receives posted on the queue pair, for the context's count. */
    int ownReceivesPosted;
    /** XRC mode was asked for (it is on if {@link #xrcQueue} is set). */
    final boolean xrcRequested;
    /** XRC mode: the connection's XRC shared receive queue; {@link #queuePair} is then its XRC initiator. */
    XrcSharedReceiveQueue xrcQueue;
    /** XRC mode: the target queue pair this side offers the peer's initiator (its handle's reference). */
    XrcTargetQueuePair xrcTarget;
    /**
     * XRC mode: the connection manager's lifeline said the peer let go or died, or the attempt failed; the peer's
     * requests are not waited for at the release.
     */
    boolean peerLetGo;

    ConnectionResources(final StreamOptions options, final StreamConfiguration configuration) {
        this.sendQueueSize = options.sendQueueSize();
        this.receiveQueueSize = options.receiveQueueSize();
        this.controlWindow = configuration.controlWindow();
        this.spareReceives = controlWindow;
        this.sendBufferSize = options.sendBufferSize();
        this.receiveBufferSize = options.receiveBufferSize();
        this.targetSglEntries = configuration.targetSglEntries();
        this.sharedRequested = options.sharedReceiveQueue();
        this.xrcRequested = options.xrc();
        this.sharedQueueSize = configuration.sharedReceiveQueueSize();
        this.minimumCredits = Math.min(configuration.sharedReceiveCredits(), receiveQueueSize);
    }

    /**
     * The credits advertised in the connection data: all of the receive queue, or in SRQ mode the minimum.
     */
    int initialCredits() {
        return sharedPool != null ? minimumCredits : receiveQueueSize;
    }

    /**
     * Receives posted: the credits advertised and the spare ones.
     */
    int receiveDepth() {
        return receiveQueueSize + spareReceives;
    }

    /**
     * Messages per data or SGE-update message: one, or two in message mode (a WRITE, then a SEND).
     */
    int slotsPerMessage() {
        return messageMode ? 2 : 1;
    }

    /**
     * Allocate everything but the queue pair on {@code device}; on failure release what was allocated and rethrow.
     */
    void allocate(final RsocketTransport transport, final RdmaDevice device, final RsocketConnection owner,
        final int requestedInline) throws IOException {
        messageMode = !device.attributes().has(DeviceCapability.RDMA_WRITE_WITH_IMMEDIATE);
        if (messageMode) {
            checkMessageMode(device);
        }
        context = transport.context(device);
        token = context.register(owner);
        try {
            sendCompletionQueue = device.createCompletionQueue(sendQueueSize, context.readinessSource(), token);
            receiveCompletionQueue = device.createCompletionQueue(receiveDepth(), context.readinessSource(), token);
            inlineSize = Math.min(requestedInline, device.attributes().maxInlineData());
            synchronousTransfer = device.attributes().has(DeviceCapability.SYNCHRONOUS_TRANSFER);
            if (messageMode) {
                inlineSize = Math.max(inlineSize, MessageSendDescriptor.LENGTH);
            }
            if (sharedRequested && device.attributes().has(DeviceCapability.SHARED_RECEIVE_QUEUE)) {
                reserveShared(device);
            }
            memory = context.memoryPool().acquire(new ConnectionMemory.Shape(
                sendBufferSize + MAX_INLINE_STAGE + (long) controlWindow * SgeDescriptor.LENGTH, receiveBufferSize,
                (long) targetSglEntries * SgeDescriptor.LENGTH,
                messageMode && sharedPool == null ? MessageSendDescriptor.bufferOffset(receiveDepth()) : 0));
            sendMemory = memory.sendMemory;
            sendRegion = memory.sendRegion;
            receiveRegion = memory.receiveRegion;
            targetRegion = memory.targetRegion;
            messageRegion = memory.messageRegion;
        } catch (final IOException | RuntimeException ex) {
            release(owner);
            throw ex;
        }
    }

    /**
     * Whether this connection can run in XRC mode on {@code device} once allocated: asked for, the device has XRC,
     * RDMA WRITE WITH IMMEDIATE (no message mode) and the connection is not in SRQ mode.
     */
    boolean xrcPossible(final RdmaDevice device) {
        return xrcRequested && device.attributes().has(DeviceCapability.XRC) && !messageMode && sharedPool == null;
    }

    /**
     * XRC mode (after {@link #allocate}): the connection's XRC shared receive queue (its receives complete on the
     * receive completion queue), an XRC initiator that becomes {@link #queuePair}, in INIT, and a target queue pair
     * in INIT for the peer's initiator. On failure releases these and rethrows; the rest stays for {@link #release}.
     */
    void allocateXrc() throws IOException {
        try {
            final XrcDomain domain = context.xrcDomain();
            xrcQueue = domain.createSharedReceiveQueue(context.protectionDomain(), receiveCompletionQueue,
                receiveDepth(), 1);
            queuePair = context.protectionDomain().createQueuePair(new QueuePairInitAttributes()
                .type(QueuePairType.XRC_SEND).sendCompletionQueue(sendCompletionQueue)
                .maxSendWorkRequests(sendQueueSize).maxSendSge(2).maxInlineData(inlineSize).signalAll(false));
            queuePair.modify(QueuePairState.INIT, new QueuePairAttributes().accessFlags(0));
            xrcTarget = domain.createTargetQueuePair();
            xrcTarget.modify(QueuePairState.INIT, new QueuePairAttributes().accessFlags(AccessFlags.REMOTE_WRITE));
        } catch (final IOException | RuntimeException ex) {
            releaseXrc(null);
            throw ex;
        }
    }

    /**
     * XRC mode: the queue pairs are the endpoint's; make the reusable requests as {@link #bind} does.
     */
    void bindXrc() throws IOException {
        bind(queuePair);
        receiveRequest = xrcQueue.createReceiveWorkRequest();
    }

    /**
     * Close the target, the initiator and the XRC shared receive queue, in that order.
     *
     * @return {@code earlier}, or the first failure.
     */
    private RuntimeException releaseXrc(final RuntimeException earlier) {
        RuntimeException failure = earlier;
        failure = Closing.close(xrcTarget, failure);
        xrcTarget = null;
        if (xrcQueue != null) {
            failure = Closing.close(queuePair, failure);
            queuePair = null;
        }
        final XrcSharedReceiveQueue queue = xrcQueue;
        failure = Closing.close(queue == null || !peerLetGo ? queue : (AutoCloseable) queue::abandon, failure);
        xrcQueue = null;
        return failure;
    }

    /**
     * SRQ mode: reserve this connection's minimum credits and spare receives in the device's shared receive queue.
     */
    private void reserveShared(final RdmaDevice device) throws IOException {
        final SharedReceivePool pool = context.sharedReceivePool(sharedQueueSize, messageMode);
        final int count = minimumCredits + spareReceives;
        if (!pool.reserve(count)) {
            throw new IOException("the shared receive queue of device " + device.name() + " is full: all "
                + pool.capacity() + " receives are reserved by connections, this one needs " + count + " ("
                + StreamConfiguration.SHARED_RECEIVE_CREDITS_PROP_NAME + "=" + minimumCredits + " and "
                + spareReceives + " spares); raise " + StreamConfiguration.SHARED_RECEIVE_QUEUE_SIZE_PROP_NAME);
        }
        sharedPool = pool;
        sharedReserved = count;
    }

    /**
     * Message mode needs what rsockets takes for granted: two control slots for an SGE update, two send slots for
     * data, and inline SENDs of 4 bytes.
     */
    private void checkMessageMode(final RdmaDevice device) throws IOException {
        if (controlWindow < 2 || sendQueueSize - controlWindow < 2) {
            throw new IOException("message mode (device " + device.name() + " has no RDMA WRITE WITH IMMEDIATE) "
                + "needs two control and two data send slots: " + StreamConfiguration.CONTROL_WINDOW_PROP_NAME + "="
                + controlWindow + ", sendQueueSize=" + sendQueueSize);
        }
        if (device.attributes().maxInlineData() < MessageSendDescriptor.LENGTH) {
            throw new IOException("message mode needs inline SENDs of " + MessageSendDescriptor.LENGTH
                + " bytes; device " + device.name() + " offers maxInlineData=" + device.attributes().maxInlineData());
        }
    }

    /**
     * How to create the queue pair: sends complete on the send queue, receives on the receive queue.
     */
    QueuePairInitAttributes queuePairAttributes() {
        return new QueuePairInitAttributes().sharedReceiveQueue(sharedPool == null ? null : sharedPool.queue())
            .sendCompletionQueue(sendCompletionQueue).receiveCompletionQueue(receiveCompletionQueue)
            .maxSendWorkRequests(sendQueueSize).maxReceiveWorkRequests(receiveDepth())
            .maxSendSge(2).maxReceiveSge(1).maxInlineData(inlineSize).signalAll(false);
    }

    /**
     * Take the queue pair and make its reusable work requests.
     */
    void bind(final QueuePair pair) throws IOException {
        queuePair = pair;
        inlineSize = Math.min(inlineSize, pair.maxInlineData());
        if (messageMode && inlineSize < MessageSendDescriptor.LENGTH) {
            throw new IOException("message mode needs inline SENDs of " + MessageSendDescriptor.LENGTH
                + " bytes; queue pair " + pair.number() + " offers maxInlineData=" + pair.maxInlineData());
        }
        sendRequest = pair.createSendWorkRequest();
        receiveRequest = sharedPool != null ? sharedPool.createReceiveWorkRequest() : pair.createReceiveWorkRequest();
    }

    /**
     * Release every resource in reverse order of creation. Safe with any subset allocated; a failing step does not
     * stop the later ones, and the first failure is rethrown once all ran, with the others suppressed.
     */
    void release(final RsocketConnection owner) {
        RuntimeException failure = null;
        final XrcSharedReceiveQueue xrcClosed = xrcQueue;
        failure = releaseXrc(failure);
        failure = Closing.close(queuePair, failure);
        if (ownReceivesPosted > 0) {
            context.ownReceivesPosted(-ownReceivesPosted);
            ownReceivesPosted = 0;
        }
        // no peer access can reach the memory any more: before the queue pair is bound the peer was never told where
        // it is; in XRC mode the peer's requests reach it only through our XRC shared receive queue, closed above
        final boolean accessEnded = xrcClosed != null ? xrcClosed.peerAccessEnded()
            : queuePair == null || queuePair.peerAccessEnded();
        final boolean reusable = accessEnded && (failure == null || xrcClosed == null && queuePair == null);
        // a close that found a peer access that never ended (its process died in it): that access is in the memory
        // too, and waiting for it there again would only stall this release
        final boolean peerStuck = failure == null && !accessEnded;
        queuePair = null;
        if (memory != null) {
            try {
                if (peerStuck) {
                    memory.abandon();
                } else {
                    context.memoryPool().release(memory, reusable);
                }
            } catch (final RuntimeException ex) {
                failure = Closing.add(failure, ex);
            }
        }
        memory = null;
        messageRegion = null;
        targetRegion = null;
        receiveRegion = null;
        sendRegion = null;
        sendMemory = null;
        if (sharedPool != null) {
            // the queue pair is gone: no message can take one of the receives reserved for it any more (one that
            // failed to close may still take them: they stay reserved, so other connections' credits stay backed)
            if (failure == null) {
                sharedPool.giveBack(sharedReserved);
            }
            sharedReserved = 0;
            sharedPool = null;
        }
        failure = Closing.close(receiveCompletionQueue, failure);
        receiveCompletionQueue = null;
        failure = Closing.close(sendCompletionQueue, failure);
        sendCompletionQueue = null;
        if (token >= 0) {
            context.unregister(token, owner);
            token = -1;
        }
        if (failure != null) {
            throw failure;
        }
    }
}

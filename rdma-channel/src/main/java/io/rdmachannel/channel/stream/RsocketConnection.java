package io.rdmachannel.channel.stream;

import io.rdmachannel.channel.cm.CmEndpoint;
import io.rdmachannel.channel.spi.AccessFlags;
import io.rdmachannel.channel.spi.CompletionHandler;
import io.rdmachannel.channel.spi.CompletionOpcode;
import io.rdmachannel.channel.spi.CompletionQueue;
import io.rdmachannel.channel.spi.CompletionStatus;
import io.rdmachannel.channel.spi.DeviceCapability;
import io.rdmachannel.channel.spi.MemoryRegion;
import io.rdmachannel.channel.spi.QueuePair;
import io.rdmachannel.channel.spi.QueuePairInitAttributes;
import io.rdmachannel.channel.spi.QueuePairState;
import io.rdmachannel.channel.spi.RdmaDevice;
import io.rdmachannel.channel.spi.ReceiveWorkRequest;
import io.rdmachannel.channel.spi.SendFlags;
import io.rdmachannel.channel.spi.SendWorkRequest;
import io.rdmachannel.channel.spi.WorkCompletion;
import io.rdmachannel.channel.spi.WorkRequestOpcode;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.SocketAddress;
import java.net.SocketException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.ClosedChannelException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;

import org.agrona.BufferUtil;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * One rsockets stream connection over a queue pair: the protocol state machine of section 2 of the wire reference,
 * running unchanged on every provider.
 *
 * <p>Sender: each write is cut into chunks that never cross the peer's current target region, copied into the
 * send ring (or posted inline when small) and posted as RDMA WRITE WITH IMMEDIATE (op DATA, operand the length)
 * into the region's next bytes, gated by message credits ({@code sseqNo != sseqComp}), free send slots and ring
 * space. Receiver: DATA completions queue their lengths; reads copy from the receive ring in order; consumed
 * messages and bytes are granted back with SGL messages (a new ring half, or credits only). Every value the peer
 * sends is checked: a violation fails the connection with a {@link ProtocolException}, and nothing is ever written
 * outside what the peer advertised.
 *
 * <p>Message mode ({@code RS_OPT_MSG_SEND}, section 1.9): a device without RDMA WRITE WITH IMMEDIATE (iWARP) gets
 * the same messages another way, chosen locally from the device as rsockets chooses it from the transport type (both
 * ends of a connection see the same transport). A message with payload (DATA, an SGE update) is a plain RDMA WRITE
 * followed by an inline SEND whose 4-byte payload is the message in our byte order ({@link MessageSendDescriptor}),
 * two send slots of its class; a message without payload (credits only, SHUTDOWN, DISCONNECT) is that SEND alone.
 * Each receive is posted with a 4-byte buffer of its own, and the received word is checked exactly like an
 * immediate. The inline size is raised to at least 4, as rsockets does since v51; the connection data is the same
 * as on IB/RoCE (rsockets changes nothing there; its active side asks for initiator depth 1, which is the connection
 * manager's business). {@link #postMessage} is the one place that knows how a message travels.
 *
 * <p>The active side sends first (iWARP's rule, rdma_connect(3): before the active side's first message, an MPA
 * responder may put nothing on the wire). rsockets does not enforce it: its passive side may send a credit update
 * before the active side said anything. Here, in message mode, the passive side posts nothing at all, no credit
 * grant, data, control or keepalive, until its first receive completed; writes wait (the connection is not writable)
 * and a SHUTDOWN or DISCONNECT is held back until then. The active side always sends at once when established, its
 * grant of the second ring half, so the wait is one message's flight; the passive side arms its completion queue for
 * that message, and its signal has the transport's timer thread poll it and grant back, so the peer gets the whole
 * ring without waiting for the application, as on IB/RoCE. Against a C active side, which
 * sends its grant on its first rsend, rrecv or rpoll, the passive side waits until then. IB/RoCE has no such rule
 * and keeps its timing: the passive side grants when established.
 *
 * <p>One lock guards the protocol state; completions are processed by whichever thread reads, writes or asks for
 * readiness, so the low-latency path has no thread hop. Completion events (from the device's poller thread, or
 * straight from the signalling thread where the provider dispatches directly) are only reported to the observer.
 */
final class RsocketConnection implements StreamConnection, CmEndpoint {
    static final int MAX_INLINE_STAGE = StreamOptions.MAX_INLINE;
    static final long CLOSE_TIMEOUT_NANOS = TimeUnit.SECONDS.toNanos(2);
    static final long FIRST_MESSAGE_LOCK_NANOS = TimeUnit.MILLISECONDS.toNanos(10);

    private static final int KIND_DATA = 1;
    private static final int KIND_DATA_INLINE = 2;
    private static final int KIND_CONTROL = 3;
    private static final int KIND_DATA_ZERO_COPY = 4;
    private static final int PENDING_SHUTDOWN = 1;
    private static final int PENDING_DISCONNECT = 2;

    private static final int PHASE_PENDING = 0;
    private static final int PHASE_ESTABLISHED = 1;
    private static final int PHASE_FAILED = 2;
    private static final int PHASE_CLOSED = 3;

    private final RsocketTransport transport;
    private final StreamOptions options;
    private final RsocketListener listener;
    private final ReentrantLock lock = new ReentrantLock();
    private final CompletionHandler completionHandler = this::onCompletion;
    private final int controlWindow;
    private final int targetSglEntries;
    private final int maxTransfer;
    private final int startTransfer;
    private final int sendLowWater;
    private final int spareReceives;
    private final int sendQueueSize;
    private final int receiveQueueSize;
    private final int sendBufferSize;
    private final int receiveBufferSize;
    private final int half;
    private final boolean passive;
    private volatile ReadinessObserver observer;
    private volatile boolean armed;
    private volatile int phase = PHASE_PENDING;
    private volatile IOException failure;
    private SocketAddress localAddress;
    private SocketAddress remoteAddress;
    private ScheduledFuture<?> keepAliveProbe;
    private long keepAlivesSent;

    // resources, released in reverse order by release()
    private DeviceContext context;
    private int token = -1;
    private CompletionQueue completionQueue;
    private Arena sendArena;
    private MemoryRegion sendRegion;
    private MemoryRegion receiveRegion;
    private MemoryRegion targetRegion;
    private QueuePair queuePair;
    private SendWorkRequest send;
    private ReceiveWorkRequest receive;
    private ByteBuffer sendView;
    private ByteBuffer receiveView;
    private UnsafeBuffer targetView;
    private UnsafeBuffer controlView;
    private int inlineSize;
    private boolean synchronousTransfer;
    private boolean messageMode;
    private int slotsPerMessage = 1;
    private MemoryRegion messageRegion;
    private UnsafeBuffer messageView;
    private UnsafeBuffer messageStageView;

    // peer
    private PeerConnectionData peer;
    private int remoteSge = 1;

    // sender, guarded by lock
    private int sendSequence;
    private int sendLimit;
    private int sendSlots;
    private int sendBufferFree;
    private int sendBufferHead;
    private int zeroCopyPending;
    private long zeroCopyBytes;
    private int controlSlots;
    private int controlSequence;
    private int pendingControl;
    private boolean disconnectPosted;
    private boolean disconnectCompleted;
    private int targetSge;
    private final long[] targetAddress;
    private final int[] targetKey;
    private final int[] targetLength;

    // receiver, guarded by lock
    private int receiveSequence;
    private int receivedMessages;
    private int grantedLimit;
    private int receiveThreshold;
    private long receiveBufferFree;
    private int receiveFreeOffset;
    private int receiveOffset;
    private long advertisedBytes;
    private long receivedBytes;
    private int[] messages;
    private int messageHead;
    private int messageCount;

    // state, guarded by lock
    private boolean connected;
    private boolean outputShutdown;
    private boolean inputShutdown;
    private boolean peerShutdown;
    private boolean peerDisconnected;
    private boolean closing;
    private volatile boolean awaitingFirstMessage;
    private IOException error;
    private CompletionStatus lastStatus;

    RsocketConnection(final RsocketTransport transport, final StreamOptions options, final RsocketListener listener) {
        this.transport = transport;
        this.options = options;
        this.listener = listener;
        final StreamConfiguration configuration = transport.configuration();
        this.controlWindow = configuration.controlWindow();
        this.targetSglEntries = configuration.targetSglEntries();
        this.maxTransfer = configuration.maxTransferLength();
        this.startTransfer = configuration.transferStartLength();
        this.sendLowWater = configuration.sendLowWaterMark();
        this.spareReceives = controlWindow;
        this.controlSlots = controlWindow;
        this.targetAddress = new long[targetSglEntries];
        this.targetKey = new int[targetSglEntries];
        this.targetLength = new int[targetSglEntries];
        this.sendQueueSize = options.sendQueueSize();
        this.receiveQueueSize = options.receiveQueueSize();
        this.sendBufferSize = options.sendBufferSize();
        this.receiveBufferSize = options.receiveBufferSize();
        this.half = receiveBufferSize / 2;
        this.passive = listener != null;
    }

    // ----- establishment (CM event thread) -----

    @Override
    public QueuePairSetup prepare(final RdmaDevice device) throws IOException {
        messageMode = !device.attributes().has(DeviceCapability.RDMA_WRITE_WITH_IMMEDIATE);
        if (messageMode) {
            checkMessageMode(device);
            slotsPerMessage = 2;
        }
        context = transport.context(device);
        token = context.register(this);
        try {
            completionQueue = device.createCompletionQueue(sendQueueSize + receiveQueueSize + spareReceives,
                context.readinessSource(), token);
            inlineSize = Math.min(options.inlineSize(), device.attributes().maxInlineData());
            synchronousTransfer = device.attributes().has(DeviceCapability.SYNCHRONOUS_TRANSFER);
            if (messageMode) {
                inlineSize = Math.max(inlineSize, MessageSendDescriptor.LENGTH);
            }
            sendArena = Arena.ofShared();
            final MemorySegment sendMemory = sendArena.allocate(sendBufferSize + MAX_INLINE_STAGE
                + controlWindow * SgeDescriptor.LENGTH, 4096);
            sendRegion = context.protectionDomain().register(sendMemory, 0);
            receiveRegion = context.protectionDomain().allocate(receiveBufferSize,
                AccessFlags.LOCAL_WRITE | AccessFlags.REMOTE_WRITE);
            targetRegion = context.protectionDomain().allocate(targetSglEntries * SgeDescriptor.LENGTH,
                AccessFlags.LOCAL_WRITE | AccessFlags.REMOTE_WRITE);
            if (messageMode) {
                messageRegion = context.protectionDomain().allocate(
                    MessageSendDescriptor.bufferOffset(receiveQueueSize + spareReceives), AccessFlags.LOCAL_WRITE);
                messageView = new UnsafeBuffer(messageRegion.segment().asByteBuffer());
            }
            sendView = sendMemory.asByteBuffer();
            receiveView = receiveRegion.segment().asByteBuffer();
            targetView = new UnsafeBuffer(targetRegion.segment().asByteBuffer());
            controlView = new UnsafeBuffer(sendView, sendBufferSize + MAX_INLINE_STAGE,
                controlWindow * SgeDescriptor.LENGTH);
            if (messageMode) {
                // the inline stage: an inline post copies its payload before it returns, so a message may reuse it
                messageStageView = new UnsafeBuffer(sendView, sendBufferSize, MessageSendDescriptor.LENGTH);
            }
        } catch (final IOException | RuntimeException ex) {
            release();
            throw ex;
        }
        return new QueuePairSetup(context.protectionDomain(), new QueuePairInitAttributes()
            .sendCompletionQueue(completionQueue).receiveCompletionQueue(completionQueue)
            .maxSendWorkRequests(sendQueueSize).maxReceiveWorkRequests(receiveQueueSize + spareReceives)
            .maxSendSge(2).maxReceiveSge(1).maxInlineData(inlineSize).signalAll(true), AccessFlags.REMOTE_WRITE,
            transport.configuration().retryCount(), transport.configuration().rnrRetryCount());
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

    @Override
    public ByteBuffer bind(final QueuePair pair, final ByteBuffer peerPrivateData) throws IOException {
        this.queuePair = pair;
        inlineSize = Math.min(inlineSize, pair.maxInlineData());
        if (messageMode && inlineSize < MessageSendDescriptor.LENGTH) {
            throw new IOException("message mode needs inline SENDs of " + MessageSendDescriptor.LENGTH
                + " bytes; queue pair " + pair.number() + " offers maxInlineData=" + pair.maxInlineData());
        }
        send = pair.createSendWorkRequest();
        receive = pair.createReceiveWorkRequest();
        for (int i = 0; i < receiveQueueSize + spareReceives; i++) {
            postReceive(i);
        }
        if (peerPrivateData != null) {
            peer = validate(peerPrivateData);
        }
        final ByteBuffer data = ByteBuffer.allocate(ConnectionDataDescriptor.LENGTH);
        new ConnectionDataFlyweight().wrap(new UnsafeBuffer(data), 0)
            .header(ConnectionDataDescriptor.localFlags(ByteOrder.nativeOrder()), receiveQueueSize)
            .iomapEntries(0)
            .targetSgl(targetRegion.address(), targetRegion.remoteKey(), targetSglEntries)
            .dataBuffer(receiveRegion.address(), receiveRegion.remoteKey(), half);
        return data;
    }

    private PeerConnectionData validate(final ByteBuffer privateData) throws ProtocolException {
        final ByteBuffer copy = ByteBuffer.allocate(privateData.remaining()).put(privateData.duplicate()).flip();
        return transport.configuration().newConnectionDataValidator().validate(new UnsafeBuffer(copy),
            ConnectionDataDescriptor.PRIVATE_DATA_OFFSET, copy.remaining());
    }

    @Override
    public void established(final ByteBuffer peerPrivateData, final SocketAddress local, final SocketAddress remote)
        throws IOException {
        lock.lock();
        try {
            if (peer == null) {
                peer = validate(peerPrivateData);
            }
            localAddress = local;
            remoteAddress = remote;
            sendLimit = peer.credits() & CreditSequence.MASK;
            sendSlots = sendQueueSize - controlWindow;
            sendBufferFree = sendBufferSize;
            targetAddress[0] = peer.dataBufferAddress();
            targetKey[0] = peer.dataBufferKey();
            targetLength[0] = peer.dataBufferLength();
            receiveThreshold = receiveQueueSize / 2;
            grantedLimit = receiveQueueSize & CreditSequence.MASK;
            receiveBufferFree = half;
            receiveFreeOffset = half;
            advertisedBytes = half;
            messages = new int[receiveQueueSize + 1];
            connected = true;
            awaitingFirstMessage = messageMode && passive;
            giveCredits();
            if (awaitingFirstMessage) {
                armForFirstMessage();
            }
            if (options.keepAlive()) {
                keepAliveProbe = transport.scheduleKeepAlive(this::sendKeepAlive);
            }
        } finally {
            lock.unlock();
        }
        phase = PHASE_ESTABLISHED;
        if (listener != null) {
            listener.onEstablished(this);
        }
        notifyObserver();
    }

    @Override
    public void failed(final IOException cause) {
        // release first: whoever sees the failure may close the transport and expects nothing left open
        lock.lock();
        try {
            release();
        } finally {
            lock.unlock();
        }
        failure = cause;
        phase = PHASE_FAILED;
        if (listener != null) {
            listener.onFailed(this);
        }
        notifyObserver();
    }

    boolean isEstablished() {
        return phase == PHASE_ESTABLISHED;
    }

    boolean isFailed() {
        return phase == PHASE_FAILED;
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
        lock.lock();
        try {
            return queuePair == null ? null : queuePair.state();
        } finally {
            lock.unlock();
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
        armed = true;
        final CompletionQueue queue = completionQueue;
        if (queue != null && phase == PHASE_ESTABLISHED) {
            try {
                queue.requestNotification();
            } catch (final IllegalStateException ex) {
                notifyObserver();
            }
        } else if (phase != PHASE_PENDING) {
            notifyObserver();
        }
    }

    /**
     * This connection's completion queue signalled. Called on the device's poller thread, or, where the readiness
     * source dispatches directly, on whatever thread raised the signal (which may hold another connection's lock):
     * so the first message of message mode is taken on the transport's timer thread, not here.
     */
    void onCompletionEvent() {
        if (awaitingFirstMessage) {
            transport.runOnTimer(this::takeFirstMessage);
        }
        notifyObserver();
    }

    /**
     * The passive side in message mode: have the active side's first message signal, so the timer thread grants
     * credits at once ({@link #takeFirstMessage()}), so the peer gets the whole ring right after establishment as on
     * IB/RoCE, not only once the application first reads, writes or selects. Called under the lock.
     */
    private void armForFirstMessage() {
        try {
            completionQueue.requestNotification();
        } catch (final IllegalStateException ex) {
            // no readiness source: the application's next call polls
            return;
        }
        // a completion that arrived before arming signals nothing
        pollCompletions();
    }

    /**
     * On the transport's timer thread: poll the first message and grant. It waits for the lock a short while at most
     * (its holders never block while holding it; the CM thread may still be finishing {@link #established}); if it
     * stays busy, its holder's next call polls the message.
     */
    private void takeFirstMessage() {
        try {
            if (!lock.tryLock(FIRST_MESSAGE_LOCK_NANOS, TimeUnit.NANOSECONDS)) {
                return;
            }
        } catch (final InterruptedException ex) {
            Thread.currentThread().interrupt();
            return;
        }
        try {
            if (connected && completionQueue != null && awaitingFirstMessage && error == null) {
                pollCompletions();
                if (awaitingFirstMessage && error == null) {
                    armForFirstMessage();
                }
            }
        } finally {
            lock.unlock();
        }
    }

    private void notifyObserver() {
        if (armed) {
            armed = false;
            final ReadinessObserver current = observer;
            if (current != null) {
                current.onReadiness();
            }
        }
    }

    @Override
    public int readyOps() {
        lock.lock();
        try {
            if (phase != PHASE_ESTABLISHED) {
                return StreamReadiness.READ | StreamReadiness.WRITE;
            }
            pollCompletions();
            int ops = 0;
            if (messageCount > 0 || inputShutdown || peerShutdown || peerDisconnected || error != null) {
                ops |= StreamReadiness.READ;
            }
            if (canSend() || outputShutdown || peerDisconnected || error != null) {
                ops |= StreamReadiness.WRITE;
            }
            return ops;
        } finally {
            lock.unlock();
        }
    }

    @Override
    public int spin(final long nanos, final int interest) {
        final long deadline = System.nanoTime() + nanos;
        int ops;
        do {
            ops = readyOps();
            if ((ops & interest) != 0) {
                return ops;
            }
            Thread.onSpinWait();
        } while (System.nanoTime() - deadline < 0);
        return ops;
    }

    // ----- completions -----

    private void pollCompletions() {
        if (completionQueue == null) {
            return;
        }
        while (completionQueue.poll(completionHandler, 32) > 0) {
            // each completion was handled by onCompletion
        }
        flushPendingControl();
        giveCredits();
    }

    private void onCompletion(final WorkCompletion completion) {
        lastStatus = completion.status();
        final CompletionOpcode opcode = completion.opcode();
        if (opcode == CompletionOpcode.RECV || opcode == CompletionOpcode.RECV_RDMA_WITH_IMM) {
            onReceive(completion);
        } else {
            onSendCompleted(completion);
        }
    }

    private void onSendCompleted(final WorkCompletion completion) {
        final long id = completion.workRequestId();
        final int kind = (int) (id >>> 32);
        final int value = (int) id;
        switch (kind) {
            case KIND_DATA -> {
                sendSlots++;
                sendBufferFree += value;
            }
            case KIND_DATA_INLINE -> sendSlots++;
            case KIND_DATA_ZERO_COPY -> {
                sendSlots++;
                zeroCopyPending--;
            }
            case KIND_CONTROL -> {
                controlSlots++;
                if (value == ImmediateData.CTRL_DISCONNECT) {
                    disconnectCompleted = true;
                }
            }
            default -> {
                // a completion we never asked for
            }
        }
        if (completion.status() != CompletionStatus.SUCCESS) {
            failIfConnected("send completed with " + completion.status().description());
        }
    }

    private void onReceive(final WorkCompletion completion) {
        if (completion.status() != CompletionStatus.SUCCESS) {
            failIfConnected("receive completed with " + completion.status().description());
            return;
        }
        if (error != null) {
            // polled in the same batch as the failure: nothing the peer sent after it is trusted
            return;
        }
        try {
            final int immediate = messageMode ? sentMessage(completion) : immediateMessage(completion);
            awaitingFirstMessage = false;
            switch (ImmediateData.checkInbound(immediate)) {
                case ImmediateData.DATA -> onData(ImmediateData.operand(immediate));
                case ImmediateData.SGL -> onCreditLimit(ImmediateData.creditLimit(immediate));
                case ImmediateData.CTRL -> onControl(ImmediateData.operand(immediate));
                default -> {
                    // IOMAP_SGL: we advertise no iomap entries; the message only takes a receive
                }
            }
        } catch (final ProtocolException ex) {
            fail(ex);
            return;
        }
        if (!closing && error == null) {
            postReceive(completion.workRequestId());
        }
    }

    private static int immediateMessage(final WorkCompletion completion) throws ProtocolException {
        if (!completion.hasImmediate()) {
            throw new ProtocolException("a message without immediate data arrived");
        }
        return completion.immediate();
    }

    /**
     * The message a SEND carried in message mode, read from the receive's own 4-byte buffer in the peer's order.
     */
    private int sentMessage(final WorkCompletion completion) throws ProtocolException {
        if (completion.hasImmediate()) {
            throw new ProtocolException("a message with immediate data arrived in message mode: immediate=0x"
                + Integer.toHexString(completion.immediate()));
        }
        MessageSendDescriptor.checkLength(completion.byteLength());
        return MessageSendDescriptor.message(messageView,
            MessageSendDescriptor.bufferOffset((int) completion.workRequestId()), peer.byteOrder());
    }

    /**
     * Post receive {@code id}: with no buffer on IB/RoCE, with its own 4-byte message buffer in message mode.
     */
    private void postReceive(final long id) {
        receive.reset().id(id);
        if (messageMode) {
            receive.sge(0, messageRegion.address() + MessageSendDescriptor.bufferOffset((int) id),
                MessageSendDescriptor.LENGTH, messageRegion.localKey());
        }
        queuePair.postReceive(receive);
    }

    private void onData(final int length) throws ProtocolException {
        if (receivedBytes + length > advertisedBytes) {
            throw new ProtocolException("the peer wrote beyond the receive space granted: receivedBytes="
                + receivedBytes + ", length=" + length + ", advertisedBytes=" + advertisedBytes);
        }
        // we advertise the ring in halves, consecutive in stream order; a sender never crosses one's end
        final long regionEnd = (receivedBytes / half + 1) * half;
        if (receivedBytes + length > regionEnd) {
            throw new ProtocolException("the peer wrote across the end of a receive region: receivedBytes="
                + receivedBytes + ", length=" + length + ", regionEnd=" + regionEnd);
        }
        if (!CreditSequence.hasCredit(receivedMessages, grantedLimit)) {
            throw new ProtocolException("the peer sent more messages than the credits granted: received="
                + receivedMessages + ", creditLimit=" + grantedLimit);
        }
        receivedMessages = CreditSequence.next(receivedMessages);
        receivedBytes += length;
        if (inputShutdown) {
            consume(length, true);
            return;
        }
        messages[(messageHead + messageCount) % messages.length] = length;
        messageCount++;
    }

    private void onCreditLimit(final int limit) throws ProtocolException {
        sendLimit = CreditSequence.checkCreditLimit(sendSequence, sendLimit, limit, peer.credits());
        adoptTargetRegions();
    }

    /**
     * Take over target regions the peer wrote into our target SGL. The data of an SGL message is placed before its
     * completion, so a slot read here is complete; a consumed slot's length was zeroed when it ran out.
     */
    private void adoptTargetRegions() throws ProtocolException {
        for (int i = 0; i < targetSglEntries; i++) {
            final int offset = SgeDescriptor.entryOffset(i);
            final int length = targetView.getInt(offset + SgeDescriptor.LENGTH_OFFSET, ByteOrder.nativeOrder());
            if (targetLength[i] == 0 && length != 0) {
                final long address = targetView.getLong(offset + SgeDescriptor.ADDRESS_OFFSET, ByteOrder.nativeOrder());
                if (length < 0 || length > transport.configuration().peerMaxDataBufferLength()
                    || Long.compareUnsigned(address + length, address) <= 0) {
                    throw new ProtocolException("the peer advertised an impossible target region: address=0x"
                        + Long.toHexString(address) + ", length=" + Integer.toUnsignedString(length));
                }
                targetAddress[i] = address;
                targetKey[i] = targetView.getInt(offset + SgeDescriptor.KEY_OFFSET, ByteOrder.nativeOrder());
                targetLength[i] = length;
                targetView.putInt(offset + SgeDescriptor.LENGTH_OFFSET, 0, ByteOrder.nativeOrder());
            }
        }
    }

    private void onControl(final int control) {
        switch (control) {
            case ImmediateData.CTRL_DISCONNECT -> peerDisconnected = true;
            case ImmediateData.CTRL_SHUTDOWN -> peerShutdown = true;
            default -> {
                // KEEPALIVE carries nothing
            }
        }
    }

    private void failIfConnected(final String what) {
        if (connected && !peerDisconnected && !closing && error == null) {
            error = new SocketException("Connection reset");
            error.addSuppressed(new IOException(what + " on queue pair " + queuePair.number()));
        }
    }

    private void fail(final IOException cause) {
        if (error == null) {
            final SocketException reset = new SocketException("Connection reset");
            reset.initCause(cause);
            error = reset;
        }
        if (queuePair != null && queuePair.state() != QueuePairState.ERROR) {
            try {
                queuePair.modify(QueuePairState.ERROR, null);
            } catch (final IOException | RuntimeException ignore) {
                // the queue pair is failing anyway
            }
        }
    }

    // ----- credits and control messages -----

    private void giveCredits() {
        if (!connected || peerDisconnected || error != null || closing || controlSlots < slotsPerMessage
            || awaitingFirstMessage) {
            return;
        }
        if (receiveBufferFree >= half) {
            sendTargetRegion();
        } else if ((short) (receiveSequence - receiveThreshold) >= 0) {
            grantedLimit = CreditSequence.grantLimit(receiveSequence, receiveQueueSize);
            postControl(ImmediateData.sgl(grantedLimit), 0xFFFF);
            receiveThreshold = CreditSequence.add(receiveSequence, receiveQueueSize / 2);
        }
    }

    /**
     * Advertise the next half of the receive ring in the peer's next target SGL slot, with fresh credits.
     */
    private void sendTargetRegion() {
        final int stage = (controlSequence % controlWindow) * SgeDescriptor.LENGTH;
        final ByteOrder order = peer.byteOrder();
        controlView.putLong(stage + SgeDescriptor.ADDRESS_OFFSET, receiveRegion.address() + receiveFreeOffset, order);
        controlView.putInt(stage + SgeDescriptor.KEY_OFFSET, receiveRegion.remoteKey(), order);
        controlView.putInt(stage + SgeDescriptor.LENGTH_OFFSET, half, order);
        final long slotAddress = peer.targetSglAddress() + (long) remoteSge * SgeDescriptor.LENGTH;
        final long id = (long) KIND_CONTROL << 32 | 0xFFFF;
        send.reset().id(id)
            .flags(SendFlags.SIGNALED | (inlineSize >= SgeDescriptor.LENGTH ? SendFlags.INLINE : 0))
            .remote(slotAddress, peer.targetSglKey())
            .sge(0, sendRegion.address() + sendBufferSize + MAX_INLINE_STAGE + stage, SgeDescriptor.LENGTH,
                sendRegion.localKey());
        controlSlots -= postMessage(ImmediateData.sgl(CreditSequence.grantLimit(receiveSequence, receiveQueueSize)),
            id);
        grantedLimit = CreditSequence.grantLimit(receiveSequence, receiveQueueSize);
        controlSequence++;
        receiveFreeOffset = (receiveFreeOffset + half) % receiveBufferSize;
        remoteSge = (remoteSge + 1) % peer.targetSglEntries();
        receiveBufferFree -= half;
        advertisedBytes += half;
        receiveThreshold = CreditSequence.add(receiveSequence, receiveQueueSize / 2);
    }

    private void postControl(final int immediate, final int kindValue) {
        final long id = (long) KIND_CONTROL << 32 | (kindValue & 0xFFFFFFFFL);
        send.reset().id(id)
            .flags(SendFlags.SIGNALED)
            .remote(0, 0);
        controlSlots -= postMessage(immediate, id);
        controlSequence++;
    }

    /**
     * Post one rsockets message; {@link #send} holds the request as prepared by the caller (id, flags, the remote
     * memory and the payload's entries, none for a message without payload). On IB/RoCE it goes as it is, an RDMA
     * WRITE WITH IMMEDIATE carrying the message. In message mode the payload, if any, goes as a plain RDMA WRITE,
     * then the message as the 4-byte payload of an inline SEND with id {@code sendId}; RC executes the two in order,
     * so the peer sees the message only after the payload was placed.
     *
     * @param message the message ({@link ImmediateData}).
     * @param sendId  the id of the SEND in message mode; its completion frees one slot of the message's class.
     * @return the send-queue slots used: 1, or 2 for a message with payload in message mode.
     */
    private int postMessage(final int message, final long sendId) {
        if (!messageMode) {
            queuePair.postSend(send.opcode(WorkRequestOpcode.RDMA_WRITE_WITH_IMM).immediate(message));
            return 1;
        }
        int slots = 0;
        if (send.sgeCount() > 0) {
            queuePair.postSend(send.opcode(WorkRequestOpcode.RDMA_WRITE));
            slots++;
        }
        MessageSendDescriptor.message(messageStageView, 0, message, ByteOrder.nativeOrder());
        send.reset().id(sendId).opcode(WorkRequestOpcode.SEND).flags(SendFlags.SIGNALED | SendFlags.INLINE)
            .sge(0, sendRegion.address() + sendBufferSize, MessageSendDescriptor.LENGTH, sendRegion.localKey());
        queuePair.postSend(send);
        return slots + 1;
    }

    /**
     * The keepalive probe, as rsockets sends it: a zero-length RDMA WRITE without immediate to address 0 and rkey 0,
     * which consumes nothing at the peer and completes only if the peer's queue pair still answers. A failed
     * completion fails the connection ("Connection reset").
     */
    private void sendKeepAlive() {
        lock.lock();
        try {
            if (!connected || closing || error != null || peerDisconnected || controlSlots == 0
                || awaitingFirstMessage) {
                return;
            }
            send.reset().id((long) KIND_CONTROL << 32 | ImmediateData.CTRL_KEEPALIVE)
                .opcode(WorkRequestOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED).remote(0, 0);
            queuePair.postSend(send);
            controlSlots--;
            controlSequence++;
            keepAlivesSent++;
            pollCompletions();
        } finally {
            lock.unlock();
        }
        notifyObserver();
    }

    private void flushPendingControl() {
        while (pendingControl != 0 && controlSlots > 0 && connected && error == null && !awaitingFirstMessage) {
            if ((pendingControl & PENDING_SHUTDOWN) != 0) {
                pendingControl &= ~PENDING_SHUTDOWN;
                postControl(ImmediateData.ctrl(ImmediateData.CTRL_SHUTDOWN), ImmediateData.CTRL_SHUTDOWN);
            } else {
                pendingControl &= ~PENDING_DISCONNECT;
                disconnectPosted = true;
                postControl(ImmediateData.ctrl(ImmediateData.CTRL_DISCONNECT), ImmediateData.CTRL_DISCONNECT);
            }
        }
    }

    // ----- reading -----

    @Override
    public int read(final ByteBuffer dst) throws IOException {
        lock.lock();
        try {
            ensureEstablished();
            pollCompletions();
            if (inputShutdown) {
                return -1;
            }
            final int count = take(dst);
            if (count > 0) {
                giveCredits();
                return count;
            }
            return endOfInput();
        } finally {
            lock.unlock();
        }
    }

    @Override
    public long read(final ByteBuffer[] dsts, final int offset, final int length) throws IOException {
        lock.lock();
        try {
            ensureEstablished();
            pollCompletions();
            if (inputShutdown) {
                return -1;
            }
            long total = 0;
            for (int i = offset; i < offset + length && messageCount > 0; i++) {
                total += take(dsts[i]);
            }
            if (total > 0) {
                giveCredits();
                return total;
            }
            return endOfInput();
        } finally {
            lock.unlock();
        }
    }

    private int endOfInput() throws IOException {
        if (peerShutdown || peerDisconnected) {
            return -1;
        }
        if (error != null) {
            throw error;
        }
        return 0;
    }

    /**
     * Copy queued message bytes into {@code dst}, consuming messages in order.
     */
    private int take(final ByteBuffer dst) {
        int total = 0;
        while (dst.hasRemaining() && messageCount > 0) {
            final int length = messages[messageHead];
            final int count = Math.min(length, dst.remaining());
            final int first = Math.min(count, receiveBufferSize - receiveOffset);
            dst.put(dst.position(), receiveView, receiveOffset, first);
            if (count > first) {
                dst.put(dst.position() + first, receiveView, 0, count - first);
            }
            dst.position(dst.position() + count);
            total += count;
            if (count == length) {
                messageHead = (messageHead + 1) % messages.length;
                messageCount--;
                consume(count, true);
            } else {
                messages[messageHead] = length - count;
                consume(count, false);
            }
        }
        return total;
    }

    private void consume(final int bytes, final boolean messageDone) {
        receiveOffset = (receiveOffset + bytes) % receiveBufferSize;
        receiveBufferFree += bytes;
        if (messageDone) {
            receiveSequence = CreditSequence.next(receiveSequence);
        }
    }

    // ----- writing -----

    @Override
    public int write(final ByteBuffer src) throws IOException {
        lock.lock();
        try {
            ensureWritable();
            pollCompletions();
            ensureWritable();
            final long count = put(src);
            awaitZeroCopySent();
            return (int) count;
        } finally {
            lock.unlock();
        }
    }

    @Override
    public long write(final ByteBuffer[] srcs, final int offset, final int length) throws IOException {
        lock.lock();
        try {
            ensureWritable();
            pollCompletions();
            ensureWritable();
            long total = 0;
            for (int i = offset; i < offset + length; i++) {
                final long count = put(srcs[i]);
                total += count;
                if (srcs[i].hasRemaining()) {
                    break;
                }
            }
            awaitZeroCopySent();
            return total;
        } finally {
            lock.unlock();
        }
    }

    private void ensureWritable() throws IOException {
        ensureEstablished();
        if (outputShutdown) {
            throw new ClosedChannelException();
        }
        if (error != null) {
            throw error;
        }
        if (peerDisconnected) {
            throw new SocketException("Broken pipe");
        }
    }

    private boolean canSend() {
        return connected && error == null && !peerDisconnected && !outputShutdown && sendSlots >= slotsPerMessage
            && CreditSequence.hasCredit(sendSequence, sendLimit) && targetLength[targetSge] != 0
            && !awaitingFirstMessage;
    }

    /**
     * Post as much of {@code src} as credits, slots, ring space and the target region allow. Bytes of a
     * {@link io.rdmachannel.channel.RegisteredBuffers registered buffer} are sent straight from it (no ring space
     * needed; the caller waits for those sends before it returns); other bytes are copied into the send ring, or
     * posted inline when small.
     */
    private long put(final ByteBuffer src) {
        long total = 0;
        final MemoryRegion registered = src.isDirect() && src.remaining() > inlineSize
            ? context.registeredBuffer(BufferUtil.address(src) + src.position(), src.remaining()) : null;
        // rsockets starts small so the copy into the ring overlaps the adapter's transfer of the chunk before; with
        // nothing to copy, or no adapter working alongside, whole chunks are cheaper
        int transfer = registered != null || synchronousTransfer ? maxTransfer : startTransfer;
        while (src.hasRemaining() && canSend()) {
            int chunk = Math.min(Math.min(src.remaining(), transfer), targetLength[targetSge]);
            if (chunk <= inlineSize) {
                final int stage = sendBufferSize;
                sendView.put(stage, src, src.position(), chunk);
                postData(chunk, SendFlags.INLINE, sendRegion.address() + stage, 0, 0, KIND_DATA_INLINE);
            } else if (registered != null) {
                postData(chunk, 0, BufferUtil.address(src) + src.position(), chunk, 0, KIND_DATA_ZERO_COPY,
                    registered.localKey());
                zeroCopyPending++;
                zeroCopyBytes += chunk;
            } else {
                if (sendBufferFree < Math.min(sendLowWater, sendBufferSize)) {
                    break;
                }
                chunk = Math.min(chunk, sendBufferFree);
                final int first = Math.min(chunk, sendBufferSize - sendBufferHead);
                sendView.put(sendBufferHead, src, src.position(), first);
                if (chunk > first) {
                    sendView.put(0, src, src.position() + first, chunk - first);
                }
                postData(chunk, 0, sendRegion.address() + sendBufferHead, first, chunk - first, KIND_DATA);
                sendBufferHead = (sendBufferHead + chunk) % sendBufferSize;
                sendBufferFree -= chunk;
            }
            src.position(src.position() + chunk);
            total += chunk;
            transfer = Math.min(transfer << 1, maxTransfer);
        }
        return total;
    }

    /**
     * Poll until every send posted straight from a registered buffer has completed, so the caller may reuse the
     * buffer when the write returns. A send completes once the peer's adapter has the bytes (or the queue pair
     * failed and flushed it); the peer's threads play no part, so this ends within the transfer time.
     */
    private void awaitZeroCopySent() {
        while (zeroCopyPending > 0 && completionQueue != null) {
            if (completionQueue.poll(completionHandler, 32) == 0) {
                Thread.onSpinWait();
            }
        }
    }

    private void postData(final int length, final int flags, final long address, final int first,
        final int second, final int kind) {
        postData(length, flags, address, first, second, kind, sendRegion.localKey());
    }

    private void postData(final int length, final int flags, final long address, final int first,
        final int second, final int kind, final int localKey) {
        final int slot = targetSge;
        send.reset().id((long) kind << 32 | length)
            .flags(SendFlags.SIGNALED | flags)
            .remote(targetAddress[slot], targetKey[slot]);
        if (kind == KIND_DATA_INLINE) {
            send.sge(0, address, length, localKey);
        } else {
            send.sge(0, address, first, localKey);
            if (second > 0) {
                send.sge(1, sendRegion.address(), second, sendRegion.localKey());
            }
        }
        sendSlots -= postMessage(ImmediateData.data(length), (long) KIND_DATA_INLINE << 32);
        sendSequence = CreditSequence.next(sendSequence);
        targetAddress[slot] += length;
        targetLength[slot] -= length;
        if (targetLength[slot] == 0) {
            targetSge = (slot + 1) % targetSglEntries;
        }
    }

    // ----- shutdown and close -----

    @Override
    public void shutdownOutput() throws IOException {
        lock.lock();
        try {
            ensureEstablished();
            if (outputShutdown) {
                return;
            }
            outputShutdown = true;
            if (connected && error == null && !peerDisconnected) {
                pendingControl |= inputShutdown ? PENDING_DISCONNECT : PENDING_SHUTDOWN;
                pollCompletions();
            }
        } finally {
            lock.unlock();
        }
        notifyObserver();
    }

    @Override
    public void shutdownInput() {
        lock.lock();
        try {
            if (inputShutdown || phase != PHASE_ESTABLISHED) {
                inputShutdown = true;
                return;
            }
            inputShutdown = true;
            while (messageCount > 0) {
                final int length = messages[messageHead];
                messageHead = (messageHead + 1) % messages.length;
                messageCount--;
                consume(length, true);
            }
            if (outputShutdown && connected && error == null && !peerDisconnected) {
                pendingControl |= PENDING_DISCONNECT;
            }
            pollCompletions();
        } finally {
            lock.unlock();
        }
        notifyObserver();
    }

    @Override
    public boolean isOutputShutdown() {
        return outputShutdown;
    }

    @Override
    public boolean isInputShutdown() {
        return inputShutdown;
    }

    @Override
    public void close() {
        lock.lock();
        try {
            if (phase == PHASE_CLOSED) {
                return;
            }
            if (connected && error == null && !peerDisconnected && !closing) {
                pendingControl |= PENDING_DISCONNECT;
                pollCompletions();
            }
            closing = true;
        } finally {
            lock.unlock();
        }
        awaitDisconnectSent();
        finishClose();
    }

    /**
     * Wait (bounded) until the DISCONNECT this side queued has completed, so everything written before it was
     * delivered before the queue pair is destroyed.
     */
    private void awaitDisconnectSent() {
        final long deadline = System.nanoTime() + CLOSE_TIMEOUT_NANOS;
        while (System.nanoTime() - deadline < 0) {
            lock.lock();
            try {
                if (completionQueue == null || error != null || disconnectCompleted
                    || !disconnectPosted && (pendingControl & PENDING_DISCONNECT) == 0) {
                    return;
                }
                while (completionQueue.poll(completionHandler, 32) > 0) {
                    // each completion was handled by onCompletion
                }
                flushPendingControl();
            } finally {
                lock.unlock();
            }
            LockSupport.parkNanos(20_000);
        }
    }

    @Override
    public void abort() {
        lock.lock();
        try {
            closing = true;
        } finally {
            lock.unlock();
        }
        finishClose();
    }

    private void finishClose() {
        lock.lock();
        try {
            if (phase == PHASE_CLOSED) {
                return;
            }
            phase = PHASE_CLOSED;
            connected = false;
            release();
        } finally {
            lock.unlock();
        }
        notifyObserver();
    }

    /**
     * Release every resource in reverse order of creation. Safe to call with any subset allocated.
     */
    private void release() {
        if (keepAliveProbe != null) {
            keepAliveProbe.cancel(false);
            keepAliveProbe = null;
        }
        if (queuePair != null) {
            queuePair.close();
            queuePair = null;
        }
        if (messageRegion != null) {
            messageRegion.close();
            messageRegion = null;
        }
        if (targetRegion != null) {
            targetRegion.close();
            targetRegion = null;
        }
        if (receiveRegion != null) {
            receiveRegion.close();
            receiveRegion = null;
        }
        if (sendRegion != null) {
            sendRegion.close();
            sendRegion = null;
        }
        if (sendArena != null) {
            sendArena.close();
            sendArena = null;
        }
        if (completionQueue != null) {
            completionQueue.close();
            completionQueue = null;
        }
        if (token >= 0) {
            context.unregister(token, this);
            token = -1;
        }
    }

    private void ensureEstablished() throws IOException {
        if (phase == PHASE_CLOSED) {
            throw new ClosedChannelException();
        }
        if (phase != PHASE_ESTABLISHED) {
            throw new IOException("the connection is not established");
        }
    }

    // ----- information -----

    /**
     * Bytes sent straight from registered buffers, for tests and diagnostics.
     */
    long zeroCopyBytes() {
        lock.lock();
        try {
            return zeroCopyBytes;
        } finally {
            lock.unlock();
        }
    }

    long keepAlivesSent() {
        lock.lock();
        try {
            return keepAlivesSent;
        } finally {
            lock.unlock();
        }
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
        lock.lock();
        try {
            return "RsocketConnection{phase=" + phase + ", local=" + localAddress + ", remote=" + remoteAddress
                + ", qp=" + (queuePair == null ? "none" : queuePair.number() + "/" + queuePair.state())
                + ", sendSequence=" + sendSequence + ", sendLimit=" + sendLimit + ", sendSlots=" + sendSlots
                + ", sendBufferFree=" + sendBufferFree + ", zeroCopyBytes=" + zeroCopyBytes + ", targetSge="
                + targetSge + ", targetLength="
                + targetLength[0] + "/" + targetLength[1] + ", controlSlots=" + controlSlots
                + ", receiveSequence=" + receiveSequence + ", queuedMessages=" + messageCount
                + ", receivedBytes=" + receivedBytes + ", advertisedBytes=" + advertisedBytes
                + ", outputShutdown=" + outputShutdown + ", inputShutdown=" + inputShutdown
                + ", peerShutdown=" + peerShutdown + ", peerDisconnected=" + peerDisconnected
                + ", keepAlivesSent=" + keepAlivesSent + ", lastStatus=" + lastStatus
                + (messageMode ? ", messageMode=true, awaitingFirstMessage=" + awaitingFirstMessage : "")
                + ", error=" + error + '}';
        } finally {
            lock.unlock();
        }
    }

    @Override
    public String toString() {
        return describe();
    }
}

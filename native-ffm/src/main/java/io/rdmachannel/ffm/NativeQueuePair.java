package io.rdmachannel.ffm;

import static io.rdmachannel.ffm.layout.IbvQpLayouts.AH_ATTR_DGID;
import static io.rdmachannel.ffm.layout.IbvQpLayouts.AH_ATTR_HOP_LIMIT;
import static io.rdmachannel.ffm.layout.IbvQpLayouts.AH_ATTR_IS_GLOBAL;
import static io.rdmachannel.ffm.layout.IbvQpLayouts.AH_ATTR_PORT_NUM;
import static io.rdmachannel.ffm.layout.IbvQpLayouts.AH_ATTR_SGID_INDEX;
import static io.rdmachannel.ffm.layout.IbvQpLayouts.CAP_MAX_INLINE_DATA;
import static io.rdmachannel.ffm.layout.IbvQpLayouts.CAP_MAX_RECV_SGE;
import static io.rdmachannel.ffm.layout.IbvQpLayouts.CAP_MAX_RECV_WR;
import static io.rdmachannel.ffm.layout.IbvQpLayouts.CAP_MAX_SEND_SGE;
import static io.rdmachannel.ffm.layout.IbvQpLayouts.CAP_MAX_SEND_WR;
import static io.rdmachannel.ffm.layout.IbvQpLayouts.IBV_QP_ATTR;
import static io.rdmachannel.ffm.layout.IbvQpLayouts.IBV_QP_CAP;
import static io.rdmachannel.ffm.layout.IbvQpLayouts.IBV_QP_INIT_ATTR;
import static io.rdmachannel.ffm.layout.IbvQpLayouts.QP_ATTR_AH_ATTR;
import static io.rdmachannel.ffm.layout.IbvQpLayouts.QP_ATTR_DEST_QP_NUM;
import static io.rdmachannel.ffm.layout.IbvQpLayouts.QP_ATTR_MAX_DEST_RD_ATOMIC;
import static io.rdmachannel.ffm.layout.IbvQpLayouts.QP_ATTR_MAX_RD_ATOMIC;
import static io.rdmachannel.ffm.layout.IbvQpLayouts.QP_ATTR_MIN_RNR_TIMER;
import static io.rdmachannel.ffm.layout.IbvQpLayouts.QP_ATTR_PATH_MTU;
import static io.rdmachannel.ffm.layout.IbvQpLayouts.QP_ATTR_PKEY_INDEX;
import static io.rdmachannel.ffm.layout.IbvQpLayouts.QP_ATTR_PORT_NUM;
import static io.rdmachannel.ffm.layout.IbvQpLayouts.QP_ATTR_QP_ACCESS_FLAGS;
import static io.rdmachannel.ffm.layout.IbvQpLayouts.QP_ATTR_QP_STATE;
import static io.rdmachannel.ffm.layout.IbvQpLayouts.QP_ATTR_RETRY_CNT;
import static io.rdmachannel.ffm.layout.IbvQpLayouts.QP_ATTR_RNR_RETRY;
import static io.rdmachannel.ffm.layout.IbvQpLayouts.QP_ATTR_RQ_PSN;
import static io.rdmachannel.ffm.layout.IbvQpLayouts.QP_ATTR_SQ_PSN;
import static io.rdmachannel.ffm.layout.IbvQpLayouts.QP_ATTR_TIMEOUT;
import static io.rdmachannel.ffm.layout.IbvQpLayouts.QP_INIT_ATTR_CAP;
import static io.rdmachannel.ffm.layout.IbvQpLayouts.QP_INIT_ATTR_QP_TYPE;
import static io.rdmachannel.ffm.layout.IbvQpLayouts.QP_INIT_ATTR_RECV_CQ;
import static io.rdmachannel.ffm.layout.IbvQpLayouts.QP_INIT_ATTR_SEND_CQ;
import static io.rdmachannel.ffm.layout.IbvQpLayouts.QP_INIT_ATTR_SQ_SIG_ALL;
import static io.rdmachannel.ffm.layout.IbvQpLayouts.QP_INIT_ATTR_SRQ;
import static io.rdmachannel.ffm.layout.IbvQpLayouts.QP_QP_NUM;
import static io.rdmachannel.ffm.layout.IbvQpLayouts.QP_SIZE;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import io.rdmachannel.channel.spi.AccessFlags;
import io.rdmachannel.channel.spi.CloseActions;
import io.rdmachannel.channel.spi.CompletionQueue;
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
import io.rdmachannel.channel.spi.WorkRequestOpcode;
import io.rdmachannel.ffm.internal.Errno;
import io.rdmachannel.ffm.verbs.IbvCalls;
import io.rdmachannel.ffm.verbs.QueuePairOps;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * An RC {@code ibv_qp}. State changes go through {@code ibv_modify_qp} with the attribute masks of each transition;
 * READY_TO_RECEIVE builds a global route (GRH) to the remote GID from the source GID that
 * {@link NativeDevice#sourceGidIndex} picks, as RoCE needs. Posts check the state this side last set (sends need
 * READY_TO_SEND or ERROR, receives anything but RESET) and the request, then call {@code post_send} /
 * {@code post_recv} through the ops table with the request's pre-built native structs.
 *
 * <p>Posting is not synchronised with {@link #close()}: closing a queue pair while another thread posts to it is a
 * programming error the provider does not detect.
 */
final class NativeQueuePair implements QueuePair {
    private static final int HOP_LIMIT = 64;

    private final NativeProtectionDomain domain;
    private final NativeDevice device;
    private final MemorySegment qp;
    private final int number;
    private final NativeCompletionQueue sendQueue;
    private final NativeCompletionQueue receiveQueue;
    private final NativeSharedReceiveQueue sharedReceiveQueue;
    private final int maxSendWorkRequests;
    private final int maxReceiveWorkRequests;
    private final int maxSendSge;
    private final int maxReceiveSge;
    private final int maxInlineData;
    private final QueuePairOps ops;
    private final Destroyer destroyer;
    private final Arena arena = Arena.ofShared();
    private volatile QueuePairState state = QueuePairState.RESET;
    /** With a shared receive queue: the ERROR state was reported to the owner (once per ERROR); deviceEventLock. */
    private boolean lastReceiveReported;
    private int portNumber = NativeDevice.PORT;
    /** Orders {@link #failFromDevice} before {@link #close}: held by neither while the queue pair is destroyed. */
    private final Object deviceEventLock = new Object();
    private boolean closing;
    private volatile String deviceError;
    private volatile boolean closed;
    private final CloseActions closeActions = new CloseActions();

    private NativeQueuePair(NativeProtectionDomain domain, MemorySegment qp, MemorySegment cap,
        NativeCompletionQueue sendQueue, NativeCompletionQueue receiveQueue, NativeSharedReceiveQueue srq,
        Destroyer destroyer) {
        this.domain = domain;
        this.destroyer = destroyer;
        this.device = domain.nativeDevice();
        this.qp = qp.reinterpret(QP_SIZE);
        this.number = this.qp.get(JAVA_INT, QP_QP_NUM);
        this.sendQueue = sendQueue;
        this.receiveQueue = receiveQueue;
        this.sharedReceiveQueue = srq;
        this.maxSendWorkRequests = cap.get(JAVA_INT, CAP_MAX_SEND_WR);
        this.maxReceiveWorkRequests = srq == null ? cap.get(JAVA_INT, CAP_MAX_RECV_WR) : 0;
        this.maxSendSge = cap.get(JAVA_INT, CAP_MAX_SEND_SGE);
        this.maxReceiveSge = srq == null ? cap.get(JAVA_INT, CAP_MAX_RECV_SGE) : 0;
        this.maxInlineData = cap.get(JAVA_INT, CAP_MAX_INLINE_DATA);
        this.ops = QueuePairOps.of(this.qp, device.critical());
    }

    /**
     * How a queue pair's {@code ibv_qp} is created from a filled {@code ibv_qp_init_attr} (the call writes the granted
     * capacities back into it).
     */
    @FunctionalInterface
    interface Creator {
        MemorySegment create(MemorySegment pd, MemorySegment initAttr) throws IOException;
    }

    /**
     * How a queue pair's {@code ibv_qp} is destroyed: {@code ibv_destroy_qp}, or {@code rdma_destroy_qp} for one
     * created on an {@code rdma_cm_id}.
     */
    @FunctionalInterface
    interface Destroyer {
        void destroy(MemorySegment qp) throws NativeCallException;
    }

    static NativeQueuePair create(NativeProtectionDomain domain, QueuePairInitAttributes attributes)
        throws IOException {
        return create(domain, attributes, IbvCalls::createQp, IbvCalls::destroyQp, QueuePairState.RESET);
    }

    /**
     * A queue pair created another way than {@code ibv_create_qp}, such as {@code rdma_create_qp} on a connection
     * manager id, which leaves it in INIT.
     *
     * @param creator creates the {@code ibv_qp}.
     * @param destroyer destroys it, on close or if wrapping it fails.
     * @param initialState the state the creator leaves it in.
     */
    static NativeQueuePair create(NativeProtectionDomain domain, QueuePairInitAttributes attributes,
        Creator creator, Destroyer destroyer, QueuePairState initialState) throws IOException {
        NativeDevice device = domain.nativeDevice();
        NativeCompletionQueue sendQueue = ownCompletionQueue(device, attributes.sendCompletionQueue());
        NativeCompletionQueue receiveQueue = ownCompletionQueue(device, attributes.receiveCompletionQueue());
        NativeSharedReceiveQueue srq = null;
        if (attributes.sharedReceiveQueue() != null) {
            if (!(attributes.sharedReceiveQueue() instanceof NativeSharedReceiveQueue shared)
                || shared.domain() != domain) {
                throw new IllegalArgumentException("the shared receive queue belongs to another protection domain");
            }
            shared.ensureOpen();
            srq = shared;
        }
        try (Arena temporary = Arena.ofConfined()) {
            MemorySegment init = temporary.allocate(IBV_QP_INIT_ATTR.layout());
            init.set(ADDRESS, QP_INIT_ATTR_SEND_CQ, sendQueue.cq());
            init.set(ADDRESS, QP_INIT_ATTR_RECV_CQ, receiveQueue.cq());
            init.set(ADDRESS, QP_INIT_ATTR_SRQ, srq == null ? MemorySegment.NULL : srq.srq());
            MemorySegment cap = init.asSlice(QP_INIT_ATTR_CAP, IBV_QP_CAP.size());
            cap.set(JAVA_INT, CAP_MAX_SEND_WR, attributes.maxSendWorkRequests());
            cap.set(JAVA_INT, CAP_MAX_RECV_WR, srq == null ? attributes.maxReceiveWorkRequests() : 0);
            cap.set(JAVA_INT, CAP_MAX_SEND_SGE, attributes.maxSendSge());
            cap.set(JAVA_INT, CAP_MAX_RECV_SGE, srq == null ? attributes.maxReceiveSge() : 0);
            cap.set(JAVA_INT, CAP_MAX_INLINE_DATA, attributes.maxInlineData());
            init.set(JAVA_INT, QP_INIT_ATTR_QP_TYPE, VerbsConstants.IBV_QPT_RC);
            init.set(JAVA_INT, QP_INIT_ATTR_SQ_SIG_ALL, attributes.signalAll() ? 1 : 0);
            // ibv_create_qp writes the capacities it granted back into cap
            MemorySegment qp = creator.create(domain.pd(), init);
            NativeQueuePair queuePair;
            try {
                queuePair = new NativeQueuePair(domain, qp, cap, sendQueue, receiveQueue, srq, destroyer);
                queuePair.state = initialState;
            } catch (RuntimeException | Error e) {
                try {
                    destroyer.destroy(qp);
                } catch (NativeCallException suppressed) {
                    e.addSuppressed(suppressed);
                }
                throw e;
            }
            sendQueue.attach();
            receiveQueue.attach();
            if (srq != null) {
                srq.attach();
            }
            queuePair.device.track(queuePair);
            return queuePair;
        }
    }

    private static NativeCompletionQueue ownCompletionQueue(NativeDevice device, CompletionQueue queue) {
        if (!(queue instanceof NativeCompletionQueue nativeQueue) || nativeQueue.device() != device) {
            throw new IllegalArgumentException("the completion queue belongs to another device");
        }
        nativeQueue.ensureOpen();
        return nativeQueue;
    }

    @Override
    public int number() {
        return number;
    }

    @Override
    public QueuePairType type() {
        return QueuePairType.RC;
    }

    /**
     * The state as the device sees it ({@code ibv_query_qp}), so a transport error that moved the queue pair to
     * ERROR shows; {@link QueuePairState#ERROR} once closed.
     */
    @Override
    public QueuePairState state() {
        if (closed) {
            return QueuePairState.ERROR;
        }
        try (Arena temporary = Arena.ofConfined()) {
            MemorySegment attr = temporary.allocate(IBV_QP_ATTR.layout());
            MemorySegment init = temporary.allocate(IBV_QP_INIT_ATTR.layout());
            IbvCalls.queryQp(qp, attr, VerbsConstants.IBV_QP_STATE, init);
            return QueuePairState.fromCode(attr.get(JAVA_INT, QP_ATTR_QP_STATE));
        } catch (NativeCallException e) {
            throw new IllegalStateException("cannot query queue pair " + number + ": " + e.getMessage(), e);
        }
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
        return maxReceiveWorkRequests;
    }

    @Override
    public int maxInlineData() {
        return maxInlineData;
    }

    @Override
    public synchronized void modify(QueuePairState target, QueuePairAttributes attributes) throws IOException {
        ensureOpen();
        QueuePairState current = target == QueuePairState.ERROR || target == QueuePairState.RESET ? state : state();
        try (Arena temporary = Arena.ofConfined()) {
            MemorySegment attr = temporary.allocate(IBV_QP_ATTR.layout());
            attr.set(JAVA_INT, QP_ATTR_QP_STATE, target.code());
            int mask = VerbsConstants.IBV_QP_STATE;
            switch (target) {
                case INIT -> {
                    requireState(current, target, QueuePairState.RESET, QueuePairState.INIT);
                    mask |= toInit(attr, required(attributes, target));
                }
                case READY_TO_RECEIVE -> {
                    requireState(current, target, QueuePairState.INIT);
                    mask |= toReadyToReceive(attr, required(attributes, target));
                }
                case READY_TO_SEND -> {
                    requireState(current, target, QueuePairState.READY_TO_RECEIVE, QueuePairState.READY_TO_SEND);
                    mask |= toReadyToSend(attr, required(attributes, target), current);
                }
                case ERROR, RESET -> {
                    // the state alone
                }
                default -> throw new IllegalArgumentException("the native provider does not support moving to "
                    + target);
            }
            IbvCalls.modifyQp(qp, attr, mask);
            state = target;
        }
        if (target == QueuePairState.ERROR) {
            // not every device reports IBV_EVENT_QP_LAST_WQE_REACHED (rxe of Linux 6.1 does not): a queue pair moved
            // to ERROR here (by its owner, or by rdma_cm's DISCONNECTED) takes no more shared receives
            lastReceiveReached();
        } else if (target == QueuePairState.RESET) {
            synchronized (deviceEventLock) {
                lastReceiveReported = false;
            }
        }
    }

    private int toInit(MemorySegment attr, QueuePairAttributes attributes) {
        int port = attributes.portNumber();
        if (port < 1 || port > 255) {
            throw new IllegalArgumentException("portNumber=" + port + " is outside [1, 255]");
        }
        attr.set(JAVA_SHORT, QP_ATTR_PKEY_INDEX, (short) 0);
        attr.set(JAVA_BYTE, QP_ATTR_PORT_NUM, (byte) port);
        attr.set(JAVA_INT, QP_ATTR_QP_ACCESS_FLAGS, attributes.accessFlags() & AccessFlags.REMOTE);
        portNumber = port;
        return VerbsConstants.IBV_QP_PKEY_INDEX | VerbsConstants.IBV_QP_PORT | VerbsConstants.IBV_QP_ACCESS_FLAGS;
    }

    private int toReadyToReceive(MemorySegment attr, QueuePairAttributes attributes) throws IOException {
        byte[] gid = attributes.remoteGid();
        int remoteNumber = attributes.remoteQueuePairNumber();
        if (gid == null || remoteNumber < 0 || remoteNumber > 0xFFFFFF) {
            throw new IllegalArgumentException("moving to READY_TO_RECEIVE needs the remote GID and queue pair "
                + "number: " + attributes);
        }
        attr.set(JAVA_INT, QP_ATTR_PATH_MTU, VerbsConstants.mtuCode(attributes.pathMtu()));
        attr.set(JAVA_INT, QP_ATTR_DEST_QP_NUM, remoteNumber);
        attr.set(JAVA_INT, QP_ATTR_RQ_PSN, attributes.receivePacketSequenceNumber());
        attr.set(JAVA_BYTE, QP_ATTR_MAX_DEST_RD_ATOMIC, (byte) attributes.maxDestinationReadAtomic());
        attr.set(JAVA_BYTE, QP_ATTR_MIN_RNR_TIMER, (byte) attributes.minRnrTimer());
        MemorySegment ah = attr.asSlice(QP_ATTR_AH_ATTR);
        MemorySegment.copy(gid, 0, ah, JAVA_BYTE, AH_ATTR_DGID, gid.length);
        ah.set(JAVA_BYTE, AH_ATTR_SGID_INDEX, (byte) device.sourceGidIndex(portNumber, gid));
        ah.set(JAVA_BYTE, AH_ATTR_HOP_LIMIT, (byte) HOP_LIMIT);
        ah.set(JAVA_BYTE, AH_ATTR_IS_GLOBAL, (byte) 1);
        ah.set(JAVA_BYTE, AH_ATTR_PORT_NUM, (byte) portNumber);
        return VerbsConstants.IBV_QP_AV | VerbsConstants.IBV_QP_PATH_MTU | VerbsConstants.IBV_QP_DEST_QPN
            | VerbsConstants.IBV_QP_RQ_PSN | VerbsConstants.IBV_QP_MAX_DEST_RD_ATOMIC
            | VerbsConstants.IBV_QP_MIN_RNR_TIMER;
    }

    private static int toReadyToSend(MemorySegment attr, QueuePairAttributes attributes, QueuePairState current) {
        if (current == QueuePairState.READY_TO_SEND) {
            // RTS to RTS may change the timers only; the PSN and read depth are fixed
            attr.set(JAVA_BYTE, QP_ATTR_TIMEOUT, (byte) attributes.timeout());
            return VerbsConstants.IBV_QP_TIMEOUT;
        }
        attr.set(JAVA_INT, QP_ATTR_SQ_PSN, attributes.sendPacketSequenceNumber());
        attr.set(JAVA_BYTE, QP_ATTR_TIMEOUT, (byte) attributes.timeout());
        attr.set(JAVA_BYTE, QP_ATTR_RETRY_CNT, (byte) attributes.retryCount());
        attr.set(JAVA_BYTE, QP_ATTR_RNR_RETRY, (byte) attributes.rnrRetry());
        attr.set(JAVA_BYTE, QP_ATTR_MAX_RD_ATOMIC, (byte) attributes.maxReadAtomic());
        return VerbsConstants.IBV_QP_SQ_PSN | VerbsConstants.IBV_QP_TIMEOUT | VerbsConstants.IBV_QP_RETRY_CNT
            | VerbsConstants.IBV_QP_RNR_RETRY | VerbsConstants.IBV_QP_MAX_QP_RD_ATOMIC;
    }

    private static QueuePairAttributes required(QueuePairAttributes attributes, QueuePairState target) {
        if (attributes == null) {
            throw new IllegalArgumentException("moving to " + target + " needs attributes");
        }
        return attributes;
    }

    private void requireState(QueuePairState current, QueuePairState target, QueuePairState... allowed) {
        for (QueuePairState allowedState : allowed) {
            if (current == allowedState) {
                return;
            }
        }
        throw new IllegalStateException("queue pair " + number + " cannot move from " + current + " to " + target
            + "; allowed from " + Arrays.toString(allowed));
    }

    @Override
    public SendWorkRequest createSendWorkRequest() {
        ensureOpen();
        return new NativeSendWorkRequest(this, maxSendSge, arena);
    }

    @Override
    public ReceiveWorkRequest createReceiveWorkRequest() {
        ensureOpen();
        return new NativeReceiveWorkRequest(this, Math.max(maxReceiveSge, 0), arena);
    }

    @Override
    public void postSend(SendWorkRequest request) {
        if (!(request instanceof NativeSendWorkRequest send) || send.owner() != this) {
            throw new IllegalArgumentException("the send request was not created by this queue pair");
        }
        checkSend(send);
        ensureOpen();
        QueuePairState current = state;
        if (current != QueuePairState.READY_TO_SEND && current != QueuePairState.ERROR) {
            throw new IllegalStateException("postSend: queue pair " + number + " is in state " + current
                + "; sends need READY_TO_SEND");
        }
        int result = ops.postSend(qp, send.wrPointer(), send.badWrPointer());
        if (result != 0) {
            throw postFailure("ibv_post_send", Math.abs(result), "send queue of queue pair " + number + " is full: "
                + maxSendWorkRequests + " requests are outstanding; poll their completions first");
        }
    }

    private void checkSend(NativeSendWorkRequest send) {
        int flags = send.flags();
        if ((flags & ~SendFlags.ALL) != 0) {
            throw new IllegalArgumentException("unknown send flags: flags=0x" + Integer.toHexString(flags));
        }
        long total = 0;
        for (int i = 0, count = send.sgeCount(); i < count; i++) {
            int length = send.sgeLength(i);
            if (length < 0) {
                throw new IllegalArgumentException("sge " + i + " has a negative length: length=" + length);
            }
            total += length;
        }
        long maxMessage = device.attributes().maxMessageSize();
        if (total > maxMessage) {
            throw new IllegalArgumentException("the request carries " + total + " bytes, more than maxMessageSize="
                + maxMessage);
        }
        if ((flags & SendFlags.INLINE) != 0) {
            if (send.opcode() == WorkRequestOpcode.RDMA_READ) {
                throw new IllegalArgumentException("an RDMA READ cannot be inline");
            }
            if (total > maxInlineData) {
                throw new IllegalArgumentException("inline data of " + total + " bytes exceeds maxInlineData="
                    + maxInlineData + " of queue pair " + number);
            }
        }
    }

    @Override
    public void postReceive(ReceiveWorkRequest request) {
        if (sharedReceiveQueue != null) {
            throw new IllegalStateException("queue pair " + number + " takes its receives from a shared receive "
                + "queue: post them there");
        }
        if (!(request instanceof NativeReceiveWorkRequest receive) || receive.owner() != this) {
            throw new IllegalArgumentException("the receive request was created by another queue pair");
        }
        receive.checkEntries(maxReceiveSge);
        ensureOpen();
        if (state == QueuePairState.RESET) {
            throw new IllegalStateException("postReceive: queue pair " + number + " is in state RESET; receives "
                + "need INIT or later");
        }
        int result = ops.postRecv(qp, receive.wrPointer(), receive.badWrPointer());
        if (result != 0) {
            throw postFailure("ibv_post_recv", Math.abs(result), "receive queue of queue pair " + number
                + " is full: " + maxReceiveWorkRequests + " receives are outstanding");
        }
    }

    /**
     * The exception for a failed post: ENOMEM means the queue is full, EINVAL a request the device refused, anything
     * else a device failure named by function and errno. Providers return the errno positive or (rxe) negative.
     */
    static RuntimeException postFailure(String function, int errno, String fullMessage) {
        if (errno == Errno.ENOMEM) {
            return new IllegalStateException(fullMessage);
        }
        NativeCallException failure = Errno.exception(function, errno);
        if (errno == Errno.EINVAL) {
            return new IllegalArgumentException("the device refused the request: " + failure.getMessage(), failure);
        }
        return new IllegalStateException(failure.getMessage(), failure);
    }

    /**
     * Record a state someone else moved the queue pair to, as librdmacm does while connecting (INIT, then
     * READY_TO_RECEIVE and READY_TO_SEND inside {@code rdma_connect} / {@code rdma_accept} processing).
     */
    void stateChanged(QueuePairState newState) {
        state = newState;
    }

    void ensureOpen() {
        if (closed) {
            throw new IllegalStateException("queue pair " + number + " is closed");
        }
    }

    /**
     * The transport timers as the device has them ({@code ibv_query_qp}): how long a request waits for its
     * acknowledgement before a retry and how often it is retried, which is how long a dead peer takes to notice.
     */
    String timers() throws NativeCallException {
        try (Arena temporary = Arena.ofConfined()) {
            MemorySegment attr = temporary.allocate(IBV_QP_ATTR.layout());
            MemorySegment init = temporary.allocate(IBV_QP_INIT_ATTR.layout());
            IbvCalls.queryQp(qp, attr, VerbsConstants.IBV_QP_STATE | VerbsConstants.IBV_QP_TIMEOUT
                | VerbsConstants.IBV_QP_RETRY_CNT | VerbsConstants.IBV_QP_RNR_RETRY, init);
            return "state=" + QueuePairState.fromCode(attr.get(JAVA_INT, QP_ATTR_QP_STATE)) + ", timeout="
                + attr.get(JAVA_BYTE, QP_ATTR_TIMEOUT) + ", retryCount=" + attr.get(JAVA_BYTE, QP_ATTR_RETRY_CNT)
                + ", rnrRetry=" + attr.get(JAVA_BYTE, QP_ATTR_RNR_RETRY);
        }
    }

    /** The {@code ibv_qp} address, which async events carry. */
    long address() {
        return qp.address();
    }

    boolean usesCompletionQueue(long cqAddress) {
        return sendQueue.address() == cqAddress || receiveQueue.address() == cqAddress;
    }

    boolean usesSharedReceiveQueue(long srqAddress) {
        return sharedReceiveQueue != null && sharedReceiveQueue.srq().address() == srqAddress;
    }

    @Override
    public String deviceError() {
        return deviceError;
    }

    /**
     * The device reported an error of this queue pair, of a queue it uses or of itself: remember what, move the queue
     * pair to ERROR (which flushes its work requests where the device still works) and hand its owner a failed
     * receive completion through the receive completion queue, waking whoever waits on it, in case the device
     * delivers none. Called on the async event thread; does nothing once closing began, since the destroy waits
     * for that thread to acknowledge the event.
     *
     * @param what the event, for the connection's error.
     * @return whether it failed the queue pair (false if it was closing or had failed already).
     */
    boolean failFromDevice(String what) {
        synchronized (deviceEventLock) {
            if (closing || deviceError != null) {
                return false;
            }
            deviceError = what;
            try (Arena temporary = Arena.ofConfined()) {
                MemorySegment attr = temporary.allocate(IBV_QP_ATTR.layout());
                attr.set(JAVA_INT, QP_ATTR_QP_STATE, QueuePairState.ERROR.code());
                IbvCalls.modifyQp(qp, attr, VerbsConstants.IBV_QP_STATE);
                state = QueuePairState.ERROR;
            } catch (NativeCallException e) {
                NativeAsyncEvents.LOG.debug("cannot move queue pair {} to ERROR after {}", number, what, e);
            }
            receiveQueue.injectFailure(number);
            return true;
        }
    }

    /**
     * The device reported {@code IBV_EVENT_QP_LAST_WQE_REACHED}, or this queue pair was moved to ERROR: it takes its
     * receives from a shared receive queue and consumes no more. Its receives are not flushed (they are the shared
     * queue's), so its owner learns it from the flushed receive completion of id
     * {@link io.rdmachannel.channel.spi.SharedReceiveQueue#LAST_RECEIVE_ID} handed to it here, once. Nothing once
     * closing began.
     */
    void lastReceiveReached() {
        synchronized (deviceEventLock) {
            if (closing || sharedReceiveQueue == null || lastReceiveReported) {
                return;
            }
            lastReceiveReported = true;
            state = QueuePairState.ERROR;
            receiveQueue.injectLastReceive(number);
        }
    }

    @Override
    public void whenClosed(Runnable action) {
        closeActions.add(action);
    }

    /** Destroyed: {@code ibv_destroy_qp} returns once the device no longer touches the queue pair's memory. */
    @Override
    public synchronized boolean peerAccessEnded() {
        return closed;
    }

    @Override
    public void close() {
        synchronized (deviceEventLock) {
            closing = true;
        }
        device.forget(this);
        try {
            destroy();
        } finally {
            closeActions.run();
        }
    }

    private synchronized void destroy() {
        if (closed) {
            return;
        }
        try {
            destroyer.destroy(qp);
        } catch (NativeCallException e) {
            throw new IllegalStateException("cannot destroy queue pair " + number + ": " + e.getMessage(), e);
        }
        closed = true;
        arena.close();
        if (sharedReceiveQueue != null) {
            sharedReceiveQueue.detach();
        }
        receiveQueue.detach();
        sendQueue.detach();
        domain.childClosed(ResourceCounter.Kind.QUEUE_PAIR);
    }

    @Override
    public String toString() {
        return "NativeQueuePair{number=" + number + ", state=" + state + ", maxSend=" + maxSendWorkRequests
            + ", maxReceive=" + maxReceiveWorkRequests + ", maxInline=" + maxInlineData + ", critical="
            + ops.critical() + (deviceError == null ? "" : ", deviceError=" + deviceError) + ", closed=" + closed
            + '}';
    }
}

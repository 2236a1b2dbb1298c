package io.rdmachannel.channel.spi;

import java.util.Objects;

/**
 * What a queue pair is created with (an {@code ibv_qp_init_attr}). Fluent and reusable; validated by
 * {@link ProtectionDomain#createQueuePair(QueuePairInitAttributes)}.
 */
public final class QueuePairInitAttributes {
    private QueuePairType type = QueuePairType.RC;
    private CompletionQueue sendCompletionQueue;
    private CompletionQueue receiveCompletionQueue;
    private SharedReceiveQueue sharedReceiveQueue;
    private int maxSendWorkRequests = 16;
    private int maxReceiveWorkRequests = 16;
    private int maxSendSge = 1;
    private int maxReceiveSge = 1;
    private int maxInlineData;
    private boolean signalAll;

    /**
     * Defaults: RC, depth 16 each way, one SGE each way, no inline data, signalled requests only.
     */
    public QueuePairInitAttributes() {
        // defaults are in the field initialisers
    }

    /**
     * Set the transport type; default {@link QueuePairType#RC}.
     *
     * @param type the type.
     * @return this.
     */
    public QueuePairInitAttributes type(final QueuePairType type) {
        this.type = Objects.requireNonNull(type, "type");
        return this;
    }

    /**
     * Set the queue send completions go to; required.
     *
     * @param queue the completion queue.
     * @return this.
     */
    public QueuePairInitAttributes sendCompletionQueue(final CompletionQueue queue) {
        this.sendCompletionQueue = queue;
        return this;
    }

    /**
     * Set the queue receive completions go to; required.
     *
     * @param queue the completion queue, may be the send completion queue.
     * @return this.
     */
    public QueuePairInitAttributes receiveCompletionQueue(final CompletionQueue queue) {
        this.receiveCompletionQueue = queue;
        return this;
    }

    /**
     * Set a shared receive queue to take receives from instead of an own receive queue.
     *
     * @param queue the shared receive queue, or {@code null}.
     * @return this.
     */
    public QueuePairInitAttributes sharedReceiveQueue(final SharedReceiveQueue queue) {
        this.sharedReceiveQueue = queue;
        return this;
    }

    /**
     * Set the send queue depth; default 16.
     *
     * @param count at least 1.
     * @return this.
     */
    public QueuePairInitAttributes maxSendWorkRequests(final int count) {
        this.maxSendWorkRequests = count;
        return this;
    }

    /**
     * Set the receive queue depth; default 16; ignored with a shared receive queue.
     *
     * @param count at least 1.
     * @return this.
     */
    public QueuePairInitAttributes maxReceiveWorkRequests(final int count) {
        this.maxReceiveWorkRequests = count;
        return this;
    }

    /**
     * Set the scatter/gather entries per send; default 1.
     *
     * @param count at least 1.
     * @return this.
     */
    public QueuePairInitAttributes maxSendSge(final int count) {
        this.maxSendSge = count;
        return this;
    }

    /**
     * Set the scatter/gather entries per receive; default 1.
     *
     * @param count at least 1.
     * @return this.
     */
    public QueuePairInitAttributes maxReceiveSge(final int count) {
        this.maxReceiveSge = count;
        return this;
    }

    /**
     * Set the inline limit asked for; default 0.
     *
     * @param bytes at least 0.
     * @return this.
     */
    public QueuePairInitAttributes maxInlineData(final int bytes) {
        this.maxInlineData = bytes;
        return this;
    }

    /**
     * Signal every send request, whatever its flags ({@code sq_sig_all}); default off.
     *
     * @param signalAll whether every send produces a completion.
     * @return this.
     */
    public QueuePairInitAttributes signalAll(final boolean signalAll) {
        this.signalAll = signalAll;
        return this;
    }

    /**
     * The transport type.
     *
     * @return the type.
     */
    public QueuePairType type() {
        return type;
    }

    /**
     * The send completion queue.
     *
     * @return the queue, or {@code null} if unset.
     */
    public CompletionQueue sendCompletionQueue() {
        return sendCompletionQueue;
    }

    /**
     * The receive completion queue.
     *
     * @return the queue, or {@code null} if unset.
     */
    public CompletionQueue receiveCompletionQueue() {
        return receiveCompletionQueue;
    }

    /**
     * The shared receive queue.
     *
     * @return the queue, or {@code null}.
     */
    public SharedReceiveQueue sharedReceiveQueue() {
        return sharedReceiveQueue;
    }

    /**
     * The send queue depth.
     *
     * @return the depth.
     */
    public int maxSendWorkRequests() {
        return maxSendWorkRequests;
    }

    /**
     * The receive queue depth.
     *
     * @return the depth.
     */
    public int maxReceiveWorkRequests() {
        return maxReceiveWorkRequests;
    }

    /**
     * The send scatter/gather limit.
     *
     * @return the count.
     */
    public int maxSendSge() {
        return maxSendSge;
    }

    /**
     * The receive scatter/gather limit.
     *
     * @return the count.
     */
    public int maxReceiveSge() {
        return maxReceiveSge;
    }

    /**
     * The inline limit asked for.
     *
     * @return bytes.
     */
    public int maxInlineData() {
        return maxInlineData;
    }

    /**
     * Whether every send is signalled.
     *
     * @return the setting.
     */
    public boolean signalAll() {
        return signalAll;
    }

    /**
     * Check the values against a device's limits.
     *
     * @param limits the device attributes.
     * @throws IllegalArgumentException naming the first invalid value.
     */
    public void check(final DeviceAttributes limits) {
        if (type == QueuePairType.XRC_RECV) {
            throw new IllegalArgumentException("XRC target queue pairs are created through their XRC domain: "
                + "XrcDomain.createTargetQueuePair()");
        }
        final boolean receives = type != QueuePairType.XRC_SEND;
        if (sendCompletionQueue == null || receives && receiveCompletionQueue == null) {
            throw new IllegalArgumentException("a queue pair needs a send and a receive completion queue");
        }
        if (!receives && (receiveCompletionQueue != null || sharedReceiveQueue != null)) {
            throw new IllegalArgumentException("an XRC initiator queue pair has no receive side: set no receive "
                + "completion queue and no shared receive queue");
        }
        checkRange("maxSendWorkRequests", maxSendWorkRequests, 1, limits.maxQueuePairWorkRequests());
        if (receives && sharedReceiveQueue == null) {
            checkRange("maxReceiveWorkRequests", maxReceiveWorkRequests, 1, limits.maxQueuePairWorkRequests());
        }
        checkRange("maxSendSge", maxSendSge, 1, limits.maxSge());
        if (receives) {
            checkRange("maxReceiveSge", maxReceiveSge, 1, limits.maxSge());
        }
        checkRange("maxInlineData", maxInlineData, 0, limits.maxInlineData());
    }

    private static void checkRange(final String name, final int value, final int min, final int max) {
        if (value < min || value > max) {
            throw new IllegalArgumentException(name + "=" + value + " is outside [" + min + ", " + max + "]");
        }
    }
}

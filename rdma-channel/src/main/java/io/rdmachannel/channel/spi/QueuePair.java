package io.rdmachannel.channel.spi;

import java.io.IOException;

/**
 * A queue pair. An RC queue pair is created in {@link QueuePairState#RESET} and moved with
 * {@link #modify(QueuePairState, QueuePairAttributes)} through INIT, READY_TO_RECEIVE (connected to one remote
 * queue pair) and READY_TO_SEND.
 *
 * <p>Posting is thread-safe. Send completions of one queue pair appear in post order. A send queue slot is in use
 * from the post until the completion of that request, or of a later signalled one, has been polled; a receive slot
 * until its completion has been polled.
 */
public interface QueuePair extends AutoCloseable {
    /**
     * The queue-pair number a peer connects to.
     *
     * @return the QP number, 24 bits.
     */
    int number();

    /**
     * The transport type.
     *
     * @return the type.
     */
    QueuePairType type();

    /**
     * The current state; may change to {@link QueuePairState#ERROR} at any time on a transport error.
     *
     * @return the state.
     */
    QueuePairState state();

    /**
     * The protection domain the queue pair belongs to.
     *
     * @return the domain.
     */
    ProtectionDomain protectionDomain();

    /**
     * The depth of the send queue as created (at least the depth asked for).
     *
     * @return the most send requests outstanding at once.
     */
    int maxSendWorkRequests();

    /**
     * The depth of the receive queue as created, 0 with a shared receive queue.
     *
     * @return the most receives outstanding at once.
     */
    int maxReceiveWorkRequests();

    /**
     * The inline limit as created (at least the limit asked for).
     *
     * @return the most bytes a request with {@link SendFlags#INLINE} may carry.
     */
    int maxInlineData();

    /**
     * Move to another state. Allowed: RESET to INIT, INIT to INIT, INIT to READY_TO_RECEIVE, READY_TO_RECEIVE to
     * READY_TO_SEND, READY_TO_SEND to READY_TO_SEND, any state to ERROR and to RESET. Moving to ERROR flushes
     * outstanding work requests; moving to RESET discards them.
     *
     * @param target the new state.
     * @param attributes what the transition needs (see {@link QueuePairAttributes}); may be {@code null} for ERROR
     *     and RESET.
     * @throws IOException if the device refuses, e.g. the remote queue pair cannot be reached.
     * @throws IllegalStateException if the transition is not allowed from the current state.
     * @throws IllegalArgumentException if an attribute the transition needs is missing or invalid.
     */
    void modify(QueuePairState target, QueuePairAttributes attributes) throws IOException;

    /**
     * Create a reusable send request sized for this queue pair.
     *
     * @return a new request.
     */
    SendWorkRequest createSendWorkRequest();

    /**
     * Create a reusable receive request sized for this queue pair.
     *
     * @return a new request.
     */
    ReceiveWorkRequest createReceiveWorkRequest();

    /**
     * Post a send request. The request is copied; it may be rewritten as soon as the call returns. In
     * {@link QueuePairState#ERROR} the request is accepted and completes with
     * {@link CompletionStatus#WORK_REQUEST_FLUSHED}.
     *
     * @param request the request.
     * @throws IllegalStateException if the queue pair is closed, not yet READY_TO_SEND, or its send queue is full;
     *     nothing is posted.
     * @throws IllegalArgumentException if the request is malformed (entry count, inline length over the limit,
     *     unknown flags, a request created by another queue pair); nothing is posted.
     */
    void postSend(SendWorkRequest request);

    /**
     * Post a receive request. The request is copied. Receives may be posted from INIT on.
     *
     * @param request the receive.
     * @throws IllegalStateException if the queue pair is closed, in RESET, uses a shared receive queue, or its
     *     receive queue is full; nothing is posted.
     * @throws IllegalArgumentException if the request is malformed; nothing is posted.
     */
    void postReceive(ReceiveWorkRequest request);

    /**
     * Post {@code count} receives like {@code request}, with the ids {@code firstId} to {@code firstId + count - 1}
     * (the request's own id is ignored and left changed): what a connection posts when it starts, in one step where
     * the provider can (the shm provider posts all of them under one lock, or none). The default posts them one by
     * one, as {@link #postReceive}; should one fail, those before it stay posted.
     *
     * @param request the receive every posted one is like, but for its id.
     * @param firstId the id of the first.
     * @param count how many, at least 0.
     * @throws IllegalStateException as {@link #postReceive}, also if the queue has room for fewer than {@code count}.
     * @throws IllegalArgumentException as {@link #postReceive}, or if {@code count} is negative.
     */
    default void postReceives(final ReceiveWorkRequest request, final long firstId, final int count) {
        if (count < 0) {
            throw new IllegalArgumentException("count=" + count);
        }
        for (int i = 0; i < count; i++) {
            postReceive(request.id(firstId + i));
        }
    }

    /**
     * What the device reported about this queue pair outside its completions: an error event of the queue pair, of
     * a queue it uses or of the whole device, which moved it to {@link QueuePairState#ERROR}.
     *
     * @return a description such as {@code "local catastrophic error (IBV_EVENT_QP_FATAL)"}, or {@code null}.
     */
    default String deviceError() {
        return null;
    }

    /**
     * Have an action run once this queue pair is closed: on the thread that closes it, after it is destroyed; at
     * once on the calling thread if it is closed already. For a connection manager that must tell the peer when the
     * owner closes the queue pair (the {@code oob} manager closes its side channel then, as rdma_cm disconnects).
     *
     * @param action what to run; quick, it must not block.
     */
    void whenClosed(Runnable action);

    /**
     * Whether, once this queue pair is closed, no access of its peer to this side's memory can still be under way,
     * so that memory it reached may serve another connection at once. True on a device whose destroy waits for the
     * hardware (verbs); false on the shared-memory provider when a peer's access did not end within its drain time
     * (its process may be stopped in the middle of it).
     *
     * @return true if the queue pair is closed and quiescent; false while it is open or if an access may linger.
     */
    default boolean peerAccessEnded() {
        return true;
    }

    /**
     * Destroy the queue pair. Outstanding requests are discarded without completions; the remote queue pair sees
     * the connection end.
     */
    @Override
    void close();
}

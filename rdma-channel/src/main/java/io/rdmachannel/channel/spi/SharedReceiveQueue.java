package io.rdmachannel.channel.spi;

/**
 * A receive queue shared by several queue pairs of one protection domain.
 *
 * <p>A queue pair that takes its receives from one is not flushed when it enters ERROR: its receives belong to the
 * queue. Instead, once it consumes no more of them, it reports the ERROR state with one receive completion of status
 * {@link CompletionStatus#WORK_REQUEST_FLUSHED} and id {@link #LAST_RECEIVE_ID} on its receive completion queue,
 * after all its other receive completions; no receive is consumed by it. (A device reports this as
 * {@code IBV_EVENT_QP_LAST_WQE_REACHED}; the native provider turns that event into the completion.) Whoever waits
 * on the receive completion queue is woken by it, as by a flush.
 */
public interface SharedReceiveQueue extends AutoCloseable {
    /** The id of the completion that reports a queue pair of a shared receive queue in ERROR. */
    long LAST_RECEIVE_ID = -1;

    /**
     * What runs when a shared receive queue's armed limit is reached ({@code IBV_EVENT_SRQ_LIMIT_REACHED}).
     */
    @FunctionalInterface
    interface LimitHandler {
        /**
         * A sender took a receive and fewer than the armed limit are left. Runs once per arming, on the provider's
         * event thread (shm: the device's agent; native: its async event thread): it must not block. It may post
         * receives and arm the limit again.
         *
         * @param queue the queue.
         */
        void onLimitReached(SharedReceiveQueue queue);
    }

    /**
     * Create a reusable receive request sized for this queue.
     *
     * @return a new request with no entries.
     */
    ReceiveWorkRequest createReceiveWorkRequest();

    /**
     * Post a receive. The request is copied; it may be rewritten as soon as the call returns.
     *
     * @param request the receive.
     * @throws IllegalStateException if the queue is full or closed.
     * @throws IllegalArgumentException if the request has more entries than the queue allows.
     */
    void postReceive(ReceiveWorkRequest request);

    /**
     * Arm the limit ({@code ibv_modify_srq} with {@code IBV_SRQ_LIMIT}): when a sender takes a receive and fewer than
     * {@code limit} are left posted, the limit is disarmed and {@code handler} runs, once; arm it again to hear of it
     * again. Arming when fewer are posted already reports nothing until the next receive is taken. A limit of 0
     * disarms.
     *
     * @param limit the low-water mark, from 0 to {@link #maxWorkRequests()}.
     * @param handler what runs; may be null only with a limit of 0.
     * @throws IllegalArgumentException if the limit is out of range or the handler missing.
     * @throws IllegalStateException if the queue is closed.
     */
    void armLimit(int limit, LimitHandler handler);

    /**
     * The depth.
     *
     * @return the most receives outstanding at once.
     */
    int maxWorkRequests();

    /**
     * Destroy the queue. Queue pairs using it must be closed first.
     *
     * @throws IllegalStateException if a queue pair still uses it.
     */
    @Override
    void close();
}

package io.rdmachannel.channel.spi;

/**
 * A receive queue shared by several queue pairs of one protection domain.
 */
public interface SharedReceiveQueue extends AutoCloseable {
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

package io.rdmachannel.channel.spi;

/**
 * One process's handle of an XRC target queue pair ({@link QueuePairType#XRC_RECV}). The queue pair itself belongs
 * to its {@link XrcDomain}: each handle holds one reference, and the queue pair is destroyed when the last handle is
 * closed or its process dies. Its state is shared: a {@link #modify} through any handle moves it for all.
 *
 * <p>A target queue pair has no send queue and no receive queue of its own: a message arriving on it is received by
 * the XRC shared receive queue of the domain that the sender names. {@link #createSendWorkRequest},
 * {@link #createReceiveWorkRequest}, {@link #postSend} and {@link #postReceive} throw
 * {@link IllegalStateException}; {@link #maxSendWorkRequests}, {@link #maxReceiveWorkRequests} and
 * {@link #maxInlineData} are 0; {@link #protectionDomain()} is {@code null}, as its verbs object has none.
 */
public interface XrcTargetQueuePair extends QueuePair {
    /**
     * Receives the events of a target queue pair.
     */
    @FunctionalInterface
    interface EventHandler {
        /**
         * One event.
         *
         * @param queuePairNumber the target queue pair's number.
         * @param event what happened.
         */
        void onEvent(int queuePairNumber, QueuePairEvent event);
    }

    /**
     * The domain the queue pair belongs to.
     *
     * @return the handle this one was created or opened through.
     */
    XrcDomain xrcDomain();

    /**
     * Hand this handle the events of the queue pair it has not seen yet, oldest first: every event reported since
     * the handle was created or opened reaches every handle, in every process, so each can close its handle after
     * an error. A provider keeps a bounded number of recent events per queue pair; a handle that falls further
     * behind loses the oldest (counted by {@link #lostEvents()}).
     *
     * @param handler receives each event.
     * @param limit the most events to hand over, at least 1.
     * @return the number handed over.
     * @throws IllegalStateException if the handle is closed.
     */
    int pollEvents(EventHandler handler, int limit);

    /**
     * Events this handle missed because it polled too rarely.
     *
     * @return the count since the handle was opened.
     */
    long lostEvents();

    /**
     * The references the queue pair has now, across every process: one per open handle.
     *
     * @return at least 1 while this handle is open.
     * @throws IllegalStateException if the handle is closed.
     */
    int references();

    /**
     * Drop this handle's reference; the last one destroys the queue pair.
     */
    @Override
    void close();
}

package io.rdmachannel.channel.spi;

import java.io.IOException;

/**
 * A waitable set of event sources, like an ibverbs completion channel multiplexed with epoll: armed completion
 * queues signal it, and a waiter learns which ones by their tokens. A selector or a poller thread waits here.
 *
 * <p>Each arming produces a signal when a completion arrives; a queue may also be signalled without a new
 * completion (for instance when the connection's peer is lost), so a woken waiter polls and may find nothing.
 * Signals are queued until taken, so a signal raised before a waiter arrives is not lost. {@link #wakeup()} makes
 * the current or next {@link #await} return without tokens.
 */
public interface ReadinessSource extends AutoCloseable {
    /**
     * Receives the token of each signalled source.
     */
    @FunctionalInterface
    interface ReadyHandler {
        /**
         * A source with this token was signalled.
         *
         * @param token the token the source was created with.
         */
        void onReady(long token);
    }

    /**
     * Wait until at least one source is signalled, a wake-up, the timeout, or an interrupt, then hand every
     * pending token to the handler.
     *
     * @param timeoutNanos the longest wait; 0 does not wait; a negative value waits without limit.
     * @param handler receives the tokens.
     * @return the number of tokens handed over; 0 on timeout, wake-up or interrupt (the interrupt status is kept).
     * @throws IOException if the source failed.
     * @throws IllegalStateException if the source is closed.
     */
    int await(long timeoutNanos, ReadyHandler handler) throws IOException;

    /**
     * Ask the source to hand each signal to {@code handler} on the thread that raises it, instead of queueing it for
     * {@link #await}. A provider whose signals are raised by Java code (the shared-memory provider) can do this, and
     * then no thread has to wait here: the wake-up of a parked reader costs one thread hop less. A provider whose
     * signals come from the kernel (a completion channel) cannot, and its waiter keeps calling {@link #await}.
     *
     * <p>The handler runs on whatever thread raises the signal, possibly while that thread holds locks of another
     * connection, so it must not block and must not take a connection's lock.
     *
     * @param handler receives the tokens from now on.
     * @return true if signals are dispatched directly from now on ({@link #await} must not be called any more);
     *     false if this source cannot dispatch directly.
     */
    default boolean dispatchDirectly(final ReadyHandler handler) {
        return false;
    }

    /**
     * Make the current {@link #await} return, or the next one if none is waiting. Safe from any thread; a no-op after
     * close.
     */
    void wakeup();

    /**
     * Close the source and wake a waiter. Completion queues that use it must be closed first.
     */
    @Override
    void close();
}

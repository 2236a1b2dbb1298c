package io.rdmachannel.channel.spi;

/**
 * A completion queue. Polling is safe from any thread but meant for one consumer at a time.
 */
public interface CompletionQueue extends AutoCloseable {
    /**
     * Hand up to {@code limit} completions to the handler, oldest first.
     *
     * @param handler receives each completion.
     * @param limit the most completions to take, at least 1.
     * @return the number of completions handled, 0 if the queue was empty.
     * @throws IllegalStateException if the queue is closed or overran (more completions arrived than it holds).
     */
    int poll(CompletionHandler handler, int limit);

    /**
     * Arm the queue: the next completion that arrives signals the {@link ReadinessSource} once. Poll again after
     * arming, since a completion may have arrived before.
     *
     * @throws IllegalStateException if the queue has no readiness source or is closed.
     */
    void requestNotification();

    /**
     * Arm the queue for solicited completions only: receives of requests sent with {@link SendFlags#SOLICITED},
     * and errors.
     *
     * @throws IllegalStateException if the queue has no readiness source or is closed.
     */
    void requestSolicitedNotification();

    /**
     * How many completions the queue holds.
     *
     * @return the capacity, at least the number asked for.
     */
    int capacity();

    /**
     * The source this queue signals.
     *
     * @return the readiness source, or {@code null} for a poll-only queue.
     */
    ReadinessSource readinessSource();

    /**
     * The token handed to the readiness source's handler for this queue.
     *
     * @return the token.
     */
    long token();

    /**
     * Destroy the queue. Queue pairs using it must be closed first.
     *
     * @throws IllegalStateException if a queue pair still uses it.
     */
    @Override
    void close();
}

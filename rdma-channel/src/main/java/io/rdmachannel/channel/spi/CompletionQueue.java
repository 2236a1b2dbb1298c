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
     * A hint for a thread that spins on this queue: whether a {@link #poll} now may find a completion, answered
     * without a lock and at a fraction of a poll's cost. {@code false} means that no completion was published since
     * the last poll; what a queue pair's failure produces (its flushed receives) may escape the hint for a while, so a
     * caller that spins on it still polls now and then. This default always answers {@code true}.
     *
     * @return false only if a poll now would find nothing.
     */
    default boolean mayHaveCompletions() {
        return true;
    }

    /**
     * Arm the queue for solicited completions only: receives of requests sent with {@link SendFlags#SOLICITED},
     * and errors.
     *
     * @throws IllegalStateException if the queue has no readiness source or is closed.
     */
    void requestSolicitedNotification();

    /**
     * Whether a platform thread can wait for this queue's next completion itself ({@link #requestWaiterWakeup},
     * {@link #awaitWakeup}), woken directly by whoever produces the completion (another process's thread on the
     * shared-memory provider): one wake-up, no readiness source and no thread in between.
     *
     * @return false when only the readiness source can report completions.
     */
    default boolean supportsDirectWait() {
        return false;
    }

    /**
     * Arm the queue for a waiting thread: the next completion, or a failure of the queue pair, wakes threads in
     * {@link #awaitWakeup}. Poll again after arming, since a completion may have arrived before. Arming for a waiter
     * does not disarm a {@link #requestNotification()} and the other way round.
     *
     * @return the ticket to wait with.
     * @throws UnsupportedOperationException if {@link #supportsDirectWait()} is false.
     * @throws IllegalStateException if the queue is closed.
     */
    default int requestWaiterWakeup() {
        throw new UnsupportedOperationException("completion queue cannot wake a waiting thread directly");
    }

    /**
     * Park the calling platform thread until the queue was signalled after {@code ticket} was taken,
     * {@link #wakeWaiters()}, or the timeout; spurious returns are possible, so the caller polls and waits again.
     * Virtual threads must not call it: it blocks the carrier.
     *
     * @param ticket from {@link #requestWaiterWakeup()}.
     * @param timeoutNanos the longest wait, negative for none.
     * @throws UnsupportedOperationException if {@link #supportsDirectWait()} is false.
     */
    default void awaitWakeup(final int ticket, final long timeoutNanos) {
        throw new UnsupportedOperationException("completion queue cannot wake a waiting thread directly");
    }

    /**
     * Take back {@link #requestWaiterWakeup()} once no thread waits any more (its wait ended otherwise than by this
     * queue's completion), so the next completion does not wake a futex nobody sleeps on. The caller must know no
     * thread still relies on the arming, or arm again and wake the waiters after it.
     *
     * @return true if there was an arming to take back: the queue supports it.
     */
    default boolean cancelWaiterWakeup() {
        return false;
    }

    /**
     * Whether a thread can wait for this queue together with others in one {@link WaitSet} ({@link #addWaiter}).
     *
     * @return false where the queue has nothing to wait on (a native queue without a completion channel) or the JVM
     *     cannot wait on several (no native access).
     */
    default boolean supportsWaitSet() {
        return false;
    }

    /**
     * A new, empty set of the kind this queue can join, for a thread that will wait for several queues at once. The
     * queues of one provider join each other's sets.
     *
     * @return the set, which the caller closes; null if the queue {@linkplain #supportsWaitSet() cannot be waited on
     *     in a set}.
     */
    default WaitSet newWaitSet() {
        return null;
    }

    /**
     * Arm the queue for a thread that waits on several queues at once ({@link WaitSet}, a selector): as
     * {@link #requestWaiterWakeup()}, and what that thread sleeps on (a shared word with its ticket, a completion
     * channel) is added to {@code set}. Poll again after arming, since a completion may have arrived before.
     *
     * @param set the waiting thread's set.
     * @return false if this queue cannot be waited on in a set, the set is of another kind ({@link #newWaitSet()}),
     *     or the set is full: nothing was armed or added.
     * @throws IllegalStateException if the queue is closed.
     */
    default boolean addWaiter(final WaitSet set) {
        return false;
    }

    /**
     * Wake every thread in {@link #awaitWakeup} now (a close, a shutdown or an interrupt from another thread). Safe
     * from any thread; does nothing on a queue without direct waits.
     */
    default void wakeWaiters() {
    }

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

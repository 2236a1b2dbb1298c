package io.rdmachannel.channel.spi;

import io.rdmachannel.channel.internal.Futex;

/**
 * What one platform thread waits on at once (a selector waiting for many connections): an entry per completion queue
 * the thread waits for, plus a wake-up of the set's own, so that whoever produces the event (the device, a thread of
 * another process) wakes the waiting thread itself, with no thread in between.
 *
 * <p>A provider makes the sets its queues can join ({@link CompletionQueue#newWaitSet()}): shared-memory words
 * waited on with {@code futex_waitv} ({@link WordWaitSet}, the shm provider) or completion channels waited on with
 * {@code poll(2)} (the native provider). A queue refuses a set of another kind ({@link CompletionQueue#addWaiter}
 * returns false) and the waiter then learns of it another way (its readiness source).
 *
 * <p>Filled by {@link CompletionQueue#addWaiter} and waited on by one thread; only {@link #wake()} may be called from
 * other threads. Made once per waiting thread: filling it and waiting allocate nothing. One round is
 * {@link #clear()}, adds, {@link #await} (or not, if an armed queue was ready already), {@link #changed} for the
 * entries of interest, then {@link #end()}.
 */
public abstract class WaitSet implements AutoCloseable {
    /** How many entries one set holds, its own wake-up included. */
    public static final int CAPACITY = Futex.WAITV_MAX;

    private int size;

    /**
     * For the subclasses.
     */
    protected WaitSet() {
    }

    /**
     * Begin a new wait: the set holds its own wake-up only, so a {@link #wake()} from now on ends the next
     * {@link #await}.
     */
    public abstract void clear();

    /**
     * How many entries the set holds, its own wake-up included.
     *
     * @return the size, at least 1.
     */
    public final int size() {
        return size;
    }

    /**
     * How many more entries fit.
     *
     * @return the free places.
     */
    public final int remaining() {
        return CAPACITY - size;
    }

    /**
     * Drop the entries added since the set had {@code newSize} entries.
     *
     * @param newSize the size to go back to, at least 1 and at most {@link #size()}.
     */
    public final void truncate(final int newSize) {
        if (newSize < 1 || newSize > size) {
            throw new IllegalArgumentException("cannot truncate a set of " + size + " to " + newSize);
        }
        drop(newSize, size);
        size = newSize;
    }

    /**
     * Let go of the entries from {@code from} to {@code to} (exclusive), which {@link #truncate} or {@link #clear()}
     * takes out of the set.
     *
     * @param from the first entry dropped.
     * @param to the size before.
     */
    protected abstract void drop(int from, int to);

    /**
     * Set the number of entries: by {@link #clear()} (to 0 or 1) and after an entry was filled in at index
     * {@link #size()} (to one more).
     *
     * @param newSize the new size, 0 to {@link #CAPACITY}.
     */
    protected final void resize(final int newSize) {
        if (newSize < 0 || newSize > CAPACITY) {
            throw new IllegalArgumentException("a wait set holds 0 to " + CAPACITY + " entries, not " + newSize);
        }
        size = newSize;
    }

    /**
     * Sleep until an entry of the set fires (its queue's event, or a word that differs from its expected value), a
     * {@link #wake()}, the deadline, or a signal. Spurious returns are possible: the caller looks at what it waits for
     * and waits again. Blocks the carrier of a virtual thread: for platform threads.
     *
     * @param deadlineNanos an absolute {@link System#nanoTime()}, or 0 for none.
     */
    public abstract void await(long deadlineNanos);

    /**
     * Whether an entry among those at {@code from} (inclusive) to {@code to} (exclusive) fired (or its queue is
     * gone): what the thread waited for there may have happened.
     *
     * @param from the first index, as {@link #size()} was before the entries were added.
     * @param to the index after the last.
     * @return true if one fired.
     */
    public abstract boolean changed(int from, int to);

    /**
     * The round is over: let go of the queues of this round (their entries stay readable by {@link #changed} until
     * the next {@link #clear()}). Does nothing for a set that holds nothing of them.
     */
    public void end() {
    }

    /**
     * End the current or next {@link #await} of this set's thread. Safe from any thread, also after {@link #close()}
     * (then it does nothing).
     */
    public abstract void wake();

    /**
     * Release what the set holds of its own (a descriptor); the set is not used afterwards. Does nothing for a set
     * made of memory alone.
     */
    @Override
    public void close() {
    }
}

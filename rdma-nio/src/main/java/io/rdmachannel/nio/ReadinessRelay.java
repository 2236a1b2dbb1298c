package io.rdmachannel.nio;

import java.nio.channels.Selector;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

import io.rdmachannel.channel.stream.ReadinessObserver;

/**
 * The observer one channel gives its endpoint. An engine call (or the channel itself, on close and shutdown) bumps a
 * generation and wakes the channel's parked threads, and tells every selector the channel is registered with that
 * the key may be ready. Waiting is on a {@link ReentrantLock} condition, so a virtual thread unmounts.
 */
final class ReadinessRelay implements ReadinessObserver {
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition changed = lock.newCondition();
    private final CopyOnWriteArrayList<RdmaSelectionKey> keys = new CopyOnWriteArrayList<>();
    private volatile long generation;
    /** A platform selector a thread of the channel waits in instead of on the condition, or null. */
    private volatile Selector platformWaiter;

    @Override
    public void onReadiness() {
        signal();
        // forEach walks the list's array: no iterator per call (this runs for every readiness event)
        keys.forEach(RdmaSelectionKey::maybeReady);
    }

    /**
     * Wake the channel's parked threads only.
     */
    void signal() {
        lock.lock();
        try {
            generation++;
            changed.signalAll();
        } finally {
            lock.unlock();
        }
        final Selector waiter = platformWaiter;
        if (waiter != null) {
            waiter.wakeup();
        }
    }

    /**
     * Have every signal also wake {@code waiter}: a channel that waits for a platform channel and the endpoint at
     * once waits in a platform selector.
     */
    void wakeAlso(final Selector waiter) {
        platformWaiter = waiter;
    }

    /**
     * Cancel the platform registrations of this channel's keys that were cancelled but not yet dropped by their
     * selectors, so the platform channel may be put in blocking mode at once (as after a cancel on the JDK's own
     * selectors). Called with the channel's blocking lock held.
     */
    void releasePlatformRegistrations() {
        keys.forEach(RdmaSelectionKey::releasePlatformIfCancelled);
    }

    long generation() {
        return generation;
    }

    void addKey(final RdmaSelectionKey key) {
        keys.add(key);
    }

    void removeKey(final RdmaSelectionKey key) {
        keys.remove(key);
    }

    /**
     * Park until the generation moves on from {@code seen}. Interrupts do not end the wait (the channel is closed by
     * the interrupt, which signals); the interrupt status is kept.
     *
     * @param seen the generation read before the endpoint was armed.
     * @param deadline a {@link System#nanoTime()} deadline, or 0 for none.
     * @return false if the deadline passed first.
     */
    boolean await(final long seen, final long deadline) {
        boolean interrupted = false;
        lock.lock();
        try {
            while (generation == seen) {
                if (deadline == 0) {
                    changed.awaitUninterruptibly();
                    continue;
                }
                final long remaining = deadline - System.nanoTime();
                if (remaining <= 0) {
                    return false;
                }
                try {
                    changed.awaitNanos(remaining);
                } catch (final InterruptedException ex) {
                    interrupted = true;
                }
            }
            return true;
        } finally {
            lock.unlock();
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    static long deadline(final long nanos) {
        if (nanos <= 0 || nanos == Long.MAX_VALUE) {
            return 0;
        }
        final long deadline = System.nanoTime() + nanos;
        return deadline == 0 ? 1 : deadline;
    }

    static long deadlineMillis(final long millis) {
        return deadline(TimeUnit.MILLISECONDS.toNanos(millis));
    }
}

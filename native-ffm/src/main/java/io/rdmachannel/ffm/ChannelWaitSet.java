package io.rdmachannel.ffm;

import static io.rdmachannel.ffm.layout.LibcLayouts.POLLFD_EVENTS;
import static io.rdmachannel.ffm.layout.LibcLayouts.POLLFD_FD;
import static io.rdmachannel.ffm.layout.LibcLayouts.POLLFD_REVENTS;
import static io.rdmachannel.ffm.layout.LibcLayouts.POLLFD_SIZE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import io.rdmachannel.channel.spi.WaitSet;
import io.rdmachannel.ffm.internal.EventFd;
import io.rdmachannel.ffm.internal.LibC;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Objects;
import java.util.concurrent.TimeUnit;

/**
 * A wait set of the native provider: the completion channels of the queues a selector waits for, and an eventfd of
 * the set's own, waited on together with {@code poll(2)}, so the device's interrupt on any channel wakes the selecting
 * thread itself, with no poller thread in between (the readiness source's epoll thread relays otherwise).
 *
 * <p>A queue joins with {@link NativeCompletionQueue#addWaiter}: it registers the set among its waiters (whoever else
 * reads the channel's events then wakes the set, as it wakes a {@link WaitingThread}), arms for a waiter and adds its
 * channel here with its waiter ticket. When {@code poll} reports a channel readable, the set has the queue read its
 * events and hand on what was armed by others (the readiness source's token, other waiters). {@link #end()} takes
 * the set off its queues; a queue that closes takes it off itself without waiting for it (a set never touches a closed
 * queue's channel: the queue reads it under its event lock, where it checks that it is open).
 *
 * <p>A wake-up writes the eventfd, so a wake at any time before a wait ends it (the set sleeps in no other place);
 * the eventfd is drained in the round whose {@code poll} found it readable, so that round returns at once and the
 * next one sleeps again, and a round that is not woken costs one system call, the {@code poll}. Nothing is
 * allocated per round.
 */
final class ChannelWaitSet extends WaitSet {
    private final EventFd wakeFd;
    private final MemorySegment pollFds;
    private final NativeCompletionQueue[] queues = new NativeCompletionQueue[CAPACITY];
    private final int[] tickets = new int[CAPACITY];
    private final boolean[] fired = new boolean[CAPACITY];
    private final Object fdLock = new Object();
    /** Whether queues may hold the set among their waiters: from the first add to {@link #end()}. */
    private boolean registered;
    private boolean closed;

    /**
     * An empty set.
     *
     * @throws IllegalStateException if its eventfd cannot be made.
     */
    ChannelWaitSet() {
        try {
            wakeFd = new EventFd();
        } catch (NativeCallException e) {
            throw new IllegalStateException("cannot create a wait set's wake-up eventfd: " + e.getMessage(), e);
        }
        // automatic: wake() may run on another thread after the owner closed the set; the array is never freed under it
        pollFds = Arena.ofAuto().allocate((long) CAPACITY * POLLFD_SIZE, 8);
        pollFds.set(JAVA_INT, POLLFD_FD, wakeFd.fd());
        pollFds.set(JAVA_SHORT, POLLFD_EVENTS, (short) LibC.POLLIN);
        resize(1);
    }

    @Override
    public void clear() {
        end();
        for (int i = 1; i < size(); i++) {
            queues[i] = null;
        }
        resize(1);
    }

    /**
     * Add a queue's completion channel; the queue registered the set among its waiters and armed it first.
     *
     * @return false if the set is full.
     */
    boolean add(NativeCompletionQueue queue, int channelFd, int ticket) {
        int size = size();
        if (size == CAPACITY) {
            return false;
        }
        long base = (long) size * POLLFD_SIZE;
        pollFds.set(JAVA_INT, base + POLLFD_FD, channelFd);
        pollFds.set(JAVA_SHORT, base + POLLFD_EVENTS, (short) LibC.POLLIN);
        pollFds.set(JAVA_SHORT, base + POLLFD_REVENTS, (short) 0);
        registered = true;
        queues[size] = queue;
        tickets[size] = ticket;
        fired[size] = false;
        resize(size + 1);
        return true;
    }

    /** Entries dropped by a truncate: their queues no longer wake the set, unless an entry kept holds them too. */
    @Override
    protected void drop(int from, int to) {
        for (int i = from; i < to; i++) {
            NativeCompletionQueue queue = queues[i];
            queues[i] = null;
            if (!holds(queue, from)) {
                queue.unregisterSet(this);
            }
        }
    }

    private boolean holds(NativeCompletionQueue queue, int below) {
        for (int i = 1; i < below; i++) {
            if (queues[i] == queue) {
                return true;
            }
        }
        return false;
    }

    @Override
    public void await(long deadlineNanos) {
        int millis = -1;
        if (deadlineNanos != 0) {
            long remaining = deadlineNanos - System.nanoTime();
            if (remaining <= 0) {
                return;
            }
            // rounded up: a wait shorter than asked would return before the deadline
            millis = (int) Math.min(Integer.MAX_VALUE, TimeUnit.NANOSECONDS.toMillis(remaining + 999_999));
        }
        int size = size();
        for (int i = 0; i < size; i++) {
            pollFds.set(JAVA_SHORT, (long) i * POLLFD_SIZE + POLLFD_REVENTS, (short) 0);
        }
        int ready;
        try {
            ready = LibC.poll(pollFds, size, millis);
        } catch (NativeCallException e) {
            throw new IllegalStateException("cannot wait on " + (size - 1) + " completion channels: "
                + e.getMessage(), e);
        }
        if (ready == 0) {
            return;
        }
        if (pollFds.get(JAVA_SHORT, POLLFD_REVENTS) != 0) {
            drainWakeups();
        }
        for (int i = 1; i < size; i++) {
            if (pollFds.get(JAVA_SHORT, (long) i * POLLFD_SIZE + POLLFD_REVENTS) != 0) {
                fired[i] = true;
                queues[i].channelReadable(this);
            }
        }
    }

    private void drainWakeups() {
        synchronized (fdLock) {
            if (closed) {
                return;
            }
            try {
                wakeFd.drain();
            } catch (NativeCallException e) {
                throw new IllegalStateException("cannot reset a wait set's wake-up eventfd: " + e.getMessage(), e);
            }
        }
    }

    @Override
    public boolean changed(int from, int to) {
        Objects.checkFromToIndex(from, to, size());
        for (int i = Math.max(from, 1); i < to; i++) {
            if (fired[i] || queues[i].waitSetEntryChanged(tickets[i])) {
                return true;
            }
        }
        return false;
    }

    @Override
    public void end() {
        if (!registered) {
            return;
        }
        registered = false;
        for (int i = 1; i < size(); i++) {
            // a queue added twice is taken off at the first call
            queues[i].unregisterSet(this);
        }
    }

    @Override
    public void wake() {
        synchronized (fdLock) {
            if (closed) {
                return;
            }
            try {
                wakeFd.signal();
            } catch (NativeCallException e) {
                throw new IllegalStateException("cannot wake a wait set: " + e.getMessage(), e);
            }
        }
    }

    @Override
    public void close() {
        end();
        synchronized (fdLock) {
            if (closed) {
                return;
            }
            closed = true;
            try {
                wakeFd.close();
            } catch (NativeCallException ignored) {
                // the descriptor is gone either way
            }
        }
    }

    @Override
    public String toString() {
        return "ChannelWaitSet{size=" + size() + ", wakeFd=" + wakeFd + '}';
    }
}

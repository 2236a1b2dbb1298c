package io.rdmachannel.ffm;

import io.rdmachannel.channel.spi.ReadinessSource;
import io.rdmachannel.channel.spi.ResourceCounter;
import io.rdmachannel.ffm.internal.EpollWaitSet;
import io.rdmachannel.ffm.internal.LibC;
import java.io.IOException;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;

/**
 * An epoll set over the completion channels of the queues created with this source (one {@code ibv_comp_channel}
 * per queue, so a thread can also wait on one queue's channel itself), plus an eventfd for {@link #wakeup()}. Each
 * channel is watched one-shot: {@link NativeCompletionQueue#requestNotification()} re-enables it, so a channel
 * armed only for a directly waiting thread never wakes this source's waiter.
 *
 * <p>{@link #await} waits in epoll, lets each reported queue take and acknowledge its events, and hands the token
 * of each queue that was armed for this source over once. A queue whose events a directly waiting thread took
 * while it was also armed for this source {@link #forward forwards} its token here. Events are acknowledged before
 * {@code await} returns, so destroying a queue never waits on this source.
 *
 * <p>Interrupts: the wait is a loop of epoll waits of at most {@value #SLICE_MILLIS} ms that checks the waiting
 * thread's interrupt status between them, so an interrupted waiter returns 0 (status kept) within that time. There
 * is no interrupt hook to write the eventfd from: {@code Thread.interrupt} offers none outside {@code java.nio}.
 */
final class NativeReadinessSource implements ReadinessSource {
    static final int SLICE_MILLIS = 50;
    private static final int CAPACITY = 64;

    private final NativeDevice device;
    private final EpollWaitSet waitSet;
    private final ReentrantLock awaitLock = new ReentrantLock();
    private final Object lifecycle = new Object();
    private final Object slotsLock = new Object();
    private final Object forwardLock = new Object();
    private NativeCompletionQueue[] slots = new NativeCompletionQueue[8];
    private boolean[] reserved = new boolean[8];
    private final NativeCompletionQueue[] reported = new NativeCompletionQueue[CAPACITY];
    private long[] handOver = new long[CAPACITY];
    private long[] forwarded = new long[8];
    private int forwardedCount;
    private int users;
    private volatile boolean closed;

    private NativeReadinessSource(NativeDevice device, EpollWaitSet waitSet) {
        this.device = device;
        this.waitSet = waitSet;
    }

    static NativeReadinessSource create(NativeDevice device) throws IOException {
        return new NativeReadinessSource(device, new EpollWaitSet(CAPACITY));
    }

    NativeDevice device() {
        return device;
    }

    /** Reserve a slot for a queue about to be created: its channel's token in the epoll set. */
    int reserveSlot() {
        synchronized (slotsLock) {
            ensureOpen();
            for (int i = 0; i < slots.length; i++) {
                if (slots[i] == null && !reserved[i]) {
                    users++;
                    reserved[i] = true;
                    return i;
                }
            }
            int slot = slots.length;
            slots = Arrays.copyOf(slots, slot * 2);
            reserved = Arrays.copyOf(reserved, slot * 2);
            users++;
            reserved[slot] = true;
            return slot;
        }
    }

    /** Watch a created queue's channel, disabled until its first {@link #watch}. */
    void attach(int slot, NativeCompletionQueue queue) throws NativeCallException {
        synchronized (slotsLock) {
            waitSet.add(queue.channelFd(), LibC.EPOLLONESHOT, slot);
            slots[slot] = queue;
            reserved[slot] = false;
        }
    }

    /** Give a slot back: the queue's channel is no longer watched (it is about to be destroyed). */
    void release(int slot, NativeCompletionQueue queue) {
        synchronized (slotsLock) {
            if (queue != null && slots[slot] == queue) {
                try {
                    waitSet.remove(queue.channelFd());
                } catch (NativeCallException e) {
                    throw new IllegalStateException("cannot stop watching completion channel of " + queue + ": "
                        + e.getMessage(), e);
                } finally {
                    slots[slot] = null;
                }
            }
            reserved[slot] = false;
            users--;
        }
    }

    /** Re-enable the one-shot watch of a queue's channel. */
    void watch(int slot, int channelFd) {
        try {
            waitSet.modify(channelFd, LibC.EPOLLIN | LibC.EPOLLONESHOT, slot);
        } catch (NativeCallException e) {
            throw new IllegalStateException("cannot watch a completion channel: " + e.getMessage(), e);
        }
    }

    /** A queue armed for this source had its event taken by a directly waiting thread: report its token. */
    void forward(long token) {
        synchronized (forwardLock) {
            if (forwardedCount == forwarded.length) {
                forwarded = Arrays.copyOf(forwarded, forwardedCount * 2);
            }
            forwarded[forwardedCount++] = token;
        }
        wakeup();
    }

    @Override
    public int await(long timeoutNanos, ReadyHandler handler) throws IOException {
        int count = 0;
        long[] tokens;
        awaitLock.lock();
        try {
            ensureOpen();
            long deadline = System.nanoTime() + Math.max(0, timeoutNanos);
            while (true) {
                boolean interrupted = Thread.currentThread().isInterrupted();
                int waitMillis = interrupted ? 0 : waitMillis(timeoutNanos, deadline);
                int ready = waitSet.await(waitMillis);
                boolean woken = false;
                int reportedCount = 0;
                synchronized (slotsLock) {
                    for (int i = 0; i < ready; i++) {
                        long token = waitSet.token(i);
                        if (token == EpollWaitSet.WAKEUP_TOKEN) {
                            woken = true;
                        } else if (token >= 0 && token < slots.length && slots[(int) token] != null) {
                            reported[reportedCount++] = slots[(int) token];
                        }
                    }
                }
                // outside slotsLock: a closing queue holds its event lock while it gives its slot back
                for (int i = 0; i < reportedCount; i++) {
                    NativeCompletionQueue queue = reported[i];
                    reported[i] = null;
                    if (queue.takeEventsForSource()) {
                        count = handOver(count, queue.token());
                    }
                }
                count = takeForwarded(count);
                if (count > 0 || woken || interrupted || closed || timeoutNanos == 0
                    || timeoutNanos > 0 && deadline - System.nanoTime() <= 0) {
                    break;
                }
            }
            tokens = handOver;
        } finally {
            awaitLock.unlock();
        }
        for (int i = 0; i < count; i++) {
            handler.onReady(tokens[i]);
        }
        return count;
    }

    private int takeForwarded(int count) {
        synchronized (forwardLock) {
            for (int i = 0; i < forwardedCount; i++) {
                count = handOver(count, forwarded[i]);
            }
            forwardedCount = 0;
        }
        return count;
    }

    private int handOver(int count, long token) {
        for (int i = 0; i < count; i++) {
            if (handOver[i] == token) {
                return count;
            }
        }
        if (count == handOver.length) {
            handOver = Arrays.copyOf(handOver, count * 2);
        }
        handOver[count] = token;
        return count + 1;
    }

    private static int waitMillis(long timeoutNanos, long deadline) {
        if (timeoutNanos == 0) {
            return 0;
        }
        if (timeoutNanos < 0) {
            return SLICE_MILLIS;
        }
        long remaining = Math.max(0, deadline - System.nanoTime());
        return (int) Math.min(SLICE_MILLIS, TimeUnit.NANOSECONDS.toMillis(remaining + 999_999));
    }

    @Override
    public void wakeup() {
        synchronized (lifecycle) {
            if (closed) {
                return;
            }
            try {
                waitSet.wakeup();
            } catch (NativeCallException e) {
                throw new IllegalStateException("cannot wake the readiness source: " + e.getMessage(), e);
            }
        }
    }

    private void ensureOpen() {
        if (closed) {
            throw new IllegalStateException("readiness source is closed");
        }
    }

    @Override
    public void close() {
        synchronized (slotsLock) {
            if (closed) {
                return;
            }
            if (users != 0) {
                throw new IllegalStateException("readiness source is still used by " + users
                    + " completion queues: close them first");
            }
            synchronized (lifecycle) {
                closed = true;
                try {
                    waitSet.wakeup();
                } catch (NativeCallException ignored) {
                    // the waiter also sees the closed flag within one slice
                }
            }
        }
        awaitLock.lock();
        try {
            waitSet.close();
        } catch (NativeCallException e) {
            throw new IllegalStateException("cannot close the readiness source: " + e.getMessage(), e);
        } finally {
            awaitLock.unlock();
            device.childClosed(ResourceCounter.Kind.READINESS_SOURCE);
        }
    }

    @Override
    public String toString() {
        return "NativeReadinessSource{users=" + users + ", closed=" + closed + '}';
    }
}

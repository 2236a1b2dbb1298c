package io.rdmachannel.ffm;

import static io.rdmachannel.ffm.layout.IbvResourceLayouts.COMP_CHANNEL_FD;
import static io.rdmachannel.ffm.layout.IbvResourceLayouts.COMP_CHANNEL_SIZE;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import io.rdmachannel.channel.spi.ReadinessSource;
import io.rdmachannel.ffm.internal.EpollWaitSet;
import io.rdmachannel.ffm.internal.LibC;
import io.rdmachannel.ffm.verbs.IbvCalls;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;

/**
 * One {@code ibv_comp_channel} (its fd non-blocking) shared by the completion queues created with this source, and
 * an epoll set over that fd plus an eventfd for {@link #wakeup()}. Each queue's {@code cq_context} is its slot here
 * (plus one), so an event names the queue without a map lookup.
 *
 * <p>{@link #await} waits in epoll, then drains the channel with {@code ibv_get_cq_event} until EAGAIN,
 * acknowledges the events with one {@code ibv_ack_cq_events} per queue and hands each signalled queue's token over
 * once. Events are acknowledged before {@code await} returns, so destroying a queue never waits on this source.
 *
 * <p>Interrupts: the wait is a loop of epoll waits of at most {@value #SLICE_MILLIS} ms that checks the waiting
 * thread's interrupt status between them, so an interrupted waiter returns 0 (status kept) within that time. There
 * is no interrupt hook to write the eventfd from: {@code Thread.interrupt} offers none outside {@code java.nio}.
 */
final class NativeReadinessSource implements ReadinessSource {
    static final int SLICE_MILLIS = 50;
    private static final long CHANNEL_TOKEN = 0;

    private final NativeDevice device;
    private final MemorySegment channel;
    private final EpollWaitSet waitSet;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment cqOut;
    private final MemorySegment contextOut;
    private final ReentrantLock awaitLock = new ReentrantLock();
    private final Object lifecycle = new Object();
    private final Object slotsLock = new Object();
    private NativeCompletionQueue[] slots = new NativeCompletionQueue[8];
    private int[] pendingEvents = new int[8];
    private int[] touched = new int[8];
    private long[] handOver = new long[8];
    private int users;
    private volatile boolean closed;

    private NativeReadinessSource(NativeDevice device, MemorySegment channel, EpollWaitSet waitSet) {
        this.device = device;
        this.channel = channel;
        this.waitSet = waitSet;
        this.cqOut = arena.allocate(ADDRESS);
        this.contextOut = arena.allocate(ADDRESS);
    }

    static NativeReadinessSource create(NativeDevice device) throws IOException {
        MemorySegment channel = IbvCalls.createCompChannel(device.context()).reinterpret(COMP_CHANNEL_SIZE);
        EpollWaitSet waitSet = null;
        try {
            int fd = channel.get(JAVA_INT, COMP_CHANNEL_FD);
            LibC.setNonBlocking(fd);
            waitSet = new EpollWaitSet(4);
            waitSet.add(fd, LibC.EPOLLIN, CHANNEL_TOKEN);
            return new NativeReadinessSource(device, channel, waitSet);
        } catch (IOException | RuntimeException | Error e) {
            if (waitSet != null) {
                try {
                    waitSet.close();
                } catch (NativeCallException suppressed) {
                    e.addSuppressed(suppressed);
                }
            }
            try {
                IbvCalls.destroyCompChannel(channel);
            } catch (NativeCallException suppressed) {
                e.addSuppressed(suppressed);
            }
            throw e;
        }
    }

    NativeDevice device() {
        return device;
    }

    MemorySegment channel() {
        return channel;
    }

    /** Reserve a slot for a queue about to be created; its {@code cq_context} is the slot plus one. */
    int reserveSlot() {
        synchronized (slotsLock) {
            ensureOpen();
            for (int i = 0; i < slots.length; i++) {
                if (slots[i] == null && !reserved(i)) {
                    users++;
                    reservedMark(i);
                    return i;
                }
            }
            int slot = slots.length;
            slots = Arrays.copyOf(slots, slot * 2);
            pendingEvents = Arrays.copyOf(pendingEvents, slot * 2);
            touched = Arrays.copyOf(touched, slot * 2);
            users++;
            reservedMark(slot);
            return slot;
        }
    }

    private boolean reserved(int slot) {
        return pendingEvents[slot] < 0;
    }

    private void reservedMark(int slot) {
        pendingEvents[slot] = -1;
    }

    void attach(int slot, NativeCompletionQueue queue) {
        synchronized (slotsLock) {
            slots[slot] = queue;
            pendingEvents[slot] = 0;
        }
    }

    void release(int slot) {
        synchronized (slotsLock) {
            slots[slot] = null;
            pendingEvents[slot] = 0;
            users--;
        }
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
                boolean signalled = false;
                for (int i = 0; i < ready; i++) {
                    if (waitSet.token(i) == EpollWaitSet.WAKEUP_TOKEN) {
                        woken = true;
                    } else {
                        signalled = true;
                    }
                }
                if (signalled) {
                    count = drain();
                }
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

    /** Read every queued event, acknowledge them per queue, and collect each signalled queue's token once. */
    private int drain() throws NativeCallException {
        synchronized (slotsLock) {
            int touchedCount = 0;
            while (IbvCalls.getCqEvent(channel, cqOut, contextOut)) {
                MemorySegment cq = cqOut.get(ADDRESS, 0);
                long slot = contextOut.get(ADDRESS, 0).address() - 1;
                NativeCompletionQueue queue = slot >= 0 && slot < slots.length ? slots[(int) slot] : null;
                if (queue == null || queue.address() != cq.address()) {
                    // a queue being destroyed: acknowledge at once, its destruction waits for it
                    IbvCalls.ackCqEvents(cq, 1);
                    continue;
                }
                if (pendingEvents[(int) slot]++ == 0) {
                    touched[touchedCount++] = (int) slot;
                }
            }
            if (handOver.length < touchedCount) {
                handOver = new long[slots.length];
            }
            for (int i = 0; i < touchedCount; i++) {
                int slot = touched[i];
                NativeCompletionQueue queue = slots[slot];
                IbvCalls.ackCqEvents(queue.cq(), pendingEvents[slot]);
                pendingEvents[slot] = 0;
                handOver[i] = queue.token();
            }
            return touchedCount;
        }
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
            IbvCalls.destroyCompChannel(channel);
        } catch (NativeCallException e) {
            throw new IllegalStateException("cannot close the readiness source: " + e.getMessage(), e);
        } finally {
            awaitLock.unlock();
            arena.close();
            device.childClosed();
        }
    }

    @Override
    public String toString() {
        return "NativeReadinessSource{fd=" + (closed ? -1 : channel.get(JAVA_INT, COMP_CHANNEL_FD))
            + ", users=" + users + ", closed=" + closed + '}';
    }
}

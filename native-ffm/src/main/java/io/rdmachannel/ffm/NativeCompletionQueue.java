package io.rdmachannel.ffm;

import static io.rdmachannel.ffm.layout.IbvResourceLayouts.COMP_CHANNEL_FD;
import static io.rdmachannel.ffm.layout.IbvResourceLayouts.COMP_CHANNEL_SIZE;
import static io.rdmachannel.ffm.layout.IbvResourceLayouts.CQ_CQE;
import static io.rdmachannel.ffm.layout.IbvResourceLayouts.CQ_SIZE;
import static io.rdmachannel.ffm.layout.IbvWorkRequestLayouts.WC_OPCODE;
import static io.rdmachannel.ffm.layout.IbvWorkRequestLayouts.WC_QP_NUM;
import static io.rdmachannel.ffm.layout.IbvWorkRequestLayouts.WC_SIZE;
import static io.rdmachannel.ffm.layout.IbvWorkRequestLayouts.WC_STATUS;
import static io.rdmachannel.ffm.layout.IbvWorkRequestLayouts.WC_WR_ID;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.rdmachannel.channel.spi.CompletionHandler;
import io.rdmachannel.channel.spi.CompletionQueue;
import io.rdmachannel.channel.spi.ReadinessSource;
import io.rdmachannel.channel.spi.ResourceCounter;
import io.rdmachannel.channel.spi.SharedReceiveQueue;
import io.rdmachannel.channel.spi.WaitSet;
import io.rdmachannel.ffm.internal.Errno;
import io.rdmachannel.ffm.internal.LibC;
import io.rdmachannel.ffm.verbs.CompletionQueueOps;
import io.rdmachannel.ffm.verbs.IbvCalls;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.ReentrantLock;

/**
 * An {@code ibv_cq}. {@link #poll} calls {@code poll_cq} through the ops table into a pre-allocated array of
 * {@value #BATCH} {@code ibv_wc} and hands each entry to the handler through one {@link NativeWorkCompletion}
 * flyweight: nothing is allocated per poll.
 *
 * <p>A queue made with a readiness source has its own {@code ibv_comp_channel} (its fd non-blocking), watched by
 * the source, and can be waited on directly: a platform thread armed with {@link #requestWaiterWakeup} sleeps in
 * {@code poll(2)} on the channel fd and its own eventfd ({@link WaitingThread}), so the device's interrupt wakes it
 * with no other thread in between. Who reads the channel's events (the source or a waiting thread, one at a time
 * under the event lock) acknowledges them and delivers what the queue was armed for: the source's token (handed
 * to the source, or {@linkplain NativeReadinessSource#forward forwarded} to it by a waiting thread) and a wake-up
 * of every waiting thread (the waiter sequence is bumped, then their eventfds are written). A selector waits on many
 * such channels at once in a {@link ChannelWaitSet}, registered among the waiters the same way.
 *
 * <p>A queue pair the device failed by an async event {@linkplain #injectFailure injects} a failed receive completion
 * (status {@code IBV_WC_FATAL_ERR}, its QP number, work request id 0), and one of a shared receive queue that reached
 * its last receive ({@code IBV_EVENT_QP_LAST_WQE_REACHED}) a flushed one of id
 * {@link io.rdmachannel.channel.spi.SharedReceiveQueue#LAST_RECEIVE_ID}: {@link #poll} hands them out after what
 * the device delivered, and the injection wakes whoever the queue was armed for, as a device event would.
 */
final class NativeCompletionQueue implements CompletionQueue {
    static final int BATCH = 16;
    private static final long LAST_RECEIVE_BIT = 1L << 32;
    private static final int ARMED_READINESS = 1;
    private static final int ARMED_WAITER = 2;

    private final NativeDevice device;
    private final MemorySegment cq;
    private final long address;
    private final NativeReadinessSource source;
    private final MemorySegment channel;
    private final int channelFd;
    private final int slot;
    private final long token;
    private final int capacity;
    private final CompletionQueueOps ops;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment completions;
    private final NativeWorkCompletion completion;
    private final MemorySegment cqOut;
    private final MemorySegment contextOut;
    private final ReentrantLock pollLock = new ReentrantLock();
    private final ReentrantLock eventLock = new ReentrantLock();
    private final AtomicInteger armed = new AtomicInteger();
    private final AtomicBoolean watched = new AtomicBoolean();
    private final AtomicInteger waiterSequence = new AtomicInteger();
    private final Object waitersLock = new Object();
    private final Object injectedLock = new Object();
    /** Injected completions: the QP number in the low 32 bits, 1 in bit 32 for a last-receive report. */
    private long[] injected = new long[1];
    private int injectedCount;
    private volatile boolean injectedPending;
    private WaitingThread[] waiters = new WaitingThread[2];
    private int waiterCount;
    private ChannelWaitSet[] sets = new ChannelWaitSet[1];
    private int setCount;
    private int attached;
    private volatile boolean closed;

    private NativeCompletionQueue(NativeDevice device, MemorySegment cq, NativeReadinessSource source,
        MemorySegment channel, int slot, long token) {
        this.device = device;
        this.cq = cq.reinterpret(CQ_SIZE);
        this.address = cq.address();
        this.source = source;
        this.channel = channel;
        this.channelFd = channel == null ? -1 : channel.get(JAVA_INT, COMP_CHANNEL_FD);
        this.slot = slot;
        this.token = token;
        this.capacity = this.cq.get(JAVA_INT, CQ_CQE);
        this.ops = CompletionQueueOps.of(this.cq, device.critical());
        MemorySegment array = arena.allocate(WC_SIZE * BATCH, 8);
        // the call gets a global-scope view: no arena acquire per poll; poll checks `closed` under the lock
        this.completions = MemorySegment.ofAddress(array.address()).reinterpret(array.byteSize());
        this.completion = new NativeWorkCompletion(array);
        this.cqOut = arena.allocate(ADDRESS);
        this.contextOut = arena.allocate(ADDRESS);
    }

    static NativeCompletionQueue create(NativeDevice device, int entries, NativeReadinessSource source, long token)
        throws IOException {
        if (source == null) {
            MemorySegment cq = IbvCalls.createCq(device.context(), entries, MemorySegment.NULL, MemorySegment.NULL, 0);
            try {
                return new NativeCompletionQueue(device, cq, null, null, -1, token);
            } catch (RuntimeException | Error e) {
                destroyQuietly(e, cq, null);
                throw e;
            }
        }
        int slot = source.reserveSlot();
        MemorySegment channel = null;
        MemorySegment cq = null;
        NativeCompletionQueue queue = null;
        try {
            channel = IbvCalls.createCompChannel(device.context()).reinterpret(COMP_CHANNEL_SIZE);
            LibC.setNonBlocking(channel.get(JAVA_INT, COMP_CHANNEL_FD));
            cq = IbvCalls.createCq(device.context(), entries, MemorySegment.NULL, channel, 0);
            queue = new NativeCompletionQueue(device, cq, source, channel, slot, token);
            source.attach(slot, queue);
            return queue;
        } catch (IOException | RuntimeException | Error e) {
            if (queue != null) {
                queue.arena.close();
            }
            destroyQuietly(e, cq, channel);
            source.release(slot, null);
            throw e;
        }
    }

    private static void destroyQuietly(Throwable failure, MemorySegment cq, MemorySegment channel) {
        try {
            if (cq != null) {
                IbvCalls.destroyCq(cq);
            }
        } catch (NativeCallException suppressed) {
            failure.addSuppressed(suppressed);
        }
        try {
            if (channel != null) {
                IbvCalls.destroyCompChannel(channel);
            }
        } catch (NativeCallException suppressed) {
            failure.addSuppressed(suppressed);
        }
    }

    long address() {
        return address;
    }

    MemorySegment cq() {
        return cq;
    }

    NativeDevice device() {
        return device;
    }

    @Override
    public int poll(CompletionHandler handler, int limit) {
        if (limit < 1) {
            throw new IllegalArgumentException("limit must be at least 1: limit=" + limit);
        }
        pollLock.lock();
        try {
            ensureOpen();
            int count = 0;
            while (count < limit) {
                int wanted = Math.min(BATCH, limit - count);
                int polled = ops.pollCq(cq, wanted, completions);
                if (polled < 0) {
                    throw new IllegalStateException("completion queue 0x" + Long.toHexString(address)
                        + ": ibv_poll_cq(..) failed with error(" + polled + ")"
                        + " (an overrun or a device error)");
                }
                for (int i = 0; i < polled; i++) {
                    completion.wrap(i);
                    handler.onCompletion(completion);
                }
                count += polled;
                if (polled < wanted) {
                    break;
                }
            }
            return injectedPending && count < limit ? pollInjected(handler, count, limit) : count;
        } finally {
            pollLock.unlock();
        }
    }

    /** Hand out injected failures, in the poll array's first entry, while the limit allows. */
    private int pollInjected(CompletionHandler handler, int count, int limit) {
        while (count < limit) {
            long entry;
            synchronized (injectedLock) {
                if (injectedCount == 0) {
                    injectedPending = false;
                    return count;
                }
                entry = injected[0];
                System.arraycopy(injected, 1, injected, 0, --injectedCount);
            }
            boolean lastReceive = (entry & LAST_RECEIVE_BIT) != 0;
            completions.asSlice(0, WC_SIZE).fill((byte) 0);
            completions.set(JAVA_INT, WC_STATUS,
                lastReceive ? VerbsConstants.IBV_WC_WR_FLUSH_ERR : VerbsConstants.IBV_WC_FATAL_ERR);
            completions.set(JAVA_INT, WC_OPCODE, VerbsConstants.IBV_WC_RECV);
            completions.set(JAVA_INT, WC_QP_NUM, (int) entry);
            if (lastReceive) {
                completions.set(JAVA_LONG, WC_WR_ID, SharedReceiveQueue.LAST_RECEIVE_ID);
            }
            completion.wrap(0);
            handler.onCompletion(completion);
            count++;
        }
        return count;
    }

    /**
     * A queue pair using this queue failed outside its completions (an async event): queue a failed receive
     * completion for it and wake whoever the queue is armed for, as a completion event would.
     */
    void injectFailure(int queuePairNumber) {
        inject(queuePairNumber & 0xFFFFFFFFL);
    }

    /**
     * A queue pair using this queue, which takes its receives from a shared receive queue, is in ERROR and consumes
     * no more receives: queue the flushed receive completion that reports it (see
     * {@link io.rdmachannel.channel.spi.SharedReceiveQueue}) and wake whoever the queue is armed for.
     */
    void injectLastReceive(int queuePairNumber) {
        inject(queuePairNumber & 0xFFFFFFFFL | LAST_RECEIVE_BIT);
    }

    private void inject(long entry) {
        synchronized (injectedLock) {
            if (injectedCount == injected.length) {
                injected = Arrays.copyOf(injected, injectedCount * 2);
            }
            injected[injectedCount++] = entry;
            injectedPending = true;
        }
        if (source == null) {
            return;
        }
        int fired = armed.getAndSet(0);
        if ((fired & ARMED_READINESS) != 0) {
            source.forward(token);
        }
        wakeWaiters(null);
    }

    @Override
    public void requestNotification() {
        armForSource(0);
    }

    @Override
    public void requestSolicitedNotification() {
        armForSource(1);
    }

    private void armForSource(int solicitedOnly) {
        ensureOpen();
        if (source == null) {
            throw new IllegalStateException("completion queue 0x" + Long.toHexString(address)
                + " has no readiness source to notify");
        }
        armed.getAndUpdate(bits -> bits | ARMED_READINESS);
        requestEvent(solicitedOnly);
        if (watched.compareAndSet(false, true)) {
            source.watch(slot, channelFd);
        }
    }

    private void requestEvent(int solicitedOnly) {
        int result = ops.reqNotifyCq(cq, solicitedOnly);
        if (result != 0) {
            int errno = Math.abs(result);
            throw new IllegalStateException(Errno.exception("ibv_req_notify_cq", errno).getMessage());
        }
    }

    int channelFd() {
        return channelFd;
    }

    /**
     * The source's epoll reported this queue's channel (its one-shot watch is spent): take the events, deliver
     * them, and watch again if the source is still wanted.
     *
     * @return whether the source was armed and gets this queue's token.
     */
    boolean takeEventsForSource() {
        watched.set(false);
        int fired = takeEvents();
        if ((fired & ARMED_WAITER) != 0) {
            wakeWaiters(null);
        }
        if ((armed.get() & ARMED_READINESS) != 0) {
            // under the event lock: a closing queue gives its channel back under it, and the fd must still be ours
            eventLock.lock();
            try {
                if (!closed && watched.compareAndSet(false, true)) {
                    source.watch(slot, channelFd);
                }
            } finally {
                eventLock.unlock();
            }
        }
        return (fired & ARMED_READINESS) != 0;
    }

    /**
     * Read and acknowledge every pending event of the channel.
     *
     * @return the arming bits those events fired (all of them: one event answers every arm before it), 0 if none.
     */
    private int takeEvents() {
        return takeEvents(Integer.MAX_VALUE);
    }

    /**
     * Read and acknowledge at most {@code max} pending events of the channel.
     *
     * @return the arming bits those events fired (all of them: one event answers every arm before it), 0 if none.
     */
    private int takeEvents(int max) {
        int events = 0;
        eventLock.lock();
        try {
            if (closed) {
                return 0;
            }
            while (events < max && IbvCalls.getCqEvent(channel, cqOut, contextOut)) {
                events++;
            }
            if (events > 0) {
                IbvCalls.ackCqEvents(cq, events);
            }
        } catch (NativeCallException e) {
            throw new IllegalStateException("completion queue 0x" + Long.toHexString(address)
                + ": cannot read its completion channel: " + e.getMessage(), e);
        } finally {
            eventLock.unlock();
        }
        return events == 0 ? 0 : armed.getAndSet(0);
    }

    @Override
    public boolean supportsDirectWait() {
        return channel != null;
    }

    @Override
    public int requestWaiterWakeup() {
        ensureOpen();
        requireChannel();
        int ticket = waiterSequence.get();
        armed.getAndUpdate(bits -> bits | ARMED_WAITER);
        requestEvent(0);
        return ticket;
    }

    @Override
    public void awaitWakeup(int ticket, long timeoutNanos) {
        requireChannel();
        WaitingThread self = device.waiters().take();
        try {
            awaitWakeup(self, ticket, timeoutNanos);
        } finally {
            device.waiters().give(self);
        }
    }

    private void awaitWakeup(WaitingThread self, int ticket, long timeoutNanos) {
        if (!register(self)) {
            return;
        }
        try {
            self.reset();
            // an untimed wait (the usual blocking read) reads no clock: a system call in some guests
            long deadline = timeoutNanos >= 0 ? System.nanoTime() + timeoutNanos : 0;
            while (!closed && waiterSequence.get() == ticket && !Thread.currentThread().isInterrupted()) {
                int millis = NativeReadinessSource.SLICE_MILLIS;
                if (timeoutNanos >= 0) {
                    long remaining = deadline - System.nanoTime();
                    if (remaining <= 0) {
                        return;
                    }
                    millis = (int) Math.min(millis, TimeUnit.NANOSECONDS.toMillis(remaining + 999_999));
                }
                int ready = self.await(channelFd, millis);
                if ((ready & 1) != 0) {
                    // one event per arming: a second read would only find the channel empty (another system call);
                    // an event left there makes the next poll return at once and is read then
                    int fired = takeEvents(1);
                    if ((fired & ARMED_READINESS) != 0) {
                        source.forward(token);
                    }
                    if ((fired & ARMED_WAITER) != 0) {
                        wakeWaiters(self);
                    }
                }
                if ((ready & 2) != 0) {
                    self.drain();
                }
            }
        } catch (NativeCallException e) {
            throw new IllegalStateException("completion queue 0x" + Long.toHexString(address)
                + ": cannot wait on its completion channel: " + e.getMessage(), e);
        } finally {
            unregister(self);
        }
    }

    @Override
    public void wakeWaiters() {
        if (channel != null) {
            wakeWaiters(null);
        }
    }

    /** Bump the waiter sequence, then wake every registered waiting thread and wait set but {@code except}. */
    private void wakeWaiters(Object except) {
        waiterSequence.incrementAndGet();
        synchronized (waitersLock) {
            for (int i = 0; i < waiterCount; i++) {
                if (waiters[i] != except) {
                    waiters[i].wake();
                }
            }
            for (int i = 0; i < setCount; i++) {
                if (sets[i] != except) {
                    sets[i].wake();
                }
            }
        }
    }

    @Override
    public boolean supportsWaitSet() {
        return channel != null;
    }

    @Override
    public WaitSet newWaitSet() {
        return channel == null ? null : new ChannelWaitSet();
    }

    /**
     * Join a selector's set: registered among the waiters first (whoever reads the channel's events from then on
     * wakes the set), then armed for a waiter, then the channel goes into the set with the ticket of that arming.
     */
    @Override
    public boolean addWaiter(WaitSet set) {
        if (!(set instanceof ChannelWaitSet channels) || channel == null || set.remaining() == 0) {
            return false;
        }
        ensureOpen();
        if (!registerSet(channels)) {
            throw new IllegalStateException("completion queue 0x" + Long.toHexString(address) + " is closed");
        }
        int ticket;
        try {
            ticket = requestWaiterWakeup();
        } catch (RuntimeException e) {
            unregisterSet(channels);
            throw e;
        }
        return channels.add(this, channelFd, ticket);
    }

    /**
     * A set's {@code poll} found the channel readable: read its events and hand on what others armed (the source's
     * token, the other waiters); the set itself returns from its wait anyway.
     */
    void channelReadable(ChannelWaitSet set) {
        int fired = takeEvents();
        if ((fired & ARMED_READINESS) != 0) {
            source.forward(token);
        }
        if ((fired & ARMED_WAITER) != 0) {
            wakeWaiters(set);
        }
    }

    /** Whether what a set waited for here with {@code ticket} may have happened: a wake-up since, or the close. */
    boolean waitSetEntryChanged(int ticket) {
        return closed || waiterSequence.get() != ticket;
    }

    private boolean registerSet(ChannelWaitSet set) {
        synchronized (waitersLock) {
            if (closed) {
                return false;
            }
            for (int i = 0; i < setCount; i++) {
                if (sets[i] == set) {
                    return true;
                }
            }
            if (setCount == sets.length) {
                sets = Arrays.copyOf(sets, setCount * 2);
            }
            sets[setCount++] = set;
            return true;
        }
    }

    void unregisterSet(ChannelWaitSet set) {
        synchronized (waitersLock) {
            for (int i = 0; i < setCount; i++) {
                if (sets[i] == set) {
                    sets[i] = sets[--setCount];
                    sets[setCount] = null;
                    return;
                }
            }
        }
    }

    private boolean register(WaitingThread thread) {
        synchronized (waitersLock) {
            if (closed) {
                return false;
            }
            if (waiterCount == waiters.length) {
                waiters = Arrays.copyOf(waiters, waiterCount * 2);
            }
            waiters[waiterCount++] = thread;
            return true;
        }
    }

    private void unregister(WaitingThread thread) {
        synchronized (waitersLock) {
            for (int i = 0; i < waiterCount; i++) {
                if (waiters[i] == thread) {
                    waiters[i] = waiters[--waiterCount];
                    waiters[waiterCount] = null;
                    break;
                }
            }
            if (waiterCount == 0 && closed) {
                waitersLock.notifyAll();
            }
        }
    }

    private void requireChannel() {
        if (channel == null) {
            throw new UnsupportedOperationException("completion queue 0x" + Long.toHexString(address)
                + " has no completion channel: create it with a readiness source to wait on it directly");
        }
    }

    @Override
    public int capacity() {
        return capacity;
    }

    @Override
    public ReadinessSource readinessSource() {
        return source;
    }

    @Override
    public long token() {
        return token;
    }

    synchronized void attach() {
        ensureOpen();
        attached++;
    }

    synchronized void detach() {
        attached--;
    }

    void ensureOpen() {
        if (closed) {
            throw new IllegalStateException("completion queue 0x" + Long.toHexString(address) + " is closed");
        }
    }

    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            if (attached != 0) {
                throw new IllegalStateException("completion queue 0x" + Long.toHexString(address)
                    + " is still used by " + attached + " queue pairs: close them first");
            }
            closed = true;
        }
        if (channel != null) {
            awaitWaitersGone();
        }
        pollLock.lock();
        eventLock.lock();
        try {
            if (source != null) {
                // the channel is no longer watched; events not read yet need no acknowledgement
                source.release(slot, this);
            }
            IbvCalls.destroyCq(cq);
            if (channel != null) {
                IbvCalls.destroyCompChannel(channel);
            }
        } catch (NativeCallException e) {
            throw new IllegalStateException("cannot destroy completion queue: " + e.getMessage(), e);
        } finally {
            eventLock.unlock();
            pollLock.unlock();
            arena.close();
            device.childClosed(ResourceCounter.Kind.COMPLETION_QUEUE);
        }
    }

    /**
     * Wake the threads waiting on the channel and wait until they left: the channel fd stays valid meanwhile. Wait sets
     * are woken and dropped, not waited for: a set reads the channel only through {@link #takeEvents}, which checks the
     * queue is open under the event lock, and its thread may be the one closing this queue.
     */
    private void awaitWaitersGone() {
        wakeWaiters(null);
        boolean interrupted = false;
        synchronized (waitersLock) {
            Arrays.fill(sets, 0, setCount, null);
            setCount = 0;
            while (waiterCount > 0) {
                try {
                    waitersLock.wait(NativeReadinessSource.SLICE_MILLIS);
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public String toString() {
        return "NativeCompletionQueue{cq=0x" + Long.toHexString(address) + ", capacity=" + capacity
            + ", token=" + token + ", attached=" + attached + ", closed=" + closed + '}';
    }
}

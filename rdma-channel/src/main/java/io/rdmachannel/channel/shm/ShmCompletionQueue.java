package io.rdmachannel.channel.shm;

import io.rdmachannel.channel.internal.Futex;
import io.rdmachannel.channel.spi.CompletionHandler;
import io.rdmachannel.channel.spi.CompletionOpcode;
import io.rdmachannel.channel.spi.CompletionQueue;
import io.rdmachannel.channel.spi.CompletionStatus;
import io.rdmachannel.channel.spi.ReadinessSource;
import io.rdmachannel.channel.spi.ResourceCounter;
import io.rdmachannel.channel.spi.WaitSet;
import io.rdmachannel.channel.spi.WordWaitSet;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Arrays;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Completion queue of the shared-memory provider. Receive completions arrive in the inbound rings of the queue pairs
 * attached to it (written by the peer that executed the request); send completions, produced by threads of this
 * process, go to a local ring. Its arming word lives in a shared file (a pooled {@code f-<id>} that the blocks of its
 * queue pairs name) so that a peer can see it and send a wake-up over the link.
 *
 * <pre>
 *  the queue's file (64 bytes used, host byte order)
 *   0  armed   int  bits: 1 any completion, 2 solicited ones (for the readiness source), 4 a waiting thread
 *   8  waiter  int  sequence number a waiting thread sleeps on (a futex): bumped and woken to wake it
 * </pre>
 *
 * Whoever produces a completion for an armed queue disarms it and delivers what the bits ask for: a signal to the
 * readiness source (locally, or a wake-up frame over the link from a peer), and for bit 4 a futex wake on the waiter
 * word, which the peer does itself on its mapping of this file, so a thread blocked in {@link #awaitWakeup} is woken
 * by the peer's post directly: one wake-up, no agent thread in between.
 */
final class ShmCompletionQueue implements CompletionQueue {
    static final int ARMED_OFFSET = 0;
    static final int NOT_ARMED = 0;
    static final int ARMED_ANY = 1;
    static final int ARMED_SOLICITED = 2;
    static final int ARMED_WAITER = 4;
    static final int WAITER_OFFSET = 8;
    static final int FILE_LENGTH = 64;
    private static final int ARMED_READINESS = ARMED_ANY | ARMED_SOLICITED;
    private static final VarHandle RING_HEAD;
    private static final VarHandle RING_TAIL;

    static {
        try {
            final MethodHandles.Lookup lookup = MethodHandles.lookup();
            RING_HEAD = lookup.findVarHandle(ShmCompletionQueue.class, "ringHead", long.class);
            RING_TAIL = lookup.findVarHandle(ShmCompletionQueue.class, "ringTail", long.class);
        } catch (final ReflectiveOperationException ex) {
            throw new ExceptionInInitializerError(ex);
        }
    }

    private final ShmDevice device;
    private final int id;
    private final int capacity;
    private final ShmReadinessSource readinessSource;
    private final long token;
    private final SharedFile armedFile;
    private final MemorySegment armed;
    private final MemorySegment waiterWord;
    private final ReentrantLock pollLock = new ReentrantLock();
    private final ReentrantLock ringLock = new ReentrantLock();
    private final ShmWorkCompletion completion = new ShmWorkCompletion();
    private final long[] ringWorkRequestIds;
    private final long[] ringSequences;
    private final int[] ringByteLengths;
    private final byte[] ringStatuses;
    private final byte[] ringOpcodes;
    private final ShmQueuePair[] ringQueuePairs;
    /**
     * The local ring's positions: the poller (under {@code pollLock}) takes entries without {@code ringLock}, which
     * only producers take among themselves; an entry is published by the release store of the tail and handed back
     * by the release store of the head, each read with acquire on the other side.
     */
    private long ringHead;
    private long ringTail;
    private volatile InboundReceiver[] receivers = new InboundReceiver[0];
    private int attached;
    private int cursor;
    private volatile boolean overrun;
    private volatile boolean tainted;
    private volatile boolean closed;

    ShmCompletionQueue(final ShmDevice device, final int id, final int capacity,
        final ShmReadinessSource readinessSource, final long token) throws IOException {
        this.device = device;
        this.id = id;
        this.capacity = capacity;
        this.readinessSource = readinessSource;
        this.token = token;
        this.armedFile = device.filePool().acquire(FILE_LENGTH);
        this.armed = armedFile.segment();
        this.waiterWord = armed.asSlice(WAITER_OFFSET, Integer.BYTES);
        this.ringWorkRequestIds = new long[capacity];
        this.ringSequences = new long[capacity];
        this.ringByteLengths = new int[capacity];
        this.ringStatuses = new byte[capacity];
        this.ringOpcodes = new byte[capacity];
        this.ringQueuePairs = new ShmQueuePair[capacity];
    }

    int id() {
        return id;
    }

    int fileId() {
        return armedFile.id();
    }

    /**
     * A queue pair of this queue closed while a peer access to it did not end: the file must not be reused.
     */
    void taint() {
        tainted = true;
    }

    ShmDevice device() {
        return device;
    }

    @Override
    public int poll(final CompletionHandler handler, final int limit) {
        if (limit < 1) {
            throw new IllegalArgumentException("limit must be at least 1: limit=" + limit);
        }
        pollLock.lock();
        try {
            ensureOpen();
            if (overrun) {
                throw new IllegalStateException("completion queue " + id + " overran: more than " + capacity
                    + " send completions were outstanding; size it for every signalled request");
            }
            int count = 0;
            final InboundReceiver[] queuePairs = receivers;
            final int queuePairCount = queuePairs.length;
            for (int i = 0; i < queuePairCount && count < limit; i++) {
                count += queuePairs[(cursor + i) % queuePairCount].pollReceives(completion, handler, limit - count);
            }
            cursor++;
            while (count < limit && takeLocal()) {
                handler.onCompletion(completion);
                count++;
            }
            return count;
        } finally {
            pollLock.unlock();
        }
    }

    /**
     * Lock-free: the local ring's positions, then each attached queue pair's next inbound entry. A queue pair closed
     * meanwhile (its mapping gone) answers {@code true}: the poll that follows sorts it out.
     */
    @Override
    public boolean mayHaveCompletions() {
        if (closed || overrun || (long) RING_TAIL.getAcquire(this) != (long) RING_HEAD.getOpaque(this)) {
            return true;
        }
        try {
            for (final InboundReceiver receiver : receivers) {
                if (receiver.mayHaveReceives()) {
                    return true;
                }
            }
        } catch (final IllegalStateException unmapped) {
            return true;
        }
        return false;
    }

    /** Under {@code pollLock}: take the oldest send completion, if any, without a lock of the producers'. */
    private boolean takeLocal() {
        final long head = ringHead;
        if ((long) RING_TAIL.getAcquire(this) == head) {
            return false;
        }
        final int index = (int) (head % capacity);
        final ShmWorkCompletion c = completion;
        c.workRequestId = ringWorkRequestIds[index];
        c.status = CompletionStatus.fromCode(ringStatuses[index]);
        c.opcode = CompletionOpcode.fromCode(ringOpcodes[index] & 0xFF);
        c.byteLength = ringByteLengths[index];
        c.hasImmediate = false;
        c.immediate = 0;
        c.vendorError = 0;
        final ShmQueuePair queuePair = ringQueuePairs[index];
        final long sequence = ringSequences[index];
        ringQueuePairs[index] = null;
        c.queuePairNumber = queuePair.number();
        RING_HEAD.setRelease(this, head + 1);
        queuePair.retireSend(sequence);
        return true;
    }

    /**
     * Add a send completion produced by this process.
     */
    void addSendCompletion(final ShmQueuePair queuePair, final long sequence, final long workRequestId,
        final CompletionStatus status, final CompletionOpcode opcode, final int byteLength) {
        ringLock.lock();
        try {
            final long tail = ringTail;
            if (tail - (long) RING_HEAD.getAcquire(this) == capacity) {
                overrun = true;
                return;
            }
            final int index = (int) (tail % capacity);
            ringWorkRequestIds[index] = workRequestId;
            ringSequences[index] = sequence;
            ringByteLengths[index] = byteLength;
            ringStatuses[index] = (byte) status.code();
            ringOpcodes[index] = (byte) opcode.code();
            ringQueuePairs[index] = queuePair;
            RING_TAIL.setRelease(this, tail + 1);
        } finally {
            ringLock.unlock();
        }
        notifyIfArmed(status != CompletionStatus.SUCCESS);
    }

    /**
     * Signal the readiness source and wake a waiting thread, as the queue is armed for this kind of event; disarms.
     */
    void notifyIfArmed(final boolean solicited) {
        final int fired = disarm(armed, solicited);
        if (wakesWaiter(fired)) {
            wakeWaiter(armed);
        }
        if (wakesReadiness(fired)) {
            signal();
        }
    }

    /**
     * Disarm a completion queue's arming word (possibly a peer's) of what this kind of event fires.
     *
     * @return the arming bits this caller cleared and must deliver ({@link #wakesWaiter}, {@link #wakesReadiness}),
     *     0 for none.
     */
    static int disarm(final MemorySegment armedWord, final boolean solicited) {
        VarHandle.fullFence();
        while (true) {
            final int state = Atomics.getIntVolatile(armedWord, ARMED_OFFSET);
            final boolean readiness = (state & ARMED_ANY) != 0 || (state & ARMED_SOLICITED) != 0 && solicited;
            final int fired = (readiness ? state & ARMED_READINESS : 0) | state & ARMED_WAITER;
            if (fired == 0) {
                return 0;
            }
            if (Atomics.compareAndSetInt(armedWord, ARMED_OFFSET, state, state & ~fired)) {
                return fired;
            }
        }
    }

    /**
     * A producer's side of a peer's completion queue ({@link #disarm}): wake its waiting thread at once (a futex wake
     * on this mapping of its file: no message, no agent) if one is armed.
     *
     * @return true if the caller must send the wake-up for the queue's readiness source.
     */
    static boolean disarmAndWake(final MemorySegment armedWord, final boolean solicited) {
        final int fired = disarm(armedWord, solicited);
        if (wakesWaiter(fired)) {
            wakeWaiter(armedWord);
        }
        return wakesReadiness(fired);
    }

    /**
     * Whether disarmed bits ask for a signal of the readiness source.
     */
    static boolean wakesReadiness(final int fired) {
        return (fired & ARMED_READINESS) != 0;
    }

    /**
     * Whether disarmed bits ask for a waiting thread to be woken.
     */
    static boolean wakesWaiter(final int fired) {
        return (fired & ARMED_WAITER) != 0;
    }

    /**
     * Wake the threads waiting on a completion queue's file (possibly a peer's mapping of it): bump the waiter word,
     * then wake its futex. Without futexes nobody waits there.
     */
    static void wakeWaiter(final MemorySegment armedWord) {
        if (Futex.isAvailable()) {
            Atomics.getAndAddInt(armedWord, WAITER_OFFSET, 1);
            Futex.wake(armedWord, WAITER_OFFSET);
        }
    }

    /**
     * A peer of an attached queue pair is gone: disarm and signal even if the queue is not armed any more, because
     * the dead peer may have disarmed it without delivering its wake-up; wake a waiting thread as well.
     */
    void signalAfterPeerLoss() {
        if (closed) {
            return;
        }
        try {
            Atomics.setIntVolatile(armed, ARMED_OFFSET, NOT_ARMED);
            wakeWaiter(armed);
        } catch (final IllegalStateException closedMeanwhile) {
            // the queue was closed by its owner while the agent reported the loss: nobody waits on it any more
            return;
        }
        signal();
    }

    /**
     * Deliver a signal to the readiness source (the queue was disarmed by whoever produced the completion).
     */
    void signal() {
        final ShmReadinessSource source = readinessSource;
        if (source != null && !closed) {
            source.signal(token);
        }
    }

    @Override
    public void requestNotification() {
        arm(ARMED_ANY);
    }

    @Override
    public void requestSolicitedNotification() {
        arm(ARMED_SOLICITED);
    }

    private void arm(final int mode) {
        ensureOpen();
        if (readinessSource == null) {
            throw new IllegalStateException("completion queue " + id + " has no readiness source to notify");
        }
        // an OR, not a store: a thread may be armed as a waiter at the same time
        Atomics.getAndBitwiseOrInt(armed, ARMED_OFFSET, mode);
        VarHandle.fullFence();
    }

    @Override
    public boolean supportsDirectWait() {
        return Futex.isAvailable();
    }

    @Override
    public int requestWaiterWakeup() {
        ensureOpen();
        if (!Futex.isAvailable()) {
            throw new UnsupportedOperationException("completion queue " + id + " cannot wake a waiting thread "
                + "directly: " + Futex.unavailabilityReason());
        }
        final int ticket = Atomics.getIntVolatile(armed, WAITER_OFFSET);
        Atomics.getAndBitwiseOrInt(armed, ARMED_OFFSET, ARMED_WAITER);
        VarHandle.fullFence();
        return ticket;
    }

    @Override
    public boolean cancelWaiterWakeup() {
        if (closed || !Futex.isAvailable()) {
            return false;
        }
        try {
            // usually the completion that ended the wait took the bit already: a read, not a write, on a word the
            // peer writes too
            if ((Atomics.getIntVolatile(armed, ARMED_OFFSET) & ARMED_WAITER) == 0) {
                return false;
            }
            return (Atomics.getAndBitwiseAndInt(armed, ARMED_OFFSET, ~ARMED_WAITER) & ARMED_WAITER) != 0;
        } catch (final IllegalStateException closedMeanwhile) {
            return false;
        }
    }

    @Override
    public boolean supportsWaitSet() {
        return WordWaitSet.isAvailable();
    }

    @Override
    public WaitSet newWaitSet() {
        return WordWaitSet.isAvailable() ? new WordWaitSet() : null;
    }

    @Override
    public boolean addWaiter(final WaitSet set) {
        if (!(set instanceof WordWaitSet words) || set.remaining() == 0) {
            return false;
        }
        return words.add(armed, WAITER_OFFSET, requestWaiterWakeup());
    }

    @Override
    public void awaitWakeup(final int ticket, final long timeoutNanos) {
        if (!Futex.isAvailable()) {
            throw new UnsupportedOperationException("completion queue " + id + " cannot wake a waiting thread "
                + "directly: " + Futex.unavailabilityReason());
        }
        if (!closed) {
            Futex.await(waiterWord, ticket, timeoutNanos);
        }
    }

    @Override
    public void wakeWaiters() {
        if (!closed) {
            try {
                wakeWaiter(armed);
            } catch (final IllegalStateException closedMeanwhile) {
                // closed by its owner meanwhile: nobody waits on it any more
            }
        }
    }

    void attachReceiver(final InboundReceiver queuePair) {
        pollLock.lock();
        try {
            final InboundReceiver[] current = receivers;
            final InboundReceiver[] next = Arrays.copyOf(current, current.length + 1);
            next[current.length] = queuePair;
            receivers = next;
        } finally {
            pollLock.unlock();
        }
    }

    void detachReceiver(final InboundReceiver queuePair) {
        pollLock.lock();
        try {
            receivers = Arrays.stream(receivers).filter(q -> q != queuePair).toArray(InboundReceiver[]::new);
        } finally {
            pollLock.unlock();
        }
    }

    synchronized void attach() {
        ensureOpen();
        attached++;
    }

    synchronized void detach() {
        attached--;
    }

    @Override
    public int capacity() {
        return capacity;
    }

    @Override
    public ReadinessSource readinessSource() {
        return readinessSource;
    }

    @Override
    public long token() {
        return token;
    }

    void ensureOpen() {
        if (closed) {
            throw new IllegalStateException("completion queue " + id + " is closed");
        }
    }

    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            if (attached != 0) {
                throw new IllegalStateException("completion queue " + id + " is still used by " + attached
                    + " queue pairs: close them first");
            }
            closed = true;
        }
        device.removeCompletionQueue(this);
        if (tainted) {
            armedFile.close();
        } else {
            device.filePool().release(armedFile);
        }
        if (readinessSource != null) {
            readinessSource.detach();
        }
        device.childClosed(ResourceCounter.Kind.COMPLETION_QUEUE);
    }

    @Override
    public String toString() {
        return "ShmCompletionQueue{id=" + id + ", capacity=" + capacity + ", sendCompletions=" + (ringTail - ringHead)
            + ", receivers=" + receivers.length
            + ", armed=" + (closed ? "-" : Atomics.getIntVolatile(armed, ARMED_OFFSET))
            + ", overrun=" + overrun + ", closed=" + closed + '}';
    }
}

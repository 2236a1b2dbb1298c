package io.rdmachannel.channel.shm;

import static io.rdmachannel.channel.shm.ReceiveQueueDescriptor.CAPACITY_OFFSET;
import static io.rdmachannel.channel.shm.ReceiveQueueDescriptor.CLOSED_BIT;
import static io.rdmachannel.channel.shm.ReceiveQueueDescriptor.HEAD_OFFSET;
import static io.rdmachannel.channel.shm.ReceiveQueueDescriptor.MAX_SGE_OFFSET;
import static io.rdmachannel.channel.shm.ReceiveQueueDescriptor.RNR_WAITING_OFFSET;
import static io.rdmachannel.channel.shm.ReceiveQueueDescriptor.SGE_ADDRESS_OFFSET;
import static io.rdmachannel.channel.shm.ReceiveQueueDescriptor.SGE_LENGTH_OFFSET;
import static io.rdmachannel.channel.shm.ReceiveQueueDescriptor.SGE_LKEY_OFFSET;
import static io.rdmachannel.channel.shm.ReceiveQueueDescriptor.SLOT_SGE_COUNT_OFFSET;
import static io.rdmachannel.channel.shm.ReceiveQueueDescriptor.SLOT_WR_ID_OFFSET;
import static io.rdmachannel.channel.shm.ReceiveQueueDescriptor.TAIL_OFFSET;

import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Arrays;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A receive queue in shared memory (layout: {@link ReceiveQueueDescriptor}). The owner's instance posts and frees
 * slots; a peer's instance, made with {@link #peerView}, claims and reads them and validates everything it reads.
 */
final class ReceiveQueue {
    /** {@link #claim()}: no receive is posted. */
    static final long EMPTY = -1;
    /** {@link #claim()}: the queue was closed by an error. */
    static final long CLOSED = -2;
    /**
     * A ring entry once the sender that claimed its position read the slot index there: the owner of a shared queue
     * publishes the next round's receive at that position only then (see {@link #post}).
     */
    static final int TAKEN = -1;
    /** How long the owner of a shared queue waits for a claimed ring entry to be read before reusing it anyway. */
    static final long TAKE_WAIT_NANOS = 100_000_000;
    private static final VarHandle KNOWN_TAIL;

    static {
        try {
            KNOWN_TAIL = MethodHandles.lookup().findVarHandle(ReceiveQueue.class, "knownTail", long.class);
        } catch (final ReflectiveOperationException ex) {
            throw new ExceptionInInitializerError(ex);
        }
    }
    /** A slot's length in the owner's record while it holds no posted receive. */
    private static final long FREE = -1;

    private final MemorySegment segment;
    private final String name;
    private final long base;
    private final int capacity;
    private final int maxSge;
    private final long slotsOffset;
    private final long slotLength;
    private final ReentrantLock ownerLock;
    private final boolean shared;
    private final int[] freeSlots;
    private int freeCount;
    private long tail;
    /**
     * A sender's view: the owner's tail as last read (acquire and release through {@link #KNOWN_TAIL}: several
     * threads of a process may claim), read again only when the head reaches it, so that the line the owner writes
     * on every post is not pulled over on every message. It only lags the tail, which never goes back: every
     * position below it was posted.
     */
    private long knownTail;
    // The owner's own record of what it posted, in process memory no peer can write: what a peer publishes about a
    // receive (its slot, its id, the ring order) is checked against it, never taken on trust.
    private final long[] postedIds;
    private final long[] postedLengths;
    private final int[] postedRing;

    private ReceiveQueue(final MemorySegment segment, final String name, final long base, final int capacity,
        final int maxSge, final boolean owner, final boolean shared) {
        this.shared = shared;
        this.segment = segment;
        this.name = name;
        this.base = base;
        this.capacity = capacity;
        this.maxSge = maxSge;
        this.slotsOffset = base + ReceiveQueueDescriptor.slotsOffset(capacity);
        this.slotLength = ReceiveQueueDescriptor.slotLength(maxSge);
        this.ownerLock = owner ? new ReentrantLock() : null;
        this.freeSlots = owner ? new int[capacity] : null;
        this.postedIds = owner ? new long[capacity] : null;
        this.postedLengths = owner ? new long[capacity] : null;
        this.postedRing = owner ? new int[capacity] : null;
        if (owner) {
            resetOwner();
        }
    }

    /**
     * Format a region and return the owner's view.
     *
     * @param name what the queue is, for messages (built once: posting allocates nothing).
     * @param shared whether several senders claim receives at once (a shared receive queue).
     */
    static ReceiveQueue format(final MemorySegment segment, final String name, final long base, final int capacity,
        final int maxSge, final boolean shared) {
        segment.set(Atomics.INT, base + CAPACITY_OFFSET, capacity);
        segment.set(Atomics.INT, base + MAX_SGE_OFFSET, maxSge);
        return new ReceiveQueue(segment, name, base, capacity, maxSge, true, shared);
    }

    /**
     * A peer's view of a region formatted by its owner; null if the header does not fit the region.
     *
     * @param shared whether the queue is a shared one, whose owner waits for each claimed entry to be marked
     *     {@link #TAKEN} before it publishes there again ({@link #takeSlot}); a queue pair's own queue is not.
     */
    static ReceiveQueue peerView(final MemorySegment segment, final long base, final int maxCapacity,
        final int maxSgeLimit, final boolean shared) {
        if (base < 0 || base + ReceiveQueueDescriptor.HEADER_LENGTH > segment.byteSize()) {
            return null;
        }
        final int capacity = segment.get(Atomics.INT, base + CAPACITY_OFFSET);
        final int maxSge = segment.get(Atomics.INT, base + MAX_SGE_OFFSET);
        if (capacity < 1 || capacity > maxCapacity || maxSge < 0 || maxSge > maxSgeLimit
            || base + ReceiveQueueDescriptor.regionLength(capacity, maxSge) > segment.byteSize()) {
            return null;
        }
        return new ReceiveQueue(segment, "a peer's receive queue", base, capacity, maxSge, false, shared);
    }

    static long regionLength(final int capacity, final int maxSge) {
        return ReceiveQueueDescriptor.regionLength(capacity, maxSge);
    }

    int capacity() {
        return capacity;
    }

    int maxSge() {
        return maxSge;
    }

    // ----- owner side -----

    private void resetOwner() {
        for (int i = 0; i < capacity; i++) {
            freeSlots[i] = capacity - 1 - i;
        }
        freeCount = capacity;
        Arrays.fill(postedLengths, FREE);
        tail = 0;
        Atomics.setLongVolatile(segment, base + HEAD_OFFSET, 0);
        Atomics.setLongVolatile(segment, base + TAIL_OFFSET, 0);
        Atomics.setIntVolatile(segment, base + RNR_WAITING_OFFSET, 0);
    }

    /**
     * Post a receive.
     *
     * @return true if a sender was waiting for a receive and should be woken.
     * @throws IllegalStateException if every slot is in use.
     */
    boolean post(final ShmReceiveWorkRequest request) {
        return post(request, request.id, 1);
    }

    /**
     * Post {@code count} receives like {@code request}, with the ids {@code firstId} on, under one lock and made
     * visible to senders by one store of the tail.
     *
     * @return true if a sender was waiting for a receive and should be woken.
     * @throws IllegalStateException if fewer than {@code count} slots are free; nothing is posted.
     */
    boolean post(final ShmReceiveWorkRequest request, final long firstId, final int count) {
        ownerLock.lock();
        try {
            if (freeCount < count) {
                throw new IllegalStateException(name + " is full: " + capacity
                    + " receives are outstanding; poll their completions first"
                    + (count > 1 ? " (" + count + " to post, " + freeCount + " free)" : ""));
            }
            long length = 0;
            for (int i = 0; i < request.sgeCount; i++) {
                length += Integer.toUnsignedLong(request.sgeLengths[i]);
            }
            for (int n = 0; n < count; n++) {
                final long id = firstId + n;
                final int slot = freeSlots[--freeCount];
                final long slotOffset = slotsOffset + slot * slotLength;
                segment.set(Atomics.LONG, slotOffset + SLOT_WR_ID_OFFSET, id);
                segment.set(Atomics.INT, slotOffset + SLOT_SGE_COUNT_OFFSET, request.sgeCount);
                for (int i = 0; i < request.sgeCount; i++) {
                    final long sge = ReceiveQueueDescriptor.sgeOffset(slotOffset, i);
                    segment.set(Atomics.LONG, sge + SGE_ADDRESS_OFFSET, request.sgeAddresses[i]);
                    segment.set(Atomics.INT, sge + SGE_LENGTH_OFFSET, request.sgeLengths[i]);
                    segment.set(Atomics.INT, sge + SGE_LKEY_OFFSET, request.sgeLocalKeys[i]);
                }
                postedIds[slot] = id;
                postedLengths[slot] = length;
                postedRing[(int) (tail % capacity)] = slot;
                final long ring = base + ReceiveQueueDescriptor.ringOffset((int) (tail % capacity));
                if (shared && tail >= capacity) {
                    awaitTaken(ring);
                }
                segment.set(Atomics.INT, ring, slot);
                tail++;
            }
            Atomics.setLongVolatile(segment, base + TAIL_OFFSET, tail);
        } finally {
            ownerLock.unlock();
        }
        VarHandle.fullFence();
        return Atomics.getIntVolatile(segment, base + RNR_WAITING_OFFSET) != 0
            && Atomics.compareAndSetInt(segment, base + RNR_WAITING_OFFSET, 1, 0);
    }

    /**
     * On a shared queue, a sender may have claimed the position a round ago and not yet read its slot index (several
     * senders claim at once, and the others' receives may complete and be posted again meanwhile): overwriting it
     * would give that sender another receive's slot, delivered twice. The read follows the claim at once, so this
     * waits a moment (longer only if the sender's thread was descheduled in between, which on a loaded machine
     * takes milliseconds); a sender that died between the two never reads it, and after 100 ms the entry is
     * reused (were that sender alive after all, the receive it then names completes twice and the second completion
     * fails its queue pair: nothing is delivered twice).
     */
    private void awaitTaken(final long ring) {
        if (Atomics.getIntVolatile(segment, ring) == TAKEN) {
            return;
        }
        final long deadline = System.nanoTime() + TAKE_WAIT_NANOS;
        int rounds = 0;
        while (Atomics.getIntVolatile(segment, ring) != TAKEN) {
            rounds++;
            if (rounds < 128) {
                Thread.onSpinWait();
            } else if (rounds < 256) {
                // the claiming thread was descheduled between its claim and its read: let it run
                Thread.yield();
            } else if (System.nanoTime() - deadline < 0) {
                LockSupport.parkNanos(20_000);
            } else {
                return;
            }
        }
    }

    /**
     * Arm (or with 0 disarm) the limit a sender's claim checks ({@link #takeLimitEvent}).
     */
    void armLimit(final int limit) {
        Atomics.setIntVolatile(segment, base + ReceiveQueueDescriptor.LIMIT_OFFSET, limit);
    }

    /**
     * Free the slot of a receive whose completion was polled, and give the completion the id this side posted the
     * receive with (not the one a peer published).
     *
     * @param slot the slot the completion names, any value a peer wrote.
     * @return the length of the receive's buffers, or -1 if the slot holds no posted receive (nothing is freed).
     */
    long release(final int slot, final ShmWorkCompletion completion) {
        ownerLock.lock();
        try {
            if (slot < 0 || slot >= capacity || postedLengths[slot] == FREE) {
                return -1;
            }
            final long length = postedLengths[slot];
            postedLengths[slot] = FREE;
            completion.workRequestId = postedIds[slot];
            freeSlots[freeCount++] = slot;
            return length;
        } finally {
            ownerLock.unlock();
        }
    }

    /**
     * The slot this side posted at a ring position (its own record, which no peer can change).
     */
    int postedSlotAt(final long position) {
        ownerLock.lock();
        try {
            return postedRing[(int) (position % capacity)];
        } finally {
            ownerLock.unlock();
        }
    }

    /**
     * Ring positions published so far.
     */
    long postedCount() {
        ownerLock.lock();
        try {
            return tail;
        } finally {
            ownerLock.unlock();
        }
    }

    /**
     * Close the queue against further consumption.
     *
     * @return the number of positions claimed before it closed.
     */
    long close() {
        return Atomics.getAndBitwiseOrLong(segment, base + HEAD_OFFSET, CLOSED_BIT) & ~CLOSED_BIT;
    }

    /**
     * Forget every posted receive and reopen the queue (a move to RESET). Positions continue where they were.
     *
     * @return the position the queue continues from.
     */
    long discardAll() {
        ownerLock.lock();
        try {
            for (int i = 0; i < capacity; i++) {
                freeSlots[i] = capacity - 1 - i;
            }
            freeCount = capacity;
            Arrays.fill(postedLengths, FREE);
            Atomics.setIntVolatile(segment, base + RNR_WAITING_OFFSET, 0);
            Atomics.setLongVolatile(segment, base + HEAD_OFFSET, tail);
            return tail;
        } finally {
            ownerLock.unlock();
        }
    }

    // ----- both sides -----

    /**
     * The sender's read of the slot published at the ring position it claimed, right after the claim: on a shared
     * queue the entry is marked {@link #TAKEN}, so the owner may publish there again (the owner of a queue pair's own
     * queue, with one sender, needs no mark: the claim was the sender's last access to that entry this round).
     *
     * @return the slot, or -1 if the stored index is out of range.
     */
    int takeSlot(final long position) {
        final long ring = base + ReceiveQueueDescriptor.ringOffset((int) (position % capacity));
        final int slot = Atomics.getIntVolatile(segment, ring);
        if (slot < 0 || slot >= capacity) {
            return -1;
        }
        if (shared) {
            Atomics.compareAndSetInt(segment, ring, slot, TAKEN);
        }
        return slot;
    }

    long workRequestId(final int slot) {
        return segment.get(Atomics.LONG, slotsOffset + slot * slotLength + SLOT_WR_ID_OFFSET);
    }

    /**
     * The entry count of a slot, or -1 if it exceeds the queue's limit.
     */
    int sgeCount(final int slot) {
        final int count = segment.get(Atomics.INT, slotsOffset + slot * slotLength + SLOT_SGE_COUNT_OFFSET);
        return count >= 0 && count <= maxSge ? count : -1;
    }

    long sgeAddress(final int slot, final int index) {
        return segment.get(Atomics.LONG,
            ReceiveQueueDescriptor.sgeOffset(slotsOffset + slot * slotLength, index) + SGE_ADDRESS_OFFSET);
    }

    int sgeLength(final int slot, final int index) {
        return segment.get(Atomics.INT,
            ReceiveQueueDescriptor.sgeOffset(slotsOffset + slot * slotLength, index) + SGE_LENGTH_OFFSET);
    }

    int sgeLocalKey(final int slot, final int index) {
        return segment.get(Atomics.INT,
            ReceiveQueueDescriptor.sgeOffset(slotsOffset + slot * slotLength, index) + SGE_LKEY_OFFSET);
    }

    // ----- consumer (peer) side -----

    /**
     * Claim the next posted receive.
     *
     * @return its ring position (never negative), {@link #EMPTY} or {@link #CLOSED}; also CLOSED for a negative
     *     head, which only a peer that wrote the queue's header can have left there.
     */
    long claim() {
        while (true) {
            final long head = Atomics.getLongVolatile(segment, base + HEAD_OFFSET);
            if ((head & CLOSED_BIT) != 0 || head < 0) {
                return CLOSED;
            }
            if (head >= (long) KNOWN_TAIL.getAcquire(this)) {
                final long published = Atomics.getLongAcquire(segment, base + TAIL_OFFSET);
                if (head >= published) {
                    return EMPTY;
                }
                KNOWN_TAIL.setRelease(this, published);
            }
            if (Atomics.compareAndSetLong(segment, base + HEAD_OFFSET, head, head + 1)) {
                return head;
            }
        }
    }

    /**
     * After claiming {@code position}: whether the claim left fewer receives posted than the armed limit and this
     * sender disarmed it, so it must tell the owner (one sender does, whoever wins the CAS).
     */
    boolean takeLimitEvent(final long position) {
        final long offset = base + ReceiveQueueDescriptor.LIMIT_OFFSET;
        final int limit = Atomics.getIntVolatile(segment, offset);
        if (limit <= 0) {
            return false;
        }
        final long left = Atomics.getLongAcquire(segment, base + TAIL_OFFSET) - (position + 1);
        return left < limit && Atomics.compareAndSetInt(segment, offset, limit, 0);
    }

    /**
     * Tell the owner a sender waits for a receive, then look again so that a receive posted meanwhile is not
     * missed.
     *
     * @return true if a receive is available after all.
     */
    boolean markWaiting() {
        Atomics.setIntVolatile(segment, base + RNR_WAITING_OFFSET, 1);
        VarHandle.fullFence();
        final long head = Atomics.getLongVolatile(segment, base + HEAD_OFFSET);
        return (head & CLOSED_BIT) != 0 || head < 0 || head < Atomics.getLongAcquire(segment, base + TAIL_OFFSET);
    }
}

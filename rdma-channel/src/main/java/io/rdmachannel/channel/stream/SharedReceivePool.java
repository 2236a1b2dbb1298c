package io.rdmachannel.channel.stream;

import io.rdmachannel.channel.spi.AccessFlags;
import io.rdmachannel.channel.spi.MemoryRegion;
import io.rdmachannel.channel.spi.ProtectionDomain;
import io.rdmachannel.channel.spi.ReceiveWorkRequest;
import io.rdmachannel.channel.spi.SharedReceiveQueue;

import java.io.IOException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The shared receive queue of one device context in SRQ mode, and the account that keeps its credits exact: every
 * credit a connection grants its peer is backed by a receive posted here and reserved for that connection, so a
 * message never finds the queue empty while its sender had a credit.
 *
 * <p>Receives are posted in batches as connections need them, up to the queue's size; they are never taken back.
 * {@link #unreserved} counts the posted receives no connection has reserved. A connection reserves its minimum
 * ({@link StreamConfiguration#SHARED_RECEIVE_CREDITS_PROP_NAME} plus its spare receives for control messages) when
 * it is made, and keeps it until it is released: that is what no other connection can take from it. Beyond it, a
 * connection {@linkplain #borrow borrows} while it grants more credits (at most half of what is left at a time, so
 * one busy connection cannot take all), and {@linkplain #giveBack gives back} as its credits are used. A receive a
 * message consumed is posted again at once by the connection that polled it ({@link #repost}), under the same id,
 * so the posted count only grows.
 *
 * <p>In message mode (no RDMA WRITE WITH IMMEDIATE) each receive has its own 4-byte buffer in one region, at
 * {@link MessageSendDescriptor#bufferOffset(int)} of its id.
 *
 * <p>Thread-safe: the account is one atomic counter; growing takes a lock; posting goes straight to the queue
 * (thread-safe in both providers) with each caller's own request.
 */
final class SharedReceivePool implements AutoCloseable {
    /** Receives posted at once when the unreserved ones run out. */
    static final int POST_BATCH = 256;

    private final SharedReceiveQueue queue;
    private final MemoryRegion messageRegion;
    private final int capacity;
    private final ReentrantLock growLock = new ReentrantLock();
    private final ReceiveWorkRequest growRequest;
    private final AtomicInteger unreserved = new AtomicInteger();
    private volatile int posted;

    private SharedReceivePool(final SharedReceiveQueue queue, final MemoryRegion messageRegion) {
        this.queue = queue;
        this.messageRegion = messageRegion;
        this.capacity = queue.maxWorkRequests();
        this.growRequest = queue.createReceiveWorkRequest();
    }

    /**
     * Create the queue (at most {@code size} receives, and at most what the device allows) with nothing posted yet.
     */
    static SharedReceivePool create(final ProtectionDomain domain, final int size, final int deviceMax,
        final boolean messageMode) throws IOException {
        final int capacity = Math.min(size, deviceMax);
        if (capacity < 1) {
            throw new IOException("device " + domain.device().name() + " offers no shared receive queue");
        }
        final SharedReceiveQueue queue = domain.createSharedReceiveQueue(capacity, 1);
        MemoryRegion messageRegion = null;
        try {
            if (messageMode) {
                messageRegion = domain.allocate(MessageSendDescriptor.bufferOffset(capacity), AccessFlags.LOCAL_WRITE);
            }
            return new SharedReceivePool(queue, messageRegion);
        } catch (final IOException | RuntimeException ex) {
            if (messageRegion != null) {
                messageRegion.close();
            }
            queue.close();
            throw ex;
        }
    }

    SharedReceiveQueue queue() {
        return queue;
    }

    /**
     * The message buffers of message mode; null otherwise.
     */
    MemoryRegion messageRegion() {
        return messageRegion;
    }

    /**
     * A connection's own reusable request for {@link #repost}.
     */
    ReceiveWorkRequest createReceiveWorkRequest() {
        return queue.createReceiveWorkRequest();
    }

    /**
     * Reserve exactly {@code count} receives, posting more if needed.
     *
     * @return false if the queue cannot hold that many more reservations: nothing was reserved.
     */
    boolean reserve(final int count) {
        while (true) {
            final int free = unreserved.get();
            if (free >= count) {
                if (unreserved.compareAndSet(free, free - count)) {
                    return true;
                }
            } else if (!grow(count)) {
                return false;
            }
        }
    }

    /**
     * Reserve up to {@code wanted} receives: at most half of those neither reserved nor beyond the queue's size.
     *
     * @return how many were reserved, from 0 to {@code wanted}.
     */
    int borrow(final int wanted) {
        while (true) {
            final int free = unreserved.get();
            final int share = Math.min(wanted, (free + capacity - posted + 1) / 2);
            if (share <= 0) {
                return 0;
            }
            if (free >= share) {
                if (unreserved.compareAndSet(free, free - share)) {
                    return share;
                }
            } else if (!grow(share)) {
                return 0;
            }
        }
    }

    /**
     * Return reserved receives to the pool.
     */
    void giveBack(final int count) {
        if (count > 0) {
            unreserved.addAndGet(count);
        }
    }

    /**
     * Post receive {@code id} again after a message consumed it, with {@code request} (the caller's own).
     */
    void repost(final ReceiveWorkRequest request, final long id) {
        request.reset().id(id);
        if (messageRegion != null) {
            request.sge(0, messageRegion.address() + MessageSendDescriptor.bufferOffset((int) id),
                MessageSendDescriptor.LENGTH, messageRegion.localKey());
        }
        queue.postReceive(request);
    }

    /**
     * Post a batch of new receives so that at least {@code needed} are unreserved.
     *
     * @return false if the queue is full.
     */
    private boolean grow(final int needed) {
        growLock.lock();
        try {
            if (unreserved.get() >= needed) {
                return true;
            }
            final int room = capacity - posted;
            if (room < needed - unreserved.get()) {
                return false;
            }
            final int batch = Math.min(room, Math.max(POST_BATCH, needed));
            final int first = posted;
            for (int i = 0; i < batch; i++) {
                repost(growRequest, first + i);
                // published one by one: a failed post leaves the account matching what was posted
                posted = first + i + 1;
                unreserved.incrementAndGet();
            }
            return true;
        } finally {
            growLock.unlock();
        }
    }

    /**
     * The most receives the queue holds.
     */
    int capacity() {
        return capacity;
    }

    /**
     * Receives posted so far.
     */
    int posted() {
        return posted;
    }

    /**
     * Posted receives no connection has reserved.
     */
    int unreserved() {
        return unreserved.get();
    }

    /**
     * Destroy the queue and its buffers; the connections using it are released already.
     */
    @Override
    public void close() {
        RuntimeException failure = Closing.close(queue, null);
        failure = Closing.close(messageRegion, failure);
        if (failure != null) {
            throw failure;
        }
    }

    @Override
    public String toString() {
        return "SharedReceivePool{capacity=" + capacity + ", posted=" + posted + ", unreserved=" + unreserved.get()
            + '}';
    }
}

package io.rdmachannel.channel.shm;

import io.rdmachannel.channel.spi.CompletionHandler;
import io.rdmachannel.channel.spi.CompletionQueue;
import io.rdmachannel.channel.spi.CompletionStatus;
import io.rdmachannel.channel.spi.ReceiveWorkRequest;
import io.rdmachannel.channel.spi.XrcDomain;
import io.rdmachannel.channel.spi.XrcSharedReceiveQueue;

import java.io.IOException;
import java.lang.foreign.MemorySegment;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An XRC shared receive queue of the shared-memory provider: a shared receive queue of its protection domain, with a
 * number registered in the XRC domain's registry and a block ({@link XrcSharedReceiveQueueBlockDescriptor}) through
 * which remote XRC initiators of any process deliver into it. Its completion queue polls the block's inbound ring.
 */
final class ShmXrcSharedReceiveQueue implements XrcSharedReceiveQueue, InboundReceiver, ShmAgent.Retry {
    private static final Logger LOG = LoggerFactory.getLogger(ShmXrcSharedReceiveQueue.class);
    private static final long INBOUND = XrcSharedReceiveQueueBlockDescriptor.INBOUND_OFFSET;

    private final ShmXrcDomain domain;
    private final ShmSharedReceiveQueue queue;
    private final ShmCompletionQueue completionQueue;
    private final SharedFile block;
    private final MemorySegment blockSegment;
    private final int inboundCapacity;
    private int number;
    private boolean closed;
    /** Closed, and no initiator was inside the queue's guard when it closed (none can enter after). */
    private volatile boolean peerAccessEnded;
    /** Guarded by the completion queue's poll lock. */
    private long inboundHead;
    /** Malformed completions initiators published; guarded by the poll lock. */
    private long corrupt;
    /** Positions claimed and never taken, skipped ({@link SharedInboundRing}); guarded by the poll lock. */
    private long skipped;
    /** The position the ring stalls at (claimed, not taken), since when; guarded by the poll lock. */
    private long stalledAt = -1;
    private long stalledSinceNanos;
    private volatile long retryDeadlineNanos;

    private ShmXrcSharedReceiveQueue(final ShmXrcDomain domain, final ShmSharedReceiveQueue queue,
        final ShmCompletionQueue completionQueue, final SharedFile block, final int inboundCapacity) {
        this.domain = domain;
        this.queue = queue;
        this.completionQueue = completionQueue;
        this.block = block;
        this.blockSegment = block.segment();
        this.inboundCapacity = inboundCapacity;
    }

    /**
     * Make the block of {@code queue}, publish it and register the queue in the domain's registry; on failure nothing
     * is left (the caller closes {@code queue} and detaches the completion queue).
     */
    static ShmXrcSharedReceiveQueue create(final ShmXrcDomain domain, final ShmSharedReceiveQueue queue,
        final ShmCompletionQueue completionQueue) throws IOException {
        final ShmDevice device = domain.shmDevice();
        // no more completions are unpolled than the queue has receives, nor than the completion queue holds
        final int inboundCapacity = Math.min(queue.queue().capacity(), completionQueue.capacity());
        final SharedFile block = device.filePool().acquire(
            XrcSharedReceiveQueueBlockDescriptor.length(inboundCapacity));
        final int identity = device.nextQueuePairIdentity();
        final ShmXrcSharedReceiveQueue srq = new ShmXrcSharedReceiveQueue(domain, queue, completionQueue, block,
            inboundCapacity);
        final MemorySegment segment = block.segment();
        try {
            segment.set(Atomics.INT, XrcSharedReceiveQueueBlockDescriptor.PD_OFFSET, queue.domain().handle());
            segment.set(Atomics.INT, XrcSharedReceiveQueueBlockDescriptor.CQ_OFFSET, completionQueue.id());
            segment.set(Atomics.INT, XrcSharedReceiveQueueBlockDescriptor.CQ_FILE_OFFSET, completionQueue.fileId());
            segment.set(Atomics.INT, XrcSharedReceiveQueueBlockDescriptor.RQ_FILE_OFFSET, queue.fileId());
            segment.set(Atomics.INT, XrcSharedReceiveQueueBlockDescriptor.SRQ_ID_OFFSET, queue.id());
            segment.set(Atomics.INT, XrcSharedReceiveQueueBlockDescriptor.TRANSPORT_OFFSET,
                device.configuration().transport().code());
            segment.set(Atomics.INT, INBOUND + InboundCompletionDescriptor.CAPACITY_OFFSET, inboundCapacity);
            srq.number = domain.registry().createSharedReceiveQueue(domain.opener(), block.id(), identity);
            segment.set(Atomics.INT, XrcSharedReceiveQueueBlockDescriptor.NUMBER_OFFSET, srq.number);
            Atomics.setIntVolatile(segment, XrcSharedReceiveQueueBlockDescriptor.MAGIC_OFFSET,
                XrcSharedReceiveQueueBlockDescriptor.MAGIC);
            AccessGuard.publish(segment, XrcSharedReceiveQueueBlockDescriptor.GUARD_OFFSET, identity);
        } catch (final RuntimeException ex) {
            device.filePool().release(block);
            throw ex;
        }
        queue.markXrc();
        completionQueue.attachReceiver(srq);
        return srq;
    }

    @Override
    public int number() {
        return number;
    }

    @Override
    public XrcDomain xrcDomain() {
        return domain;
    }

    @Override
    public CompletionQueue completionQueue() {
        return completionQueue;
    }

    @Override
    public ReceiveWorkRequest createReceiveWorkRequest() {
        return queue.createReceiveWorkRequest();
    }

    @Override
    public void postReceive(final ReceiveWorkRequest request) {
        queue.postReceive(request);
    }

    @Override
    public void armLimit(final int limit, final LimitHandler handler) {
        queue.armLimit(limit, handler == null ? null : reached -> handler.onLimitReached(this));
    }

    @Override
    public int maxWorkRequests() {
        return queue.maxWorkRequests();
    }

    /**
     * Hand over the completions initiators published, in the order of the positions they claimed; the queue pair
     * number of each is the target queue pair it came through. Only a broken or hostile initiator process writes a
     * malformed entry, and it cannot be charged to a connection here: one naming no posted receive of this queue is
     * dropped; one claiming more bytes than its receive holds completes that receive with
     * {@link CompletionStatus#LOCAL_LENGTH_ERROR}.
     */
    @Override
    public int pollReceives(final ShmWorkCompletion completion, final CompletionHandler handler, final int limit) {
        int count = 0;
        final ReceiveQueue receives = queue.queue();
        while (count < limit) {
            final long entry = INBOUND + InboundCompletionDescriptor.entryOffset(inboundCapacity, inboundHead);
            final long word = Atomics.getLongAcquire(blockSegment, entry + InboundCompletionDescriptor.SEQUENCE_OFFSET);
            if (!SharedInboundRing.isPublished(word, inboundHead)) {
                if (skipAbandoned(entry, word)) {
                    continue;
                }
                break;
            }
            InboundCompletionDescriptor.read(blockSegment, entry, completion);
            completion.queuePairNumber = blockSegment.get(Atomics.INT,
                entry + InboundCompletionDescriptor.QUEUE_PAIR_OFFSET) & 0xFFFFFF;
            final int slot = blockSegment.get(Atomics.INT, entry + InboundCompletionDescriptor.SLOT_OFFSET);
            inboundHead++;
            Atomics.setLongRelease(blockSegment, INBOUND + InboundCompletionDescriptor.HEAD_OFFSET, inboundHead);
            final long length = receives.release(slot, completion);
            if (length < 0) {
                corrupt++;
                LOG.debug("XRC shared receive queue {}: an initiator published a completion for slot {}, which "
                    + "holds no posted receive; dropped", number, slot);
                continue;
            }
            if (InboundCompletionDescriptor.overflows(completion, length)) {
                // the receive was consumed: it completes, with the error a device reports for a message too long
                corrupt++;
                completion.status = CompletionStatus.LOCAL_LENGTH_ERROR;
                completion.byteLength = 0;
            }
            handler.onCompletion(completion);
            count++;
        }
        return count;
    }

    /**
     * The block's inbound completion ring, which every initiator process writes: for tests that play a hostile one.
     */
    MemorySegment inboundRing() {
        return blockSegment.asSlice(INBOUND, InboundCompletionDescriptor.regionLength(inboundCapacity));
    }

    /**
     * Malformed completions initiators published so far.
     */
    long corruptCompletions() {
        return corrupt;
    }

    /**
     * The position at the head is not published: if an initiator claimed it and has not taken its entry for the
     * grace time, it died (or was stopped) in between, and the position is skipped so that the completions behind it
     * are not held up for good. The first sight of such a position asks the agent to have the queue polled again once
     * the grace time passed, in case no later message wakes a poller.
     *
     * @return true if the position was skipped.
     */
    private boolean skipAbandoned(final long entry, final long word) {
        if (Atomics.getLongVolatile(blockSegment, INBOUND + InboundCompletionDescriptor.TAIL_OFFSET) <= inboundHead
            || !SharedInboundRing.isFreeFor(word, inboundHead, inboundCapacity)) {
            // nothing claimed there yet, or its initiator is writing it
            return false;
        }
        final long now = System.nanoTime();
        if (stalledAt != inboundHead) {
            stalledAt = inboundHead;
            stalledSinceNanos = now;
            retryDeadlineNanos = now + SharedInboundRing.skipGraceNanos;
            domain.shmDevice().agent().scheduleRetry(this);
            return false;
        }
        if (now - stalledSinceNanos < SharedInboundRing.skipGraceNanos
            || !SharedInboundRing.skip(blockSegment, entry, word, inboundHead, inboundCapacity)) {
            return false;
        }
        skipped++;
        LOG.debug("XRC shared receive queue {}: position {} was claimed by an initiator that never wrote it; "
            + "skipped", number, inboundHead);
        inboundHead++;
        Atomics.setLongRelease(blockSegment, INBOUND + InboundCompletionDescriptor.HEAD_OFFSET, inboundHead);
        return true;
    }

    @Override
    public long retryDeadlineNanos() {
        return retryDeadlineNanos;
    }

    /**
     * The grace time of a stalled position passed (agent thread): wake the queue's pollers so that one skips it.
     */
    @Override
    public void progress() {
        completionQueue.signalAfterPeerLoss();
    }

    /**
     * Positions skipped so far, for tests and diagnostics.
     */
    long skippedPositions() {
        return skipped;
    }

    @Override
    public void close() {
        close(ShmDevice.DRAIN_TIMEOUT_NANOS);
    }

    @Override
    public void abandon() {
        close(0);
    }

    private void close(final long drainTimeoutNanos) {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
        }
        // no initiator starts an access after this; one under way ends before the files are reused
        AccessGuard.revoke(blockSegment, XrcSharedReceiveQueueBlockDescriptor.GUARD_OFFSET);
        try {
            domain.registry().destroySharedReceiveQueue(number);
        } finally {
            final boolean drained = AccessGuard.awaitDrained(blockSegment,
                XrcSharedReceiveQueueBlockDescriptor.GUARD_OFFSET, drainTimeoutNanos);
            // every request executes inside the guard, its writes into this host's memory included
            peerAccessEnded = drained;
            completionQueue.detachReceiver(this);
            // after the detach: no poll can schedule a look at the ring again
            domain.shmDevice().agent().cancelRetry(this);
            if (!drained) {
                LOG.debug("XRC shared receive queue {} closed while an initiator's access was under way; its files "
                    + "are not reused", number);
                queue.taint();
                completionQueue.taint();
            }
            try {
                queue.close();
            } finally {
                if (drained) {
                    domain.shmDevice().filePool().release(block);
                } else {
                    block.close();
                }
                completionQueue.detach();
                domain.sharedReceiveQueueClosed(this);
            }
        }
    }

    @Override
    public boolean peerAccessEnded() {
        return peerAccessEnded;
    }

    @Override
    public String toString() {
        return "ShmXrcSharedReceiveQueue{number=" + number + ", queue=" + queue + ", inboundHead=" + inboundHead
            + ", corrupt=" + corrupt + ", skipped=" + skipped + ", closed=" + closed + '}';
    }
}

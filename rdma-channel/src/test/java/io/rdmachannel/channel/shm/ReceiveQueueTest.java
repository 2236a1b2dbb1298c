package io.rdmachannel.channel.shm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.Test;

/**
 * The peer's view of a receive queue: what the owner's process wrote into the shared header is checked before use.
 */
class ReceiveQueueTest {
    private static final int CAPACITY = 1024;

    /** A receive queue formatted in {@code segment} by its owner, and a sender's view of it. */
    private record Queue(MemorySegment segment, ReceiveQueue owner, ReceiveQueue sender) {
        static Queue open(final Arena arena, final int capacity, final boolean shared) {
            final MemorySegment segment = arena.allocate(ReceiveQueue.regionLength(capacity, 1), 64);
            final ReceiveQueue owner = ReceiveQueue.format(segment, shared ? "a shared queue" : "a queue pair's queue",
                0, capacity, 1, shared);
            final ReceiveQueue sender = ReceiveQueue.peerView(segment, 0, capacity, 1, shared);
            assertNotNull(sender);
            return new Queue(segment, owner, sender);
        }
    }

    @Test
    void shouldTreatANegativeHeadAsAClosedQueue() {
        try (Arena arena = Arena.ofConfined()) {
            final Queue queue = Queue.open(arena, CAPACITY, false);
            final MemorySegment segment = queue.segment();
            final ReceiveQueue peer = queue.sender();
            assertEquals(ReceiveQueue.EMPTY, peer.claim());
            // a head below a tail, but negative: as a ring position it would index far before the ring
            segment.set(ValueLayout.JAVA_LONG, ReceiveQueueDescriptor.HEAD_OFFSET, Long.MIN_VALUE + 5);
            segment.set(ValueLayout.JAVA_LONG, ReceiveQueueDescriptor.TAIL_OFFSET, 10);
            assertEquals(ReceiveQueue.CLOSED, peer.claim());
            assertTrue(peer.markWaiting(), "a waiting sender must look again, and find the queue closed");
        }
    }

    @Test
    void shouldNotRepublishASharedRingEntryItsClaimerHasNotRead() {
        try (Arena arena = Arena.ofConfined()) {
            final Queue queue = Queue.open(arena, 2, true);
            final ReceiveQueue owner = queue.owner();
            final ReceiveQueue sender = queue.sender();
            final ShmReceiveWorkRequest request = new ShmReceiveWorkRequest(this, 1);
            owner.post((ShmReceiveWorkRequest) request.reset().id(10));
            owner.post((ShmReceiveWorkRequest) request.reset().id(11));
            // one sender claims position 0 and is slow to read it; another claims position 1 and takes its slot
            assertEquals(0, sender.claim());
            assertEquals(1, sender.claim());
            final int second = sender.takeSlot(1);
            // the second receive completes and is posted again: position 2 is ring entry 0, still unread
            owner.release(second, new ShmWorkCompletion());
            final long start = System.nanoTime();
            owner.post((ShmReceiveWorkRequest) request.reset().id(12));
            assertTrue(System.nanoTime() - start >= ReceiveQueue.TAKE_WAIT_NANOS,
                "the owner did not wait for the unread entry");
        }
    }

    /**
     * A sender reads the owner's tail only when its claims reach the tail it read last, and then sees what was posted
     * since; on a queue pair's own queue (one sender) the entry it took is not marked, on a shared one it is.
     */
    @Test
    void shouldClaimWhatWasPostedSinceTheSendersLastLook() {
        try (Arena arena = Arena.ofConfined()) {
            final Queue queue = Queue.open(arena, 4, false);
            final MemorySegment segment = queue.segment();
            final ReceiveQueue owner = queue.owner();
            final ReceiveQueue sender = queue.sender();
            final ShmReceiveWorkRequest request = new ShmReceiveWorkRequest(this, 1);
            owner.post((ShmReceiveWorkRequest) request.reset().id(10));
            owner.post((ShmReceiveWorkRequest) request.reset().id(11));
            assertEquals(0, sender.claim());
            final int first = sender.takeSlot(0);
            assertEquals(first, segment.get(ValueLayout.JAVA_INT, ReceiveQueueDescriptor.ringOffset(0)),
                "the entry of a queue with one sender is left as it was");
            assertEquals(1, sender.claim());
            assertEquals(ReceiveQueue.EMPTY, sender.claim());
            owner.post((ShmReceiveWorkRequest) request.reset().id(12));
            assertEquals(2, sender.claim(), "a receive posted after the sender's last look");
            assertEquals(ReceiveQueue.EMPTY, sender.claim());

            final Queue shared = Queue.open(arena, 4, true);
            shared.owner().post((ShmReceiveWorkRequest) request.reset().id(20));
            assertEquals(0, shared.sender().claim());
            shared.sender().takeSlot(0);
            assertEquals(ReceiveQueue.TAKEN, shared.segment().get(ValueLayout.JAVA_INT,
                ReceiveQueueDescriptor.ringOffset(0)), "the entry of a shared queue is marked taken");
        }
    }
}

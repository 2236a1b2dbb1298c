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

    @Test
    void shouldTreatANegativeHeadAsAClosedQueue() {
        try (Arena arena = Arena.ofConfined()) {
            final MemorySegment segment = arena.allocate(ReceiveQueue.regionLength(CAPACITY, 1), 64);
            ReceiveQueue.format(segment, "the owner's queue", 0, CAPACITY, 1, false);
            final ReceiveQueue peer = ReceiveQueue.peerView(segment, 0, CAPACITY, 1, false);
            assertNotNull(peer);
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
            final MemorySegment segment = arena.allocate(ReceiveQueue.regionLength(2, 1), 64);
            final ReceiveQueue owner = ReceiveQueue.format(segment, "a shared queue", 0, 2, 1, true);
            final ReceiveQueue sender = ReceiveQueue.peerView(segment, 0, 2, 1, true);
            assertNotNull(sender);
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
            final MemorySegment segment = arena.allocate(ReceiveQueue.regionLength(4, 1), 64);
            final ReceiveQueue owner = ReceiveQueue.format(segment, "a queue pair's queue", 0, 4, 1, false);
            final ReceiveQueue sender = ReceiveQueue.peerView(segment, 0, 4, 1, false);
            assertNotNull(sender);
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

            final MemorySegment sharedSegment = arena.allocate(ReceiveQueue.regionLength(4, 1), 64);
            final ReceiveQueue sharedOwner = ReceiveQueue.format(sharedSegment, "a shared queue", 0, 4, 1, true);
            final ReceiveQueue sharedSender = ReceiveQueue.peerView(sharedSegment, 0, 4, 1, true);
            assertNotNull(sharedSender);
            sharedOwner.post((ShmReceiveWorkRequest) request.reset().id(20));
            assertEquals(0, sharedSender.claim());
            sharedSender.takeSlot(0);
            assertEquals(ReceiveQueue.TAKEN, sharedSegment.get(ValueLayout.JAVA_INT,
                ReceiveQueueDescriptor.ringOffset(0)), "the entry of a shared queue is marked taken");
        }
    }
}

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
            ReceiveQueue.format(segment, "the owner's queue", 0, CAPACITY, 1);
            final ReceiveQueue peer = ReceiveQueue.peerView(segment, 0, CAPACITY, 1);
            assertNotNull(peer);
            assertEquals(ReceiveQueue.EMPTY, peer.claim());
            // a head below a tail, but negative: as a ring position it would index far before the ring
            segment.set(ValueLayout.JAVA_LONG, ReceiveQueueDescriptor.HEAD_OFFSET, Long.MIN_VALUE + 5);
            segment.set(ValueLayout.JAVA_LONG, ReceiveQueueDescriptor.TAIL_OFFSET, 10);
            assertEquals(ReceiveQueue.CLOSED, peer.claim());
            assertTrue(peer.markWaiting(), "a waiting sender must look again, and find the queue closed");
        }
    }
}

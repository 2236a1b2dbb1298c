package io.rdmachannel.channel.shm;

import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Map;

/**
 * The send queues of closed queue pairs, kept for the next queue pairs of the same shape: a send queue is an array of
 * request copies (one per work request the queue holds, each with its SGE arrays), tens of kilobytes for a stream's
 * queue pair, and a process that connects and closes all the time would otherwise allocate and collect one per
 * connection. A slot holds nothing of the queue pair it served that matters to the next: every post overwrites the
 * copy it executes. At most {@link #PER_SHAPE} queues are kept per shape and {@link #TOTAL} in all.
 *
 * <p>Thread-safe: queue pairs are created and closed on any thread.
 */
final class SendSlotPool {
    static final int PER_SHAPE = 16;
    static final int TOTAL = 64;

    private final Map<Long, ArrayDeque<ShmSendWorkRequest[]>> idle = new HashMap<>();
    private int count;

    /**
     * A send queue of {@code capacity} slots of {@code maxSge} entries: a kept one, or a new one.
     */
    ShmSendWorkRequest[] take(final int capacity, final int maxSge) {
        synchronized (idle) {
            final ArrayDeque<ShmSendWorkRequest[]> kept = idle.get(shape(capacity, maxSge));
            final ShmSendWorkRequest[] slots = kept == null ? null : kept.pollFirst();
            if (slots != null) {
                count--;
                return slots;
            }
        }
        final ShmSendWorkRequest[] slots = new ShmSendWorkRequest[capacity];
        for (int i = 0; i < capacity; i++) {
            // a slot belongs to no queue pair: only requests an application posts are checked for their owner
            slots[i] = new ShmSendWorkRequest(null, maxSge);
        }
        return slots;
    }

    /**
     * Keep the send queue of a queue pair that will never touch it again (closed, under its send lock, before).
     */
    void give(final ShmSendWorkRequest[] slots, final int maxSge) {
        synchronized (idle) {
            if (count >= TOTAL) {
                return;
            }
            final ArrayDeque<ShmSendWorkRequest[]> kept = idle.computeIfAbsent(shape(slots.length, maxSge),
                key -> new ArrayDeque<>());
            if (kept.size() < PER_SHAPE) {
                kept.addFirst(slots);
                count++;
            }
        }
    }

    /**
     * The send queues kept now, for tests and diagnostics.
     */
    int idle() {
        synchronized (idle) {
            return count;
        }
    }

    private static long shape(final int capacity, final int maxSge) {
        return (long) capacity << 32 | maxSge;
    }
}

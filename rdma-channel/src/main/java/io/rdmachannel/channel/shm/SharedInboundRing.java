package io.rdmachannel.channel.shm;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.TimeUnit;

/**
 * The entries of a completion ring that many producers fill (an XRC shared receive queue's: initiators of any
 * process), and what lets its owner go on past a producer that died between claiming a position and publishing it.
 * Each entry's sequence word ({@link InboundCompletionDescriptor#SEQUENCE_OFFSET}) holds a state and the position
 * plus one:
 *
 * <pre>
 *  bits 63-62: 0 published, 1 being written (its producer owns it), 2 skipped by the owner
 *  bits 61-0:  position + 1
 * </pre>
 *
 * A producer claims a position by a compare-and-set of the ring's tail, takes the entry for it by a compare-and-set
 * of the word from "free for that position" (the previous round's published or skipped, or zero in the first round)
 * to "being written", writes the entry and publishes it. The owner polls positions in order; a position claimed (the
 * tail is past it) but not taken for {@link #skipGraceNanos} it skips by a compare-and-set from "free" to "skipped":
 * the producer died (or was stopped) in between, and one that comes back finds its entry skipped and fails its
 * request. An entry being written is never skipped (its producer may be writing it); a producer that dies while
 * writing one, a window of a few stores, still stalls the ring.
 */
final class SharedInboundRing {
    static final long PUBLISHED = 0;
    static final long WRITING = 1L << 62;
    static final long SKIPPED = 2L << 62;
    /** How long a claimed position may stay untaken before the owner skips it; tests shorten it. */
    static volatile long skipGraceNanos = TimeUnit.SECONDS.toNanos(1);

    private SharedInboundRing() {
    }

    /**
     * Whether {@code word} says the entry is free for {@code position}: the previous round's entry was published or
     * skipped, or this is the first round and the entry was never used.
     */
    static boolean isFreeFor(final long word, final long position, final int capacity) {
        if (position < capacity) {
            return word == 0;
        }
        final long previous = position - capacity + 1;
        return word == (PUBLISHED | previous) || word == (SKIPPED | previous);
    }

    static boolean isPublished(final long word, final long position) {
        return word == (PUBLISHED | position + 1);
    }

    /**
     * A producer takes the entry of the position it claimed.
     *
     * @return false if the owner skipped the position (or the word is not what a free entry holds): write nothing.
     */
    static boolean take(final MemorySegment ring, final long entry, final long position, final int capacity) {
        final long word = Atomics.getLongVolatile(ring, entry + InboundCompletionDescriptor.SEQUENCE_OFFSET);
        // a word skipped for this position is not free for it; one skipped for the previous round's is
        return isFreeFor(word, position, capacity)
            && Atomics.compareAndSetLong(ring, entry + InboundCompletionDescriptor.SEQUENCE_OFFSET, word,
            WRITING | position + 1);
    }

    /**
     * The producer that took the entry publishes it.
     */
    static void publish(final MemorySegment ring, final long entry, final long position) {
        Atomics.setLongRelease(ring, entry + InboundCompletionDescriptor.SEQUENCE_OFFSET, PUBLISHED | position + 1);
    }

    /**
     * The owner skips a position that was claimed and not taken.
     *
     * @return false if a producer took the entry meanwhile (or it is not free): wait for it.
     */
    static boolean skip(final MemorySegment ring, final long entry, final long word, final long position,
        final int capacity) {
        return isFreeFor(word, position, capacity)
            && Atomics.compareAndSetLong(ring, entry + InboundCompletionDescriptor.SEQUENCE_OFFSET, word,
            SKIPPED | position + 1);
    }
}

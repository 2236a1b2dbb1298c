package io.rdmachannel.channel.shm;

/**
 * Layout of a receive queue in shared memory: the owner posts, a peer's sender consumes. Used for the receive
 * queue of a queue pair (inside its block) and for a shared receive queue (its own file).
 *
 * <pre>
 *  header (192 bytes, counters on their own cache lines)
 *    0: head      long  next ring position to consume; the consumer claims it with a CAS; CLOSED_BIT when closed
 *   64: tail      long  ring positions published by the owner (release)
 *  128: capacity  int   slots (and ring positions)
 *  132: maxSge    int   scatter/gather entries per slot
 *  136: rnrWaiting int  set by a sender that found the queue empty; the owner wakes it on the next post
 *  140: limit     int   armed limit of a shared queue (0: none); the sender whose claim leaves fewer receives posted
 *                       clears it with a CAS and tells the owner
 *  ring (capacity ints): slot index published at each position
 *  slots (capacity x slotLength): wrId long, sgeCount int, reserved int, sges {address long, length int, lkey int}
 * </pre>
 *
 * Slots are freed when the owner polls their completion, which may be out of ring order on a shared queue; the
 * ring of slot indices keeps the consumption order. Values read by a peer are validated before use.
 */
final class ReceiveQueueDescriptor {
    static final long CLOSED_BIT = 1L << 62;
    static final int HEAD_OFFSET = 0;
    static final int TAIL_OFFSET = 64;
    static final int CAPACITY_OFFSET = 128;
    static final int MAX_SGE_OFFSET = 132;
    static final int RNR_WAITING_OFFSET = 136;
    static final int LIMIT_OFFSET = 140;
    static final int HEADER_LENGTH = 192;

    static final int SLOT_WR_ID_OFFSET = 0;
    static final int SLOT_SGE_COUNT_OFFSET = 8;
    static final int SLOT_SGES_OFFSET = 16;
    static final int SGE_ADDRESS_OFFSET = 0;
    static final int SGE_LENGTH_OFFSET = 8;
    static final int SGE_LKEY_OFFSET = 12;
    static final int SGE_LENGTH = 16;

    private ReceiveQueueDescriptor() {
    }

    static long ringOffset(final int position) {
        return HEADER_LENGTH + (long) position * Integer.BYTES;
    }

    static long slotLength(final int maxSge) {
        return SLOT_SGES_OFFSET + (long) maxSge * SGE_LENGTH;
    }

    static long slotsOffset(final int capacity) {
        return (HEADER_LENGTH + (long) capacity * Integer.BYTES + 63) & -64L;
    }

    static long slotOffset(final int capacity, final int maxSge, final int slot) {
        return slotsOffset(capacity) + slot * slotLength(maxSge);
    }

    static long sgeOffset(final long slotOffset, final int index) {
        return slotOffset + SLOT_SGES_OFFSET + (long) index * SGE_LENGTH;
    }

    static long regionLength(final int capacity, final int maxSge) {
        return slotsOffset(capacity) + capacity * slotLength(maxSge);
    }
}

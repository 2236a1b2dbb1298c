package io.rdmachannel.channel.shm;

/**
 * Layout of a queue pair's shared block: what the connected peer reads and writes. The block lives in a pooled file
 * ({@code f-<id>}, {@link ShmFilePool}) that held other queue pairs before and will hold others after; the symbolic
 * link {@code qp-<number>} names it while the queue pair exists. A peer takes the identity from the guard when it
 * connects and touches the block, the receive completion queue's word and the shared receive queue only inside an
 * access the guard admitted for that identity.
 *
 * <pre>
 *    0 state int (QueuePairState code; DESTROYED when closed)   4 access flags int (remote access allowed)
 *    8 protection domain handle int   12 receive completion queue id int   16 shared receive queue id int (-1: own)
 *   20 min RNR timer code int   24 magic int   28 receive queue capacity int   32 receive max SGE int
 *   36 inbound capacity int   40 generation int (bumped by each RESET; a link introduced for an older one is refused)
 *   44 transport int (ShmConfiguration.Transport code: 0 InfiniBand, 1 iWARP; both ends must agree)
 *   48 guard long (AccessGuard: the queue pair's identity, whose low 24 bits are its number, and peer accesses)
 *   56 receive completion queue file id int   60 shared receive queue file id int (0: none)
 *  256 receive queue region (ReceiveQueueDescriptor), absent with a shared receive queue
 *   .. inbound completion ring (InboundCompletionDescriptor)
 *   .. inline area, 64-byte aligned: the owner's copies of inline payloads, never read by the peer
 * </pre>
 */
final class QueuePairBlockDescriptor {
    static final int MAGIC = 0x52514d53;
    static final int STATE_DESTROYED = -1;

    static final int STATE_OFFSET = 0;
    static final int ACCESS_OFFSET = 4;
    static final int PD_OFFSET = 8;
    static final int RECEIVE_CQ_OFFSET = 12;
    static final int SRQ_OFFSET = 16;
    static final int MIN_RNR_TIMER_OFFSET = 20;
    static final int MAGIC_OFFSET = 24;
    static final int RQ_CAPACITY_OFFSET = 28;
    static final int RQ_MAX_SGE_OFFSET = 32;
    static final int INBOUND_CAPACITY_OFFSET = 36;
    static final int GENERATION_OFFSET = 40;
    static final int TRANSPORT_OFFSET = 44;
    static final int GUARD_OFFSET = 48;
    static final int RECEIVE_CQ_FILE_OFFSET = 56;
    static final int SRQ_FILE_OFFSET = 60;
    static final int HEADER_LENGTH = 256;

    private QueuePairBlockDescriptor() {
    }

    static long receiveQueueOffset() {
        return HEADER_LENGTH;
    }

    static long inboundOffset(final int rqCapacity, final int rqMaxSge) {
        return HEADER_LENGTH + (rqCapacity == 0 ? 0 : (ReceiveQueueDescriptor.regionLength(rqCapacity, rqMaxSge)
            + 63 & -64L));
    }

    static long inlineOffset(final int rqCapacity, final int rqMaxSge, final int inboundCapacity) {
        return inboundOffset(rqCapacity, rqMaxSge) + InboundCompletionDescriptor.regionLength(inboundCapacity)
            + 63 & -64L;
    }

    static long blockLength(final int rqCapacity, final int rqMaxSge, final int inboundCapacity,
        final long inlineLength) {
        return inlineOffset(rqCapacity, rqMaxSge, inboundCapacity) + inlineLength;
    }

    static String fileName(final int queuePairNumber) {
        return "qp-" + Integer.toHexString(queuePairNumber);
    }
}

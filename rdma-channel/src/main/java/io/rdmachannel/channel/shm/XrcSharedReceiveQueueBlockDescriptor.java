package io.rdmachannel.channel.shm;

/**
 * Layout of the block of an XRC shared receive queue: what remote XRC initiators, in any process, read and write to
 * deliver into the queue. It lives in a pooled file ({@code f-<id>}) of the queue's device; the domain's registry
 * names the file and the identity ({@link XrcDomainDescriptor}). An initiator touches the block, the receive queue
 * and the completion queue's word only inside an access the guard admitted for that identity.
 *
 * <pre>
 *    0 magic int   4 XRC number int (the queue's number in its domain)   8 guard long (AccessGuard)
 *   16 protection domain handle int (the queue's: remote keys of RDMA operations are checked against it)
 *   20 completion queue id int   24 completion queue file id int   28 receive queue file id int
 *   32 shared receive queue id int (the device's own id, named by limit wake-ups)   36 transport int
 *  128 inbound completion ring (InboundCompletionDescriptor), many producers: an initiator claims a position by a
 *      compare-and-set of the tail while fewer than capacity entries are unpolled, takes its entry, writes it, then
 *      publishes it (SharedInboundRing: the sequence word holds a state); the owner polls entries in position order
 *      and skips a position claimed and never taken. Entries carry the target queue pair's number.
 * </pre>
 */
final class XrcSharedReceiveQueueBlockDescriptor {
    static final int MAGIC = 0x58535251;
    static final int MAGIC_OFFSET = 0;
    static final int NUMBER_OFFSET = 4;
    static final int GUARD_OFFSET = 8;
    static final int PD_OFFSET = 16;
    static final int CQ_OFFSET = 20;
    static final int CQ_FILE_OFFSET = 24;
    static final int RQ_FILE_OFFSET = 28;
    static final int SRQ_ID_OFFSET = 32;
    static final int TRANSPORT_OFFSET = 36;
    static final int INBOUND_OFFSET = 128;

    private XrcSharedReceiveQueueBlockDescriptor() {
    }

    static long length(final int inboundCapacity) {
        return INBOUND_OFFSET + InboundCompletionDescriptor.regionLength(inboundCapacity);
    }
}

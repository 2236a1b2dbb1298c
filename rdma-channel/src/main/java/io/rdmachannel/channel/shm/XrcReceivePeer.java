package io.rdmachannel.channel.shm;

import io.rdmachannel.channel.spi.CompletionOpcode;
import io.rdmachannel.channel.spi.CompletionStatus;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.util.HexFormat;

/**
 * An XRC shared receive queue as an initiator reaches it through its target queue pair: mappings of the queue's
 * block ({@link XrcSharedReceiveQueueBlockDescriptor}), receive queue and completion queue word, and of its device's
 * memory regions. The queue's device may be another process than the one that named the target. Found through the
 * target's domain registry by number; every value read is validated, and the memory is touched only inside an
 * access the block's guard admitted for the identity the registry gave.
 */
final class XrcReceivePeer implements ReceivingPeer, AutoCloseable {
    private static final long INBOUND = XrcSharedReceiveQueueBlockDescriptor.INBOUND_OFFSET;

    private final ShmDevice device;
    private final XrcTargetPeer target;
    private final int number;
    private final String gidHex;
    private final PeerNode node;
    private final PeerNode.CachedFile block;
    private final PeerNode.CachedFile receiveQueueFile;
    private final PeerNode.CachedFile completionQueueFile;
    private final MemorySegment blockSegment;
    private final MemorySegment completionQueueSegment;
    private final ReceiveQueue receiveQueue;
    private final int identity;
    private final int protectionDomain;
    private final int completionQueueId;
    private final int sharedReceiveQueueId;
    private final int inboundCapacity;
    /** The queue's device is gone (its link to us ended). */
    private volatile boolean ownerGone;

    private XrcReceivePeer(final ShmDevice device, final XrcTargetPeer target, final int number, final String gidHex,
        final PeerNode node, final PeerNode.CachedFile block, final PeerNode.CachedFile receiveQueueFile,
        final PeerNode.CachedFile completionQueueFile, final ReceiveQueue receiveQueue, final int identity,
        final int inboundCapacity) {
        this.device = device;
        this.target = target;
        this.number = number;
        this.gidHex = gidHex;
        this.node = node;
        this.block = block;
        this.receiveQueueFile = receiveQueueFile;
        this.completionQueueFile = completionQueueFile;
        this.blockSegment = block.segment();
        this.completionQueueSegment = completionQueueFile.segment();
        this.receiveQueue = receiveQueue;
        this.identity = identity;
        this.protectionDomain = blockSegment.get(Atomics.INT, XrcSharedReceiveQueueBlockDescriptor.PD_OFFSET);
        this.completionQueueId = blockSegment.get(Atomics.INT, XrcSharedReceiveQueueBlockDescriptor.CQ_OFFSET);
        this.sharedReceiveQueueId = blockSegment.get(Atomics.INT,
            XrcSharedReceiveQueueBlockDescriptor.SRQ_ID_OFFSET);
        this.inboundCapacity = inboundCapacity;
    }

    /**
     * Map the XRC shared receive queue {@code number} of the target's domain.
     *
     * @throws IOException if the domain has no such queue (never created, closed, its process gone) or its files are
     *     malformed.
     */
    static XrcReceivePeer connect(final ShmDevice device, final XrcTargetPeer target, final int number)
        throws IOException {
        final XrcRegistry.SharedReceiveQueueLocation location = target.registry().sharedReceiveQueue(number);
        final String missing = "no XRC shared receive queue " + number + " in the domain of target queue pair "
            + target.number();
        if (location == null) {
            throw new IOException(missing);
        }
        final String gidHex = HexFormat.of().formatHex(location.gid());
        final PeerNode node = device.peer(gidHex);
        PeerNode.CachedFile block = null;
        PeerNode.CachedFile rqFile = null;
        PeerNode.CachedFile cqFile = null;
        try {
            block = node.pin(location.blockFile(), missing);
            final MemorySegment segment = block.segment();
            if (segment.byteSize() < INBOUND + InboundCompletionDescriptor.HEADER_LENGTH
                || segment.get(Atomics.INT, XrcSharedReceiveQueueBlockDescriptor.MAGIC_OFFSET)
                != XrcSharedReceiveQueueBlockDescriptor.MAGIC
                || segment.get(Atomics.INT, XrcSharedReceiveQueueBlockDescriptor.NUMBER_OFFSET) != number
                || AccessGuard.identity(segment, XrcSharedReceiveQueueBlockDescriptor.GUARD_OFFSET)
                != location.blockIdentity()) {
                // closed and its file given to another object since the registry named it
                throw new IOException(missing);
            }
            final int capacity = segment.get(Atomics.INT, INBOUND + InboundCompletionDescriptor.CAPACITY_OFFSET);
            final int limit = device.attributes().maxSharedReceiveQueueWorkRequests();
            if (capacity < 1 || capacity > limit
                || XrcSharedReceiveQueueBlockDescriptor.length(capacity) > segment.byteSize()) {
                throw new IOException("XRC shared receive queue " + number + " on shm device " + gidHex
                    + " advertises an impossible ring: capacity=" + capacity);
            }
            if (segment.get(Atomics.INT, XrcSharedReceiveQueueBlockDescriptor.TRANSPORT_OFFSET)
                != device.configuration().transport().code()) {
                throw new IOException("XRC shared receive queue " + number + " on shm device " + gidHex
                    + " uses another transport: both ends need the same " + ShmConfiguration.TRANSPORT_PROP_NAME);
            }
            rqFile = node.pin(segment.get(Atomics.INT, XrcSharedReceiveQueueBlockDescriptor.RQ_FILE_OFFSET),
                missing);
            final ReceiveQueue receiveQueue = ReceiveQueue.peerView(rqFile.segment(), 0, limit,
                device.attributes().maxSge(), true);
            if (receiveQueue == null) {
                throw new IOException("XRC shared receive queue " + number + " on shm device " + gidHex
                    + " has a malformed receive queue");
            }
            cqFile = node.pin(segment.get(Atomics.INT, XrcSharedReceiveQueueBlockDescriptor.CQ_FILE_OFFSET),
                missing);
            if (cqFile.segment().byteSize() < ShmCompletionQueue.FILE_LENGTH) {
                throw new IOException("the completion queue of XRC shared receive queue " + number
                    + " has a short file");
            }
            if (AccessGuard.identity(segment, XrcSharedReceiveQueueBlockDescriptor.GUARD_OFFSET)
                != location.blockIdentity()) {
                throw new IOException(missing);
            }
            return new XrcReceivePeer(device, target, number, gidHex, node, block, rqFile, cqFile, receiveQueue,
                location.blockIdentity(), capacity);
        } catch (final IOException | RuntimeException ex) {
            node.unpinAll(block, rqFile, cqFile);
            device.release(node);
            throw ex;
        } catch (final InternalError fault) {
            node.unpinAll(block, rqFile, cqFile);
            device.release(node);
            throw new IOException("XRC shared receive queue " + number + " on shm device " + gidHex
                + " has a truncated file", fault);
        }
    }

    int number() {
        return number;
    }

    String gidHex() {
        return gidHex;
    }

    boolean isSameDevice() {
        return gidHex.equals(device.gidHex());
    }

    /**
     * The queue's device is gone: its link to this process ended. Requests to the queue fail from now on.
     */
    void ownerGone() {
        ownerGone = true;
    }

    @Override
    public boolean enter() {
        return !ownerGone
            && AccessGuard.enter(blockSegment, XrcSharedReceiveQueueBlockDescriptor.GUARD_OFFSET, identity);
    }

    @Override
    public void exit() {
        AccessGuard.exit(blockSegment, XrcSharedReceiveQueueBlockDescriptor.GUARD_OFFSET);
    }

    @Override
    public boolean canReceive() {
        return target.accepts();
    }

    @Override
    public boolean isGone() {
        return target.isGone();
    }

    /**
     * Whether the queue itself is gone: closed (its identity revoked) or its device gone.
     */
    boolean isQueueGone() {
        return ownerGone
            || AccessGuard.identity(blockSegment, XrcSharedReceiveQueueBlockDescriptor.GUARD_OFFSET) != identity;
    }

    @Override
    public PeerNode node() {
        return node;
    }

    @Override
    public int protectionDomain() {
        return protectionDomain;
    }

    @Override
    public int accessFlags() {
        return target.accessFlags();
    }

    @Override
    public ReceiveQueue receiveQueue() {
        return receiveQueue;
    }

    @Override
    public int sharedReceiveQueueId() {
        return sharedReceiveQueueId;
    }

    @Override
    public int completionQueueId() {
        return completionQueueId;
    }

    @Override
    public int queuePairNumber() {
        return target.number();
    }

    @Override
    public int minRnrTimer() {
        return target.minRnrTimer();
    }

    /**
     * Claim a position of the queue's ring against the other initiators (of any process), take its entry, write the
     * completion and publish it ({@link SharedInboundRing}); inside an access.
     *
     * @return false if the ring was full (a peer that broke the rules) or the owner skipped the position claimed.
     */
    @Override
    public boolean publish(final long workRequestId, final int slot, final CompletionStatus status,
        final CompletionOpcode opcode, final int byteLength, final int flags, final int immediate) {
        final MemorySegment segment = blockSegment;
        long position;
        while (true) {
            position = Atomics.getLongVolatile(segment, INBOUND + InboundCompletionDescriptor.TAIL_OFFSET);
            final long head = Atomics.getLongVolatile(segment, INBOUND + InboundCompletionDescriptor.HEAD_OFFSET);
            if (position - head >= inboundCapacity || position < head) {
                return false;
            }
            if (Atomics.compareAndSetLong(segment, INBOUND + InboundCompletionDescriptor.TAIL_OFFSET, position,
                position + 1)) {
                break;
            }
        }
        final long entry = INBOUND + InboundCompletionDescriptor.entryOffset(inboundCapacity, position);
        if (!SharedInboundRing.take(segment, entry, position, inboundCapacity)) {
            // the owner skipped the position: this thread was stopped between its claim and now
            return false;
        }
        InboundCompletionDescriptor.write(segment, entry, workRequestId, slot, status, opcode, byteLength, flags,
            immediate);
        segment.set(Atomics.INT, entry + InboundCompletionDescriptor.QUEUE_PAIR_OFFSET, target.number());
        SharedInboundRing.publish(segment, entry, position);
        return true;
    }

    @Override
    public boolean disarmCompletionQueue(final boolean solicited) {
        return ShmCompletionQueue.disarmAndWake(completionQueueSegment, solicited);
    }

    /**
     * The target fails (the responder's fatal error): see {@link XrcTargetPeer#fail}.
     */
    @Override
    public void setError() {
        target.fail();
    }

    @Override
    public void close() {
        node.unpinAll(block, receiveQueueFile, completionQueueFile);
        device.release(node);
    }

    @Override
    public String toString() {
        return "XrcReceivePeer{number=" + number + ", device=" + gidHex + ", identity=0x"
            + Integer.toHexString(identity) + ", ownerGone=" + ownerGone + ", target=" + target + '}';
    }
}

package io.rdmachannel.channel.shm;

import static io.rdmachannel.channel.shm.InboundCompletionDescriptor.SEQUENCE_OFFSET;

import io.rdmachannel.channel.spi.CompletionOpcode;
import io.rdmachannel.channel.spi.CompletionStatus;
import io.rdmachannel.channel.spi.QueuePairState;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotLinkException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HexFormat;

/**
 * The connected peer queue pair as this side sees it: mappings of its shared block, its receive queue (own or
 * shared), its receive completion queue's arming word and its device's memory regions. Every value read from the
 * peer is validated when the mapping is made or before each use. The peer reuses its files for later queue pairs:
 * the block's guard carries the identity this side connected to, and this side touches the block, the queue word and
 * the shared receive queue only inside an access the guard admitted ({@link #enter}), so a connection that ended can
 * never reach the memory of a later one.
 */
final class RemotePeer implements ReceivingPeer, AutoCloseable {
    private final ShmDevice device;
    private final byte[] gid;
    private final int queuePairNumber;
    private final int identity;
    private final boolean sameDevice;
    private final PeerNode node;
    private final PeerNode.CachedFile block;
    private final PeerNode.CachedFile sharedReceiveQueueFile;
    private final PeerNode.CachedFile completionQueueFile;
    private final MemorySegment blockSegment;
    /** Set once an access to the peer's block faulted: see {@link #onFault}. */
    private volatile boolean faulted;
    private final MemorySegment completionQueueSegment;
    private final ReceiveQueue receiveQueue;
    private final int protectionDomain;
    private final int completionQueueId;
    private final int sharedReceiveQueueId;
    private final long inboundBase;
    private final int inboundCapacity;
    private long inboundTail;
    /**
     * The peer's inbound head as last read: read again only when the ring looks full by it, so that the line the
     * peer writes on every poll is not pulled over here on every message (it only lags: the ring is never overrun).
     */
    private long knownInboundHead;

    private RemotePeer(final ShmDevice device, final byte[] gid, final int queuePairNumber, final int identity,
        final PeerNode node, final PeerNode.CachedFile block, final PeerNode.CachedFile sharedReceiveQueueFile,
        final PeerNode.CachedFile completionQueueFile, final ReceiveQueue receiveQueue, final long inboundBase,
        final int inboundCapacity) {
        this.device = device;
        this.gid = gid;
        this.queuePairNumber = queuePairNumber;
        this.identity = identity;
        this.sameDevice = node.gidHex().equals(device.gidHex());
        this.node = node;
        this.block = block;
        this.sharedReceiveQueueFile = sharedReceiveQueueFile;
        this.completionQueueFile = completionQueueFile;
        this.blockSegment = block.segment();
        this.completionQueueSegment = completionQueueFile.segment();
        this.receiveQueue = receiveQueue;
        this.protectionDomain = blockSegment.get(Atomics.INT, QueuePairBlockDescriptor.PD_OFFSET);
        this.completionQueueId = blockSegment.get(Atomics.INT, QueuePairBlockDescriptor.RECEIVE_CQ_OFFSET);
        this.sharedReceiveQueueId = sharedReceiveQueueFile == null ? -1
            : blockSegment.get(Atomics.INT, QueuePairBlockDescriptor.SRQ_OFFSET);
        this.inboundBase = inboundBase;
        this.inboundCapacity = inboundCapacity;
        this.inboundTail = Atomics.getLongVolatile(blockSegment,
            inboundBase + InboundCompletionDescriptor.TAIL_OFFSET);
        this.knownInboundHead = Atomics.getLongVolatile(blockSegment,
            inboundBase + InboundCompletionDescriptor.HEAD_OFFSET);
    }

    /**
     * Map the peer queue pair {@code number} of the device {@code gid}.
     *
     * @throws IOException if the device or queue pair does not exist or its block is malformed.
     */
    static RemotePeer connect(final ShmDevice device, final byte[] gid, final int number) throws IOException {
        final String gidHex = HexFormat.of().formatHex(gid);
        final PeerNode node = device.peer(gidHex);
        PeerNode.CachedFile block = null;
        PeerNode.CachedFile srqFile = null;
        PeerNode.CachedFile cqFile = null;
        try {
            final String missing = "no queue pair " + number + " on shm device " + gidHex;
            block = node.pin(blockFileId(node.folder(), number, missing), missing);
            final MemorySegment segment = block.segment();
            final int magic = segment.byteSize() < QueuePairBlockDescriptor.HEADER_LENGTH ? 0
                : segment.get(Atomics.INT, QueuePairBlockDescriptor.MAGIC_OFFSET);
            if (magic == 0) {
                // a free pooled file: the name outlived its queue pair for the moment its device takes to remove it
                throw new IOException(missing);
            }
            if (magic != QueuePairBlockDescriptor.MAGIC) {
                throw new IOException("queue pair " + number + " on shm device " + gidHex + " has a malformed block");
            }
            final int identity = AccessGuard.identity(segment, QueuePairBlockDescriptor.GUARD_OFFSET);
            if (identity == 0 || (identity & 0xFFFFFF) != number) {
                // the file was given to another queue pair after the link was read: this one is gone
                throw new IOException(missing);
            }
            final int limit = device.attributes().maxQueuePairWorkRequests();
            final int maxSge = device.attributes().maxSge();
            final int rqCapacity = segment.get(Atomics.INT, QueuePairBlockDescriptor.RQ_CAPACITY_OFFSET);
            final int rqMaxSge = segment.get(Atomics.INT, QueuePairBlockDescriptor.RQ_MAX_SGE_OFFSET);
            final int inboundCapacity = segment.get(Atomics.INT, QueuePairBlockDescriptor.INBOUND_CAPACITY_OFFSET);
            final int srqId = segment.get(Atomics.INT, QueuePairBlockDescriptor.SRQ_OFFSET);
            final int cqId = segment.get(Atomics.INT, QueuePairBlockDescriptor.RECEIVE_CQ_OFFSET);
            final int srqFileId = segment.get(Atomics.INT, QueuePairBlockDescriptor.SRQ_FILE_OFFSET);
            final int cqFileId = segment.get(Atomics.INT, QueuePairBlockDescriptor.RECEIVE_CQ_FILE_OFFSET);
            if (rqCapacity < 0 || rqCapacity > limit || rqMaxSge < 0 || rqMaxSge > maxSge || inboundCapacity < 1
                || inboundCapacity > limit || (rqCapacity == 0) != (srqId >= 0) || (srqId >= 0) != (srqFileId > 0)
                || cqFileId <= 0) {
                throw new IOException("queue pair " + number + " on shm device " + gidHex
                    + " advertises impossible queue sizes: rqCapacity=" + rqCapacity + ", rqMaxSge=" + rqMaxSge
                    + ", inboundCapacity=" + inboundCapacity + ", srq=" + srqId + ", srqFile=" + srqFileId
                    + ", cqFile=" + cqFileId);
            }
            checkTransport(device, segment.get(Atomics.INT, QueuePairBlockDescriptor.TRANSPORT_OFFSET), number,
                gidHex);
            final long inboundBase = QueuePairBlockDescriptor.inboundOffset(rqCapacity, rqMaxSge);
            if (inboundBase + InboundCompletionDescriptor.regionLength(inboundCapacity) > segment.byteSize()) {
                throw new IOException("queue pair " + number + " on shm device " + gidHex + " has a short block");
            }
            final ReceiveQueue receiveQueue;
            if (srqId >= 0) {
                srqFile = node.pin(srqFileId, "shared receive queue " + srqId + " of queue pair " + number
                    + " is gone");
                receiveQueue = ReceiveQueue.peerView(srqFile.segment(), 0,
                    device.attributes().maxSharedReceiveQueueWorkRequests(), maxSge, true);
            } else {
                receiveQueue = ReceiveQueue.peerView(segment, QueuePairBlockDescriptor.receiveQueueOffset(), limit,
                    maxSge, false);
            }
            if (receiveQueue == null) {
                throw new IOException("queue pair " + number + " on shm device " + gidHex
                    + " has a malformed receive queue");
            }
            cqFile = node.pin(cqFileId, "receive completion queue " + cqId + " of queue pair " + number
                + " is gone");
            if (cqFile.segment().byteSize() < ShmCompletionQueue.FILE_LENGTH) {
                throw new IOException("receive completion queue " + cqId + " of queue pair " + number
                    + " has a short file");
            }
            if (AccessGuard.identity(segment, QueuePairBlockDescriptor.GUARD_OFFSET) != identity) {
                throw new IOException(missing);
            }
            return new RemotePeer(device, gid.clone(), number, identity, node, block, srqFile, cqFile, receiveQueue,
                inboundBase, inboundCapacity);
        } catch (final IOException | RuntimeException ex) {
            node.unpinAll(block, srqFile, cqFile);
            device.release(node);
            throw ex;
        } catch (final InternalError fault) {
            // an access to a file the peer truncated under our mapping
            node.unpinAll(block, srqFile, cqFile);
            device.release(node);
            throw new IOException("queue pair " + number + " on shm device " + gidHex + " has a truncated file",
                fault);
        }
    }

    /**
     * The pooled file a queue pair's block lives in, from its link {@code qp-<number>}.
     */
    private static int blockFileId(final Path folder, final int number, final String missing) throws IOException {
        final Path target;
        try {
            target = Files.readSymbolicLink(folder.resolve(QueuePairBlockDescriptor.fileName(number)));
        } catch (final NoSuchFileException | NotLinkException ex) {
            throw new IOException(missing, ex);
        }
        final int id = SharedFile.pooledId(target.getFileName().toString());
        if (id <= 0 || target.getNameCount() != 1) {
            throw new IOException(missing + ": its link names " + target);
        }
        return id;
    }

    /**
     * A fabric has one transport: an InfiniBand queue pair cannot talk to an iWARP one.
     */
    private static void checkTransport(final ShmDevice device, final int code, final int number,
        final String gidHex) throws IOException {
        final ShmConfiguration.Transport local = device.configuration().transport();
        if (code != local.code()) {
            final ShmConfiguration.Transport remote = ShmConfiguration.Transport.fromCode(code);
            throw new IOException("queue pair " + number + " on shm device " + gidHex + " uses the "
                + (remote == null ? "unknown transport " + code : remote.propertyValue() + " transport")
                + ", this device " + local.propertyValue() + ": both ends need the same "
                + ShmConfiguration.TRANSPORT_PROP_NAME);
        }
    }

    boolean matches(final byte[] otherGid, final int number) {
        return number == queuePairNumber && Arrays.equals(gid, otherGid);
    }

    byte[] gid() {
        return gid;
    }

    @Override
    public int queuePairNumber() {
        return queuePairNumber;
    }

    boolean isSameDevice() {
        return sameDevice;
    }

    @Override
    public PeerNode node() {
        return node;
    }

    @Override
    public int protectionDomain() {
        return protectionDomain;
    }

    /**
     * The id of the peer's shared receive queue its receives come from, or -1 with a receive queue of its own.
     */
    @Override
    public int sharedReceiveQueueId() {
        return sharedReceiveQueueId;
    }

    @Override
    public int completionQueueId() {
        return completionQueueId;
    }

    @Override
    public ReceiveQueue receiveQueue() {
        return receiveQueue;
    }

    /**
     * Start an access to the peer's block, queue word and shared receive queue; every write to them, and every read
     * that decides something, happens between this and {@link #exit}.
     *
     * @return false if the peer queue pair is gone (its block may hold another queue pair by now): touch nothing.
     */
    @Override
    public boolean enter() {
        return AccessGuard.enter(blockSegment, QueuePairBlockDescriptor.GUARD_OFFSET, identity);
    }

    @Override
    public void exit() {
        AccessGuard.exit(blockSegment, QueuePairBlockDescriptor.GUARD_OFFSET);
    }

    /**
     * The peer's state code, or {@link QueuePairBlockDescriptor#STATE_DESTROYED} once its block belongs to no queue
     * pair or another one.
     */
    int state() {
        if (faulted) {
            return QueuePairBlockDescriptor.STATE_DESTROYED;
        }
        try {
            final int state = Atomics.getIntVolatile(blockSegment, QueuePairBlockDescriptor.STATE_OFFSET);
            return isCurrent() ? state : QueuePairBlockDescriptor.STATE_DESTROYED;
        } catch (final InternalError fault) {
            return onFault();
        }
    }

    /**
     * The peer's block faulted (the JDK reports the SIGBUS of an access to a mapped file truncated under the mapping
     * as this error; only the peer's process can truncate it): the peer is gone for us, for good, and its block is
     * not read again by the questions asked on every poll.
     *
     * @return {@link QueuePairBlockDescriptor#STATE_DESTROYED}.
     */
    private int onFault() {
        faulted = true;
        return QueuePairBlockDescriptor.STATE_DESTROYED;
    }

    private boolean isCurrent() {
        return AccessGuard.identity(blockSegment, QueuePairBlockDescriptor.GUARD_OFFSET) == identity;
    }

    @Override
    public boolean canReceive() {
        final int state = state();
        return state == QueuePairState.READY_TO_RECEIVE.code() || state == QueuePairState.READY_TO_SEND.code();
    }

    @Override
    public boolean isGone() {
        final int state = state();
        return state == QueuePairBlockDescriptor.STATE_DESTROYED || state == QueuePairState.ERROR.code();
    }

    /**
     * The peer's connection generation, bumped by each RESET of the peer.
     */
    int generation() {
        if (faulted) {
            return -1;
        }
        try {
            final int generation = Atomics.getIntVolatile(blockSegment, QueuePairBlockDescriptor.GENERATION_OFFSET);
            return isCurrent() ? generation : -1;
        } catch (final InternalError fault) {
            onFault();
            return -1;
        }
    }

    /**
     * The remote access the peer queue pair allows.
     */
    @Override
    public int accessFlags() {
        return blockSegment.get(Atomics.INT, QueuePairBlockDescriptor.ACCESS_OFFSET);
    }

    /**
     * The peer's RNR NAK timer code, clamped to the valid range.
     */
    @Override
    public int minRnrTimer() {
        return blockSegment.get(Atomics.INT, QueuePairBlockDescriptor.MIN_RNR_TIMER_OFFSET) & 31;
    }

    /**
     * Move the peer to ERROR unless it is gone already.
     */
    @Override
    public void setError() {
        if (faulted) {
            return;
        }
        try {
            setErrorUnlessGone();
        } catch (final InternalError fault) {
            onFault();
        }
    }

    private void setErrorUnlessGone() {
        if (!enter()) {
            return;
        }
        try {
            final MemorySegment segment = blockSegment;
            while (true) {
                final int state = Atomics.getIntVolatile(segment, QueuePairBlockDescriptor.STATE_OFFSET);
                if (state == QueuePairBlockDescriptor.STATE_DESTROYED || state == QueuePairState.ERROR.code()
                    || Atomics.compareAndSetInt(segment, QueuePairBlockDescriptor.STATE_OFFSET, state,
                    QueuePairState.ERROR.code())) {
                    return;
                }
            }
        } finally {
            exit();
        }
    }

    /**
     * Write a receive completion into the peer's inbound ring and publish it; inside an access ({@link #enter}).
     *
     * @return false if the ring was full, which a well-behaved peer never allows.
     */
    @Override
    public boolean publish(final long workRequestId, final int slot, final CompletionStatus status,
        final CompletionOpcode opcode, final int byteLength, final int flags, final int immediate) {
        final MemorySegment segment = blockSegment;
        if (inboundTail - knownInboundHead >= inboundCapacity) {
            knownInboundHead = Atomics.getLongVolatile(segment, inboundBase + InboundCompletionDescriptor.HEAD_OFFSET);
            if (inboundTail - knownInboundHead >= inboundCapacity) {
                return false;
            }
        }
        final long entry = inboundBase + InboundCompletionDescriptor.entryOffset(inboundCapacity, inboundTail);
        InboundCompletionDescriptor.write(segment, entry, workRequestId, slot, status, opcode, byteLength, flags,
            immediate);
        inboundTail++;
        Atomics.setLongRelease(segment, entry + SEQUENCE_OFFSET, inboundTail);
        Atomics.setLongRelease(segment, inboundBase + InboundCompletionDescriptor.TAIL_OFFSET, inboundTail);
        return true;
    }

    /**
     * Disarm the peer's receive completion queue of what this kind of event fires, and wake the peer's waiting
     * thread if one is armed (a futex wake on our mapping of its file: no message, no agent); inside an access.
     *
     * @return true if the caller must send the wake-up for the peer's readiness source.
     */
    @Override
    public boolean disarmCompletionQueue(final boolean solicited) {
        return ShmCompletionQueue.disarmAndWake(completionQueueSegment, solicited);
    }

    /**
     * Let go of the peer's files; the node keeps their mappings for later connections until they go unused.
     */
    @Override
    public void close() {
        node.unpinAll(block, sharedReceiveQueueFile, completionQueueFile);
        device.release(node);
    }

    @Override
    public String toString() {
        return "RemotePeer{device=" + node.gidHex() + ", queuePair=" + queuePairNumber + ", identity=0x"
            + Integer.toHexString(identity) + ", state=" + state()
            + ", inboundTail=" + inboundTail + '}';
    }
}

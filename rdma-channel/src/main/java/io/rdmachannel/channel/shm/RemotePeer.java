package io.rdmachannel.channel.shm;

import static io.rdmachannel.channel.shm.InboundCompletionDescriptor.BYTE_LENGTH_OFFSET;
import static io.rdmachannel.channel.shm.InboundCompletionDescriptor.FLAGS_OFFSET;
import static io.rdmachannel.channel.shm.InboundCompletionDescriptor.IMMEDIATE_OFFSET;
import static io.rdmachannel.channel.shm.InboundCompletionDescriptor.OPCODE_OFFSET;
import static io.rdmachannel.channel.shm.InboundCompletionDescriptor.SEQUENCE_OFFSET;
import static io.rdmachannel.channel.shm.InboundCompletionDescriptor.SLOT_OFFSET;
import static io.rdmachannel.channel.shm.InboundCompletionDescriptor.STATUS_OFFSET;
import static io.rdmachannel.channel.shm.InboundCompletionDescriptor.VENDOR_ERROR_OFFSET;
import static io.rdmachannel.channel.shm.InboundCompletionDescriptor.WR_ID_OFFSET;

import io.rdmachannel.channel.spi.CompletionOpcode;
import io.rdmachannel.channel.spi.CompletionStatus;
import io.rdmachannel.channel.spi.QueuePairState;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HexFormat;

/**
 * The connected peer queue pair as this side sees it: mappings of its shared block, its receive queue (own or
 * shared), its receive completion queue's arming word and its device's memory regions. Every value read from the
 * peer is validated when the mapping is made or before each use.
 */
final class RemotePeer implements AutoCloseable {
    private final ShmDevice device;
    private final byte[] gid;
    private final int queuePairNumber;
    private final boolean sameDevice;
    private final PeerNode node;
    private final SharedFile block;
    private final SharedFile sharedReceiveQueueFile;
    private final SharedFile completionQueueFile;
    private final ReceiveQueue receiveQueue;
    private final int protectionDomain;
    private final int completionQueueId;
    private final long inboundBase;
    private final int inboundCapacity;
    private long inboundTail;

    private RemotePeer(final ShmDevice device, final byte[] gid, final int queuePairNumber, final PeerNode node,
        final SharedFile block, final SharedFile sharedReceiveQueueFile, final SharedFile completionQueueFile,
        final ReceiveQueue receiveQueue, final long inboundBase, final int inboundCapacity) {
        this.device = device;
        this.gid = gid;
        this.queuePairNumber = queuePairNumber;
        this.sameDevice = node.gidHex().equals(device.gidHex());
        this.node = node;
        this.block = block;
        this.sharedReceiveQueueFile = sharedReceiveQueueFile;
        this.completionQueueFile = completionQueueFile;
        this.receiveQueue = receiveQueue;
        final MemorySegment segment = block.segment();
        this.protectionDomain = segment.get(Atomics.INT, QueuePairBlockDescriptor.PD_OFFSET);
        this.completionQueueId = segment.get(Atomics.INT, QueuePairBlockDescriptor.RECEIVE_CQ_OFFSET);
        this.inboundBase = inboundBase;
        this.inboundCapacity = inboundCapacity;
        this.inboundTail = Atomics.getLongVolatile(segment, inboundBase + InboundCompletionDescriptor.TAIL_OFFSET);
    }

    /**
     * Map the peer queue pair {@code number} of the device {@code gid}.
     *
     * @throws IOException if the device or queue pair does not exist or its block is malformed.
     */
    static RemotePeer connect(final ShmDevice device, final byte[] gid, final int number) throws IOException {
        final String gidHex = HexFormat.of().formatHex(gid);
        final PeerNode node = device.peer(gidHex);
        SharedFile block = null;
        SharedFile srqFile = null;
        SharedFile cqFile = null;
        try {
            block = openPeerFile(node.folder(), QueuePairBlockDescriptor.fileName(number),
                "no queue pair " + number + " on shm device " + gidHex);
            final MemorySegment segment = block.segment();
            if (segment.byteSize() < QueuePairBlockDescriptor.HEADER_LENGTH
                || segment.get(Atomics.INT, QueuePairBlockDescriptor.MAGIC_OFFSET) != QueuePairBlockDescriptor.MAGIC) {
                throw new IOException("queue pair " + number + " on shm device " + gidHex + " has a malformed block");
            }
            final int limit = device.attributes().maxQueuePairWorkRequests();
            final int maxSge = device.attributes().maxSge();
            final int rqCapacity = segment.get(Atomics.INT, QueuePairBlockDescriptor.RQ_CAPACITY_OFFSET);
            final int rqMaxSge = segment.get(Atomics.INT, QueuePairBlockDescriptor.RQ_MAX_SGE_OFFSET);
            final int inboundCapacity = segment.get(Atomics.INT, QueuePairBlockDescriptor.INBOUND_CAPACITY_OFFSET);
            final int srqId = segment.get(Atomics.INT, QueuePairBlockDescriptor.SRQ_OFFSET);
            final int cqId = segment.get(Atomics.INT, QueuePairBlockDescriptor.RECEIVE_CQ_OFFSET);
            if (rqCapacity < 0 || rqCapacity > limit || rqMaxSge < 0 || rqMaxSge > maxSge || inboundCapacity < 1
                || inboundCapacity > limit || (rqCapacity == 0) != (srqId >= 0)) {
                throw new IOException("queue pair " + number + " on shm device " + gidHex
                    + " advertises impossible queue sizes: rqCapacity=" + rqCapacity + ", rqMaxSge=" + rqMaxSge
                    + ", inboundCapacity=" + inboundCapacity + ", srq=" + srqId);
            }
            checkTransport(device, segment.get(Atomics.INT, QueuePairBlockDescriptor.TRANSPORT_OFFSET), number,
                gidHex);
            final long inboundBase = QueuePairBlockDescriptor.inboundOffset(rqCapacity, rqMaxSge);
            if (inboundBase + InboundCompletionDescriptor.regionLength(inboundCapacity) > segment.byteSize()) {
                throw new IOException("queue pair " + number + " on shm device " + gidHex + " has a short block");
            }
            final ReceiveQueue receiveQueue;
            if (srqId >= 0) {
                srqFile = openPeerFile(node.folder(), ShmSharedReceiveQueue.fileName(srqId),
                    "shared receive queue " + srqId + " of queue pair " + number + " is gone");
                receiveQueue = ReceiveQueue.peerView(srqFile.segment(), 0, limit, maxSge);
            } else {
                receiveQueue = ReceiveQueue.peerView(segment, QueuePairBlockDescriptor.receiveQueueOffset(), limit,
                    maxSge);
            }
            if (receiveQueue == null) {
                throw new IOException("queue pair " + number + " on shm device " + gidHex
                    + " has a malformed receive queue");
            }
            cqFile = openPeerFile(node.folder(), ShmCompletionQueue.fileName(cqId),
                "receive completion queue " + cqId + " of queue pair " + number + " is gone");
            return new RemotePeer(device, gid.clone(), number, node, block, srqFile, cqFile, receiveQueue,
                inboundBase, inboundCapacity);
        } catch (final IOException | RuntimeException ex) {
            closeAll(block, srqFile, cqFile);
            device.release(node);
            throw ex;
        }
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

    private static SharedFile openPeerFile(final Path folder, final String name, final String missing)
        throws IOException {
        try {
            return SharedFile.open(folder.resolve(name));
        } catch (final NoSuchFileException ex) {
            throw new IOException(missing, ex);
        }
    }

    boolean matches(final byte[] otherGid, final int number) {
        return number == queuePairNumber && Arrays.equals(gid, otherGid);
    }

    byte[] gid() {
        return gid;
    }

    int queuePairNumber() {
        return queuePairNumber;
    }

    boolean isSameDevice() {
        return sameDevice;
    }

    PeerNode node() {
        return node;
    }

    int protectionDomain() {
        return protectionDomain;
    }

    int completionQueueId() {
        return completionQueueId;
    }

    ReceiveQueue receiveQueue() {
        return receiveQueue;
    }

    /**
     * The peer's state code, or {@link QueuePairBlockDescriptor#STATE_DESTROYED}.
     */
    int state() {
        return Atomics.getIntVolatile(block.segment(), QueuePairBlockDescriptor.STATE_OFFSET);
    }

    boolean canReceive() {
        final int state = state();
        return state == QueuePairState.READY_TO_RECEIVE.code() || state == QueuePairState.READY_TO_SEND.code();
    }

    boolean isGone() {
        final int state = state();
        return state == QueuePairBlockDescriptor.STATE_DESTROYED || state == QueuePairState.ERROR.code();
    }

    /**
     * The peer's connection generation, bumped by each RESET of the peer.
     */
    int generation() {
        return Atomics.getIntVolatile(block.segment(), QueuePairBlockDescriptor.GENERATION_OFFSET);
    }

    /**
     * The remote access the peer queue pair allows.
     */
    int accessFlags() {
        return block.segment().get(Atomics.INT, QueuePairBlockDescriptor.ACCESS_OFFSET);
    }

    /**
     * The peer's RNR NAK timer code, clamped to the valid range.
     */
    int minRnrTimer() {
        return block.segment().get(Atomics.INT, QueuePairBlockDescriptor.MIN_RNR_TIMER_OFFSET) & 31;
    }

    /**
     * Move the peer to ERROR unless it is gone already.
     */
    void setError() {
        final MemorySegment segment = block.segment();
        while (true) {
            final int state = Atomics.getIntVolatile(segment, QueuePairBlockDescriptor.STATE_OFFSET);
            if (state == QueuePairBlockDescriptor.STATE_DESTROYED || state == QueuePairState.ERROR.code()
                || Atomics.compareAndSetInt(segment, QueuePairBlockDescriptor.STATE_OFFSET, state,
                QueuePairState.ERROR.code())) {
                return;
            }
        }
    }

    /**
     * Write a receive completion into the peer's inbound ring and publish it.
     *
     * @return false if the ring was full, which a well-behaved peer never allows.
     */
    boolean publish(final long workRequestId, final int slot, final CompletionStatus status,
        final CompletionOpcode opcode, final int byteLength, final int flags, final int immediate) {
        final MemorySegment segment = block.segment();
        final long head = Atomics.getLongVolatile(segment, inboundBase + InboundCompletionDescriptor.HEAD_OFFSET);
        if (inboundTail - head >= inboundCapacity) {
            return false;
        }
        final long entry = inboundBase + InboundCompletionDescriptor.entryOffset(inboundCapacity, inboundTail);
        segment.set(Atomics.LONG, entry + WR_ID_OFFSET, workRequestId);
        segment.set(Atomics.INT, entry + BYTE_LENGTH_OFFSET, byteLength);
        segment.set(Atomics.INT, entry + IMMEDIATE_OFFSET, immediate);
        segment.set(Atomics.INT, entry + STATUS_OFFSET, status.code());
        segment.set(Atomics.INT, entry + OPCODE_OFFSET, opcode.code());
        segment.set(Atomics.INT, entry + FLAGS_OFFSET, flags);
        segment.set(Atomics.INT, entry + SLOT_OFFSET, slot);
        segment.set(Atomics.INT, entry + VENDOR_ERROR_OFFSET, 0);
        inboundTail++;
        Atomics.setLongRelease(segment, entry + SEQUENCE_OFFSET, inboundTail);
        Atomics.setLongRelease(segment, inboundBase + InboundCompletionDescriptor.TAIL_OFFSET, inboundTail);
        return true;
    }

    /**
     * Disarm the peer's receive completion queue of what this kind of event fires, and wake the peer's waiting
     * thread if one is armed (a futex wake on our mapping of its file: no message, no agent).
     *
     * @return true if the caller must send the wake-up for the peer's readiness source.
     */
    boolean disarmCompletionQueue(final boolean solicited) {
        final int fired = ShmCompletionQueue.disarm(completionQueueFile.segment(), solicited);
        if (ShmCompletionQueue.wakesWaiter(fired)) {
            ShmCompletionQueue.wakeWaiter(completionQueueFile.segment());
        }
        return ShmCompletionQueue.wakesReadiness(fired);
    }

    @Override
    public void close() {
        closeAll(block, sharedReceiveQueueFile, completionQueueFile);
        device.release(node);
    }

    private static void closeAll(final SharedFile... files) {
        for (final SharedFile file : files) {
            if (file != null) {
                try {
                    file.close();
                } catch (final RuntimeException ignore) {
                    // a racing access keeps the mapping until the process ends
                }
            }
        }
    }

    @Override
    public String toString() {
        return "RemotePeer{device=" + node.gidHex() + ", queuePair=" + queuePairNumber + ", state=" + state()
            + ", inboundTail=" + inboundTail + '}';
    }
}

package io.rdmachannel.channel.stream;

import io.rdmachannel.channel.spi.QueuePair;
import io.rdmachannel.channel.spi.SendFlags;
import io.rdmachannel.channel.spi.SendWorkRequest;
import io.rdmachannel.channel.spi.WorkRequestOpcode;

import java.nio.ByteOrder;

import org.agrona.concurrent.UnsafeBuffer;

/**
 * Encodes outbound rsockets messages onto the send queue, and is the one place that knows how a message travels: on
 * IB/RoCE as an RDMA WRITE WITH IMMEDIATE carrying the message; in message mode (iWARP) the payload, if any, as a
 * plain RDMA WRITE, then the message as the 4-byte payload of an inline SEND. RC executes the two in order, so the
 * peer sees the message only after the payload was placed. Used by {@link SendPath} under the send lock; the slot
 * accounting is the caller's.
 *
 * <p>A send's work-request id says what its completion frees: the kind in bits 32 to 47 ({@code KIND_*}), in the
 * low 32 bits the ring bytes of a copied DATA message, or the control code of a control message.
 *
 * <p>Outside message mode a DATA message may be posted unsignalled (the caller leaves {@link SendFlags#SIGNALED}
 * out), as rsockets' peers do with most of theirs: it completes nothing on success, and RC completes requests in
 * order, so the next signalled request's completion says it completed too. That request's id then carries
 * {@link #COVER}, and {@link #takeCover()} gives what the unsignalled ones since the previous cover hold (slots and
 * ring bytes); an unsignalled request's id carries {@link #UNSIGNALED}, so that a completion it makes after all (a
 * flush when the queue pair failed) frees nothing twice.
 */
final class MessageProxy {
    static final int KIND_DATA = 1;
    static final int KIND_DATA_INLINE = 2;
    static final int KIND_CONTROL = 3;
    static final int KIND_DATA_ZERO_COPY = 4;
    /** The low word of a control id for SGL messages (credits, regions), which are no control code. */
    static final int SGL_CONTROL = 0xFFFF;
    private static final int KIND_MASK = 0xFFFF;
    /** An id bit: this signalled request's completion also covers the unsignalled ones posted before it. */
    static final long COVER = 1L << 62;
    /** An id bit: the request was posted unsignalled (its slot and bytes come back with the next cover). */
    static final long UNSIGNALED = 1L << 61;

    private final QueuePair queuePair;
    private final SendWorkRequest send;
    private final boolean messageMode;
    private final int inlineSize;
    private final long sendAddress;
    private final int sendKey;
    private final int stageOffset;
    private final int controlOffset;
    private final int controlWindow;
    private final UnsafeBuffer controlView;
    private final UnsafeBuffer messageStageView;
    private final long ringAddress;
    private final int ringKey;
    private final int half;
    private PeerConnectionData peer;
    private int remoteSharedReceiveQueue;
    private int regionsPosted;
    // unsignalled DATA messages not yet covered, and the covers posted and not yet completed (a ring: at most one per
    // signalled request outstanding)
    private int uncoveredSlots;
    private int uncoveredBytes;
    private final long[] covers;
    private long coversPosted;
    private long coversTaken;

    MessageProxy(final ConnectionResources resources) {
        this.queuePair = resources.queuePair;
        this.send = resources.sendRequest;
        this.messageMode = resources.messageMode;
        this.inlineSize = resources.inlineSize;
        this.sendAddress = resources.sendRegion.address();
        this.sendKey = resources.sendRegion.localKey();
        this.stageOffset = resources.sendBufferSize;
        this.controlOffset = resources.sendBufferSize + ConnectionResources.MAX_INLINE_STAGE;
        this.controlWindow = resources.controlWindow;
        this.controlView = new UnsafeBuffer(resources.sendMemory.asSlice(controlOffset,
            (long) controlWindow * SgeDescriptor.LENGTH).asByteBuffer());
        // the inline stage: an inline post copies its payload before it returns, so a message may reuse it
        this.messageStageView = new UnsafeBuffer(resources.sendMemory.asSlice(stageOffset,
            MessageSendDescriptor.LENGTH).asByteBuffer());
        this.ringAddress = resources.receiveRegion.address();
        this.ringKey = resources.receiveRegion.remoteKey();
        this.half = resources.receiveBufferSize / 2;
        this.covers = messageMode ? null : new long[resources.sendQueueSize + 1];
    }

    /**
     * The peer is known: SGE updates go into its target SGL, in its byte order.
     */
    void peer(final PeerConnectionData connectionData) {
        this.peer = connectionData;
    }

    /**
     * XRC mode: every message names the peer's XRC shared receive queue, which its target delivers into.
     */
    void remoteSharedReceiveQueue(final int number) {
        this.remoteSharedReceiveQueue = number;
    }

    /** The reusable request, emptied; in XRC mode still naming the peer's shared receive queue. */
    private SendWorkRequest reset() {
        final SendWorkRequest request = send.reset();
        return remoteSharedReceiveQueue == 0 ? request : request.remoteSharedReceiveQueue(remoteSharedReceiveQueue);
    }

    /**
     * The reusable request, reset: a caller building a DATA message fills it, then calls {@link #post}.
     */
    SendWorkRequest request() {
        return reset();
    }

    /**
     * Post one message; {@link #request()} holds the request as prepared by the caller (id, flags, the remote
     * memory and the payload's entries, none for a message without payload).
     *
     * @param message the message ({@link ImmediateData}).
     * @param sendId  the id of the SEND in message mode; its completion frees one slot of the message's class.
     * @return the send-queue slots used: 1, or 2 for a message with payload in message mode.
     */
    int post(final int message, final long sendId) {
        if (!messageMode) {
            account();
            queuePair.postSend(send.opcode(WorkRequestOpcode.RDMA_WRITE_WITH_IMM).immediate(message));
            return 1;
        }
        int slots = 0;
        if (send.sgeCount() > 0) {
            queuePair.postSend(send.opcode(WorkRequestOpcode.RDMA_WRITE));
            slots++;
        }
        MessageSendDescriptor.message(messageStageView, 0, message, ByteOrder.nativeOrder());
        reset().id(sendId).opcode(WorkRequestOpcode.SEND).flags(SendFlags.SIGNALED | SendFlags.INLINE)
            .sge(0, sendAddress + stageOffset, MessageSendDescriptor.LENGTH, sendKey);
        queuePair.postSend(send);
        return slots + 1;
    }

    /**
     * Post a message without payload (credits only, SHUTDOWN, DISCONNECT).
     *
     * @param control the low word of the id: the control code, or {@link #SGL_CONTROL}.
     * @return the slots used.
     */
    int postControl(final int message, final int control) {
        final long id = (long) KIND_CONTROL << 32 | (control & 0xFFFFFFFFL);
        reset().id(id).flags(SendFlags.SIGNALED).remote(0, 0);
        return post(message, id);
    }

    /**
     * Post an SGE update: the receive ring's half at {@code ringOffset}, written in the peer's byte order into the
     * peer's target SGL entry {@code entry}, with the SGL message {@code message}. The SGE is staged in a control
     * slot, taken in turn: at most {@code controlWindow} control messages are outstanding, so a staged SGE is not
     * rewritten before the send that reads it completed.
     *
     * @return the slots used.
     */
    int postRegion(final int ringOffset, final int entry, final int message) {
        final int stage = (regionsPosted++ % controlWindow) * SgeDescriptor.LENGTH;
        final ByteOrder order = peer.byteOrder();
        controlView.putLong(stage + SgeDescriptor.ADDRESS_OFFSET, ringAddress + ringOffset, order);
        controlView.putInt(stage + SgeDescriptor.KEY_OFFSET, ringKey, order);
        controlView.putInt(stage + SgeDescriptor.LENGTH_OFFSET, half, order);
        final long id = (long) KIND_CONTROL << 32 | SGL_CONTROL;
        reset().id(id)
            .flags(SendFlags.SIGNALED | (inlineSize >= SgeDescriptor.LENGTH ? SendFlags.INLINE : 0))
            .remote(peer.targetSglAddress() + (long) entry * SgeDescriptor.LENGTH, peer.targetSglKey())
            .sge(0, sendAddress + controlOffset + stage, SgeDescriptor.LENGTH, sendKey);
        return post(message, id);
    }

    /**
     * The keepalive probe, as rsockets sends it: a zero-length RDMA WRITE without immediate to address 0 and rkey 0,
     * which consumes nothing at the peer and completes only if the peer's queue pair still answers. One slot.
     */
    void postKeepAlive() {
        reset().id((long) KIND_CONTROL << 32 | ImmediateData.CTRL_KEEPALIVE)
            .opcode(WorkRequestOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED).remote(0, 0);
        if (!messageMode) {
            account();
        }
        queuePair.postSend(send);
    }

    /**
     * Before a post outside message mode: an unsignalled request adds its slot and ring bytes to what the next cover
     * returns; a signalled one becomes that cover if there is anything to cover. A post that then fails (the queue
     * pair closed) leaves the account as if it had been made: the connection fails with it.
     */
    private void account() {
        final long id = send.id();
        if ((send.flags() & SendFlags.SIGNALED) == 0) {
            uncoveredSlots++;
            if (kind(id) == KIND_DATA) {
                uncoveredBytes += (int) id;
            }
            send.id(id | UNSIGNALED);
        } else if (uncoveredSlots > 0) {
            covers[(int) (coversPosted++ % covers.length)] = (long) uncoveredSlots << 32 | uncoveredBytes;
            uncoveredSlots = 0;
            uncoveredBytes = 0;
            send.id(id | COVER);
        }
    }

    /**
     * The kind of a work-request id ({@code KIND_*}), whatever else it carries ({@link #COVER}, {@link #UNSIGNALED}).
     */
    static int kind(final long id) {
        return (int) (id >>> 32) & KIND_MASK;
    }

    /**
     * The completion of a request with {@link #COVER} was polled (they complete in the order they were posted).
     *
     * @return the slots (high 32 bits) and ring bytes (low 32 bits) of the unsignalled requests it covers.
     */
    long takeCover() {
        if (coversTaken == coversPosted) {
            return 0;
        }
        return covers[(int) (coversTaken++ % covers.length)];
    }

    /**
     * Where the inline stage starts in the send memory: small DATA payloads are copied there and posted inline.
     */
    long stageAddress() {
        return sendAddress + stageOffset;
    }
}

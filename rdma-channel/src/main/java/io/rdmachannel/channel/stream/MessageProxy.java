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
 * <p>A send's work-request id says what its completion frees: the kind in the high 32 bits ({@code KIND_*}), in the
 * low 32 bits the ring bytes of a copied DATA message, or the control code of a control message.
 */
final class MessageProxy {
    static final int KIND_DATA = 1;
    static final int KIND_DATA_INLINE = 2;
    static final int KIND_CONTROL = 3;
    static final int KIND_DATA_ZERO_COPY = 4;
    /** The low word of a control id for SGL messages (credits, regions), which are no control code. */
    static final int SGL_CONTROL = 0xFFFF;

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
    private int regionsPosted;

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
    }

    /**
     * The peer is known: SGE updates go into its target SGL, in its byte order.
     */
    void peer(final PeerConnectionData connectionData) {
        this.peer = connectionData;
    }

    /**
     * The reusable request, reset: a caller building a DATA message fills it, then calls {@link #post}.
     */
    SendWorkRequest request() {
        return send.reset();
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
            queuePair.postSend(send.opcode(WorkRequestOpcode.RDMA_WRITE_WITH_IMM).immediate(message));
            return 1;
        }
        int slots = 0;
        if (send.sgeCount() > 0) {
            queuePair.postSend(send.opcode(WorkRequestOpcode.RDMA_WRITE));
            slots++;
        }
        MessageSendDescriptor.message(messageStageView, 0, message, ByteOrder.nativeOrder());
        send.reset().id(sendId).opcode(WorkRequestOpcode.SEND).flags(SendFlags.SIGNALED | SendFlags.INLINE)
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
        send.reset().id(id).flags(SendFlags.SIGNALED).remote(0, 0);
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
        send.reset().id(id)
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
        send.reset().id((long) KIND_CONTROL << 32 | ImmediateData.CTRL_KEEPALIVE)
            .opcode(WorkRequestOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED).remote(0, 0);
        queuePair.postSend(send);
    }

    /**
     * Where the inline stage starts in the send memory: small DATA payloads are copied there and posted inline.
     */
    long stageAddress() {
        return sendAddress + stageOffset;
    }
}

package io.rdmachannel.channel.stream;

import java.nio.ByteOrder;

import org.agrona.DirectBuffer;
import org.agrona.MutableDirectBuffer;

/**
 * Layout of an rsockets message in iWARP message mode ({@code RS_OPT_MSG_SEND}): iWARP has no immediate data, so
 * the 32-bit message of {@link ImmediateData} travels as the whole payload of a 4-byte SEND ({@code RS_MSG_SIZE}).
 *
 * <pre>
 *   0                   1                   2                   3
 *   0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 *  +-----+---------------------------------------------------------+
 *  | Op  |                    Operand (29 bits)                    |  0
 *  +-----+---------------------------------------------------------+
 * </pre>
 *
 * The word is in the <b>sender's host byte order</b>: rsocket.c copies the {@code uint32_t} as it is, with no
 * {@code htobe32} as on the immediate path, and the receiver reads it as its own {@code uint32_t}. A side announces
 * its order in the connection data ({@link ConnectionDataDescriptor#FLAG_NET}), so we send in ours and read in the
 * peer's; between a little-endian Java side and an x86 or ARM C peer both are little-endian, e.g. {@code SGL|384} is
 * {@code 80 01 00 80}.
 *
 * <p>A data message is an RDMA WRITE of the bytes followed by this SEND; an SGE update an RDMA WRITE of the 16-byte
 * {@link SgeDescriptor} into the peer's target SGL followed by this SEND; a credit-only or control message this SEND
 * alone. Each receive is posted with one 4-byte entry of its own, and a receive completion of any other length is a
 * protocol error (a longer SEND never fits: the device fails it).
 */
public final class MessageSendDescriptor {
    /** Offset of the message. */
    public static final int MESSAGE_OFFSET = 0;
    /** Length of the SEND payload and of each posted receive buffer. */
    public static final int LENGTH = 4;

    private MessageSendDescriptor() {
    }

    /**
     * Offset of a receive's buffer in the area holding one buffer per posted receive.
     *
     * @param index the receive's index (its work-request id).
     * @return the byte offset.
     */
    public static int bufferOffset(final int index) {
        return index * LENGTH;
    }

    /**
     * Write a message as the SEND payload, in the sender's byte order.
     *
     * @param buffer  the staging memory.
     * @param offset  where the payload starts.
     * @param message the message ({@link ImmediateData}).
     * @param order   the sender's byte order.
     */
    public static void message(final MutableDirectBuffer buffer, final int offset, final int message,
        final ByteOrder order) {
        buffer.putInt(offset + MESSAGE_OFFSET, message, order);
    }

    /**
     * Read a received message.
     *
     * @param buffer the receive buffer area.
     * @param offset where the receive's buffer starts.
     * @param order  the sender's byte order, from its connection data.
     * @return the message, still to be checked with {@link ImmediateData#checkInbound(int)}.
     */
    public static int message(final DirectBuffer buffer, final int offset, final ByteOrder order) {
        return buffer.getInt(offset + MESSAGE_OFFSET, order);
    }

    /**
     * Check the length of a receive completion in message mode.
     *
     * @param byteLength the bytes the completion reports.
     * @throws ProtocolException unless it is exactly {@link #LENGTH}: a shorter SEND left stale bytes in the buffer.
     */
    public static void checkLength(final int byteLength) throws ProtocolException {
        if (byteLength != LENGTH) {
            throw new ProtocolException("a message must be a " + LENGTH + "-byte SEND in message mode: byteLength="
                + Integer.toUnsignedString(byteLength));
        }
    }
}

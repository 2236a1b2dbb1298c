package io.rdmachannel.channel.stream;

import java.nio.ByteOrder;

import org.agrona.DirectBuffer;
import org.agrona.MutableDirectBuffer;

/**
 * The XRC extension of the connection data (docs/xrc-stream-mode.md): 16 bytes after the 40 bytes of rsockets'
 * connection data when {@link ConnectionDataDescriptor#FLAG_XRC} is set, and in a reply 16 bytes more with the
 * replier's XRC domain identity. Every field big-endian; queue pair and SRQ numbers are 24 bits, as on InfiniBand and
 * RoCE, and 0 means "none".
 *
 * <pre>
 *  40: XRC version (1)  | sender's XRC SRQ number (u24)
 *  44: initiator flags  | sender's initiator QP number (u24); flag 0x01 NEW: created for this connection
 *  48: reserved (0)     | target QP in the receiver's domain the initiator is connected to (u24); in a request 0
 *                         if NEW; in a reply always set, the offered one if NEW
 *  52: reserved (0)     | target QP in the sender's domain for the receiver's initiator (u24): in a request the
 *                         one offered to a new initiator of the receiver; in a reply the one the requester's
 *                         initiator connects to (the one the request named, or one created for a NEW initiator)
 *  56: (reply only) the sender's XRC domain identity, 16 bytes, not all zero
 * </pre>
 */
public final class XrcExtension {
    /** The version this side speaks. */
    public static final int VERSION = 1;
    /**
     * Initiator flag: the initiator was created for this connection. In a request it is not connected yet; in a reply
     * it is connected to the target the request offered.
     */
    public static final int INITIATOR_NEW = 0x01;
    /** The largest queue pair or SRQ number: 24 bits. */
    public static final int MAX_NUMBER = 0xFFFFFF;
    /** Where the extension starts, from the start of the connection data. */
    public static final int OFFSET = ConnectionDataDescriptor.LENGTH;
    /** Offset of the version byte and the sender's XRC SRQ number. */
    public static final int SRQ_OFFSET = OFFSET;
    /** Offset of the initiator flags byte and the sender's initiator QP number. */
    public static final int INITIATOR_OFFSET = OFFSET + 4;
    /** Offset of the target the sender's initiator is connected to. */
    public static final int CONNECTED_TARGET_OFFSET = OFFSET + 8;
    /** Offset of the target in the sender's domain for the receiver's initiator (offered, or in a reply named). */
    public static final int OFFERED_TARGET_OFFSET = OFFSET + 12;
    /** Length of the extension in a request: with the connection data, the 56 bytes rdma_cm carries on IP. */
    public static final int REQUEST_LENGTH = 16;
    /** Offset of the domain identity in a reply. */
    public static final int DOMAIN_OFFSET = OFFSET + REQUEST_LENGTH;
    /** Length of a domain identity. */
    public static final int DOMAIN_LENGTH = 16;
    /** Length of the extension in a reply. */
    public static final int REPLY_LENGTH = REQUEST_LENGTH + DOMAIN_LENGTH;

    private static final ByteOrder ORDER = ConnectionDataDescriptor.BYTE_ORDER;
    private static final int BYTE_SHIFT = 24;

    private XrcExtension() {
    }

    /**
     * What a peer's extension said, after {@link #validateRequest} or {@link #validateReply} accepted it.
     *
     * @param sharedReceiveQueue the peer's XRC SRQ number: the {@code remote_srqn} of our requests, in [1, 2^24).
     * @param initiator          the peer's initiator QP number, in [1, 2^24).
     * @param newInitiator       whether that initiator was created for this connection.
     * @param connectedTarget    the target in our domain the peer's initiator is connected to: in a request 0 for a
     *                           new initiator; in a reply always set, the target we offered if it is new.
     * @param offeredTarget      in a request, the target in the peer's domain offered to our initiator; in a reply,
     *                           the target in the peer's domain our initiator connects to (the one a request with
     *                           an initiator not new named, or one created for a new initiator).
     * @param domainLow          in a reply, the first 8 bytes of the peer's domain identity; 0 in a request.
     * @param domainHigh         in a reply, the last 8 bytes of the peer's domain identity; 0 in a request.
     */
    public record Peer(int sharedReceiveQueue, int initiator, boolean newInitiator, int connectedTarget,
        int offeredTarget, long domainLow, long domainHigh) {
    }

    /**
     * Write the extension of a request after connection data at {@code offset}; the caller sets
     * {@link ConnectionDataDescriptor#FLAG_XRC}.
     *
     * @param buffer             holding at least {@code offset + OFFSET + REQUEST_LENGTH} bytes.
     * @param offset             where the connection data starts.
     * @param sharedReceiveQueue our XRC SRQ number.
     * @param initiator          our initiator QP number.
     * @param connectedTarget    the target in the peer's domain our initiator is connected to, or 0 if it is new.
     * @param offeredTarget      the target in our domain offered to the peer's initiator.
     * @return the bytes of private data from {@code offset}: {@code OFFSET + REQUEST_LENGTH}.
     * @throws IllegalArgumentException if a number is out of range.
     */
    public static int writeRequest(final MutableDirectBuffer buffer, final int offset, final int sharedReceiveQueue,
        final int initiator, final int connectedTarget, final int offeredTarget) {
        checkNumber("connectedTarget", connectedTarget, true);
        checkNumber("offeredTarget", offeredTarget, false);
        write(buffer, offset, sharedReceiveQueue, initiator, connectedTarget == 0, connectedTarget, offeredTarget);
        return OFFSET + REQUEST_LENGTH;
    }

    /**
     * Write the extension of a reply after connection data at {@code offset}.
     *
     * @param buffer             holding at least {@code offset + OFFSET + REPLY_LENGTH} bytes.
     * @param offset             where the connection data starts.
     * @param sharedReceiveQueue our XRC SRQ number.
     * @param initiator          our initiator QP number.
     * @param newInitiator       whether the initiator is new, connected to the target the request offered.
     * @param connectedTarget    the target in the peer's domain our initiator is connected to: the one the request
     *                           offered if the initiator is new, else the one it already was.
     * @param peerTarget         the target in our domain the requester's initiator connects to: the one its request
     *                           named if that initiator is not new, else one created for it.
     * @param domainLow          the first 8 bytes of our domain identity.
     * @param domainHigh         the last 8 bytes of our domain identity.
     * @return the bytes of private data from {@code offset}: {@code OFFSET + REPLY_LENGTH}.
     * @throws IllegalArgumentException if a number is out of range or the identity is all zero.
     */
    public static int writeReply(final MutableDirectBuffer buffer, final int offset, final int sharedReceiveQueue,
        final int initiator, final boolean newInitiator, final int connectedTarget, final int peerTarget,
        final long domainLow, final long domainHigh) {
        checkNumber("connectedTarget", connectedTarget, false);
        checkNumber("peerTarget", peerTarget, false);
        if (domainLow == 0 && domainHigh == 0) {
            throw new IllegalArgumentException("a domain identity must not be all zero");
        }
        write(buffer, offset, sharedReceiveQueue, initiator, newInitiator, connectedTarget, peerTarget);
        buffer.putLong(offset + DOMAIN_OFFSET, domainLow, ORDER);
        buffer.putLong(offset + DOMAIN_OFFSET + Long.BYTES, domainHigh, ORDER);
        return OFFSET + REPLY_LENGTH;
    }

    private static void write(final MutableDirectBuffer buffer, final int offset, final int sharedReceiveQueue,
        final int initiator, final boolean newInitiator, final int connectedTarget, final int offeredTarget) {
        checkNumber("sharedReceiveQueue", sharedReceiveQueue, false);
        checkNumber("initiator", initiator, false);
        buffer.putInt(offset + SRQ_OFFSET, VERSION << BYTE_SHIFT | sharedReceiveQueue, ORDER);
        buffer.putInt(offset + INITIATOR_OFFSET, (newInitiator ? INITIATOR_NEW : 0) << BYTE_SHIFT | initiator, ORDER);
        buffer.putInt(offset + CONNECTED_TARGET_OFFSET, connectedTarget, ORDER);
        buffer.putInt(offset + OFFERED_TARGET_OFFSET, offeredTarget, ORDER);
    }

    /**
     * Check and decode the extension of a peer's request. The connection data must have passed
     * {@link ConnectionDataValidator} and carry {@link ConnectionDataDescriptor#FLAG_XRC}.
     *
     * <p>The rules, each refused with a {@link ProtocolException} naming the value: the private data holds the
     * extension; the version is {@value #VERSION}; the SRQ and initiator numbers are not 0; no initiator flag beyond
     * NEW is set; an initiator flagged new names no connected target, one not new names one; the offered target is
     * not 0 and not the initiator. The reserved bytes are ignored.
     *
     * @param privateData       the received private data, from index 0.
     * @param offset            where the connection data starts.
     * @param privateDataLength bytes of private data received.
     * @return the decoded values; the domain identity is 0.
     * @throws ProtocolException naming the first value that breaks a rule.
     */
    public static Peer validateRequest(final DirectBuffer privateData, final int offset, final int privateDataLength)
        throws ProtocolException {
        checkLength(privateDataLength, offset, false);
        final int sharedReceiveQueue = sharedReceiveQueue(privateData, offset);
        final int initiator = initiator(privateData, offset);
        final boolean newInitiator = newInitiator(privateData, offset);
        final int connectedTarget = number(privateData, offset + CONNECTED_TARGET_OFFSET);
        if (newInitiator != (connectedTarget == 0)) {
            throw new ProtocolException("a request's initiator flagged new names no connected target, and one not "
                + "new names one: newInitiator=" + newInitiator + ", connectedTarget=" + connectedTarget);
        }
        final int offeredTarget = number(privateData, offset + OFFERED_TARGET_OFFSET);
        // a target's number is the domain's, an initiator's its device's: they may be equal (shm numbers them apart)
        if (offeredTarget == 0) {
            throw new ProtocolException("a request offers a target: offeredTarget=0, initiator=" + initiator);
        }
        return new Peer(sharedReceiveQueue, initiator, newInitiator, connectedTarget, offeredTarget, 0, 0);
    }

    /**
     * Check and decode the extension of a peer's reply to our request.
     *
     * <p>The rules of {@link #validateRequest} for the version, the numbers and the flags, and: the connected target
     * is not 0, and is the one we offered if the initiator is flagged new; the reply offers no target; the domain
     * identity is not all zero.
     *
     * @param privateData       the received private data, from index 0.
     * @param offset            where the connection data starts.
     * @param privateDataLength bytes of private data received.
     * @param offeredTarget     the target our request offered.
     * @return the decoded values; the offered target is 0.
     * @throws ProtocolException naming the first value that breaks a rule.
     */
    public static Peer validateReply(final DirectBuffer privateData, final int offset, final int privateDataLength,
        final int offeredTarget) throws ProtocolException {
        checkLength(privateDataLength, offset, true);
        final int sharedReceiveQueue = sharedReceiveQueue(privateData, offset);
        final int initiator = initiator(privateData, offset);
        final boolean newInitiator = newInitiator(privateData, offset);
        final int connectedTarget = number(privateData, offset + CONNECTED_TARGET_OFFSET);
        if (connectedTarget == 0 || newInitiator && connectedTarget != offeredTarget) {
            throw new ProtocolException("a reply's initiator must name its target, the one offered if it is new: "
                + "newInitiator=" + newInitiator + ", connectedTarget=" + connectedTarget + ", offeredTarget="
                + offeredTarget);
        }
        final int peerTarget = number(privateData, offset + OFFERED_TARGET_OFFSET);
        if (peerTarget == 0) {
            throw new ProtocolException("a reply names the target our initiator connects to: peerTarget=0");
        }
        final long domainLow = privateData.getLong(offset + DOMAIN_OFFSET, ORDER);
        final long domainHigh = privateData.getLong(offset + DOMAIN_OFFSET + Long.BYTES, ORDER);
        if (domainLow == 0 && domainHigh == 0) {
            throw new ProtocolException("peer's XRC domain identity is all zero");
        }
        return new Peer(sharedReceiveQueue, initiator, newInitiator, connectedTarget, peerTarget, domainLow,
            domainHigh);
    }

    private static void checkLength(final int privateDataLength, final int offset, final boolean reply)
        throws ProtocolException {
        final int needed = offset + OFFSET + (reply ? REPLY_LENGTH : REQUEST_LENGTH);
        if (privateDataLength < needed) {
            throw new ProtocolException("private data too short for the XRC extension of a " + (reply ? "reply"
                : "request") + " at offset " + offset + ": privateDataLength=" + privateDataLength + ", needed="
                + needed);
        }
    }

    private static int sharedReceiveQueue(final DirectBuffer privateData, final int offset) throws ProtocolException {
        final int word = privateData.getInt(offset + SRQ_OFFSET, ORDER);
        final int version = word >>> BYTE_SHIFT;
        if (version != VERSION) {
            throw new ProtocolException("unsupported XRC extension version: xrcVersion=" + version);
        }
        final int number = word & MAX_NUMBER;
        if (number == 0) {
            throw new ProtocolException("peer named no XRC SRQ: sharedReceiveQueue=0");
        }
        return number;
    }

    private static int initiator(final DirectBuffer privateData, final int offset) throws ProtocolException {
        final int flags = privateData.getInt(offset + INITIATOR_OFFSET, ORDER) >>> BYTE_SHIFT;
        if ((flags & ~INITIATOR_NEW) != 0) {
            throw new ProtocolException("unknown XRC initiator flags: initiatorFlags=0x" + Integer.toHexString(flags));
        }
        final int number = number(privateData, offset + INITIATOR_OFFSET);
        if (number == 0) {
            throw new ProtocolException("peer named no initiator queue pair: initiator=0");
        }
        return number;
    }

    private static boolean newInitiator(final DirectBuffer privateData, final int offset) {
        return (privateData.getInt(offset + INITIATOR_OFFSET, ORDER) >>> BYTE_SHIFT & INITIATOR_NEW) != 0;
    }

    private static int number(final DirectBuffer privateData, final int index) {
        return privateData.getInt(index, ORDER) & MAX_NUMBER;
    }

    private static void checkNumber(final String name, final int number, final boolean zeroAllowed) {
        if (number < (zeroAllowed ? 0 : 1) || number > MAX_NUMBER) {
            throw new IllegalArgumentException(name + " must be in [" + (zeroAllowed ? 0 : 1) + ", " + MAX_NUMBER
                + "]: " + name + "=" + number);
        }
    }
}

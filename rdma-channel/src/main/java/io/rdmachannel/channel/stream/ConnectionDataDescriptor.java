package io.rdmachannel.channel.stream;

import java.nio.ByteOrder;

/**
 * Layout of the rsockets connection data ({@code struct rs_conn_data}, 40 bytes), carried as RDMA CM private data in
 * both the connect request and the reply. Every multi-byte field is <b>big-endian</b>, whatever the host.
 *
 * <pre>
 *   0                   1                   2                   3
 *   0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 *  +---------------+---------------+-------------------------------+
 *  |  Version (1)  |     Flags     |        Credits (u16)          |  0
 *  +---------------+---------------+---------------+---------------+
 *  |  Credit window (u16, SCR) or 0|  Reserved (0) |  Iomap scale  |  4
 *  +-------------------------------+---------------+---------------+
 *  |                    Target SGL address (u64)                   |  8
 *  |                                                               |
 *  +---------------------------------------------------------------+
 *  |                    Target SGL rkey (u32)                      | 16
 *  +---------------------------------------------------------------+
 *  |              Target SGL length (u32, in ENTRIES)              | 20
 *  +---------------------------------------------------------------+
 *  |                    Data buffer address (u64)                  | 24
 *  |                                                               |
 *  +---------------------------------------------------------------+
 *  |                    Data buffer rkey (u32)                     | 32
 *  +---------------------------------------------------------------+
 *  |                Data buffer length (u32, in bytes)             | 36
 *  +---------------------------------------------------------------+
 * </pre>
 *
 * Flags:
 * <pre>
 *    7   6   5   4   3   2   1   0
 *  +---+---+---+---+---+---+---+---+
 *  |ZCP|XRC| unassig.  |SCR|IOM|NET|
 *  +---+---+---+---+---+---+---+---+
 * </pre>
 *
 * <ul>
 *     <li>{@link #FLAG_NET}: the sender's host is big-endian. SGE and iomap entries written into the sender's target
 *     SGL must use that order ({@link #byteOrder(int)}).</li>
 *     <li>{@link #FLAG_IOMAP}: the iomap scale byte is valid and the sender's iomap table follows its SGL entries
 *     under the same rkey. rdma-core v44 always sets it.</li>
 *     <li>{@link #FLAG_SHARED_CREDITS} (rdmachannel's extension, one-sided): the sender's receives come from a
 *     pool it shares between connections (a shared receive queue), so it starts with few credits and grants more
 *     as it can. Credits is then the initial credit limit, and the u16 at {@link #CREDIT_WINDOW_OFFSET} (in the
 *     first two reserved bytes, big-endian) the most credits it may ever have outstanding: a credit update
 *     ({@code RS_OP_SGL}) may move the limit up to that many messages ahead of what was sent, where without the flag
 *     it may move only up to Credits ahead. Nothing else changes on the wire. A plain rsockets peer ignores the flag
 *     and the reserved bytes and adopts every update as it always does; an rdmachannel peer checks updates against
 *     the window. It is in [Credits, {@value #MAX_CREDIT_WINDOW}].</li>
 *     <li>{@link #FLAG_XRC}, {@link #FLAG_ZERO_COPY_PLACEMENT}: rdmachannel's own extensions, negotiated through
 *     flag bits that rsockets leaves unused: an extension is on only when both sides set its bit.
 *     {@link #FLAG_XRC} is sent by the XRC mode with the extension of {@link XrcExtension} after these 40 bytes
 *     (a listener without the mode refuses such a request); {@link #FLAG_ZERO_COPY_PLACEMENT} is not sent yet.</li>
 * </ul>
 *
 * The target SGL is an array of 16-byte {@link SgeDescriptor} entries the peer RDMA-writes into; the data buffer is
 * the first region of the sender's receive ring (half the ring for a C peer). The credits are the sender's receive
 * queue depth, its initial message credits. The iomap scale is {@link #valueToScale(int)} of the number of
 * {@link IomapEntryDescriptor} entries the sender accepts.
 *
 * <p>With AF_IB addressing the connect request carries a 36-byte {@code ib_connect_hdr} (filled in by librdmacm)
 * before the connection data: read the request at {@link #AF_IB_REQUEST_OFFSET}. The reply always has it at 0.
 */
public final class ConnectionDataDescriptor {
    /** The only protocol version rsockets defines. */
    public static final int VERSION = 1;

    /** Flag: the sender is big-endian ({@code RS_CONN_FLAG_NET}). */
    public static final int FLAG_NET = 0x01;
    /** Flag: the iomap scale byte is valid ({@code RS_CONN_FLAG_IOMAP}). */
    public static final int FLAG_IOMAP = 0x02;
    /** Extension flag: credits come from a shared receive pool; see {@link #CREDIT_WINDOW_OFFSET}. */
    public static final int FLAG_SHARED_CREDITS = 0x04;
    /** The largest credit window a peer may declare: half the credit sequence space, so no update is ambiguous. */
    public static final int MAX_CREDIT_WINDOW = 0x7FFF;
    /** Reserved extension flag: XRC queue pairs, negotiated through an unused rsockets flag bit. */
    public static final int FLAG_XRC = 0x40;
    /** Reserved extension flag: zero-copy placement, negotiated through an unused rsockets flag bit. */
    public static final int FLAG_ZERO_COPY_PLACEMENT = 0x80;
    /** The flags rsockets v44 defines. */
    public static final int RSOCKETS_FLAGS_MASK = FLAG_NET | FLAG_IOMAP;
    /** The flags reserved for rdmachannel's extensions. */
    public static final int EXTENSION_FLAGS_MASK = FLAG_SHARED_CREDITS | FLAG_XRC | FLAG_ZERO_COPY_PLACEMENT;

    /** Offset of the version byte. */
    public static final int VERSION_OFFSET = 0;
    /** Offset of the flags byte. */
    public static final int FLAGS_OFFSET = 1;
    /** Offset of the big-endian u16 credits. */
    public static final int CREDITS_OFFSET = 2;
    /** Offset of the three reserved bytes. */
    public static final int RESERVED_OFFSET = 4;
    /** Offset of the big-endian u16 credit window, with {@link #FLAG_SHARED_CREDITS} (else reserved, 0). */
    public static final int CREDIT_WINDOW_OFFSET = RESERVED_OFFSET;
    /** Length of the reserved bytes. */
    public static final int RESERVED_LENGTH = 3;
    /** Offset of the iomap scale byte. */
    public static final int IOMAP_SCALE_OFFSET = 7;
    /** Offset of the target SGL descriptor (an {@link SgeDescriptor} layout, big-endian here). */
    public static final int TARGET_SGL_OFFSET = 8;
    /** Offset of the target SGL address. */
    public static final int TARGET_SGL_ADDRESS_OFFSET = TARGET_SGL_OFFSET + SgeDescriptor.ADDRESS_OFFSET;
    /** Offset of the target SGL rkey. */
    public static final int TARGET_SGL_KEY_OFFSET = TARGET_SGL_OFFSET + SgeDescriptor.KEY_OFFSET;
    /** Offset of the target SGL entry count. */
    public static final int TARGET_SGL_ENTRIES_OFFSET = TARGET_SGL_OFFSET + SgeDescriptor.LENGTH_OFFSET;
    /** Offset of the data buffer descriptor (an {@link SgeDescriptor} layout, big-endian here). */
    public static final int DATA_BUFFER_OFFSET = 24;
    /** Offset of the data buffer address. */
    public static final int DATA_BUFFER_ADDRESS_OFFSET = DATA_BUFFER_OFFSET + SgeDescriptor.ADDRESS_OFFSET;
    /** Offset of the data buffer rkey. */
    public static final int DATA_BUFFER_KEY_OFFSET = DATA_BUFFER_OFFSET + SgeDescriptor.KEY_OFFSET;
    /** Offset of the data buffer length in bytes. */
    public static final int DATA_BUFFER_LENGTH_OFFSET = DATA_BUFFER_OFFSET + SgeDescriptor.LENGTH_OFFSET;
    /** Length of the connection data. */
    public static final int LENGTH = 40;

    /** Length of the {@code ib_connect_hdr} that precedes the connection data in an AF_IB connect request. */
    public static final int IB_CONNECT_HEADER_LENGTH = 36;
    /** Where the connection data starts in the private data of a reply, and of a request on IP addressing. */
    public static final int PRIVATE_DATA_OFFSET = 0;
    /** Where the connection data starts in the private data of an AF_IB connect request. */
    public static final int AF_IB_REQUEST_OFFSET = IB_CONNECT_HEADER_LENGTH;

    /** Byte order of every field of the connection data. */
    public static final ByteOrder BYTE_ORDER = ByteOrder.BIG_ENDIAN;

    /** Largest number of iomap entries the scale encoding can carry ({@code 0xFF} decodes to it). */
    public static final int MAX_IOMAP_ENTRIES = 32512;
    /** Largest value {@link #valueToScale(int)} accepts; it rounds down to {@link #MAX_IOMAP_ENTRIES}. */
    public static final int MAX_IOMAP_VALUE = 0x7FFF;

    private static final int SCALE_BITS = 8;
    private static final int SCALE_HIGH_BIT = 1 << (SCALE_BITS - 1);

    private ConnectionDataDescriptor() {
    }

    /**
     * The flags a host of the given byte order advertises: {@link #FLAG_IOMAP} always (the iomap table location
     * rule holds even with no entries), {@link #FLAG_NET} on a big-endian host.
     *
     * @param hostOrder the advertising host's byte order, normally {@link ByteOrder#nativeOrder()}.
     * @return the flags.
     */
    public static int localFlags(final ByteOrder hostOrder) {
        return FLAG_IOMAP | (hostOrder == ByteOrder.BIG_ENDIAN ? FLAG_NET : 0);
    }

    /**
     * The byte order of a peer, from its flags: the order of SGE and iomap entries written into its target SGL.
     *
     * @param flags the peer's flags byte.
     * @return big-endian if {@link #FLAG_NET} is set, else little-endian.
     */
    public static ByteOrder byteOrder(final int flags) {
        return (flags & FLAG_NET) != 0 ? ByteOrder.BIG_ENDIAN : ByteOrder.LITTLE_ENDIAN;
    }

    /**
     * The flag bits nobody has defined: neither rsockets nor rdmachannel's reserved extensions. They are accepted
     * and ignored.
     *
     * @param flags a flags byte.
     * @return the undefined bits that are set, 0 if none.
     */
    public static int unknownFlags(final int flags) {
        return flags & 0xFF & ~(RSOCKETS_FLAGS_MASK | EXTENSION_FLAGS_MASK);
    }

    /**
     * Encode an iomap entry count in the 8-bit scale of rsockets ({@code rs_value_to_scale(value, 8)}): values up to
     * 128 as they are, larger ones as {@code 0x80 | value >> 8}, so they lose their low 8 bits on decoding.
     *
     * @param value entries, in [0, {@link #MAX_IOMAP_VALUE}].
     * @return the scale byte, in [0, 0xFF].
     * @throws IllegalArgumentException if the value cannot be encoded.
     */
    public static int valueToScale(final int value) {
        if (value < 0 || value > MAX_IOMAP_VALUE) {
            throw new IllegalArgumentException("iomap size must be in [0, " + MAX_IOMAP_VALUE + "]: value=" + value);
        }
        return value <= SCALE_HIGH_BIT ? value : SCALE_HIGH_BIT | (value >> SCALE_BITS);
    }

    /**
     * Decode an 8-bit iomap scale ({@code rs_scale_to_value(scale, 8)}): up to 128 as it is, larger ones as
     * {@code (scale & 0x7F) << 8}. Every byte decodes; {@code 0xFF} gives {@link #MAX_IOMAP_ENTRIES}.
     *
     * @param scale the scale byte; only its low 8 bits are read.
     * @return entries, in [0, {@link #MAX_IOMAP_ENTRIES}].
     */
    public static int scaleToValue(final int scale) {
        final int s = scale & 0xFF;
        return s <= SCALE_HIGH_BIT ? s : (s & ~SCALE_HIGH_BIT) << SCALE_BITS;
    }

    /**
     * The entry count a requested iomap size really gets once rounded through the scale, as rsockets applies it.
     *
     * @param value entries, in [0, {@link #MAX_IOMAP_VALUE}].
     * @return the entries that can be advertised.
     */
    public static int roundIomapEntries(final int value) {
        return scaleToValue(valueToScale(value));
    }

    /**
     * Check that received private data is long enough to hold the connection data at an offset.
     *
     * @param privateDataLength bytes of private data received.
     * @param offset            where the connection data starts: {@link #PRIVATE_DATA_OFFSET} or
     *                          {@link #AF_IB_REQUEST_OFFSET}.
     * @throws ProtocolException if it is too short.
     */
    public static void checkPrivateDataLength(final int privateDataLength, final int offset) throws ProtocolException {
        if (privateDataLength < offset + LENGTH) {
            throw new ProtocolException("private data too short for connection data at offset " + offset
                + ": privateDataLength=" + privateDataLength);
        }
    }
}

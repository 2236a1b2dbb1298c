package io.rdmachannel.channel.stream;

/**
 * Layout of an rsockets scatter/gather entry ({@code struct rs_sge}, 16 bytes): a remote region a peer may
 * RDMA-write into.
 *
 * <pre>
 *   0                   1                   2                   3
 *   0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 *  +---------------------------------------------------------------+
 *  |                          Address (u64)                        |  0
 *  |                                                               |
 *  +---------------------------------------------------------------+
 *  |                           rkey (u32)                          |  8
 *  +---------------------------------------------------------------+
 *  |                          Length (u32)                         | 12
 *  +---------------------------------------------------------------+
 * </pre>
 *
 * The key comes before the length. Byte order depends on where the entry is:
 * <ul>
 *     <li>inside the connection data ({@link ConnectionDataDescriptor}) it is big-endian, and the length of the
 *     target SGL counts entries, not bytes;</li>
 *     <li>in a target SGL, where the peer RDMA-writes it to publish a region of its receive ring, it is in the byte
 *     order of the side that owns (reads) the target SGL: {@link ConnectionDataDescriptor#byteOrder(int)} of that
 *     side's flags.</li>
 * </ul>
 */
public final class SgeDescriptor {
    /** Offset of the address. */
    public static final int ADDRESS_OFFSET = 0;
    /** Offset of the rkey. */
    public static final int KEY_OFFSET = 8;
    /** Offset of the length. */
    public static final int LENGTH_OFFSET = 12;
    /** Length of an entry. */
    public static final int LENGTH = 16;

    private SgeDescriptor() {
    }

    /**
     * Offset of an entry in a target SGL.
     *
     * @param index the entry index.
     * @return its byte offset from the start of the table.
     */
    public static int entryOffset(final int index) {
        return index * LENGTH;
    }

    /**
     * Check an index against the entry count of a target SGL.
     *
     * @param index   the entry index.
     * @param entries entries in the table.
     * @throws IllegalArgumentException if it is outside the table.
     */
    public static void checkIndex(final int index, final int entries) {
        if (index < 0 || index >= entries) {
            throw new IllegalArgumentException("SGE index must be in [0, " + entries + "): index=" + index);
        }
    }
}

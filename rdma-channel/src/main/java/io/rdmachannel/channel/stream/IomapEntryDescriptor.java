package io.rdmachannel.channel.stream;

/**
 * Layout of an rsockets iomap entry ({@code struct rs_iomap}, 24 bytes): a mapping published by {@code riomap},
 * RDMA-written into the iomap table of the peer that will {@code riowrite} to it.
 *
 * <pre>
 *   0                   1                   2                   3
 *   0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 *  +---------------------------------------------------------------+
 *  |                     Mapping offset (u64)                      |  0
 *  |                                                               |
 *  +---------------------------------------------------------------+
 *  |                          Address (u64)                        |  8
 *  |                                                               |
 *  +---------------------------------------------------------------+
 *  |                           rkey (u32)                          | 16
 *  +---------------------------------------------------------------+
 *  |                          Length (u32)                         | 20
 *  +---------------------------------------------------------------+
 * </pre>
 *
 * Bytes 8..23 are an {@link SgeDescriptor} layout. The entry is in the byte order of the side that owns the table
 * ({@link ConnectionDataDescriptor#byteOrder(int)} of its flags). The table starts right after the owner's target
 * SGL entries, under the same rkey: {@link #tableAddress(long, int)}.
 */
public final class IomapEntryDescriptor {
    /** Offset of the mapping offset, the position in the riowrite offset space where the mapping starts. */
    public static final int MAPPING_OFFSET_OFFSET = 0;
    /** Offset of the embedded SGE. */
    public static final int SGE_OFFSET = 8;
    /** Offset of the address. */
    public static final int ADDRESS_OFFSET = SGE_OFFSET + SgeDescriptor.ADDRESS_OFFSET;
    /** Offset of the rkey. */
    public static final int KEY_OFFSET = SGE_OFFSET + SgeDescriptor.KEY_OFFSET;
    /** Offset of the length. */
    public static final int LENGTH_OFFSET = SGE_OFFSET + SgeDescriptor.LENGTH_OFFSET;
    /** Length of an entry. */
    public static final int LENGTH = 24;

    private IomapEntryDescriptor() {
    }

    /**
     * Offset of an entry in an iomap table.
     *
     * @param index the entry index.
     * @return its byte offset from the start of the table.
     */
    public static int entryOffset(final int index) {
        return index * LENGTH;
    }

    /**
     * Where a side's iomap table starts: right after its target SGL entries.
     *
     * @param targetSglAddress   the address of the side's target SGL.
     * @param targetSglEntries   the number of entries in its target SGL.
     * @return the address of the iomap table.
     */
    public static long tableAddress(final long targetSglAddress, final int targetSglEntries) {
        return targetSglAddress + (long) targetSglEntries * SgeDescriptor.LENGTH;
    }
}

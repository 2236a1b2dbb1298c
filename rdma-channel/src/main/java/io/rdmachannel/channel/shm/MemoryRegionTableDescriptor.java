package io.rdmachannel.channel.shm;

/**
 * Layout of a device's shared memory-region table ({@code mrtable}): peers resolve an rkey here.
 *
 * <pre>
 *   0                   1                   2                   3
 *   0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 *  +---------------------------------------------------------------+
 *  |                    Key (0 = free; released last)              |
 *  +---------------------------------------------------------------+
 *  |                    Access flags                               |
 *  +---------------------------------------------------------------+
 *  |                    Protection domain handle                   |
 *  +---------------------------------------------------------------+
 *  |                    Reserved                                   |
 *  +---------------------------------------------------------------+
 *  |                    Address (owner's virtual address)          |
 *  |                                                               |
 *  +---------------------------------------------------------------+
 *  |                    Length                                     |
 *  |                                                               |
 *  +---------------------------------------------------------------+
 * </pre>
 *
 * A key is {@code (index + 1) << 8 | tag}: the entry index plus a tag that changes each time the entry is reused,
 * so a stale key never matches. The memory of a region with remote access lives in the file {@code mr-<key hex>}.
 */
final class MemoryRegionTableDescriptor {
    static final int KEY_OFFSET = 0;
    static final int ACCESS_OFFSET = 4;
    static final int PD_OFFSET = 8;
    static final int ADDRESS_OFFSET = 16;
    static final int LENGTH_OFFSET = 24;
    static final int ENTRY_LENGTH = 32;

    private MemoryRegionTableDescriptor() {
    }

    static long entryOffset(final int index) {
        return (long) index * ENTRY_LENGTH;
    }

    static long tableLength(final int capacity) {
        return (long) capacity * ENTRY_LENGTH;
    }

    static int key(final int index, final int tag) {
        return (index + 1) << 8 | (tag & 0xFF);
    }

    /**
     * The entry index of a key, or -1 if the key cannot belong to a table of that capacity.
     */
    static int index(final int key, final int capacity) {
        final int index = (key >>> 8) - 1;
        return index >= 0 && index < capacity && (key & 0xFF) != 0 ? index : -1;
    }

    static String fileName(final int key) {
        return "mr-" + Integer.toHexString(key);
    }
}

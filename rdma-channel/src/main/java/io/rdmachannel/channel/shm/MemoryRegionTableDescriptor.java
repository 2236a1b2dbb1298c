package io.rdmachannel.channel.shm;

/**
 * Layout of a device's shared memory-region table ({@code mrtable}): peers resolve an rkey here.
 *
 * <pre>
 *   0                   1                   2                   3
 *   0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 *  +---------------------------------------------------------------+
 *  |                    Guard (AccessGuard: the key, 0 = free,     |
 *  |                    and the peer accesses under way)           |
 *  +---------------------------------------------------------------+
 *  |                    Access flags                               |
 *  +---------------------------------------------------------------+
 *  |                    Protection domain handle                   |
 *  +---------------------------------------------------------------+
 *  |                    Address (owner's virtual address)          |
 *  |                                                               |
 *  +---------------------------------------------------------------+
 *  |                    Length                                     |
 *  |                                                               |
 *  +---------------------------------------------------------------+
 *  |                    File id (the pooled file f-<id hex>)       |
 *  +---------------------------------------------------------------+
 *  |                    Reserved                                   |
 *  +---------------------------------------------------------------+
 * </pre>
 *
 * A key is {@code (index + 1) << 8 | tag}: the entry index plus a tag that changes each time the entry is reused,
 * so a stale key never matches. The memory of a region with remote access lives at the start of the pooled file
 * {@code f-<file id>}, which may have held other regions before: a peer reaches it only inside an access the guard
 * admitted for the current key, and the owner reuses the file only once the key was revoked and those drained.
 */
final class MemoryRegionTableDescriptor {
    static final int GUARD_OFFSET = 0;
    static final int ACCESS_OFFSET = 8;
    static final int PD_OFFSET = 12;
    static final int ADDRESS_OFFSET = 16;
    static final int LENGTH_OFFSET = 24;
    static final int FILE_ID_OFFSET = 32;
    static final int ENTRY_LENGTH = 40;

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
}

package io.rdmachannel.channel.shm;

/**
 * Layout of an XRC domain's registry: one file {@code xrcd3-<dev>-<inode>} in the provider's directory, named by the
 * device and inode of the file that identifies the domain, mapped by every process that has the domain open. Every
 * change happens under an exclusive lock of the whole file ({@link XrcRegistry}), which the kernel drops when its
 * holder dies; nothing here is changed without it.
 *
 * <pre>
 *  header (64 bytes)
 *    0 magic int   4 state int (0 not formatted, 1 live, 2 deleted: its last opener unlinked it)
 *    8 next target queue pair number int   12 next shared receive queue number int
 *   16 target queue pairs created long   24 target queue pairs destroyed long
 *  openers: OPENERS entries of 32 bytes, one per device (process) that has the domain open
 *    0 device GID 16 bytes   16 handles int (domain handles the device has open; 0: free entry)
 *  target queue pairs: TARGETS entries of TARGET_ENTRY_LENGTH bytes
 *    0 number int (0: free entry)   4 state int (QueuePairState code)   8 event sequence long (events so far)
 *   16 event ring int[EVENT_RING] (QueuePairEvent codes; event s at index s % EVENT_RING)
 *   48 remote GID 16 bytes   64 remote queue pair number int (the XRC initiator it was connected to at
 *      READY_TO_RECEIVE; set with the state, read without the lock by initiators on every request)
 *   68 remote access flags int   72 min RNR timer code int (both set at READY_TO_RECEIVE)
 *  128 references int[OPENERS] (handles of the queue pair each opener holds)
 *  shared receive queues: SRQS entries of 16 bytes
 *    0 number int (0: free entry)   4 opener int (index of the opener that created it)
 *    8 block file int (the pooled file f-&lt;id&gt; of the opener's device holding the queue's XRC block,
 *      XrcSharedReceiveQueueBlockDescriptor)   12 block identity int (the block's AccessGuard identity)
 * </pre>
 */
final class XrcDomainDescriptor {
    static final int MAGIC = 0x58524345;
    static final int STATE_UNFORMATTED = 0;
    static final int STATE_LIVE = 1;
    static final int STATE_DELETED = 2;

    static final int OPENERS = 64;
    /** Target queue pairs the registry holds: a power of two (a number's entry is its low bits). */
    static final int TARGETS = 32768;
    /** XRC shared receive queues the registry holds: a power of two (a number's entry is its low bits). */
    static final int SRQS = 65536;
    static final int EVENT_RING = 8;
    static final int MAX_NUMBER = 0xFFFFFF;

    static final int MAGIC_OFFSET = 0;
    static final int STATE_OFFSET = 4;
    static final int NEXT_TARGET_NUMBER_OFFSET = 8;
    static final int NEXT_SRQ_NUMBER_OFFSET = 12;
    static final int TARGETS_CREATED_OFFSET = 16;
    static final int TARGETS_DESTROYED_OFFSET = 24;
    static final int HEADER_LENGTH = 64;

    static final int OPENER_GID_OFFSET = 0;
    static final int OPENER_HANDLES_OFFSET = 16;
    static final int OPENER_ENTRY_LENGTH = 32;

    static final int TARGET_NUMBER_OFFSET = 0;
    static final int TARGET_STATE_OFFSET = 4;
    static final int TARGET_EVENT_SEQUENCE_OFFSET = 8;
    static final int TARGET_EVENTS_OFFSET = 16;
    static final int TARGET_REMOTE_GID_OFFSET = 48;
    static final int TARGET_REMOTE_QPN_OFFSET = 64;
    static final int TARGET_ACCESS_OFFSET = 68;
    static final int TARGET_MIN_RNR_TIMER_OFFSET = 72;
    static final int TARGET_REFERENCES_OFFSET = 128;
    static final int TARGET_ENTRY_LENGTH = TARGET_REFERENCES_OFFSET + 4 * OPENERS;

    static final int SRQ_NUMBER_OFFSET = 0;
    static final int SRQ_OPENER_OFFSET = 4;
    static final int SRQ_BLOCK_FILE_OFFSET = 8;
    static final int SRQ_BLOCK_IDENTITY_OFFSET = 12;
    static final int SRQ_ENTRY_LENGTH = 16;

    static final long OPENERS_OFFSET = HEADER_LENGTH;
    static final long TARGETS_OFFSET = OPENERS_OFFSET + (long) OPENERS * OPENER_ENTRY_LENGTH;
    static final long SRQS_OFFSET = TARGETS_OFFSET + (long) TARGETS * TARGET_ENTRY_LENGTH;
    static final long LENGTH = SRQS_OFFSET + (long) SRQS * SRQ_ENTRY_LENGTH;

    /**
     * The registry's name before the device and inode: a layout of its own per version, so that a registry another
     * version left (with 128, then 4,096 targets; the stream's XRC mode needs a target and a queue per connection and
     * side, and now finds an entry by its number) is never read as this one. The file is sparse: only entries in use
     * become memory.
     */
    static final String FILE_PREFIX = "xrcd3-";

    private XrcDomainDescriptor() {
    }

    static long openerOffset(final int index) {
        return OPENERS_OFFSET + (long) index * OPENER_ENTRY_LENGTH;
    }

    /**
     * The entry of the target queue pair {@code number} (1 to {@link #MAX_NUMBER}): its number's low bits, so a
     * look-up reads one entry.
     */
    static int targetIndex(final int number) {
        return (number - 1) & (TARGETS - 1);
    }

    /**
     * The entry of the XRC shared receive queue {@code number}, as {@link #targetIndex}.
     */
    static int srqIndex(final int number) {
        return (number - 1) & (SRQS - 1);
    }

    static long targetOffset(final int index) {
        return TARGETS_OFFSET + (long) index * TARGET_ENTRY_LENGTH;
    }

    static long referenceOffset(final int target, final int opener) {
        return targetOffset(target) + TARGET_REFERENCES_OFFSET + 4L * opener;
    }

    static long eventOffset(final int target, final long sequence) {
        return targetOffset(target) + TARGET_EVENTS_OFFSET + 4L * (int) (sequence % EVENT_RING);
    }

    static long srqOffset(final int index) {
        return SRQS_OFFSET + (long) index * SRQ_ENTRY_LENGTH;
    }

    /**
     * The registry's name for the file of device {@code dev} and inode {@code inode}.
     */
    static String fileName(final long dev, final long inode) {
        return FILE_PREFIX + Long.toHexString(dev) + "-" + Long.toHexString(inode);
    }
}

package io.rdmachannel.channel.shm;

/**
 * Layout of a queue pair's inbound completion ring: receive completions written by the one process that executes
 * the connected peer's requests (single producer) and polled by the owner (single consumer). It cannot overflow:
 * each entry stands for a receive slot, and slots are reposted only after their completion was polled.
 *
 * <pre>
 *  header: 0 tail long (producer, release), 64 head long (consumer), 128 capacity int; entries at 192
 *  entry (64 bytes):
 *    0 sequence long (position + 1 once published)   8 wrId long
 *   16 byteLength int  20 immediate int  24 status int  28 opcode int
 *   32 flags int (HAS_IMMEDIATE, SOLICITED)  36 slot int (receive slot consumed)  40 vendorError int
 * </pre>
 */
final class InboundCompletionDescriptor {
    static final int TAIL_OFFSET = 0;
    static final int HEAD_OFFSET = 64;
    static final int CAPACITY_OFFSET = 128;
    static final int HEADER_LENGTH = 192;

    static final int SEQUENCE_OFFSET = 0;
    static final int WR_ID_OFFSET = 8;
    static final int BYTE_LENGTH_OFFSET = 16;
    static final int IMMEDIATE_OFFSET = 20;
    static final int STATUS_OFFSET = 24;
    static final int OPCODE_OFFSET = 28;
    static final int FLAGS_OFFSET = 32;
    static final int SLOT_OFFSET = 36;
    static final int VENDOR_ERROR_OFFSET = 40;
    static final int ENTRY_LENGTH = 64;

    static final int FLAG_HAS_IMMEDIATE = 1;
    static final int FLAG_SOLICITED = 2;

    private InboundCompletionDescriptor() {
    }

    static long entryOffset(final int capacity, final long position) {
        return HEADER_LENGTH + (position % capacity) * ENTRY_LENGTH;
    }

    static long regionLength(final int capacity) {
        return HEADER_LENGTH + (long) capacity * ENTRY_LENGTH;
    }
}

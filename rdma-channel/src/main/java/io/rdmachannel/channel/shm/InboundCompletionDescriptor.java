package io.rdmachannel.channel.shm;

import io.rdmachannel.channel.spi.CompletionOpcode;
import io.rdmachannel.channel.spi.CompletionStatus;

import java.lang.foreign.MemorySegment;

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
 *   44 queue pair number int (an XRC shared receive queue's ring: the target queue pair the message came through)
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
    static final int QUEUE_PAIR_OFFSET = 44;
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

    /**
     * Write an entry's fields (not its sequence, which publishes it).
     */
    static void write(final MemorySegment segment, final long entry, final long workRequestId, final int slot,
        final CompletionStatus status, final CompletionOpcode opcode, final int byteLength, final int flags,
        final int immediate) {
        segment.set(Atomics.LONG, entry + WR_ID_OFFSET, workRequestId);
        segment.set(Atomics.INT, entry + BYTE_LENGTH_OFFSET, byteLength);
        segment.set(Atomics.INT, entry + IMMEDIATE_OFFSET, immediate);
        segment.set(Atomics.INT, entry + STATUS_OFFSET, status.code());
        segment.set(Atomics.INT, entry + OPCODE_OFFSET, opcode.code());
        segment.set(Atomics.INT, entry + FLAGS_OFFSET, flags);
        segment.set(Atomics.INT, entry + SLOT_OFFSET, slot);
        segment.set(Atomics.INT, entry + VENDOR_ERROR_OFFSET, 0);
    }

    /**
     * Read a published entry into {@code completion}: every value is the producing process's to choose; the caller
     * validates what it uses (the slot, the length against the receive's).
     */
    static void read(final MemorySegment segment, final long entry, final ShmWorkCompletion completion) {
        completion.workRequestId = segment.get(Atomics.LONG, entry + WR_ID_OFFSET);
        completion.status = CompletionStatus.fromCode(segment.get(Atomics.INT, entry + STATUS_OFFSET));
        final int opcode = segment.get(Atomics.INT, entry + OPCODE_OFFSET);
        completion.opcode = opcode == CompletionOpcode.RECV_RDMA_WITH_IMM.code()
            ? CompletionOpcode.RECV_RDMA_WITH_IMM : CompletionOpcode.RECV;
        completion.byteLength = segment.get(Atomics.INT, entry + BYTE_LENGTH_OFFSET);
        final int flags = segment.get(Atomics.INT, entry + FLAGS_OFFSET);
        completion.hasImmediate = (flags & FLAG_HAS_IMMEDIATE) != 0;
        completion.immediate = segment.get(Atomics.INT, entry + IMMEDIATE_OFFSET);
        completion.vendorError = 0;
    }

    /**
     * Whether a completion read from a peer's entry is malformed for a receive of {@code receiveLength} bytes: a SEND
     * lands in the receive's buffers, so its length cannot exceed them (an RDMA WRITE WITH IMMEDIATE lands elsewhere).
     */
    static boolean overflows(final ShmWorkCompletion completion, final long receiveLength) {
        return completion.status == CompletionStatus.SUCCESS && completion.opcode == CompletionOpcode.RECV
            && (completion.byteLength < 0 || completion.byteLength > receiveLength);
    }
}

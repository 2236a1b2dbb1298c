package io.rdmachannel.channel.spi;

/**
 * A reusable send work request, created once by {@link QueuePair#createSendWorkRequest()} and rewritten for each
 * post. Setters return {@code this}. Nothing is checked until {@link QueuePair#postSend(SendWorkRequest)}.
 */
public interface SendWorkRequest {
    /**
     * Clear every field: opcode SEND, no flags, no SGEs, id 0.
     *
     * @return this.
     */
    SendWorkRequest reset();

    /**
     * Set the id returned in the completion.
     *
     * @param id any value.
     * @return this.
     */
    SendWorkRequest id(long id);

    /**
     * Set the operation.
     *
     * @param opcode the operation.
     * @return this.
     */
    SendWorkRequest opcode(WorkRequestOpcode opcode);

    /**
     * Set the flags.
     *
     * @param flags {@link SendFlags} bits.
     * @return this.
     */
    SendWorkRequest flags(int flags);

    /**
     * Set the immediate value for the WITH_IMM opcodes.
     *
     * @param immediate the value, as the receiver will see it.
     * @return this.
     */
    SendWorkRequest immediate(int immediate);

    /**
     * Set the remote memory of an RDMA operation.
     *
     * @param address the remote virtual address.
     * @param remoteKey the rkey of the remote region.
     * @return this.
     */
    SendWorkRequest remote(long address, int remoteKey);

    /**
     * Set the XRC shared receive queue a request of an XRC initiator queue pair ({@link QueuePairType#XRC_SEND})
     * reaches ({@code remote_srqn}): the number {@link XrcSharedReceiveQueue#number()} of a queue of the remote XRC
     * domain. Every request of an XRC initiator names one, RDMA READ and WRITE too (the queue's protection domain
     * checks the remote key); other queue pairs ignore it.
     *
     * @param number the remote queue's number, 24 bits.
     * @return this.
     */
    SendWorkRequest remoteSharedReceiveQueue(int number);

    /**
     * The XRC shared receive queue this request reaches; 0 after {@link #reset()}.
     *
     * @return the number set by {@link #remoteSharedReceiveQueue(int)}.
     */
    int remoteSharedReceiveQueue();

    /**
     * Set the number of scatter/gather entries in use.
     *
     * @param count 0 up to {@link #maxSge()}.
     * @return this.
     * @throws IllegalArgumentException if the count is out of range.
     */
    SendWorkRequest sgeCount(int count);

    /**
     * Set one scatter/gather entry; also raises {@link #sgeCount()} to include it.
     *
     * @param index 0 up to {@link #maxSge()} - 1.
     * @param address the local virtual address.
     * @param length the byte count.
     * @param localKey the lkey of the region holding the bytes; ignored for {@link SendFlags#INLINE}.
     * @return this.
     * @throws IndexOutOfBoundsException if the index is out of range.
     */
    SendWorkRequest sge(int index, long address, int length, int localKey);

    /**
     * The id.
     *
     * @return the wr_id.
     */
    long id();

    /**
     * The operation.
     *
     * @return the opcode.
     */
    WorkRequestOpcode opcode();

    /**
     * The flags.
     *
     * @return {@link SendFlags} bits.
     */
    int flags();

    /**
     * The immediate value.
     *
     * @return the immediate.
     */
    int immediate();

    /**
     * The remote address.
     *
     * @return the address.
     */
    long remoteAddress();

    /**
     * The remote key.
     *
     * @return the rkey.
     */
    int remoteKey();

    /**
     * The number of scatter/gather entries in use.
     *
     * @return the count.
     */
    int sgeCount();

    /**
     * The capacity for scatter/gather entries.
     *
     * @return the maximum count.
     */
    int maxSge();

    /**
     * An entry's address.
     *
     * @param index the entry.
     * @return the address.
     */
    long sgeAddress(int index);

    /**
     * An entry's length.
     *
     * @param index the entry.
     * @return the length.
     */
    int sgeLength(int index);

    /**
     * An entry's lkey.
     *
     * @param index the entry.
     * @return the lkey.
     */
    int sgeLocalKey(int index);

    /**
     * The bytes of all entries in use.
     *
     * @return the total length.
     */
    default long totalLength() {
        long total = 0;
        for (int i = 0, count = sgeCount(); i < count; i++) {
            total += Integer.toUnsignedLong(sgeLength(i));
        }
        return total;
    }
}

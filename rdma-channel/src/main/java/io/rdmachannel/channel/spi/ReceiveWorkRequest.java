package io.rdmachannel.channel.spi;

/**
 * A reusable receive work request, created once and rewritten for each post. A receive with no entries accepts
 * zero-length messages and RDMA WRITE WITH IMMEDIATE notifications.
 */
public interface ReceiveWorkRequest {
    /**
     * Clear every field: id 0, no SGEs.
     *
     * @return this.
     */
    ReceiveWorkRequest reset();

    /**
     * Set the id returned in the completion.
     *
     * @param id any value.
     * @return this.
     */
    ReceiveWorkRequest id(long id);

    /**
     * Set the number of scatter/gather entries in use.
     *
     * @param count 0 up to {@link #maxSge()}.
     * @return this.
     * @throws IllegalArgumentException if the count is out of range.
     */
    ReceiveWorkRequest sgeCount(int count);

    /**
     * Set one scatter/gather entry; also raises {@link #sgeCount()} to include it.
     *
     * @param index 0 up to {@link #maxSge()} - 1.
     * @param address the local virtual address.
     * @param length the byte count.
     * @param localKey the lkey of a region registered with {@link AccessFlags#LOCAL_WRITE}.
     * @return this.
     * @throws IndexOutOfBoundsException if the index is out of range.
     */
    ReceiveWorkRequest sge(int index, long address, int length, int localKey);

    /**
     * The id.
     *
     * @return the wr_id.
     */
    long id();

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
}

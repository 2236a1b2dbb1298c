package io.rdmachannel.channel.spi;

import java.io.IOException;
import java.lang.foreign.MemorySegment;

/**
 * A protection domain: memory regions, queue pairs and shared receive queues of one domain can only be used
 * together, and a peer's rkey is only valid on queue pairs of the domain that registered it.
 */
public interface ProtectionDomain extends AutoCloseable {
    /**
     * The device this domain belongs to.
     *
     * @return the device.
     */
    RdmaDevice device();

    /**
     * Allocate page-aligned, zeroed memory and register it. The region owns the memory: closing the region
     * deregisters it and then frees it. This is the memory to use for anything a peer reaches (rings it writes into,
     * buffers it reads) or that receives SENDs, because every provider can expose it.
     *
     * @param length the size in bytes, at least 1.
     * @param accessFlags {@link AccessFlags} bits; register with the least access needed.
     * @return the new region.
     * @throws IOException if the memory cannot be allocated or registered.
     * @throws IllegalArgumentException if the length or the flags are invalid.
     */
    MemoryRegion allocate(long length, int accessFlags) throws IOException;

    /**
     * Register memory the caller owns. The caller must keep the memory alive until the region is closed and must not
     * close the region while a work request that uses it is outstanding.
     *
     * @param segment native memory (heap segments cannot be registered).
     * @param accessFlags {@link AccessFlags} bits.
     * @return the new region.
     * @throws IOException if the registration fails.
     * @throws IllegalArgumentException if the segment is on the heap, the flags are invalid, or remote access is
     *     requested on a device without {@link DeviceCapability#REMOTE_ACCESS_TO_REGISTERED_MEMORY}.
     */
    MemoryRegion register(MemorySegment segment, int accessFlags) throws IOException;

    /**
     * Create a queue pair.
     *
     * @param attributes the queues, depths and limits; copied, so the object may be reused.
     * @return the new queue pair in state {@link QueuePairState#RESET}.
     * @throws IOException if the device refuses.
     * @throws IllegalArgumentException if an attribute is out of the device's limits or a queue belongs to another
     *     device.
     */
    QueuePair createQueuePair(QueuePairInitAttributes attributes) throws IOException;

    /**
     * Create a shared receive queue.
     *
     * @param maxWorkRequests the depth, at least 1.
     * @param maxSge scatter/gather entries per receive, at least 1.
     * @return the new queue.
     * @throws IOException if the device refuses.
     * @throws UnsupportedOperationException if the device lacks {@link DeviceCapability#SHARED_RECEIVE_QUEUE}.
     */
    SharedReceiveQueue createSharedReceiveQueue(int maxWorkRequests, int maxSge) throws IOException;

    /**
     * Free the domain. Its regions and queues must be closed first.
     *
     * @throws IllegalStateException if objects of the domain are still open.
     */
    @Override
    void close();
}

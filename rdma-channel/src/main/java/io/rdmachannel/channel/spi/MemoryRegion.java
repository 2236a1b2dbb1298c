package io.rdmachannel.channel.spi;

import java.lang.foreign.MemorySegment;

/**
 * Registered memory. Local work requests name it by {@link #localKey()}; a peer names it by {@link #remoteKey()}
 * plus an address inside {@code [address(), address() + length())}.
 */
public interface MemoryRegion extends AutoCloseable {
    /**
     * The virtual address of the first byte, as a peer must use it in RDMA requests.
     *
     * @return the address.
     */
    long address();

    /**
     * The size in bytes.
     *
     * @return the length.
     */
    long length();

    /**
     * The key local scatter/gather entries use.
     *
     * @return the lkey.
     */
    int localKey();

    /**
     * The key a peer uses to reach this memory; only meaningful with a remote access flag.
     *
     * @return the rkey.
     */
    int remoteKey();

    /**
     * The access this region was registered with.
     *
     * @return {@link AccessFlags} bits.
     */
    int accessFlags();

    /**
     * The registered memory.
     *
     * @return a segment of {@link #length()} bytes at {@link #address()}; not usable after {@link #close()} for an
     *     allocated region.
     */
    MemorySegment segment();

    /**
     * The domain the region belongs to.
     *
     * @return the protection domain.
     */
    ProtectionDomain protectionDomain();

    /**
     * Deregister, then free the memory if the region allocated it. Idempotent.
     */
    @Override
    void close();

    /**
     * Close without waiting for remote accesses under way: for memory that a peer which died in an access (it never
     * ends) may still be inside of; such memory is never reused. A provider whose {@link #close()} does not wait
     * for peer accesses just closes. Idempotent, as {@link #close()}.
     */
    default void abandon() {
        close();
    }
}

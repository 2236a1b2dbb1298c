package io.rdmachannel.channel.spi;

/**
 * Optional features a device may offer.
 */
public enum DeviceCapability {
    /** Shared receive queues ({@link SharedReceiveQueue}). */
    SHARED_RECEIVE_QUEUE,
    /** eXtended Reliable Connected transport: XRC domains and XRC queue pairs. */
    XRC,
    /** RDMA WRITE WITH IMMEDIATE; without it (iWARP) an immediate travels as a small SEND. */
    RDMA_WRITE_WITH_IMMEDIATE,
    /**
     * Remote access to any registered memory. Without it only memory from {@link ProtectionDomain#allocate} can be
     * registered with remote access or be the target of a SEND, as on the shared-memory provider.
     */
    REMOTE_ACCESS_TO_REGISTERED_MEMORY,
    /**
     * A post moves the bytes before it returns: the posting thread copies them into the peer's memory, as on the
     * shared-memory provider, and no adapter works alongside. Cutting a write into small first chunks, so the copy
     * into a send ring overlaps an adapter's transfer of the chunk before (as rsockets does), gains nothing then.
     */
    SYNCHRONOUS_TRANSFER,
    /**
     * The posting thread reads a send's local entries with the CPU, so registering memory for local access costs
     * nothing and may span any native memory, even the whole address space
     * ({@code MemorySegment.NULL.reinterpret(Long.MAX_VALUE)}): a send may then take its bytes straight from any
     * buffer of the process, as on the shared-memory provider. Remote access still needs memory the device exposes.
     */
    LOCAL_ACCESS_TO_ANY_MEMORY
}

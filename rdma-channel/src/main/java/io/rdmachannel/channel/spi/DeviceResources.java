package io.rdmachannel.channel.spi;

/**
 * The verbs objects a device has open now, by kind: created through it and not closed yet. A count that grows while
 * the work does not is a leak; {@code ./rdmachannel stat --devices} and the transport's management view show them.
 *
 * @param protectionDomains   protection domains.
 * @param completionQueues    completion queues.
 * @param readinessSources    readiness sources (completion channels or their emulation).
 * @param queuePairs          queue pairs.
 * @param sharedReceiveQueues shared receive queues.
 * @param memoryRegions       memory regions, allocated or registered.
 * @param xrcDomains          handles of XRC domains ({@link XrcDomain}).
 * @param xrcTargetQueuePairs handles of XRC target queue pairs ({@link XrcTargetQueuePair}), created or opened; they
 *                            are not among {@code queuePairs}. XRC shared receive queues count as shared receive
 *                            queues.
 * @param memoryRegionBytes   the bytes the device holds for the {@code memoryRegions}: on a real device the
 *                            memory registered (pinned for the adapter), on the shm provider the shared files of
 *                            allocated regions (a registration of process memory, local access only, holds
 *                            nothing there).
 */
public record DeviceResources(int protectionDomains, int completionQueues, int readinessSources, int queuePairs,
    int sharedReceiveQueues, int memoryRegions, int xrcDomains, int xrcTargetQueuePairs, long memoryRegionBytes) {

    /**
     * Counts without the bytes of the memory regions.
     *
     * @param protectionDomains   protection domains.
     * @param completionQueues    completion queues.
     * @param readinessSources    readiness sources.
     * @param queuePairs          queue pairs.
     * @param sharedReceiveQueues shared receive queues.
     * @param memoryRegions       memory regions.
     * @param xrcDomains          handles of XRC domains.
     * @param xrcTargetQueuePairs handles of XRC target queue pairs.
     */
    public DeviceResources(final int protectionDomains, final int completionQueues, final int readinessSources,
        final int queuePairs, final int sharedReceiveQueues, final int memoryRegions, final int xrcDomains,
        final int xrcTargetQueuePairs) {
        this(protectionDomains, completionQueues, readinessSources, queuePairs, sharedReceiveQueues, memoryRegions,
            xrcDomains, xrcTargetQueuePairs, 0);
    }

    /**
     * Counts of a device without XRC objects open, without the bytes of the memory regions.
     *
     * @param protectionDomains   protection domains.
     * @param completionQueues    completion queues.
     * @param readinessSources    readiness sources.
     * @param queuePairs          queue pairs.
     * @param sharedReceiveQueues shared receive queues.
     * @param memoryRegions       memory regions.
     */
    public DeviceResources(final int protectionDomains, final int completionQueues, final int readinessSources,
        final int queuePairs, final int sharedReceiveQueues, final int memoryRegions) {
        this(protectionDomains, completionQueues, readinessSources, queuePairs, sharedReceiveQueues, memoryRegions,
            0, 0, 0);
    }
}

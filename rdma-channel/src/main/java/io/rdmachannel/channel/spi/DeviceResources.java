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
 */
public record DeviceResources(int protectionDomains, int completionQueues, int readinessSources, int queuePairs,
    int sharedReceiveQueues, int memoryRegions) {
}

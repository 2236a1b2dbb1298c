package io.rdmachannel.channel.spi;

import java.util.Set;

/**
 * Limits and capabilities of a device, read once when it is opened.
 *
 * @param name the device name.
 * @param maxQueuePairWorkRequests the deepest send or receive queue of a queue pair.
 * @param maxCompletionQueueEntries the largest completion queue.
 * @param maxSge the most scatter/gather entries per work request.
 * @param maxInlineData the most bytes a send may carry inline.
 * @param maxSharedReceiveQueueWorkRequests the deepest shared receive queue, 0 without
 *     {@link DeviceCapability#SHARED_RECEIVE_QUEUE}.
 * @param maxMemoryRegionSize the largest memory region in bytes.
 * @param maxMessageSize the largest single transfer in bytes.
 * @param activeMtu the path MTU in bytes.
 * @param capabilities the optional features offered.
 */
public record DeviceAttributes(
    String name,
    int maxQueuePairWorkRequests,
    int maxCompletionQueueEntries,
    int maxSge,
    int maxInlineData,
    int maxSharedReceiveQueueWorkRequests,
    long maxMemoryRegionSize,
    long maxMessageSize,
    int activeMtu,
    Set<DeviceCapability> capabilities) {

    /**
     * Copies the capability set so the record stays immutable.
     */
    public DeviceAttributes {
        capabilities = Set.copyOf(capabilities);
    }

    /**
     * Whether the device offers a capability.
     *
     * @param capability the feature.
     * @return true if offered.
     */
    public boolean has(final DeviceCapability capability) {
        return capabilities.contains(capability);
    }
}

package io.rdmachannel.channel;

import io.rdmachannel.channel.spi.DeviceEvents;
import io.rdmachannel.channel.spi.DeviceResources;

/**
 * One RDMA device a transport uses, as {@link RdmaTransportMXBean#getDevices()} lists it.
 *
 * @param provider              the verbs provider, {@code shm} or {@code native}.
 * @param name                  the device, for example {@code rxe0} or {@code shm0}.
 * @param connections           the stream connections on it now.
 * @param zeroCopyRegistrations the registered buffers ({@link RegisteredBuffers}) registered with it for zero-copy
 *                              transfers.
 * @param resources             the verbs objects open on it (the stream's and any others made through the device).
 * @param events                what the device reported outside completions: port changes and error events.
 * @param postedReceives        the receives the stream's connections have posted on it: each connection's own, and
 *                              those posted in the device's shared receive queue (SRQ mode), whose connections
 *                              reserve only some of them each.
 * @param sharedReceivesReserved the receives of the shared receive queue that connections reserve now (0 without SRQ
 *                              mode).
 */
public record DeviceInfo(String provider, String name, int connections, int zeroCopyRegistrations,
    DeviceResources resources, DeviceEvents events, long postedReceives, long sharedReceivesReserved) {
}

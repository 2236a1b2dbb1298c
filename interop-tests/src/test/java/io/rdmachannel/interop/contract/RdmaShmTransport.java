package io.rdmachannel.interop.contract;

import io.rdmachannel.nio.RdmaSelectorProvider;

import java.net.InetAddress;
import java.nio.channels.spi.SelectorProvider;

/**
 * The RDMA channels on the embedded shared-memory provider: {@link RdmaSelectorProvider#provider()} over the
 * default stream transport, which is {@code shm} on a machine without RDMA devices.
 */
final class RdmaShmTransport implements ContractTransport {
    @Override
    public String name() {
        return "rdma-shm";
    }

    @Override
    public SelectorProvider provider() {
        return RdmaSelectorProvider.provider();
    }

    @Override
    public InetAddress loopbackAddress() {
        return InetAddress.getLoopbackAddress();
    }

    @Override
    public String toString() {
        return name();
    }
}

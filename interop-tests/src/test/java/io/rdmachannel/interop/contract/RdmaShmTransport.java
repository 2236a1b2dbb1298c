package io.rdmachannel.interop.contract;

import io.rdmachannel.nio.RdmaSelectorProvider;

import java.net.InetAddress;
import java.nio.channels.spi.SelectorProvider;

/**
 * The RDMA channels on the embedded shared-memory provider: {@link RdmaSelectorProvider#provider()} over the
 * default stream transport, which is {@code shm} on a machine without RDMA devices; over the IPv4 loopback by
 * default, or IPv6 {@code ::1}.
 */
final class RdmaShmTransport implements ContractTransport {

    static final String NAME = "rdma-shm";

    private final String name;
    private final InetAddress loopback;

    /**
     * The RDMA channels over the IPv4 loopback.
     */
    RdmaShmTransport() {
        this(NAME, InetAddress.getLoopbackAddress());
    }

    /**
     * The RDMA channels over another loopback address.
     *
     * @param name     the transport's name, for example {@code rdma-shm-ipv6}.
     * @param loopback the loopback address listeners bind to.
     */
    RdmaShmTransport(final String name, final InetAddress loopback) {
        this.name = name;
        this.loopback = loopback;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public SelectorProvider provider() {
        return RdmaSelectorProvider.provider();
    }

    @Override
    public InetAddress loopbackAddress() {
        return loopback;
    }

    /**
     * As rsockets over rdma_cm: a connection request beyond the backlog is rejected at once.
     */
    @Override
    public boolean queuesConnectsBeyondBacklog() {
        return false;
    }

    /**
     * The engine binds a client's address when it connects (see {@code RdmaSocketChannel}).
     */
    @Override
    public boolean assignsClientPortAtBind() {
        return false;
    }

    @Override
    public String toString() {
        return name;
    }
}

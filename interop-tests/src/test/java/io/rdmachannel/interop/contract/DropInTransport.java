package io.rdmachannel.interop.contract;

import java.net.InetAddress;
import java.nio.channels.spi.SelectorProvider;

import io.rdmachannel.nio.RdmaSelectorProvider;

/**
 * The drop-in: the channels of {@link SelectorProvider#provider()} in a JVM started with rdmachannel as the JVM-wide
 * provider (the {@code dropin-contract} run of this module), so that every contract test runs the way an unmodified
 * program meets the library: {@code SocketChannel.open()}, destination rules (none: RDMA, else TCP), servers
 * listening for RDMA and TCP peers. Connections between the suite's own channels go over RDMA.
 */
final class DropInTransport implements ContractTransport {
    /** The transport's name. */
    static final String NAME = "dropin";

    private final InetAddress loopback;

    DropInTransport(final InetAddress loopback) {
        this.loopback = loopback;
    }

    /**
     * The drop-in transport when this JVM runs rdmachannel as its JVM-wide provider, else null.
     */
    static ContractTransport ifInstalled(final InetAddress loopback) {
        return SelectorProvider.provider() instanceof RdmaSelectorProvider ? new DropInTransport(loopback) : null;
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public SelectorProvider provider() {
        return SelectorProvider.provider();
    }

    @Override
    public InetAddress loopbackAddress() {
        return loopback;
    }

    /**
     * Connections between drop-in channels go over RDMA, which rejects a request beyond the backlog at once.
     */
    @Override
    public boolean queuesConnectsBeyondBacklog() {
        return false;
    }

    /**
     * The channel does not know at bind whether its connection will be RDMA or TCP; it binds when it connects.
     */
    @Override
    public boolean assignsClientPortAtBind() {
        return false;
    }

    @Override
    public String toString() {
        return NAME;
    }
}

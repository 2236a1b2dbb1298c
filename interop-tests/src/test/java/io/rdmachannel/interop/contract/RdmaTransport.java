package io.rdmachannel.interop.contract;

import io.rdmachannel.channel.spi.RdmaProviders;
import io.rdmachannel.channel.stream.StreamTransports;
import io.rdmachannel.nio.RdmaSelectorProvider;

import java.net.InetAddress;
import java.nio.channels.spi.SelectorProvider;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The RDMA channels on one verbs provider: {@code shm} (the embedded shared-memory provider, over a loopback
 * address) or {@code native} (a real device, over an address of its interface, e.g. the soft-RoCE guest's
 * 192.0.2.1). Each provider gets one {@link RdmaSelectorProvider} over its own stream transport, shared by the tests.
 */
final class RdmaTransport implements ContractTransport {
    /** The name of the transport on the shm provider. */
    static final String SHM = "rdma-shm";
    /** The name of the transport on the native provider. */
    static final String NATIVE = "rdma-native";

    private static final Map<String, RdmaSelectorProvider> PROVIDERS = new ConcurrentHashMap<>();

    private final String name;
    private final String providerName;
    private final InetAddress loopback;

    /**
     * The RDMA channels on a provider.
     *
     * @param name         the transport's name, for example {@code rdma-shm-ipv6}.
     * @param providerName the verbs provider, {@code shm} or {@code native}.
     * @param loopback     the address listeners bind to and clients connect to.
     */
    RdmaTransport(final String name, final String providerName, final InetAddress loopback) {
        this.name = name;
        this.providerName = providerName;
        this.loopback = loopback;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public SelectorProvider provider() {
        return PROVIDERS.computeIfAbsent(providerName,
            provider -> new RdmaSelectorProvider(StreamTransports.open(RdmaProviders.byName(provider))));
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

    /**
     * The shm provider maps a wildcard target to the loopback as the JDK does; a real device has no loopback route.
     */
    @Override
    public boolean connectsWildcardViaLoopback() {
        return !"native".equals(providerName);
    }

    @Override
    public String toString() {
        return name;
    }
}

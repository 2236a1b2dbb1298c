package io.rdmachannel.interop.contract;

import io.rdmachannel.channel.shm.ShmConfiguration;
import io.rdmachannel.channel.spi.RdmaProviders;
import io.rdmachannel.channel.stream.StreamTransport;
import io.rdmachannel.channel.stream.StreamTransports;
import io.rdmachannel.nio.RdmaSelectorProvider;

import java.net.InetAddress;
import java.nio.channels.spi.SelectorProvider;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The RDMA channels on one fabric: {@code shm} (the embedded shared-memory provider, over a loopback address),
 * {@code shm-iwarp} (the same provider emulating iWARP, so the stream runs in message mode: no immediate data, the
 * active side sends first) or {@code native} (a real device, over an address of its interface, e.g. the soft-RoCE
 * guest's 192.0.2.1). Each fabric gets one {@link RdmaSelectorProvider} over its own stream transport, shared by the
 * tests.
 */
final class RdmaTransport implements ContractTransport {
    /** The name of the transport on the shm provider. */
    static final String SHM = "rdma-shm";
    /** The name of the transport on the shm provider emulating iWARP. */
    static final String SHM_IWARP = "rdma-shm-iwarp";
    /** The fabric of {@link #SHM_IWARP}: shm devices opened with {@code rdmachannel.shm.transport=iwarp}. */
    static final String IWARP_FABRIC = "shm-iwarp";
    /** The name of the transport on the native provider. */
    static final String NATIVE = "rdma-native";

    private static final Map<String, RdmaSelectorProvider> PROVIDERS = new ConcurrentHashMap<>();

    private final String name;
    private final String fabric;
    private final InetAddress loopback;

    /**
     * The RDMA channels on a fabric.
     *
     * @param name     the transport's name, for example {@code rdma-shm-ipv6}.
     * @param fabric   the verbs provider, {@code shm} or {@code native}, or {@link #IWARP_FABRIC}.
     * @param loopback the address listeners bind to and clients connect to.
     */
    RdmaTransport(final String name, final String fabric, final InetAddress loopback) {
        this.name = name;
        this.fabric = fabric;
        this.loopback = loopback;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public SelectorProvider provider() {
        return PROVIDERS.computeIfAbsent(fabric, key -> new RdmaSelectorProvider(IWARP_FABRIC.equals(key)
            ? openIwarp() : StreamTransports.open(RdmaProviders.byName(key))));
    }

    /**
     * A stream transport over an shm device emulating iWARP. The setting is read when the device opens, so it is set
     * for the opening only: the other transports of this JVM stay on InfiniBand semantics.
     */
    private static StreamTransport openIwarp() {
        synchronized (RdmaTransport.class) {
            final String previous = System.getProperty(ShmConfiguration.TRANSPORT_PROP_NAME);
            System.setProperty(ShmConfiguration.TRANSPORT_PROP_NAME,
                ShmConfiguration.Transport.IWARP.propertyValue());
            try {
                return StreamTransports.open(RdmaProviders.byName("shm"));
            } finally {
                if (previous == null) {
                    System.clearProperty(ShmConfiguration.TRANSPORT_PROP_NAME);
                } else {
                    System.setProperty(ShmConfiguration.TRANSPORT_PROP_NAME, previous);
                }
            }
        }
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
        return !"native".equals(fabric);
    }

    @Override
    public String toString() {
        return name;
    }
}

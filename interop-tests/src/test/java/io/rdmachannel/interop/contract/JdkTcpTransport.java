package io.rdmachannel.interop.contract;

import java.net.InetAddress;
import java.nio.channels.spi.SelectorProvider;

import io.rdmachannel.nio.RdmaSelectorProvider;

/**
 * The oracle: the JDK's built-in TCP channels over a loopback address (IPv4 by default, or IPv6 {@code ::1}).
 * <p>
 * {@link SelectorProvider#provider()} is the JDK's own provider only while no
 * {@code java.nio.channels.spi.SelectorProvider} property or service file replaces it; the constructor refuses to
 * run the oracle on anything else, so a misconfigured class path cannot make the suite compare a provider with
 * itself.
 */
final class JdkTcpTransport implements ContractTransport {

    static final String NAME = "jdk-tcp";

    private final String name;
    private final InetAddress loopback;
    private final SelectorProvider provider;

    /**
     * The oracle over the IPv4 loopback.
     */
    JdkTcpTransport() {
        this(NAME, InetAddress.getLoopbackAddress());
    }

    /**
     * The oracle over another loopback address.
     *
     * @param name     the transport's name, for example {@code jdk-tcp-ipv6}.
     * @param loopback the loopback address listeners bind to.
     */
    JdkTcpTransport(final String name, final InetAddress loopback) {
        // in a JVM with rdmachannel as the JVM-wide provider (the drop-in run), the JDK's own provider
        provider = SelectorProvider.provider() instanceof RdmaSelectorProvider ? RdmaSelectorProvider.platformProvider()
            : SelectorProvider.provider();
        if (provider.getClass().getModule() != Object.class.getModule()) {
            throw new IllegalStateException("the default SelectorProvider is not the JDK's: provider="
                + provider.getClass().getName());
        }
        this.name = name;
        this.loopback = loopback;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public SelectorProvider provider() {
        return provider;
    }

    @Override
    public InetAddress loopbackAddress() {
        return loopback;
    }

    @Override
    public boolean queuesConnectsBeyondBacklog() {
        return true;
    }

    @Override
    public boolean assignsClientPortAtBind() {
        return true;
    }

    @Override
    public String toString() {
        return name;
    }
}

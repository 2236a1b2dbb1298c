package io.rdmachannel.interop.contract;

import java.net.InetAddress;
import java.nio.channels.spi.SelectorProvider;

/**
 * The oracle: the JDK's built-in TCP channels over IPv4 loopback.
 * <p>
 * {@link SelectorProvider#provider()} is the JDK's own provider only while no
 * {@code java.nio.channels.spi.SelectorProvider} property or service file replaces it; the constructor refuses to
 * run the oracle on anything else, so a misconfigured class path cannot make the suite compare a provider with
 * itself.
 */
final class JdkTcpTransport implements ContractTransport {

    static final String NAME = "jdk-tcp";

    private final SelectorProvider provider;

    JdkTcpTransport() {
        provider = SelectorProvider.provider();
        if (provider.getClass().getModule() != Object.class.getModule()) {
            throw new IllegalStateException("the default SelectorProvider is not the JDK's: provider="
                + provider.getClass().getName());
        }
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public SelectorProvider provider() {
        return provider;
    }

    @Override
    public InetAddress loopbackAddress() {
        return InetAddress.getLoopbackAddress();
    }

    @Override
    public String toString() {
        return NAME;
    }
}

package io.rdmachannel.interop.contract;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.channels.spi.SelectorProvider;

/**
 * One stream transport the contract suite runs against: the channels and selectors of one {@link SelectorProvider}
 * plus the loopback address its listeners bind to.
 * <p>
 * Every channel and selector a contract test uses is opened through this interface, never through
 * {@code SocketChannel.open()} or {@code Selector.open()}, so the same test runs on the JDK's TCP channels (the
 * oracle, {@link JdkTcpTransport}) and on any other provider listed in {@link ContractTransports#ALL}.
 */
public interface ContractTransport {

    /**
     * Short stable name shown in test display names, for example {@code jdk-tcp} or {@code rdma-shm}.
     *
     * @return the transport's name.
     */
    String name();

    /**
     * The provider whose channels and selectors are under test.
     *
     * @return the provider.
     */
    SelectorProvider provider();

    /**
     * The loopback address listeners bind to and clients connect to.
     *
     * @return a loopback address (127.0.0.1 or ::1).
     */
    InetAddress loopbackAddress();

    /**
     * The address a listener binds to: the loopback address with an ephemeral port.
     *
     * @return an unbound-port loopback socket address.
     */
    default InetSocketAddress bindAddress() {
        return new InetSocketAddress(loopbackAddress(), 0);
    }

    /**
     * Opens an unconnected socket channel of this transport.
     *
     * @return a new socket channel.
     * @throws IOException if the provider fails to open one.
     */
    default SocketChannel openSocketChannel() throws IOException {
        return provider().openSocketChannel();
    }

    /**
     * Opens an unbound server socket channel of this transport.
     *
     * @return a new server socket channel.
     * @throws IOException if the provider fails to open one.
     */
    default ServerSocketChannel openServerSocketChannel() throws IOException {
        return provider().openServerSocketChannel();
    }

    /**
     * Opens a selector that can multiplex this transport's channels.
     *
     * @return a new selector.
     * @throws IOException if the provider fails to open one.
     */
    default Selector openSelector() throws IOException {
        return provider().openSelector();
    }
}

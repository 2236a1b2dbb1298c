package io.rdmachannel.interop.contract;

import io.rdmachannel.channel.IbSocketAddress;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.net.UnknownHostException;
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
     * Whether a connection request beyond a listener's full backlog waits (TCP: the SYN is dropped and retried, so a
     * blocking connect blocks) rather than being refused at once (rsockets over rdma_cm reject it). Tests that need
     * a connect which stays in progress use a full backlog, and only where this is true.
     *
     * @return true if a connect to a listener with a full backlog stays in progress.
     */
    boolean queuesConnectsBeyondBacklog();

    /**
     * Whether {@code SocketChannel.bind} with port 0 assigns the port at once (TCP), rather than when the channel
     * connects. The RDMA channels record the bound address and the engine binds it at connect: the stream transport
     * has no bind for an active endpoint (documented in {@code RdmaSocketChannel}), so before the connection their
     * getLocalAddress reports port 0.
     *
     * @return true if a client's ephemeral port is known right after bind.
     */
    boolean assignsClientPortAtBind();

    /**
     * Whether a connect to the wildcard address reaches a local listener, as the JDK's channels do by connecting to
     * the loopback. The native RDMA provider cannot: no RDMA device serves the loopback, so such a connect fails with
     * {@link java.net.NoRouteToHostException}.
     *
     * @return true if a wildcard target reaches the loopback.
     */
    default boolean connectsWildcardViaLoopback() {
        return true;
    }

    /**
     * The wildcard address of the loopback address's family: {@code 0.0.0.0} or {@code ::}.
     *
     * @return the wildcard address.
     */
    default InetAddress wildcardAddress() {
        try {
            return InetAddress.getByAddress(new byte[loopbackAddress().getAddress().length]);
        } catch (final UnknownHostException ex) {
            throw new AssertionError(ex);
        }
    }

    /**
     * The address a listener binds to: the loopback address with an ephemeral port (or for a transport addressed by
     * GID, the GID of that address: see {@link #addressedByIp()}).
     *
     * @return an unbound-port loopback socket address.
     */
    default SocketAddress bindAddress() {
        return new InetSocketAddress(loopbackAddress(), 0);
    }

    /**
     * The listeners' address with a given port: the loopback address, or the GID of a transport addressed by GID.
     *
     * @param port the port.
     * @return the address.
     */
    default SocketAddress addressWithPort(final int port) {
        return bindAddress() instanceof IbSocketAddress ib ? IbSocketAddress.of(ib.gid(), port)
            : new InetSocketAddress(loopbackAddress(), port);
    }

    /**
     * The port of an IP or GID socket address.
     *
     * @param address an {@link InetSocketAddress} or an {@link IbSocketAddress} of the stream port space.
     * @return its port.
     */
    static int portOf(final SocketAddress address) {
        return address instanceof IbSocketAddress ib ? ib.port() : ((InetSocketAddress) address).getPort();
    }

    /**
     * Whether listeners and connections have IP socket addresses; false for a transport addressed by InfiniBand GID
     * ({@code IbSocketAddress}), which the tests of IP address semantics (wildcards, ports, families) leave out.
     *
     * @return true if {@link #bindAddress()} is an {@link InetSocketAddress}.
     */
    default boolean addressedByIp() {
        return bindAddress() instanceof InetSocketAddress;
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

package io.rdmachannel.interop.contract;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;

/**
 * A listener and one connection through it: the client's channel and the accepted channel, both blocking.
 *
 * @param listener the bound listener.
 * @param client   the connecting side.
 * @param server   the accepted side.
 */
record ConnectedPair(ServerSocketChannel listener, SocketChannel client, SocketChannel server) {

    /**
     * Binds a listener on the transport's loopback address, connects a client to it and accepts the connection.
     * Everything is closed when the test ends.
     *
     * @param transport the transport.
     * @param state     the test's state.
     * @return the pair.
     * @throws IOException if a step fails.
     */
    static ConnectedPair open(final ContractTransport transport, final ConnectionState state) throws IOException {
        state.step("listen");
        final ServerSocketChannel listener = state.closeAtEnd(transport.openServerSocketChannel());
        listener.bind(transport.bindAddress());
        state.step("connect");
        final SocketChannel client = state.closeAtEnd(transport.openSocketChannel());
        client.connect(listener.getLocalAddress());
        state.step("accept");
        final SocketChannel server = state.closeAtEnd(listener.accept());
        state.watch("client", () -> client);
        state.watch("server", () -> server);
        state.step("connected");
        return new ConnectedPair(listener, client, server);
    }

    InetSocketAddress listenerAddress() throws IOException {
        return (InetSocketAddress) listener.getLocalAddress();
    }
}

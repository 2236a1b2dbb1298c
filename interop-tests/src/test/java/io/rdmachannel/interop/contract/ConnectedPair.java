package io.rdmachannel.interop.contract;

import java.io.IOException;
import java.net.SocketAddress;
import java.net.StandardSocketOptions;
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
        return open(transport, 0, state);
    }

    /**
     * Like {@link #open(ContractTransport, ConnectionState)}, with SO_SNDBUF and SO_RCVBUF set on both sides before
     * the connection is made, which also keeps the stack from growing them.
     *
     * @param transport  the transport.
     * @param bufferSize the socket buffer size.
     * @param state      the test's state.
     * @return the pair.
     * @throws IOException if a step fails.
     */
    static ConnectedPair openWithFixedBuffers(final ContractTransport transport, final int bufferSize,
        final ConnectionState state) throws IOException {
        return open(transport, bufferSize, state);
    }

    private static ConnectedPair open(final ContractTransport transport, final int bufferSize,
        final ConnectionState state) throws IOException {
        state.step("listen");
        final ServerSocketChannel listener = state.closeAtEnd(transport.openServerSocketChannel());
        final SocketChannel client = state.closeAtEnd(transport.openSocketChannel());
        if (bufferSize > 0) {
            listener.setOption(StandardSocketOptions.SO_RCVBUF, bufferSize);
            client.setOption(StandardSocketOptions.SO_SNDBUF, bufferSize);
            client.setOption(StandardSocketOptions.SO_RCVBUF, bufferSize);
        }
        listener.bind(transport.bindAddress());
        state.step("connect");
        client.connect(listener.getLocalAddress());
        state.step("accept");
        final SocketChannel server = state.closeAtEnd(listener.accept());
        if (bufferSize > 0) {
            server.setOption(StandardSocketOptions.SO_SNDBUF, bufferSize);
        }
        state.watch("client", () -> client);
        state.watch("server", () -> server);
        state.step("connected");
        return new ConnectedPair(listener, client, server);
    }

    SocketAddress listenerAddress() throws IOException {
        return listener.getLocalAddress();
    }
}

package io.rdmachannel.interop.contract;

import java.io.IOException;
import java.net.SocketAddress;

/**
 * A server that writes back every byte it reads and, after the client's end of stream, finishes echoing, shuts down
 * its output and closes the connection.
 */
interface EchoServer extends AutoCloseable {

    /**
     * The address clients connect to.
     *
     * @return the bound address.
     */
    SocketAddress address();

    /**
     * Connections accepted so far.
     *
     * @return the count.
     */
    long accepted();

    /**
     * Connections open right now.
     *
     * @return the count.
     */
    long open();

    /**
     * Bytes written back so far, over all connections.
     *
     * @return the count.
     */
    long echoed();

    /**
     * Throws the first failure of any connection, if there was one.
     *
     * @throws Exception the failure.
     */
    void checkHealthy() throws Exception;

    /**
     * Stops accepting, closes every connection and waits for the server's threads to end. Does not report the
     * server's failures: call {@link #checkHealthy()} for that.
     *
     * @throws IOException if closing fails or a server thread does not end.
     */
    @Override
    void close() throws IOException;

    /**
     * Starts an echo server: a selector loop for {@link IoMode#NON_BLOCKING}, else a thread per connection of the
     * mode's kind.
     *
     * @param transport the transport.
     * @param mode      the mode.
     * @param backlog   the listen backlog.
     * @param state     the test's state (the server registers its counters and is closed at the end).
     * @return the running server.
     * @throws IOException if the server cannot be bound.
     */
    static EchoServer start(final ContractTransport transport, final IoMode mode, final int backlog,
        final ConnectionState state) throws IOException {
        final EchoServer server = mode.blockingChannels()
            ? BlockingEchoServer.start(transport, mode, backlog)
            : SelectorEchoServer.start(transport, backlog);
        state.closeAtEnd(server);
        state.watch("echoServer", () -> server);
        return server;
    }
}

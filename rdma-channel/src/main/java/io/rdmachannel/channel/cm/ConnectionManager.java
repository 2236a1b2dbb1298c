package io.rdmachannel.channel.cm;

import java.io.IOException;
import java.net.SocketAddress;

/**
 * Establishes reliable connections between queue pairs.
 */
public interface ConnectionManager extends AutoCloseable {
    /**
     * The implementation's name: {@code shm}, {@code rdma_cm} or {@code oob}.
     *
     * @return the name.
     */
    String name();

    /**
     * Whether an endpoint may make and move its own queue pairs ({@link CmEndpoint.QueuePairSetup#ownQueuePairs},
     * {@link CmEndpoint#peerKnown}) instead of the CM creating one: the stream's XRC mode needs it, and falls back to
     * RC where the CM does not allow it. A CM that does not fails an attempt whose endpoint asks for it (a passive
     * side rejects it) with an {@link IOException} whose cause is an {@link UnsupportedOperationException}.
     *
     * @return false unless the CM implements it.
     */
    default boolean supportsOwnQueuePairs() {
        return false;
    }

    /**
     * Listen for connection requests.
     *
     * @param local the address to bind; port 0 picks a free port.
     * @param backlog the most requests being established at once; below 1 means 50.
     * @param filter decides on each request before any resource is allocated.
     * @param factory makes an endpoint for each request the filter lets through.
     * @return the listener, owned by the caller.
     * @throws java.net.BindException if the address is in use or not local.
     * @throws IOException for other failures.
     */
    CmListener listen(SocketAddress local, int backlog, ConnectionRequestFilter filter, CmEndpointFactory factory)
        throws IOException;

    /**
     * Start connecting; the outcome is reported to the endpoint.
     *
     * @param remote the peer's address.
     * @param local the address to bind, or {@code null}.
     * @param endpoint the local side.
     * @return a handle to cancel the attempt or disconnect the connection.
     * @throws java.nio.channels.UnsupportedAddressTypeException for an address type this CM cannot use.
     * @throws IOException if the attempt cannot start.
     */
    CmConnection connect(SocketAddress remote, SocketAddress local, CmEndpoint endpoint) throws IOException;

    /**
     * The first half of {@link #close()}: listeners close and attempts in progress fail (their endpoints are told and
     * release what they hold), but the devices this CM opened stay open, so that their owner can close what it made
     * on them before {@code close()} closes the devices. Idempotent; nothing can be started afterwards.
     */
    default void stop() {
    }

    /**
     * Stop the CM: listeners close, attempts in progress fail.
     */
    @Override
    void close();
}

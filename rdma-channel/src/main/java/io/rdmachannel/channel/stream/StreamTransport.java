package io.rdmachannel.channel.stream;

import java.io.IOException;
import java.net.SocketAddress;

/**
 * Opens byte-stream endpoints over one RDMA provider: the seam between the NIO face and the stream engine.
 *
 * <p>Every endpoint is non-blocking. The NIO face builds blocking calls as a non-blocking attempt, then
 * {@code arm()} on the endpoint, a second attempt (an event may have arrived in between), then a park until the
 * endpoint's {@link ReadinessObserver} is called. The observer is called from an engine thread, at most once per
 * arming, whenever the endpoint's readiness may have changed; it must not block.
 *
 * <p>Addresses are {@link java.net.InetSocketAddress} (IPv4 or IPv6) or the provider's native address type
 * ({@code IbSocketAddress} for InfiniBand GIDs); a transport throws
 * {@link java.nio.channels.UnsupportedAddressTypeException} for any other type.
 */
public interface StreamTransport {
    /**
     * The provider the transport runs on, e.g. {@code shm} or {@code native}.
     *
     * @return the provider name.
     */
    String providerName();

    /**
     * Listen for connections.
     *
     * @param local the address to bind; port 0 picks a free port, a wildcard address listens on every address.
     * @param backlog the most established connections waiting for
     *     {@link StreamListener#accept(ReadinessObserver)}; below 1 means the default (50).
     * @param options settings inherited by accepted connections; copied.
     * @param observer told when a connection may be waiting.
     * @return the listener, owned by the caller.
     * @throws java.net.BindException if the address is in use or cannot be assigned.
     * @throws IOException for other failures.
     */
    StreamListener listen(SocketAddress local, int backlog, StreamOptions options, ReadinessObserver observer)
        throws IOException;

    /**
     * Start connecting.
     *
     * @param remote the peer's address.
     * @param local the local address to bind, or {@code null} for any.
     * @param options settings of the connection; copied.
     * @param observer told when the attempt may have finished, and later used for the connection's readiness.
     * @return the attempt, owned by the caller.
     * @throws IOException if the attempt cannot even start (then nothing needs closing).
     */
    StreamConnector connect(SocketAddress remote, SocketAddress local, StreamOptions options,
        ReadinessObserver observer) throws IOException;
}

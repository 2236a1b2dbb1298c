package io.rdmachannel.nio;

/**
 * A server's host policy: which connection requests an {@link RdmaServerSocketChannel} accepts. Set with
 * {@link RdmaSocketOptions#RDMA_CONNECTION_FILTER}. It runs for each RDMA connection request, on the connection
 * manager's thread, after the listener's own checks (closing, backlog full) and before any queue pair or memory is
 * committed to the request: a refused peer costs the server nothing but the rejection. The requester's connect fails
 * with a {@link java.net.ConnectException} whose message is {@code "Connection refused by policy: "} followed by the
 * reason returned here (cut to 120 bytes of UTF-8, control characters left out), on every provider and connection
 * manager.
 *
 * <p>Keep it quick and non-blocking: requests to every listener of the connection manager wait behind it. A filter
 * that throws refuses the request (the reason says the filter failed; the exception is logged at WARN).
 */
@FunctionalInterface
public interface RdmaConnectionFilter {

    /**
     * Decide on a request.
     *
     * @param request the request: who asks, on which address and device, with which private data.
     * @return {@code null} to accept it, or the reason to refuse it with.
     */
    String check(RdmaConnectionRequest request);
}

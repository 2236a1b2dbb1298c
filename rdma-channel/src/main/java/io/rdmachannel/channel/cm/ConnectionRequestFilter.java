package io.rdmachannel.channel.cm;

import java.net.SocketAddress;
import java.nio.ByteBuffer;

/**
 * Host policy: which peers may connect. Runs on the CM's event thread before any resource is allocated for the
 * request, so a refused peer costs nothing but the rejection.
 */
@FunctionalInterface
public interface ConnectionRequestFilter {
    /** A filter that lets every request through. */
    ConnectionRequestFilter ACCEPT_ALL = (remote, local, privateData) -> null;

    /**
     * Decide on a request.
     *
     * @param remoteAddress the requester's address.
     * @param localAddress the address it connected to.
     * @param privateData the request's private data (read-only).
     * @return {@code null} to let it through, or a reason to reject it with.
     */
    RejectReason check(SocketAddress remoteAddress, SocketAddress localAddress, ByteBuffer privateData);
}

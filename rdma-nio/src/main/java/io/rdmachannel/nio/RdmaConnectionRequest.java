package io.rdmachannel.nio;

import java.net.SocketAddress;
import java.nio.ByteBuffer;

/**
 * A connection request as a server's {@link RdmaConnectionFilter} sees it.
 *
 * @param remoteAddress the requester's address (an {@link java.net.InetSocketAddress}, or an
 *                      {@link io.rdmachannel.channel.IbSocketAddress} for a request by GID).
 * @param localAddress  the address it connected to.
 * @param device        the local RDMA device the request arrived on: a verbs device name such as {@code mlx5_0} or
 *                      {@code rxe0} on the native provider, {@code shm0} on the shared-memory provider.
 * @param privateData   the request's private data, read-only: the connection data of the rsockets protocol (its
 *                      version first); read it, do not keep it past the call.
 */
public record RdmaConnectionRequest(SocketAddress remoteAddress, SocketAddress localAddress, String device,
    ByteBuffer privateData) {
}
